/*
 * Leader and ISR decisions (elect.c) against made-up broker states,
 * and the records that carry them (BrokerChange, PartitionChange,
 * UnregisterBroker) applied to a metadata state and through a snapshot.
 */
#include "autoconf.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "protocol/kerrors.h"
#include "tests/lib/tap.h"
#include "workers/controller/elect.h"
#include "workers/controller/records.h"

/* broker id -> state, for ids 1..5 */
static enum ctl_bstate states[6];

static enum ctl_bstate
fn(void *arg, int32_t id)
{
	(void)arg;
	return id >= 1 && id <= 5 ? states[id] : CTL_B_DOWN;
}

static void
all_up(void)
{
	int i;

	for (i = 0; i < 6; i++)
		states[i] = CTL_B_UP;
}

static struct ctl_partition
part(int32_t *replicas, int32_t nr, int32_t *isr, int32_t ni, int32_t leader)
{
	struct ctl_partition p;

	memset(&p, 0, sizeof(p));
	p.replicas = replicas;
	p.n_replicas = nr;
	p.isr = isr;
	p.n_isr = ni;
	p.leader = leader;
	p.leader_epoch = 5;
	p.partition_epoch = 9;
	return p;
}

static bool
isr_is(const struct ctl_pchange *c, int n, int a, int b)
{
	return c->n_isr == n && c->isr[0] == a && (n < 2 || c->isr[1] == b);
}

static void
test_elect(void)
{
	int32_t r[3] = { 1, 2, 3 }, isr[3] = { 1, 2, 3 }, isr1[1] = { 3 };
	struct ctl_partition p = part(r, 3, isr, 3, 1);
	struct ctl_pchange c;

	all_up();
	ok(!ctl_elect(&p, fn, NULL, false, &c), "all up: nothing changes");
	states[1] = CTL_B_DOWN;
	ok(ctl_elect(&p, fn, NULL, false, &c), "leader fenced: a change");
	ok(c.leader == 2 && c.leader_epoch == 6 && c.partition_epoch == 10 &&
	    isr_is(&c, 2, 2, 3), "first live ISR member leads, epochs +1, "
	    "fenced broker out of the ISR");
	all_up();
	states[3] = CTL_B_DOWN;
	ok(ctl_elect(&p, fn, NULL, false, &c) && c.leader == 1 &&
	    c.leader_epoch == 5 && c.partition_epoch == 10 &&
	    isr_is(&c, 2, 1, 2), "follower fenced: ISR shrinks, same leader "
	    "and leader epoch");
	/* ISR [3], 3 fenced: leaderless, ISR kept */
	all_up();
	states[3] = CTL_B_DOWN;
	p = part(r, 3, isr1, 1, 3);
	ok(ctl_elect(&p, fn, NULL, false, &c) && c.leader == -1 &&
	    isr_is(&c, 1, 3, 0) && c.leader_epoch == 6,
	    "last ISR member fenced: no leader, ISR kept");
	p.leader = -1;
	p.leader_epoch = 6;
	ok(!ctl_elect(&p, fn, NULL, false, &c), "and stays so without "
	    "unclean election");
	ok(ctl_elect(&p, fn, NULL, true, &c) && c.leader == 1 && c.unclean &&
	    isr_is(&c, 1, 1, 0) && c.leader_epoch == 7,
	    "unclean: the first live replica leads with ISR [itself]");
	states[3] = CTL_B_UP;
	ok(ctl_elect(&p, fn, NULL, false, &c) && c.leader == 3 && !c.unclean,
	    "the ISR member is back: it leads again");
	/* controlled shutdown */
	all_up();
	states[1] = CTL_B_LEAVING;
	p = part(r, 3, isr, 3, 1);
	ok(ctl_elect(&p, fn, NULL, false, &c) && c.leader == 2 &&
	    isr_is(&c, 2, 2, 3), "leaving leader: leadership moves, it leaves "
	    "the ISR");
	p = part(r, 3, isr, 1, 1);   /* ISR [1] */
	ok(!ctl_elect(&p, fn, NULL, false, &c), "leaving leader with no "
	    "alternative keeps leading");
}

