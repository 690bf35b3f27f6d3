/* The idempotent-producer table: duplicates, order, epochs, eviction,
 * open transactions and their markers. */
#include "autoconf.h"

#include <string.h>

#include "protocol/kerrors.h"
#include "tests/lib/tap.h"
#include "workers/partition/idempotence.h"

static struct rn_batch_header
batch(int64_t pid, int16_t epoch, int32_t seq, int32_t count)
{
	struct rn_batch_header h;

	memset(&h, 0, sizeof(h));
	h.producer_id = pid;
	h.producer_epoch = epoch;
	h.base_sequence = seq;
	h.last_offset_delta = count - 1;
	h.record_count = count;
	return h;
}

int
main(void)
{
	static struct rn_idem_state s;
	struct rn_batch_header h;
	_Atomic int64_t counter = 0;
	int64_t dup = -1, a, b;
	int i;

	plan(36);
	h = batch(-1, -1, -1, 3);
	is_int(rn_idem_check(&s, &h, &dup), RN_IDEM_APPEND,
	    "a non-idempotent batch is always appended");
	h = batch(7, 0, 0, 3);
	is_int(rn_idem_check(&s, &h, &dup), RN_IDEM_APPEND, "a new producer at seq 0");
	rn_idem_record(&s, &h, 100, 1);
	is_int(rn_idem_check(&s, &h, &dup), RN_IDEM_DUPLICATE, "the same batch again is a duplicate");
	is_int(dup, 100, "answered with its original offset");
	h = batch(7, 0, 3, 2);
	is_int(rn_idem_check(&s, &h, &dup), RN_IDEM_APPEND, "the next sequence is in order");
	rn_idem_record(&s, &h, 103, 2);
	h = batch(7, 0, 9, 1);
	is_int(rn_idem_check(&s, &h, &dup), -RN_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
	    "a gap is OUT_OF_ORDER_SEQUENCE_NUMBER");
	h = batch(8, 0, 5, 1);
	is_int(rn_idem_check(&s, &h, &dup), RN_IDEM_APPEND,
	    "a producer without state here is taken at any sequence (Kafka)");
	h = batch(7, 1, 0, 1);
	is_int(rn_idem_check(&s, &h, &dup), RN_IDEM_APPEND, "a new epoch restarts at 0");
	rn_idem_record(&s, &h, 105, 3);
	h = batch(7, 0, 5, 1);
	is_int(rn_idem_check(&s, &h, &dup), -RN_KERR_INVALID_PRODUCER_EPOCH,
	    "an old epoch is fenced");

	/* only the last five batches are remembered */
	for (i = 1; i <= 6; i++) {
		h = batch(7, 1, i, 1);
		rn_idem_record(&s, &h, 105 + i, 4);
	}
	h = batch(7, 1, 6, 1);
	is_int(rn_idem_check(&s, &h, &dup), RN_IDEM_DUPLICATE, "a recent batch is found");
	is_int(dup, 111, "at its offset");
	h = batch(7, 1, 1, 1);
	is_int(rn_idem_check(&s, &h, &dup), -RN_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER,
	    "one older than the last five is out of order");

	/* more producers than slots: the least recently used goes */
	for (i = 0; i < RN_IDEM_PRODUCERS + 1; i++) {
		h = batch(1000 + i, 0, 0, 1);
		rn_idem_record(&s, &h, i, 10 + i);
	}
	h = batch(1000 + RN_IDEM_PRODUCERS, 0, 0, 1);
	is_int(rn_idem_check(&s, &h, &dup), RN_IDEM_DUPLICATE, "the newest producer is kept");

	/* transactions: a transactional batch opens one, a marker ends it */
	rn_idem_reset(&s);
	is_int(rn_idem_first_unstable(&s), -1, "no open transaction");
	h = batch(20, 0, 0, 2);
	h.attributes = RN_BATCH_ATTR_TRANSACTIONAL;
	is_int(rn_idem_record(&s, &h, 50, 1), -1, "a transactional batch is recorded");
	is_int(rn_idem_first_unstable(&s), 50, "its transaction begins at its offset");
	h = batch(20, 0, 2, 1);
	h.attributes = RN_BATCH_ATTR_TRANSACTIONAL;
	rn_idem_record(&s, &h, 60, 2);
	is_int(rn_idem_first_unstable(&s), 50, "a second batch leaves the first offset");
	h = batch(21, 0, 0, 1);
	h.attributes = RN_BATCH_ATTR_TRANSACTIONAL;
	rn_idem_record(&s, &h, 55, 3);
	is_int(rn_idem_first_unstable_but(&s, 20), 55, "the others' earliest (21 at 55)");
	h = batch(20, 0, 3, 1);
	is_int(rn_idem_check(&s, &h, &dup), -RN_KERR_INVALID_TXN_STATE,
	    "a plain batch inside its transaction is INVALID_TXN_STATE");
	is_int(rn_idem_marker_check(&s, 20, 0, 3), 0, "a marker at its epoch may be written");
	is_int(rn_idem_marker_check(&s, 20, -1, 3), -RN_KERR_INVALID_PRODUCER_EPOCH,
	    "one at an older epoch may not");
	rn_idem_set_coord_epoch(&s, 20, 4);
	is_int(rn_idem_marker_check(&s, 20, 0, 3), -RN_KERR_TRANSACTION_COORDINATOR_FENCED,
	    "one from an older coordinator is TRANSACTION_COORDINATOR_FENCED");
	rn_idem_set_coord_epoch(&s, 20, -1);
	h = batch(20, 0, -1, 1);
	h.attributes = RN_BATCH_ATTR_TRANSACTIONAL | RN_BATCH_ATTR_CONTROL;
	is_int(rn_idem_record(&s, &h, 70, 4), 50, "the marker ends the transaction begun at 50");
	is_int(rn_idem_first_unstable(&s), 55, "21's transaction is now the earliest");
	h = batch(20, 0, 3, 1);
	is_int(rn_idem_check(&s, &h, &dup), RN_IDEM_APPEND,
	    "the marker left the sequences as they were");
	h = batch(21, 1, -1, 1);
	h.attributes = RN_BATCH_ATTR_TRANSACTIONAL | RN_BATCH_ATTR_CONTROL;
	rn_idem_record(&s, &h, 80, 5);
	is_int(rn_idem_first_unstable(&s), -1, "a marker at a bumped epoch ends 21's too");
	is_int(rn_idem_marker_check(&s, 21, 0, 0), -RN_KERR_INVALID_PRODUCER_EPOCH,
	    "and fences its old epoch");

	/* KIP-890: whose transaction is open, and the guard of one that is not */
	{
		int64_t g = 99, g2 = 99;

		ok(!rn_idem_txn_open(&s, 30, 0, &g) && g == -1,
		    "a producer the table does not know: no transaction, guard -1");
		h = batch(30, 0, 0, 1);
		h.attributes = RN_BATCH_ATTR_TRANSACTIONAL;
		rn_idem_record(&s, &h, 90, 6);
		ok(rn_idem_txn_open(&s, 30, 0, &g), "its first transactional "
		    "batch opens its transaction: no verification needed");
		ok(!rn_idem_txn_open(&s, 30, 1, &g), "not at another epoch");
		g = 99;
		h = batch(30, 0, -1, 1);
		h.attributes = RN_BATCH_ATTR_TRANSACTIONAL | RN_BATCH_ATTR_CONTROL;
		rn_idem_record(&s, &h, 91, 7);
		ok(!rn_idem_txn_open(&s, 30, 0, &g) && g == 1,
		    "ended by a marker: the guard is its marker count, 1");
		h = batch(30, 0, -1, 1);
		h.attributes = RN_BATCH_ATTR_TRANSACTIONAL | RN_BATCH_ATTR_CONTROL;
		rn_idem_record(&s, &h, 92, 8);
		ok(!rn_idem_txn_open(&s, 30, 0, &g2) && g2 == g + 1,
		    "another marker moves the guard");
		ok(!rn_idem_txn_open(&s, 30, 0, &g) && g == g2,
		    "and it stays while nothing is written");
	}

	a = rn_idem_new_producer_id(&counter, 3);
	b = rn_idem_new_producer_id(&counter, 3);
	ok(a > 0 && b > a, "producer ids are positive and increase (%lld, %lld)",
	    (long long)a, (long long)b);
	is_int(a >> 48, 3, "and carry the node id");
	ok(rn_idem_new_producer_id(&counter, 4) >> 48 == 4, "another node, another range");
	return done_testing();
}
