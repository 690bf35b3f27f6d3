/*
 * The metrics region: a worker array, then a partition array. Zero bytes
 * are its empty state, so it needs no init and unused partition slots
 * back no memory.
 */
#include "autoconf.h"

#include <string.h>

#include "ipc/metrics.h"
#include "ipc/shm.h"

#define KEY(k) k,
const int16_t rn_met_api_keys[RN_MET_N_API] = { RN_MET_APIS(KEY) };
#undef KEY

/* index + 1 by key, 0 (the default): not timed; RN_MET_APIS' order */
const int8_t rn_met_api_index1[RN_MET_MAX_API] = {
	[0] = 1, [1] = 2, [2] = 3, [3] = 4, [8] = 5, [9] = 6, [10] = 7,
	[11] = 8, [12] = 9, [14] = 10, [18] = 11, [22] = 12,
};

_Static_assert(RN_MET_N_API <= 16, "a compact table of timed APIs");

size_t
rn_metrics_shm_size(const struct rn_shm_params *p)
{
	return (size_t)p->n_workers * sizeof(struct rn_met_worker) +
	    (size_t)p->max_partitions * sizeof(struct rn_met_part);
}

struct rn_met_worker *
rn_metrics_worker(const struct rn_shm *shm, unsigned slot)
{
	return (struct rn_met_worker *)rn_shm_metrics(shm) + slot;
}

struct rn_met_part *
rn_metrics_part(const struct rn_shm *shm, unsigned slot)
{
	struct rn_met_worker *w = rn_shm_metrics(shm);

	return (struct rn_met_part *)(w + shm->hdr->n_workers) + slot;
}

uint64_t
rn_met_tag(const uint8_t topic_id[16], int32_t partition)
{
	uint64_t a, b, t;

	memcpy(&a, topic_id, 8);
	memcpy(&b, topic_id + 8, 8);
	t = a ^ (b * 0x9e3779b97f4a7c15ULL) ^
	    ((uint64_t)(uint32_t)partition * 0xc2b2ae3d27d4eb4fULL);
	return t == 0 || t == RN_MET_TAG_BUSY ? 1 : t;
}

/*
 * The first writer for a new partition takes the slot (tag -> BUSY),
 * zeroes it and publishes the tag; one that finds it BUSY waits a little
 * and else counts nothing (its zeroer may have died mid-way: the next
 * writer finds BUSY too and the slot stays uncounted, never wrong).
 */
struct rn_met_part *
rn_metrics_part_for(const struct rn_shm *shm, unsigned slot, uint64_t tag)
{
	struct rn_met_part *mp = rn_metrics_part(shm, slot);
	uint64_t old;
	int spins;

	for (spins = 0; spins < 1000; spins++) {
		old = atomic_load_explicit(&mp->tag, memory_order_acquire);
		if (old == tag)
			return mp;
		if (old == RN_MET_TAG_BUSY)
			continue;
		if (!atomic_compare_exchange_strong(&mp->tag, &old,
		    RN_MET_TAG_BUSY))
			continue;
		atomic_store_explicit(&mp->msgs_in, 0, memory_order_relaxed);
		atomic_store_explicit(&mp->bytes_in, 0, memory_order_relaxed);
		atomic_store_explicit(&mp->bytes_out, 0, memory_order_relaxed);
		atomic_store_explicit(&mp->tag, tag, memory_order_release);
		return mp;
	}
	return NULL;
}
