/*
 * Observed brokers (seed 000): brokers whose session expired stay in the
 * metadata state with their rack and listeners and the time they went,
 * through a snapshot and a restore; placement over them is the seed-002
 * rack-unaware table with a fixed start index and shift, and rack-aware
 * with the racks absent brokers registered with; an unregistered broker
 * is gone from the set; the image marks them for the readers. The
 * automatic leader rebalance moves leaders back only past
 * leader.imbalance.per.broker.percentage, and only to a preferred replica
 * that is live and in the ISR.
 */
#include "autoconf.h"

#include <stdlib.h>
#include <string.h>

#include "ipc/mdimage.h"
#include "tests/lib/tap.h"
#include "tests/unit/seed002.h"
#include "common/placement.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"
#include "workers/controller/records.h"
#include "workers/controller/state.h"

#define ABSENT_AT 1796150000000LL

#define seed seed002_table

static void
apply_batch(struct ctl_state *st, struct ctl_batch *b, uint64_t index)
{
	size_t len;
	void *e = ctl_batch_finish(b, &len);

	if (e == NULL || ctl_state_apply(st, e, len, index) < 0)
		bail("batch at %llu did not apply", (unsigned long long)index);
	free(e);
	ctl_batch_free(b);
	ctl_batch_init(b);
}

/* Five brokers, 1001 and 1003 then absent; racks when with_racks. */
static void
build(struct ctl_state *st, bool with_racks)
{
	static const char *racks[5] = { "a", "b", "c", "a", "b" };
	struct ctl_listener l = { "PLAINTEXT", "10.0.0.1", 9092 };
	struct ctl_batch b;
	struct ctl_broker br;
	int i;

	ctl_state_init(st);
	ctl_batch_init(&b);
	for (i = 0; i < 5; i++) {
		memset(&br, 0, sizeof(br));
		br.id = 1000 + i;
		br.incarnation[0] = (uint8_t)(i + 1);
		br.listeners = &l;
		br.n_listeners = 1;
		if (with_racks)
			strlcpy(br.rack, racks[i], sizeof(br.rack));
		ctl_rec_register_broker(&b, &br, false);
	}
	apply_batch(st, &b, 2);
	ctl_rec_broker_absent(&b, 1001, ABSENT_AT);
	ctl_rec_broker_absent(&b, 1003, ABSENT_AT + 1000);
	apply_batch(st, &b, 3);
	ctl_batch_free(&b);
}

static void
observed_ids(const struct ctl_state *st, int32_t *ids, int *n)
{
	int i;

	for (i = 0; i < st->n_brokers; i++)
		ids[i] = st->brokers[i].id;
	*n = st->n_brokers;
}

static void
test_kept(void)
{
	struct ctl_state st, st2;
	msgpack_sbuffer sb;
	const struct ctl_broker *b;

	build(&st, true);
	is_int(st.n_brokers, 5, "absent brokers stay observed");
	b = ctl_state_broker(&st, 1001);
	ok(b != NULL && b->fenced && b->absent_since_ms == ABSENT_AT,
	    "1001: fenced, absent since its session expired");
	ok(b != NULL && strcmp(b->rack, "b") == 0 && b->n_listeners == 1 &&
	    strcmp(b->listeners[0].host, "10.0.0.1") == 0,
	    "1001 keeps its last rack and listeners");
	is_int(ctl_broker_state(&st, 1001), CTL_B_DOWN, "an absent broker is "
	    "not live");
	msgpack_sbuffer_init(&sb);
	ctl_state_snapshot(&st, &sb);
	ctl_state_init(&st2);
	is_int(ctl_state_restore(&st2, sb.data, sb.size), 0, "restored");
	b = ctl_state_broker(&st2, 1003);
	ok(st2.n_brokers == 5 && b != NULL && b->fenced &&
	    b->absent_since_ms == ABSENT_AT + 1000 && strcmp(b->rack, "a") == 0,
	    "a snapshot keeps the observed set and when each went");
	msgpack_sbuffer_destroy(&sb);
	ctl_state_free(&st2);
	ctl_state_free(&st);
}

static void
test_rack_unaware(void)
{
	struct ctl_state st;
	int32_t ids[8], out[30];
	int n, p, bad = 0;

	build(&st, false);
	observed_ids(&st, ids, &n);
	is_int(ctl_place_auto_at(&st, ids, n, 10, 3, 0, 0, 3, out), 0,
	    "placement over the 5 observed brokers (2 absent)");
	for (p = 0; p < 10; p++)
		if (memcmp(&out[p * 3], seed[p], sizeof(seed[p])) != 0) {
			diag("partition %d: [%d,%d,%d]", p, out[p * 3],
			    out[p * 3 + 1], out[p * 3 + 2]);
			bad++;
		}
	is_int(bad, 0, "it is the seed-002 table (start index 0, shift 3)");
	is_int(ctl_place_auto_at(&st, ids, n, 4, 3, 6, 0, 4, out), 0,
	    "partitions 6..9 added later");
	ok(memcmp(out, seed[6], sizeof(seed[6])) == 0 &&
	    memcmp(&out[9], seed[9], sizeof(seed[9])) == 0,
	    "continue the same table");
	ctl_state_free(&st);
}

