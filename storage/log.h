/*
 * A partition's log: a directory of segments, appended to and read by
 * several processes.
 *
 * The authoritative state is struct rn_log_shared, a fixed-size POD the
 * caller places in shared memory (one per partition). Appends and every
 * other mutation are serialized by a process-shared lock the CALLER holds;
 * this library takes no locks. Each process opens its own struct rn_log
 * handle (file descriptors, index mappings, segment list) over the shared
 * state; a handle is used by one thread at a time.
 *
 * Visibility: an append writes the batch bytes and index entries first and
 * then publishes with release stores of active_size and log_end_offset, so
 * readers never see a torn batch; a writer killed in between leaves
 * unpublished bytes that rn_log_repair() (run by the next lock holder when
 * the lock reports its owner died) cuts off. Publications (appends, and a
 * roll's new active segment) happen inside an odd commit_seq, so readers
 * take consistent snapshots; a reader that sees an active segment it does
 * not know re-reads the directory. Removals (truncation, retention,
 * DeleteRecords) run inside an odd generation, after which every process
 * re-reads the directory and drops deleted segments.
 *
 * Reads return file ranges for sendfile(). A range may be cut short if a
 * follower truncation or retention removes the data concurrently; treat a
 * short sendfile as the end of the data.
 */
#ifndef RN_STORAGE_LOG_H
#define RN_STORAGE_LOG_H

#include <stdatomic.h>
#include <stdint.h>

#include "storage/batch.h"
#include "storage/epoch.h"
#include "storage/errors.h"

struct rn_log_config {
	int64_t segment_bytes;		/* segment.bytes */
	int64_t segment_ms;		/* segment.ms */
	int64_t retention_ms;		/* retention.ms, -1 = forever */
	int64_t retention_bytes;	/* retention.bytes, -1 = unlimited */
	int64_t max_message_bytes;	/* max.message.bytes (per batch) */
	int64_t flush_messages;		/* flush.messages */
	int64_t flush_ms;		/* flush.ms */
	int64_t index_interval_bytes;	/* index.interval.bytes */
	int64_t segment_index_bytes;	/* segment.index.bytes */
	int timestamp_type_log_append;	/* message.timestamp.type=LogAppendTime */
};

/* Kafka's defaults: 1 GiB segments, 7 days, 1048588-byte batches, no fsync. */
struct rn_log_config rn_log_config_default(void);

#define RN_LOG_SHARED_MAGIC 0x31304c474f4c4e52ull	/* "RNLOGL01" */
/* after rn_log_shutdown: not a live state (the next open recovers), but
 * its recovery point is still the one to checkpoint */
#define RN_LOG_SHARED_SHUT 0x54554853474f4c4eull	/* "NLOGSHUT" */

/*
 * Shared state of one partition log. Zero it (or leave it zeroed) to have
 * rn_log_open() recover it from disk. Written only under the partition lock.
 */
struct rn_log_shared {
	_Atomic uint64_t magic;			/* set last by the recovering open */
	_Atomic uint32_t generation;		/* odd while segments are removed/cut */
	_Atomic uint32_t commit_seq;		/* odd while an append or roll publishes */
	_Atomic int64_t log_end_offset;		/* next offset to assign */
	_Atomic int64_t log_start_offset;
	_Atomic int64_t active_base_offset;
	_Atomic int64_t active_size;		/* committed bytes of the active segment */
	_Atomic uint32_t active_oidx_entries;	/* committed index entries */
	_Atomic uint32_t active_tidx_entries;
	_Atomic int64_t active_max_ts;		/* largest timestamp in the active segment */
	_Atomic int64_t active_max_ts_offset;
	_Atomic int64_t active_bytes_since_index;
	_Atomic int64_t active_roll_ts;		/* maxTimestamp of its first batch */
	_Atomic int64_t recovery_point;		/* everything below is fsync'ed */
	_Atomic int64_t last_flush_ms;
	_Atomic int64_t unflushed_messages;
	_Atomic uint32_t dir_unsynced;		/* made without syncs: see sync_new_dir */
	struct rn_epoch_cache epochs;		/* leader epoch cache */
};

/* Process-local handle. */
struct rn_log;

/* What rn_log_open needs to recover a log whose shared state is new. */
struct rn_log_recovery {
	int64_t recovery_point;		/* from recovery-point-offset-checkpoint */
	int64_t log_start_offset;	/* from log-start-offset-checkpoint, or -1 */
	int clean_shutdown;		/* .kafka_cleanshutdown was present */
};

/*
 * Open the log in dir (created if missing). If shared->magic is not
 * RN_LOG_SHARED_MAGIC, the log is recovered from disk first (rec may be
 * NULL: recovery point 0, unknown start) and shared is initialized; the
 * caller must hold the partition lock for that. 0 or -errno.
 */
int rn_log_open(const char *dir, const struct rn_log_config *cfg,
    struct rn_log_shared *shared, const struct rn_log_recovery *rec,
    struct rn_log **out);

/* Release this process's handle (files stay as they are). */
void rn_log_close(struct rn_log *log);

