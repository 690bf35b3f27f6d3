/*
 * AlterPartitionReassignments and ListPartitionReassignments against real
 * controller workers (three voters and a broker-only node, no network
 * workers: nothing catches up, so a move stays in progress): the widened
 * replicas in every node's image, the listing, Kafka's errors, a move
 * that outlives its active controller, and a cancel on the next one.
 */
#include "autoconf.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "tests/lib/ctl_harness.h"
#include "tests/lib/tap.h"

extern char **environ;

#define N 4
#define VOTERS 3

static struct th_cluster cl = {
	.name = "reassign", .n_nodes = N, .n_voters = VOTERS,
	.node_logs = true,
};

static bool
pred_up(void *arg)
{
	struct rn_mdview *v;
	int b, up = 0, leader = th_agreed_leader(&cl);

	(void)arg;
	if (leader < 0)
		return false;
	v = th_view(&cl, leader);
	for (b = 1; b <= N; b++)
		up += rn_mdview_broker(v, b) != NULL &&
		    !rn_mdview_broker(v, b)->fenced;
	return up == N;
}

/* "2,3,4,1": node i's image of ra-0's replicas. */
static const char *
replicas_at(int i)
{
	static char buf[64];
	const struct rn_mdv_topic *t = rn_mdview_topic(th_view(&cl, i), "ra",
	    2);
	size_t k = 0;
	int32_t r;

	buf[0] = '\0';
	for (r = 0; t != NULL && t->n_parts > 0 &&
	    r < t->parts[0].n_replicas; r++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%d",
		    r ? "," : "", t->parts[0].replicas[r]);
	return buf;
}

struct want { int node; const char *replicas; };

static bool
pred_replicas(void *arg)
{
	const struct want *w = arg;

	return strcmp(replicas_at(w->node), w->replicas) == 0;
}

static int16_t
create_ra(int i)
{
	struct rn_CreateTopicsRequest req;
	struct rn_CreateTopicsRequest_CreatableTopic t;
	struct rn_CreateTopicsRequest_CreatableReplicaAssignment a;
	struct rn_CreateTopicsResponse resp;
	int32_t ids[] = { 1, 2, 3 };

	rn_CreateTopicsRequest_init(&req);
	rn_CreateTopicsRequest_CreatableTopic_init(&t);
	rn_CreateTopicsRequest_CreatableReplicaAssignment_init(&a);
	a.partition_index = 0;
	a.broker_ids = ids;
	a.broker_ids_count = 3;
	t.name = rn_kstr_c("ra");
	t.num_partitions = -1;
	t.replication_factor = -1;
	t.assignments = &a;
	t.assignments_count = 1;
	req.topics = &t;
	req.topics_count = 1;
	req.timeout_ms = 10000;
	if (th_admin_call(&cl, i, RN_KAPI_CREATE_TOPICS, 7, &req, &resp,
	    10000) != 0 || resp.topics_count != 1)
		return -1;
	return resp.topics[0].error_code;
}

/* One partition to (n < 0: cancel) ids; its error code, -1: no answer. */
static int
alter(int i, const char *topic, int32_t p, int32_t *ids, int32_t n)
{
	struct rn_AlterPartitionReassignmentsRequest req;
	struct rn_AlterPartitionReassignmentsRequest_ReassignableTopic t;
	struct rn_AlterPartitionReassignmentsRequest_ReassignablePartition rp;
	struct rn_AlterPartitionReassignmentsResponse resp;

	rn_AlterPartitionReassignmentsRequest_init(&req);
	rn_AlterPartitionReassignmentsRequest_ReassignableTopic_init(&t);
	rn_AlterPartitionReassignmentsRequest_ReassignablePartition_init(&rp);
	rp.partition_index = p;
	rp.replicas = ids;
	rp.replicas_count = n;
	t.name = rn_kstr_c(topic);
	t.partitions = &rp;
	t.partitions_count = 1;
	req.topics = &t;
	req.topics_count = 1;
	if (th_admin_call(&cl, i, RN_KAPI_ALTER_PARTITION_REASSIGNMENTS, 0,
	    &req, &resp, 10000) != 0 || resp.responses_count != 1 ||
	    resp.responses[0].partitions_count != 1)
		return -1;
	return resp.responses[0].partitions[0].error_code;
}

/* List (topic NULL: all); the top-level error, the response in *resp. */
static int
list(int i, const char *topic,
    struct rn_ListPartitionReassignmentsResponse *resp)
{
	struct rn_ListPartitionReassignmentsRequest req;
	struct rn_ListPartitionReassignmentsRequest_ListPartitionReassignmentsTopics
	    t;
	int32_t p = 0;

	rn_ListPartitionReassignmentsRequest_init(&req);
	rn_ListPartitionReassignmentsRequest_ListPartitionReassignmentsTopics_init(
	    &t);
	t.name = rn_kstr_c(topic != NULL ? topic : "");
	t.partition_indexes = &p;
	t.partition_indexes_count = 1;
	req.topics = topic != NULL ? &t : NULL;
	req.topics_count = topic != NULL ? 1 : -1;
	if (th_admin_call(&cl, i, RN_KAPI_LIST_PARTITION_REASSIGNMENTS, 0,
	    &req, resp, 10000) != 0)
		return -1;
	return resp->error_code;
}

