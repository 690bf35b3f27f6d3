/*
 * The node-wide pool of idempotent-producer entries: a partition slot
 * keeps its first few producers inline (workers/partition/idempotence.h)
 * and chains the rest here, so a partition with a thousand producers does
 * not evict the older ones. Entries are fixed 128-byte boxes named by
 * reference (index + 1, 0: none), never by pointer: every process maps
 * the segment at its own address. The partition folder shapes a box's
 * body and reads and writes it under the owning partition's lock; only
 * taking and returning a box is node-wide, lock-free: a Treiber stack of
 * returned boxes whose head carries a tag against ABA, then a bump
 * counter over boxes never used, so only touched pages are backed.
 */
#ifndef RN_IPC_PRODPOOL_H
#define RN_IPC_PRODPOOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct rn_shm_params;

#define RN_PRODPOOL_BOX 128
#define RN_PRODPOOL_BODY 120

struct rn_prodpool_box {
	unsigned char body[RN_PRODPOOL_BODY];
	_Atomic uint32_t free_next;	/* on the free stack: the next ref */
	uint32_t pad;
};
_Static_assert(sizeof(struct rn_prodpool_box) == RN_PRODPOOL_BOX,
    "producer pool box");

struct rn_prodpool {
	/* free stack: tag (bumped by every push and pop) << 32 | ref */
	_Atomic uint64_t free_head;
	_Atomic uint32_t bumped;	/* boxes ever taken from the fresh end */
	uint32_t capacity;
	_Atomic int64_t in_use;		/* taken and not returned (metrics) */
	_Atomic uint64_t exhausted;	/* takes that found none */
	uint64_t pad[4];
	/* then capacity boxes (rn_prodpool_box) */
};

static inline struct rn_prodpool_box *
rn_prodpool_box(struct rn_prodpool *pool, uint32_t ref)
{
	/* by address: the compiler cannot know the region's length */
	return (struct rn_prodpool_box *)((uintptr_t)pool + sizeof(*pool) +
	    (uintptr_t)(ref - 1) * sizeof(struct rn_prodpool_box));
}

size_t rn_prodpool_shm_size(const struct rn_shm_params *p);
int rn_prodpool_shm_init(void *base, size_t size,
    const struct rn_shm_params *p);
/* Format a pool of capacity boxes in mem (unit tests; size from
 * rn_prodpool_bytes). */
size_t rn_prodpool_bytes(uint32_t capacity);
void rn_prodpool_format(struct rn_prodpool *pool, uint32_t capacity);

/* A box's reference taken (its body is the caller's to format), or 0:
 * the pool is exhausted. */
uint32_t rn_prodpool_take(struct rn_prodpool *pool);
/* Give a box back: ref must be one this pool handed out and no chain may
 * still name it. */
void rn_prodpool_give(struct rn_prodpool *pool, uint32_t ref);

/* The body of box ref, or NULL when ref names none (0, out of range). */
static inline void *
rn_prodpool_body(struct rn_prodpool *pool, uint32_t ref)
{
	if (pool == NULL || ref == 0 || ref > pool->capacity)
		return NULL;
	return rn_prodpool_box(pool, ref)->body;
}

#endif /* RN_IPC_PRODPOOL_H */
