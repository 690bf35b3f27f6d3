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
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/config.h"
#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "supervisor/sv_metaprops.h"
#include "tests/lib/tap.h"
#include "workers/ctl_assign.h"
#include "workers/worker.h"

extern char **environ;

#define N 4          /* nodes 1-3 voters, 4 broker-only */
#define VOTERS 3
#define N_ALL 5      /* and 5: broker-only, of another cluster */

struct node {
	struct rn_config cfg;
	struct rn_shm shm;
	struct rn_worker_env env;
	struct rn_mdview view;
	char dir[300];
	uint16_t cport;
	pid_t pid;
};

static struct node nodes[N_ALL];
static char tmpdir[256];
static uint64_t next_req = 1;
static struct rn_arena arena;

static int
listener(uint16_t *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0), on = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(fd, 16) != 0 || getsockname(fd, (struct sockaddr *)&sin,
	    &len) != 0)
		bail("cannot listen: %s", strerror(errno));
	*port = ntohs(sin.sin_port);
	return fd;
}

static void
start(int i)
{
	struct node *n = &nodes[i];

	fflush(stdout);
	fflush(stderr);
	if (rn_seq_writer_died(&rn_shm_meta(&n->shm)->lock))
		rn_shm_meta_rebuild(&n->shm);
	if ((n->pid = fork()) < 0)
		bail("fork");
	if (n->pid == 0) {
		char path[400];
		int k;

		/* one log per node, kept when a test fails */
		snprintf(path, sizeof(path), "%s/node%d.log", tmpdir, i + 1);
		if ((k = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		    0644)) < 0 || dup2(k, 2) < 0)
			_exit(1);
		close(k);
		for (k = 0; k < N_ALL; k++)
			if (k != i && nodes[k].env.n_listen > 0)
				close(nodes[k].env.listen[0].fd);
		rn_worker_run(&n->env, RN_ROLE_W_CONTROLLER, 0, getuid(),
		    getgid(), false);
	}
	atomic_store(&rn_shm_worker(&n->shm, 0)->pid, n->pid);
}

static void
stop(int i, int sig)
{
	int status;

	if (nodes[i].pid <= 0)
		return;
	kill(nodes[i].pid, SIGCONT);
	kill(nodes[i].pid, sig);
	waitpid(nodes[i].pid, &status, 0);
	nodes[i].pid = 0;
}

