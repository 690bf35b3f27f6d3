/*
 * A partition's producer table past its inline entries: 1,000 producers
 * through the node's pool (ipc/prodpool.c), open transactions never
 * evicted, the pool exhausted, expiry, and the lock-free pool shared by
 * processes.
 */
#include "autoconf.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc/prodpool.h"
#include "protocol/kerrors.h"
#include "storage/batch.h"
#include "tests/lib/tap.h"
#include "workers/partition/idempotence.h"

#define PID0 ((int64_t)3 << 48)

static struct rn_batch_header
batch(int64_t pid, int32_t seq, bool txn)
{
	struct rn_batch_header h;

	memset(&h, 0, sizeof(h));
	h.producer_id = pid;
	h.producer_epoch = 0;
	h.base_sequence = seq;
	h.record_count = 1;
	h.attributes = txn ? RN_BATCH_ATTR_TRANSACTIONAL : 0;
	return h;
}

static struct rn_batch_header
marker(int64_t pid)
{
	struct rn_batch_header h = batch(pid, -1, true);

	h.attributes |= RN_BATCH_ATTR_CONTROL;
	return h;
}

static struct rn_prodpool *
new_pool(uint32_t capacity)
{
	/* shared, as the node's segment is, for the forked stress */
	struct rn_prodpool *pool = mmap(NULL, rn_prodpool_bytes(capacity),
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (pool == MAP_FAILED)
		abort();
	rn_prodpool_format(pool, capacity);
	rn_idem_pool_attach(pool);
	return pool;
}

/* A leader's write: check, room, append (at offset), record. */
static int
produce(struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t offset, int64_t now, int64_t *dup)
{
	int rc = rn_idem_check(s, h, dup);

	if (rc != RN_IDEM_APPEND)
		return rc;
	if ((rc = rn_idem_admit(s, h, now)) < 0)
		return rc;
	(void)rn_idem_record(s, h, offset, now);
	return RN_IDEM_APPEND;
}

static void
thousand_producers(void)
{
	static struct rn_idem_state s;
	struct rn_prodpool *pool = new_pool(2000);
	struct rn_idem_iter it = RN_IDEM_ITER_INIT;
	const struct rn_idem_producer *q;
	struct rn_batch_header h;
	int64_t dup, seen = 0;
	int i, bad = 0;

	for (i = 0; i < 1000; i++) {
		h = batch(PID0 + i, 0, false);
		if (produce(&s, &h, 10 * i, 1000 + i, &dup) != RN_IDEM_APPEND)
			bad++;
	}
	ok(bad == 0, "1,000 producers' first batches appended");
	ok(rn_idem_count(&s) == 1000, "the table holds all 1,000 (%zu)",
	    rn_idem_count(&s));
	ok(atomic_load(&pool->in_use) == 1000 - RN_IDEM_PRODUCERS,
	    "%d inline, the rest from the pool (%lld)", RN_IDEM_PRODUCERS,
	    (long long)atomic_load(&pool->in_use));
	for (i = 0, bad = 0; i < 1000; i++) {
		h = batch(PID0 + i, 0, false);
		dup = -1;
		if (rn_idem_check(&s, &h, &dup) != RN_IDEM_DUPLICATE ||
		    dup != 10 * i)
			bad++;
	}
	ok(bad == 0, "every producer's retry is a duplicate at its original "
	    "offset (%d wrong)", bad);
	for (i = 0, bad = 0; i < 1000; i++) {
		h = batch(PID0 + i, 2, false);
		if (rn_idem_check(&s, &h, &dup) !=
		    -RN_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER)
			bad++;
	}
	ok(bad == 0, "and a gap is out of order for each of them");
	while ((q = rn_idem_next(&s, &it)) != NULL)
		seen += q->pid - PID0;
	ok(seen == 999 * 1000 / 2, "the iterator visits each producer once");
	rn_idem_reset(&s);
	ok(rn_idem_count(&s) == 0 && atomic_load(&pool->in_use) == 0,
	    "a reset (a slot released) returns its entries to the pool");
	munmap(pool, rn_prodpool_bytes(2000));
}

static void
open_transactions_kept(void)
{
	static struct rn_idem_state s;
	/* room for 1,000 exactly: 500 newcomers must evict */
	struct rn_prodpool *pool = new_pool(1000 - RN_IDEM_PRODUCERS);
	struct rn_batch_header h;
	int64_t dup, off = 0, first_txn = -1;
	int i, bad = 0;

	for (i = 0; i < 1000; i++) {
		bool txn = i % 10 == 3;	/* 100 of them */

		h = batch(PID0 + i, 0, txn);
		if (txn && first_txn < 0)
			first_txn = off;
		if (produce(&s, &h, off++, 1000 + i, &dup) != RN_IDEM_APPEND)
			bad++;
	}
	ok(bad == 0 && rn_idem_first_unstable(&s) == first_txn,
	    "100 open transactions among 1,000: the first unstable offset is "
	    "the earliest (%lld)", (long long)rn_idem_first_unstable(&s));
	for (i = 0, bad = 0; i < 500; i++) {
		h = batch(PID0 + 5000 + i, 0, false);
		if (produce(&s, &h, off++, 5000 + i, &dup) != RN_IDEM_APPEND)
			bad++;
	}
	ok(bad == 0 && s.evicted == 500,
	    "500 newcomers with the pool full evict 500 (%u)", s.evicted);
	for (i = 3, bad = 0; i < 1000; i += 10) {
		h = batch(PID0 + i, 0, true);
		if (rn_idem_check(&s, &h, &dup) != RN_IDEM_DUPLICATE)
			bad++;
	}
	ok(bad == 0, "none of the 100 in a transaction was evicted");
	ok(rn_idem_first_unstable(&s) == first_txn,
	    "the first unstable offset stays at the earliest");
	for (i = 0, bad = 0; i < 500; i++)
		if (i % 10 != 3) {
			h = batch(PID0 + i, 0, false);
			if (rn_idem_check(&s, &h, &dup) == RN_IDEM_DUPLICATE)
				bad++;
		}
	ok(bad == 0, "the evicted are the least recently used without one");
	h = marker(PID0 + 3);
	(void)rn_idem_record(&s, &h, off++, 9000);
	ok(rn_idem_first_unstable(&s) == first_txn + 10,
	    "its marker moves the first unstable offset to the next (%lld)",
	    (long long)rn_idem_first_unstable(&s));
	rn_idem_reset(&s);
	munmap(pool, rn_prodpool_bytes(1000 - RN_IDEM_PRODUCERS));
}

static void
pool_exhausted(void)
{
	static struct rn_idem_state s, other;
	struct rn_prodpool *pool = new_pool(6);
	struct rn_batch_header h;
	int64_t dup;
	int i, bad = 0;

	for (i = 0; i < RN_IDEM_PRODUCERS + 6; i++) {
		h = batch(PID0 + i, 0, true);
		if (produce(&s, &h, i, 100 + i, &dup) != RN_IDEM_APPEND)
			bad++;
	}
	ok(bad == 0, "30 producers, each in a transaction, fill table and "
	    "pool");
	h = batch(PID0 + 100, 0, false);
	is_int(produce(&s, &h, 50, 200, &dup), -RN_KERR_REQUEST_TIMED_OUT,
	    "a new producer is refused, retriably (REQUEST_TIMED_OUT)");
	ok(s.refused == 1 && s.evicted == 0 && rn_idem_count(&s) == 30 &&
	    rn_idem_first_unstable(&s) == 0,
	    "nobody evicted, the refusal counted for the log");
	h = batch(PID0 + 100, 0, false);
	is_int(produce(&other, &h, 0, 200, &dup), -RN_KERR_NONE,
	    "another partition still takes new producers inline");
	for (i = 0; i < RN_IDEM_PRODUCERS; i++) {
		h = batch(PID0 + 200 + i, 0, false);
		(void)produce(&other, &h, i + 1, 300 + i, &dup);
	}
	ok(other.evicted == 1 && rn_idem_count(&other) == RN_IDEM_PRODUCERS,
	    "beyond them, with the pool empty, it evicts its own LRU");
	h = marker(PID0 + 7);
	(void)rn_idem_record(&s, &h, 60, 400);
	h = batch(PID0 + 100, 0, false);
	is_int(produce(&s, &h, 61, 500, &dup), RN_IDEM_APPEND,
	    "once one transaction ends its producer gives way");
	h = batch(PID0 + 7, 0, true);
	ok(rn_idem_check(&s, &h, &dup) != RN_IDEM_DUPLICATE &&
	    s.evicted == 1, "it was the one evicted");
	rn_idem_reset(&s);
	h = batch(PID0 + 300, 0, false);
	is_int(produce(&other, &h, 70, 600, &dup), RN_IDEM_APPEND,
	    "entries a reset returned serve another partition");
	ok(atomic_load(&pool->in_use) == 1 && other.n_pooled == 1,
	    "from the pool");
	rn_idem_reset(&other);
	munmap(pool, rn_prodpool_bytes(6));
}

static void
expiry(void)
{
	static struct rn_idem_state s;
	struct rn_prodpool *pool = new_pool(100);
	struct rn_batch_header h;
	int64_t dup;
	int i, bad = 0;

	rn_idem_set_expiration(1000);
	for (i = 0; i < 50; i++) {
		/* 0-24 idle, 25-29 idle in a transaction, 30-49 recent */
		h = batch(PID0 + i, 0, i >= 25 && i < 30);
		(void)produce(&s, &h, i, i < 30 ? 0 : 5000, &dup);
	}
	is_int(rn_idem_expire(&s, 5500), 25,
	    "the 25 idle producers without a transaction expire");
	ok(rn_idem_count(&s) == 25, "25 are left");
	for (i = 25; i < 50; i++) {
		h = batch(PID0 + i, 0, i < 30);
		if (rn_idem_check(&s, &h, &dup) != RN_IDEM_DUPLICATE)
			bad++;
	}
	ok(bad == 0, "those in a transaction and the recent ones are kept");
	ok(rn_idem_first_unstable(&s) == 25, "the transactions still count");
	ok(atomic_load(&pool->in_use) == (int64_t)s.n_pooled,
	    "expired pooled entries went back (%lld in use)",
	    (long long)atomic_load(&pool->in_use));
	rn_idem_set_expiration(0);
	rn_idem_reset(&s);
	munmap(pool, rn_prodpool_bytes(100));
}

/* Four processes take and give boxes; each owns what it took. */
static void
pool_shared(void)
{
	struct rn_prodpool *pool = new_pool(64);
	int i, status, bad = 0;

	for (i = 0; i < 4; i++)
		if (fork() == 0) {
			uint32_t held[8];
			int r, k, wrong = 0;

			for (r = 0; r < 20000; r++) {
				for (k = 0; k < 8; k++) {
					held[k] = rn_prodpool_take(pool);
					if (held[k] != 0)
						memset(rn_prodpool_body(pool,
						    held[k]), i + 1,
						    RN_PRODPOOL_BODY);
				}
				for (k = 0; k < 8; k++)
					if (held[k] != 0) {
						unsigned char *b =
						    rn_prodpool_body(pool,
						    held[k]);

						if (b[0] != i + 1 ||
						    b[RN_PRODPOOL_BODY - 1] !=
						    i + 1)
							wrong++;
						rn_prodpool_give(pool,
						    held[k]);
					}
			}
			_exit(wrong != 0);
		}
	for (i = 0; i < 4; i++) {
		wait(&status);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bad++;
	}
	ok(bad == 0, "four processes never hold the same box");
	ok(atomic_load(&pool->in_use) == 0 &&
	    atomic_load(&pool->bumped) <= 64, "all returned, none lost");
	munmap(pool, rn_prodpool_bytes(64));
}

int
main(void)
{
	plan(29);
	thousand_producers();
	open_transactions_kept();
	pool_exhausted();
	expiry();
	pool_shared();
	return done_testing();
}
