/*
 * Partition runtime: the shared state of each local replica (one slot in
 * shared memory, assigned by the controller) and this process's handle on
 * its log. Every network worker appends and reads through here; appends
 * are serialized by the slot's robust lock, so a worker killed in the
 * middle of one costs a repair by the next holder, never a torn batch.
 */
#ifndef RN_PARTITION_H
#define RN_PARTITION_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/util.h"
#include "ipc/rlock.h"
#include "ipc/shm.h"
#include "storage/log.h"
#include "workers/partition/idempotence.h"

#define RN_PART_MAX_REPLICAS 8
/* A leader's ISR change in flight: asked again after this long without
 * an answer moving the image; after a refusal, after the shorter delay
 * (the broker agent rewinds isr_change_sent_ms, as Kafka retries on the
 * follower's next fetch). */
#define RN_ISR_CHANGE_RETRY_MS 5000
#define RN_ISR_REFUSED_RETRY_MS 500

/* What the leader knows of one follower, from its fetches. */
struct rn_part_follower {
	_Atomic int32_t id;              /* broker id, -1: unused */
	_Atomic int64_t leo;             /* its log end: it has all below */
	_Atomic int64_t last_fetch_ms;   /* wall clock of its last fetch */
	_Atomic int64_t last_fetch_leader_leo; /* our log end at that fetch */
	_Atomic int64_t last_caught_up_ms;
};

/* Lives in the partition region of shared memory (struct rn_part_slot). */
struct rn_part_rt {
	struct rn_rlock lock;          /* first; formatted on first use */
	_Atomic uint64_t incarnation;  /* bumped when the slot changes owner */
	struct rn_uuid topic_id;       /* which partition holds the slot */
	int32_t partition;
	/* metadata offset of the image the slot was last taken or released
	 * at: a worker with an older image may not take it back */
	_Atomic int64_t claim_offset;
	_Atomic int32_t leader_epoch;  /* epoch this replica last led in */
	_Atomic int64_t high_watermark;
	/*
	 * network workers (bit = index) with a request parked on this
	 * partition: a fetch waiting for data, a produce waiting for acks
	 */
	_Atomic uint64_t parked_workers;
	/* leader side: followers' progress, and one ISR change in flight */
	struct rn_part_follower followers[RN_PART_MAX_REPLICAS];
	_Atomic int64_t isr_change_sent_ms;
	_Atomic int32_t isr_change_pepoch;  /* partition epoch it was sent at */
	_Atomic int32_t leader_since_epoch; /* followers reset for this epoch */
	struct rn_idem_state idem;          /* idempotent producers (locked) */
	struct rn_log_shared log;
};
_Static_assert(sizeof(struct rn_part_rt) <= sizeof(struct rn_part_slot),
    "partition runtime must fit its shared-memory slot");

/* This process's view of one local partition. */
struct rn_part {
	struct rn_part_rt *rt;
	struct rn_log *log;
	uint64_t incarnation;
	uint64_t config_version;       /* metadata image version of the config */
	struct rn_log_config lcfg;     /* the log rules it was opened with */
	int32_t slot;
	uint8_t topic_id[16];          /* identity: topic id and partition */
	int32_t partition;
};

struct rn_part_table {
	const struct rn_shm *shm;
	const struct rn_config *cfg;
	struct rn_part *parts;         /* indexed by slot */
	uint32_t n;
	uint32_t hi;                   /* no slot at or above this is open */
	/*
	 * Heartbeats for this worker after each log it opens: a request
	 * or pass that opens thousands of logs (fsyncs) makes progress,
	 * it is not hung. NULL: none.
	 */
	struct rn_worker *worker;
};

struct rn_mdv_topic;
struct rn_worker;
struct rn_mdv_partition;
struct rn_mdview;

int rn_part_table_init(struct rn_part_table *t, const struct rn_shm *shm,
    const struct rn_config *cfg);
void rn_part_table_close(struct rn_part_table *t);

/*
 * The local partition for (topic, partition) as the image describes it,
 * opened (and on first use recovered from disk) if needed. NULL with a
 * Kafka error code in *kerr when it is not local or cannot be opened.
 */
struct rn_part *rn_part_get(struct rn_part_table *t,
    const struct rn_mdview *v, const struct rn_mdv_topic *topic,
    const struct rn_mdv_partition *p, int16_t *kerr);

/*
 * A new image: drop the handles (fds, mappings) of partitions it no longer
 * places in the slot they were opened in, such as a deleted topic's.
 */
void rn_part_table_sync(struct rn_part_table *t, const struct rn_mdview *v);

/*
 * The controller, after a topic's removal was published: if the slot still
 * holds (id, partition), it holds nothing now. Every process that has it
 * open sees the incarnation move and lets go; offset is the image's.
 */
void rn_part_release(const struct rn_shm *shm, int32_t slot,
    const uint8_t id[16], int32_t partition, int64_t offset);

/* Lock a partition for a mutation, repairing it if the last holder died. */
int rn_part_lock(struct rn_part *p);
void rn_part_unlock(struct rn_part *p);

/*
 * Wake the network workers with a request parked on this partition (a
 * fetch waiting for data, an acks=all produce waiting for the ISR).
 */
void rn_part_wake_parked(struct rn_part *p, const int *efd_by_worker,
    unsigned self);

/*
 * Leader: record a follower's fetch at fetch_offset (it holds everything
 * below), update its caught-up time like Kafka, and advance the high
 * watermark over the ISR. Returns true if the high watermark moved.
 */
bool rn_part_follower_fetched(struct rn_part *p,
    const struct rn_mdv_partition *mp, int32_t replica, int64_t fetch_offset,
    int64_t now_ms);
/* Leader: the high watermark the ISR allows now; moves it forward only. */
bool rn_part_advance_hw(struct rn_part *p, const struct rn_mdv_partition *mp,
    int32_t self);
/* Leader: a follower's progress, NULL if it never fetched. */
struct rn_part_follower *rn_part_follower(struct rn_part *p, int32_t id);

/* Stop being woken for fetches this worker no longer has parked. */
void rn_part_clear_waiters(struct rn_part_table *t, unsigned self);

/* A topic config's effective value (override, dynamic, static, default). */
int64_t rn_part_config_int(const struct rn_mdview *v,
    const struct rn_mdv_topic *t, const struct rn_config *cfg,
    const char *key, int64_t dflt);
void rn_part_config_str(const struct rn_mdview *v,
    const struct rn_mdv_topic *t, const struct rn_config *cfg,
    const char *key, char *out, size_t outlen);

/*
 * Write each log dir's replication-offset-checkpoint (high watermarks of
 * the local partitions this process has open), as Kafka does periodically.
 */
int rn_part_checkpoint_hw(struct rn_part_table *t, const struct rn_mdview *v);

/* Translate the storage layer's configuration from topic configs. */
void rn_part_log_config(const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, const struct rn_config *cfg,
    struct rn_log_config *out);

#endif /* RN_PARTITION_H */
