/*
 * The metadata image in shared memory: the controller's applied metadata,
 * published as one msgpack map under the image seqlock, and the
 * process-local view every other worker reads it into.
 *
 * On every node, broker-only ones included, the controller worker
 * publishes it with this node's own "slot" and "dir" of each replica.
 *
 * The body region starts with the body's length (8 bytes, native order),
 * written under the seqlock with it. Body (one msgpack map):
 *   {"cluster_id": str, "controller_id": int, "epoch": int (raft term),
 *    "offset": int (last applied log index),
 *    "brokers": [{"id", "host", "port", "rack": str|nil, "fenced": bool,
 *                 "shutdown": bool (in controlled shutdown),
 *                 "absent_since": int (wall ms its session expired, 0),
 *                 "epoch": int, "listeners": [{"name","host","port"}]}]
 *               (every observed broker: fenced and absent ones too),
 *    "topics": [{"name", "id": bin16, "internal": bool,
 *                "configs": {k: v} (topic overrides only: what the
 *                user set; defaults come from the catalogue),
 *                "partitions": [{"p", "leader", "epoch", "pepoch",
 *                                "replicas": [], "isr": [],
 *                                "offline": [] (replicas on fenced or
 *                                unregistered brokers),
 *                                "slot": int (-1: not local),
 *                                "dir": int (cfg.log_dirs index, -1: not
 *                                local, -2: its dir is offline, Kafka's
 *                                DirectoryId.LOST), "dir_id": bin16}]}],
 *    "broker_configs": {k: v} (dynamic cluster-wide broker defaults),
 *    "node_configs": {k: v} (dynamic configs of this broker),
 *    "acls": [[resource_type, resource_name, pattern_type, principal,
 *              host, operation, permission_type]] (Kafka's codes),
 *    "scram": [[user, mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512),
 *               iterations, salt: bin, stored_key: bin, server_key: bin]]
 *              (the SCRAM credentials: what verifies a login, never a
 *              password),
 *    "quotas": [[user kind, user, client kind, client, key, value: float]]
 *              (kinds: common/cquota.h; absent: none)}
 *
 * Deltas. A change that only touches partitions (leader, ISR, epochs,
 * replicas: most changes of a running cluster) is published as a delta,
 * not as a new body: one msgpack map per version in a byte ring beside
 * the body,
 *   {"controller_id", "epoch", "offset", "parts": [[topic id bin16,
 *    {partition map as in the body}]]}.
 * A reader that holds version V applies the deltas after V in place, so
 * an ISR change costs every process the bytes of that partition, not of
 * the cluster. Any other change publishes the whole body, which leaves a
 * mark in the ring: a reader meeting it loads the body again. The writer
 * never lets the deltas since the body outgrow the ring (it publishes the
 * whole body instead), so a reader that fell behind further loads the
 * body and the deltas after it.
 *
 * Readers: keep one struct rn_mdview per process, call rn_mdview_refresh()
 * before using it (cheap when nothing changed: one atomic load), then use
 * the lookups; nothing they return is valid after the next refresh, except
 * the topic and partition structs over a refresh that applied only deltas
 * (changes_all false): those are updated where they are.
 */
#ifndef RN_MDIMAGE_H
#define RN_MDIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/acl.h"
#include "common/cquota.h"
#include "common/config.h"
#include "common/scram.h"
#include "common/kconfig_catalogue.h"
#include "ipc/shm.h"

/* ---- its region of the segment (a row of RN_SHM_REGIONS) ------------ */

/* Bytes of the image published now: its body and the deltas after it. */
size_t rn_mdimage_bytes(const struct rn_shm *shm);
size_t rn_mdimage_shm_size(const struct rn_shm_params *p);
int rn_mdimage_shm_init(void *base, size_t size, const struct rn_shm_params *p);

/* ---- writer (the controller) ---------------------------------------- */

/* Copy body into the image, bump its version. -EMSGSIZE if it does not
 * fit (the image is left as it was). */
int rn_mdimage_publish(struct rn_shm *shm, int32_t node_id,
    const char *cluster_id, const void *body, size_t len);
/* Append a delta (its shape above) as the next version. -ENOSPC when the
 * deltas since the body would outgrow the ring, -EAGAIN before any body:
 * publish the whole image instead. */
int rn_mdimage_publish_delta(struct rn_shm *shm, const void *delta,
    size_t len);

/* ---- reader --------------------------------------------------------- */

struct rn_mdv_config {
	const char *key;
	const char *value;
};

#define RN_MDV_DIR_LOST (-2)

struct rn_mdv_partition {
	int32_t p;
	int32_t leader, leader_epoch, partition_epoch;
	int32_t n_replicas, n_isr, n_offline;
	const int32_t *replicas, *isr, *offline;
	int32_t slot;            /* -1: no replica here */
	int32_t dir;             /* cfg.log_dirs index, -1: no replica here,
				  * RN_MDV_DIR_LOST: its dir went offline */
	uint8_t dir_id[16];
};

struct rn_mdv_topic {
	const char *name;
	size_t name_len;
	uint8_t id[16];
	bool internal;
	int32_t n_parts;
	const struct rn_mdv_partition *parts;
	int n_configs;           /* topic overrides, sorted by key */
	const struct rn_mdv_config *configs;
};

