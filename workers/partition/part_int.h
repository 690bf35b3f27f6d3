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

/* Lock a partition for a mutation, repairing it if the last holder died. */
int rn_part_lock(struct rn_part *p);
void rn_part_unlock(struct rn_part *p);

/* A leader's record of one follower, NULL if it never fetched. */
struct rn_part_follower *rn_part_follower(struct rn_part *p, int32_t id);

#endif /* RN_PART_INT_H */
