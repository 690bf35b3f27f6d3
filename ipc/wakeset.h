/*
 * Wake sets: which partition slots changed since a network worker last
 * looked, one set per network worker in the segment. Whoever appends to a
 * partition or moves its high watermark marks the slot in the set of each
 * worker parked on it, then writes that worker's eventfd; the worker takes
 * the set and re-checks only the parked requests that watch a marked
 * slot. Without it, every append anywhere on the node made each parked
 * follower fetch re-read every partition it names: with 10,000 partitions
 * a fetch, that was most of a leader's CPU.
 *
 * A set is two levels of bits: bits[] one per slot, and summary[] one per
 * word of bits[], so taking a set reads a few summary words, not the whole
 * bitmap. Marking sets the slot's bit, then its summary bit; taking clears
 * a summary word, then each word it names: a mark racing with a take is
 * seen by this take or by the next, which its eventfd write brings.
 */
#ifndef RN_IPC_WAKESET_H
#define RN_IPC_WAKESET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct rn_shm;
struct rn_shm_params;

struct rn_wakeset {
	_Atomic uint64_t *summary;
	_Atomic uint64_t *bits;
	uint32_t n_words;		/* words of bits[] */
};

/* The region: a set per worker slot (only network workers use theirs). */
size_t rn_wakeset_shm_size(const struct rn_shm_params *p);

/* The set of network worker index i (0 <= i < the segment's workers). */
void rn_wakeset_of(const struct rn_shm *shm, unsigned i, struct rn_wakeset *ws);

/* Mark slot (any process). */
void rn_wakeset_mark(struct rn_wakeset *ws, uint32_t slot);

/*
 * Take every marked slot, clearing them: OR their bits into local (a
 * private bitmap of n_words words) and append the index of each word of
 * local that went from zero to nonzero to words[] (room for n_words).
 * Returns how many were appended.
 */
uint32_t rn_wakeset_take(struct rn_wakeset *ws, uint64_t *local,
    uint32_t *words);

static inline int
rn_wakeset_test(const uint64_t *local, uint32_t slot)
{
	return (int)((local[slot / 64] >> (slot % 64)) & 1);
}

#endif