static bool
listed_as_moving(int i)
{
	struct rn_ListPartitionReassignmentsResponse r;
	const struct rn_ListPartitionReassignmentsResponse_OngoingPartitionReassignment
	    *p;

	if (list(i, NULL, &r) != 0 || r.topics_count != 1 ||
	    r.topics[0].partitions_count != 1)
		return false;
	p = &r.topics[0].partitions[0];
	return rn_kstr_eq(r.topics[0].name, "ra") && p->partition_index == 0 &&
	    p->replicas_count == 4 && p->adding_replicas_count == 1 &&
	    p->adding_replicas[0] == 4 && p->removing_replicas_count == 1 &&
	    p->removing_replicas[0] == 1;
}

/* *arg: the old active controller's index, replaced by the new one's. */
static bool
pred_other_leader(void *arg)
{
	int *l = arg, now = th_agreed_leader(&cl);

	if (now < 0 || now == *l)
		return false;
	*l = now;
	return true;
}

static void
test_errors(int leader)
{
	struct rn_ListPartitionReassignmentsResponse r;
	int32_t dup[] = { 2, 2, 3 }, unknown[] = { 2, 3, 9 }, to[] = { 2, 3 };

	is_int(alter(leader, "nope", 0, to, 2),
	    RN_KERR_UNKNOWN_TOPIC_OR_PARTITION, "an unknown topic");
	is_int(alter(leader, "ra", 5, to, 2),
	    RN_KERR_UNKNOWN_TOPIC_OR_PARTITION, "an unknown partition");
	is_int(alter(leader, "ra", 0, dup, 3),
	    RN_KERR_INVALID_REPLICA_ASSIGNMENT, "a broker twice");
	is_int(alter(leader, "ra", 0, unknown, 3),
	    RN_KERR_INVALID_REPLICA_ASSIGNMENT, "an unregistered broker");
	is_int(alter(leader, "ra", 0, to, 0),
	    RN_KERR_INVALID_REPLICA_ASSIGNMENT, "no replicas at all");
	is_int(alter(leader, "ra", 0, NULL, -1),
	    RN_KERR_NO_REASSIGNMENT_IN_PROGRESS, "cancelling nothing");
	is_int(list(leader, "nope", &r), RN_KERR_UNKNOWN_TOPIC_OR_PARTITION,
	    "listing an unknown topic");
	ok(list(leader, NULL, &r) == 0 && r.topics_count == 0,
	    "nothing is listed before a move");
}

static void
test_move_and_cancel(int leader)
{
	int32_t to[] = { 2, 3, 4 };
	struct want w4 = { N - 1, "2,3,4,1" }, back = { N - 1, "2,3,1" };
	int next;

	is_int(alter(leader, "ra", 0, to, 3), 0, "ra-0: 1,2,3 -> 2,3,4");
	ok(th_wait_for(pred_replicas, &w4, 5000),
	    "the broker-only node's image shows 2,3,4,1 (%s)",
	    replicas_at(N - 1));
	ok(listed_as_moving(leader),
	    "listed: replicas 2,3,4,1, adding 4, removing 1");
	th_stop(&cl, leader, SIGKILL);
	next = leader;
	th_wait_for(pred_other_leader, &next, 10000);
	if (next == leader)
		next = -1;
	ok(next >= 0, "a new active controller (node %d)", next + 1);
	if (next < 0)
		return;
	ok(listed_as_moving(next), "the move outlives its controller");
	is_int(alter(next, "ra", 0, NULL, -1), 0, "cancel on the new one");
	back.node = next;
	ok(th_wait_for(pred_replicas, &back, 5000),
	    "back to the original replicas, in the widened order (%s)",
	    replicas_at(next));
	/* the third voter's image too */
	back.node = 3 - leader - next;
	ok(th_wait_for(pred_replicas, &back, 5000),
	    "and so does the other voter's image (%s)", replicas_at(back.node));
	is_int(alter(next, "ra", 0, NULL, -1),
	    RN_KERR_NO_REASSIGNMENT_IN_PROGRESS, "nothing left to cancel");
	th_start(&cl, leader);
}

int
main(int argc, char **argv)
{
	static char extra[256];
	int i, leader;

	setproctitle_init(argc, argv, environ);
	rn_log_init("test", NULL, 0);
	snprintf(extra, sizeof(extra), "log.verbose=false\n"
	    "broker.session.timeout.ms=1500\n"
	    "broker.heartbeat.interval.ms=300\n");
	cl.extra_config = extra;
	th_setup(&cl);
	for (i = 0; i < N; i++)
		th_start(&cl, i);
	ok(th_wait_for(pred_up, NULL, 20000), "brokers 1-4 registered");
	if ((leader = th_agreed_leader(&cl)) < 0)
		bail("no active controller");
	is_int(create_ra(leader), 0, "ra-0 on brokers 1,2,3");
	test_errors(leader);
	test_move_and_cancel(leader);
	th_teardown(&cl, tap_failed != 0);
	return done_testing();
}
