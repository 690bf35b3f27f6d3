/*
 * Partition runtime: the shared state of each local replica (one slot in
 * shared memory, assigned by the controller) and this process's handle on
 * its log. Every role changes a partition only through the functions
 * here (the leader's and followers' appends, truncation, high watermark,
 * waiter bits); writes are serialized by the slot's robust lock, so a
 * worker killed in the middle of one costs a repair by the next holder,
 * never a torn batch.
 */
#ifndef RN_PARTITION_H
#define RN_PARTITION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/util.h"
#include "ipc/shm.h"
#include "storage/batch.h"
#include "storage/log.h"
#include "storage/txnindex.h"

#define RN_PART_MAX_REPLICAS 8
/* "<topic>-<partition>" and its future "<that>.<32 hex>-future" fit */
#define RN_PART_DIRNAME_MAX 256

/*
 * A partition's slot in shared memory. Its shape is private to this
 * folder (part_int.h): every change to it is a function below, so the
 * rules of the slot (its lock, the order of log append, idempotence
 * table and high watermark) are written once.
 */
struct rn_part_rt;

/* This process's view of one local partition. */
struct rn_part {
	struct rn_part_rt *rt;
	const _Atomic int64_t *hw;     /* the slot's high watermark */
	struct rn_log *log;            /* read through it; write below */
	uint64_t incarnation;
	uint64_t config_version;       /* metadata image version of the config */
	struct rn_log_config lcfg;     /* the log rules it was opened with */
	int32_t slot;
	uint8_t topic_id[16];          /* identity: topic id and partition */
	int32_t partition;
	/* its log dir (index in log.dirs, and path): an I/O error there
	 * takes the dir offline (dirfail.h) */
	int32_t dir;
	const char *root;
	const struct rn_shm *shm;
	const struct rn_config *cfg;
	uint64_t last_use;             /* the table's clock at its last get */
	/* the storage duty's background flush of its rolled segments */
	struct rn_log_flush_cursor flush;
};

