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
	const struct rn_idem_state *st = &p->rt->idem;
	int n = 0;

	if (rn_part_lock(p) != 0)
		return -1;
	for (int i = 0; i < RN_IDEM_PRODUCERS && n < cap; i++) {
		const struct rn_idem_producer *pr = &st->p[i];
		struct rn_part_producer *o = &out[n];

		if (pr->pid == 0)
			continue;
		o->producer_id = pr->pid;
		o->epoch = pr->epoch;
		o->last_sequence = pr->n > 0 ? pr->b[(pr->next +
		    RN_IDEM_BATCHES - 1) % RN_IDEM_BATCHES].last_seq : -1;
		o->last_timestamp = pr->last_used_ms > 0 ? pr->last_used_ms : -1;
		o->coordinator_epoch = pr->coord_epoch;
		o->txn_start_offset = pr->txn_first;
		n++;
	}
	rn_part_unlock(p);
	return n;
}