static void
setup(void)
{
	char voters[512], text[2048], err[256];
	uint16_t bport;
	int fds[VOTERS], i, bfd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rn-test-cluster-XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
		bail("mkdtemp");
	for (i = 0; i < VOTERS; i++)
		fds[i] = listener(&nodes[i].cport);
	snprintf(voters, sizeof(voters), "1@127.0.0.1:%u,2@127.0.0.1:%u,"
	    "3@127.0.0.1:%u", nodes[0].cport, nodes[1].cport, nodes[2].cport);
	for (i = 0; i < N_ALL; i++) {
		struct node *n = &nodes[i];
		struct rn_shm_params sp = { 2, 1u << 16, 64 };

		bfd = listener(&bport);
		close(bfd);
		snprintf(n->dir, sizeof(n->dir), "%s/node%d", tmpdir, i + 1);
		rn_mkdir_p(n->dir, 0750);
		if (i < VOTERS)
			snprintf(text, sizeof(text),
			    "node.id=%d\nprocess.roles=broker,controller\n"
			    "listeners=PLAINTEXT://127.0.0.1:%u,"
			    "CONTROLLER://127.0.0.1:%u\n", i + 1, bport,
			    n->cport);
		else
			snprintf(text, sizeof(text),
			    "node.id=%d\nprocess.roles=broker\n"
			    "listeners=PLAINTEXT://127.0.0.1:%u\n", i + 1,
			    bport);
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
		    "controller.listener.names=CONTROLLER\n"
		    "controller.quorum.voters=%s\nlog.dirs=%s\n"
		    "shm.max.partitions=64\nlog.verbose=%s\n"
		    "broker.session.timeout.ms=1500\n"
		    "broker.heartbeat.interval.ms=300\n", voters, n->dir,
		    getenv("RN_TEST_VERBOSE") != NULL ? "true" : "false");
		if (rn_config_parse(&n->cfg, text, "test", err, sizeof(err),
		    NULL, NULL) != 0 || rn_config_finish(&n->cfg, err,
		    sizeof(err)) != 0)
			bail("config: %s", err);
		if (rn_shm_create(&sp, &n->shm) != 0)
			bail("shm");
		n->env.cfg = &n->cfg;
		n->env.shm = &n->shm;
		if (i < VOTERS) {
			n->env.listen[0].fd = fds[i];
			n->env.listen[0].listener = 1;
			n->env.listen[0].controller = true;
			n->env.n_listen = 1;
		}
		n->env.n_workers = 2;
		n->env.n_network = 1;
		n->env.efd[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		n->env.efd[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (rn_metaprops_ensure(&n->cfg, &n->env) != 0)
			bail("meta.properties");
		atomic_store(&rn_shm_worker(&n->shm, 1)->pid, getpid());
		rn_mdview_init(&n->view);
	}
}

static struct rn_mdview *
view(int i)
{
	rn_mdview_refresh(&nodes[i].view, &nodes[i].shm);
	return &nodes[i].view;
}

/* The node index the live voters' images agree leads, or -1. */
static int
agreed_leader(void)
{
	int i, leader = -1;

	for (i = 0; i < VOTERS; i++) {
		struct rn_mdview *v;

		if (nodes[i].pid <= 0)
			continue;
		v = view(i);
		if (v->version == 0 || v->cluster_id[0] == '\0')
			return -1;
		if (leader == -1)
			leader = v->controller_id;
		else if (v->controller_id != leader)
			return -1;
	}
	return leader >= 1 && leader <= VOTERS && nodes[leader - 1].pid > 0 ?
	    leader - 1 : -1;
}

typedef bool (*pred_fn)(void *arg);

static bool
wait_for(pred_fn f, void *arg, int timeout_ms)
{
	int64_t end = rn_now_ms() + timeout_ms;

	while (rn_now_ms() < end) {
		if (f(arg))
			return true;
		usleep(20000);
	}
	return f(arg);
}

static int cur_leader = -1;

static bool
pred_all_registered(void *arg)
{
	struct rn_mdview *v;
	int b, n = 0;

	(void)arg;
	if ((cur_leader = agreed_leader()) < 0)
		return false;
	v = view(cur_leader);
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
	const struct rn_mdv_topic *t = rn_mdview_topic(view(i), topic,
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

static uint64_t
send_admin(int i, int16_t key, int16_t ver, const struct rn_kwriter *body)
{
	struct node *n = &nodes[i];
	struct rn_ring *out = rn_shm_ring_to_ctl(&n->shm, 1);
	msgpack_sbuffer sb;
	msgpack_packer pk;
	uint64_t id = next_req++;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 6);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "req");
	msgpack_pack_uint64(&pk, id);
	rn_mp_pack_str(&pk, "key");
	msgpack_pack_int(&pk, key);
	rn_mp_pack_str(&pk, "ver");
	msgpack_pack_int(&pk, ver);
	rn_mp_pack_str(&pk, "client");
	rn_mp_pack_str(&pk, "test");
	rn_mp_pack_str(&pk, "body");
	msgpack_pack_bin(&pk, body->len);
	msgpack_pack_bin_body(&pk, body->buf, body->len);
	if (rn_ring_push(out, RN_IPC_ADMIN_REQUEST, sb.data,
	    (uint32_t)sb.size) != 0)
		bail("ring push");
	rn_ring_notify(out, n->env.efd[0]);
	msgpack_sbuffer_destroy(&sb);
	return id;
}

/* Wait for the answer to request id: its "err" (-1: none in time); the
 * body is copied into the arena. */
static int
wait_admin(int i, uint64_t id, int timeout_ms, struct rn_kreader *body)
{
	struct node *n = &nodes[i];
	struct rn_ring *in = rn_shm_ring_from_ctl(&n->shm, 1);
	int64_t end = rn_now_ms() + timeout_ms;
	int err = -1;

	while (err == -1 && rn_now_ms() < end) {
		msgpack_unpacked up;
		const void *payload;
		uint16_t type;
		ssize_t len;

		if (rn_ring_wait(in, n->env.efd[1], 100) != 0 ||
		    (len = rn_ring_peek(in, &type, &payload)) < 0)
			continue;
		msgpack_unpacked_init(&up);
		if (type == RN_IPC_ADMIN_RESPONSE &&
		    msgpack_unpack_next(&up, payload, (size_t)len, NULL) ==
		    MSGPACK_UNPACK_SUCCESS &&
		    (uint64_t)rn_mp_get_int(&up.data, "req", -1) == id) {
			const msgpack_object *b = rn_mp_get(&up.data, "body");
			void *copy = rn_arena_alloc(&arena, b->via.bin.size + 1);

			err = (int)rn_mp_get_int(&up.data, "err", -1);
			memcpy(copy, b->via.bin.ptr, b->via.bin.size);
			rn_kreader_init(body, copy, b->via.bin.size);
		}
		msgpack_unpacked_destroy(&up);
		rn_ring_release(in);
	}
	return err;
}

/* CreateTopics v7 of one topic: the topic's error code (-1: no answer). */
static int
create_topic(int i, const char *name, int32_t np, int16_t rf,
    const int32_t *assign, int32_t n_assign, int timeout_ms)
{
	struct rn_CreateTopicsRequest req;
	struct rn_CreateTopicsRequest_CreatableTopic t;
	struct rn_CreateTopicsRequest_CreatableReplicaAssignment as[8];
	struct rn_CreateTopicsResponse resp;
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
	id = send_admin(i, RN_KAPI_CREATE_TOPICS, 7, &w);
	rn_kwriter_free(&w);
	err = wait_admin(i, id, timeout_ms, &r);
	if (err != 0)
		return err == -1 ? -1 : -2;
	if (rn_CreateTopicsResponse_decode(&r, 7, &arena, &resp) != 0 ||
	    resp.topics_count != 1)
		return -3;
	if (resp.topics[0].error_code != 0)
		diag("CreateTopics %s: %s: %.*s", name,
		    rn_kerr_name(resp.topics[0].error_code),
		    (int)(resp.topics[0].error_message.len > 0 ?
		    resp.topics[0].error_message.len : 0),
		    resp.topics[0].error_message.ptr);
	return resp.topics[0].error_code;
}

static int
set_topic_config(int i, const char *topic, const char *key,
    const char *value)
{
	struct rn_IncrementalAlterConfigsRequest req;
	struct rn_IncrementalAlterConfigsRequest_AlterConfigsResource res;
	struct rn_IncrementalAlterConfigsRequest_AlterableConfig cf;
	struct rn_IncrementalAlterConfigsResponse resp;
	struct rn_kwriter w;
	struct rn_kreader r;
	uint64_t id;

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
	rn_kwriter_init(&w);
	rn_IncrementalAlterConfigsRequest_encode(&w, 1, &req);
	id = send_admin(i, RN_KAPI_INCREMENTAL_ALTER_CONFIGS, 1, &w);
	rn_kwriter_free(&w);
	if (wait_admin(i, id, 10000, &r) != 0 ||
	    rn_IncrementalAlterConfigsResponse_decode(&r, 1, &arena,
	    &resp) != 0 || resp.responses_count != 1)
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
	struct rn_kwriter w;
	struct rn_kreader r;
	uint64_t id;

	rn_ElectLeadersRequest_init(&req);
	rn_ElectLeadersRequest_TopicPartitions_init(&tp);
	tp.topic = rn_kstr_c(topic);
	tp.partitions = &p;
	tp.partitions_count = 1;
	req.election_type = type;
	req.topic_partitions = &tp;
	req.topic_partitions_count = 1;
	rn_kwriter_init(&w);
	rn_ElectLeadersRequest_encode(&w, 2, &req);
	id = send_admin(i, RN_KAPI_ELECT_LEADERS, 2, &w);
	rn_kwriter_free(&w);
	if (wait_admin(i, id, 10000, &r) != 0 ||
	    rn_ElectLeadersResponse_decode(&r, 2, &arena, &resp) != 0 ||
	    resp.replica_election_results_count != 1 ||
	    resp.replica_election_results[0].partition_result_count != 1)
		return -1;
	return resp.replica_election_results[0].partition_result[0].error_code;
}

/* The network worker's RN_IPC_ALTER_PARTITION. */
static void
ipc_alter(int i, const uint8_t tid[16], int32_t p, int32_t le, int32_t pe,
    const int32_t *isr, int n)
{
	struct rn_ring *out = rn_shm_ring_to_ctl(&nodes[i].shm, 1);
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
	rn_ring_push(out, RN_IPC_ALTER_PARTITION, sb.data, (uint32_t)sb.size);
	rn_ring_notify(out, nodes[i].env.efd[0]);
	msgpack_sbuffer_destroy(&sb);
}

/* ---- a broker on the controller listener ------------------------------ */

static int
kafka_call(int i, int16_t key, int16_t ver, const struct rn_kwriter *body,
    struct rn_kreader *resp)
{
	struct sockaddr_in sin;
	struct rn_krequest_header h;
	struct rn_kwriter w;
	uint8_t szb[4], *buf;
	int32_t size, corr;
	size_t mark, got;
	ssize_t n;
	int fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(nodes[i].cport);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
		bail("connect to the controller listener");
	memset(&h, 0, sizeof(h));
	h.api_key = key;
	h.api_version = ver;
	h.correlation_id = 77;
	h.client_id = rn_kstr_c("test");
	rn_kwriter_init(&w);
	mark = rn_kw_frame_begin(&w);
	rn_krequest_header_encode(&w, rn_kapi_request_header_version(key, ver),
	    &h);
	rn_kw_raw(&w, body->buf, body->len);
	rn_kw_frame_end(&w, mark);
	if (write(fd, w.buf, w.len) != (ssize_t)w.len)
		bail("write");
	rn_kwriter_free(&w);
	for (got = 0; got < 4; got += (size_t)n)
		if ((n = read(fd, szb + got, 4 - got)) <= 0) {
			close(fd);
			return -1;
		}
	size = rn_kframe_size(szb, 1 << 24);
	buf = rn_arena_alloc(&arena, (size_t)size);
	for (got = 0; got < (size_t)size; got += (size_t)n)
		if ((n = read(fd, buf + got, (size_t)size - got)) <= 0) {
			close(fd);
			return -1;
		}
	close(fd);
	rn_kreader_init(resp, buf, (size_t)size);
	rn_kresponse_header_decode(resp, rn_kapi_response_header_version(key,
	    ver), &corr);
	return corr == 77 ? 0 : -1;
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
	    rn_AlterPartitionResponse_decode(&r, 2, &arena, &resp) != 0) {
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
	const struct rn_mdv_broker *b = rn_mdview_broker(view(bc->node),
	    bc->broker);

	return b != NULL && b->fenced == bc->fenced;
}

static bool
pred_topic(void *arg)
{
	const char *name = arg;

	return rn_mdview_topic(view(N - 1), name, strlen(name)) != NULL;
}

static bool
pred_shutdown_done(void *arg)
{
	int i = *(int *)arg;

	return atomic_load(&nodes[i].shm.hdr->controlled_shutdown) == 2;
}

static bool
pred_leader(void *arg)
{
	(void)arg;
	return (cur_leader = agreed_leader()) >= 0;
}

/* ---- the scenario ---------------------------------------------------- */

int
main(int argc, char **argv)
{
	const struct rn_mdv_topic *t;
	const struct rn_mdv_partition *pp;
	struct rn_mdview *v;
	int32_t brokers[N] = { 1, 2, 3, 4 }, expect[18];
	uint8_t tid[16], uid[16];
	int i, k, s, sh, leader, follower, victim, match, slots_ok;
	int32_t p, victim_p = -1, old_epoch = 0;
	int64_t t0;

	setproctitle_init(argc, argv, environ);
	rn_log_init("test", NULL, 0);
	rn_arena_init(&arena, 64u << 20);
	setup();
	for (i = 0; i < N; i++)
		start(i);

	/* 1: registration and heartbeats */
	k = wait_for(pred_all_registered, NULL, 20000);
	ok(k, "brokers 1-4 registered and unfenced (active controller node "
	    "%d)", cur_leader + 1);
	if (cur_leader < 0)
		bail("no cluster");
	leader = cur_leader;
	follower = (leader + 1) % VOTERS;
	v = view(leader);
	ok(v->n_brokers == N && rn_mdview_broker(v, 4) != NULL &&
	    rn_mdview_broker(v, 4)->n_listeners == 1,
	    "the broker-only node's registration carries its listener");

	/* 2: an RF=3 topic placed by the rack-unaware algorithm */
	is_int(create_topic(follower, "r3", 6, 3, NULL, 0, 10000), 0,
	    "CreateTopics r3 (RF 3) through a follower (forwarded)");
	t = rn_mdview_topic(view(leader), "r3", 2);
	ok(t != NULL && t->n_parts == 6, "r3 has 6 partitions");
	if (t == NULL)
		bail("no r3");
	memcpy(tid, t->id, 16);
	for (s = 0, match = 0; s < N && !match; s++)
		for (sh = 0; sh < N && !match; sh++) {
			ctl_assign_rack_unaware(brokers, N, 6, 3, s, sh, 0,
			    expect);
			for (p = 0, k = 0; p < 6; p++)
				for (i = 0; i < 3; i++)
					if (t->parts[p].n_replicas == 3 &&
					    t->parts[p].replicas[i] ==
					    expect[p * 3 + i])
						k++;
			match = k == 18;
		}
	ok(match, "replicas follow the placement for some start and shift");
	for (p = 0, k = 0; p < 6; p++)
		if (t->parts[p].leader == t->parts[p].replicas[0] &&
		    t->parts[p].n_isr == 3)
			k++;
	is_int(k, 6, "leader = first replica, ISR = all replicas");
	is_int(create_topic(leader, "too-big", 1, 5, NULL, 0, 10000),
	    RN_KERR_INVALID_REPLICATION_FACTOR, "RF 5 > 4 live brokers");
	{
		int32_t dup[2] = { 1, 1 }, unknown[2] = { 1, 9 };

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

	/* 3: the broker-only node's image, with its own slots */
	ok(wait_for(pred_topic, "r3", 5000), "r3 reaches broker-only node 4");
	t = rn_mdview_topic(view(N - 1), "r3", 2);
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
	ok(view(N - 1)->controller_id == leader + 1,
	    "node 4's image names the active controller");

	/* 4: fencing: node 4 stops heartbeating */
	for (p = 0; p < 6; p++)
		if (rn_mdview_topic(view(leader), "r3", 2)->parts[p].leader ==
		    4)
			victim_p = p;
	ok(victim_p >= 0, "broker 4 leads r3-%d", victim_p);
	if (victim_p < 0)
		bail("placement");
	old_epoch = part_at(leader, "r3", victim_p)->leader_epoch;
	kill(nodes[N - 1].pid, SIGSTOP);
	t0 = rn_now_ms();
	{
		struct bcheck bc = { leader, 4, true };
		struct pcheck pc = { leader, "r3", victim_p, -2, 4, -1, 4,
		    old_epoch + 1 };

		k = wait_for(pred_broker, &bc, 6000);
		ok(k, "broker 4 fenced after %lld ms without heartbeats",
		    (long long)(rn_now_ms() - t0));
		/* its last heartbeat was up to one interval before the stop */
		ok(rn_now_ms() - t0 >= 1500 - 300 - 100,
		    "not before the session timeout");
		ok(wait_for(pred_part, &pc, 3000), "r3-%d has a new leader "
		    "from the ISR, leader epoch +1, broker 4 left the ISR",
		    victim_p);
		pp = part_at(leader, "r3", victim_p);
		ok(pp != NULL && pp->leader_epoch == old_epoch + 1 &&
		    has(pp->offline, pp->n_offline, 4),
		    "epoch %d, and 4 listed offline", pp ? pp->leader_epoch :
		    -1);
		for (p = 0, k = 0; p < 6; p++)
			if (has(part_at(leader, "r3", p)->isr,
			    part_at(leader, "r3", p)->n_isr, 4))
				k++;
		is_int(k, 0, "broker 4 is in no ISR");
	}
	/* AlterPartition validation against the active controller */
	pp = part_at(leader, "r3", victim_p);
	{
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
	kill(nodes[N - 1].pid, SIGCONT);
	{
		struct bcheck bc = { leader, 4, false };

		ok(wait_for(pred_broker, &bc, 5000), "broker 4 unfenced");
		usleep(700000);
		for (p = 0, k = 0; p < 6; p++)
			if (has(part_at(leader, "r3", p)->isr,
			    part_at(leader, "r3", p)->n_isr, 4))
				k++;
		is_int(k, 0, "and still in no ISR");
	}
	/* ISR expansion through the leader's network worker */
	pp = part_at(leader, "r3", victim_p);
	{
		int32_t isr[4], n = pp->n_isr, l = pp->leader;
		struct pcheck pc = { leader, "r3", victim_p, l, -1, 4, -1,
		    pp->leader_epoch };

		memcpy(isr, pp->isr, sizeof(int32_t) * (size_t)n);
		isr[n] = 4;
		ipc_alter(l - 1, tid, victim_p, pp->leader_epoch,
		    pp->partition_epoch, isr, n + 1);
		ok(wait_for(pred_part, &pc, 5000), "RN_IPC_ALTER_PARTITION on "
		    "node %d put 4 back in the ISR of r3-%d", l, victim_p);
	}
	/* preferred election: r3-victim_p's first replica is 4 */
	is_int(elect(follower, 0, "r3", victim_p), 0,
	    "ElectLeaders PREFERRED through a follower");
	{
		struct pcheck pc = { leader, "r3", victim_p, 4, -1, -1, -1,
		    old_epoch + 2 };

		ok(wait_for(pred_part, &pc, 3000), "broker 4 leads r3-%d "
		    "again", victim_p);
	}
	is_int(elect(follower, 0, "r3", victim_p),
	    RN_KERR_ELECTION_NOT_NEEDED, "again: ELECTION_NOT_NEEDED");
	is_int(elect(follower, 1, "r3", victim_p),
	    RN_KERR_ELECTION_NOT_NEEDED, "UNCLEAN with a leader: not needed");

	/* 6: unclean election off, then on at run time */
	victim = leader == 0 ? 1 : 0;   /* a voter that is not the leader */
	{
		int32_t as[2] = { 4, victim + 1 }, isr1[1] = { 4 };
		struct bcheck bc = { leader, 4, true };
		struct pcheck pc = { leader, "u1", 0, -1, -1, -1, -1, 0 };

		is_int(create_topic(leader, "u1", -1, -1, as, 2, 10000), 0,
		    "CreateTopics u1 with assignment [4,%d]", victim + 1);
		t = rn_mdview_topic(view(leader), "u1", 2);
		if (t == NULL)
			bail("no u1");
		memcpy(uid, t->id, 16);
		is_int(alter(leader, 4, uid, 0, t->parts[0].leader_epoch,
		    t->parts[0].partition_epoch, isr1, 1), 0,
		    "leader 4 shrinks the ISR of u1-0 to [4]");
		kill(nodes[N - 1].pid, SIGSTOP);
		ok(wait_for(pred_broker, &bc, 6000), "broker 4 fenced");
		ok(wait_for(pred_part, &pc, 3000), "u1-0 is leaderless");
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
		ok(wait_for(pred_part, &pc, 3000), "out-of-sync replica %d "
		    "leads u1-0 with ISR [%d]", victim + 1, victim + 1);
		kill(nodes[N - 1].pid, SIGCONT);
		bc.fenced = false;
		ok(wait_for(pred_broker, &bc, 5000), "broker 4 back");
	}

	/* 7: controlled shutdown of a voter that is not the leader */
	{
		int cnt = 0;

		for (p = 0; p < 6; p++)
			if (part_at(leader, "r3", p)->leader == victim + 1)
				cnt++;
		ok(cnt > 0, "broker %d leads %d r3 partition(s)", victim + 1,
		    cnt);
		atomic_store(&nodes[victim].shm.hdr->controlled_shutdown, 1);
		ok(wait_for(pred_shutdown_done, &victim, 5000),
		    "controlled shutdown of node %d completes", victim + 1);
		for (p = 0, cnt = 0; p < 6; p++)
			if (part_at(leader, "r3", p)->leader == victim + 1)
				cnt++;
		is_int(cnt, 0, "it leads no r3 partition any more");
		for (p = 0, cnt = 0; p < 6; p++)
			if (has(part_at(leader, "r3", p)->isr,
			    part_at(leader, "r3", p)->n_isr, victim + 1))
				cnt++;
		is_int(cnt, 0, "and is in no r3 ISR");
		stop(victim, SIGKILL);
		atomic_store(&nodes[victim].shm.hdr->controlled_shutdown, 0);
		start(victim);
		{
			struct bcheck bc = { leader, victim + 1, false };

			ok(wait_for(pred_broker, &bc, 10000), "node %d "
			    "restarted, registered again and unfenced",
			    victim + 1);
		}
	}

	/* 8: DescribeQuorum through a follower */
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
		id = send_admin(follower, RN_KAPI_DESCRIBE_QUORUM, 2, &w);
		rn_kwriter_free(&w);
		err = wait_admin(follower, id, 10000, &r);
		is_int(err, 0, "DescribeQuorum answered");
		if (err == 0 && rn_DescribeQuorumResponse_decode(&r, 2, &arena,
		    &resp) == 0 && resp.topics_count == 1) {
			const struct rn_DescribeQuorumResponse_PartitionData
			    *q = &resp.topics[0].partitions[0];
			int caught = 0;

			is_int(q->leader_id, leader + 1, "leader id");
			ok(q->leader_epoch >= 1 && q->high_watermark > 10,
			    "leader epoch %d, high watermark %lld",
			    q->leader_epoch, (long long)q->high_watermark);
			is_int(q->current_voters_count, 3, "three voters");
			for (k = 0; k < q->current_voters_count; k++)
				if (q->current_voters[k].log_end_offset > 0 &&
				    q->current_voters[k].last_caught_up_timestamp
				    > 0)
					caught++;
			is_int(caught, 3, "each with an end offset and a "
			    "caught-up time");
			ok(q->observers_count == 1 &&
			    q->observers[0].replica_id == 4 &&
			    q->observers[0].log_end_offset > 0,
			    "observer: broker 4");
			is_int(resp.nodes_count, 3, "v2 lists the voters' "
			    "endpoints");
		} else
			ok(0, "DescribeQuorum decodes");
	}

	/* 9: quorum loss: two voters killed */
	{
		int keep = leader, a = (leader + 1) % VOTERS,
		    b = (leader + 2) % VOTERS;
		struct rn_CreateTopicsRequest req;
		struct rn_CreateTopicsRequest_CreatableTopic tt;
		struct rn_kwriter w;
		struct rn_kreader r;
		uint64_t id;

		stop(a, SIGKILL);
		stop(b, SIGKILL);
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
		id = send_admin(keep, RN_KAPI_CREATE_TOPICS, 7, &w);
		rn_kwriter_free(&w);
		is_int(wait_admin(keep, id, 4000, &r), -1, "without a majority "
		    "CreateTopics gets no answer");
		start(a);
		start(b);
		is_int(wait_admin(keep, id, 20000, &r), 0, "the voters are "
		    "back: answered");
		ok(wait_for(pred_leader, NULL, 10000) &&
		    wait_for(pred_topic, "late", 10000),
		    "the topic exists once the quorum is back");
	}

	/* 10: a node whose meta.properties names another cluster */
	{
		struct rn_metaprops mp;
		char err[256];
		int status = -1;
		int64_t end;

		if (rn_metaprops_read(nodes[4].dir, &mp, err, sizeof(err)) != 0)
			bail("meta.properties: %s", err);
		strcpy(mp.cluster_id, "AAAAAAAAAAAAAAAAAAAAAQ");
		if (rn_metaprops_write(nodes[4].dir, &mp) != 0)
			bail("cannot rewrite meta.properties");
		start(4);
		for (end = rn_now_ms() + 10000; rn_now_ms() < end; ) {
			if (waitpid(nodes[4].pid, &status, WNOHANG) ==
			    nodes[4].pid) {
				nodes[4].pid = 0;
				break;
			}
			status = -1;
			usleep(20000);
		}
		ok(status != -1 && WIFEXITED(status) &&
		    WEXITSTATUS(status) == RN_WORKER_EXIT_FATAL,
		    "broker 5 of another cluster is refused and stops with "
		    "status 2 (0x%x)", status);
		ok(rn_mdview_broker(view(cur_leader), 5) == NULL,
		    "and is not registered");
	}

	for (i = 0; i < N_ALL; i++)
		stop(i, SIGTERM);
	if (tap_failed == 0) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			diag("cannot remove %s", tmpdir);
	} else
		diag("node logs kept in %s/node*.log", tmpdir);
	rn_arena_free(&arena);
	return done_testing();
}
