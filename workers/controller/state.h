/*
 * The controller's metadata state: what the committed metadata records
 * say, applied in log order. Applying is deterministic, so every node that
 * replays the same log (or restores the same snapshot) gets the same
 * state, partition-runtime slots included.
 *
 * Headers here use raw 16-byte arrays for Kafka Uuids so they can be
 * included next to either common/util.h or protocol/kcodec.h.
 */
#ifndef RN_CTL_STATE_H
#define RN_CTL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "common/acl.h"
#include "common/cquota.h"
#include "common/config.h"
#include "common/scram.h"

#define CTL_TOPIC_NAME_MAX 249
/* Partition-runtime slots per node: shm.max.partitions at most. */
#define CTL_SLOTS_MAX (1 << 24)
#define CTL_MAX_FEATURES 8
/* Kafka's metadata.version feature level for 3.9-IV0. */
#define CTL_METADATA_VERSION 21

/* Config resource types, Kafka's numbering. */
#define CTL_RES_TOPIC 2
#define CTL_RES_BROKER 4

struct ctl_kv {
	char *key;
	char *value;
};

/* Sorted by key. */
struct ctl_configs {
	struct ctl_kv *v;
	int n, cap;
};

struct ctl_listener {
	char name[RN_CONFIG_NAME_MAX];
	char host[RN_CONFIG_HOST_MAX];
	uint16_t port;
};

struct ctl_broker {
	int32_t id;
	uint8_t incarnation[16];
	int64_t epoch;           /* log index of its registration */
	struct ctl_listener *listeners;
	int n_listeners;
	char rack[RN_CONFIG_NAME_MAX]; /* "" = none */
	uint8_t (*log_dirs)[16];
	int n_log_dirs;
	bool fenced;
	bool in_controlled_shutdown;
	/* wall ms its session expired (0: it has one, or went in a controlled
	 * shutdown); recorded so every controller tells the same story */
	int64_t absent_since_ms;
};

struct ctl_partition {
	int32_t n_replicas;
	int32_t *replicas;
	int32_t n_isr;
	int32_t *isr;
	int32_t leader, leader_epoch, partition_epoch;
	uint8_t (*dirs)[16];     /* per replica: its log dir's directory.id */
	int32_t *slots;          /* per replica: slot on that broker */
	/* a reassignment in progress: replicas = target + removing */
	int32_t n_adding;
	int32_t *adding;
	int32_t n_removing;
	int32_t *removing;
};

struct ctl_topic {
	char name[CTL_TOPIC_NAME_MAX + 1];
	uint8_t id[16];
	struct ctl_partition *parts; /* index = partition id */
	int32_t n_parts;
	struct ctl_configs configs;
};

struct ctl_res_configs {
	char name[32];           /* broker resource name; "" = cluster default */
	struct ctl_configs cfg;
};

/* One ACL binding and its id; the state owns the binding's strings. */
struct ctl_acl {
	uint8_t id[16];
	struct rn_acl b;
};

/* In the order they were created. */
struct ctl_acls {
	struct ctl_acl *v;
	int n, cap;
};

/* SCRAM credentials, sorted by (name, mechanism); the state owns each
 * name and salt. */
struct ctl_scrams {
	struct rn_scram_cred *v;
	int n, cap;
};

/* Client quotas, one per entity and key, in the order first set; the
 * state owns the strings. */
struct ctl_quotas {
	struct rn_cquota *v;
	int n, cap;
};

/* Lowest-free allocator of one broker's partition-runtime slots. */
struct ctl_slotmap {
	int32_t broker;
	uint64_t *bits;
	int32_t nwords;
};

/*
 * What the applied records changed since the image was last published:
 * some partitions (a delta carries them, ipc/mdimage.h) or more (the
 * whole image is published). Cleared by ctl_state_changes_clear.
 */
struct ctl_changes {
	bool all;
	int n, cap;
	struct ctl_changed_part {
		uint8_t topic_id[16];
		int32_t p;
	} *v;
};

struct ctl_state {
	char cluster_id[23];
	int16_t metadata_version;
	struct {
		char name[48];
		int16_t level;
	} features[CTL_MAX_FEATURES];
	int n_features;
	struct ctl_broker *brokers; /* sorted by id */
	int n_brokers;
	struct ctl_topic **topics;  /* creation order */
	int n_topics, cap_topics;
	/*
	 * Hash indexes into topics[] (entry = index + 1, 0 = empty; open
	 * addressing, at most half full): by name with '.' read as '_'
	 * (so names that collide share a chain), and by id. Lookups stay
	 * O(1) with tens of thousands of topics.
	 */
	int32_t *by_name, *by_id;
	uint32_t idx_cap;           /* a power of two, or 0 */
	struct ctl_res_configs *broker_res;
	int n_broker_res;
	struct ctl_slotmap *slotmaps;
	int n_slotmaps;
	struct ctl_acls acls;
	struct ctl_scrams scram;
	struct ctl_quotas quotas;
	uint64_t applying_index;    /* log index of the entry being applied */
	uint64_t last_index;        /* last applied log index */
	uint64_t last_term;
	struct ctl_changes changed;
	/* Called before a topic is removed (its local dirs go away). */
	void (*on_remove_topic)(void *arg, const struct ctl_topic *t);
	/* Called when a Partition record drops broker's replica of t-p
	 * (a reassignment), with the slot and log dir it had. */
	void (*on_remove_replica)(void *arg, const struct ctl_topic *t,
	    int32_t p, int32_t broker, int32_t slot, const uint8_t dir[16]);
	void *hook_arg;
};

