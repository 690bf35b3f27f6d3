/*
 * Partition reassignment in the controller: the rules (widen, complete
 * once the target is in the ISR, cancel, replace, reorder at once) and
 * the Partition record carrying adding/removing replicas through the
 * state, PartitionChange, snapshots and the hook that tells a node its
 * replica went away (with the slot it had, which is freed).
 */
#include "autoconf.h"

#include <stdlib.h>
#include <string.h>

#include "protocol/kerrors.h"
#include "tests/lib/tap.h"
#include "workers/controller/reassign.h"
#include "workers/controller/records.h"
#include "workers/controller/state.h"

static enum ctl_bstate
all_up(void *arg, int32_t id)
{
	(void)arg;
	(void)id;
	return CTL_B_UP;
}

static bool
ids_are(const int32_t *v, int32_t n, const char *want)
{
	char got[256];
	size_t k = 0;
	int32_t i;

	got[0] = '\0';
	for (i = 0; i < n && k < sizeof(got) - 16; i++)
		k += (size_t)snprintf(got + k, sizeof(got) - k, "%s%d",
		    i ? "," : "", v[i]);
	if (strcmp(got, want) != 0)
		diag("got [%s], want [%s]", got, want);
	return strcmp(got, want) == 0;
}

/* A partition as the state holds it, over caller's arrays. */
static void
part_of(struct ctl_partition *p, int32_t *rep, int32_t nr, int32_t *isr,
    int32_t ni, int32_t leader)
{
	memset(p, 0, sizeof(*p));
	p->replicas = rep;
	p->n_replicas = nr;
	p->isr = isr;
	p->n_isr = ni;
	p->leader = leader;
	p->leader_epoch = 5;
	p->partition_epoch = 9;
}

static void
test_rules(void)
{
	int32_t rep[] = { 1, 2, 3 }, isr[] = { 1, 2, 3 }, to[] = { 2, 3, 4 };
	int32_t isr4[] = { 1, 2, 3, 4 }, back[] = { 3, 2, 1 };
	struct ctl_partition p, w;
	struct ctl_reassign ra, done, c;

	part_of(&p, rep, 3, isr, 3, 1);
	is_int(ctl_reassign_start(&p, to, 3, all_up, NULL, &ra), 0,
	    "1,2,3 -> 2,3,4 starts");
	ok(ids_are(ra.replicas, ra.n_replicas, "2,3,4,1") &&
	    ids_are(ra.adding, ra.n_adding, "4") &&
	    ids_are(ra.removing, ra.n_removing, "1"),
	    "replicas widened to target + removing, adding 4, removing 1");
	ok(ra.leader == 1 && ra.leader_epoch == 5 && ra.partition_epoch == 10,
	    "the leader stays meanwhile; a new partition epoch");
	ctl_reassign_as_partition(&ra, &w);
	ok(!ctl_reassign_complete(&w, all_up, NULL, &done),
	    "not complete while 4 is out of the ISR");
	w.isr = isr4;
	w.n_isr = 4;
	ok(ctl_reassign_complete(&w, all_up, NULL, &done),
	    "complete once 4 is in the ISR");
	ok(ids_are(done.replicas, done.n_replicas, "2,3,4") &&
	    ids_are(done.isr, done.n_isr, "2,3,4") && done.n_adding == 0 &&
	    done.n_removing == 0, "replicas and ISR become 2,3,4");
	ok(done.leader == 2 && done.leader_epoch == 6,
	    "the removed leader 1 hands over to 2, leader epoch 6");

	w.isr = isr;
	w.n_isr = 3;
	is_int(ctl_reassign_cancel(&w, all_up, NULL, &c), 0, "cancel");
	ok(ids_are(c.replicas, c.n_replicas, "2,3,1") &&
	    ids_are(c.isr, c.n_isr, "1,2,3") && c.leader == 1 &&
	    c.n_adding == 0, "cancel takes 4 out again, leader 1 stays");
	is_int(ctl_reassign_cancel(&p, all_up, NULL, &c),
	    RN_KERR_NO_REASSIGNMENT_IN_PROGRESS, "cancel with none going on");

	is_int(ctl_reassign_start(&p, back, 3, all_up, NULL, &ra), 0,
	    "a reorder");
	ok(ids_are(ra.replicas, ra.n_replicas, "3,2,1") && ra.n_adding == 0 &&
	    ra.leader == 1, "a reorder completes at once");
	is_int(ctl_reassign_start(&p, to, 2, all_up, NULL, &ra), 0,
	    "1,2,3 -> 2,3 (removal only)");
	ok(ids_are(ra.replicas, ra.n_replicas, "2,3") &&
	    ids_are(ra.isr, ra.n_isr, "2,3") && ra.leader == 2 &&
	    !ctl_reassigning(&(struct ctl_partition){ .n_adding = ra.n_adding,
	    .n_removing = ra.n_removing }), "a removal completes at once");
}

