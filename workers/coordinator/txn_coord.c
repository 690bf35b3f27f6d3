/*
 * The transaction coordinator: Kafka's state machine for the
 * transactional ids whose __transaction_state partition
 * (abs(javaStringHash(id)) % partitions) this node leads. Every change of
 * state is stored first (a record waits for the high watermark, acks=all)
 * and only then answered or acted on: Empty -> Ongoing (AddPartitionsToTxn,
 * AddOffsetsToTxn) -> PrepareCommit or PrepareAbort (EndTxn, a timeout, an
 * epoch fence) -> markers to every partition (txn_markers.c) ->
 * CompleteCommit or CompleteAbort. InitProducerId hands out a producer id
 * from the counter idempotent producers use, and bumps the epoch of an id
 * seen before, which fences the producer that held it.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/coordinator/coord_int.h"
#include "workers/partition/idempotence.h"

static unsigned
bucket_of(const char *s, size_t n)
{
	return rn_hash32(s, n) % CO_BUCKETS;
}

struct co_txn *
co_txn_find(struct co *co, struct rn_kstr id)
{
	struct co_txn *t;

	if (id.len <= 0)
		return NULL;
	for (t = co->txn_buckets[bucket_of(id.ptr, (size_t)id.len)]; t != NULL;
	    t = t->next)
		if (co_kstr_is(id, t->id))
			return t;
	return NULL;
}

static struct co_txn *
txn_create(struct co *co, struct rn_kstr id, int32_t partition)
{
	struct co_txn *t;
	unsigned b;

	if (co->n_txns >= CO_MAX_TXNS) {
		if (co->txn_full_logged++ % 1000 == 0)
			log_warnx("transaction coordinator: %u transactional "
			    "ids held, the most it takes: refusing new ones",
			    co->n_txns);
		return NULL;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		fatalx("transaction coordinator: out of memory");
	t->id = co_strdup(id);
	t->partition = partition;
	t->cur.pid = -1;
	t->cur.epoch = -1;
	t->cur.start_ms = -1;
	t->cur.state = RN_TXN_EMPTY;
	t->nxt = t->cur;
	b = bucket_of(t->id, strlen(t->id));
	t->next = co->txn_buckets[b];
	co->txn_buckets[b] = t;
	co->n_txns++;
	return t;
}

static void
tps_truncate(struct co_txn *t, int n)
{
	while (t->n_tps > n)
		free(t->tps[--t->n_tps].topic);
}

static void
marking_remove(struct co *co, struct co_txn *t)
{
	struct co_txn **pp;

	if (!t->marking)
		return;
	for (pp = &co->marking; *pp != NULL; pp = &(*pp)->next_marking)
		if (*pp == t) {
			*pp = t->next_marking;
			break;
		}
	t->marking = false;
}

static void
txn_free(struct co *co, struct co_txn *t)
{
	struct co_txn **pp = &co->txn_buckets[bucket_of(t->id, strlen(t->id))];

	while (*pp != NULL && *pp != t)
		pp = &(*pp)->next;
	if (*pp == t)
		*pp = t->next;
	marking_remove(co, t);
	co_txn_markers_forget(co, t);
	tps_truncate(t, 0);
	free(t->tps);
	free(t->id);
	free(t);
	co->n_txns--;
}

static bool
tp_has(const struct co_txn *t, struct rn_kstr topic, int32_t p)
{
	int i;

	for (i = 0; i < t->n_tps; i++)
		if (t->tps[i].partition == p && co_kstr_is(topic, t->tps[i].topic))
			return true;
	return false;
}

static void
tp_add(struct co_txn *t, struct rn_kstr topic, int32_t p)
{
	struct co_txn_tp *tp;

	if (tp_has(t, topic, p))
		return;
	if (t->n_tps == t->cap_tps) {
		int cap = t->cap_tps ? 2 * t->cap_tps : 8;
		void *n = realloc(t->tps, sizeof(*t->tps) * (size_t)cap);

		if (n == NULL)
			fatalx("transaction coordinator: out of memory");
		t->tps = n;
		t->cap_tps = cap;
	}
	tp = &t->tps[t->n_tps++];
	memset(tp, 0, sizeof(*tp));
	tp->topic = co_strdup(topic);
	tp->partition = p;
}

const struct rn_mdv_topic *
co_txn_topic(struct co *co)
{
	const struct rn_mdv_topic *t = rn_mdview_topic(&co->view,
	    RN_TXN_TOPIC, strlen(RN_TXN_TOPIC));

	if (t == NULL || memcmp(t->id, co->txn_topic_id, 16) != 0)
		return NULL;
	return t;
}

static int32_t
txn_partition_of(struct co *co, struct rn_kstr id)
{
	if (co->txn_n_parts <= 0 || id.len <= 0)
		return -1;
	return rn_group_partition(id.ptr, (size_t)id.len, co->txn_n_parts);
}

static int16_t
txn_part_error(struct co *co, int32_t p)
{
	if (p < 0 || p >= co->txn_n_parts || p >= CO_MAX_PARTS)
		return RN_KERR_NOT_COORDINATOR;
	switch (co->txn_part[p].state) {
	case CP_LOADED: return RN_KERR_NONE;
	case CP_LOADING: return RN_KERR_COORDINATOR_LOAD_IN_PROGRESS;
	default: return RN_KERR_NOT_COORDINATOR;
	}
}

/* PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH for a version before it. */
static int16_t
fenced(const struct co_req *r, int16_t since)
{
	return r->pend.ver >= since ? RN_KERR_PRODUCER_FENCED :
	    RN_KERR_INVALID_PRODUCER_EPOCH;
}

