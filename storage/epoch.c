/* Leader epoch cache in shared memory, seqlock-protected for readers. */
#include "storage/epoch.h"

#include <sched.h>

static void
write_begin(struct rn_epoch_cache *c)
{
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

static void
write_end(struct rn_epoch_cache *c)
{
	atomic_fetch_add_explicit(&c->seq, 1, memory_order_release);
}

/* Field stores visible to seqlock readers without tearing. */
static void
set_entry(struct rn_epoch_cache *c, uint32_t i, int32_t epoch, int64_t off)
{
	__atomic_store_n(&c->e[i].epoch, epoch, __ATOMIC_RELAXED);
	__atomic_store_n(&c->e[i].start_offset, off, __ATOMIC_RELAXED);
}

static void
set_count(struct rn_epoch_cache *c, uint32_t n)
{
	__atomic_store_n(&c->count, n, __ATOMIC_RELAXED);
}

static void
remove_range(struct rn_epoch_cache *c, uint32_t from, uint32_t n)
{
	for (uint32_t i = from; i + n < c->count; i++)
		set_entry(c, i, c->e[i + n].epoch, c->e[i + n].start_offset);
	set_count(c, c->count - n);
}

int
rn_epoch_assign(struct rn_epoch_cache *c, int32_t epoch, int64_t start_offset)
{
	uint32_t keep;

	if (epoch < 0 || start_offset < 0)
		return 0;
	if (c->count > 0) {
		const struct rn_epoch_entry *last = &c->e[c->count - 1];

		/* Same epoch again, not moving its start earlier: nothing new. */
		if (last->epoch == epoch && last->start_offset <= start_offset)
			return 0;
	}
	write_begin(c);
	/* Keep the prefix that stays monotonic in both epoch and offset. */
	keep = c->count;
	while (keep > 0 && (c->e[keep - 1].epoch >= epoch ||
	    c->e[keep - 1].start_offset >= start_offset))
		keep--;
	set_count(c, keep);
	if (c->count == RN_EPOCH_CACHE_SLOTS)
		remove_range(c, 0, 1);
	set_entry(c, c->count, epoch, start_offset);
	set_count(c, c->count + 1);
	write_end(c);
	return 1;
}

int
rn_epoch_truncate_from_end(struct rn_epoch_cache *c, int64_t end_offset)
{
	uint32_t keep = c->count;

	while (keep > 0 && c->e[keep - 1].start_offset >= end_offset)
		keep--;
	if (keep == c->count)
		return 0;
	write_begin(c);
	set_count(c, keep);
	write_end(c);
	return 1;
}

int
rn_epoch_truncate_from_start(struct rn_epoch_cache *c, int64_t start_offset)
{
	uint32_t n = 0;

	/* Entries starting at or before the new start: keep only the last. */
	while (n < c->count && c->e[n].start_offset <= start_offset)
		n++;
	if (n == 0 || (n == 1 && c->e[0].start_offset == start_offset))
		return 0;
	write_begin(c);
	remove_range(c, 0, n - 1);
	set_entry(c, 0, c->e[0].epoch, start_offset);
	write_end(c);
	return 1;
}

int
rn_epoch_clear(struct rn_epoch_cache *c)
{
	if (c->count == 0)
		return 0;
	write_begin(c);
	set_count(c, 0);
	write_end(c);
	return 1;
}

void
rn_epoch_load(struct rn_epoch_cache *c, const struct rn_epoch_entry *e, uint32_t n)
{
	uint32_t skip = n > RN_EPOCH_CACHE_SLOTS ? n - RN_EPOCH_CACHE_SLOTS : 0;

	/* A checkpoint longer than the cache keeps its newest entries. */
	write_begin(c);
	set_count(c, 0);
	for (uint32_t i = skip; i < n; i++)
		set_entry(c, i - skip, e[i].epoch, e[i].start_offset);
	set_count(c, n - skip);
	write_end(c);
}

void
rn_epoch_repair(struct rn_epoch_cache *c)
{
	/* A writer died mid-update: make the counter even again. */
	if (atomic_load_explicit(&c->seq, memory_order_relaxed) & 1)
		atomic_fetch_add_explicit(&c->seq, 1, memory_order_release);
	if (c->count > RN_EPOCH_CACHE_SLOTS)
		set_count(c, RN_EPOCH_CACHE_SLOTS);
}

uint32_t
rn_epoch_snapshot(const struct rn_epoch_cache *c, struct rn_epoch_entry *out,
    uint32_t cap)
{
	for (;;) {
		uint32_t s1 = atomic_load_explicit(&c->seq, memory_order_acquire);
		uint32_t n;

		if (s1 & 1) {
			sched_yield();
			continue;
		}
		n = __atomic_load_n(&c->count, __ATOMIC_RELAXED);
		if (n > RN_EPOCH_CACHE_SLOTS)
			n = RN_EPOCH_CACHE_SLOTS;
		if (n > cap)
			n = cap;
		for (uint32_t i = 0; i < n; i++) {
			out[i].epoch = __atomic_load_n(&c->e[i].epoch, __ATOMIC_RELAXED);
			out[i].reserved = 0;
			out[i].start_offset = __atomic_load_n(&c->e[i].start_offset,
			    __ATOMIC_RELAXED);
		}
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&c->seq, memory_order_relaxed) == s1)
			return n;
	}
}

int32_t
rn_epoch_latest(const struct rn_epoch_cache *c)
{
	struct rn_epoch_entry e[RN_EPOCH_CACHE_SLOTS];
	uint32_t n = rn_epoch_snapshot(c, e, RN_EPOCH_CACHE_SLOTS);

	return n ? e[n - 1].epoch : RN_UNDEFINED_EPOCH;
}

void
rn_epoch_end_offset_for(const struct rn_epoch_cache *c, int32_t epoch,
    int64_t log_end_offset, int32_t *out_epoch, int64_t *out_offset)
{
	struct rn_epoch_entry e[RN_EPOCH_CACHE_SLOTS];
	uint32_t n = rn_epoch_snapshot(c, e, RN_EPOCH_CACHE_SLOTS);
	int64_t floor = -1, higher = -1;

	*out_epoch = RN_UNDEFINED_EPOCH;
	*out_offset = RN_UNDEFINED_EPOCH_OFFSET;
	if (epoch == RN_UNDEFINED_EPOCH || n == 0)
		return;
	if (e[n - 1].epoch == epoch) {
		*out_epoch = epoch;
		*out_offset = log_end_offset;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (e[i].epoch <= epoch)
			floor = i;
		else if (higher < 0)
			higher = i;
	}
	if (higher < 0)
		return;
	*out_epoch = floor < 0 ? epoch : e[floor].epoch;
	*out_offset = e[higher].start_offset;
}
