#include "autoconf.h"

#include <string.h>

#include "common/util.h"
#include "ipc/connlimit.h"
#include "ipc/shm.h"

_Static_assert(sizeof(struct rn_connlim_ip) == 24, "connlimit ip entry");
_Static_assert(sizeof(struct rn_connlim_rates) % 64 == 0,
    "connlimit rates are whole cache lines");
_Static_assert(offsetof(struct rn_connlim_slice, ip) % 64 == 0,
    "connlimit slice head is whole cache lines");

static size_t
slice_stride(void)
{
	return (sizeof(struct rn_connlim_slice) + 63) / 64 * 64;
}

size_t
rn_connlim_shm_size(const struct rn_shm_params *p)
{
	return sizeof(struct rn_connlim_rates) +
	    (size_t)p->n_workers * slice_stride();
}

struct rn_connlim_rates *
rn_connlim_rates(const struct rn_shm *shm)
{
	return rn_shm_connlimit(shm);
}

struct rn_connlim_slice *
rn_connlim_slice(const struct rn_shm *shm, unsigned slot)
{
	return (struct rn_connlim_slice *)((char *)rn_shm_connlimit(shm) +
	    sizeof(struct rn_connlim_rates) + (size_t)slot * slice_stride());
}

void
rn_connlim_slice_reset(const struct rn_shm *shm, unsigned slot)
{
	struct rn_connlim_slice *s;
	unsigned i;

	if (slot >= shm->hdr->n_workers)
		return;
	s = rn_connlim_slice(shm, slot);
	/* untouched slices stay unbacked: write only what is not zero */
	if (atomic_load(&s->total) != 0)
		atomic_store(&s->total, 0);
	for (i = 0; i < RN_CONNLIM_LISTENERS; i++)
		if (atomic_load(&s->listener[i]) != 0)
			atomic_store(&s->listener[i], 0);
	for (i = 0; i < RN_CONNLIM_IPS; i++)
		if (atomic_load_explicit(&s->ip[i].count,
		    memory_order_relaxed) != 0)
			atomic_store(&s->ip[i].count, 0);
}

static unsigned
ip_hash(const uint8_t addr[16])
{
	return rn_hash32(addr, 16) % RN_CONNLIM_IPS;
}

int
rn_connlim_ip_add(struct rn_connlim_slice *s, const uint8_t addr[16],
    int delta)
{
	struct rn_connlim_ip *e, *free_e = NULL;
	unsigned h = ip_hash(addr), i;
	uint32_t n;

	for (i = 0; i < RN_CONNLIM_PROBES; i++) {
		e = &s->ip[(h + i) % RN_CONNLIM_IPS];
		if (!atomic_load_explicit(&e->used, memory_order_relaxed)) {
			if (free_e == NULL)
				free_e = e;
			break;
		}
		if (memcmp(e->addr, addr, 16) == 0) {
			n = atomic_load_explicit(&e->count,
			    memory_order_relaxed);
			if (delta < 0 && n == 0)
				return 0;
			n = delta < 0 ? n - 1 : n + 1;
			atomic_store_explicit(&e->count, n,
			    memory_order_release);
			return (int)n;
		}
		if (free_e == NULL && atomic_load_explicit(&e->count,
		    memory_order_relaxed) == 0)
			free_e = e;
	}
	if (delta < 0)
		return 0;
	if (free_e == NULL)
		return -1;
	/* its count is 0 until the address is in: a reader never counts
	 * a torn key */
	memcpy(free_e->addr, addr, 16);
	atomic_store_explicit(&free_e->used, 1, memory_order_release);
	atomic_store_explicit(&free_e->count, 1, memory_order_release);
	return 1;
}

uint32_t
rn_connlim_ip_get(const struct rn_connlim_slice *s, const uint8_t addr[16])
{
	const struct rn_connlim_ip *e;
	unsigned h = ip_hash(addr), i;
	uint32_t n;

	for (i = 0; i < RN_CONNLIM_PROBES; i++) {
		e = &s->ip[(h + i) % RN_CONNLIM_IPS];
		if (!atomic_load_explicit(&e->used, memory_order_acquire))
			return 0;
		n = atomic_load_explicit(&e->count, memory_order_acquire);
		if (n != 0 && memcmp(e->addr, addr, 16) == 0)
			return n;
	}
	return 0;
}

int64_t
rn_connlim_rate_wait(_Atomic int64_t *tat, int64_t now_us, int64_t burst_us)
{
	int64_t t = atomic_load_explicit(tat, memory_order_relaxed);

	return t - burst_us > now_us ? t - burst_us - now_us : 0;
}

void
rn_connlim_rate_take(_Atomic int64_t *tat, int64_t now_us,
    int64_t interval_us)
{
	int64_t t = atomic_load_explicit(tat, memory_order_relaxed), nt;

	do
		nt = (t > now_us ? t : now_us) + interval_us;
	while (!atomic_compare_exchange_weak_explicit(tat, &t, nt,
	    memory_order_relaxed, memory_order_relaxed));
}