/*
 * Clean shutdown by the last user (lock held): flush, trim the active
 * indexes like Kafka, write the leader epoch checkpoint, and mark the
 * shared state RN_LOG_SHARED_SHUT so the next open recovers (quickly:
 * nothing to scan).
 * Returns the recovery point to checkpoint, or -errno.
 */
int64_t rn_log_shutdown(struct rn_log *log);

struct rn_append_info {
	int64_t base_offset;	/* first offset assigned */
	int64_t last_offset;
	int64_t log_append_time;	/* -1 unless LogAppendTime */
	int64_t max_timestamp;
	int nbatches;
	int64_t record_count;
	int rolled;		/* a new segment was started first */
};

/*
 * Leader append (lock held): validate the produce payload, assign offsets,
 * partitionLeaderEpoch and LogAppendTime in place, roll if due, write it
 * with one pwrite, index it, publish. Returns 0, a RN_ERR_* validation
 * kind (RN_ERR_RECORD_LIST_TOO_LARGE if the payload exceeds segment.bytes),
 * or -errno.
 */
int rn_log_append(struct rn_log *log, void *batches, size_t len,
    int32_t leader_epoch, int64_t now_ms, struct rn_append_info *info);
/* The same for the group coordinator's transactional offsets, which carry
 * a producer and no sequence (as Kafka's coordinator writes them). */
int rn_log_append_coordinator(struct rn_log *log, void *batches, size_t len,
    int32_t leader_epoch, int64_t now_ms, struct rn_append_info *info);

/* The same for a control batch the broker built (a transaction marker). */
int rn_log_append_control(struct rn_log *log, void *batch, size_t len,
    int32_t leader_epoch, int64_t now_ms, struct rn_append_info *info);

/*
 * Follower append (lock held): batches already carry offsets from the
 * leader; they must start at or after the log end offset and increase.
 * Gaps are kept (the log end becomes the last offset + 1).
 */
int rn_log_append_replica(struct rn_log *log, const void *batches, size_t len,
    int64_t now_ms, struct rn_append_info *info);

struct rn_segment;

/* A file range for sendfile(); len == 0 means no data. */
struct rn_log_slice {
	int fd;
	int64_t file_pos;
	int64_t len;
	int64_t first_offset;	/* base offset of the first batch in the range */
	int64_t log_end_offset;	/* as seen by this read */
	int64_t log_start_offset;
	struct rn_segment *seg;	/* keeps fd open; see rn_log_slice_release */
};

/*
 * Read from offset (no lock needed): whole batches starting with the one
 * containing offset, up to max_bytes but at least one batch, only batches
 * whose last offset < max_offset (pass the high watermark, or -1 for the
 * log end), never past the committed size, never across a segment end.
 * -ERANGE if offset is below the log start or above the log end; 0 with
 * len 0 at the end; -EAGAIN when the segments changed under every try
 * (call again later). Call rn_log_slice_release when done with the fd.
 */
int rn_log_read(struct rn_log *log, int64_t offset, int64_t max_bytes,
    int64_t max_offset, struct rn_log_slice *out);
void rn_log_slice_release(struct rn_log *log, struct rn_log_slice *slice);

/*
 * ListOffsets by timestamp: the first offset whose record timestamp is >=
 * ts (-2: log start, -1: log end, -3: the record with the largest
 * timestamp, KIP-734). -ENOENT if none. For compressed batches (not
 * decompressed here) the batch's base offset is returned.
 */
#define RN_LIST_EARLIEST (-2)
#define RN_LIST_LATEST (-1)
#define RN_LIST_MAX_TIMESTAMP (-3)
int rn_log_offset_for_time(struct rn_log *log, int64_t ts, int64_t *offset,
    int64_t *found_ts);

/*
 * Follower truncation (lock held): remove everything at and after offset,
 * at batch boundaries. A batch that straddles offset goes entirely; the new
 * log end is min(offset, that batch's base). No-op if offset >= log end;
 * below the log start it empties the log and restarts at offset.
 */
int rn_log_truncate_to(struct rn_log *log, int64_t offset);

/* Empty the log and make offset its start and end (lock held). */
int rn_log_truncate_fully(struct rn_log *log, int64_t offset);

/*
 * DeleteRecords (lock held): move the log start up to offset (<= log end,
 * else -ERANGE) and delete segments entirely below it. Returns the new log
 * start offset.
 */
int64_t rn_log_delete_records_before(struct rn_log *log, int64_t offset);

/*
 * Retention (lock held): delete the oldest non-active segments breaching
 * retention.ms (by their largest timestamp), retention.bytes, or lying
 * below the log start; advance the log start. Returns segments deleted.
 */
int rn_log_retention(struct rn_log *log, int64_t now_ms);

/* fsync everything after the recovery point and advance it (lock held). */
int rn_log_flush(struct rn_log *log, int64_t now_ms);

/*
 * Where the background flush of rolled segments is: the generation it
 * started at, the segment it is in and how far into it. Zero it to start.
 */
struct rn_log_flush_cursor {
	uint32_t gen;
	int64_t base;
	int64_t pos;
};

