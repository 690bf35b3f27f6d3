/*
 * KIP-890 part 1 at the transaction coordinator: is a partition in a
 * transaction's partition set under this producer id and epoch? Asked by
 * this node's network workers over the ring before they take a
 * transactional write (txn_verify.c there), and by other brokers with
 * AddPartitionsToTxn v4 VerifyOnly. Nothing changes state here.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "ipc/ringq.h"
#include "protocol/kerrors.h"
#include "workers/coordinator/coord_int.h"

/* Only partitions whose addition is stored count: an addition being
 * written is not yet answered to the producer. */
static bool
tp_stored(const struct co_txn *t, struct rn_kstr topic, int32_t p)
{
	int i;

	for (i = 0; i < t->n_tps_stored && i < t->n_tps; i++)
		if (t->tps[i].partition == p && co_kstr_is(topic, t->tps[i].topic))
			return true;
	return false;
}

/* The error every partition of the transaction gets, or 0: look at each. */
int16_t
co_txn_verify_txn(struct co *co, struct rn_kstr id, int64_t pid,
    int16_t epoch, struct co_txn **tp)
{
	struct co_txn *t;
	int16_t err;

	*tp = NULL;
	if (id.len <= 0)
		return RN_KERR_INVALID_REQUEST;
	if ((err = co_txn_part_error(co, co_txn_partition_of(co, id))) != 0)
		return err;
	if ((t = co_txn_find(co, id)) == NULL || t->cur.pid != pid)
		return RN_KERR_INVALID_PRODUCER_ID_MAPPING;
	if (t->cur.epoch != epoch)
		return RN_KERR_PRODUCER_FENCED;
	if (t->cur.state == RN_TXN_PREPARE_COMMIT ||
	    t->cur.state == RN_TXN_PREPARE_ABORT)
		return RN_KERR_CONCURRENT_TRANSACTIONS;
	*tp = t;
	return 0;
}

int16_t
co_txn_verify_part(const struct co_txn *t, struct rn_kstr topic, int32_t p)
{
	/* v4's answer; v5 would say TRANSACTION_ABORTABLE */
	return t != NULL && t->cur.state == RN_TXN_ONGOING &&
	    tp_stored(t, topic, p) ? RN_KERR_NONE : RN_KERR_INVALID_TXN_STATE;
}

void
co_txn_verify_answer(struct co *co, unsigned slot, uint64_t req,
    const int16_t *errs, uint32_t n)
{
	const struct rn_worker_env *env = co->w->env;
	struct rn_ring *ring = rn_shm_ring_from_coord(env->shm, slot);
	msgpack_sbuffer sb;
	msgpack_packer pk;
	uint32_t i;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "req");
	msgpack_pack_uint64(&pk, req);
	rn_mp_pack_str(&pk, "verify");
	msgpack_pack_array(&pk, n);
	for (i = 0; i < n; i++)
		msgpack_pack_int16(&pk, errs[i]);
	if (rn_ringq_send(&co->out[slot], ring, RN_IPC_GROUP_RESPONSE,
	    sb.data, sb.size, atomic_load(&rn_shm_worker(env->shm,
	    slot)->pid)) == 0)
		(void)rn_ring_notify(ring, env->efd[slot]);
	msgpack_sbuffer_destroy(&sb);
}

void
co_txn_verify_answer_all(struct co *co, unsigned slot, uint64_t req,
    int32_t n, int16_t err)
{
	int16_t *errs;
	int32_t i;

	rn_arena_reset(&co->arena);
	rn_arena_set_limit(&co->arena, 4096 + (size_t)(n > 0 ? n : 0) * 32);
	if ((errs = rn_arena_alloc(&co->arena, sizeof(*errs) *
	    (size_t)(n > 0 ? n : 1))) == NULL) {
		co_txn_verify_answer(co, slot, req, NULL, 0);
		return;
	}
	for (i = 0; i < n; i++)
		errs[i] = err;
	co_txn_verify_answer(co, slot, req, errs, (uint32_t)n);
}

/*
 * A network worker asks: {"req", "verify": transactional id, "pid",
 * "epoch", "parts": [topic, partition, ...]}; the answer is one error
 * code a partition, in order.
 */
