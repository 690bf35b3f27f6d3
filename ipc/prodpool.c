/* The node-wide producer-entry pool (see prodpool.h). */
#include "autoconf.h"

#include <string.h>

#include "ipc/prodpool.h"
#include "ipc/shm.h"

size_t
rn_prodpool_bytes(uint32_t capacity)
{
	return sizeof(struct rn_prodpool) +
	    (size_t)capacity * sizeof(struct rn_prodpool_box);
}

size_t
rn_prodpool_shm_size(const struct rn_shm_params *p)
{
	return rn_prodpool_bytes(p->producer_pool);
}

void
rn_prodpool_format(struct rn_prodpool *pool, uint32_t capacity)
{
	/* the boxes stay untouched (unbacked) until bumped into use */
	memset(pool, 0, sizeof(*pool));
	pool->capacity = capacity;
}

int
rn_prodpool_shm_init(void *base, size_t size, const struct rn_shm_params *p)
{
	(void)size;
	rn_prodpool_format(base, p->producer_pool);
	return 0;
}

uint32_t
rn_prodpool_take(struct rn_prodpool *pool)
{
	uint64_t head = atomic_load(&pool->free_head), next;
	uint32_t ref, n;

	while ((ref = (uint32_t)head) != 0) {
		/*
		 * The box may be popped and reused by another process
		 * between these loads: then its free_next is stale, but the
		 * head's tag moved too and the exchange below fails.
		 */
		n = atomic_load(&rn_prodpool_box(pool, ref)->free_next);
		next = ((head >> 32) + 1) << 32 | n;
		if (atomic_compare_exchange_weak(&pool->free_head, &head,
		    next)) {
			atomic_fetch_add_explicit(&pool->in_use, 1,
			    memory_order_relaxed);
			return ref;
		}
	}
	n = atomic_load(&pool->bumped);
	while (n < pool->capacity)
		if (atomic_compare_exchange_weak(&pool->bumped, &n, n + 1)) {
			atomic_fetch_add_explicit(&pool->in_use, 1,
			    memory_order_relaxed);
			return n + 1;
		}
	atomic_fetch_add_explicit(&pool->exhausted, 1, memory_order_relaxed);
	return 0;
}

void
rn_prodpool_give(struct rn_prodpool *pool, uint32_t ref)
{
	uint64_t head = atomic_load(&pool->free_head), next;

	if (ref == 0 || ref > pool->capacity)
		return;
	do {
		atomic_store(&rn_prodpool_box(pool, ref)->free_next, (uint32_t)head);
		next = ((head >> 32) + 1) << 32 | ref;
	} while (!atomic_compare_exchange_weak(&pool->free_head, &head, next));
	atomic_fetch_sub_explicit(&pool->in_use, 1, memory_order_relaxed);
}
