/*
 * A cluster of controller workers, each in a forked child with its own
 * shared memory, log dir and listeners: three combined nodes (voters 1-3)
 * and one broker-only node (4). The test plays the network workers (ring
 * requests, RN_IPC_ALTER_PARTITION) and, for AlterPartition validation,
 * a broker speaking Kafka protocol to the active controller's CONTROLLER
 * listener. Covered: registration and heartbeats, placement of an RF=3
 * topic, forwarding from a follower, the broker-only node's image with
 * its own slots, fencing on a stopped heartbeat (leaders move, ISRs
 * shrink), unfencing, AlterPartition checks, unclean election off and
 * then switched on at run time, controlled shutdown, ElectLeaders,
 * DescribeQuorum, and quorum loss.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "protocol/kframe.h"
#include "protocol/kmsg_gen.h"
#include "storage/metaprops.h"
#include "tests/lib/ctl_harness.h"
#include "tests/lib/tap.h"
#include "common/placement.h"
#include "workers/worker.h"

extern char **environ;

#define N 4          /* nodes 1-3 voters, 4 broker-only */
#define VOTERS 3
#define N_ALL 5      /* and 5: broker-only, of another cluster */

static struct th_cluster cl = {
	.name = "cluster", .n_nodes = N_ALL, .n_voters = VOTERS,
	.node_logs = true,
};

static int cur_leader = -1;

static bool
pred_all_registered(void *arg)
{
	struct rn_mdview *v;
	int b, n = 0;

	(void)arg;
	if ((cur_leader = th_agreed_leader(&cl)) < 0)
		return false;
	v = th_view(&cl, cur_leader);
	for (b = 1; b <= N; b++) {
		const struct rn_mdv_broker *br = rn_mdview_broker(v, b);

		if (br != NULL && !br->fenced)
			n++;
	}
	return n == N;
}

static const struct rn_mdv_partition *
part_at(int i, const char *topic, int32_t p)
{
	const struct rn_mdv_topic *t = rn_mdview_topic(th_view(&cl, i), topic,
	    strlen(topic));

	return t != NULL ? rn_mdview_partition(t, p) : NULL;
}

