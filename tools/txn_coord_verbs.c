/*
 * runnel-transactions' verbs that ask the transaction coordinators: list,
 * describe, and find-hanging's cross-check (see txn_coord_verbs.h).
 *
 * Each broker coordinates the transactional ids of the __transaction_state
 * partitions it leads, so a listing asks every broker, as Kafka's admin
 * does; a description asks the one FindCoordinator names. Answers saying
 * a coordinator is loading or has moved are asked again until the tool's
 * timeout, as Kafka's admin retries them.
 */
#include "autoconf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/kerrors.h"
#include "tools/tool_common.h"
#include "tools/txn_client.h"
#include "tools/txn_coord_verbs.h"

#define MAX_COLS 9

/* Rows printed as Kafka's tool prints them: each column as wide as its
 * widest cell, a tab after each. */
struct table {
	int ncols;
	const char *const *hdr;
	char **cells;		/* nrows * ncols, in the arena */
	int nrows, cap;
};

static int
table_add(struct table *t, struct rn_arena *ar, const char *const *row)
{
	if (t->nrows == t->cap) {
		int cap = t->cap ? t->cap * 2 : 16;
		char **c = realloc(t->cells,
		    sizeof(*c) * (size_t)cap * (size_t)t->ncols);

		if (c == NULL)
			return -1;
		t->cells = c;
		t->cap = cap;
	}
	for (int i = 0; i < t->ncols; i++) {
		char *s = rn_arena_strndup(ar, row[i], strlen(row[i]));

		if (s == NULL)
			return -1;
		t->cells[t->nrows * t->ncols + i] = s;
	}
	t->nrows++;
	return 0;
}

static void
print_row(const int *width, int ncols, const char *const *row)
{
	for (int i = 0; i < ncols; i++)
		printf("%-*s\t", width[i], row[i]);
	printf("\n");
}

