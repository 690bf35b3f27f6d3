/*
 * The partition slot's shape: private to workers/partition/. Everything
 * that changes it is a function of this folder (partition.h); other roles
 * hold a struct rn_part handle and read the high watermark through
 * rn_part_hw().
 */
#ifndef RN_PART_INT_H
#define RN_PART_INT_H

#ifndef RN_PARTITION_INTERNAL
#error "part_int.h is private to workers/partition/: use partition.h"
#endif

#include <stdatomic.h>
#include <stdint.h>

#include "common/util.h"
#include "ipc/rlock.h"
#include "storage/log.h"
#include "workers/partition/idempotence.h"
#include "workers/partition/partition.h"

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

/*
 * A move of this replica to another log dir (AlterReplicaLogDirs,
 * move.c): the future replica <name>.<topic id hex>-future in log dir
 * dest, copied by the replica fetcher that owns the partition. Written
 * under the slot's lock, but progress (atomics) and assign_want (the
 * broker agent clears it, compare-and-swap).
 */
struct rn_part_move {
	_Atomic uint32_t seq;          /* bumped by every change of dest */
	_Atomic int32_t dest;          /* log.dirs index, -1: no move */
	_Atomic uint32_t state;        /* RN_MOVE_* */
	/* the log dir the metadata should record for this replica (the
	 * broker agent reports it with AssignReplicasToDirs), -1: none */
	_Atomic int32_t assign_want;
	_Atomic int64_t future_size;   /* bytes in the future replica */
	_Atomic int64_t future_end;    /* it holds every offset below */
	/* truncations of the log, counted so a copy knows its tail moved */
	_Atomic uint64_t truncations;
	char name[RN_PART_DIRNAME_MAX]; /* "<topic>-<partition>" */
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
	/* the earliest open transaction's first offset, -1: none; written
	 * under the lock from idem, read without it (rn_part_lso) */
	_Atomic int64_t first_unstable;
	/* the log dir (index in log.dirs) holding the log, found on disk
	 * when the slot is taken and moved by a swap; -1: not yet known */
	_Atomic int32_t cur_dir;
	struct rn_part_move move;
	/*
	 * The log's bytes outside its active segment, set under the lock
	 * whenever the segments change (open, roll, truncation, retention,
	 * cleaning): with log.active_size, the log's size for the metrics
	 * at no cost to an append.
	 */
	_Atomic int64_t sealed_bytes;
	struct rn_log_shared log;
};
_Static_assert(sizeof(struct rn_part_rt) <= sizeof(struct rn_part_slot),
    "partition runtime must fit its shared-memory slot");

/* Lock a partition for a mutation, repairing it if the last holder died. */
int rn_part_lock(struct rn_part *p);
void rn_part_unlock(struct rn_part *p);

/* move.c: with the lock held, at the slot's claim (fresh: a node start)
 * and after a holder died: where the log is (its dir index), and a move
 * found on disk finished or resumed. */
int rn_part_move_claim(const struct rn_config *cfg, const struct rn_shm *shm,
    struct rn_part_rt *rt, const char *topic, int32_t partition,
    const uint8_t id[16], int image_dir);
/* A swap cut short by its holder's death: finished (1: the log moved,
 * its shared state must be recovered from disk) or undone (0). */
int rn_part_move_repair(const struct rn_config *cfg, struct rn_part_rt *rt,
    const uint8_t id[16]);

/* The slot of mp as this node holds it for topic tp (this start used it,
 * a worker's handle open or not), or NULL: no handle needed. */
struct rn_part_rt *rn_part_slot_held(const struct rn_part_table *t,
    const struct rn_mdv_topic *tp, const struct rn_mdv_partition *mp);

/* handles.c: how many logs a process keeps open, and the one close of a
 * handle that keeps the table's count */
uint32_t rn_part_handle_budget(void);
void rn_part_handle_close(struct rn_part_table *t, struct rn_part *p);
void rn_part_handle_make_room(struct rn_part_table *t, struct rn_part *p);

