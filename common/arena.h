/*
 * A bump allocator with a cap: what a decoded Kafka frame and a parsed
 * metadata image are allocated from, freed all at once.
 */
#ifndef RN_ARENA_H
#define RN_ARENA_H

#include <stddef.h>

struct rn_arena_block;

/*
 * 'limit' caps the total bytes handed out since the last reset, so a
 * hostile frame claiming millions of elements fails instead of
 * allocating (SIZE_MAX: no cap). Reset keeps one block so steady-state
 * decoding does not call malloc.
 */
struct rn_arena {
	struct rn_arena_block *head;
	size_t used_total;
	size_t limit;
};

void rn_arena_init(struct rn_arena *a, size_t limit);
void rn_arena_set_limit(struct rn_arena *a, size_t limit);
/* NULL when the cap is reached or malloc fails. */
void *rn_arena_alloc(struct rn_arena *a, size_t n);
/* A NUL-terminated copy of n bytes. */
char *rn_arena_strndup(struct rn_arena *a, const char *s, size_t n);
void rn_arena_reset(struct rn_arena *a);
/*
 * A point to come back to: rewinding frees what was allocated after the
 * mark and keeps what came before, so work that is redone (a parked fetch
 * woken again) reuses its memory instead of piling it up.
 */
struct rn_arena_mark {
	struct rn_arena_block *block;
	size_t used;
	size_t used_total;
};
void rn_arena_mark(const struct rn_arena *a, struct rn_arena_mark *m);
void rn_arena_rewind(struct rn_arena *a, const struct rn_arena_mark *m);
/* Bytes handed out since the last reset. */
size_t rn_arena_used(const struct rn_arena *a);
void rn_arena_free(struct rn_arena *a);

#endif /* RN_ARENA_H */
