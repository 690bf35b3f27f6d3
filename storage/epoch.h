/*
 * Leader epoch cache: (epoch, start offset) pairs, the state behind
 * OffsetForLeaderEpoch and follower truncation. The POD struct lives inside
 * the shared log state; it is modified only under the partition lock and
 * read by other processes through its sequence counter.
 */
#ifndef RN_STORAGE_EPOCH_H
#define RN_STORAGE_EPOCH_H

#include <stdatomic.h>
#include <stdint.h>

#define RN_EPOCH_CACHE_SLOTS 256
#define RN_UNDEFINED_EPOCH (-1)
#define RN_UNDEFINED_EPOCH_OFFSET (-1LL)

struct rn_epoch_entry {
	int32_t epoch;
	int32_t reserved;
	int64_t start_offset;
};

struct rn_epoch_cache {
	_Atomic uint32_t seq;	/* odd while being modified */
	uint32_t count;
	struct rn_epoch_entry e[RN_EPOCH_CACHE_SLOTS];
};

/*
 * Writers (partition lock held). Each returns 1 if the cache changed (the
 * caller then rewrites leader-epoch-checkpoint), else 0.
 * assign: record that epoch starts at start_offset; entries that would make
 * the cache non-monotonic are dropped; a full cache forgets its oldest.
 */
int rn_epoch_assign(struct rn_epoch_cache *c, int32_t epoch, int64_t start_offset);
/* Forget epochs starting at or after end_offset (log truncated there). */
int rn_epoch_truncate_from_end(struct rn_epoch_cache *c, int64_t end_offset);
/* Log start moved to start_offset: older epochs go, the last one is clamped. */
int rn_epoch_truncate_from_start(struct rn_epoch_cache *c, int64_t start_offset);
int rn_epoch_clear(struct rn_epoch_cache *c);
/* Replace the whole content (loading a checkpoint). */
void rn_epoch_load(struct rn_epoch_cache *c, const struct rn_epoch_entry *e, uint32_t n);
/* After a lock owner died: make the cache readable again. */
void rn_epoch_repair(struct rn_epoch_cache *c);

/* Readers (any process, no lock). Consistent copy; returns the count. */
uint32_t rn_epoch_snapshot(const struct rn_epoch_cache *c,
    struct rn_epoch_entry *out, uint32_t cap);
int32_t rn_epoch_latest(const struct rn_epoch_cache *c);

/*
 * Kafka's endOffsetFor: for the latest epoch, the log end offset; else the
 * start offset of the next higher epoch, paired with the largest known epoch
 * <= requested (or requested itself if none). Undefined pair if unknown.
 */
void rn_epoch_end_offset_for(const struct rn_epoch_cache *c, int32_t epoch,
    int64_t log_end_offset, int32_t *out_epoch, int64_t *out_offset);

#endif /* RN_STORAGE_EPOCH_H */
