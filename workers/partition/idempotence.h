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
#include <stdint.h>

#include "storage/batch.h"

#define RN_IDEM_BATCHES 5     /* Kafka keeps the last five per producer */
#define RN_IDEM_PRODUCERS 24

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
	uint16_t pad;
	struct rn_idem_batch b[RN_IDEM_BATCHES];
	/* its open transaction's first offset, -1: none (pid != 0 only) */
	int64_t txn_first;
	int32_t coord_epoch;	/* of its last marker, -1: none */
	/* markers written for it (wraps): a transactional write verified
	 * with the coordinator is refused if one was written since */
	uint32_t markers;
};

/* All of it is read and written under the partition lock. */
struct rn_idem_state {
	struct rn_idem_producer p[RN_IDEM_PRODUCERS];
};

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
/* Forget everything (the log was truncated under the batches). */
void rn_idem_reset(struct rn_idem_state *s);

/*
 * A producer id unique in the cluster: node id, then a counter shared by
 * the node's workers (in shared memory) that starts from the clock.
 */
int64_t rn_idem_new_producer_id(_Atomic int64_t *counter, int32_t node_id);

#endif /* RN_IDEMPOTENCE_H */
