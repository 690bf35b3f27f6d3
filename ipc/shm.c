#include "autoconf.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipc/connlimit.h"
#include "ipc/cquota.h"
#include "ipc/mdimage.h"
#include "ipc/metrics.h"
#include "ipc/prodpool.h"
#include "ipc/shm.h"
#include "ipc/wakeset.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))

size_t
rn_shm_header_size(const struct rn_shm_params *p)
{
	(void)p;
	return sizeof(struct rn_shm_hdr);
}

size_t
rn_shm_workers_size(const struct rn_shm_params *p)
{
	return (size_t)p->n_workers * sizeof(struct rn_worker_slot);
}

size_t
rn_shm_partitions_size(const struct rn_shm_params *p)
{
	return (size_t)p->max_partitions * sizeof(struct rn_part_slot);
}

size_t
rn_shm_slotmap_size(const struct rn_shm_params *p)
{
	return ((size_t)p->max_partitions + 63) / 64 * 8;
}

/* Per worker a ring to the controller (2i) and one from it (2i + 1). */
static size_t
ring_stride(uint32_t ring_bytes)
{
	return ALIGN_UP(rn_ring_shm_size(ring_bytes), 64);
}

size_t
rn_shm_rings_size(const struct rn_shm_params *p)
{
	return (size_t)p->n_workers * 2 * ring_stride(p->ring_bytes);
}

int
rn_shm_rings_init(void *base, size_t size, const struct rn_shm_params *p)
{
	size_t stride = ring_stride(p->ring_bytes);
	unsigned i;
	int rc;

	(void)size;
	for (i = 0; i < p->n_workers * 2; i++)
		if ((rc = rn_ring_init((char *)base + stride * i,
		    p->ring_bytes)) != 0)
			return rc;
	return 0;
}

#define RN_SHM_REGION_DEF(id, name, size, init) \
	[RN_REGION_##id] = { name, size, init },
static const struct {
	const char *name;
	size_t (*size)(const struct rn_shm_params *);
	int (*init)(void *, size_t, const struct rn_shm_params *);
} regions[RN_REGION_COUNT] = {
	RN_SHM_REGIONS(RN_SHM_REGION_DEF)
};
#undef RN_SHM_REGION_DEF

/* Each region in table order, page-aligned; the total size. */
static size_t
layout(const struct rn_shm_params *p, struct rn_shm_region *r)
{
	uint64_t off = 0;
	int i;

	for (i = 0; i < RN_REGION_COUNT; i++) {
		r[i].off = off;
		r[i].size = ALIGN_UP((uint64_t)regions[i].size(p), 4096);
		off += r[i].size;
	}
	return off;
}

static void *
region(const struct rn_shm *shm, enum rn_region id)
{
	return (char *)shm->base + shm->hdr->regions[id].off;
}

size_t
rn_shm_size(const struct rn_shm_params *p)
{
	struct rn_shm_region r[RN_REGION_COUNT];

	return layout(p, r);
}

const char *
rn_shm_region_name(enum rn_region id)
{
	return (unsigned)id < RN_REGION_COUNT ? regions[id].name : "unknown";
}

size_t
rn_shm_region_size(const struct rn_shm *shm, enum rn_region id)
{
	return (unsigned)id < RN_REGION_COUNT ?
	    shm->hdr->regions[id].size : 0;
}

/* Map a new zero-filled memfd of total bytes. */
static int
shm_map(struct rn_shm *shm, size_t total)
{
	int fd, rc;

	if ((fd = memfd_create("runnel-shm", MFD_CLOEXEC)) == -1)
		return -errno;
	if (ftruncate(fd, (off_t)total) == -1) {
		rc = -errno;
		close(fd);
		return rc;
	}
	shm->base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	    0);
	if (shm->base == MAP_FAILED) {
		rc = -errno;
		close(fd);
		return rc;
	}
	shm->size = total;
	shm->fd = fd;
	shm->hdr = shm->base;
	return 0;
}