static void
test_elect_leaders(void)
{
	int32_t r[3] = { 1, 2, 3 }, isr[2] = { 2, 3 }, isr3[3] = { 2, 3, 1 };
	struct ctl_partition p = part(r, 3, isr, 2, 2);
	struct ctl_pchange c;

	all_up();
	is_int(ctl_elect_preferred(&p, fn, NULL, &c),
	    RN_KERR_PREFERRED_LEADER_NOT_AVAILABLE,
	    "preferred replica not in the ISR");
	p = part(r, 3, isr3, 3, 2);
	is_int(ctl_elect_preferred(&p, fn, NULL, &c), 0, "preferred: elected");
	ok(c.leader == 1 && c.leader_epoch == 6 && c.n_isr == 3,
	    "replica 1 leads, ISR unchanged");
	states[1] = CTL_B_DOWN;
	is_int(ctl_elect_preferred(&p, fn, NULL, &c),
	    RN_KERR_PREFERRED_LEADER_NOT_AVAILABLE, "preferred replica fenced");
	p.leader = 1;
	is_int(ctl_elect_preferred(&p, fn, NULL, &c),
	    RN_KERR_ELECTION_NOT_NEEDED, "already the preferred leader");
	is_int(ctl_elect_unclean(&p, fn, NULL, &c),
	    RN_KERR_ELECTION_NOT_NEEDED, "unclean with a leader: not needed");
	p.leader = -1;
	states[2] = states[3] = CTL_B_DOWN;
	is_int(ctl_elect_unclean(&p, fn, NULL, &c),
	    RN_KERR_ELIGIBLE_LEADERS_NOT_AVAILABLE, "nobody alive");
}

static int
apply(struct ctl_state *st, struct ctl_batch *b, uint64_t index)
{
	size_t len;
	void *e = ctl_batch_finish(b, &len);
	int n = ctl_state_apply(st, e, len, index);

	free(e);
	ctl_batch_free(b);
	ctl_batch_init(b);
	return n;
}

static void
test_records(void)
{
	struct ctl_state st, st2;
	struct ctl_broker br;
	struct ctl_partition p;
	struct ctl_batch b;
	msgpack_sbuffer sb;
	uint8_t tid[16] = { 1, 2, 3 }, dirs[3][16];
	int32_t r[3] = { 1, 2, 3 }, isr2[2] = { 2, 3 };
	int i;

	ctl_state_init(&st);
	ctl_batch_init(&b);
	memset(dirs, 0, sizeof(dirs));
	for (i = 1; i <= 3; i++) {
		memset(&br, 0, sizeof(br));
		br.id = i;
		br.incarnation[0] = (uint8_t)i;
		ctl_rec_register_broker(&b, &br, false);
	}
	ctl_rec_topic(&b, "t", 1, tid);
	p = part(r, 3, r, 3, 1);
	p.dirs = dirs;
	ctl_rec_partition(&b, tid, 0, &p, false);
	is_int(apply(&st, &b, 1), 5, "brokers, topic, partition applied");
	ctl_rec_broker_change(&b, 1, 1, -1);
	ctl_rec_broker_change(&b, 2, -1, 1);
	ctl_rec_partition_change(&b, tid, 0, 2, isr2, 2, 6, 10);
	is_int(apply(&st, &b, 2), 3, "BrokerChange x2, PartitionChange");
	ok(ctl_state_broker(&st, 1)->fenced &&
	    !ctl_state_broker(&st, 1)->in_controlled_shutdown,
	    "broker 1 fenced");
	ok(!ctl_state_broker(&st, 2)->fenced &&
	    ctl_state_broker(&st, 2)->in_controlled_shutdown,
	    "broker 2 in controlled shutdown");
	ok(st.topics[0]->parts[0].leader == 2 &&
	    st.topics[0]->parts[0].n_isr == 2 &&
	    st.topics[0]->parts[0].leader_epoch == 6 &&
	    st.topics[0]->parts[0].partition_epoch == 10 &&
	    st.topics[0]->parts[0].n_replicas == 3 &&
	    st.topics[0]->parts[0].slots[0] == 0,
	    "partition changed, replicas and slots kept");
	msgpack_sbuffer_init(&sb);
	ctl_state_snapshot(&st, &sb);
	ctl_state_init(&st2);
	is_int(ctl_state_restore(&st2, sb.data, sb.size), 0,
	    "snapshot restores");
	ok(ctl_state_broker(&st2, 1)->fenced &&
	    ctl_state_broker(&st2, 2)->in_controlled_shutdown &&
	    st2.topics[0]->parts[0].leader == 2,
	    "with fencing, controlled shutdown and the new leader");
	msgpack_sbuffer_destroy(&sb);
	ctl_rec_unregister_broker(&b, 3);
	is_int(apply(&st, &b, 3), 1, "UnregisterBroker");
	ok(ctl_state_broker(&st, 3) == NULL && st.n_brokers == 2,
	    "broker 3 gone");
	ok(ctl_broker_state(&st, 3) == CTL_B_DOWN &&
	    ctl_broker_state(&st, 1) == CTL_B_DOWN &&
	    ctl_broker_state(&st, 2) == CTL_B_LEAVING,
	    "broker states as the elections see them");
	ctl_batch_free(&b);
	ctl_state_free(&st);
	ctl_state_free(&st2);
}

int
main(void)
{
	rn_log_init("test", NULL, 0);
	test_elect();
	test_elect_leaders();
	test_records();
	return done_testing();
}