/* ---- storing a state ------------------------------------------------ */

static void
write_free(struct co_write *wr)
{
	rn_arena_free(&wr->arena);
	free(wr->body);
	free(wr);
}

/*
 * Store txn->nxt; the answer to pend (if active) goes out once it is
 * replicated, with body kept for an AddPartitionsToTxn's answer. 0, or
 * the error to answer now (nxt is then forgotten).
 */
static int16_t
txn_store(struct co *co, struct co_txn *t, const struct co_req *r)
{
	struct co_write *wr;
	int64_t end = -1;
	int16_t err;

	if ((err = co_txn_log_write(co, t, &end)) != 0) {
		t->nxt = t->cur;
		tps_truncate(t, t->n_tps_stored);
		t->fencing = false;
		return err;
	}
	if ((wr = calloc(1, sizeof(*wr))) == NULL)
		fatalx("transaction coordinator: out of memory");
	wr->kind = CW_TXN_STATE;
	wr->txn_log = true;
	wr->txn = t;
	wr->partition = t->partition;
	wr->leader_epoch = co->txn_part[t->partition].leader_epoch;
	wr->need = end;
	wr->deadline_ms = co->now + 30000;
	rn_arena_init(&wr->arena, 0);
	if (r != NULL) {
		wr->pend = r->pend;
		if (r->pend.key == RN_KAPI_ADD_PARTITIONS_TO_TXN) {
			rn_arena_set_limit(&wr->arena, 8 * r->len + 8192);
			if ((wr->body = malloc(r->len + 1)) == NULL)
				fatalx("transaction coordinator: out of memory");
			memcpy(wr->body, r->body, r->len);
			wr->body_len = r->len;
		}
	}
	t->writing = true;
	*co->writes_tail = wr;
	co->writes_tail = &wr->next;
	return 0;
}

/* AddPartitionsToTxn's answer: errs[k] per partition, or all err. */
static void
reply_add_partitions(struct co *co, const struct co_pending *pend,
    const struct rn_AddPartitionsToTxnRequest *req, struct rn_arena *a,
    const int16_t *errs, int16_t err)
{
	struct rn_AddPartitionsToTxnResponse resp;
	int32_t i, j, k = 0;

	rn_AddPartitionsToTxnResponse_init(&resp);
	resp.results_count = req->topics_count;
	resp.results = rn_arena_alloc(a, sizeof(*resp.results) *
	    (size_t)(req->topics_count > 0 ? req->topics_count : 1));
	for (i = 0; resp.results != NULL && i < req->topics_count; i++) {
		struct rn_AddPartitionsToTxnResponse_AddPartitionsToTxnTopicResult
		    *o = &resp.results[i];

		o->name = req->topics[i].name;
		o->results_count = req->topics[i].partitions_count;
		o->results = rn_arena_alloc(a, sizeof(*o->results) *
		    (size_t)(o->results_count > 0 ? o->results_count : 1));
		if (o->results == NULL) {
			resp.results = NULL;
			break;
		}
		for (j = 0; j < o->results_count; j++, k++) {
			o->results[j].partition_index =
			    req->topics[i].partitions[j];
			o->results[j].partition_error_code = errs != NULL ?
			    errs[k] : err;
		}
	}
	if (resp.results == NULL)
		resp.results_count = 0;
	(void)co_reply(co, pend, &resp);
}

/* An answer that is an error code and nothing else (or InitProducerId's). */
static void
reply_error(struct co *co, const struct co_pending *pend, int16_t err,
    const struct co_txn *t)
{
	switch (pend->key) {
	case RN_KAPI_INIT_PRODUCER_ID: {
		struct rn_InitProducerIdResponse r;

		rn_InitProducerIdResponse_init(&r);
		r.error_code = err;
		if (err == 0 && t != NULL) {
			r.producer_id = t->cur.pid;
			r.producer_epoch = t->cur.epoch;
		}
		(void)co_reply(co, pend, &r);
		break;
	}
	case RN_KAPI_ADD_OFFSETS_TO_TXN: {
		struct rn_AddOffsetsToTxnResponse r;

		rn_AddOffsetsToTxnResponse_init(&r);
		r.error_code = err;
		(void)co_reply(co, pend, &r);
		break;
	}
	case RN_KAPI_END_TXN: {
		struct rn_EndTxnResponse r;

		rn_EndTxnResponse_init(&r);
		r.error_code = err;
		(void)co_reply(co, pend, &r);
		break;
	}
	default:
		break;
	}
}

