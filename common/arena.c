/*
 * The capped bump allocator: see arena.h.
 */
#include "common/arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct rn_arena_block {
	struct rn_arena_block *next;
	size_t size;
	size_t used;
	alignas(max_align_t) unsigned char data[];
};

#define RN_ARENA_MIN_BLOCK 4096
#define RN_ARENA_ALIGN     (alignof(max_align_t))

void
rn_arena_init(struct rn_arena *a, size_t limit)
{
	a->head = NULL;
	a->used_total = 0;
	a->limit = limit;
}

void
rn_arena_set_limit(struct rn_arena *a, size_t limit)
{
	a->limit = limit;
}

void *
rn_arena_alloc(struct rn_arena *a, size_t n)
{
	struct rn_arena_block *b = a->head;
	size_t sz;
	void *p;

	n = (n + RN_ARENA_ALIGN - 1) & ~(RN_ARENA_ALIGN - 1);
	/* The cap counts requested bytes, not block slack, so the bound a
	 * caller sets is the bound on what a frame can make us hold. */
	if (n > a->limit || a->used_total > a->limit - n)
		return NULL;
	if (b == NULL || b->size - b->used < n) {
		sz = RN_ARENA_MIN_BLOCK;
		if (b != NULL && b->size * 2 > sz)
			sz = b->size * 2;
		while (sz < n)
			sz *= 2;
		b = malloc(sizeof(*b) + sz);
		if (b == NULL)
			return NULL;
		b->size = sz;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	p = b->data + b->used;
	b->used += n;
	a->used_total += n;
	return p;
}

void
rn_arena_reset(struct rn_arena *a)
{
	struct rn_arena_block *b = a->head, *next;

	/* Keep the newest (largest) block for the next request. */
	if (b != NULL) {
		for (next = b->next; next != NULL; ) {
			struct rn_arena_block *n2 = next->next;
			free(next);
			next = n2;
		}
		b->next = NULL;
		b->used = 0;
	}
	a->used_total = 0;
}

void
rn_arena_mark(const struct rn_arena *a, struct rn_arena_mark *m)
{
	m->block = a->head;
	m->used = a->head != NULL ? a->head->used : 0;
	m->used_total = a->used_total;
}

void
rn_arena_rewind(struct rn_arena *a, const struct rn_arena_mark *m)
{
	struct rn_arena_block *b = a->head, *next;

	/* blocks are pushed on the head: those above the mark's are newer */
	while (b != NULL && b != m->block) {
		next = b->next;
		free(b);
		b = next;
	}
	a->head = b;
	if (b != NULL)
		b->used = m->used;
	a->used_total = m->used_total;
}

size_t
rn_arena_used(const struct rn_arena *a)
{
	return a->used_total;
}

void
rn_arena_free(struct rn_arena *a)
{
	struct rn_arena_block *b = a->head, *next;

	for (; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
	a->used_total = 0;
}

char *
rn_arena_strndup(struct rn_arena *a, const char *s, size_t n)
{
	char *d;

	if (n == SIZE_MAX || (d = rn_arena_alloc(a, n + 1)) == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}
