/*
 * Idempotent producers: per partition, the last few batches of each
 * producer id (sequence ranges and where they were written), kept in the
 * partition's shared-memory slot so every network worker sees them and
 * followers keep them in step from the batches they replicate. A retried
 * batch is answered with its original offset instead of being appended
 * again; a gap in sequences is OUT_OF_ORDER_SEQUENCE_NUMBER. Each producer's
 * open transaction (the offset of its first transactional batch, until a
 * marker ends it) is kept too: the earliest of them is where the
 * partition's unstable part begins.
 */
#ifndef RN_IDEMPOTENCE_H
#define RN_IDEMPOTENCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/batch.h"

#define RN_IDEM_BATCHES 5     /* Kafka keeps the last five per producer */
/* Producers a slot keeps inline; the rest chain into the node's pool
 * (ipc/prodpool.h), in buckets by producer id. */
#define RN_IDEM_PRODUCERS 24
#define RN_IDEM_BUCKETS 64
/* Kafka's producer.id.expiration.ms default: a day */
#define RN_IDEM_EXPIRATION_MS 86400000LL

struct rn_idem_batch {
	int32_t first_seq, last_seq;
	int64_t base_offset;
};

struct rn_idem_producer {
	int64_t pid;              /* 0: free slot (producer ids start at 1) */
	int64_t last_used_ms;
	int16_t epoch;
	uint16_t n;               /* batches remembered */
	uint16_t next;            /* ring position of the next one */
	/* markers written for it (wraps): a transactional write verified
	 * with the coordinator is refused if one was written since (65,536
	 * markers of one producer within a verification's 30 s cannot be) */
	uint16_t markers;
	struct rn_idem_batch b[RN_IDEM_BATCHES];
	/* its open transaction's first offset, -1: none (pid != 0 only) */
	int64_t txn_first;
	int32_t coord_epoch;	/* of its last marker, -1: none */
	uint32_t link;		/* pooled: the next in its bucket, 0: none */
};

/* All of it is read and written under the partition lock. */
struct rn_idem_state {
	struct rn_idem_producer p[RN_IDEM_PRODUCERS];
	uint32_t bucket[RN_IDEM_BUCKETS];   /* pool refs, 0: empty */
	uint32_t n_pooled;                  /* entries on the chains */
	/* producers evicted (the pool full) and batches refused (every
	 * producer here in a transaction) since the caller last logged */
	uint32_t evicted, refused;
	/* bumped whenever a transaction here begins or ends (a batch, a
	 * marker, an eviction): the first unstable offset may have moved */
	uint32_t txn_gen;
	int64_t logged_ms;
};

/* Walks every producer of a table: inline, then the chains. */
struct rn_idem_iter {
	int i, b;
	uint32_t ref;
	uint32_t steps;
};
#define RN_IDEM_ITER_INIT { 0, 0, 0, 0 }

/*
 * The process's view of the node's pool (each process maps it at its own
 * address); NULL: none, a table holds its inline producers only. How long
 * a producer without an open transaction is kept idle.
 */
struct rn_prodpool;
void rn_idem_pool_attach(struct rn_prodpool *pool);
void rn_idem_set_expiration(int64_t ms);

enum {
	RN_IDEM_APPEND = 0,       /* new, in order: append it */
	RN_IDEM_DUPLICATE = 1,    /* already written at *dup_offset */
};

/* Classify a batch about to be appended; a negative Kafka error code on refusal. */
int rn_idem_check(const struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t *dup_offset);
/*
 * Remember a written batch (its base offset as assigned): a transactional
 * one opens its producer's transaction if none is open, a control batch
 * (a marker) ends it. Returns the first offset of the transaction a marker
 * ended, else -1.
 */
int64_t rn_idem_record(struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t base_offset, int64_t now_ms);
/* A marker from (pid, epoch) sent by a coordinator of coord_epoch may be
 * written: 0 or a negative Kafka error (an older producer epoch, or a
 * coordinator older than the one of the producer's last marker). */
int rn_idem_marker_check(const struct rn_idem_state *s, int64_t pid,
    int16_t epoch, int32_t coord_epoch);
/* The first offset of the earliest open transaction, or -1: none. */
int64_t rn_idem_first_unstable(const struct rn_idem_state *s);
/* The same, leaving out producer pid's (an aborted entry's stable offset). */
int64_t rn_idem_first_unstable_but(const struct rn_idem_state *s,
    int64_t pid);
/* The coordinator epoch of producer pid's last marker (known to the table). */
void rn_idem_set_coord_epoch(struct rn_idem_state *s, int64_t pid,
    int32_t coord_epoch);
/* A loaded snapshot's transaction of producer pid (known to the table). */
void rn_idem_set_txn(struct rn_idem_state *s, int64_t pid, int64_t first,
    int32_t coord_epoch);
/*
 * KIP-890: does producer pid have a transaction open here at epoch (true:
 * its transactional writes need no verification)? If not, *guard is what
 * the append after a verification must still find: the producer's marker
 * count, or -1 when the table has no entry for it.
 */
bool rn_idem_txn_open(const struct rn_idem_state *s, int64_t pid,
    int16_t epoch, int64_t *guard);
/* Forget everything (the log was truncated under the batches, the slot
 * changes hands): its pooled entries go back to the pool. */
void rn_idem_reset(struct rn_idem_state *s);

/*
 * Make room for a batch's producer before it is appended (a leader): 0,
 * or -RN_KERR_REQUEST_TIMED_OUT when the node's pool is exhausted and
 * every producer here has an open transaction (neither may be evicted).
 * Otherwise a producer idle past the expiration, then the least recently
 * used one without an open transaction, gives way (counted in evicted).
 */
int rn_idem_admit(struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t now_ms);
/* Producers idle for the expiration without an open transaction
 * forgotten, as Kafka's removeExpiredProducers; how many. */
int rn_idem_expire(struct rn_idem_state *s, int64_t now_ms);
/* The next producer of the table (pid != 0), NULL at the end. */
const struct rn_idem_producer *rn_idem_next(const struct rn_idem_state *s,
    struct rn_idem_iter *it);
/* Producers in the table. */
size_t rn_idem_count(const struct rn_idem_state *s);
/* The newest batch of a producer with one, NULL: none. */
const struct rn_idem_batch *rn_idem_newest(const struct rn_idem_producer *p);

/*
 * A producer id unique in the cluster: node id, then a counter shared by
 * the node's workers (in shared memory) that starts from the clock.
 */
int64_t rn_idem_new_producer_id(_Atomic int64_t *counter, int32_t node_id);

#endif /* RN_IDEMPOTENCE_H */
