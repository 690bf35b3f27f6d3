#include "autoconf.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipc/shm.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))

static size_t
meta_body_size(const struct rn_shm_params *p)
{
	/*
	 * The image describes the whole cluster (~100 bytes a partition with
	 * its name share and replica lists), and a cluster holds several
	 * times the partitions of one node: 1 KiB per local slot. Only the
	 * pages the image uses are ever backed.
	 */
	return 64 * 1024 + (size_t)p->max_partitions * 1024;
}

static void
layout(const struct rn_shm_params *p, struct rn_shm_region *r, size_t *total)
{
	uint64_t off = ALIGN_UP(sizeof(struct rn_shm_hdr), 4096);
	size_t ring = rn_ring_shm_size(p->ring_bytes);

	r[RN_REGION_WORKERS].off = off;
	r[RN_REGION_WORKERS].size = ALIGN_UP(
	    (uint64_t)p->n_workers * sizeof(struct rn_worker_slot), 4096);
	off += r[RN_REGION_WORKERS].size;

	r[RN_REGION_METADATA].off = off;
	r[RN_REGION_METADATA].size = ALIGN_UP(
	    sizeof(struct rn_meta_image) + meta_body_size(p), 4096);
	off += r[RN_REGION_METADATA].size;

	r[RN_REGION_PARTITIONS].off = off;
	r[RN_REGION_PARTITIONS].size = ALIGN_UP(
	    (uint64_t)p->max_partitions * sizeof(struct rn_part_slot), 4096);
	off += r[RN_REGION_PARTITIONS].size;

	r[RN_REGION_RINGS].off = off;
	r[RN_REGION_RINGS].size = ALIGN_UP((uint64_t)p->n_workers * 2 *
	    ALIGN_UP(ring, 64), 4096);
	off += r[RN_REGION_RINGS].size;

	r[RN_REGION_SLOTMAP].off = off;
	r[RN_REGION_SLOTMAP].size = ALIGN_UP(((uint64_t)p->max_partitions +
	    63) / 64 * 8, 4096);
	off += r[RN_REGION_SLOTMAP].size;

	r[RN_REGION_COORD_RINGS].off = off;
	r[RN_REGION_COORD_RINGS].size = r[RN_REGION_RINGS].size;
	off += r[RN_REGION_COORD_RINGS].size;
	*total = off;
}

size_t
rn_shm_size(const struct rn_shm_params *p)
{
	struct rn_shm_region r[RN_REGION_COUNT];
	size_t total;

	layout(p, r, &total);
	return total;
}

static void *
region(const struct rn_shm *shm, enum rn_region id)
{
	return (char *)shm->base + shm->hdr->regions[id].off;
}

int
rn_shm_create(const struct rn_shm_params *p, struct rn_shm *shm)
{
	struct rn_shm_region r[RN_REGION_COUNT];
	struct rn_meta_image *mi;
	size_t total, ring;
	unsigned i;
	int fd, rc;

	if (p->n_workers == 0 || p->n_workers > RN_SHM_MAX_WORKERS ||
	    p->max_partitions == 0)
		return -EINVAL;
	layout(p, r, &total);
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
	memset(shm->hdr, 0, sizeof(*shm->hdr));
	shm->hdr->layout_version = RN_SHM_LAYOUT_VERSION;
	shm->hdr->n_workers = p->n_workers;
	shm->hdr->size = total;
	shm->hdr->creator_pid = getpid();
	shm->hdr->ring_bytes = p->ring_bytes;
	shm->hdr->max_partitions = p->max_partitions;
	memcpy(shm->hdr->regions, r, sizeof(r));
	atomic_store(&shm->hdr->generation, 1);

	mi = rn_shm_meta(shm);
	mi->body_size = r[RN_REGION_METADATA].size - sizeof(*mi);
	mi->writer_pid = 0;

	/*
	 * The partition locks are formatted on first use (a zero-filled
	 * lock means "not yet"): the region stays unbacked until used.
	 */
	ring = rn_ring_shm_size(p->ring_bytes);
	for (i = 0; i < p->n_workers; i++) {
		if ((rc = rn_ring_init(rn_shm_ring_to_ctl(shm, i),
		    p->ring_bytes)) != 0 ||
		    (rc = rn_ring_init(rn_shm_ring_from_ctl(shm, i),
		    p->ring_bytes)) != 0 ||
		    (rc = rn_ring_init(rn_shm_ring_to_coord(shm, i),
		    p->ring_bytes)) != 0 ||
		    (rc = rn_ring_init(rn_shm_ring_from_coord(shm, i),
		    p->ring_bytes)) != 0)
			goto err;
	}
	(void)ring;
	/* the magic goes last: a half-formatted segment never looks valid */
	atomic_thread_fence(memory_order_release);
	shm->hdr->magic = RN_SHM_MAGIC;
	return 0;
err:
	rn_shm_destroy(shm);
	return rc;
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

static struct rn_ring *
ring_at(const struct rn_shm *shm, unsigned idx)
{
	size_t stride = ALIGN_UP(rn_ring_shm_size(shm->hdr->ring_bytes), 64);

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
	size_t stride = ALIGN_UP(rn_ring_shm_size(shm->hdr->ring_bytes), 64);

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
	uint64_t body = mi->body_size;

	memset((char *)mi + sizeof(mi->lock), 0, sizeof(*mi) - sizeof(mi->lock));
	mi->body_size = body;
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
