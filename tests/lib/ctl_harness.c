/*
 * Controller nodes for the C unit tests (see ctl_harness.h): what
 * runneld would do for one node (listeners, config, segment,
 * meta.properties, fork), and the network worker's side of the ring.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "storage/metaprops.h"
#include "tests/lib/ctl_harness.h"
#include "tests/lib/tap.h"
#include "workers/controller/controller.h"

/* A loopback listener on a free port. */
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
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on,
	    sizeof(on)) != 0 || bind(fd, (struct sockaddr *)&sin,
	    sizeof(sin)) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0)
		bail("cannot listen: %s", strerror(errno));
	*port = ntohs(sin.sin_port);
	return fd;
}

/* Node i's server.properties. */
static void
node_config(struct th_cluster *c, int i, const char *voters)
{
	struct th_node *n = &c->node[i];
	char text[2048], err[256];
	uint16_t bport;

	/* only its number: the broker listener is not served here */
	close(listener(&bport));
	if (i < c->n_voters)
		snprintf(text, sizeof(text),
		    "node.id=%d\nprocess.roles=broker,controller\n"
		    "listeners=PLAINTEXT://127.0.0.1:%u,"
		    "CONTROLLER://127.0.0.1:%u\n", i + 1, bport, n->cport);
	else
		snprintf(text, sizeof(text),
		    "node.id=%d\nprocess.roles=broker\n"
		    "listeners=PLAINTEXT://127.0.0.1:%u\n", i + 1, bport);
	snprintf(text + strlen(text), sizeof(text) - strlen(text),
	    "controller.listener.names=CONTROLLER\n"
	    "controller.quorum.voters=%s\nlog.dirs=%s\n"
	    "shm.max.partitions=64\n%s", voters, n->dir,
	    c->extra_config != NULL ? c->extra_config : "");
	if (rn_config_parse(&n->cfg, text, "test", err, sizeof(err), NULL,
	    NULL) != 0 || rn_config_finish(&n->cfg, err, sizeof(err)) != 0)
		bail("config: %s", err);
}

/* The segment and the worker environment runneld would hand over. */
static void
node_env(struct th_cluster *c, int i, int cfd)
{
	struct th_node *n = &c->node[i];
	struct rn_shm_params sp = { 2, 1u << 16, 64, 0 };

	if (rn_shm_create(&sp, &n->shm) != 0)
		bail("shm");
	n->env.cfg = &n->cfg;
	n->env.shm = &n->shm;
	if (i < c->n_voters) {
		n->env.listen[0].fd = cfd;
		n->env.listen[0].listener = 1;
		n->env.listen[0].controller = true;
		n->env.n_listen = 1;
	}
	n->env.n_workers = 2;
	n->env.n_network = 1;
	n->env.efd[0] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	n->env.efd[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* the test is the network worker in slot 1 */
	atomic_store(&rn_shm_worker(&n->shm, 1)->pid, getpid());
	rn_mdview_init(&n->view);
}

void
th_setup(struct th_cluster *c)
{
	char voters[512];
	size_t len = 0;
	int fds[TH_MAX_NODES], i;

	if (c->n_nodes > TH_MAX_NODES || c->n_voters > c->n_nodes)
		bail("th_setup: %d nodes, %d voters", c->n_nodes, c->n_voters);
	snprintf(c->tmpdir, sizeof(c->tmpdir), "/tmp/rn-test-%s-XXXXXX",
	    c->name);
	if (mkdtemp(c->tmpdir) == NULL)
		bail("mkdtemp");
	c->next_req = 1;
	rn_arena_init(&c->arena, 64u << 20);
	voters[0] = '\0';
	for (i = 0; i < c->n_voters; i++) {
		fds[i] = listener(&c->node[i].cport);
		len += (size_t)snprintf(voters + len, sizeof(voters) - len,
		    "%s%d@127.0.0.1:%u", i > 0 ? "," : "", i + 1,
		    c->node[i].cport);
	}
	for (i = 0; i < c->n_nodes; i++) {
		struct th_node *n = &c->node[i];

		snprintf(n->dir, sizeof(n->dir), "%s/node%d", c->tmpdir, i + 1);
		if (rn_mkdir_p(n->dir, 0750) != 0)
			bail("mkdir %s", n->dir);
		node_config(c, i, voters);
		node_env(c, i, i < c->n_voters ? fds[i] : -1);
		/* what runneld does once the log dirs are locked */
		if (!c->own_metaprops && rn_metaprops_ensure(&n->cfg,
		    n->env.cluster_id, n->env.dir_ids) != 0)
			bail("meta.properties");
	}
}

void
th_start(struct th_cluster *c, int i)
{
	struct th_node *n = &c->node[i];

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
		if (c->node_logs) {
			snprintf(path, sizeof(path), "%s/node%d.log",
			    c->tmpdir, i + 1);
			if ((k = open(path, O_WRONLY | O_CREAT | O_APPEND |
			    O_CLOEXEC, 0644)) < 0 || dup2(k, 2) < 0)
				_exit(1);
			close(k);
		}
		/* a node sees only its own listener */
		for (k = 0; k < c->n_nodes; k++)
			if (k != i && c->node[k].env.n_listen > 0)
				close(c->node[k].env.listen[0].fd);
		rn_worker_run(&n->env, RN_ROLE_W_CONTROLLER, 0,
		    rn_controller_main, getuid(), getgid(), false);
	}
	atomic_store(&rn_shm_worker(&n->shm, 0)->pid, n->pid);
}

