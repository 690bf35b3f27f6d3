/*
 * What a cleaning knows of transactions, as Kafka's cleaner tracks them
 * (CleanedTransactionMetadata): the aborted transactions of the log, read
 * from every segment's .txnindex, so the records of an aborted
 * transaction are neither mapped nor kept; and, per producer, whether any
 * batch of its current transaction is kept by this pass, so a marker
 * whose transaction has nothing left can be given a delete horizon and
 * go after it. Fixed tables: a log with more aborted transactions than
 * fit is not cleaned (its records' fate would be unknown); producers that
 * do not fit keep their markers.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/txnindex.h"
#include "workers/cleaner/cl_int.h"

#define PROD_SLOTS 65536	/* a power of two */

struct cl_txn_prod {
	int64_t pid;		/* 0: empty (producer ids are positive) */
	bool seen;		/* a batch of its current transaction kept */
};

int
cl_txn_init(struct cl_txn *t)
{
	memset(t, 0, sizeof(*t));
	t->cap = CL_TXN_ABORTS;
	t->ab = calloc((size_t)t->cap, sizeof(*t->ab));
	t->prods = calloc(PROD_SLOTS, sizeof(*t->prods));
	return t->ab != NULL && t->prods != NULL ? 0 : -ENOMEM;
}

void
cl_txn_free(struct cl_txn *t)
{
	free(t->ab);
	free(t->prods);
	memset(t, 0, sizeof(*t));
}

struct load {
	struct cl_txn *t;
	int64_t end;
};

static int
load_one(void *arg, const struct rn_aborted_txn *a)
{
	struct load *l = arg;

	if (a->first_offset >= l->end)
		return 0;	/* its records lie past what is cleaned */
	if (l->t->n == l->t->cap)
		return -E2BIG;
	l->t->ab[l->t->n++] = *a;
	return 0;
}

static int
by_pid_first(const void *x, const void *y)
{
	const struct rn_aborted_txn *a = x, *b = y;

	if (a->producer_id != b->producer_id)
		return a->producer_id < b->producer_id ? -1 : 1;
	return a->first_offset < b->first_offset ? -1 :
	    a->first_offset > b->first_offset;
}

int
cl_txn_load(struct cl_txn *t, struct rn_log *log, int64_t end)
{
	static int64_t bases[CL_MAX_SEGS];
	struct load l = { t, end };
	int n, rc = 0;

	t->n = 0;
	t->full = false;
	memset(t->prods, 0, PROD_SLOTS * sizeof(*t->prods));
	t->used = 0;
	if ((n = rn_log_segment_bases(log, bases, CL_MAX_SEGS)) < 0)
		return n;
	if (n > CL_MAX_SEGS)
		return -E2BIG;
	for (int i = 0; i < n && rc == 0; i++)
		rc = rn_txnindex_read(rn_log_dirfd(log), bases[i], load_one, &l);
	if (rc < 0)
		return rc;
	qsort(t->ab, (size_t)t->n, sizeof(*t->ab), by_pid_first);
	return 0;
}

bool
cl_txn_aborted(const struct cl_txn *t, int64_t pid, int64_t offset)
{
	int lo = 0, hi = t->n - 1, hit = -1;

	/* the last of pid's aborted transactions starting at or before it */
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		const struct rn_aborted_txn *a = &t->ab[mid];

		if (a->producer_id < pid || (a->producer_id == pid &&
		    a->first_offset <= offset)) {
			if (a->producer_id == pid)
				hit = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return hit >= 0 && offset < t->ab[hit].last_offset;
}

static struct cl_txn_prod *
prod(struct cl_txn *t, int64_t pid, bool add)
{
	uint64_t h = (uint64_t)pid * 0x9E3779B97F4A7C15ULL;

	for (size_t i = 0; i < PROD_SLOTS; i++) {
		struct cl_txn_prod *s = &t->prods[(h + i) & (PROD_SLOTS - 1)];

		if (s->pid == pid)
			return s;
		if (s->pid == 0) {
			if (!add || t->used >= PROD_SLOTS * 3 / 4) {
				t->full |= add;
				return NULL;
			}
			s->pid = pid;
			t->used++;
			return s;
		}
	}
	t->full |= add;
	return NULL;
}

void
cl_txn_batch(struct cl_txn *t, int64_t pid)
{
	struct cl_txn_prod *s = prod(t, pid, true);

	if (s != NULL)
		s->seen = true;
}

bool
cl_txn_marker_empty(struct cl_txn *t, int64_t pid)
{
	struct cl_txn_prod *s = prod(t, pid, false);
	bool seen;

	if (s == NULL)
		return !t->full;	/* none read, unless one did not fit */
	seen = s->seen;
	s->seen = false;	/* the marker ends that transaction */
	return !seen && !t->full;
}