/*
 * Background flush (no lock needed; one caller per log at a time): write
 * back and wait for at most about max_bytes more of the segments between
 * the recovery point and the active one, then sync them, their indexes and
 * the directory. Returns 1 when everything below *upto (the active base,
 * seen at generation *gen) is durable, 0 while there is more to do, or
 * -errno. The recovery point moves only with rn_log_recovery_point_advance.
 */
int rn_log_flush_rolled_step(struct rn_log *log, struct rn_log_flush_cursor *fc,
    int64_t max_bytes, int64_t *upto, uint32_t *gen);

/*
 * The recovery point moves up to upto (lock held) if the generation is
 * still gen, so nothing synced was removed or cut since. 1 if it moved.
 */
int rn_log_recovery_point_advance(struct rn_log *log, uint32_t gen,
    int64_t upto);

/*
 * Every batch header from the batch holding offset `from` to the log end,
 * oldest first (lock held): fn(arg, file position, header); a non-zero
 * return stops the walk and is returned. Nothing but headers is read.
 */
typedef int (*rn_log_header_fn)(void *arg, int64_t pos,
    const struct rn_batch_header *h, const uint8_t *unused);
int rn_log_scan_headers(struct rn_log *log, int64_t from, rn_log_header_fn fn,
    void *arg);

/* What an open that recovered the log from disk did (recovered 0: none). */
struct rn_log_recovery_stats {
	int recovered;
	int segments;		/* segments found */
	int scanned;		/* of them, read and checked batch by batch */
	int64_t scanned_bytes;
	int64_t first_scanned;	/* base of the first scanned, -1: none */
	int64_t recovery_point;	/* it started from, -1: clean shutdown */
	int64_t ms;
};
void rn_log_recovery_stats(const struct rn_log *log,
    struct rn_log_recovery_stats *st);

/*
 * After the partition lock reported EOWNERDEAD (lock held): cut unpublished
 * bytes off the active segment, finish or undo an interrupted segment
 * change (the published log end decides), and make the shared state
 * consistent again. Mutations also run it themselves when they find the
 * state marked mid-change, e.g. after one failed halfway on an I/O error.
 */
int rn_log_repair(struct rn_log *log);

/* One segment below the active one, as the log cleaner sees it. */
struct rn_log_seginfo {
	int64_t base;
	int64_t size;
	int64_t largest_ts;	/* its time index's last entry, or its mtime */
};

/*
 * The segments below the active one (oldest first, at most cap), the
 * generation they were listed at and the active base (no lock needed).
 * Returns the count or -errno.
 */
int rn_log_cleanable(struct rn_log *log, struct rn_log_seginfo *out, int cap,
    uint32_t *gen, int64_t *active_base);

/*
 * Log compaction (lock held): replace the segments olds[0..n) (olds[0] ==
 * base, consecutive, below the active one) by the cleaned segment whose
 * <base>.*.cleaned files are written and synced, as storage/swap.h
 * describes. -ESTALE (nothing changed; discard the cleaned files) if the
 * generation moved from gen or the segments are not those. The swap runs
 * inside an odd generation: every process re-reads the directory after it,
 * while read slices taken before keep the old files open.
 */
int rn_log_swap_segments(struct rn_log *log, uint32_t gen, int64_t base,
    const int64_t *olds, int n);
/* A consistent view of the log's shared state (rn_log_segments). */
struct rn_log_view {
	uint32_t gen;		/* generation (segments removed, cut) */
	int64_t lso, leo;
	int64_t abase;		/* the active segment's base offset */
	int64_t asize;		/* its committed bytes */
	uint32_t oc, tc;	/* its committed index entries */
};

/*
 * All segments, oldest first, as one snapshot (no lock needed): up to cap
 * base offsets and sizes (the active segment last, with its committed
 * size) and the state they go with. Returns the number of segments (more
 * than cap: ask again with room), or -errno.
 */
int rn_log_segments(struct rn_log *log, int64_t *bases, int64_t *sizes,
    int cap, struct rn_log_view *v);
int rn_log_dirfd(const struct rn_log *log);
uint32_t rn_log_generation(const struct rn_log *log);

/* Record that epoch starts at start_offset (becoming leader; lock held). */
int rn_log_assign_epoch(struct rn_log *log, int32_t epoch, int64_t start_offset);

/* OffsetForLeaderEpoch (no lock needed). */
void rn_log_end_offset_for_epoch(struct rn_log *log, int32_t epoch,
    int32_t *out_epoch, int64_t *out_offset);

/* Snapshot getters (no lock needed). */
int64_t rn_log_end_offset(const struct rn_log *log);
int64_t rn_log_start_offset(const struct rn_log *log);
int64_t rn_log_recovery_point(const struct rn_log *log);
/* Total bytes of all segments; number of segments (refreshes if needed). */
int64_t rn_log_size_bytes(struct rn_log *log);
int rn_log_segment_count(struct rn_log *log);
/* Base offsets of the segments, oldest first; returns count (<= cap shown). */
int rn_log_segment_bases(struct rn_log *log, int64_t *bases, int cap);
const char *rn_log_dir(const struct rn_log *log);

#endif /* RN_STORAGE_LOG_H */
