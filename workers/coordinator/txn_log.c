/*
 * __transaction_state as the transaction coordinator uses it: a
 * transaction's next state appended as one record (TransactionLogKey,
 * TransactionLogValue) through the same path as the group records, and a
 * partition this node comes to lead read back, a bounded piece per call,
 * the last record of each transactional id winning (a tombstone removes
 * it).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/coordinator/coord_int.h"


/*
 * The partitions of the transaction grouped by topic, in the arena a
 * (one array of them all, each topic a run of it: linear in memory).
 */
static int
value_topics(struct rn_arena *a, const struct co_txn *txn, bool with_tps,
    struct rn_txn_value *v)
{
	int32_t *all;
	bool *done;
	int i, j, k = 0;

	v->topics = NULL;
	v->n_topics = 0;
	if (!with_tps || txn->n_tps == 0)
		return 0;
	v->topics = rn_arena_alloc(a, sizeof(*v->topics) * (size_t)txn->n_tps);
	all = rn_arena_alloc(a, sizeof(*all) * (size_t)txn->n_tps);
	done = rn_arena_alloc(a, sizeof(*done) * (size_t)txn->n_tps);
	if (v->topics == NULL || all == NULL || done == NULL)
		return -ENOMEM;
	memset(done, 0, sizeof(*done) * (size_t)txn->n_tps);
	for (i = 0; i < txn->n_tps; i++) {
		struct rn_txn_topic_parts *t;

		if (done[i])
			continue;
		t = &v->topics[v->n_topics++];
		t->topic = co_ks(txn->tps[i].topic);
		t->parts = all + k;
		t->n_parts = 0;
		for (j = i; j < txn->n_tps; j++)
			if (!done[j] && strcmp(txn->tps[j].topic,
			    txn->tps[i].topic) == 0) {
				done[j] = true;
				all[k++] = txn->tps[j].partition;
				t->n_parts++;
			}
	}
	return 0;
}

static int16_t
append(struct co *co, struct co_txn *txn, const uint8_t *key, size_t klen,
    const uint8_t *val, int32_t vlen, int64_t *end)
{
	struct rn_record_in rec;

	memset(&rec, 0, sizeof(rec));
	rec.key = key;
	rec.key_len = (int32_t)klen;
	rec.value = val;
	rec.value_len = vlen;
	rec.timestamp = rn_wallclock_ms();
	return co_log_append_to(co, true, txn->partition, &rec, 1, -1, -1, end);
}

int16_t
co_txn_log_write(struct co *co, struct co_txn *txn, int64_t *end)
{
	struct rn_kwriter kw;
	struct rn_txn_value v;
	struct rn_arena a;
	size_t klen;
	int16_t err;
	/* Complete and Empty states carry no partitions, as Kafka's */
	bool with_tps = txn->nxt.state == RN_TXN_ONGOING ||
	    txn->nxt.state == RN_TXN_PREPARE_COMMIT ||
	    txn->nxt.state == RN_TXN_PREPARE_ABORT;

	rn_arena_init(&a, 4096 + (size_t)txn->n_tps * (sizeof(*v.topics) + 8));
	memset(&v, 0, sizeof(v));
	v.producer_id = txn->nxt.pid;
	v.producer_epoch = txn->nxt.epoch;
	v.timeout_ms = txn->nxt.timeout_ms;
	v.status = (int8_t)txn->nxt.state;
	v.last_update_ms = txn->nxt.update_ms;
	v.start_ms = txn->nxt.start_ms;
	if (value_topics(&a, txn, with_tps, &v) != 0) {
		rn_arena_free(&a);
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	}
	rn_kwriter_init(&kw);
	rn_txn_key(&kw, co_ks(txn->id));
	klen = kw.len;
	rn_txn_value_write(&kw, &v);
	err = kw.err ? RN_KERR_UNKNOWN_SERVER_ERROR : append(co, txn, kw.buf,
	    klen, kw.buf + klen, (int32_t)(kw.len - klen), end);
	rn_kwriter_free(&kw);
	rn_arena_free(&a);
	return err;
}

int16_t
co_txn_log_tombstone(struct co *co, struct co_txn *txn)
{
	struct rn_kwriter kw;
	int64_t end;
	int16_t err;

	rn_kwriter_init(&kw);
	rn_txn_key(&kw, co_ks(txn->id));
	err = kw.err ? RN_KERR_UNKNOWN_SERVER_ERROR : append(co, txn, kw.buf,
	    kw.len, NULL, -1, &end);
	rn_kwriter_free(&kw);
	return err;
}

/* Declared in txn_coord.c: one record applied to the held transactions. */
void co_txn_load_record(struct co *co, int32_t partition, struct rn_kstr id,
    const struct rn_txn_value *v);

static void
load_record(struct co *co, int32_t partition, const struct rn_record_view *rv)
{
	struct rn_txn_value v;
	struct rn_kstr id;
	struct rn_arena a;

	if (rv->key == NULL || rn_txn_key_decode(rv->key, (size_t)rv->key_len,
	    &id) != 0 || id.len <= 0)
		return;
	if (rv->value == NULL) {
		co_txn_load_record(co, partition, id, NULL);
		return;
	}
	rn_arena_init(&a, 4 * (size_t)rv->value_len + 4096);
	if (rn_txn_value_decode(rv->value, (size_t)rv->value_len, &a, &v) == 0)
		co_txn_load_record(co, partition, id, &v);
	else
		rn_log_about(LOG_WARNING, rn_subj_part(RN_TXN_TOPIC, partition),
		    "%s-%d: undecodable transaction state at %lld",
		    RN_TXN_TOPIC, partition, (long long)rv->offset);
	rn_arena_free(&a);
}

static void
load_batches(struct co *co, int32_t partition, const uint8_t *buf,
    size_t len, int64_t *next)
{
	struct rn_batch_header h;
	struct rn_record_view rv;
	size_t off = 0, pos, size;

	while (len - off >= RN_BATCH_HEADER_SIZE) {
		rn_batch_parse_header(buf + off, &h);
		size = (size_t)h.batch_length + RN_BATCH_LOG_OVERHEAD;
		if (h.batch_length < 0 || size > len - off)
			break;
		if ((h.attributes & (RN_BATCH_ATTR_CONTROL |
		    RN_BATCH_ATTR_COMPRESSION_MASK)) == 0) {
			pos = 0;
			while (rn_batch_next_record(buf + off, size, &pos,
			    &rv) == 1)
				if (rv.offset >= *next)
					load_record(co, partition, &rv);
		}
		*next = rn_batch_last_offset(&h) + 1;
		off += size;
	}
}

bool
co_txn_log_load_step(struct co *co, int32_t partition)
{
	return co_load_step(co, true, partition, load_batches);
}
