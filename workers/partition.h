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

/* Lives in the partition region of shared memory (struct rn_part_slot). */
struct rn_part_rt {
	struct rn_rlock lock;          /* first: rn_shm_create initializes it */
	_Atomic uint64_t incarnation;  /* bumped when the slot changes owner */
	struct rn_uuid topic_id;       /* which partition holds the slot */
	int32_t partition;
	_Atomic int32_t leader_epoch;  /* epoch this replica last led in */
	_Atomic int64_t high_watermark;
	/* network workers (bit = index) with a fetch parked on this partition */
	_Atomic uint64_t fetch_waiters;
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
};

struct rn_part_table {
	const struct rn_shm *shm;
	const struct rn_config *cfg;
	struct rn_part *parts;         /* indexed by slot */
	uint32_t n;
};

struct rn_mdv_topic;
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

/* Lock a partition for a mutation, repairing it if the last holder died. */
int rn_part_lock(struct rn_part *p);
void rn_part_unlock(struct rn_part *p);

/* Wake the network workers that parked a fetch on this partition. */
void rn_part_wake_fetchers(struct rn_part *p, const int *efd_by_worker,
    unsigned self);

/* Stop being woken for fetches this worker no longer has parked. */
void rn_part_clear_waiters(struct rn_part_table *t, unsigned self);

/* A topic config's effective value (override, dynamic, static, default). */
int64_t rn_part_config_int(const struct rn_mdview *v,
    const struct rn_mdv_topic *t, const struct rn_config *cfg,
    const char *key, int64_t dflt);
void rn_part_config_str(const struct rn_mdview *v,
    const struct rn_mdv_topic *t, const struct rn_config *cfg,
    const char *key, char *out, size_t outlen);

/* Translate the storage layer's configuration from topic configs. */
void rn_part_log_config(const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, const struct rn_config *cfg,
    struct rn_log_config *out);

#endif /* RN_PARTITION_H */
