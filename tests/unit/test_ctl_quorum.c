/*
 * Three controller workers, one per simulated node, each with its own
 * shared memory, log dir and inherited CONTROLLER listener: the raft
 * transport connects them (preamble, accept, demultiplexing), they elect
 * a leader, the metadata log reaches every node's image and
 * meta.properties, the leader answers admin requests and followers
 * forward them to it, and killing the leader elects another one.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
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
#include "workers/worker.h"

extern char **environ;

#define N 3

struct node {
	struct rn_config cfg;
	struct rn_shm shm;
	struct rn_worker_env env;
	struct rn_mdview view;
	char dir[300];
	uint16_t cport;
	pid_t pid;
};

static struct node nodes[N];
static char tmpdir[256];
static uint64_t next_req = 1;

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
		int k;

		/* a node sees only its own listener */
		for (k = 0; k < N; k++)
			if (k != i)
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
	kill(nodes[i].pid, sig);
	waitpid(nodes[i].pid, &status, 0);
	nodes[i].pid = 0;
}

static void
setup(void)
{
	char voters[512], text[2048], err[256];
	uint16_t bport;
	int fds[N], i, bfd;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/rn-test-quorum-XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
		bail("mkdtemp");
	for (i = 0; i < N; i++)
		fds[i] = listener(&nodes[i].cport);
	snprintf(voters, sizeof(voters), "1@127.0.0.1:%u,2@127.0.0.1:%u,"
	    "3@127.0.0.1:%u", nodes[0].cport, nodes[1].cport, nodes[2].cport);
	for (i = 0; i < N; i++) {
		struct node *n = &nodes[i];
		struct rn_shm_params sp = { 2, 1u << 16, 64 };

		bfd = listener(&bport);
		close(bfd);
		snprintf(n->dir, sizeof(n->dir), "%s/node%d", tmpdir, i + 1);
		rn_mkdir_p(n->dir, 0750);
		snprintf(text, sizeof(text),
		    "node.id=%d\nprocess.roles=broker,controller\n"
		    "listeners=PLAINTEXT://127.0.0.1:%u,"
		    "CONTROLLER://127.0.0.1:%u\n"
		    "controller.listener.names=CONTROLLER\n"
		    "controller.quorum.voters=%s\nlog.dirs=%s\n"
		    "shm.max.partitions=64\n", i + 1, bport, n->cport, voters,
		    n->dir);
		if (rn_config_parse(&n->cfg, text, "test", err, sizeof(err),
		    NULL, NULL) != 0 || rn_config_finish(&n->cfg, err,
		    sizeof(err)) != 0)
			bail("config: %s", err);
		if (rn_shm_create(&sp, &n->shm) != 0)
			bail("shm");
		n->env.cfg = &n->cfg;
		n->env.shm = &n->shm;
		n->env.listen[0].fd = fds[i];
		n->env.listen[0].listener = 1;
		n->env.listen[0].controller = true;
		n->env.n_listen = 1;
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

/* The node every live image names as controller, or -1. */
static int
agreed_leader(int skip)
{
	int i, leader = -1;

	for (i = 0; i < N; i++) {
		if (i == skip)
			continue;
		rn_mdview_refresh(&nodes[i].view, &nodes[i].shm);
		if (nodes[i].view.version == 0 ||
		    nodes[i].view.cluster_id[0] == '\0')
			return -1;
		if (leader == -1)
			leader = nodes[i].view.controller_id;
		else if (nodes[i].view.controller_id != leader)
			return -1;
	}
	return leader >= 1 && leader - 1 != skip ? leader - 1 : -1;
}

static int
wait_leader(int skip, int timeout_ms)
{
	int64_t end = rn_now_ms() + timeout_ms;
	int l;

	while (rn_now_ms() < end) {
		if ((l = agreed_leader(skip)) >= 0 &&
		    rn_mdview_broker(&nodes[l].view, l + 1) != NULL)
			return l;
		usleep(20000);
	}
	return -1;
}

static bool
wait_topic_everywhere(const char *name, int skip, int timeout_ms)
{
	int64_t end = rn_now_ms() + timeout_ms;
	int i, have;

	while (rn_now_ms() < end) {
		for (i = 0, have = 0; i < N; i++) {
			if (i == skip) {
				have++;
				continue;
			}
			rn_mdview_refresh(&nodes[i].view, &nodes[i].shm);
			if (rn_mdview_topic(&nodes[i].view, name,
			    strlen(name)) != NULL)
				have++;
		}
		if (have == N)
			return true;
		usleep(20000);
	}
	return false;
}

/* CreateTopics (v7, one topic, RF 1) at node i: the "err" field, and the
 * topic's error code in *topic_err. */
static int
create_at(int i, const char *name, int16_t *topic_err)
{
	struct node *n = &nodes[i];
	struct rn_CreateTopicsRequest req;
	struct rn_CreateTopicsRequest_CreatableTopic t;
	struct rn_CreateTopicsResponse resp;
	struct rn_ring *in = rn_shm_ring_from_ctl(&n->shm, 1);
	struct rn_ring *out = rn_shm_ring_to_ctl(&n->shm, 1);
	struct rn_kwriter w;
	struct rn_arena a;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	uint64_t id = next_req++;
	int64_t end = rn_now_ms() + 10000;
	int err = -1;

	rn_CreateTopicsRequest_init(&req);
	rn_CreateTopicsRequest_CreatableTopic_init(&t);
	t.name = rn_kstr_c(name);
	t.num_partitions = 1;
	t.replication_factor = 1;
	req.topics = &t;
	req.topics_count = 1;
	rn_kwriter_init(&w);
	rn_CreateTopicsRequest_encode(&w, 7, &req);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 6);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "req");
	msgpack_pack_uint64(&pk, id);
	rn_mp_pack_str(&pk, "key");
	msgpack_pack_int(&pk, RN_KAPI_CREATE_TOPICS);
	rn_mp_pack_str(&pk, "ver");
	msgpack_pack_int(&pk, 7);
	rn_mp_pack_str(&pk, "client");
	rn_mp_pack_str(&pk, "test");
	rn_mp_pack_str(&pk, "body");
	msgpack_pack_bin(&pk, w.len);
	msgpack_pack_bin_body(&pk, w.buf, w.len);
	rn_ring_push(out, RN_IPC_ADMIN_REQUEST, sb.data, (uint32_t)sb.size);
	rn_ring_notify(out, n->env.efd[0]);
	msgpack_sbuffer_destroy(&sb);
	rn_kwriter_free(&w);
	rn_arena_init(&a, 1u << 20);
	*topic_err = -1;
	while (rn_now_ms() < end && err == -1) {
		msgpack_unpacked up;
		const void *payload;
		uint16_t type;
		ssize_t len;

		if (rn_ring_wait(in, n->env.efd[1], 200) != 0 ||
		    (len = rn_ring_peek(in, &type, &payload)) < 0)
			continue;
		msgpack_unpacked_init(&up);
		if (type == RN_IPC_ADMIN_RESPONSE &&
		    msgpack_unpack_next(&up, payload, (size_t)len, NULL) ==
		    MSGPACK_UNPACK_SUCCESS &&
		    (uint64_t)rn_mp_get_int(&up.data, "req", -1) == id) {
			const msgpack_object *b = rn_mp_get(&up.data, "body");
			struct rn_kreader r;

			err = (int)rn_mp_get_int(&up.data, "err", -1);
			rn_kreader_init(&r, b->via.bin.ptr, b->via.bin.size);
			if (err == 0 && rn_CreateTopicsResponse_decode(&r, 7,
			    &a, &resp) == 0 && resp.topics_count == 1)
				*topic_err = resp.topics[0].error_code;
		}
		msgpack_unpacked_destroy(&up);
		rn_ring_release(in);
	}
	rn_arena_free(&a);
	return err;
}