void ctl_state_init(struct ctl_state *st);
void ctl_state_free(struct ctl_state *st);
void ctl_state_reset(struct ctl_state *st);

/*
 * Apply one log entry (a msgpack array of records) at index. Records that
 * do not make sense against the state (unknown topic id, ...) are logged
 * and skipped: a committed entry is never refused, or the log would stall.
 * Returns the number of records applied, or -EBADMSG when the entry is not
 * a record batch at all (still nothing half-applied).
 */
int ctl_state_apply(struct ctl_state *st, const void *buf, size_t len,
    uint64_t index);
/* Apply one record map. 0, or -EINVAL when it was skipped. */
int ctl_state_apply_record(struct ctl_state *st, const msgpack_object *rec);

/* Snapshot: a record batch rebuilding the whole state (with slots and
 * broker epochs), deterministic byte for byte. */
int ctl_state_snapshot(const struct ctl_state *st, msgpack_sbuffer *sb);
int ctl_state_restore(struct ctl_state *st, const void *buf, size_t len);

/* Is id among the n ids of v (replica lists, ISRs)? */
static inline bool
ctl_ids_has(const int32_t *v, int32_t n, int32_t id)
{
	int32_t i;

	for (i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* The index of broker among pp's replicas, -1 if it is none. */
static inline int32_t
ctl_replica_index(const struct ctl_partition *pp, int32_t broker)
{
	int32_t r;

	for (r = 0; r < pp->n_replicas; r++)
		if (pp->replicas[r] == broker)
			return r;
	return -1;
}

/* acls.c: the ACL bindings' records, snapshot and image part */
struct ctl_batch;
struct rn_mdimage_enc;
int ctl_acls_apply(struct ctl_state *st, const msgpack_object *rec);
int ctl_acls_apply_remove(struct ctl_state *st, const msgpack_object *rec);
void ctl_acls_free(struct ctl_acls *s);
void ctl_acls_snapshot(const struct ctl_state *st, struct ctl_batch *b);
void ctl_acls_encode(const struct ctl_state *st, struct rn_mdimage_enc *e);
/* quotas.c: the client quotas' records, snapshot and image part */
int ctl_quotas_apply(struct ctl_state *st, const msgpack_object *rec);
void ctl_quotas_free(struct ctl_quotas *s);
void ctl_quotas_snapshot(const struct ctl_state *st, struct ctl_batch *b);
void ctl_quotas_encode(const struct ctl_state *st, struct rn_mdimage_enc *e);

/* scram.c: the SCRAM credentials' records, snapshot and image part */
int ctl_scram_apply(struct ctl_state *st, const msgpack_object *rec);
int ctl_scram_apply_remove(struct ctl_state *st, const msgpack_object *rec);
void ctl_scram_free(struct ctl_scrams *s);
void ctl_scram_snapshot(const struct ctl_state *st, struct ctl_batch *b);
void ctl_scram_encode(const struct ctl_state *st, struct rn_mdimage_enc *e);
/* The credentials runnel-storage format --add-scram left in dir, as
 * records into b, for the batch that founds the cluster: how many, or -1
 * after logging why the file cannot be used. */
int ctl_scram_bootstrap(const char *dir, struct ctl_batch *b);

/* Lookups. */
struct ctl_topic *ctl_state_topic(const struct ctl_state *st,
    const char *name, size_t len);
struct ctl_topic *ctl_state_topic_by_id(const struct ctl_state *st,
    const uint8_t id[16]);
/* Hash of a topic name with '.' read as '_' (colliding names agree). */
uint32_t ctl_topic_name_hash(const char *name, size_t len);
/* An existing topic whose name differs from name only by '.' vs '_'. */
struct ctl_topic *ctl_state_topic_collision(const struct ctl_state *st,
    const char *name, size_t len);
struct ctl_broker *ctl_state_broker(const struct ctl_state *st, int32_t id);
const struct ctl_configs *ctl_state_broker_configs(const struct ctl_state *st,
    const char *resource);
const char *ctl_configs_get(const struct ctl_configs *c, const char *key);
/* Replicas on broker b hosted in log dir dir (for placement). */
int ctl_state_dir_load(const struct ctl_state *st, int32_t broker,
    const uint8_t dir[16]);

/* What the image needs that only this node knows. */
struct ctl_local {
	int32_t node_id;
	int32_t controller_id;   /* -1 when no leader is known */
	uint64_t epoch;          /* raft term */
	int n_dirs;
	const uint8_t (*dir_ids)[16]; /* index = cfg.log_dirs index */
	uint32_t max_partitions;
};

/* Encode the metadata image body (see ipc/mdimage.h for its shape). */
int ctl_state_encode_image(const struct ctl_state *st,
    const struct ctl_local *loc, msgpack_sbuffer *sb);
/* Encode the partitions changed since the last clear as a delta: 0, or
 * -ESTALE when only the whole image can say what changed. */
int ctl_state_encode_delta(const struct ctl_state *st,
    const struct ctl_local *loc, msgpack_sbuffer *sb);
/* The image now says all that was applied. */
void ctl_state_changes_clear(struct ctl_state *st);
/* This node's (slot, dir index) of a replica set, -1/-1 when not local. */
void ctl_state_local_placement(const struct ctl_state *st,
    const struct ctl_local *loc, const struct ctl_topic *t, int32_t p,
    int32_t *slot, int32_t *dir);

#endif /* RN_CTL_STATE_H */
