/* Per network worker sets of changed partition slots (see wakeset.h). */
#include "autoconf.h"

#include "ipc/shm.h"
#include "ipc/wakeset.h"

static uint32_t
bit_words(uint32_t max_partitions)
{
	return (max_partitions + 63) / 64;
}

static uint32_t
summary_words(uint32_t max_partitions)
{
	return (bit_words(max_partitions) + 63) / 64;
}

/* One worker's set: its summary then its bits, 64-byte aligned. */
static size_t
set_stride(uint32_t max_partitions)
{
	size_t b = ((size_t)summary_words(max_partitions) +
	    bit_words(max_partitions)) * sizeof(uint64_t);

	return (b + 63) & ~(size_t)63;
}

size_t
rn_wakeset_shm_size(const struct rn_shm_params *p)
{
	return (size_t)p->n_workers * set_stride(p->max_partitions);
}

void
rn_wakeset_of(const struct rn_shm *shm, unsigned i, struct rn_wakeset *ws)
{
	uint32_t maxp = shm->hdr->max_partitions;
	char *base = (char *)rn_shm_wakesets(shm) + (size_t)i * set_stride(maxp);

	ws->summary = (_Atomic uint64_t *)(void *)base;
	ws->bits = ws->summary + summary_words(maxp);
	ws->n_words = bit_words(maxp);
}

/*
 * Sequentially consistent on purpose: a mark that skips the summary
 * because it reads its bit set must come before the taker's exchange of
 * that summary word, so the taker's exchange of the bits word, later
 * still, sees the slot's bit.
 */
void
rn_wakeset_mark(struct rn_wakeset *ws, uint32_t slot)
{
	uint32_t w = slot / 64;
	uint64_t bit = 1ULL << (slot % 64), sbit = 1ULL << (w % 64);

	if (w >= ws->n_words)
		return;
	/* loads first: a busy partition's bits are usually set already */
	if ((atomic_load(&ws->bits[w]) & bit) == 0)
		atomic_fetch_or(&ws->bits[w], bit);
	if ((atomic_load(&ws->summary[w / 64]) & sbit) == 0)
		atomic_fetch_or(&ws->summary[w / 64], sbit);
}

uint32_t
rn_wakeset_take(struct rn_wakeset *ws, uint64_t *local, uint32_t *words)
{
	uint32_t n_sum = (ws->n_words + 63) / 64, n = 0, i;

	for (i = 0; i < n_sum; i++) {
		uint64_t s;

		if (atomic_load(&ws->summary[i]) == 0)
			continue;
		s = atomic_exchange(&ws->summary[i], 0);
		while (s != 0) {
			uint32_t w = i * 64 + (uint32_t)__builtin_ctzll(s);
			uint64_t b;

			s &= s - 1;
			if (w >= ws->n_words)
				continue;
			b = atomic_exchange(&ws->bits[w], 0);
			if (b == 0)
				continue;
			if (local[w] == 0)
				words[n++] = w;
			local[w] |= b;
		}
	}
	return n;
}