static void
table_print_free(struct table *t)
{
	int width[MAX_COLS];

	for (int i = 0; i < t->ncols; i++)
		width[i] = (int)strlen(t->hdr[i]);
	for (int r = 0; r < t->nrows; r++)
		for (int i = 0; i < t->ncols; i++) {
			int w = (int)strlen(t->cells[r * t->ncols + i]);

			if (w > width[i])
				width[i] = w;
		}
	print_row(width, t->ncols, t->hdr);
	for (int r = 0; r < t->nrows; r++)
		print_row(width, t->ncols,
		    (const char *const *)&t->cells[r * t->ncols]);
	free(t->cells);
	t->cells = NULL;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A coordinator still loading, or not where FindCoordinator said: ask
 * again after a pause, until the deadline. */
static bool
retry_after(int16_t e, int64_t deadline)
{
	static const struct timespec pause = { 0, 200 * 1000 * 1000 };

	if ((e != RN_KERR_COORDINATOR_LOAD_IN_PROGRESS &&
	    e != RN_KERR_COORDINATOR_NOT_AVAILABLE &&
	    e != RN_KERR_NOT_COORDINATOR) || mono_ms() >= deadline)
		return false;
	nanosleep(&pause, NULL);
	return true;
}

/* ListTransactions to broker; 0 with resp, or -1 after saying why. */
static int
list_at(const struct rn_MetadataResponse *md, int32_t broker,
    const struct rn_ListTransactionsRequest *req, const char *what,
    struct rn_arena *ar, struct rn_ListTransactionsResponse *resp)
{
	int64_t deadline = mono_ms() + TOOL_DEFAULT_TIMEOUT_MS;
	char err[256];

	do {
		if (txc_call_broker(md, broker, RN_KAPI_LIST_TRANSACTIONS, 1,
		    req, TOOL_DEFAULT_TIMEOUT_MS, ar, resp, err,
		    sizeof(err)) != 0) {
			tool_errx("%s: broker %d: %s", what, broker, err);
			return -1;
		}
	} while (retry_after(resp->error_code, deadline));
	if (resp->error_code != 0) {
		tool_errx("%s: broker %d: %s", what, broker,
		    rn_kerr_name(resp->error_code));
		return -1;
	}
	return 0;
}

int
txv_list(const struct rn_MetadataResponse *md, int64_t duration_ms,
    struct rn_arena *ar)
{
	static const char *const hdr[] = { "TransactionalId", "Coordinator",
	    "ProducerId", "TransactionState" };
	struct table t = { 4, hdr, NULL, 0, 0 };
	struct rn_ListTransactionsRequest req;

	rn_ListTransactionsRequest_init(&req);
	req.duration_filter = duration_ms;
	for (int b = 0; b < md->brokers_count; b++) {
		struct rn_ListTransactionsResponse resp;
		int32_t node = md->brokers[b].node_id;

		if (list_at(md, node, &req, "Failed to list transactions", ar,
		    &resp) != 0) {
			free(t.cells);
			return TOOL_EXIT_FAIL;
		}
		for (int i = 0; i < resp.transaction_states_count; i++) {
			const struct rn_ListTransactionsResponse_TransactionState
			    *s = &resp.transaction_states[i];
			char id[512], coord[16], pid[24], state[64];
			const char *row[4] = { id, coord, pid, state };

			snprintf(id, sizeof(id), "%.*s",
			    (int)s->transactional_id.len,
			    s->transactional_id.ptr);
			snprintf(coord, sizeof(coord), "%d", node);
			snprintf(pid, sizeof(pid), "%" PRId64, s->producer_id);
			snprintf(state, sizeof(state), "%.*s",
			    (int)s->transaction_state.len,
			    s->transaction_state.ptr);
			if (table_add(&t, ar, row) != 0) {
				tool_errx("out of memory");
				free(t.cells);
				return TOOL_EXIT_FAIL;
			}
		}
	}
	table_print_free(&t);
	return TOOL_EXIT_OK;
}

/*
 * The transaction of id at its coordinator, retried while the coordinator
 * loads or moves: 0 with *st, a Kafka error code, or -1 after saying why.
 */
static int
describe_one(const char *bootstrap, const char *id, struct rn_arena *ar,
    int32_t *coordinator,
    const struct rn_DescribeTransactionsResponse_TransactionState **st)
{
	static struct rn_DescribeTransactionsResponse resp;
	int64_t deadline = mono_ms() + TOOL_DEFAULT_TIMEOUT_MS;
	char err[256];
	int e;

	do {
		e = txc_describe_txn(bootstrap, id, TOOL_DEFAULT_TIMEOUT_MS, ar,
		    coordinator, &resp, err, sizeof(err));
		if (e < 0) {
			tool_errx("describing transactional id %s: %s", id, err);
			return -1;
		}
	} while (retry_after((int16_t)e, deadline));
	if (e == 0)
		*st = &resp.transaction_states[0];
	return e;
}

/* "topic-partition,..." of a description, in the arena. */
static const char *
partitions_text(const struct rn_DescribeTransactionsResponse_TransactionState
    *st, struct rn_arena *ar)
{
	size_t need = 1, off = 0;
	char *s;

	for (int i = 0; i < st->topics_count; i++)
		need += (size_t)st->topics[i].partitions_count *
		    ((size_t)st->topics[i].topic.len + 13);
	if ((s = rn_arena_alloc(ar, need)) == NULL)
		return "";
	s[0] = '\0';
	for (int i = 0; i < st->topics_count; i++)
		for (int j = 0; j < st->topics[i].partitions_count; j++)
			off += (size_t)snprintf(s + off, need - off, "%s%.*s-%d",
			    off > 0 ? "," : "", (int)st->topics[i].topic.len,
			    st->topics[i].topic.ptr,
			    st->topics[i].partitions[j]);
	return s;
}

int
txv_describe(const char *bootstrap, const char *id, struct rn_arena *ar)
{
	static const char *const hdr[] = { "CoordinatorId",
	    "TransactionalId", "ProducerId", "ProducerEpoch",
	    "TransactionState", "TransactionTimeoutMs",
	    "CurrentTransactionStartTimeMs", "TransactionDurationMs",
	    "TopicPartitions" };
	const struct rn_DescribeTransactionsResponse_TransactionState *st;
	struct table t = { 9, hdr, NULL, 0, 0 };
	char coord[16], pid[24], epoch[8], state[64], tmo[16], start[24],
	    dur[24];
	const char *row[9] = { coord, id, pid, epoch, state, tmo, start, dur,
	    NULL };
	int32_t node = -1;
	int e;

	if ((e = describe_one(bootstrap, id, ar, &node, &st)) < 0)
		return TOOL_EXIT_FAIL;
	if (e != 0) {
		/* Kafka's text for the id it does not know */
		if (e == RN_KERR_TRANSACTIONAL_ID_NOT_FOUND)
			tool_errx("Failed to describe transaction state of "
			    "transactional-id `%s`: The transactionalId could "
			    "not be found.", id);
		else
			tool_errx("Failed to describe transaction state of "
			    "transactional-id `%s`: %s", id,
			    rn_kerr_name((int16_t)e));
		return TOOL_EXIT_FAIL;
	}
	snprintf(coord, sizeof(coord), "%d", node);
	snprintf(pid, sizeof(pid), "%" PRId64, st->producer_id);
	snprintf(epoch, sizeof(epoch), "%d", st->producer_epoch);
	snprintf(state, sizeof(state), "%.*s", (int)st->transaction_state.len,
	    st->transaction_state.ptr);
	snprintf(tmo, sizeof(tmo), "%d", st->transaction_timeout_ms);
	if (st->transaction_start_time_ms >= 0) {
		snprintf(start, sizeof(start), "%" PRId64,
		    st->transaction_start_time_ms);
		snprintf(dur, sizeof(dur), "%" PRId64,
		    wall_ms() - st->transaction_start_time_ms);
	} else {
		snprintf(start, sizeof(start), "None");
		snprintf(dur, sizeof(dur), "None");
	}
	row[8] = partitions_text(st, ar);
	if (table_add(&t, ar, row) != 0) {
		tool_errx("out of memory");
		free(t.cells);
		return TOOL_EXIT_FAIL;
	}
	table_print_free(&t);
	return TOOL_EXIT_OK;
}

static bool
kstr_is(struct rn_kstr k, const char *s)
{
	return k.len >= 0 && (size_t)k.len == strlen(s) &&
	    memcmp(k.ptr, s, (size_t)k.len) == 0;
}

/* Whether the coordinator's transaction still owes tp a marker: it holds
 * the partition in a state that ends with markers. */
static bool
coordinator_holds(const struct rn_DescribeTransactionsResponse_TransactionState
    *st, const struct txv_open *o)
{
	if (st->producer_id != o->s.producer_id ||
	    !(kstr_is(st->transaction_state, "Ongoing") ||
	    kstr_is(st->transaction_state, "PrepareCommit") ||
	    kstr_is(st->transaction_state, "PrepareAbort") ||
	    kstr_is(st->transaction_state, "PrepareEpochFence")))
		return false;
	for (int i = 0; i < st->topics_count; i++) {
		if (!kstr_is(st->topics[i].topic, o->topic))
			continue;
		for (int j = 0; j < st->topics[i].partitions_count; j++)
			if (st->topics[i].partitions[j] == o->partition)
				return true;
	}
	return false;
}

/* The transactional ids of pids, from every broker's listing: ids[i] for
 * pids[i], NULL when none. 0, or -1 after saying why. */
static int
lookup_ids(const struct rn_MetadataResponse *md, int64_t *pids, int n,
    const char **ids, struct rn_arena *ar)
{
	struct rn_ListTransactionsRequest req;
	char what[96];

	snprintf(what, sizeof(what), "Failed to list transactions for %d "
	    "producers", n);
	rn_ListTransactionsRequest_init(&req);
	req.producer_id_filters = pids;
	req.producer_id_filters_count = n;
	for (int b = 0; b < md->brokers_count; b++) {
		struct rn_ListTransactionsResponse resp;

		if (list_at(md, md->brokers[b].node_id, &req, what, ar,
		    &resp) != 0)
			return -1;
		for (int i = 0; i < resp.transaction_states_count; i++) {
			const struct rn_ListTransactionsResponse_TransactionState
			    *s = &resp.transaction_states[i];

			/* a listing of a producer not asked for is ignored */
			for (int k = 0; k < n; k++)
				if (pids[k] == s->producer_id)
					ids[k] = rn_arena_strndup(ar,
					    s->transactional_id.ptr,
					    (size_t)(s->transactional_id.len >
					    0 ? s->transactional_id.len : 0));
		}
	}
	return 0;
}

int
txv_cross_check(const char *bootstrap,
    const struct rn_MetadataResponse *md, struct txv_open *c, int n,
    struct rn_arena *ar)
{
	int64_t *pids = rn_arena_alloc(ar, sizeof(*pids) * (size_t)(n + 1));
	const char **ids = rn_arena_alloc(ar, sizeof(*ids) * (size_t)(n + 1));
	int npids = 0;

	if (pids == NULL || ids == NULL) {
		tool_errx("out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int k = 0;

		while (k < npids && pids[k] != c[i].s.producer_id)
			k++;
		if (k == npids)
			pids[npids++] = c[i].s.producer_id;
	}
	if (npids == 0)
		return 0;
	memset(ids, 0, sizeof(*ids) * (size_t)npids);
	if (lookup_ids(md, pids, npids, ids, ar) != 0)
		return -1;
	for (int k = 0; k < npids; k++) {
		const struct rn_DescribeTransactionsResponse_TransactionState
		    *st = NULL;
		int32_t node;
		int e = 0;

		if (ids[k] != NULL &&
		    (e = describe_one(bootstrap, ids[k], ar, &node, &st)) < 0)
			return -1;
		if (e != 0 && e != RN_KERR_TRANSACTIONAL_ID_NOT_FOUND) {
			tool_errx("Failed to describe the transaction of %s: %s",
			    ids[k], rn_kerr_name((int16_t)e));
			return -1;
		}
		/* no id, an id the coordinator does not know, or a
		 * transaction there without this partition: hanging */
		for (int i = 0; i < n; i++)
			if (c[i].s.producer_id == pids[k])
				c[i].hanging = st == NULL ||
				    !coordinator_holds(st, &c[i]);
	}
	return 0;
}