/* Markers go out for every partition of a prepared transaction. */
static void
markers_start(struct co *co, struct co_txn *t)
{
	int i;

	for (i = 0; i < t->n_tps; i++) {
		t->tps[i].acked = false;
		t->tps[i].inflight = false;
	}
	if (!t->marking) {
		t->marking = true;
		t->next_marking = co->marking;
		co->marking = t;
	}
}

void
co_txn_state_settled(struct co *co, struct co_write *wr, int16_t kerr)
{
	struct co_txn *t = wr->txn;

	t->writing = false;
	if (kerr != 0) {
		t->nxt = t->cur;
		tps_truncate(t, t->n_tps_stored);
		t->fencing = false;
	} else {
		t->cur = t->nxt;
		t->n_tps_stored = t->n_tps;
		t->fencing = false;
		if (t->cur.state == RN_TXN_PREPARE_COMMIT ||
		    t->cur.state == RN_TXN_PREPARE_ABORT)
			markers_start(co, t);
		else if (t->cur.state == RN_TXN_COMPLETE_COMMIT ||
		    t->cur.state == RN_TXN_COMPLETE_ABORT) {
			tps_truncate(t, 0);
			t->n_tps_stored = 0;
		}
	}
	if (wr->pend.active) {
		if (wr->pend.key == RN_KAPI_ADD_PARTITIONS_TO_TXN &&
		    wr->body != NULL) {
			struct rn_AddPartitionsToTxnRequest req;
			struct rn_kreader kr;

			rn_kreader_init(&kr, wr->body, wr->body_len);
			if (rn_AddPartitionsToTxnRequest_decode(&kr,
			    wr->pend.ver, &wr->arena, &req) >= 0)
				reply_add_partitions(co, &wr->pend, &req,
				    &wr->arena, NULL, kerr);
		} else
			reply_error(co, &wr->pend, kerr, t);
	}
	write_free(wr);
}

void
co_txn_markers_done(struct co *co, struct co_txn *t)
{
	if (t->writing)
		return;
	t->nxt = t->cur;
	t->nxt.state = t->cur.state == RN_TXN_PREPARE_COMMIT ?
	    RN_TXN_COMPLETE_COMMIT : RN_TXN_COMPLETE_ABORT;
	t->nxt.update_ms = rn_wallclock_ms();
	/* stored, it leaves the marking list; if not, tried again */
	if (txn_store(co, t, NULL) == 0)
		marking_remove(co, t);
}

/* End an ongoing transaction with an abort under a bumped epoch. */
static int16_t
txn_fence_abort(struct co *co, struct co_txn *t)
{
	t->nxt = t->cur;
	t->nxt.epoch = (int16_t)(t->cur.epoch + 1);
	t->nxt.state = RN_TXN_PREPARE_ABORT;
	t->nxt.update_ms = rn_wallclock_ms();
	t->fencing = true;
	return txn_store(co, t, NULL);
}

/* ---- the APIs ------------------------------------------------------- */

/* The checks every producer request shares; the transaction in *tp. */
static int16_t
txn_check(struct co *co, struct co_req *r, struct rn_kstr id, int64_t pid,
    int16_t epoch, int16_t fenced_since, struct co_txn **tp)
{
	struct co_txn *t;
	int16_t err;

	*tp = NULL;
	if (id.len <= 0)
		return RN_KERR_INVALID_REQUEST;
	if (!co_authorized(co, r, RN_ACL_OP_WRITE, RN_ACL_RES_TRANSACTIONAL_ID,
	    id))
		return RN_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	if ((err = txn_part_error(co, txn_partition_of(co, id))) != 0)
		return err;
	if ((t = co_txn_find(co, id)) == NULL || t->cur.pid != pid)
		return RN_KERR_INVALID_PRODUCER_ID_MAPPING;
	if (t->cur.epoch != epoch)
		return fenced(r, fenced_since);
	*tp = t;
	if (t->writing || t->cur.state == RN_TXN_PREPARE_COMMIT ||
	    t->cur.state == RN_TXN_PREPARE_ABORT)
		return RN_KERR_CONCURRENT_TRANSACTIONS;
	return 0;
}

