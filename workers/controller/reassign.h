/*
 * Partition reassignment as KRaft does it, as pure functions of a
 * partition and its brokers' states: a move first widens the replicas to
 * target + removing (removing = current - target, adding = target -
 * current, each sorted), the adding replicas catch up and join the ISR,
 * and once the whole target is in the ISR the replicas become the
 * target, the removed ones leave the ISR and the leader moves if it was
 * removed. A cancel takes the adding replicas out again (the others keep
 * the widened order, as in KRaft). Callers turn the outcome into a
 * Partition record.
 */
#ifndef RN_CTL_REASSIGN_H
#define RN_CTL_REASSIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "workers/controller/elect.h"
#include "workers/controller/state.h"

/* A partition's replicas, ISR and leader after a reassignment step. */
struct ctl_reassign {
	int32_t n_replicas, replicas[CTL_MAX_RF];
	int32_t n_adding, adding[CTL_MAX_RF];
	int32_t n_removing, removing[CTL_MAX_RF];
	int32_t n_isr, isr[CTL_MAX_RF];
	int32_t leader, leader_epoch, partition_epoch;
};

static inline bool
ctl_reassigning(const struct ctl_partition *p)
{
	return p->n_adding > 0 || p->n_removing > 0;
}

/* p as the partition ra describes (its arrays point into ra; no slots
 * or dirs). */
void ctl_reassign_as_partition(const struct ctl_reassign *ra,
    struct ctl_partition *p);

/*
 * Start (or replace) a move of p to target[0..n-1], checked by the caller
 * for duplicates and unknown brokers. It completes at once when nothing
 * has to catch up. 0 with out filled; INVALID_REPLICA_ASSIGNMENT when
 * the widened set is too large or no in-sync replica would remain.
 */
int16_t ctl_reassign_start(const struct ctl_partition *p,
    const int32_t *target, int32_t n, ctl_bstate_fn fn, void *arg,
    struct ctl_reassign *out);
/* Back to the original replicas: 0, or NO_REASSIGNMENT_IN_PROGRESS. */
int16_t ctl_reassign_cancel(const struct ctl_partition *p, ctl_bstate_fn fn,
    void *arg, struct ctl_reassign *out);
/* True (out filled) when p's target replicas are all in its ISR and an
 * up broker of the target can lead. */
bool ctl_reassign_complete(const struct ctl_partition *p, ctl_bstate_fn fn,
    void *arg, struct ctl_reassign *out);

#endif /* RN_CTL_REASSIGN_H */
