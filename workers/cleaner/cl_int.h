/*
 * The log cleaner's parts: the key -> last offset map (offset_map.c), the
 * I/O cap (throttle.c), the choice of the dirtiest log (pick.c), the
 * cleaning of one log into .cleaned segments and their swap (clean.c),
 * and the cleaner's checkpoint of where each log's dirty part starts
 * (ckpt.c). Everything but cleaner.c works on a bare struct rn_log, so
 * the unit tests drive it without a broker.
 */
#ifndef RN_CL_INT_H
#define RN_CL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/codec.h"
#include "storage/log.h"
#include "storage/txnindex.h"

/* runnel's default log.cleaner.dedupe.buffer.size (Kafka's: 128 MiB). */
#define CL_DEDUPE_DEFAULT (32LL * 1024 * 1024)
#define CL_LOAD_FACTOR 0.9

/* Open addressing over 128-bit key hashes; no allocation after init. */
struct cl_map_slot {
	uint64_t h1, h2;
	int64_t offset;         /* -1: empty */
};

struct cl_map {
	struct cl_map_slot *slots;
	size_t nslots;          /* a power of two */
	size_t used;
	size_t max_used;        /* load factor applied */
};

int cl_map_init(struct cl_map *m, size_t bytes);
void cl_map_free(struct cl_map *m);
void cl_map_clear(struct cl_map *m);
/* Record key at offset; -ENOSPC when the map is as full as allowed. */
int cl_map_put(struct cl_map *m, const uint8_t *key, size_t len, int64_t offset);
/* The last offset recorded for key, or -1. */
int64_t cl_map_get(const struct cl_map *m, const uint8_t *key, size_t len);

/* log.cleaner.io.max.bytes.per.second, over reads and writes together. */
struct cl_throttle {
	double rate;            /* bytes per second; <= 0: none */
	int64_t start_ns;
	double bytes;
};

void cl_throttle_init(struct cl_throttle *t, double rate);
void cl_throttle_io(struct cl_throttle *t, size_t bytes);

/* What cleaning a log goes by (its topic's effective configs). */
struct cl_params {
	int64_t now_ms;
	int64_t delete_retention_ms;    /* delete.retention.ms */
	int64_t min_lag_ms;             /* min.compaction.lag.ms */
	int64_t max_lag_ms;             /* max.compaction.lag.ms */
	double min_dirty_ratio;         /* min.cleanable.dirty.ratio */
	int64_t segment_bytes;          /* a cleaned segment's bound */
	int64_t segment_index_bytes;
	int64_t index_interval;
	int64_t max_end;                /* the high watermark: never past it */
	/* batches kept (empty if need be) for the idempotent producers */
	const int64_t *keep_offsets;    /* their base offsets, ascending */
	int n_keep;
};

/* The part of a log a cleaning covers, and how dirty it is. */
struct cl_range {
	int64_t first_dirty;    /* the dirty part starts here */
	int64_t end;            /* first offset not cleanable (a segment base) */
	int64_t clean_bytes, dirty_bytes;
	double ratio;
	bool overdue;           /* max.compaction.lag.ms passed */
};

#define CL_MAX_SEGS 4096

/*
 * The cleanable range of a log whose dirty part starts at first_dirty
 * (from the checkpoint; below the first segment means all of it). Returns
 * the number of segments listed into segs (cap CL_MAX_SEGS) and *gen.
 */
int cl_range_of(struct rn_log *log, int64_t first_dirty,
    const struct cl_params *p, struct rn_log_seginfo *segs, uint32_t *gen,
    struct cl_range *r);

/* Is this range worth cleaning now? (ratio, lag, a tombstone horizon). */
bool cl_range_due(const struct cl_range *r, const struct cl_params *p,
    int64_t horizon_ms);

/*
 * Runs fn with the log under the partition's lock (rn_part_locked in the
 * worker; a plain call in unit tests); its error if the lock failed.
 */
struct cl_lock {
	int (*locked)(void *arg, int (*fn)(struct rn_log *log, void *fnarg),
	    void *fnarg);
	void *arg;
};

/*
 * The transactions a cleaning meets (txn.c): the log's aborted ones
 * (sorted by producer, then first offset), and per producer whether a
 * batch of its current transaction is kept by this pass.
 */
#define CL_TXN_ABORTS 65536	/* aborted transactions a cleaning can know */
#define CL_TXN_DROPS 4096	/* markers one cleaned segment may drop */

struct cl_txn_prod;

struct cl_txn {
	struct rn_aborted_txn *ab;
	int n, cap;
	struct cl_txn_prod *prods;
	size_t used;
	bool full;              /* a producer did not fit: markers stay */
	/* the markers the segment being written drops (their .txnindex
	 * entries go with them) */
	int64_t dropped[CL_TXN_DROPS];
	int n_dropped;
};

int cl_txn_init(struct cl_txn *t);
void cl_txn_free(struct cl_txn *t);
/* Read the aborted transactions whose records start below end from
 * every segment's index; -E2BIG when more than fit. */
int cl_txn_load(struct cl_txn *t, struct rn_log *log, int64_t end);
/* Is the transactional batch of pid at offset part of an aborted one? */
bool cl_txn_aborted(const struct cl_txn *t, int64_t pid, int64_t offset);
/* A transactional batch of pid is kept (written to the output). */
void cl_txn_batch(struct cl_txn *t, int64_t pid);
/* A marker of pid was read: true when no batch of the transaction it
 * ends is kept by this pass (its records are all cleaned away). */
bool cl_txn_marker_empty(struct cl_txn *t, int64_t pid);

struct cl_ctx {
	struct cl_map map;
	struct cl_txn txn;
	struct cl_throttle thr;
	struct rn_buf rd;       /* segment reader */
	struct rn_buf dec;      /* a decompressed batch body */
	struct rn_buf body;     /* kept records */
	struct rn_buf cmp;      /* recompressed body */
	struct rn_buf out;      /* cleaned batches not yet written */
	/* called as it reads (heartbeats); true stops the cleaning (-EINTR) */
	bool (*tick)(void *arg);
	void *tick_arg;
};

struct cl_result {
	int64_t next_dirty;     /* the dirty part starts here after it */
	int64_t bytes_read, bytes_written;
	int64_t horizon_ms;     /* earliest tombstone horizon kept; INT64_MAX */
	int64_t records_in, records_out;
	int groups;             /* cleaned segments swapped in */
};

int cl_ctx_init(struct cl_ctx *c, size_t dedupe_bytes, double io_rate);
void cl_ctx_free(struct cl_ctx *c);

/*
 * Clean the range r of log: map the dirty part's keys, then rewrite the
 * segments below r->end group by group, each swapped in under the lock.
 * 0 (res says how far it got), -ESTALE when the log changed under it (try
 * again later), or -errno.
 */
int cl_clean_log(struct cl_ctx *c, struct rn_log *log, const struct cl_range *r,
    const struct cl_params *p, const struct cl_lock *lk, struct cl_result *res);

#endif /* RN_CL_INT_H */