static uint8_t tid[16] = { 0x42 };
static int32_t removed_broker = -1, removed_slot = -1, removed_calls;

static void
on_removed(void *arg, const struct ctl_topic *t, int32_t p, int32_t broker,
    int32_t slot, const uint8_t dir[16])
{
	(void)arg;
	(void)t;
	(void)p;
	(void)dir;
	removed_broker = broker;
	removed_slot = slot;
	removed_calls++;
}

static void
apply(struct ctl_state *st, struct ctl_batch *b, uint64_t index)
{
	size_t len;
	void *e = ctl_batch_finish(b, &len);

	if (e == NULL || ctl_state_apply(st, e, len, index) < 1)
		bail("batch %llu did not apply", (unsigned long long)index);
	free(e);
	ctl_batch_free(b);
	ctl_batch_init(b);
}

static void
record(struct ctl_batch *b, const struct ctl_reassign *ra)
{
	struct ctl_partition np;

	ctl_reassign_as_partition(ra, &np);
	ctl_rec_partition(b, tid, 0, &np, false);
}

static void
test_state(void)
{
	int32_t rep[] = { 1, 2, 3 }, to[] = { 2, 3, 4 }, isr4[] = { 1, 2, 3, 4 };
	struct ctl_state st, st2;
	struct ctl_partition p, *pp;
	struct ctl_reassign ra;
	struct ctl_batch b;
	msgpack_sbuffer sb;
	int32_t slot1;

	ctl_state_init(&st);
	st.on_remove_replica = on_removed;
	ctl_batch_init(&b);
	ctl_rec_topic(&b, "moves", 5, tid);
	part_of(&p, rep, 3, rep, 3, 1);
	ctl_rec_partition(&b, tid, 0, &p, false);
	apply(&st, &b, 1);
	pp = &ctl_state_topic(&st, "moves", 5)->parts[0];
	slot1 = pp->slots[0];

	if (ctl_reassign_start(pp, to, 3, all_up, NULL, &ra) != 0)
		bail("start refused");
	record(&b, &ra);
	apply(&st, &b, 2);
	pp = &ctl_state_topic(&st, "moves", 5)->parts[0];
	ok(ctl_reassigning(pp) && ids_are(pp->replicas, pp->n_replicas,
	    "2,3,4,1") && ids_are(pp->adding, pp->n_adding, "4") &&
	    ids_are(pp->removing, pp->n_removing, "1"),
	    "the Partition record carries adding and removing replicas");
	is_int(removed_calls, 0, "widening drops no replica");
	ok(pp->slots[3] == slot1 && pp->slots[2] >= 0,
	    "broker 1 keeps its slot; broker 4 gets one");

	ctl_rec_partition_change(&b, tid, 0, 1, isr4, 4, pp->leader_epoch,
	    pp->partition_epoch + 1);
	apply(&st, &b, 3);
	pp = &ctl_state_topic(&st, "moves", 5)->parts[0];
	ok(pp->n_isr == 4 && ids_are(pp->adding, pp->n_adding, "4"),
	    "a PartitionChange (4 joins the ISR) keeps the reassignment");

	msgpack_sbuffer_init(&sb);
	ctl_state_init(&st2);
	if (ctl_state_snapshot(&st, &sb) != 0 ||
	    ctl_state_restore(&st2, sb.data, sb.size) != 0)
		bail("snapshot round trip failed");
	pp = &ctl_state_topic(&st2, "moves", 5)->parts[0];
	ok(ids_are(pp->adding, pp->n_adding, "4") &&
	    ids_are(pp->removing, pp->n_removing, "1"),
	    "a snapshot keeps the reassignment");
	ctl_state_free(&st2);
	msgpack_sbuffer_destroy(&sb);

	pp = &ctl_state_topic(&st, "moves", 5)->parts[0];
	if (!ctl_reassign_complete(pp, all_up, NULL, &ra))
		bail("not complete");
	record(&b, &ra);
	apply(&st, &b, 4);
	pp = &ctl_state_topic(&st, "moves", 5)->parts[0];
	ok(!ctl_reassigning(pp) && ids_are(pp->replicas, pp->n_replicas,
	    "2,3,4") && pp->leader == 2, "completion: 2,3,4, leader 2");
	ok(removed_calls == 1 && removed_broker == 1 && removed_slot == slot1,
	    "the hook hears broker 1's replica go, with its slot %d", slot1);
	ctl_batch_free(&b);
	ctl_state_free(&st);
}

int
main(void)
{
	test_rules();
	test_state();
	return done_testing();
}