int
rn_shm_create(const struct rn_shm_params *p, struct rn_shm *shm)
{
	struct rn_shm_region r[RN_REGION_COUNT];
	size_t total;
	int i, rc;

	if (p->n_workers == 0 || p->n_workers > RN_SHM_MAX_WORKERS ||
	    p->max_partitions == 0)
		return -EINVAL;
	total = layout(p, r);
	if ((rc = shm_map(shm, total)) != 0)
		return rc;
	memset(shm->hdr, 0, sizeof(*shm->hdr));
	shm->hdr->layout_version = RN_SHM_LAYOUT_VERSION;
	shm->hdr->n_workers = p->n_workers;
	shm->hdr->size = total;
	shm->hdr->creator_pid = getpid();
	shm->hdr->ring_bytes = p->ring_bytes;
	shm->hdr->max_partitions = p->max_partitions;
	shm->hdr->producer_pool = p->producer_pool;
	memcpy(shm->hdr->regions, r, sizeof(r));
	atomic_store(&shm->hdr->generation, 1);
	/*
	 * A fetch of thousands of partitions touches a slot each, 8 KiB
	 * apart: with 4 KiB pages every one is a TLB miss. Where the kernel
	 * gives shared memory huge pages on request (transparent_hugepage/
	 * shmem_enabled "advise"), ask; elsewhere this does nothing. The
	 * workers inherit the advice with the mapping.
	 */
	(void)madvise((char *)shm->base + r[RN_REGION_PARTITIONS].off,
	    r[RN_REGION_PARTITIONS].size, MADV_HUGEPAGE);
	for (i = 0; i < RN_REGION_COUNT; i++)
		if (regions[i].init != NULL && (rc = regions[i].init(
		    region(shm, i), r[i].size, p)) != 0) {
			rn_shm_destroy(shm);
			return rc;
		}
	/* the magic goes last: a half-formatted segment never looks valid */
	atomic_thread_fence(memory_order_release);
	shm->hdr->magic = RN_SHM_MAGIC;
	return 0;
}

int
rn_shm_check(const struct rn_shm *shm)
{
	if (shm->hdr->magic != RN_SHM_MAGIC ||
	    shm->hdr->layout_version != RN_SHM_LAYOUT_VERSION ||
	    shm->hdr->size != shm->size)
		return -EPROTO;
	return 0;
}

void
rn_shm_destroy(struct rn_shm *shm)
{
	if (shm->base != NULL && shm->base != MAP_FAILED)
		munmap(shm->base, shm->size);
	if (shm->fd >= 0)
		close(shm->fd);
	shm->base = NULL;
	shm->hdr = NULL;
	shm->fd = -1;
}

struct rn_worker_slot *
rn_shm_worker(const struct rn_shm *shm, unsigned slot)
{
	return (struct rn_worker_slot *)region(shm, RN_REGION_WORKERS) + slot;
}

struct rn_meta_image *
rn_shm_meta(const struct rn_shm *shm)
{
	return region(shm, RN_REGION_METADATA);
}

void *
rn_shm_metrics(const struct rn_shm *shm)
{
	return region(shm, RN_REGION_METRICS);
}

void *
rn_shm_connlimit(const struct rn_shm *shm)
{
	return region(shm, RN_REGION_CONNLIMIT);
}

void *
rn_shm_cquota(const struct rn_shm *shm)
{
	return region(shm, RN_REGION_CQUOTA);
}

void *
rn_shm_wakesets(const struct rn_shm *shm)
{
	return region(shm, RN_REGION_WAKESETS);
}

struct rn_prodpool *
rn_shm_prodpool(const struct rn_shm *shm)
{
	return region(shm, RN_REGION_PRODPOOL);
}

struct rn_part_slot *
rn_shm_partition(const struct rn_shm *shm, unsigned i)
{
	return (struct rn_part_slot *)region(shm, RN_REGION_PARTITIONS) + i;
}

