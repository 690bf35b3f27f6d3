/*
 * The cleaner's key -> last offset map: a fixed table of 128-bit key hashes
 * (like Kafka's, keys themselves are not kept), sized once from
 * log.cleaner.dedupe.buffer.size, filled up to the load factor.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workers/cleaner/cl_int.h"

static uint64_t
mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t
hash64(const uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ULL);
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t k;

		memcpy(&k, p + i, 8);
		h = mix64(h ^ mix64(k + seed));
	}
	if (i < len) {
		uint64_t k = 0;

		memcpy(&k, p + i, len - i);
		h = mix64(h ^ mix64(k + seed + len));
	}
	return mix64(h);
}

int
cl_map_init(struct cl_map *m, size_t bytes)
{
	size_t n = 1024;

	while (n * 2 * sizeof(struct cl_map_slot) <= bytes)
		n *= 2;
	memset(m, 0, sizeof(*m));
	if ((m->slots = malloc(n * sizeof(*m->slots))) == NULL)
		return -ENOMEM;
	m->nslots = n;
	m->max_used = (size_t)((double)n * CL_LOAD_FACTOR);
	cl_map_clear(m);
	return 0;
}

void
cl_map_free(struct cl_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

void
cl_map_clear(struct cl_map *m)
{
	memset(m->slots, 0xff, m->nslots * sizeof(*m->slots));
	m->used = 0;
}

static struct cl_map_slot *
find(const struct cl_map *m, uint64_t h1, uint64_t h2)
{
	size_t mask = m->nslots - 1, i = (size_t)h1 & mask;

	for (;;) {
		struct cl_map_slot *s = &m->slots[i];

		if (s->offset < 0 || (s->h1 == h1 && s->h2 == h2))
			return s;
		i = (i + 1) & mask;
	}
}

int
cl_map_put(struct cl_map *m, const uint8_t *key, size_t len, int64_t offset)
{
	uint64_t h1 = hash64(key, len, 0x243f6a8885a308d3ULL);
	uint64_t h2 = hash64(key, len, 0x13198a2e03707344ULL);
	struct cl_map_slot *s = find(m, h1, h2);

	if (s->offset < 0) {
		if (m->used >= m->max_used)
			return -ENOSPC;
		m->used++;
		s->h1 = h1;
		s->h2 = h2;
	}
	s->offset = offset;
	return 0;
}

int64_t
cl_map_get(const struct cl_map *m, const uint8_t *key, size_t len)
{
	uint64_t h1 = hash64(key, len, 0x243f6a8885a308d3ULL);
	uint64_t h2 = hash64(key, len, 0x13198a2e03707344ULL);

	return find(m, h1, h2)->offset;
}
