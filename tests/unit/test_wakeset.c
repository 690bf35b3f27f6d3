/*
 * Unit tests for the wake sets (ipc/wakeset.h): marks are taken once and
 * cleared, the words list names each nonzero word once, sets of two
 * workers are apart; and across processes, four markers racing with a
 * taker lose no mark: each marker marks a slot, then waits until the
 * taker reports having taken it, so a lost mark hangs the marker and
 * fails the bound.
 */
#include "autoconf.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/shm.h"
#include "ipc/wakeset.h"
#include "tests/lib/tap.h"

#define SLOTS 100000
#define MARKERS 4
#define ROUNDS 5000

struct race {
	_Atomic uint32_t taken[MARKERS];	/* rounds the taker saw, per marker */
	_Atomic int stop;
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Marker m marks slot m * 1000 + round % 1000 each round, waits to be seen. */
static void
marker(const struct rn_shm *shm, struct race *r, int m)
{
	struct rn_wakeset ws;

	rn_wakeset_of(shm, 0, &ws);
	for (uint32_t i = 0; i < ROUNDS; i++) {
		rn_wakeset_mark(&ws, (uint32_t)(m * 1000 + i % 1000));
		while (atomic_load(&r->taken[m]) <= i && !atomic_load(&r->stop))
			;
	}
	_exit(0);
}

int
main(void)
{
	struct rn_shm_params p = { .n_workers = 3, .ring_bytes = 4096,
	    .max_partitions = SLOTS };
	struct rn_shm shm = { .fd = -1 };
	struct rn_wakeset a, b;
	uint64_t *local;
	uint32_t *words, n;
	struct race *r;
	pid_t pids[MARKERS];
	int ok_all = 1, status;
	double t0;

	plan(9);
	if (rn_shm_create(&p, &shm) != 0) {
		ok(0, "the segment is made");
		return done_testing();
	}
	rn_wakeset_of(&shm, 0, &a);
	rn_wakeset_of(&shm, 1, &b);
	local = calloc(a.n_words, sizeof(*local));
	words = calloc(a.n_words, sizeof(*words));

	ok(rn_wakeset_take(&a, local, words) == 0, "a new set is empty");
	rn_wakeset_mark(&a, 0);
	rn_wakeset_mark(&a, 5);
	rn_wakeset_mark(&a, 5);
	rn_wakeset_mark(&a, SLOTS - 1);
	n = rn_wakeset_take(&a, local, words);
	ok(n == 2 && words[0] == 0 && words[1] == (SLOTS - 1) / 64,
	    "two words marked, each listed once (%u)", n);
	ok(rn_wakeset_test(local, 0) && rn_wakeset_test(local, 5) &&
	    rn_wakeset_test(local, SLOTS - 1) && !rn_wakeset_test(local, 1),
	    "the marked slots and no other");
	ok(rn_wakeset_take(&b, local, words) == 0,
	    "another worker's set saw none of it");
	memset(local, 0, a.n_words * sizeof(*local));
	ok(rn_wakeset_take(&a, local, words) == 0, "a take clears the set");
	rn_wakeset_mark(&a, SLOTS + 64);
	ok(rn_wakeset_take(&a, local, words) == 0,
	    "a slot past the segment's is ignored");

	r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	memset(r, 0, sizeof(*r));
	for (int m = 0; m < MARKERS; m++)
		if ((pids[m] = fork()) == 0)
			marker(&shm, r, m);
	t0 = now();
	while (now() - t0 < 60) {
		int done = 1;

		n = rn_wakeset_take(&a, local, words);
		for (int m = 0; m < MARKERS; m++) {
			uint32_t i = atomic_load(&r->taken[m]);

			if (i < ROUNDS && rn_wakeset_test(local,
			    (uint32_t)(m * 1000 + i % 1000)))
				atomic_store(&r->taken[m], i + 1);
			done = done && atomic_load(&r->taken[m]) >= ROUNDS;
		}
		for (uint32_t k = 0; k < n; k++)
			local[words[k]] = 0;
		if (done)
			break;
	}
	atomic_store(&r->stop, 1);
	for (int m = 0; m < MARKERS; m++) {
		waitpid(pids[m], &status, 0);
		ok_all = ok_all && atomic_load(&r->taken[m]) >= ROUNDS;
	}
	ok(ok_all, "%d markers x %d marks racing a taker: none lost (%.2f s)",
	    MARKERS, ROUNDS, now() - t0);
	ok(rn_shm_region_size(&shm, RN_REGION_WAKESETS) >= (size_t)p.n_workers *
	    (a.n_words + (a.n_words + 63) / 64) * sizeof(uint64_t) &&
	    (char *)(b.bits + b.n_words) <= (char *)rn_shm_wakesets(&shm) +
	    rn_shm_region_size(&shm, RN_REGION_WAKESETS),
	    "the region holds a set per worker");
	ok(rn_wakeset_take(&b, local, words) == 0,
	    "the other set stayed empty throughout");
	rn_shm_destroy(&shm);
	return done_testing();
}