static int16_t
init_producer(struct co *co, struct co_req *r, struct co_txn **tp)
{
	const struct rn_InitProducerIdRequest *req = r->req;
	struct rn_kstr id = req->transactional_id;
	struct co_txn *t;
	int32_t p;
	int16_t err;
	int64_t now = rn_wallclock_ms();

	*tp = NULL;
	if (id.len <= 0)
		return RN_KERR_INVALID_REQUEST;
	if (req->transaction_timeout_ms <= 0 ||
	    req->transaction_timeout_ms > co->ts.max_timeout_ms)
		return RN_KERR_INVALID_TRANSACTION_TIMEOUT;
	p = txn_partition_of(co, id);
	if ((err = txn_part_error(co, p)) != 0)
		return err;
	if ((t = co_txn_find(co, id)) == NULL) {
		if ((t = txn_create(co, id, p)) == NULL)
			return RN_KERR_COORDINATOR_NOT_AVAILABLE;
		t->nxt.pid = rn_idem_new_producer_id(
		    &co->w->env->shm->hdr->producer_id_counter,
		    co->cfg->node_id);
		t->nxt.epoch = 0;
	} else {
		if (t->writing || t->cur.state == RN_TXN_PREPARE_COMMIT ||
		    t->cur.state == RN_TXN_PREPARE_ABORT)
			return RN_KERR_CONCURRENT_TRANSACTIONS;
		/* KIP-360: a producer recovering says who it was */
		if (r->pend.ver >= 3 && req->producer_id >= 0 &&
		    (req->producer_id != t->cur.pid ||
		    req->producer_epoch != t->cur.epoch))
			return fenced(r, 4);
		if (t->cur.state == RN_TXN_ONGOING) {
			/* fence the holder: abort first, the client retries */
			rn_log_about(LOG_INFO, rn_subj_topic(NULL),
			    "transactional id %s: a new producer fences "
			    "epoch %d; aborting its open transaction", t->id,
			    t->cur.epoch);
			if ((err = txn_fence_abort(co, t)) != 0)
				return err;
			return RN_KERR_CONCURRENT_TRANSACTIONS;
		}
		t->nxt = t->cur;
		if (t->cur.epoch >= INT16_MAX - 1 || t->cur.pid < 0) {
			/* the epoch is spent: a new id, as Kafka does */
			t->nxt.pid = rn_idem_new_producer_id(
			    &co->w->env->shm->hdr->producer_id_counter,
			    co->cfg->node_id);
			t->nxt.epoch = 0;
		} else
			t->nxt.epoch = (int16_t)(t->cur.epoch + 1);
	}
	t->nxt.timeout_ms = req->transaction_timeout_ms;
	t->nxt.state = RN_TXN_EMPTY;
	t->nxt.start_ms = -1;
	t->nxt.update_ms = now;
	*tp = t;
	return txn_store(co, t, r);
}

int
co_init_producer_id(struct co *co, struct co_req *r)
{
	struct co_txn *t;
	int16_t err = init_producer(co, r, &t);

	if (err != 0) {
		/* a transactional id created for this and never stored */
		if (t != NULL && t->cur.pid < 0 && !t->writing)
			txn_free(co, t);
		reply_error(co, &r->pend, err, NULL);
	}
	return 0;
}

/* Add partitions to the open (or a new) transaction and store it. */
static int16_t
txn_begin(struct co *co, struct co_req *r, struct co_txn *t)
{
	int64_t now = rn_wallclock_ms();

	t->nxt = t->cur;
	if (t->cur.state != RN_TXN_ONGOING)
		t->nxt.start_ms = now;
	t->nxt.state = RN_TXN_ONGOING;
	t->nxt.update_ms = now;
	return txn_store(co, t, r);
}

int32_t
co_txn_partition_of(struct co *co, struct rn_kstr id)
{
	return txn_partition_of(co, id);
}

int16_t
co_txn_part_error(struct co *co, int32_t p)
{
	return txn_part_error(co, p);
}

/*
 * v4, the brokers' form: several transactions, each verified (nothing
 * changes) or added. An addition not stored yet is answered
 * CONCURRENT_TRANSACTIONS while it is written; the sender asks again and
 * then finds it (one reply a request, not one a transaction's write).
 */
