/*
 * What the log cleaner does to a partition, through the partition like
 * every other writer: its segment swap under the slot's lock, and what it
 * must read under that lock (the last batch of each idempotent producer,
 * which a cleaning keeps).
 */
#include "autoconf.h"

#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

int
rn_part_locked(struct rn_part *p, int (*fn)(struct rn_log *log, void *arg),
    void *arg)
{
	int rc;

	if ((rc = rn_part_lock(p)) < 0)
		return rc;
	rc = rn_part_io(p, fn(p->log, arg), "swapping cleaned segments");
	rn_part_size_sync(p);
	rn_part_unlock(p);
	return rc;
}

int
rn_part_producer_last_batches(struct rn_part *p, int64_t *out, int cap)
{
	struct rn_idem_iter it = RN_IDEM_ITER_INIT;
	const struct rn_idem_producer *pr;
	const struct rn_idem_batch *last;
	int n = 0;

	if (rn_part_lock(p) != 0)
		return 0;
	while ((pr = rn_idem_next(&p->rt->idem, &it)) != NULL)
		if ((last = rn_idem_newest(pr)) != NULL && n++ < cap)
			out[n - 1] = last->base_offset;
	rn_part_unlock(p);
	return n;
}