struct rn_part_table {
	const struct rn_shm *shm;
	const struct rn_config *cfg;
	struct rn_part *parts;         /* indexed by slot */
	uint32_t n;
	uint32_t hi;                   /* no slot at or above this is open */
	/* open log handles, and how many rn_part_table_trim keeps (handles.c) */
	uint32_t n_open, max_open;
	uint64_t clock;                /* ticks once per rn_part_get */
	bool turns;                    /* rn_part_table_trim was called */
	/* the clock at the last idle mark and the one before (handles.c),
	 * and the idle mark make_room last looked for idle handles at */
	int64_t mark_ms;
	uint64_t mark_clock, idle_clock, idle_looked;
	struct rn_part *last;          /* what rn_part_get returned last */
	/* the log rules of one topic as of one image (partition.c) */
	uint64_t lcfg_version;
	const struct rn_mdv_topic *lcfg_topic;
	struct rn_log_config lcfg;
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
 * Each open log holds descriptors and index mappings, so a process serving
 * 100,000 partitions cannot keep them all open: max_open (from
 * RLIMIT_NOFILE and vm.max_map_count) bounds them. Call this only where
 * the caller holds no struct rn_part * across (where rn_part_table_sync is
 * safe): between calls, an rn_part_get that would go past max_open closes
 * handles idle for 10-20 s, or when none is left the one got just before
 * it. A role that calls this promises to use a handle's log only until
 * its next rn_part_get of another partition, as the network workers'
 * per-partition loops do (a read's slices keep their segments open on
 * their own). A closed one reopens on its next rn_part_get without
 * recovery. A role that never calls it keeps every handle open. Returns
 * how many it closed (only past max_open).
 */
uint32_t rn_part_table_trim(struct rn_part_table *t);

/*
 * The partition's handle if an rn_part_get took this slot for it before
 * and it is still the slot's (its log may since have been closed by
 * rn_part_table_trim; its shared state is as good), else NULL: nothing is
 * opened. A fetcher following 20,000 replicas looks them up this way and
 * opens a log only to write to it.
 */
struct rn_part *rn_part_peek(struct rn_part_table *t,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp);
/*
 * A partition this node leads, for what the slot answers alone (offsets,
 * the high watermark, follower positions, parking): its log may be
 * closed, and is opened only when this process never opened it or has
 * not taken up its leader epoch (rn_part_get). A leader of more
 * partitions than it may keep open reopens only the logs it reads or
 * writes, not each one a follower fetch or a waiting produce looks at.
 */
struct rn_part *rn_part_led(struct rn_part_table *t, const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp,
    int16_t *kerr);
/*
 * This node's replica of it is in an offline log dir (LOST in the image,
 * or its dir's bit set): Kafka answers KAFKA_STORAGE_ERROR for it before
 * any leadership or epoch check, as its broker still hosts it offline.
 */
bool rn_part_offline(const struct rn_part_table *t,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp);
/*
 * The bytes of the log in a partition slot, if the slot holds that
 * partition's live log; else -1. Reads shared memory only (the
 * supervisor's metrics).
 */
int64_t rn_part_slot_log_size(const struct rn_shm *shm, unsigned slot,
    const uint8_t topic_id[16], int32_t partition);
/* The log's end and start offsets from the slot, open or not. */
int64_t rn_part_log_end(const struct rn_part *p);
int64_t rn_part_log_start(const struct rn_part *p);

/*
 * The local partition for (topic, partition) as the image describes it,
 * opened (and on first use recovered from disk) if needed. NULL with a
 * Kafka error code in *kerr when it is not local or cannot be opened
 * (KAFKA_STORAGE_ERROR when its log dir is offline).
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

/* Has the slot changed since p was opened (its log moved to another dir,
 * or the slot changed hands)? rn_part_get then opens it again. */
bool rn_part_stale(const struct rn_part *p);

/* The high watermark: consumers read below it (one atomic load). */
static inline int64_t
rn_part_hw(const struct rn_part *p)
{
	return atomic_load(p->hw);
}

/*
 * Leader: append a producer's batch (h is its parsed header; the records
 * are rewritten in place: base offset, append time) under the slot's
 * lock, after the idempotence check, and remember its producer. A Kafka
 * error code; on success *dup is -1 and *info says where it went, or *dup
 * is the base offset a retried batch was already written at.
 */
int16_t rn_part_append_leader(struct rn_part *p, void *records, size_t len,
    const struct rn_batch_header *h, int32_t leader_epoch,
    struct rn_append_info *info, int64_t *dup);
/*
 * KIP-890. rn_part_txn_open: 1 if producer pid has a transaction open
 * here at epoch, else 0 with the guard a verified append must still find
 * (or -EIO). rn_part_append_verified: rn_part_append_leader after a
 * verification, refused with INVALID_TXN_STATE if the guard moved.
 */
#define RN_PART_NO_GUARD INT64_MIN
int rn_part_txn_open(struct rn_part *p, int64_t pid, int16_t epoch,
    int64_t *guard);
int16_t rn_part_append_verified(struct rn_part *p, void *records, size_t len,
    const struct rn_batch_header *h, int32_t leader_epoch,
    struct rn_append_info *info, int64_t *dup, int64_t guard);
/* The same for the group coordinator's transactional offsets (a producer's
 * batch without a sequence). */
int16_t rn_part_append_coordinator(struct rn_part *p, void *records,
    size_t len, const struct rn_batch_header *h, int32_t leader_epoch,
    struct rn_append_info *info, int64_t *dup);

/*
 * Follower: append what the leader sent, its offsets and epochs kept; the
 * batches' epochs go to the epoch cache first and their producers to the
 * idempotence table after (markers ending transactions, aborts indexed),
 * so this replica dedupes retries and knows its last stable offset the
 * day it leads. 0, a negative errno of the log (-EILSEQ: nothing new), or
 * RN_PART_STALE.
 */
#define RN_PART_STALE 1  /* the slot could not be locked: nothing done */
int rn_part_append_follower(struct rn_part *p, const uint8_t *records,
    size_t len);

/*
 * Follower: cut a divergent tail at cut (below the log end), forget the
 * producers' batches and keep the high watermark at or below the cut.
 * True if it cut; *from is the log end it cut from.
 */
bool rn_part_truncate(struct rn_part *p, int64_t cut, int64_t *from);

/*
 * Follower: when the whole log lies below the leader's log start (the
 * leader deleted what we miss), start over there, empty. True if it did.
 */
bool rn_part_restart_at(struct rn_part *p, int64_t leader_log_start);

/* Follower: the leader's high watermark, as far as our log has it. */
void rn_part_hw_follow(struct rn_part *p, int64_t leader_hw);

/*
 * Transactions (txn.c). The last stable offset: min of the high watermark
 * and the first offset of the earliest open transaction; read_committed
 * consumers read below it. Two atomic loads, no lock.
 */
int64_t rn_part_lso(const struct rn_part *p);

/*
 * Leader: end producer pid's transaction with a marker (commit or abort)
 * written as a control batch, an abort indexed in the segment's
 * .txnindex. A Kafka error code (INVALID_PRODUCER_EPOCH for an epoch older
 * than the producer's); on success *offset is the marker's.
 */
int16_t rn_part_write_marker(struct rn_part *p, int64_t pid, int16_t epoch,
    bool commit, int32_t coordinator_epoch, int32_t leader_epoch,
    int64_t *offset);

/*
 * The aborted transactions a read from `from` up to `upper` must carry,
 * as Kafka collects them (no lock needed): up to cap into out; the count
 * or -errno.
 */
int rn_part_aborted_txns(struct rn_part *p, int64_t from, int64_t upper,
    struct rn_aborted_txn *out, int cap);

/* The newest leader epoch in the log's epoch cache, -1 if none. */
int32_t rn_part_latest_epoch(const struct rn_part *p);

/*
 * DeleteRecords: move the log start to target. A Kafka error code; on
 * success *low is the new log start.
 */
int16_t rn_part_delete_records(struct rn_part *p, int64_t target,
    int64_t *low);

/* Retention by time and size: segments deleted (0 if it could not lock). */
int rn_part_retention(struct rn_part *p, int64_t now_ms);

/*
 * The log cleaner's part: fn runs with the log under the slot's lock (its
 * segment swap), and the last batch of each idempotent producer, which a
 * cleaning keeps: at most cap base offsets stored, how many there are
 * returned (more than cap: ask again with room).
 */
int rn_part_locked(struct rn_part *p, int (*fn)(struct rn_log *log, void *arg),
    void *arg);
int rn_part_producer_last_batches(struct rn_part *p, int64_t *out, int cap);

/*
 * DescribeProducers (producers.c): the producers the slot's table holds,
 * copied under the lock, at most cap; the count (more than cap: ask
 * again with room), or -1 if the lock could not be taken.
 */
struct rn_part_producer {
	int64_t producer_id;
	int16_t epoch;
	int32_t last_sequence;          /* -1: no batch remembered */
	int64_t last_timestamp;         /* of its last write (wall clock ms) */
	int32_t coordinator_epoch;      /* of its last marker, -1: none */
	int64_t txn_start_offset;       /* its open transaction, -1: none */
};
int rn_part_producers(struct rn_part *p, struct rn_part_producer *out,
    int cap);

/* Wake this network worker (index) when the partition moves. */
void rn_part_park(struct rn_part *p, unsigned worker);

/* Leader: when a follower last caught up (wall clock ms), -1 if unknown. */
int64_t rn_part_follower_caught_up_ms(struct rn_part *p, int32_t id);

/*
 * Leader: one ISR change in flight per partition. Allowed when none is,
 * when the partition epoch moved since, or after the retry delay; claim
 * it before sending (several workers may notice at once: one wins), and
 * drop the claim if the send failed.
 */
bool rn_part_isr_change_allowed(struct rn_part *p, int32_t partition_epoch,
    int64_t now_ms);
bool rn_part_isr_change_claim(struct rn_part *p, int32_t partition_epoch,
    int64_t now_ms);
void rn_part_isr_change_unclaim(struct rn_part *p);
/*
 * The controller refused an ISR change of the partition in slot: if the
 * slot still holds (id, partition), the leader may ask again soon, on a
 * later fetch of that follower, instead of after the full retry delay.
 */
void rn_part_isr_change_refused(const struct rn_shm *shm, int32_t slot,
    const uint8_t id[16], int32_t partition);
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

/*
 * Write each log dir's recovery-point-offset-checkpoint (Kafka's
 * log.flush.offset.checkpoint.interval.ms): every local log's recovery
 * point, a log not open in this start keeping the entry it had.
 */
int rn_part_checkpoint_recovery(struct rn_part_table *t,
    const struct rn_mdview *v);

/*
 * The storage duty's periodic checkpoint of one file in every log dir
 * (ckpt_pass.c): its entries gathered a step per loop turn, its files
 * written (and, for the recovery points, the old ones read) by a thread,
 * so that no turn holds the worker's clients for a whole checkpoint.
 */
enum rn_ckpt_kind { RN_CKPT_HW, RN_CKPT_RECOVERY };
struct rn_ckpt_pass;
struct rn_ckpt_pass *rn_ckpt_pass_new(enum rn_ckpt_kind kind);
/* Begin a pass; false if one is under way (or no memory). */
bool rn_ckpt_pass_start(struct rn_ckpt_pass *c, const struct rn_part_table *t,
    const struct rn_mdview *v);
/* Some of the pass until deadline_us (rn_now_us); true while gathering
 * is left for the next turn (a thread's work is only looked in on). */
bool rn_ckpt_pass_step(struct rn_ckpt_pass *c, const struct rn_part_table *t,
    const struct rn_mdview *v, int64_t deadline_us);
/* Waits for a write in flight. */
void rn_ckpt_pass_free(struct rn_ckpt_pass *c);
/* A whole pass at once, inline (the clean stop): 0 or a failed write's
 * -errno (its dir taken offline as the periodic pass does). */
int rn_ckpt_pass_run(struct rn_part_table *t, const struct rn_mdview *v,
    enum rn_ckpt_kind kind);

/* Where a pass over the image's partitions is. */
struct rn_part_pass {
	int topic, part;
};

/*
 * The storage duty (flush.c): part of a pass syncing every local log's
 * rolled segments and moving its recovery point to the rolled-to base,
 * until deadline_us (rn_now_us); true while the pass goes on.
 */
bool rn_part_flush_pass(struct rn_part_table *t, const struct rn_mdview *v,
    struct rn_part_pass *pass, int64_t deadline_us);

/*
 * The node's clean stop, by the worker that stops last once every writer
 * is gone: every local log flushed with its producers' snapshot at its
 * end, the checkpoints written, and each log dir where all of that
 * worked marked with .kafka_cleanshutdown. 0 or -errno.
 */
int rn_part_shutdown_node(const struct rn_shm *shm, const struct rn_config *cfg);

/*
 * What a storage call on p's log returned: an I/O error takes its log
 * dir offline (dirfail.h). Returns rc.
 */
int rn_part_io(struct rn_part *p, int rc, const char *what);

/* ---- moving a replica between this node's log dirs (move.c) ---- */

/*
 * AlterReplicaLogDirs (KIP-113): the replica is copied into a future
 * replica "<topic>-<p>.<topic id hex>-future" in the destination log dir
 * by the replica fetcher that owns the partition, while it serves; once
 * the copy has caught up, the broker agent reports the destination with
 * AssignReplicasToDirs, and when the image records it the fetcher swaps
 * the two under the slot's lock. A crash keeps exactly one whole replica:
 * the future one wins only when it holds the marker RN_FUTURE_COMPLETE
 * (written, synced, under the lock, once the copy is whole), and
 * recovery finishes such a swap; without it the current one wins and the
 * copy starts over.
 */
#define RN_FUTURE_COMPLETE "future.complete"

enum rn_move_state {
	RN_MOVE_NONE = 0,
	RN_MOVE_COPYING,         /* the fetcher copies */
	RN_MOVE_CAUGHT_UP,       /* the destination is to be recorded */
	RN_MOVE_SWAPPING,        /* under the lock only */
};

struct rn_part_move_info {
	uint32_t seq;
	int32_t dest;            /* log.dirs index */
	uint32_t state;
	int64_t size, end;       /* future replica's bytes, offsets below end */
};

/* "<topic>-<p>.<topic id hex>-future": -ENAMETOOLONG past 255 bytes. */
int rn_part_future_name(char *buf, size_t len, const char *topic,
    int32_t partition, const uint8_t id[16]);

/* The log dir (index in log.dirs) that holds p's log. */
int32_t rn_part_dir(const struct rn_part *p);

/*
 * Move p's replica to log dir dest (its future replica's directory is
 * made at once), or, dest being its own dir, cancel a move under way. A
 * Kafka error code (KAFKA_STORAGE_ERROR when dest cannot be written).
 */
int16_t rn_part_move_request(struct rn_part *p, int32_t dest);

/*
 * Without a handle: the dir holding the log of (id, partition) in slot
 * (-1 if the slot is not that partition's or does not know), and the move
 * under way there (false if none).
 */
int32_t rn_part_slot_dir(const struct rn_shm *shm, int32_t slot,
    const uint8_t id[16], int32_t partition);
bool rn_part_slot_move(const struct rn_shm *shm, int32_t slot,
    const uint8_t id[16], int32_t partition, struct rn_part_move_info *mi);

/* The fetcher's side. */
struct rn_logcopy;
uint64_t rn_part_truncations(const struct rn_part *p);
void rn_part_move_progress(struct rn_part *p, uint32_t seq, int64_t size,
    int64_t end);
/* The copy caught up: have the destination recorded (false: the move
 * changed meanwhile). */
bool rn_part_move_caught_up(struct rn_part *p, uint32_t seq);
/*
 * Swap the caught-up future replica in, under the lock: 1 done, 0 not
 * now (more to copy, or the handle is stale: get it again), -ESTALE the
 * move changed, or -errno (an I/O error: abandon it).
 */
int rn_part_move_swap(struct rn_part *p, uint32_t seq, struct rn_logcopy *lc);
/* Give up move seq: its future replica goes, the metadata keeps (or gets
 * back) the dir the log is in. */
void rn_part_move_abandon(struct rn_part *p, uint32_t seq, const char *why);

/*
 * The broker agent: the log dir the metadata should record for the
 * replica in slot (-1: nothing to report), and, once the image records
 * dir, the report is done.
 */
int32_t rn_part_slot_dir_wanted(const struct rn_shm *shm, int32_t slot,
    const uint8_t id[16], int32_t partition);
void rn_part_slot_dir_recorded(const struct rn_shm *shm, int32_t slot,
    const uint8_t id[16], int32_t partition, int32_t dir);

/* Translate the storage layer's configuration from topic configs. */
void rn_part_log_config(const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, const struct rn_config *cfg,
    struct rn_log_config *out);

#endif /* RN_PARTITION_H */
