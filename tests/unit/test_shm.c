/*
 * Unit tests for the shared-memory segment's layout (ipc/shm.c): every
 * row of the region table gets page-aligned bytes of its own, in table
 * order, covering the segment; each region's init ran (rings usable, the
 * metadata image sized to its region); the accessors land inside their
 * regions.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ipc/mdimage.h"
#include "ipc/metrics.h"
#include "ipc/ring.h"
#include "ipc/shm.h"
#include "tests/lib/tap.h"

static bool
inside(const struct rn_shm *shm, enum rn_region id, const void *p, size_t len)
{
	const char *base = (const char *)shm->base + shm->hdr->regions[id].off;

	return (const char *)p >= base &&
	    (const char *)p + len <= base + shm->hdr->regions[id].size;
}

static void
check_layout(const struct rn_shm_params *sp)
{
	struct rn_shm shm;
	uint64_t off = 0;
	bool aligned = true, contiguous = true, named = true;
	int i, rc;

	if ((rc = rn_shm_create(sp, &shm)) != 0)
		bail("rn_shm_create: %s", strerror(-rc));
	is_int(rn_shm_check(&shm), 0, "a new segment checks out "
	    "(%u workers, %u slots)", sp->n_workers, sp->max_partitions);
	is_int((long long)rn_shm_size(sp), (long long)shm.size,
	    "rn_shm_size is the size created");
	for (i = 0; i < RN_REGION_COUNT; i++) {
		const struct rn_shm_region *r = &shm.hdr->regions[i];

		aligned = aligned && r->off % 4096 == 0 && r->size % 4096 == 0;
		contiguous = contiguous && r->off == off;
		named = named && strcmp(rn_shm_region_name(i), "unknown") != 0;
		off += r->size;
	}
	ok(aligned, "every region starts and ends on a page");
	ok(contiguous, "regions follow each other in table order");
	is_int((long long)off, (long long)shm.size,
	    "the regions cover the segment");
	ok(named, "every region has a name");
	is_int((long long)rn_shm_region_size(&shm, RN_REGION_METADATA) -
	    (long long)sizeof(struct rn_meta_image) -
	    (long long)rn_shm_meta(&shm)->delta_size,
	    (long long)rn_shm_meta(&shm)->body_size,
	    "the metadata image's delta ring and body fill its region");
	ok(rn_ring_valid(rn_shm_ring_to_ctl(&shm, sp->n_workers - 1)) &&
	    rn_ring_valid(rn_shm_ring_from_ctl(&shm, sp->n_workers - 1)),
	    "the last worker's rings are formatted");
	is_int(rn_ring_push(rn_shm_ring_from_ctl(&shm, sp->n_workers - 1), 1,
	    "x", 1), 0, "and take a message");
	ok(inside(&shm, RN_REGION_RINGS, rn_shm_ring_from_ctl(&shm,
	    sp->n_workers - 1), rn_ring_shm_size(sp->ring_bytes)),
	    "inside the rings region");
	ok(inside(&shm, RN_REGION_PARTITIONS, rn_shm_partition(&shm,
	    sp->max_partitions - 1), sizeof(struct rn_part_slot)),
	    "the last partition slot is inside its region");
	ok(inside(&shm, RN_REGION_WORKERS, rn_shm_worker(&shm,
	    sp->n_workers - 1), sizeof(struct rn_worker_slot)),
	    "the last worker slot is inside its region");
	ok(inside(&shm, RN_REGION_METRICS, rn_metrics_part(&shm,
	    sp->max_partitions - 1), sizeof(struct rn_met_part)) &&
	    inside(&shm, RN_REGION_METRICS, rn_metrics_worker(&shm,
	    sp->n_workers - 1), sizeof(struct rn_met_worker)),
	    "the last metrics slots are inside their region");
	ok(!rn_shm_slot_used(&shm, sp->max_partitions - 1), "slot map: unused");
	rn_shm_slot_mark(&shm, sp->max_partitions - 1);
	ok(rn_shm_slot_used(&shm, sp->max_partitions - 1) &&
	    (sp->max_partitions == 1 || !rn_shm_slot_used(&shm, 0)),
	    "slot map: marked, and only it");
	ok(rn_shm_slot_next_used(&shm, 0) == sp->max_partitions - 1 &&
	    rn_shm_slot_next_used(&shm, sp->max_partitions) ==
	    sp->max_partitions, "slot map: the scan finds it, then none");
	rn_shm_destroy(&shm);
}

/* The timed APIs' table and its index by key agree, Produce first. */
static void
check_timed_apis(void)
{
	int i, k, n = 0;
	bool agree = true;

	for (i = 0; i < RN_MET_N_API; i++)
		agree = agree && rn_met_api_index(rn_met_api_keys[i]) == i;
	for (k = -1; k <= RN_MET_MAX_API; k++)
		n += rn_met_api_index(k) >= 0;
	ok(agree, "each timed API key maps to its histogram index");
	is_int(n, RN_MET_N_API, "and no other key does (%d timed)", n);
	is_int(rn_met_api_keys[RN_MET_API_PRODUCE], 0, "Produce is index 0");
	diag("a worker's metrics slot: %zu bytes", sizeof(struct rn_met_worker));
}

int
main(void)
{
	struct rn_shm_params small = { 1, 4096, 1, 0 };
	struct rn_shm_params big = { 7, 1u << 16, 1000, 100 };
	struct rn_shm_params bad = { 0, 4096, 1, 0 };
	struct rn_shm shm;

	plan(36);
	check_layout(&small);
	check_layout(&big);
	check_timed_apis();
	is_int(rn_shm_create(&bad, &shm), -EINVAL, "no workers: refused");
	return done_testing();
}
