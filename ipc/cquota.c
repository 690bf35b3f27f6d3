#include "autoconf.h"

#include "ipc/cquota.h"
#include "ipc/shm.h"

_Static_assert(sizeof(struct rn_cq_entity) % 64 == 0,
    "a quota entity is whole cache lines");

#define SEC_BITS 24
#define BYTES_MASK ((UINT64_C(1) << 40) - 1)
#define SEC_MASK ((UINT64_C(1) << SEC_BITS) - 1)
#define IDLE_S 60

size_t
rn_cquota_shm_size(const struct rn_shm_params *p)
{
	(void)p;
	return sizeof(struct rn_cq_entity) * RN_CQ_ENTITIES;
}

struct rn_cq_entity *
rn_cq_entity_get(const struct rn_shm *shm, uint64_t key, int64_t now_ms)
{
	struct rn_cq_entity *t = rn_shm_cquota(shm);
	int64_t now_s = now_ms / RN_CQ_WINDOW_MS;
	unsigned h = (unsigned)(key % RN_CQ_ENTITIES), i;

	for (i = 0; i < RN_CQ_ENTITIES; i++) {
		struct rn_cq_entity *e = &t[(h + i) % RN_CQ_ENTITIES];
		uint64_t k = atomic_load(&e->key);
		int64_t used;

		if (k == key)
			return e;
		used = atomic_load(&e->used_s);
		if (k == 0 || used < now_s - IDLE_S) {
			/* its samples are all older than the window */
			if (atomic_compare_exchange_strong(&e->key, &k, key)) {
				atomic_store(&e->used_s, now_s);
				return e;
			}
			if (k == key)
				return e;
		}
	}
	return NULL;
}

int64_t
rn_cq_record(struct rn_cq_entity *e, int64_t bytes, double quota,
    int64_t now_ms)
{
	int64_t now_s = now_ms / RN_CQ_WINDOW_MS, oldest = now_s, elapsed;
	_Atomic uint64_t *s = &e->sample[now_s % RN_CQ_SAMPLES];
	uint64_t v = atomic_load(s), nv, tag = (uint64_t)now_s & SEC_MASK;
	double sum = 0, rate, thr;
	int i;

	do {
		if (v >> 40 == tag)
			nv = v + ((uint64_t)bytes & BYTES_MASK);
		else
			nv = tag << 40 | ((uint64_t)bytes & BYTES_MASK);
	} while (!atomic_compare_exchange_weak(s, &v, nv));
	atomic_store_explicit(&e->used_s, now_s, memory_order_relaxed);
	for (i = 0; i < RN_CQ_SAMPLES; i++) {
		int64_t sec = now_s - i;

		v = atomic_load_explicit(&e->sample[sec % RN_CQ_SAMPLES],
		    memory_order_relaxed);
		if (v >> 40 != ((uint64_t)sec & SEC_MASK))
			continue;
		sum += (double)(v & BYTES_MASK);
		oldest = sec;
	}
	/* Kafka's Rate: from the oldest sample's start, and never less
	 * than samples - 1 whole windows */
	elapsed = now_ms - oldest * RN_CQ_WINDOW_MS;
	if (elapsed / RN_CQ_WINDOW_MS < RN_CQ_SAMPLES - 1)
		elapsed += (RN_CQ_SAMPLES - 1 - elapsed / RN_CQ_WINDOW_MS) *
		    RN_CQ_WINDOW_MS;
	rate = sum * 1000.0 / (double)elapsed;
	if (rate <= quota)
		return 0;
	thr = (rate - quota) / quota * (double)elapsed;
	if (thr > RN_CQ_SAMPLES * RN_CQ_WINDOW_MS)
		thr = RN_CQ_SAMPLES * RN_CQ_WINDOW_MS;
	return (int64_t)(thr + 0.5);
}