void
co_txn_verify_ring(struct co *co, unsigned slot, const msgpack_object *m)
{
	const msgpack_object *id = rn_mp_get(m, "verify");
	const msgpack_object *parts = rn_mp_get(m, "parts");
	uint64_t req = (uint64_t)rn_mp_get_int(m, "req", 0);
	struct rn_kstr tid = { NULL, -1 };
	struct co_txn *t = NULL;
	struct rn_kstr *topics;
	int16_t err, *errs;
	int32_t *pnums;
	uint32_t i, n;

	if (id == NULL || id->type != MSGPACK_OBJECT_STR || parts == NULL ||
	    parts->type != MSGPACK_OBJECT_ARRAY || parts->via.array.size % 2 ||
	    parts->via.array.size > 2 * 100000) {
		log_warnx("network worker slot %u: a malformed verification",
		    slot);
		co_txn_verify_answer(co, slot, req, NULL, 0);
		return;
	}
	n = parts->via.array.size / 2;
	rn_arena_reset(&co->arena);
	/* its own bound: the arena's is set per forwarded request */
	rn_arena_set_limit(&co->arena, 4096 + (size_t)n * 32);
	if ((errs = rn_arena_alloc(&co->arena, sizeof(*errs) *
	    (size_t)(n ? n : 1))) == NULL || (topics = rn_arena_alloc(
	    &co->arena, sizeof(*topics) * (size_t)(n ? n : 1))) == NULL ||
	    (pnums = rn_arena_alloc(&co->arena, sizeof(*pnums) *
	    (size_t)(n ? n : 1))) == NULL) {
		co_txn_verify_answer(co, slot, req, NULL, 0);
		return;
	}
	tid.ptr = id->via.str.ptr;
	tid.len = (int32_t)id->via.str.size;
	err = co_txn_verify_txn(co, tid, rn_mp_get_int(m, "pid", -1),
	    (int16_t)rn_mp_get_int(m, "epoch", -1), &t);
	for (i = 0; i < n; i++) {
		const msgpack_object *to = &parts->via.array.ptr[2 * i];
		const msgpack_object *po = &parts->via.array.ptr[2 * i + 1];

		topics[i].ptr = to->type == MSGPACK_OBJECT_STR ?
		    to->via.str.ptr : "";
		topics[i].len = to->type == MSGPACK_OBJECT_STR ?
		    (int32_t)to->via.str.size : 0;
		pnums[i] = po->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
		    po->via.u64 <= INT32_MAX ? (int32_t)po->via.u64 : -1;
		errs[i] = err != 0 ? err : co_txn_verify_part(t, topics[i],
		    pnums[i]);
	}
	if (err == RN_KERR_NOT_COORDINATOR) {
		/* another node coordinates it: asked there with v4 */
		co_txn_verify_remote(co, slot, req, tid,
		    rn_mp_get_int(m, "pid", -1),
		    (int16_t)rn_mp_get_int(m, "epoch", -1), (int32_t)n, topics,
		    pnums);
		return;
	}
	co_txn_verify_answer(co, slot, req, errs, n);
}

/* AddPartitionsToTxn v4 VerifyOnly, one transaction's answer. */
void
co_txn_verify_v4(struct co *co,
    const struct rn_AddPartitionsToTxnRequest_AddPartitionsToTxnTransaction *tx,
    struct rn_AddPartitionsToTxnResponse_AddPartitionsToTxnResult *o,
    struct rn_arena *a)
{
	struct co_txn *t;
	int16_t err = co_txn_verify_txn(co, tx->transactional_id,
	    tx->producer_id, tx->producer_epoch, &t);
	int32_t i, j;

	o->transactional_id = tx->transactional_id;
	o->topic_results_count = tx->topics_count;
	o->topic_results = rn_arena_alloc(a, sizeof(*o->topic_results) *
	    (size_t)(tx->topics_count > 0 ? tx->topics_count : 1));
	if (o->topic_results == NULL) {
		o->topic_results_count = 0;
		return;
	}
	for (i = 0; i < tx->topics_count; i++) {
		struct rn_AddPartitionsToTxnResponse_AddPartitionsToTxnTxnTopicResult
		    *tr = &o->topic_results[i];
		const struct rn_AddPartitionsToTxnRequest_AddPartitionsToTxnTxnTopic
		    *tt = &tx->topics[i];

		tr->name = tt->name;
		tr->results_by_partition_count = tt->partitions_count;
		tr->results_by_partition = rn_arena_alloc(a,
		    sizeof(*tr->results_by_partition) *
		    (size_t)(tt->partitions_count > 0 ? tt->partitions_count :
		    1));
		if (tr->results_by_partition == NULL) {
			tr->results_by_partition_count = 0;
			continue;
		}
		for (j = 0; j < tt->partitions_count; j++) {
			tr->results_by_partition[j].partition_index =
			    tt->partitions[j];
			tr->results_by_partition[j].partition_error_code =
			    err != 0 ? err : co_txn_verify_part(t, tt->name,
			    tt->partitions[j]);
		}
	}
}