static void
test_rack_aware(void)
{
	static const char *racks[5] = { "a", "b", "c", "a", "b" };
	struct ctl_state st;
	int32_t ids[8], out[18], want[18];
	int n;

	build(&st, true);
	observed_ids(&st, ids, &n);
	is_int(ctl_place_auto_at(&st, ids, n, 6, 3, 0, 2, 1, out), 0,
	    "rack-aware placement over the observed brokers");
	rn_assign_rack_aware(ids, racks, 5, 6, 3, 2, 1, 0, want);
	ok(memcmp(out, want, sizeof(out)) == 0,
	    "absent brokers count with the racks they registered with");
	ctl_state_free(&st);
}

static void
test_unregistered(void)
{
	struct ctl_state st;
	struct ctl_batch b;
	int32_t ids[8], out[60];
	int n, i, used = 0;

	build(&st, false);
	ctl_batch_init(&b);
	ctl_rec_unregister_broker(&b, 1003);
	apply_batch(&st, &b, 4);
	ctl_batch_free(&b);
	observed_ids(&st, ids, &n);
	is_int(n, 4, "an unregistered broker leaves the observed set");
	ctl_place_auto_at(&st, ids, n, 20, 3, 0, 1, 2, out);
	for (i = 0; i < 60; i++)
		used += out[i] == 1003;
	is_int(used, 0, "and gets no new replica");
	ctl_state_free(&st);
}

static void
test_image(void)
{
	struct ctl_state st;
	struct ctl_local loc = { .node_id = 1000, .controller_id = 1000 };
	struct rn_mdview v;
	msgpack_sbuffer sb;
	const struct rn_mdv_broker *b;

	build(&st, false);
	msgpack_sbuffer_init(&sb);
	ctl_state_encode_image(&st, &loc, &sb);
	rn_mdview_init(&v);
	is_int(rn_mdview_load(&v, sb.data, sb.size), 0, "image parses");
	is_int(v.n_brokers, 5, "the image lists every observed broker");
	b = rn_mdview_broker(&v, 1003);
	ok(b != NULL && b->fenced && b->absent_since_ms == ABSENT_AT + 1000,
	    "with the fenced flag readers filter on, and since when");
	b = rn_mdview_broker(&v, 1000);
	ok(b != NULL && !b->fenced && b->absent_since_ms == 0, "1000 is live");
	rn_mdview_free(&v);
	msgpack_sbuffer_destroy(&sb);
	ctl_state_free(&st);
}

/* Topic "t": 10 partitions preferring 1 ([1,2,3]); the first moved of
 * them led by 2; partition 9's ISR without 1 when out_of_isr. */
static void
build_leaders(struct ctl_state *st, int moved, bool out_of_isr)
{
	struct ctl_listener l = { "PLAINTEXT", "h", 1 };
	int32_t reps[3] = { 1, 2, 3 }, isr23[2] = { 2, 3 };
	struct ctl_batch b;
	struct ctl_broker br;
	struct ctl_partition part;
	uint8_t tid[16];
	int i;

	ctl_state_init(st);
	ctl_batch_init(&b);
	for (i = 1; i <= 3; i++) {
		memset(&br, 0, sizeof(br));
		br.id = i;
		br.listeners = &l;
		br.n_listeners = 1;
		ctl_rec_register_broker(&b, &br, false);
		ctl_rec_broker_change(&b, i, 0, -1);
	}
	memset(tid, 0x7e, sizeof(tid));
	ctl_rec_topic(&b, "t", 1, tid);
	for (i = 0; i < 10; i++) {
		memset(&part, 0, sizeof(part));
		part.n_replicas = 3;
		part.replicas = reps;
		part.n_isr = out_of_isr && i == 9 ? 2 : 3;
		part.isr = out_of_isr && i == 9 ? isr23 : reps;
		part.leader = i < moved || (out_of_isr && i == 9) ? 2 : 1;
		ctl_rec_partition(&b, tid, i, &part, false);
	}
	apply_batch(st, &b, 2);
	ctl_batch_free(&b);
}

/* Partition changes a due balancing pass proposes. */
static int
balance(int moved, bool out_of_isr, int pct, bool enabled)
{
	static struct ctl c;
	struct rn_config cfg;
	struct ctl_batch b;
	int n;

	memset(&cfg, 0, sizeof(cfg));
	cfg.auto_leader_rebalance_enable = enabled;
	cfg.leader_imbalance_check_interval_s = 300;
	cfg.leader_imbalance_per_broker_pct = pct;
	memset(&c, 0, sizeof(c));
	c.cfg = &cfg;
	build_leaders(&c.st, moved, out_of_isr);
	c.rebalance_due_ms = 1; /* due */
	ctl_batch_init(&b);
	ctl_rebalance(&c, &b);
	n = (int)b.n;
	ctl_batch_free(&b);
	if (ctl_rebalance(&c, &b))
		n = -1; /* the next pass is an interval away */
	ctl_state_free(&c.st);
	return n;
}

static void
test_rebalance(void)
{
	is_int(balance(1, false, 10, true), 0, "1 of 10 led elsewhere (10%%): "
	    "not above leader.imbalance.per.broker.percentage=10");
	is_int(balance(2, false, 10, true), 2, "2 of 10 (20%%): both move back");
	is_int(balance(1, false, 0, true), 1, "percentage 0: any imbalance");
	is_int(balance(2, true, 10, true), 2, "a preferred replica out of the "
	    "ISR keeps its partition where it is");
	is_int(balance(5, false, 10, false), 0, "auto.leader.rebalance.enable"
	    "=false: nothing moves");
}

int
main(void)
{
	test_kept();
	test_rack_unaware();
	test_rack_aware();
	test_unregistered();
	test_image();
	test_rebalance();
	return done_testing();
}
