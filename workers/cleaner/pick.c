/*
 * Which part of a log a cleaning may touch and how dirty it is: the clean
 * part lies below the first dirty offset (the cleaner's checkpoint), the
 * dirty part runs from there to the first segment that is the active one,
 * younger than min.compaction.lag.ms or not wholly below the high
 * watermark. The cleaner takes the log with the
 * highest dirty ratio over min.cleanable.dirty.ratio, as Kafka does, or
 * one past max.compaction.lag.ms, or one whose tombstones are due to go.
 */
#include "autoconf.h"

#include "workers/cleaner/cl_int.h"

int
cl_range_of(struct rn_log *log, int64_t first_dirty,
    const struct cl_params *p, struct rn_log_seginfo *segs, uint32_t *gen,
    struct cl_range *r)
{
	int64_t abase;
	int n = rn_log_cleanable(log, segs, CL_MAX_SEGS, gen, &abase), i;

	r->clean_bytes = r->dirty_bytes = 0;
	r->ratio = 0;
	r->overdue = false;
	if (n < 0)
		return n;
	if (n == 0) {
		r->first_dirty = r->end = abase;
		return 0;
	}
	if (first_dirty < segs[0].base)
		first_dirty = segs[0].base;
	if (first_dirty > abase)
		first_dirty = abase;	/* truncated below the checkpoint */
	r->first_dirty = first_dirty;
	r->end = n < CL_MAX_SEGS ? abase : segs[n - 1].base;
	for (i = 0; i < n; i++) {
		int64_t next = i + 1 < n ? segs[i + 1].base : abase;

		if (next <= first_dirty) {
			r->clean_bytes += segs[i].size;
			continue;
		}
		/* what is not committed may yet be truncated: a record it
		 * supersedes must stay */
		if (next > p->max_end) {
			r->end = segs[i].base;
			break;
		}
		/* too young to compact: it and all after it wait */
		if (p->min_lag_ms > 0 && segs[i].largest_ts >= 0 &&
		    p->now_ms - segs[i].largest_ts < p->min_lag_ms) {
			r->end = segs[i].base;
			break;
		}
		if (r->dirty_bytes == 0 && p->max_lag_ms < INT64_MAX &&
		    segs[i].largest_ts >= 0 &&
		    p->now_ms - segs[i].largest_ts > p->max_lag_ms)
			r->overdue = true;
		r->dirty_bytes += segs[i].size;
	}
	if (r->end < r->first_dirty)
		r->end = r->first_dirty;
	if (r->clean_bytes + r->dirty_bytes > 0)
		r->ratio = (double)r->dirty_bytes /
		    (double)(r->clean_bytes + r->dirty_bytes);
	return n;
}

bool
cl_range_due(const struct cl_range *r, const struct cl_params *p,
    int64_t horizon_ms)
{
	if (r->dirty_bytes > 0 && (r->ratio >= p->min_dirty_ratio ||
	    r->overdue))
		return true;
	/* tombstones kept until their horizon: a pass removes them */
	return horizon_ms <= p->now_ms && r->end > 0 &&
	    (r->clean_bytes > 0 || r->dirty_bytes > 0);
}