void
rn_shm_slot_mark(const struct rn_shm *shm, unsigned i)
{
	_Atomic uint64_t *w = (_Atomic uint64_t *)region(shm,
	    RN_REGION_SLOTMAP) + i / 64;

	if (i < shm->hdr->max_partitions &&
	    !(atomic_load_explicit(w, memory_order_relaxed) &
	    (1ULL << (i % 64))))
		atomic_fetch_or(w, 1ULL << (i % 64));
}

bool
rn_shm_slot_used(const struct rn_shm *shm, unsigned i)
{
	_Atomic uint64_t *w = (_Atomic uint64_t *)region(shm,
	    RN_REGION_SLOTMAP) + i / 64;

	return i < shm->hdr->max_partitions &&
	    (atomic_load(w) & (1ULL << (i % 64))) != 0;
}

unsigned
rn_shm_slot_next_used(const struct rn_shm *shm, unsigned from)
{
	const _Atomic uint64_t *map = (const _Atomic uint64_t *)region(shm,
	    RN_REGION_SLOTMAP);
	unsigned max = shm->hdr->max_partitions, i;
	uint64_t w;

	/* a word at a time: a scan of a million slots reads 16,384 words */
	for (i = from; i < max; i = (i / 64 + 1) * 64) {
		w = atomic_load_explicit(&map[i / 64], memory_order_relaxed) >>
		    (i % 64);
		if (w != 0) {
			i += (unsigned)__builtin_ctzll(w);
			return i < max ? i : max;
		}
	}
	return max;
}

static struct rn_ring *
ring_at(const struct rn_shm *shm, unsigned idx)
{
	size_t stride = ring_stride(shm->hdr->ring_bytes);

	return (struct rn_ring *)((char *)region(shm, RN_REGION_RINGS) +
	    stride * idx);
}

struct rn_ring *
rn_shm_ring_to_ctl(const struct rn_shm *shm, unsigned slot)
{
	return ring_at(shm, slot * 2);
}

struct rn_ring *
rn_shm_ring_from_ctl(const struct rn_shm *shm, unsigned slot)
{
	return ring_at(shm, slot * 2 + 1);
}

/* Group coordinator rings: the same layout in their own region. */
static struct rn_ring *
coord_ring_at(const struct rn_shm *shm, unsigned idx)
{
	size_t stride = ring_stride(shm->hdr->ring_bytes);

	return (struct rn_ring *)((char *)region(shm, RN_REGION_COORD_RINGS) +
	    stride * idx);
}

struct rn_ring *
rn_shm_ring_to_coord(const struct rn_shm *shm, unsigned slot)
{
	return coord_ring_at(shm, slot * 2);
}

struct rn_ring *
rn_shm_ring_from_coord(const struct rn_shm *shm, unsigned slot)
{
	return coord_ring_at(shm, slot * 2 + 1);
}

void
rn_shm_meta_rebuild(struct rn_shm *shm)
{
	struct rn_meta_image *mi = rn_shm_meta(shm);
	uint64_t body = mi->body_size, ring = mi->delta_size;

	memset((char *)mi + sizeof(mi->lock), 0, sizeof(*mi) - sizeof(mi->lock));
	mi->body_size = body;
	mi->delta_size = ring;
	rn_seq_reset(&mi->lock);
	atomic_fetch_add(&shm->hdr->generation, 1);
}

const char *
rn_worker_role_name(enum rn_worker_role role)
{
	switch (role) {
	case RN_ROLE_W_CONTROLLER: return "controller";
	case RN_ROLE_W_NETWORK: return "network";
	case RN_ROLE_W_FETCHER: return "replica-fetcher";
	case RN_ROLE_W_CLEANER: return "log-cleaner";
	case RN_ROLE_W_COORDINATOR: return "group-coordinator";
	}
	return "unknown";
}

const char *
rn_worker_state_name(enum rn_worker_state state)
{
	static const char *const names[] = { "empty", "starting", "running",
	    "backoff", "failed", "stopping", "stopped" };

	return (unsigned)state < sizeof(names) / sizeof(names[0]) ? names[state] : "unknown";
}