static int
add_partitions_v4(struct co *co, struct co_req *r)
{
	const struct rn_AddPartitionsToTxnRequest *req = r->req;
	struct rn_AddPartitionsToTxnResponse resp;
	int32_t i, j, k;

	rn_AddPartitionsToTxnResponse_init(&resp);
	if (!co_authorized_cluster(co, r, RN_ACL_OP_CLUSTER_ACTION)) {
		resp.error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		return co_reply(co, &r->pend, &resp) < 0 ? -EIO : 0;
	}
	resp.results_by_transaction_count = req->transactions_count;
	resp.results_by_transaction = rn_arena_alloc(&co->arena,
	    sizeof(*resp.results_by_transaction) *
	    (size_t)(req->transactions_count > 0 ? req->transactions_count :
	    1));
	if (resp.results_by_transaction == NULL)
		return -ENOMEM;
	for (i = 0; i < req->transactions_count; i++) {
		const struct rn_AddPartitionsToTxnRequest_AddPartitionsToTxnTransaction
		    *tx = &req->transactions[i];
		struct rn_AddPartitionsToTxnResponse_AddPartitionsToTxnResult *o =
		    &resp.results_by_transaction[i];
		struct co_txn *t;
		int16_t err;

		co_txn_verify_v4(co, tx, o, &co->arena);
		if (tx->verify_only)
			continue;
		/* an addition: as v3 would check it, then stored */
		err = txn_check(co, r, tx->transactional_id, tx->producer_id,
		    tx->producer_epoch, 2, &t);
		for (j = 0; err == 0 && j < tx->topics_count; j++) {
			const struct rn_mdv_topic *mt = rn_mdview_topic(
			    &co->view, tx->topics[j].name.ptr,
			    tx->topics[j].name.len > 0 ?
			    (size_t)tx->topics[j].name.len : 0);

			for (k = 0; k < tx->topics[j].partitions_count; k++)
				if (mt == NULL || tx->topics[j].partitions[k] <
				    0 || tx->topics[j].partitions[k] >=
				    mt->n_parts)
					err = RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		if (err == 0) {
			bool all = t->cur.state == RN_TXN_ONGOING;

			for (j = 0; j < tx->topics_count; j++)
				for (k = 0; k < tx->topics[j].partitions_count;
				    k++) {
					all = all && tp_has(t,
					    tx->topics[j].name,
					    tx->topics[j].partitions[k]);
					tp_add(t, tx->topics[j].name,
					    tx->topics[j].partitions[k]);
				}
			if (all)
				continue;	/* verified as present above */
			if (t->n_tps > CO_MAX_TXN_PARTS) {
				tps_truncate(t, t->n_tps_stored);
				err = RN_KERR_INVALID_REQUEST;
			} else if ((err = txn_begin(co, NULL, t)) == 0)
				err = RN_KERR_CONCURRENT_TRANSACTIONS;
		}
		for (j = 0; j < o->topic_results_count; j++)
			for (k = 0; k < o->topic_results[j].
			    results_by_partition_count; k++)
				o->topic_results[j].results_by_partition[k].
				    partition_error_code = err;
	}
	return co_reply(co, &r->pend, &resp) < 0 ? -EIO : 0;
}

int
co_add_partitions_to_txn(struct co *co, struct co_req *r)
{
	const struct rn_AddPartitionsToTxnRequest *req = r->req;
	struct co_txn *t;
	int16_t err, *errs;
	int32_t i, j, k = 0, total = 0, added = 0;
	bool bad = false;

	if (r->pend.ver >= 4)
		return add_partitions_v4(co, r);

	for (i = 0; i < req->topics_count; i++)
		total += req->topics[i].partitions_count;
	errs = rn_arena_alloc(&co->arena, sizeof(*errs) * (size_t)(total + 1));
	if (errs == NULL)
		return -ENOMEM;
	err = txn_check(co, r, req->transactional_id, req->producer_id,
	    req->producer_epoch, 2, &t);
	if (err != 0) {
		reply_add_partitions(co, &r->pend, req, &co->arena, NULL, err);
		return 0;
	}
	/* every partition must exist and be writable, or none is added */
	for (i = 0; i < req->topics_count; i++) {
		const struct rn_mdv_topic *mt = rn_mdview_topic(&co->view,
		    req->topics[i].name.ptr, req->topics[i].name.len > 0 ?
		    (size_t)req->topics[i].name.len : 0);
		bool ok = co_authorized(co, r, RN_ACL_OP_WRITE,
		    RN_ACL_RES_TOPIC, req->topics[i].name);

		for (j = 0; j < req->topics[i].partitions_count; j++, k++) {
			int32_t p = req->topics[i].partitions[j];

			errs[k] = !ok ? RN_KERR_TOPIC_AUTHORIZATION_FAILED :
			    mt == NULL || p < 0 || p >= mt->n_parts ?
			    RN_KERR_UNKNOWN_TOPIC_OR_PARTITION : 0;
			if (errs[k] != 0)
				bad = true;
			else if (!tp_has(t, req->topics[i].name, p))
				added++;
		}
	}
	if (!bad && t->n_tps + added > CO_MAX_TXN_PARTS) {
		rn_log_about(LOG_WARNING, rn_subj_topic(NULL),
		    "transactional id %s: %d partitions would pass the %d a "
		    "transaction takes", t->id, t->n_tps + added,
		    CO_MAX_TXN_PARTS);
		reply_add_partitions(co, &r->pend, req, &co->arena, NULL,
		    RN_KERR_INVALID_REQUEST);
		return 0;
	}
	if (bad) {
		for (k = 0; k < total; k++)
			if (errs[k] == 0)
				errs[k] = RN_KERR_OPERATION_NOT_ATTEMPTED;
		reply_add_partitions(co, &r->pend, req, &co->arena, errs, 0);
		return 0;
	}
	if (added == 0 && t->cur.state == RN_TXN_ONGOING) {
		reply_add_partitions(co, &r->pend, req, &co->arena, NULL, 0);
		return 0;
	}
	for (i = 0; i < req->topics_count; i++)
		for (j = 0; j < req->topics[i].partitions_count; j++)
			tp_add(t, req->topics[i].name,
			    req->topics[i].partitions[j]);
	if ((err = txn_begin(co, r, t)) != 0)
		reply_add_partitions(co, &r->pend, req, &co->arena, NULL, err);
	return 0;
}

int
co_add_offsets_to_txn(struct co *co, struct co_req *r)
{
	const struct rn_AddOffsetsToTxnRequest *req = r->req;
	struct co_txn *t;
	int16_t err;
	int32_t gp;

	err = txn_check(co, r, req->transactional_id, req->producer_id,
	    req->producer_epoch, 2, &t);
	if (err == 0 && !co_authorized(co, r, RN_ACL_OP_READ, RN_ACL_RES_GROUP,
	    req->group_id))
		err = RN_KERR_GROUP_AUTHORIZATION_FAILED;
	if (err == 0 && req->group_id.len <= 0)
		err = RN_KERR_INVALID_GROUP_ID;
	if (err == 0 && (gp = co_partition_of(co, req->group_id)) < 0)
		err = RN_KERR_COORDINATOR_NOT_AVAILABLE;
	if (err == 0) {
		struct rn_kstr topic = co_ks(RN_OFFSETS_TOPIC);

		if (tp_has(t, topic, gp) && t->cur.state == RN_TXN_ONGOING) {
			reply_error(co, &r->pend, 0, t);
			return 0;
		}
		if (t->n_tps + 1 > CO_MAX_TXN_PARTS)
			err = RN_KERR_INVALID_REQUEST;
		else {
			tp_add(t, topic, gp);
			err = txn_begin(co, r, t);
		}
	}
	if (err != 0)
		reply_error(co, &r->pend, err, t);
	return 0;
}

int
co_end_txn(struct co *co, struct co_req *r)
{
	const struct rn_EndTxnRequest *req = r->req;
	bool commit = req->committed;
	struct co_txn *t;
	int16_t err;

	/* While the previous end's markers go out (Prepare*), either end
	 * is CONCURRENT_TRANSACTIONS, as Kafka answers it (its pending
	 * transition is checked before the state): librdkafka sends
	 * EndTxn(abort) right after a commit when its AddPartitionsToTxn met
	 * those markers, and INVALID_TXN_STATE would be fatal to it. */
	err = txn_check(co, r, req->transactional_id, req->producer_id,
	    req->producer_epoch, 2, &t);
	if (err == 0) {
		switch (t->cur.state) {
		case RN_TXN_ONGOING:
			t->nxt = t->cur;
			t->nxt.state = commit ? RN_TXN_PREPARE_COMMIT :
			    RN_TXN_PREPARE_ABORT;
			t->nxt.update_ms = rn_wallclock_ms();
			err = txn_store(co, t, r);
			if (err == 0)
				return 0;
			break;
		case RN_TXN_COMPLETE_COMMIT:
			err = commit ? 0 : RN_KERR_INVALID_TXN_STATE;
			break;
		case RN_TXN_COMPLETE_ABORT:
			err = !commit ? 0 : RN_KERR_INVALID_TXN_STATE;
			break;
		default:
			err = RN_KERR_INVALID_TXN_STATE;
		}
	}
	reply_error(co, &r->pend, err, t);
	return 0;
}

static const char *
state_name(const struct co_txn *t)
{
	if (t->writing && t->fencing)
		return rn_txn_status_name(RN_TXN_PREPARE_EPOCH_FENCE);
	return rn_txn_status_name(t->cur.state);
}

int
co_list_transactions(struct co *co, struct co_req *r)
{
	const struct rn_ListTransactionsRequest *req = r->req;
	struct rn_ListTransactionsResponse resp;
	int64_t now = rn_wallclock_ms();
	unsigned b, n = 0;
	struct co_txn *t;
	int32_t i, p;
	bool want_state[8];

	rn_ListTransactionsResponse_init(&resp);
	memset(want_state, 0, sizeof(want_state));
	resp.unknown_state_filters = rn_arena_alloc(&co->arena,
	    sizeof(struct rn_kstr) * (size_t)(req->state_filters_count + 1));
	resp.transaction_states = rn_arena_alloc(&co->arena,
	    sizeof(*resp.transaction_states) * (size_t)(co->n_txns + 1));
	if (resp.unknown_state_filters == NULL ||
	    resp.transaction_states == NULL)
		return -ENOMEM;
	for (i = 0; i < req->state_filters_count; i++) {
		int s = rn_txn_status_parse(req->state_filters[i]);

		if (s < 0)
			resp.unknown_state_filters[
			    resp.unknown_state_filters_count++] =
			    req->state_filters[i];
		else
			want_state[s] = true;
	}
	for (p = 0; p < co->txn_n_parts && p < CO_MAX_PARTS; p++)
		if (co->txn_part[p].state == CP_LOADING)
			resp.error_code = RN_KERR_COORDINATOR_LOAD_IN_PROGRESS;
	for (b = 0; b < CO_BUCKETS && resp.error_code == 0; b++)
		for (t = co->txn_buckets[b]; t != NULL; t = t->next) {
			struct rn_ListTransactionsResponse_TransactionState *o;
			bool pid_ok = req->producer_id_filters_count == 0;

			if (t->cur.pid < 0)
				continue;
			if (req->state_filters_count > 0 &&
			    !want_state[t->cur.state & 7])
				continue;
			for (i = 0; i < req->producer_id_filters_count; i++)
				if (req->producer_id_filters[i] == t->cur.pid)
					pid_ok = true;
			if (!pid_ok)
				continue;
			if (r->pend.ver >= 1 && req->duration_filter >= 0 &&
			    (t->cur.start_ms < 0 || now - t->cur.start_ms <
			    req->duration_filter))
				continue;
			if (co->authz.on && !co_authorized(co, r,
			    RN_ACL_OP_DESCRIBE, RN_ACL_RES_TRANSACTIONAL_ID,
			    co_ks(t->id)))
				continue;
			o = &resp.transaction_states[n++];
			o->transactional_id = co_ks(t->id);
			o->producer_id = t->cur.pid;
			o->transaction_state = co_ks(state_name(t));
		}
	resp.transaction_states_count = (int32_t)n;
	return co_reply(co, &r->pend, &resp);
}

int
co_describe_transactions(struct co *co, struct co_req *r)
{
	const struct rn_DescribeTransactionsRequest *req = r->req;
	struct rn_DescribeTransactionsResponse resp;
	int32_t i, j, k;

	rn_DescribeTransactionsResponse_init(&resp);
	resp.transaction_states_count = req->transactional_ids_count;
	resp.transaction_states = rn_arena_alloc(&co->arena,
	    sizeof(*resp.transaction_states) *
	    (size_t)(req->transactional_ids_count + 1));
	if (resp.transaction_states == NULL)
		return -ENOMEM;
	for (i = 0; i < req->transactional_ids_count; i++) {
		struct rn_DescribeTransactionsResponse_TransactionState *o =
		    &resp.transaction_states[i];
		struct rn_kstr id = req->transactional_ids[i];
		struct co_txn *t;

		memset(o, 0, sizeof(*o));
		o->transactional_id = id;
		o->transaction_state = co_ks("");
		o->producer_id = -1;
		o->producer_epoch = -1;
		o->transaction_start_time_ms = -1;
		if (!co_authorized(co, r, RN_ACL_OP_DESCRIBE,
		    RN_ACL_RES_TRANSACTIONAL_ID, id)) {
			o->error_code =
			    RN_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
			continue;
		}
		if ((o->error_code = txn_part_error(co,
		    txn_partition_of(co, id))) != 0)
			continue;
		if ((t = co_txn_find(co, id)) == NULL || t->cur.pid < 0) {
			o->error_code = RN_KERR_TRANSACTIONAL_ID_NOT_FOUND;
			continue;
		}
		o->transaction_state = co_ks(state_name(t));
		o->transaction_timeout_ms = t->cur.timeout_ms;
		o->transaction_start_time_ms = t->cur.start_ms;
		o->producer_id = t->cur.pid;
		o->producer_epoch = t->cur.epoch;
		/* partitions grouped by topic, in the order they came */
		o->topics = rn_arena_alloc(&co->arena, sizeof(*o->topics) *
		    (size_t)(t->n_tps_stored + 1));
		if (o->topics == NULL)
			return -ENOMEM;
		for (j = 0; j < t->n_tps_stored; j++) {
			struct rn_DescribeTransactionsResponse_TopicData *td =
			    NULL;

			for (k = 0; k < o->topics_count; k++)
				if (co_kstr_is(o->topics[k].topic,
				    t->tps[j].topic))
					td = &o->topics[k];
			if (td == NULL) {
				td = &o->topics[o->topics_count++];
				td->topic = co_ks(t->tps[j].topic);
				td->partitions_count = 0;
				td->partitions = rn_arena_alloc(&co->arena,
				    sizeof(int32_t) * (size_t)t->n_tps_stored);
				if (td->partitions == NULL)
					return -ENOMEM;
			}
			td->partitions[td->partitions_count++] =
			    t->tps[j].partition;
		}
	}
	return co_reply(co, &r->pend, &resp);
}

/* ---- timers --------------------------------------------------------- */

void
co_txn_tick(struct co *co)
{
	int64_t now = rn_wallclock_ms();
	bool expire = co->now >= co->next_txn_expire_ms;
	struct co_txn *t, *nt;
	unsigned b;

	if (co->now < co->next_txn_abort_ms && !expire)
		return;
	co->next_txn_abort_ms = co->now + co->ts.abort_interval_ms;
	if (expire)
		co->next_txn_expire_ms = co->now + co->ts.remove_interval_ms;
	for (b = 0; b < CO_BUCKETS; b++)
		for (t = co->txn_buckets[b]; t != NULL; t = nt) {
			nt = t->next;
			if (t->writing ||
			    txn_part_error(co, t->partition) != 0)
				continue;
			if (t->cur.state == RN_TXN_ONGOING &&
			    t->cur.start_ms >= 0 &&
			    now > t->cur.start_ms + t->cur.timeout_ms) {
				rn_log_about(LOG_INFO, rn_subj_topic(NULL),
				    "transactional id %s: open %lld ms, past "
				    "its timeout of %d ms: aborting it",
				    t->id, (long long)(now - t->cur.start_ms),
				    t->cur.timeout_ms);
				(void)txn_fence_abort(co, t);
				continue;
			}
			if (expire && (t->cur.state == RN_TXN_EMPTY ||
			    t->cur.state == RN_TXN_COMPLETE_COMMIT ||
			    t->cur.state == RN_TXN_COMPLETE_ABORT) &&
			    now > t->cur.update_ms + co->ts.id_expiration_ms) {
				/* transactional.id.expiration.ms */
				if (co_txn_log_tombstone(co, t) == 0)
					txn_free(co, t);
			}
		}
}

/* ---- loading and unloading ------------------------------------------ */

void co_txn_load_record(struct co *co, int32_t partition, struct rn_kstr id,
    const struct rn_txn_value *v);

void
co_txn_load_record(struct co *co, int32_t partition, struct rn_kstr id,
    const struct rn_txn_value *v)
{
	struct co_txn *t = co_txn_find(co, id);
	int32_t i, j;

	if (v == NULL) {
		if (t != NULL)
			txn_free(co, t);
		return;
	}
	if (t == NULL && (t = txn_create(co, id, partition)) == NULL)
		return;
	t->partition = partition;
	t->cur.pid = v->producer_id;
	t->cur.epoch = v->producer_epoch;
	t->cur.timeout_ms = v->timeout_ms;
	t->cur.state = v->status >= 0 && v->status <= 7 ?
	    (enum rn_txn_status)v->status : RN_TXN_EMPTY;
	/* a fence cut short ends as the abort it was heading for */
	if (t->cur.state == RN_TXN_PREPARE_EPOCH_FENCE)
		t->cur.state = RN_TXN_PREPARE_ABORT;
	t->cur.start_ms = v->start_ms;
	t->cur.update_ms = v->last_update_ms;
	tps_truncate(t, 0);
	for (i = 0; i < v->n_topics; i++)
		for (j = 0; j < v->topics[i].n_parts &&
		    t->n_tps < CO_MAX_TXN_PARTS; j++)
			tp_add(t, v->topics[i].topic, v->topics[i].parts[j]);
	t->n_tps_stored = t->n_tps;
	t->nxt = t->cur;
}

static void
txn_unload(struct co *co, int32_t p)
{
	struct co_txn *t, *nt;
	unsigned b;

	if (co->txn_part[p].state == CP_NONE)
		return;
	rn_log_about(LOG_INFO, rn_subj_part(RN_TXN_TOPIC, p), "%s-%d: no "
	    "longer led here: unloading its transactions", RN_TXN_TOPIC, p);
	co_writes_fail(co, true, p);
	for (b = 0; b < CO_BUCKETS; b++)
		for (t = co->txn_buckets[b]; t != NULL; t = nt) {
			nt = t->next;
			if (t->partition == p)
				txn_free(co, t);
		}
	co->txn_part[p].state = CP_NONE;
}

void
co_txn_follow_image(struct co *co)
{
	co_follow_topic(co, RN_TXN_TOPIC, co->txn_topic_id, &co->txn_n_parts,
	    co->txn_part, txn_unload);
}

/* A partition loaded: prepared transactions finish their markers. */
static void
txn_loaded(struct co *co, int32_t p)
{
	struct co_txn *t;
	unsigned b, n = 0;

	for (b = 0; b < CO_BUCKETS; b++)
		for (t = co->txn_buckets[b]; t != NULL; t = t->next)
			if (t->partition == p && (t->cur.state ==
			    RN_TXN_PREPARE_COMMIT || t->cur.state ==
			    RN_TXN_PREPARE_ABORT)) {
				markers_start(co, t);
				n++;
			}
	if (n > 0)
		rn_log_about(LOG_INFO, rn_subj_part(RN_TXN_TOPIC, p),
		    "%s-%d: %u prepared transactions to complete",
		    RN_TXN_TOPIC, p, n);
	/* ongoing ones are aborted by the timer once past their timeout */
	co->next_txn_abort_ms = 0;
}

bool
co_txn_load(struct co *co, int64_t until)
{
	int32_t p;

	for (p = 0; p < co->txn_n_parts && p < CO_MAX_PARTS; p++) {
		if (co->txn_part[p].state != CP_LOADING)
			continue;
		while (!co_txn_log_load_step(co, p))
			if (rn_now_ms() >= until)
				return true;
		if (co->txn_part[p].state == CP_LOADED)
			txn_loaded(co, p);
	}
	return false;
}