int
main(int argc, char **argv)
{
	struct rn_metaprops mp;
	char err[400], cid[23];
	int leader, follower, leader2, i, fd, same;
	int16_t terr;

	setproctitle_init(argc, argv, environ);
	rn_log_init("test", NULL, 0);
	setup();
	for (i = 0; i < N; i++)
		start(i);
	leader = wait_leader(-1, 15000);
	ok(leader >= 0, "three controllers agree on a leader (node %d)",
	    leader + 1);
	if (leader < 0)
		bail("no leader");
	strcpy(cid, nodes[leader].view.cluster_id);
	for (i = 0, same = 0; i < N; i++)
		if (strcmp(nodes[i].view.cluster_id, cid) == 0)
			same++;
	is_int(same, N, "every image has cluster id %s", cid);
	for (i = 0, same = 0; i < N; i++)
		if (rn_metaprops_read(nodes[i].dir, &mp, err, sizeof(err)) ==
		    0 && strcmp(mp.cluster_id, cid) == 0)
			same++;
	is_int(same, N, "every node persisted it in meta.properties");

	is_int(create_at(leader, "t1", &terr), 0, "the leader answers");
	is_int(terr, 0, "CreateTopics t1 on the leader");
	ok(wait_topic_everywhere("t1", -1, 5000), "t1 reaches every image");
	follower = (leader + 1) % N;
	is_int(create_at(follower, "t2", &terr), 0,
	    "a follower forwards to the active controller");
	is_int(terr, 0, "CreateTopics t2 through a follower");
	ok(wait_topic_everywhere("t2", -1, 5000), "t2 reaches every image");

	/* a Kafka request the controller listener does not serve: closed */
	{
		struct sockaddr_in sin;
		struct pollfd pfd;
		char buf[16];

		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin.sin_port = htons(nodes[follower].cport);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
			bail("connect");
		/* an ApiVersions v0 request frame */
		if (write(fd, "\0\0\0\x0e\0\x12\0\0\0\0\0\x01\0\x04test", 18)
		    != 18)
			bail("write");
		pfd.fd = fd;
		pfd.events = POLLIN;
		ok(poll(&pfd, 1, 5000) == 1 && read(fd, buf, sizeof(buf)) <= 0,
		    "a Kafka-protocol connection is closed");
		close(fd);
	}

	stop(leader, SIGKILL);
	leader2 = wait_leader(leader, 15000);
	ok(leader2 >= 0 && leader2 != leader, "a new leader (node %d)",
	    leader2 + 1);
	if (leader2 < 0)
		bail("no new leader");
	is_int(create_at(leader2, "t3", &terr), 0, "the new leader answers");
	is_int(terr, 0, "CreateTopics t3 on the new leader");
	ok(rn_mdview_topic(&nodes[leader2].view, "t1", 2) != NULL,
	    "t1 survived the failover");
	start(leader);
	ok(wait_topic_everywhere("t3", -1, 10000),
	    "the restarted node caught up");
	ok(strcmp(nodes[leader].view.cluster_id, cid) == 0,
	    "with the same cluster id");

	for (i = 0; i < N; i++)
		stop(i, SIGTERM);
	snprintf(err, sizeof(err), "rm -rf %s", tmpdir);
	if (system(err) != 0)
		diag("cannot remove %s", tmpdir);
	return done_testing();
}