/* checkpoints.c: what a log's open recovery starts from (lock held);
 * fresh: the slot's first open of this start. */
void rn_part_recovery_input(const struct rn_part_table *t, int dir,
    const char *topic, int32_t partition, bool fresh,
    struct rn_log_recovery *rec);
/* The offset a log dir's checkpoint file holds for it, or -1. */
int64_t rn_part_checkpointed(const char *root, const char *file,
    const char *topic, int32_t partition);
/* What the synchronous checkpoints (checkpoints.c) and the storage duty's
 * stepped ones (ckpt_pass.c) share: entries ordered by topic, partition;
 * the entry of (topic, partition) in sorted entries, or -1; the dir a
 * slot's log is in (a move changes it before the image records it); the
 * values a slot gives each file, -1: none. */
struct rn_tp_offset;
int rn_part_ckpt_cmp(const void *a, const void *b);
int64_t rn_part_ckpt_lookup(const struct rn_tp_offset *e, size_t n,
    const char *topic, int32_t partition);
int rn_part_ckpt_dir(const struct rn_part_rt *rt,
    const struct rn_mdv_partition *mp);
int64_t rn_part_ckpt_hw_value(const struct rn_part_rt *rt);
int64_t rn_part_ckpt_rp_value(const struct rn_part_rt *rt);

/* prodstate.c: producer-state snapshots, the newest kept few. */
#define RN_PART_SNAPSHOTS_KEPT 3
/* The table as of offset written to <offset>.snapshot (lock held). */
int rn_part_snapshot_producers(struct rn_part *p, int64_t offset, int durable);
struct rn_part_prodload {
	int64_t snapshot;	/* the snapshot loaded, -1: none */
	int64_t from;		/* batch headers replayed from there */
	int batches;
	int64_t ms;
};
/* The table rebuilt: newest good snapshot, then the headers after it. */
void rn_part_producers_load(struct rn_part *p, struct rn_part_prodload *out);
/* Snapshots below `below` or above `above` (-1: none) removed, and all
 * but the newest few. */
void rn_part_snapshots_prune(struct rn_part *p, int64_t below, int64_t above);

/* The table's evictions and refusals since the last line logged, at
 * most once a minute, with the partition as subject (lock held). */
void rn_part_producers_note(struct rn_part *p, int64_t now_ms);

/* txn.c (lock held): first_unstable again from the producer table */
void rn_part_txn_sync(struct rn_part_rt *rt);
/* A fetched payload appended: its batches at or past from go to the
 * producer table (a marker ends its producer's transaction, an abort is
 * indexed). */
void rn_part_producers_appended(struct rn_part *p, const uint8_t *buf,
    size_t len, int64_t from);
/* A marker met replaying the log at open: its abort indexed if missing. */
struct rn_part_marker {
	int64_t pid, first, offset;
};
void rn_part_txn_replayed(struct rn_part *p, const struct rn_part_marker *m,
    int n);
/* The log ends at cut (a truncation, a crash): the active segment's
 * index entries past it go (rn_part_producers_load). */
void rn_part_txn_truncated(struct rn_part *p, int64_t cut);
/* The .txnindex of the segments based in [from, upto) synced (the
 * background flush of rolled segments; the caller syncs the dir). */
int rn_part_txnindex_sync(struct rn_part *p, int64_t from, int64_t upto);
/* A control batch's ControlRecordType (0 abort, 1 commit), -1: unreadable;
 * *coord_epoch the EndTransactionMarker's coordinator epoch (-1: none). */
int rn_part_marker_type(const uint8_t *batch, size_t len,
    int32_t *coord_epoch);

/* writes.c: a segment rolled (lock held): sizes and a producer snapshot. */
void rn_part_rolled(struct rn_part *p);

/* The log's segments changed (lock held): sealed_bytes again. */
void rn_part_size_sync(struct rn_part *p);

/* A leader's record of one follower, NULL if it never fetched. */
struct rn_part_follower *rn_part_follower(struct rn_part *p, int32_t id);

#endif /* RN_PART_INT_H */
