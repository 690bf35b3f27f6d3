/*
 * What DescribeProducers shows of a partition: its idempotent-producer
 * table (idempotence.c) as Kafka's ProducerStateManager lists its active
 * producers, copied out under the slot's lock so the answer is one
 * consistent look at it.
 */
#include "autoconf.h"

#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

int
rn_part_producers(struct rn_part *p, struct rn_part_producer *out, int cap)
{
	struct rn_idem_iter it = RN_IDEM_ITER_INIT;
	const struct rn_idem_producer *pr;
	int n = 0;

	if (rn_part_lock(p) != 0)
		return -1;
	while ((pr = rn_idem_next(&p->rt->idem, &it)) != NULL) {
		const struct rn_idem_batch *last = rn_idem_newest(pr);
		struct rn_part_producer *o = &out[n];

		/* counted past cap: the caller asks again with room */
		if (n++ >= cap)
			continue;
		o->producer_id = pr->pid;
		o->epoch = pr->epoch;
		o->last_sequence = last != NULL ? last->last_seq : -1;
		o->last_timestamp = pr->last_used_ms > 0 ? pr->last_used_ms : -1;
		o->coordinator_epoch = pr->coord_epoch;
		o->txn_start_offset = pr->txn_first;
	}
	rn_part_unlock(p);
	return n;
}
