/*
 * The bound on a process's open log handles. A log open holds a directory
 * descriptor and, per segment it has touched, the segment's descriptor and
 * two index mappings (an index keeps no descriptor): with 100,000 partitions a network worker
 * serving all of them would run out of descriptors (RLIMIT_NOFILE) or
 * mappings (vm.max_map_count) long before memory. Handles are cheap to
 * reopen (the shared state is in the slot: no recovery, a directory read
 * and a few opens), so the least recently used ones are closed.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/partition/partition.h"
#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

/*
 * What one open log costs: its directory and active segment, and an older
 * segment a reader opened.
 */
#define FDS_PER_LOG 3
#define MAPS_PER_LOG 3
#define MIN_OPEN 64

static long
max_map_count(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	long n = 65530;	/* the kernel's default */

	if (f != NULL) {
		if (fscanf(f, "%ld", &n) != 1)
			n = 65530;
		fclose(f);
	}
	return n;
}

/*
 * Descriptors and mappings left once connections, rings, libraries and
 * the heap have theirs (a quarter, at most 4096 of each).
 */
uint32_t
rn_part_handle_budget(void)
{
	struct rlimit rl;
	long fds = 1024, maps = max_map_count(), by_fds, by_maps, n;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		fds = rl.rlim_cur == RLIM_INFINITY ? 1L << 20 : (long)rl.rlim_cur;
	by_fds = (fds - (fds / 4 < 4096 ? fds / 4 : 4096)) / FDS_PER_LOG;
	by_maps = (maps - (maps / 4 < 4096 ? maps / 4 : 4096)) / MAPS_PER_LOG;
	n = by_fds < by_maps ? by_fds : by_maps;
	return n < MIN_OPEN ? MIN_OPEN : (uint32_t)n;
}

void
rn_part_handle_close(struct rn_part_table *t, struct rn_part *p)
{
	if (p->log == NULL)
		return;
	rn_log_close(p->log);
	p->log = NULL;
	if (t->n_open > 0)
		t->n_open--;
}

static int
use_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Close the least recently got handles among those last got before
 * `before`, until at most keep are open. Returns how many.
 */
static uint32_t
trim_older(struct rn_part_table *t, uint64_t before, uint32_t keep)
{
	uint32_t n = 0, closed = 0, i;
	uint64_t *uses, cut;

	if (t->n_open <= keep ||
	    (uses = malloc(sizeof(*uses) * t->n_open)) == NULL)
		return 0;
	for (i = 0; i < t->hi && n < t->n_open; i++)
		if (t->parts[i].log != NULL && t->parts[i].last_use < before)
			uses[n++] = t->parts[i].last_use;
	qsort(uses, n, sizeof(*uses), use_cmp);
	/* what is newer than `before` stays open whatever it costs */
	keep = t->n_open - n < keep ? keep - (t->n_open - n) : 0;
	if (n <= keep)
		cut = 0;	/* nothing to close */
	else
		cut = keep > 0 ? uses[n - keep] : uses[n - 1] + 1;
	for (i = 0; i < t->hi && cut > 0; i++)
		if (t->parts[i].log != NULL && t->parts[i].last_use < cut) {
			rn_part_handle_close(t, &t->parts[i]);
			closed++;
		}
	free(uses);
	log_debug("closed %u idle logs (%u open, at most %u)", closed,
	    t->n_open, t->max_open);
	return closed;
}

/*
 * Every HANDLE_IDLE_MS the clock is marked: a handle last got before the
 * mark before last was idle for at least that long.
 */
#define HANDLE_IDLE_MS 10000

uint32_t
rn_part_table_trim(struct rn_part_table *t)
{
	int64_t now = rn_now_ms();
	uint32_t closed = 0;

	if (now - t->mark_ms >= HANDLE_IDLE_MS) {
		t->idle_clock = t->mark_clock;
		t->mark_clock = t->clock;
		t->mark_ms = now;
	}
	if (t->n_open > t->max_open)
		closed = trim_older(t, t->clock + 1, t->max_open);
	t->turns = true;
	return closed;
}

/*
 * Before p's log opens with the table full. Idle handles go first, the
 * least recently got of them, down to three quarters of the bound (one
 * look per idle period). Past that the handle got just before p goes,
 * which its caller is done with (the promise rn_part_table_trim states):
 * a worker cycling over more partitions than it may keep open, as a
 * leader answering follower fetches of 10,000 partitions does, then keeps
 * a stable part of them open and reopens the rest, where closing the
 * least recently used would close each one just before its next use.
 */
void
rn_part_handle_make_room(struct rn_part_table *t, struct rn_part *p)
{
	if (!t->turns || t->n_open < t->max_open)
		return;
	if (t->idle_looked != t->idle_clock) {
		t->idle_looked = t->idle_clock;
		if (trim_older(t, t->idle_clock, t->max_open / 4 * 3) > 0)
			return;
	}
	if (t->last != NULL && t->last != p)
		rn_part_handle_close(t, t->last);
}