struct rn_mdv_listener {
	const char *name, *host;
	uint16_t port;
};

struct rn_mdv_broker {
	int32_t id;
	const char *host;
	uint16_t port;
	const char *rack;        /* NULL: none */
	bool fenced;
	bool shutdown;           /* in controlled shutdown */
	int64_t absent_since_ms; /* wall ms its session expired; 0: not absent */
	int64_t epoch;
	int n_listeners;
	const struct rn_mdv_listener *listeners;
};

/* A partition a refresh changed by a delta. */
struct rn_mdv_change {
	int32_t topic;           /* index into topics */
	int32_t p;
	int32_t old_slot;        /* its slot before the change */
};

struct rn_mdview {
	uint64_t version;        /* image version this view was built from; 0: none */
	uint64_t generation;     /* shm generation at that time */
	/* the version whose whole body was last loaded: topics, brokers and
	 * configs change only with it (deltas touch partitions only) */
	uint64_t body_version;
	/* what the last refresh that returned 1 changed: everything, or
	 * the n_changes partitions listed (a partition may repeat) */
	bool changes_all;
	int n_changes;
	const struct rn_mdv_change *changes;
	char cluster_id[23];
	int32_t controller_id;
	int64_t epoch;
	int64_t offset;
	int n_topics, n_brokers;
	const struct rn_mdv_topic *topics;   /* image order (creation order) */
	const struct rn_mdv_broker *brokers; /* sorted by id */
	int n_broker_configs, n_node_configs;
	const struct rn_mdv_config *broker_configs, *node_configs;
	size_t n_acls;
	const struct rn_acl *acls;           /* sorted for rn_acl_allowed */
	size_t n_scram;
	const struct rn_scram_cred *scram;   /* sorted for rn_scram_find */
	size_t n_quotas;
	const struct rn_cquota *quotas;      /* client quotas, any order */
	/* private */
	void *priv;
};

void rn_mdview_init(struct rn_mdview *v);
void rn_mdview_free(struct rn_mdview *v);
/*
 * Bring the view up to date: 1 if it changed, 0 if it was current,
 * -EAGAIN if the controller is mid-publish for too long or the image is
 * empty (rebuilt after a controller crash; the old view stays usable),
 * -EBADMSG if the body does not parse, -ENOMEM.
 */
int rn_mdview_refresh(struct rn_mdview *v, const struct rn_shm *shm);
/* Parse a body directly (tests; what refresh does after copying). */
int rn_mdview_load(struct rn_mdview *v, const void *body, size_t len);

const struct rn_mdv_topic *rn_mdview_topic(const struct rn_mdview *v,
    const char *name, size_t len);
const struct rn_mdv_topic *rn_mdview_topic_by_id(const struct rn_mdview *v,
    const uint8_t id[16]);
const struct rn_mdv_partition *rn_mdview_partition(
    const struct rn_mdv_topic *t, int32_t p);
const struct rn_mdv_broker *rn_mdview_broker(const struct rn_mdview *v,
    int32_t id);
/*
 * Where other brokers reach broker id: its listener named listener (the
 * inter-broker one), else its first. 0, or -ENOENT when it is unknown or
 * fenced.
 */
int rn_mdview_broker_address(const struct rn_mdview *v, int32_t id,
    const char *listener, char *host, size_t hostlen, uint16_t *port);

/*
 * Effective value of a topic config and where it comes from: the topic's
 * override (DYNAMIC_TOPIC_CONFIG), this broker's dynamic config
 * (DYNAMIC_BROKER_CONFIG), the dynamic cluster default
 * (DYNAMIC_DEFAULT_BROKER_CONFIG), server.properties
 * (STATIC_BROKER_CONFIG) or the built-in default (DEFAULT_CONFIG).
 * *value points into the view or into buf. -ENOENT for an unknown key.
 */
int rn_mdview_topic_config(const struct rn_mdview *v,
    const struct rn_mdv_topic *t, const struct rn_config *cfg,
    const char *key, const char **value, enum rn_config_source *source,
    char *buf, size_t buflen);

/*
 * A broker config of this node by its server.properties key (any key of
 * Kafka's catalogue): DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
 * STATIC_BROKER_CONFIG or DEFAULT_CONFIG, as Kafka reports it. *value may
 * be NULL (Kafka's null). -ENOENT for other keys.
 */
int rn_mdview_broker_config(const struct rn_mdview *v,
    const struct rn_config *cfg, const char *broker_key, const char **value,
    enum rn_config_source *source, char *buf, size_t buflen);

/* The config levels of a view and server.properties, as an rn_kcfg_get_fn
 * (common/kconfig_catalogue.h) whose arg is a struct rn_mdv_cfgsrc. */
struct rn_mdv_cfgsrc {
	const struct rn_mdview *v;
	const struct rn_config *cfg;
};
const char *rn_mdview_cfg_get(void *arg, enum rn_config_source level,
    const char *key);
/* A topic's own value of a topic config, NULL if not overridden. */
const char *rn_mdview_topic_override(const struct rn_mdv_topic *t,
    const char *key);

#endif /* RN_MDIMAGE_H */