static bool
has(const int32_t *v, int32_t n, int32_t id)
{
	int32_t i;

	for (i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* ---- ring requests (the network worker's side) ----------------------- */

/* CreateTopics v7 of one topic: the topic's error code (-1: no answer). */
static int
create_topic(int i, const char *name, int32_t np, int16_t rf,
    const int32_t *assign, int32_t n_assign, int timeout_ms)
{
	struct rn_CreateTopicsRequest req;
	struct rn_CreateTopicsRequest_CreatableTopic t;
	struct rn_CreateTopicsRequest_CreatableReplicaAssignment as[8];
	struct rn_CreateTopicsResponse_CreatableTopicResult res;
	struct rn_kwriter w;
	struct rn_kreader r;
	uint64_t id;
	int32_t k;
	int err;

	rn_CreateTopicsRequest_init(&req);
	rn_CreateTopicsRequest_CreatableTopic_init(&t);
	t.name = rn_kstr_c(name);
	t.num_partitions = np;
	t.replication_factor = rf;
	if (assign != NULL) {
		/* one partition per call here: n_assign replicas */
		for (k = 0; k < 1; k++) {
			rn_CreateTopicsRequest_CreatableReplicaAssignment_init(
			    &as[k]);
			as[k].partition_index = k;
			as[k].broker_ids = (int32_t *)assign;
			as[k].broker_ids_count = n_assign;
		}
		t.assignments = as;
		t.assignments_count = 1;
	}
	req.topics = &t;
	req.topics_count = 1;
	req.timeout_ms = 30000;
	rn_kwriter_init(&w);
	rn_CreateTopicsRequest_encode(&w, 7, &req);
	id = th_admin_send(&cl, i, RN_KAPI_CREATE_TOPICS, 7, &w);
	rn_kwriter_free(&w);
	err = th_admin_wait(&cl, i, id, timeout_ms, &r);
	if (err != 0)
		return err == TH_NO_ANSWER ? -1 : -2;
	if (th_create_topics_result(&cl, &r, name, &res) != 0)
		return -3;
	return res.error_code;
}

static int
set_topic_config(int i, const char *topic, const char *key,
    const char *value)
{
	struct rn_IncrementalAlterConfigsRequest req;
	struct rn_IncrementalAlterConfigsRequest_AlterConfigsResource res;
	struct rn_IncrementalAlterConfigsRequest_AlterableConfig cf;
	struct rn_IncrementalAlterConfigsResponse resp;

	rn_IncrementalAlterConfigsRequest_init(&req);
	rn_IncrementalAlterConfigsRequest_AlterConfigsResource_init(&res);
	rn_IncrementalAlterConfigsRequest_AlterableConfig_init(&cf);
	cf.name = rn_kstr_c(key);
	cf.value = rn_kstr_c(value);
	cf.config_operation = 0;
	res.resource_type = 2;
	res.resource_name = rn_kstr_c(topic);
	res.configs = &cf;
	res.configs_count = 1;
	req.resources = &res;
	req.resources_count = 1;
	if (th_admin_call(&cl, i, RN_KAPI_INCREMENTAL_ALTER_CONFIGS, 1, &req,
	    &resp, 10000) != 0 || resp.responses_count != 1)
		return -1;
	return resp.responses[0].error_code;
}

/* ElectLeaders v2 for one partition: its error code (-1: none). */
static int
elect(int i, int8_t type, const char *topic, int32_t p)
{
	struct rn_ElectLeadersRequest req;
	struct rn_ElectLeadersRequest_TopicPartitions tp;
	struct rn_ElectLeadersResponse resp;

	rn_ElectLeadersRequest_init(&req);
	rn_ElectLeadersRequest_TopicPartitions_init(&tp);
	tp.topic = rn_kstr_c(topic);
	tp.partitions = &p;
	tp.partitions_count = 1;
	req.election_type = type;
	req.topic_partitions = &tp;
	req.topic_partitions_count = 1;
	if (th_admin_call(&cl, i, RN_KAPI_ELECT_LEADERS, 2, &req, &resp,
	    10000) != 0 || resp.replica_election_results_count != 1 ||
	    resp.replica_election_results[0].partition_result_count != 1)
		return -1;
	return resp.replica_election_results[0].partition_result[0].error_code;
}

/* The network worker's RN_IPC_ALTER_PARTITION. */
static void
ipc_alter(int i, const uint8_t tid[16], int32_t p, int32_t le, int32_t pe,
    const int32_t *isr, int n)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int k;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 6);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "topic_id");
	msgpack_pack_bin(&pk, 16);
	msgpack_pack_bin_body(&pk, tid, 16);
	rn_mp_pack_str(&pk, "p");
	msgpack_pack_int(&pk, p);
	rn_mp_pack_str(&pk, "leader_epoch");
	msgpack_pack_int(&pk, le);
	rn_mp_pack_str(&pk, "partition_epoch");
	msgpack_pack_int(&pk, pe);
	rn_mp_pack_str(&pk, "isr");
	msgpack_pack_array(&pk, (size_t)n);
	for (k = 0; k < n; k++)
		msgpack_pack_int(&pk, isr[k]);
	th_send(&cl, i, RN_IPC_ALTER_PARTITION, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
}

/* ---- a broker on the controller listener ------------------------------ */

static int
kafka_call(int i, int16_t key, int16_t ver, const struct rn_kwriter *body,
    struct rn_kreader *resp)
{
	struct sockaddr_in sin;
	struct rn_kframebuf in = { NULL, 0, 0 };
	struct rn_kwriter w;
	uint8_t *buf = NULL;
	int fd, rc;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(cl.node[i].cport);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
		bail("connect to the controller listener");
	rn_kwriter_init(&w);
	if (rn_kframe_request(&w, -1, key, ver, 77, "test", NULL, body->buf,
	    body->len) != 0 || write(fd, w.buf, w.len) != (ssize_t)w.len)
		bail("write");
	rn_kwriter_free(&w);
	while ((rc = rn_kframe_recv(fd, &in, 1 << 24)) == 0) {
		struct pollfd pfd = { fd, POLLIN, 0 };

		if (poll(&pfd, 1, 30000) != 1)
			break;
	}
	close(fd);
	if (rc == 1 && (buf = rn_arena_alloc(&cl.arena, in.len - 4)) != NULL)
		memcpy(buf, in.buf + 4, in.len - 4);
	rc = buf != NULL ? rn_kframe_response(resp, buf, in.len - 4, -1, key,
	    ver, 77) : -1;
	rn_kfb_free(&in);
	return rc == 0 ? 0 : -1;
}

/* AlterPartition v2 from broker_id: the partition's error code. */
static int
alter(int leader_node, int32_t broker_id, const uint8_t tid[16], int32_t p,
    int32_t le, int32_t pe, const int32_t *isr, int32_t n)
{
	struct rn_AlterPartitionRequest req;
	struct rn_AlterPartitionRequest_TopicData td;
	struct rn_AlterPartitionRequest_PartitionData pd;
	struct rn_AlterPartitionResponse resp;
	struct rn_kwriter w;
	struct rn_kreader r;

	rn_AlterPartitionRequest_init(&req);
	rn_AlterPartitionRequest_TopicData_init(&td);
	rn_AlterPartitionRequest_PartitionData_init(&pd);
	req.broker_id = broker_id;
	req.broker_epoch = -1;
	memcpy(td.topic_id.b, tid, 16);
	pd.partition_index = p;
	pd.leader_epoch = le;
	pd.partition_epoch = pe;
	pd.new_isr = (int32_t *)isr;
	pd.new_isr_count = n;
	td.partitions = &pd;
	td.partitions_count = 1;
	req.topics = &td;
	req.topics_count = 1;
	rn_kwriter_init(&w);
	rn_AlterPartitionRequest_encode(&w, 2, &req);
	if (kafka_call(leader_node, RN_KAPI_ALTER_PARTITION, 2, &w, &r) != 0 ||
	    rn_AlterPartitionResponse_decode(&r, 2, &cl.arena, &resp) != 0) {
		rn_kwriter_free(&w);
		return -1;
	}
	rn_kwriter_free(&w);
	if (resp.error_code != 0)
		return resp.error_code;
	if (resp.topics_count != 1 || resp.topics[0].partitions_count != 1)
		return -1;
	return resp.topics[0].partitions[0].error_code;
}

/* ---- predicates ------------------------------------------------------ */

struct pcheck {
	int node;
	const char *topic;
	int32_t p;
	int32_t leader;          /* wanted leader, or -2: any but not_leader */
	int32_t not_leader;
	int32_t in_isr, not_in_isr;
	int32_t min_epoch;
};

static bool
pred_part(void *arg)
{
	struct pcheck *pc = arg;
	const struct rn_mdv_partition *pp = part_at(pc->node, pc->topic,
	    pc->p);

	if (pp == NULL)
		return false;
	if (pc->leader >= -1 && pp->leader != pc->leader)
		return false;
	if (pc->leader == -2 && (pp->leader < 0 || pp->leader ==
	    pc->not_leader))
		return false;
	if (pc->in_isr >= 0 && !has(pp->isr, pp->n_isr, pc->in_isr))
		return false;
	if (pc->not_in_isr >= 0 && has(pp->isr, pp->n_isr, pc->not_in_isr))
		return false;
	return pp->leader_epoch >= pc->min_epoch;
}

struct bcheck {
	int node;
	int32_t broker;
	bool fenced;
};

static bool
pred_broker(void *arg)
{
	struct bcheck *bc = arg;
	const struct rn_mdv_broker *b = rn_mdview_broker(th_view(&cl, bc->node),
	    bc->broker);

	return b != NULL && b->fenced == bc->fenced;
}

static bool
pred_topic(void *arg)
{
	const char *name = arg;

	return rn_mdview_topic(th_view(&cl, N - 1), name, strlen(name)) != NULL;
}

static bool
pred_shutdown_done(void *arg)
{
	int i = *(int *)arg;

	return atomic_load(&cl.node[i].shm.hdr->controlled_shutdown) == 2;
}

static bool
pred_leader(void *arg)
{
	(void)arg;
	return (cur_leader = th_agreed_leader(&cl)) >= 0;
}

/* ---- the scenario ---------------------------------------------------- */

static int leader, follower;   /* node indexes of voters */
static int victim;             /* a voter that is not the leader */
static uint8_t tid[16];        /* r3's topic id */
static int32_t victim_p = -1;  /* the r3 partition broker 4 leads */
static int32_t old_epoch;      /* its leader epoch before fencing */

static int
count_isr_with(const char *topic, int32_t broker)
{
	int32_t p;
	int k = 0;

	for (p = 0; p < 6; p++)
		if (has(part_at(leader, topic, p)->isr,
		    part_at(leader, topic, p)->n_isr, broker))
			k++;
	return k;
}

/* 1: registration and heartbeats */
static void
test_registration(void)
{
	struct rn_mdview *v;
	bool up;

	/* first, as pred_all_registered sets cur_leader */
	up = th_wait_for(pred_all_registered, NULL, 20000);
	ok(up, "brokers 1-4 registered and unfenced (active controller node "
	    "%d)", cur_leader + 1);
	if (cur_leader < 0)
		bail("no cluster");
	leader = cur_leader;
	follower = (leader + 1) % VOTERS;
	v = th_view(&cl, leader);
	ok(v->n_brokers == N && rn_mdview_broker(v, 4) != NULL &&
	    rn_mdview_broker(v, 4)->n_listeners == 1,
	    "the broker-only node's registration carries its listener");
}

/* Whether t's replicas follow the rack-unaware placement for some start
 * index and shift. */
static bool
placed_rack_unaware(const struct rn_mdv_topic *t)
{
	int32_t brokers[N] = { 1, 2, 3, 4 }, expect[18], p;
	int i, k, s, sh;

	for (s = 0; s < N; s++)
		for (sh = 0; sh < N; sh++) {
			rn_assign_rack_unaware(brokers, N, 6, 3, s, sh, 0,
			    expect);
			for (p = 0, k = 0; p < 6; p++)
				for (i = 0; i < 3; i++)
					if (t->parts[p].n_replicas == 3 &&
					    t->parts[p].replicas[i] ==
					    expect[p * 3 + i])
						k++;
			if (k == 18)
				return true;
		}
	return false;
}

/* 2: an RF=3 topic placed by the rack-unaware algorithm */
static void
test_placement(void)
{
	const struct rn_mdv_topic *t;
	int32_t p, dup[2] = { 1, 1 }, unknown[2] = { 1, 9 };
	int k;

	is_int(create_topic(follower, "r3", 6, 3, NULL, 0, 10000), 0,
	    "CreateTopics r3 (RF 3) through a follower (forwarded)");
	t = rn_mdview_topic(th_view(&cl, leader), "r3", 2);
	ok(t != NULL && t->n_parts == 6, "r3 has 6 partitions");
	if (t == NULL)
		bail("no r3");
	memcpy(tid, t->id, 16);
	ok(placed_rack_unaware(t),
	    "replicas follow the placement for some start and shift");
	for (p = 0, k = 0; p < 6; p++)
		if (t->parts[p].leader == t->parts[p].replicas[0] &&
		    t->parts[p].n_isr == 3)
			k++;
	is_int(k, 6, "leader = first replica, ISR = all replicas");
	is_int(create_topic(leader, "too-big", 1, 5, NULL, 0, 10000),
	    RN_KERR_INVALID_REPLICATION_FACTOR, "RF 5 > 4 live brokers");
	is_int(create_topic(leader, "dup", -1, -1, dup, 2, 10000),
	    RN_KERR_INVALID_REPLICA_ASSIGNMENT,
	    "manual assignment with a duplicate broker");
	is_int(create_topic(leader, "unk", -1, -1, unknown, 2, 10000),
	    RN_KERR_INVALID_REPLICA_ASSIGNMENT,
	    "manual assignment with an unknown broker");
	is_int(create_topic(leader, "both", 1, -1, dup, 2, 10000),
	    RN_KERR_INVALID_REQUEST,
	    "assignment together with num_partitions");
}

/* 2b: KIP-858: a registration without a log dir; AssignReplicasToDirs */
static int16_t
register_dirless(void)
{
	struct rn_BrokerRegistrationRequest req;
	struct rn_BrokerRegistrationRequest_Listener ls;
	struct rn_BrokerRegistrationResponse resp;
	struct rn_kwriter w;
	struct rn_kreader r;
	int16_t e = -1;

	rn_BrokerRegistrationRequest_init(&req);
	rn_BrokerRegistrationRequest_Listener_init(&ls);
	req.broker_id = 9;
	memset(req.incarnation_id.b, 9, 16);
	ls.name = rn_kstr_c("PLAINTEXT");
	ls.host = rn_kstr_c("127.0.0.1");
	ls.port = 9;
	req.listeners = &ls;
	req.listeners_count = 1;
	req.log_dirs_count = 0;
	rn_kwriter_init(&w);
	rn_BrokerRegistrationRequest_encode(&w, 2, &req);
	if (kafka_call(leader, RN_KAPI_BROKER_REGISTRATION, 2, &w, &r) == 0 &&
	    rn_BrokerRegistrationResponse_decode(&r, 2, &cl.arena, &resp) == 0)
		e = resp.error_code;
	rn_kwriter_free(&w);
	return e;
}

/* AssignReplicasToDirs of one replica: the request's or the partition's
 * error. */
static int
assign_dir(int32_t broker, int64_t epoch, const uint8_t dir[16], int32_t p)
{
	struct rn_AssignReplicasToDirsRequest req;
	struct rn_AssignReplicasToDirsRequest_DirectoryData dd;
	struct rn_AssignReplicasToDirsRequest_TopicData td;
	struct rn_AssignReplicasToDirsRequest_PartitionData pd;
	struct rn_AssignReplicasToDirsResponse resp;
	struct rn_kwriter w;
	struct rn_kreader r;
	int e = -1;

	rn_AssignReplicasToDirsRequest_init(&req);
	rn_AssignReplicasToDirsRequest_DirectoryData_init(&dd);
	rn_AssignReplicasToDirsRequest_TopicData_init(&td);
	rn_AssignReplicasToDirsRequest_PartitionData_init(&pd);
	req.broker_id = broker;
	req.broker_epoch = epoch;
	memcpy(dd.id.b, dir, 16);
	memcpy(td.topic_id.b, tid, 16);
	pd.partition_index = p;
	td.partitions = &pd;
	td.partitions_count = 1;
	dd.topics = &td;
	dd.topics_count = 1;
	req.directories = &dd;
	req.directories_count = 1;
	rn_kwriter_init(&w);
	rn_AssignReplicasToDirsRequest_encode(&w, 0, &req);
	if (kafka_call(leader, RN_KAPI_ASSIGN_REPLICAS_TO_DIRS, 0, &w,
	    &r) == 0 && rn_AssignReplicasToDirsResponse_decode(&r, 0,
	    &cl.arena, &resp) == 0)
		e = resp.error_code != 0 ? resp.error_code :
		    resp.directories_count == 1 &&
		    resp.directories[0].topics_count == 1 &&
		    resp.directories[0].topics[0].partitions_count == 1 ?
		    resp.directories[0].topics[0].partitions[0].error_code : -1;
	rn_kwriter_free(&w);
	return e;
}

static const uint8_t zero_dir[16];
static uint8_t home_dir[16];   /* the replica's directory before */
static int home_node;

static bool
pred_home_has(void *arg)
{
	(void)arg;
	return part_at(home_node, "r3", 0) != NULL;
}

static bool
pred_dir_back(void *arg)
{
	const struct rn_mdv_partition *pp = part_at(home_node, "r3", 0);

	(void)arg;
	return pp != NULL && memcmp(pp->dir_id, home_dir, 16) == 0 &&
	    atomic_load(&cl.node[home_node].shm.hdr->dir_mismatches) == 0;
}

static void
test_log_dirs(void)
{
	const struct rn_mdv_partition *pp = part_at(leader, "r3", 0);
	const struct rn_mdv_broker *b;
	uint8_t other[16];
	int32_t broker;

	is_int(register_dirless(), RN_KERR_INVALID_REQUEST,
	    "BrokerRegistration v2 with no online log dir: INVALID_REQUEST");
	is_int(assign_dir(9, 1, zero_dir, 0), RN_KERR_BROKER_ID_NOT_REGISTERED,
	    "AssignReplicasToDirs from an unregistered broker");
	if (pp == NULL)
		bail("no r3-0");
	broker = pp->replicas[0];
	home_node = broker - 1;
	b = rn_mdview_broker(th_view(&cl, leader), broker);
	/* a broker-only node may not have the topic in its image yet */
	if (b == NULL || !th_wait_for(pred_home_has, NULL, 10000))
		bail("r3-0 not in node %d's image", home_node + 1);
	memcpy(home_dir, part_at(home_node, "r3", 0)->dir_id, 16);
	ok(memcmp(home_dir, zero_dir, 16) != 0,
	    "the replica's directory is in its partition record");
	is_int(assign_dir(broker, b->epoch + 1, zero_dir, 0),
	    RN_KERR_STALE_BROKER_EPOCH, "AssignReplicasToDirs, stale epoch");
	memset(other, 0x5a, 16);
	is_int(assign_dir(broker, b->epoch, other, 0), RN_KERR_INVALID_REQUEST,
	    "a directory the broker did not register: INVALID_REQUEST");
	is_int(assign_dir(broker, b->epoch, zero_dir, 0), 0,
	    "the replica assigned to Uuid.ZERO");
	ok(th_wait_for(pred_dir_back, NULL, 10000), "its broker reports where "
	    "it keeps it (AssignReplicasToDirs) and the record says so again; "
	    "no mismatch is left");
}

/* 3: the broker-only node's image, with its own slots */
static void
test_broker_only_image(void)
{
	const struct rn_mdv_topic *t;
	int32_t p;
	int k, slots_ok;

	ok(th_wait_for(pred_topic, "r3", 5000),
	    "r3 reaches broker-only node 4");
	t = rn_mdview_topic(th_view(&cl, N - 1), "r3", 2);
	for (p = 0, slots_ok = 0, k = 0; t != NULL && p < t->n_parts; p++) {
		bool mine = has(t->parts[p].replicas, t->parts[p].n_replicas,
		    4);

		if (mine)
			k++;
		if (mine ? t->parts[p].slot >= 0 && t->parts[p].dir == 0 :
		    t->parts[p].slot == -1)
			slots_ok++;
	}
	ok(t != NULL && k > 0 && slots_ok == 6,
	    "node 4 has slots for its %d replicas only", k);
	ok(th_view(&cl, N - 1)->controller_id == leader + 1,
	    "node 4's image names the active controller");
}

/* 4: fencing: node 4 stops heartbeating */
static void
test_fencing(void)
{
	const struct rn_mdv_partition *pp;
	struct bcheck bc = { 0, 4, true };
	struct pcheck pc = { 0, "r3", 0, -2, 4, -1, 4, 0 };
	int32_t p;
	int64_t t0;
	bool fenced;

	for (p = 0; p < 6; p++)
		if (rn_mdview_topic(th_view(&cl, leader), "r3",
		    2)->parts[p].leader == 4)
			victim_p = p;
	ok(victim_p >= 0, "broker 4 leads r3-%d", victim_p);
	if (victim_p < 0)
		bail("placement");
	old_epoch = part_at(leader, "r3", victim_p)->leader_epoch;
	kill(cl.node[N - 1].pid, SIGSTOP);
	t0 = rn_now_ms();
	bc.node = pc.node = leader;
	pc.p = victim_p;
	pc.min_epoch = old_epoch + 1;
	fenced = th_wait_for(pred_broker, &bc, 6000);
	ok(fenced, "broker 4 fenced after %lld ms without heartbeats",
	    (long long)(rn_now_ms() - t0));
	/* its last heartbeat was up to one interval before the stop */
	ok(rn_now_ms() - t0 >= 1500 - 300 - 100,
	    "not before the session timeout");
	ok(th_wait_for(pred_part, &pc, 3000), "r3-%d has a new leader "
	    "from the ISR, leader epoch +1, broker 4 left the ISR",
	    victim_p);
	pp = part_at(leader, "r3", victim_p);
	ok(pp != NULL && pp->leader_epoch == old_epoch + 1 &&
	    has(pp->offline, pp->n_offline, 4),
	    "epoch %d, and 4 listed offline", pp ? pp->leader_epoch : -1);
	is_int(count_isr_with("r3", 4), 0, "broker 4 is in no ISR");
}

/* AlterPartition validation against the active controller */
static void
test_alter_partition_checks(void)
{
	const struct rn_mdv_partition *pp = part_at(leader, "r3", victim_p);
	int32_t isr[4], n = pp->n_isr, l = pp->leader, le =
	    pp->leader_epoch, pe = pp->partition_epoch;

	memcpy(isr, pp->isr, sizeof(int32_t) * (size_t)n);
	isr[n] = 4;
	is_int(alter(leader, l, tid, victim_p, le, pe, isr, n + 1),
	    RN_KERR_INELIGIBLE_REPLICA, "a fenced broker cannot join "
	    "the ISR");
	is_int(alter(leader, l, tid, victim_p, le - 1, pe, isr, n),
	    RN_KERR_FENCED_LEADER_EPOCH, "an old leader epoch");
	is_int(alter(leader, l, tid, victim_p, le, pe - 1, isr, n),
	    RN_KERR_INVALID_UPDATE_VERSION, "an old partition epoch");
	is_int(alter(leader, l == 1 ? 2 : 1, tid, victim_p, le, pe,
	    isr, n), RN_KERR_INVALID_REQUEST, "not from the leader");
	is_int(alter(follower, l, tid, victim_p, le, pe, isr, n),
	    RN_KERR_NOT_CONTROLLER, "a follower is not the "
	    "controller");
}

/* 5: resume: unfenced, rejoins no ISR by itself */
static void
test_unfence(void)
{
	const struct rn_mdv_partition *pp;
	struct bcheck bc = { 0, 4, false };
	struct pcheck pc = { 0, "r3", 0, 0, -1, 4, -1, 0 };
	int32_t isr[4], n, l;

	kill(cl.node[N - 1].pid, SIGCONT);
	bc.node = leader;
	ok(th_wait_for(pred_broker, &bc, 5000), "broker 4 unfenced");
	usleep(700000);
	is_int(count_isr_with("r3", 4), 0, "and still in no ISR");
	/* ISR expansion through the leader's network worker */
	pp = part_at(leader, "r3", victim_p);
	n = pp->n_isr;
	l = pp->leader;
	pc.node = leader;
	pc.p = victim_p;
	pc.leader = l;
	pc.min_epoch = pp->leader_epoch;
	memcpy(isr, pp->isr, sizeof(int32_t) * (size_t)n);
	isr[n] = 4;
	ipc_alter(l - 1, tid, victim_p, pp->leader_epoch,
	    pp->partition_epoch, isr, n + 1);
	ok(th_wait_for(pred_part, &pc, 5000), "RN_IPC_ALTER_PARTITION on "
	    "node %d put 4 back in the ISR of r3-%d", l, victim_p);
}

/* preferred election: r3-victim_p's first replica is 4 */
static void
test_preferred_election(void)
{
	struct pcheck pc = { 0, "r3", 0, 4, -1, -1, -1, 0 };

	pc.node = leader;
	pc.p = victim_p;
	pc.min_epoch = old_epoch + 2;
	is_int(elect(follower, 0, "r3", victim_p), 0,
	    "ElectLeaders PREFERRED through a follower");
	ok(th_wait_for(pred_part, &pc, 3000), "broker 4 leads r3-%d "
	    "again", victim_p);
	is_int(elect(follower, 0, "r3", victim_p),
	    RN_KERR_ELECTION_NOT_NEEDED, "again: ELECTION_NOT_NEEDED");
	is_int(elect(follower, 1, "r3", victim_p),
	    RN_KERR_ELECTION_NOT_NEEDED, "UNCLEAN with a leader: not needed");
}

/* 6: unclean election off, then on at run time */
static void
test_unclean_election(void)
{
	const struct rn_mdv_topic *t;
	const struct rn_mdv_partition *pp;
	int32_t as[2] = { 4, 0 }, isr1[1] = { 4 };
	struct bcheck bc = { 0, 4, true };
	struct pcheck pc = { 0, "u1", 0, -1, -1, -1, -1, 0 };
	uint8_t uid[16];

	victim = leader == 0 ? 1 : 0;
	as[1] = victim + 1;
	bc.node = pc.node = leader;
	is_int(create_topic(leader, "u1", -1, -1, as, 2, 10000), 0,
	    "CreateTopics u1 with assignment [4,%d]", victim + 1);
	t = rn_mdview_topic(th_view(&cl, leader), "u1", 2);
	if (t == NULL)
		bail("no u1");
	memcpy(uid, t->id, 16);
	is_int(alter(leader, 4, uid, 0, t->parts[0].leader_epoch,
	    t->parts[0].partition_epoch, isr1, 1), 0,
	    "leader 4 shrinks the ISR of u1-0 to [4]");
	kill(cl.node[N - 1].pid, SIGSTOP);
	ok(th_wait_for(pred_broker, &bc, 6000), "broker 4 fenced");
	ok(th_wait_for(pred_part, &pc, 3000), "u1-0 is leaderless");
	usleep(500000);
	pp = part_at(leader, "u1", 0);
	ok(pp != NULL && pp->leader == -1 && pp->n_isr == 1 &&
	    pp->isr[0] == 4, "and stays so: ISR [4], no leader");
	is_int(set_topic_config(follower, "u1",
	    "unclean.leader.election.enable", "true"), 0,
	    "unclean.leader.election.enable=true on u1 at run time");
	pc.leader = victim + 1;
	pc.in_isr = victim + 1;
	pc.not_in_isr = 4;
	ok(th_wait_for(pred_part, &pc, 3000), "out-of-sync replica %d "
	    "leads u1-0 with ISR [%d]", victim + 1, victim + 1);
	kill(cl.node[N - 1].pid, SIGCONT);
	bc.fenced = false;
	ok(th_wait_for(pred_broker, &bc, 5000), "broker 4 back");
}

static int
count_led_by(const char *topic, int32_t broker)
{
	int32_t p;
	int k = 0;

	for (p = 0; p < 6; p++)
		if (part_at(leader, topic, p)->leader == broker)
			k++;
	return k;
}

/* 7: controlled shutdown of a voter that is not the leader */
static void
test_controlled_shutdown(void)
{
	struct bcheck bc = { 0, 0, false };
	int cnt;

	cnt = count_led_by("r3", victim + 1);
	ok(cnt > 0, "broker %d leads %d r3 partition(s)", victim + 1, cnt);
	atomic_store(&cl.node[victim].shm.hdr->controlled_shutdown, 1);
	ok(th_wait_for(pred_shutdown_done, &victim, 5000),
	    "controlled shutdown of node %d completes", victim + 1);
	is_int(count_led_by("r3", victim + 1), 0,
	    "it leads no r3 partition any more");
	is_int(count_isr_with("r3", victim + 1), 0, "and is in no r3 ISR");
	th_stop(&cl, victim, SIGKILL);
	atomic_store(&cl.node[victim].shm.hdr->controlled_shutdown, 0);
	th_start(&cl, victim);
	bc.node = leader;
	bc.broker = victim + 1;
	ok(th_wait_for(pred_broker, &bc, 10000), "node %d "
	    "restarted, registered again and unfenced", victim + 1);
}

static void
check_quorum_answer(const struct rn_DescribeQuorumResponse *resp)
{
	const struct rn_DescribeQuorumResponse_PartitionData *q =
	    &resp->topics[0].partitions[0];
	int caught = 0, k;

	is_int(q->leader_id, leader + 1, "leader id");
	ok(q->leader_epoch >= 1 && q->high_watermark > 10,
	    "leader epoch %d, high watermark %lld",
	    q->leader_epoch, (long long)q->high_watermark);
	is_int(q->current_voters_count, 3, "three voters");
	for (k = 0; k < q->current_voters_count; k++)
		if (q->current_voters[k].log_end_offset > 0 &&
		    q->current_voters[k].last_caught_up_timestamp > 0)
			caught++;
	is_int(caught, 3, "each with an end offset and a caught-up time");
	ok(q->observers_count == 1 && q->observers[0].replica_id == 4 &&
	    q->observers[0].log_end_offset > 0, "observer: broker 4");
	is_int(resp->nodes_count, 3, "v2 lists the voters' endpoints");
}

/* 8: DescribeQuorum through a follower */
static void
test_describe_quorum(void)
{
	struct rn_DescribeQuorumRequest req;
	struct rn_DescribeQuorumRequest_TopicData td;
	struct rn_DescribeQuorumRequest_PartitionData pd;
	struct rn_DescribeQuorumResponse resp;
	struct rn_kwriter w;
	struct rn_kreader r;
	uint64_t id;
	int err;

	rn_DescribeQuorumRequest_init(&req);
	rn_DescribeQuorumRequest_TopicData_init(&td);
	rn_DescribeQuorumRequest_PartitionData_init(&pd);
	pd.partition_index = 0;
	td.topic_name = rn_kstr_c("__cluster_metadata");
	td.partitions = &pd;
	td.partitions_count = 1;
	req.topics = &td;
	req.topics_count = 1;
	rn_kwriter_init(&w);
	rn_DescribeQuorumRequest_encode(&w, 2, &req);
	id = th_admin_send(&cl, follower, RN_KAPI_DESCRIBE_QUORUM, 2, &w);
	rn_kwriter_free(&w);
	err = th_admin_wait(&cl, follower, id, 10000, &r);
	is_int(err, 0, "DescribeQuorum answered");
	if (err == 0 && rn_DescribeQuorumResponse_decode(&r, 2, &cl.arena,
	    &resp) == 0 && resp.topics_count == 1)
		check_quorum_answer(&resp);
	else
		ok(0, "DescribeQuorum decodes");
}

/* 9: quorum loss: two voters killed */
static void
test_quorum_loss(void)
{
	int keep = leader, a = (leader + 1) % VOTERS,
	    b = (leader + 2) % VOTERS;
	struct rn_CreateTopicsRequest req;
	struct rn_CreateTopicsRequest_CreatableTopic tt;
	struct rn_kwriter w;
	struct rn_kreader r;
	uint64_t id;

	th_stop(&cl, a, SIGKILL);
	th_stop(&cl, b, SIGKILL);
	usleep(2500000); /* the lone leader steps down */
	rn_CreateTopicsRequest_init(&req);
	rn_CreateTopicsRequest_CreatableTopic_init(&tt);
	tt.name = rn_kstr_c("late");
	tt.num_partitions = 1;
	tt.replication_factor = 1;
	req.topics = &tt;
	req.topics_count = 1;
	rn_kwriter_init(&w);
	rn_CreateTopicsRequest_encode(&w, 7, &req);
	id = th_admin_send(&cl, keep, RN_KAPI_CREATE_TOPICS, 7, &w);
	rn_kwriter_free(&w);
	is_int(th_admin_wait(&cl, keep, id, 4000, &r), TH_NO_ANSWER,
	    "without a majority CreateTopics gets no answer");
	th_start(&cl, a);
	th_start(&cl, b);
	is_int(th_admin_wait(&cl, keep, id, 20000, &r), 0, "the voters are "
	    "back: answered");
	ok(th_wait_for(pred_leader, NULL, 10000) &&
	    th_wait_for(pred_topic, "late", 10000),
	    "the topic exists once the quorum is back");
}

/* 10: a node whose meta.properties names another cluster */
static void
test_other_cluster(void)
{
	struct rn_metaprops mp;
	char err[256];
	int status;

	if (rn_metaprops_read(cl.node[4].dir, &mp, err, sizeof(err)) != 0)
		bail("meta.properties: %s", err);
	strcpy(mp.cluster_id, "AAAAAAAAAAAAAAAAAAAAAQ");
	if (rn_metaprops_write(cl.node[4].dir, &mp) != 0)
		bail("cannot rewrite meta.properties");
	th_start(&cl, 4);
	status = th_wait_exit(&cl, 4, 10000);
	ok(status != -1 && WIFEXITED(status) &&
	    WEXITSTATUS(status) == RN_WORKER_EXIT_FATAL,
	    "broker 5 of another cluster is refused and stops with "
	    "status 2 (0x%x)", status);
	ok(rn_mdview_broker(th_view(&cl, cur_leader), 5) == NULL,
	    "and is not registered");
}

int
main(int argc, char **argv)
{
	static char extra[256];
	int i;

	setproctitle_init(argc, argv, environ);
	rn_log_init("test", NULL, 0);
	snprintf(extra, sizeof(extra), "log.verbose=%s\n"
	    "broker.session.timeout.ms=1500\n"
	    "broker.heartbeat.interval.ms=300\n",
	    getenv("RN_TEST_VERBOSE") != NULL ? "true" : "false");
	cl.extra_config = extra;
	th_setup(&cl);
	for (i = 0; i < N; i++)
		th_start(&cl, i);
	test_registration();
	test_placement();
	test_log_dirs();
	test_broker_only_image();
	test_fencing();
	test_alter_partition_checks();
	test_unfence();
	test_preferred_election();
	test_unclean_election();
	test_controlled_shutdown();
	test_describe_quorum();
	test_quorum_loss();
	test_other_cluster();
	th_teardown(&cl, tap_failed != 0);
	return done_testing();
}