void
th_stop(struct th_cluster *c, int i, int sig)
{
	struct th_node *n = &c->node[i];
	int status;

	if (n->pid <= 0)
		return;
	kill(n->pid, SIGCONT);
	kill(n->pid, sig);
	waitpid(n->pid, &status, 0);
	n->pid = 0;
}

int
th_wait_exit(struct th_cluster *c, int i, int timeout_ms)
{
	struct th_node *n = &c->node[i];
	int64_t end = rn_now_ms() + timeout_ms;
	int status;

	while (n->pid > 0 && rn_now_ms() < end) {
		if (waitpid(n->pid, &status, WNOHANG) == n->pid) {
			n->pid = 0;
			return status;
		}
		usleep(10000);
	}
	return -1;
}

void
th_teardown(struct th_cluster *c, bool keep)
{
	char cmd[300];
	int i;

	for (i = 0; i < c->n_nodes; i++) {
		th_stop(c, i, SIGTERM);
		rn_mdview_free(&c->node[i].view);
	}
	rn_arena_free(&c->arena);
	if (keep) {
		diag("files%s kept in %s", c->node_logs ? " and node logs" :
		    "", c->tmpdir);
		return;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", c->tmpdir);
	if (system(cmd) != 0)
		diag("cannot remove %s", c->tmpdir);
}

struct rn_mdview *
th_view(struct th_cluster *c, int i)
{
	rn_mdview_refresh(&c->node[i].view, &c->node[i].shm);
	return &c->node[i].view;
}

int
th_agreed_leader(struct th_cluster *c)
{
	int i, leader = -1;

	for (i = 0; i < c->n_voters; i++) {
		struct rn_mdview *v;

		if (c->node[i].pid <= 0)
			continue;
		v = th_view(c, i);
		if (v->version == 0 || v->cluster_id[0] == '\0')
			return -1;
		if (leader == -1)
			leader = v->controller_id;
		else if (v->controller_id != leader)
			return -1;
	}
	return leader >= 1 && leader <= c->n_voters &&
	    c->node[leader - 1].pid > 0 ? leader - 1 : -1;
}

bool
th_wait_for(bool (*pred)(void *), void *arg, int timeout_ms)
{
	int64_t end = rn_now_ms() + timeout_ms;

	while (rn_now_ms() < end) {
		if (pred(arg))
			return true;
		usleep(20000);
	}
	return pred(arg);
}

void
th_send(struct th_cluster *c, int i, uint16_t type, const void *buf,
    size_t len)
{
	struct th_node *n = &c->node[i];
	struct rn_ring *out = rn_shm_ring_to_ctl(&n->shm, 1);

	if (rn_ring_push(out, type, buf, (uint32_t)len) != 0)
		bail("ring to the controller is full");
	rn_ring_notify(out, n->env.efd[0]);
}

uint64_t
th_admin_send(struct th_cluster *c, int i, int16_t key, int16_t ver,
    const struct rn_kwriter *body)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	uint64_t id = c->next_req++;

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
	th_send(c, i, RN_IPC_ADMIN_REQUEST, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	return id;
}

int
th_admin_wait(struct th_cluster *c, int i, uint64_t id, int timeout_ms,
    struct rn_kreader *body)
{
	struct th_node *n = &c->node[i];
	struct rn_ring *in = rn_shm_ring_from_ctl(&n->shm, 1);
	int64_t end = rn_now_ms() + timeout_ms;
	int err = TH_NO_ANSWER;

	while (err == TH_NO_ANSWER && rn_now_ms() < end) {
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
			void *copy = rn_arena_alloc(&c->arena,
			    b->via.bin.size + 1);

			err = (int)rn_mp_get_int(&up.data, "err", -1);
			memcpy(copy, b->via.bin.ptr, b->via.bin.size);
			rn_kreader_init(body, copy, b->via.bin.size);
		}
		msgpack_unpacked_destroy(&up);
		rn_ring_release(in);
	}
	return err;
}

int
th_admin_call(struct th_cluster *c, int i, int16_t key, int16_t ver,
    const void *req, void *resp, int timeout_ms)
{
	const struct rn_kapi *api = rn_kapi_find(key);
	struct rn_kwriter w;
	struct rn_kreader r;
	uint64_t id;
	int err;

	rn_kwriter_init(&w);
	if (api == NULL || api->encode_request(&w, ver, req) != 0)
		bail("encode API %d v%d", key, ver);
	id = th_admin_send(c, i, key, ver, &w);
	rn_kwriter_free(&w);
	err = th_admin_wait(c, i, id, timeout_ms, &r);
	if (err == 0 && api->decode_response(&r, ver, &c->arena, resp) != 0)
		err = TH_BAD_ANSWER;
	return err;
}

int
th_create_topics_result(struct th_cluster *c, struct rn_kreader *body,
    const char *name, struct rn_CreateTopicsResponse_CreatableTopicResult *res)
{
	struct rn_CreateTopicsResponse resp;

	if (rn_CreateTopicsResponse_decode(body, 7, &c->arena, &resp) != 0 ||
	    resp.topics_count != 1)
		return -1;
	*res = resp.topics[0];
	if (res->error_code != 0)
		diag("CreateTopics %s: %s: %.*s", name,
		    rn_kerr_name(res->error_code),
		    (int)(res->error_message.len > 0 ?
		    res->error_message.len : 0), res->error_message.ptr);
	return 0;
}
