/*
 * The controller's operation engine: admin and broker requests queue
 * here, run one at a time on the active controller (each API through
 * the table of apis.c), are proposed to the metadata quorum and answered once
 * their records are applied; a node that is not the active controller
 * routes them elsewhere.
 */
#include "autoconf.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "storage/checkpoint.h"
#include "storage/logdir.h"
#include "common/placement.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"
#include "workers/controller/raft.h"
#include "workers/partition/partition.h"


#define OP_QUEUE_MAX 1024
#define MSG_MAX CTL_OP_MSG_MAX

/* ---- strings in the operation's arena -------------------------------- */

struct rn_kstr
ctl_op_msg(struct ctl_op *op, const char *fmt, ...)
{
	struct rn_kstr s = { NULL, -1 };
	va_list ap;
	char *p;
	int n;

	if ((p = rn_arena_alloc(&op->arena, MSG_MAX)) == NULL)
		return s;
	va_start(ap, fmt);
	n = vsnprintf(p, MSG_MAX, fmt, ap);
	va_end(ap);
	s.ptr = p;
	s.len = n < MSG_MAX ? n : MSG_MAX - 1;
	return s;
}

struct rn_kstr
ctl_op_str(struct ctl_op *op, const char *str)
{
	struct rn_kstr s = { NULL, -1 };
	size_t n;
	char *p;

	if (str == NULL)
		return s;
	n = strlen(str);
	if ((p = rn_arena_alloc(&op->arena, n + 1)) != NULL) {
		memcpy(p, str, n + 1);
		s.ptr = p;
		s.len = (int32_t)n;
	}
	return s;
}

bool
ctl_kstr_copy(struct rn_kstr s, char *buf, size_t len)
{
	if (s.len < 0 || (size_t)s.len >= len)
		return false;
	if (s.len > 0) /* an empty string may have no pointer */
		memcpy(buf, s.ptr, (size_t)s.len);
	buf[s.len] = '\0';
	return true;
}

void
ctl_ids_str(const int32_t *v, int32_t n, char *buf, size_t len)
{
	size_t k = 0;
	int32_t i;

	buf[0] = '\0';
	for (i = 0; i < n && k < len - 16; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%d", i ? "," : "",
		    v[i]);
}

/* ---- replies -------------------------------------------------------- */

static const struct ctl_op_api *
op_api_find(const struct ctl *c, int16_t key)
{
	size_t i;

	for (i = 0; i < c->op_hooks->n_apis; i++)
		if (c->op_hooks->apis[i].key == key)
			return &c->op_hooks->apis[i];
	return NULL;
}

/* Once the records failed to commit: every success becomes NOT_CONTROLLER. */
static void
op_fail_successes(struct ctl_op *op)
{
	const struct ctl_op_api *api = op_api_find(op->c, op->key);

	if (api != NULL && api->fail != NULL)
		api->fail(op, RN_KERR_NOT_CONTROLLER);
}

static int
op_encode(struct ctl_op *op, struct rn_kwriter *w)
{
	const struct ctl_op_api *api = op_api_find(op->c, op->key);

	return api != NULL ? api->encode(op, w) : RN_KE_VERSION;
}

/* Ring origin: push {"v","req","err","body"} to the worker that asked. */
static void
reply_ring(struct ctl_op *op, int16_t err, const void *body, size_t len)
{
	struct ctl *c = op->c;
	struct rn_worker_slot *ws = rn_shm_worker(c->shm, op->slot);
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int rc;

	if (op->type != RN_IPC_ADMIN_REQUEST)
		return;
	if (atomic_load(&ws->pid) != op->sender) {
		log_debug("slot %u restarted: dropping the answer to request "
		    "%llu", op->slot, (unsigned long long)op->req);
		return;
	}
	/* the network worker takes replies up to its response budget */
	if (err == 0 && len > (size_t)c->cfg->socket_request_max_bytes) {
		log_warnx("the answer to request %llu of slot %u is %zu bytes, "
		    "more than socket.request.max.bytes: not sent",
		    (unsigned long long)op->req, op->slot, len);
		err = RN_KERR_UNKNOWN_SERVER_ERROR;
	}
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "req");
	msgpack_pack_uint64(&pk, op->req);
	rn_mp_pack_str(&pk, "err");
	msgpack_pack_int(&pk, err);
	rn_mp_pack_str(&pk, "body");
	msgpack_pack_bin(&pk, err == 0 ? len : 0);
	if (err == 0)
		msgpack_pack_bin_body(&pk, body, len);
	rc = c->op_hooks->send(c, op->slot, RN_IPC_ADMIN_RESPONSE, sb.data,
	    sb.size, op->sender);
	if (rc != 0)
		log_warnx("cannot answer request %llu of slot %u: %s",
		    (unsigned long long)op->req, op->slot, strerror(-rc));
	msgpack_sbuffer_destroy(&sb);
}

void
ctl_op_free(struct ctl_op *op)
{
	ctl_batch_free(&op->batch);
	rn_arena_free(&op->arena);
	free(op->body);
	free(op);
}

void
ctl_op_reply_raw(struct ctl_op *op, int16_t err, const void *body,
    size_t len)
{
	if (op->origin == CTL_ORIGIN_RING)
		reply_ring(op, err, body, len);
	else if (op->origin == CTL_ORIGIN_CONN)
		op->c->op_hooks->conn_reply(op->c, op->conn_id, op->corr,
		    op->key, op->ver, op->fwd, err, body, len);
	ctl_op_free(op);
}

/* Encode the response (err == 0) and answer whoever asked. */
static void
op_finish(struct ctl_op *op, int16_t err)
{
	struct rn_kwriter w;
	int rc = 0;

	rn_kwriter_init(&w);
	if (err == 0 && op->origin != CTL_ORIGIN_INTERNAL &&
	    (op->origin != CTL_ORIGIN_RING ||
	    op->type == RN_IPC_ADMIN_REQUEST) &&
	    ((rc = op_encode(op, &w)) != 0 || w.err != 0)) {
		log_warnx("encoding the answer to API %d v%d: %d", op->key,
		    op->ver, rc != 0 ? rc : w.err);
		err = RN_KERR_UNKNOWN_SERVER_ERROR;
		w.len = 0;
	}
	ctl_op_reply_raw(op, err, w.buf, err == 0 ? w.len : 0);
	rn_kwriter_free(&w);
}

/*
 * Not the active controller: an answer saying so. Forwarded requests get
 * it in the private header; broker APIs in their error_code.
 */
static void
op_not_controller(struct ctl_op *op)
{
	if (op->origin != CTL_ORIGIN_CONN || op->fwd) {
		ctl_op_reply_raw(op, RN_KERR_NOT_CONTROLLER, NULL, 0);
		return;
	}
	switch (op->key) {
	case RN_KAPI_BROKER_REGISTRATION:
		rn_BrokerRegistrationResponse_init(&op->resp.br);
		break;
	case RN_KAPI_BROKER_HEARTBEAT:
		rn_BrokerHeartbeatResponse_init(&op->resp.bh);
		break;
	case RN_KAPI_ALTER_PARTITION:
		rn_AlterPartitionResponse_init(&op->resp.ap);
		break;
	case RN_KAPI_UNREGISTER_BROKER:
		rn_UnregisterBrokerResponse_init(&op->resp.ub);
		break;
	case RN_KAPI_ASSIGN_REPLICAS_TO_DIRS:
		rn_AssignReplicasToDirsResponse_init(&op->resp.ard);
		break;
	default:
		ctl_op_reply_raw(op, RN_KERR_NOT_CONTROLLER, NULL, 0);
		return;
	}
	op_fail_successes(op);
	op_finish(op, 0);
}

/* ---- the queue ------------------------------------------------------ */

static struct ctl_op *
op_new(struct ctl *c, enum ctl_op_origin origin)
{
	struct ctl_op *op = calloc(1, sizeof(*op));

	if (op == NULL)
		return NULL;
	op->c = c;
	op->origin = origin;
	op->broker = -1;
	op->local_used = -1;
	ctl_batch_init(&op->batch);
	/*
	 * As in the network worker: a request (at most
	 * socket.request.max.bytes) decodes into a small multiple of its
	 * size, and the response gets socket.request.max.bytes of its own.
	 */
	rn_arena_init(&op->arena,
	    5 * (size_t)c->cfg->socket_request_max_bytes + 4096);
	return op;
}

static void
op_push(struct ctl *c, struct ctl_op *op)
{
	if (c->n_ops >= OP_QUEUE_MAX) {
		static int64_t last_ms;
		static unsigned refused;
		int64_t now = rn_now_ms();

		/* one line a second, not one per refusal */
		refused++;
		if (now - last_ms >= 1000) {
			log_warnx("controller queue full (%d operations): "
			    "refused %u requests", OP_QUEUE_MAX, refused);
			last_ms = now;
			refused = 0;
		}
		op_not_controller(op);
		return;
	}
	if (c->ops_tail != NULL)
		c->ops_tail->next = op;
	else
		c->ops_head = op;
	c->ops_tail = op;
	c->n_ops++;
}

int
ctl_admin_enqueue(struct ctl *c, unsigned slot, pid_t sender, uint16_t type,
    const msgpack_object *m)
{
	const msgpack_object *body = rn_mp_get(m, "body");
	struct ctl_op *op;
	int64_t v = rn_mp_get_int(m, "v", -1);

	if (v != RN_IPC_VERSION)
		return -EBADMSG;
	if ((op = op_new(c, CTL_ORIGIN_RING)) == NULL)
		return -ENOMEM;
	op->slot = slot;
	op->sender = sender;
	op->type = type;
	if (type == RN_IPC_ADMIN_REQUEST) {
		op->req = (uint64_t)rn_mp_get_int(m, "req", -1);
		op->key = (int16_t)rn_mp_get_int(m, "key", -1);
		op->ver = (int16_t)rn_mp_get_int(m, "ver", -1);
		if (rn_mp_get(m, "req") == NULL || body == NULL ||
		    body->type != MSGPACK_OBJECT_BIN) {
			ctl_op_free(op);
			return -EBADMSG;
		}
		op->len = body->via.bin.size;
		op->body = malloc(op->len > 0 ? op->len : 1);
		if (op->body != NULL)
			memcpy(op->body, body->via.bin.ptr, op->len);
	} else {
		/* keep the whole map: ctl_op_auto_create reads "topics" */
		msgpack_sbuffer sb;
		msgpack_packer pk;

		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		msgpack_pack_object(&pk, *m);
		op->body = (uint8_t *)sb.data;
		op->len = sb.size;
	}
	if (op->body == NULL) {
		ctl_op_free(op);
		return -ENOMEM;
	}
	op_push(c, op);
	return 0;
}

int
ctl_admin_enqueue_conn(struct ctl *c, uint64_t conn_id, int32_t corr,
    int16_t key, int16_t ver, bool fwd, const void *body, size_t len)
{
	struct ctl_op *op;

	if ((op = op_new(c, CTL_ORIGIN_CONN)) == NULL)
		return -ENOMEM;
	op->conn_id = conn_id;
	op->corr = corr;
	op->key = key;
	op->ver = ver;
	op->fwd = fwd;
	op->len = len;
	if ((op->body = malloc(len > 0 ? len : 1)) == NULL) {
		ctl_op_free(op);
		return -ENOMEM;
	}
	memcpy(op->body, body, len);
	op_push(c, op);
	ctl_admin_kick(c);
	return 0;
}

/*
 * Leadership was lost before a client's admin request committed. Like
 * Kafka's forwarding, the request is not failed but tried again with
 * whoever leads next (held here while nobody does), so a client without
 * a quorum sees its own timeout, never a wrong answer. A request another
 * node forwarded goes back with NOT_CONTROLLER: that node retries it.
 */
static bool
op_retry_later(struct ctl *c, struct ctl_op *op)
{
	if (op->origin == CTL_ORIGIN_CONN && op->fwd) {
		ctl_op_reply_raw(op, RN_KERR_NOT_CONTROLLER, NULL, 0);
		return true;
	}
	if (op->origin != CTL_ORIGIN_RING || op->type != RN_IPC_ADMIN_REQUEST)
		return false;
	log_info("leadership lost before API %d committed: retrying it with "
	    "the next active controller", op->key);
	ctl_batch_free(&op->batch);
	ctl_batch_init(&op->batch);
	rn_arena_reset(&op->arena);
	memset(&op->resp, 0, sizeof(op->resp));
	op->validate_only = false;
	op->local_added = 0;
	op->local_used = -1;
	op->next = NULL;
	op_push(c, op);
	c->reconcile = true;
	return true;
}

static void
op_applied(struct raft_apply *req, int status, void *result)
{
	struct ctl_op *op = req->data;
	struct ctl *c = op->c;

	(void)result;
	ctl_raft_settled(c, req, status);
	c->op_inflight = NULL;
	if (status != 0 && op_retry_later(c, op))
		return;
	if (status != 0) {
		log_warnx("controller operation not committed: %s",
		    raft_strerror(status));
		op_fail_successes(op);
	} else {
		/* committed and applied: make it visible before answering */
		ctl_publish(c);
		c->op_hooks->committed(op);
	}
	if (status != 0)
		c->reconcile = true; /* what it meant to fix may still be due */
	op_finish(op, 0);
	/* the next operation starts after this loop turn (ctl_after_turn):
	 * raft may be in the middle of stepping down right now */
}

/* Auto-creation on a node that is not the active controller: forward it
 * as a CreateTopics with the defaults (the answer is dropped). */
static bool
auto_create_as_create_topics(struct ctl_op *op)
{
	struct rn_CreateTopicsRequest req;
	struct rn_CreateTopicsRequest_CreatableTopic *ts;
	msgpack_unpacked up;
	const msgpack_object *a;
	struct rn_kwriter w;
	uint32_t i;
	bool ok = false;

	msgpack_unpacked_init(&up);
	if (msgpack_unpack_next(&up, (const char *)op->body, op->len, NULL) !=
	    MSGPACK_UNPACK_SUCCESS || (a = rn_mp_get(&up.data, "topics")) ==
	    NULL || a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size == 0 ||
	    (ts = rn_arena_alloc(&op->arena, sizeof(*ts) *
	    a->via.array.size)) == NULL) {
		msgpack_unpacked_destroy(&up);
		return false;
	}
	rn_CreateTopicsRequest_init(&req);
	for (i = 0; i < a->via.array.size; i++) {
		const msgpack_object *o = &a->via.array.ptr[i];

		if (ctl_auto_create_entry(op, o, &ts[req.topics_count]))
			req.topics_count++;
	}
	req.topics = ts;
	req.timeout_ms = 30000;
	rn_kwriter_init(&w);
	if (req.topics_count > 0 && rn_CreateTopicsRequest_encode(&w, 7,
	    &req) == 0 && w.err == 0) {
		free(op->body);
		if ((op->body = malloc(w.len)) != NULL) {
			memcpy(op->body, w.buf, w.len);
			op->len = w.len;
			op->key = RN_KAPI_CREATE_TOPICS;
			op->ver = 7;
			ok = true;
		}
	}
	rn_kwriter_free(&w);
	msgpack_unpacked_destroy(&up);
	return ok;
}

/* Validate and build records; then propose or answer right away. */
static void
op_run(struct ctl *c, struct ctl_op *op)
{
	struct rn_kreader r;
	int rc = 0;

	if (op->origin == CTL_ORIGIN_INTERNAL) {
		/* its records were built when it was queued */
	} else if (op->origin == CTL_ORIGIN_RING &&
	    op->type == RN_IPC_AUTO_CREATE) {
		c->op_hooks->auto_create(op);
	} else if (!rn_kapi_supported(op->key, op->ver)) {
		op_finish(op, RN_KERR_UNSUPPORTED_VERSION);
		return;
	} else {
		const struct ctl_op_api *api = op_api_find(op->c, op->key);

		if (api == NULL) {
			log_warnx("API key %d is not answered by the "
			    "controller", op->key);
			op_finish(op, RN_KERR_UNSUPPORTED_VERSION);
			return;
		}
		if (api->direct && (op->origin != CTL_ORIGIN_CONN ||
		    op->fwd)) {
			op_finish(op, RN_KERR_UNSUPPORTED_VERSION);
			return;
		}
		rn_kreader_init(&r, op->body, op->len);
		rc = api->run(op, &r);
		if (rc != 0) {
			log_warnx("API %d v%d request does not decode (%d)",
			    op->key, op->ver, rc);
			op_finish(op, rc == RN_KE_VERSION ?
			    RN_KERR_UNSUPPORTED_VERSION : RN_KERR_INVALID_REQUEST);
			return;
		}
	}
	if (op->batch.n == 0 || op->validate_only) {
		c->op_hooks->committed(op);
		op_finish(op, 0);
		return;
	}
	op->apply.data = op;
	if ((rc = ctl_raft_propose(c, &op->batch, &op->apply,
	    op_applied)) != 0) {
		op_fail_successes(op);
		op_finish(op, 0);
		return;
	}
	c->op_inflight = op;
}

/* Fencing and elections the cluster needs, queued behind nothing. */
static void
maybe_reconcile(struct ctl *c)
{
	struct ctl_batch b;
	struct ctl_op *op;

	if (c->ops_head != NULL || c->op_inflight != NULL)
		return;
	/* runs every loop turn: allocate only when there is work */
	ctl_batch_init(&b);
	if (!c->op_hooks->reconcile(c, &b) ||
	    (op = op_new(c, CTL_ORIGIN_INTERNAL)) == NULL) {
		ctl_batch_free(&b);
		return;
	}
	ctl_batch_free(&op->batch);
	op->batch = b;
	msgpack_packer_init(&op->batch.pk, &op->batch.sb,
	    msgpack_sbuffer_write);
	op_run(c, op);
}

/*
 * Not the active controller: this node's own requests go to the one that
 * is (forwarded by the agent), other nodes' are told NOT_CONTROLLER, and
 * internal ones are dropped. A leader still catching up, or a voter that
 * knows no leader, keeps its own requests queued meanwhile.
 */
static void
route_elsewhere(struct ctl *c)
{
	raft_id id = 0;
	const char *addr = NULL;
	struct ctl_op *op, *keep = NULL, *keep_tail = NULL;
	bool hold = false;
	unsigned n_keep = 0;

	if (c->raft_inited) {
		raft_leader(&c->raft, &id, &addr);
		hold = raft_state(&c->raft) == RAFT_LEADER || id == 0 ||
		    id == (raft_id)c->cfg->node_id;
	}
	while ((op = c->ops_head) != NULL) {
		c->ops_head = op->next;
		op->next = NULL;
		if (op->origin == CTL_ORIGIN_RING && hold) {
			if (keep_tail != NULL)
				keep_tail->next = op;
			else
				keep = op;
			keep_tail = op;
			n_keep++;
		} else if (op->origin == CTL_ORIGIN_RING) {
			if (op->type == RN_IPC_AUTO_CREATE &&
			    !auto_create_as_create_topics(op))
				ctl_op_free(op);
			else
				c->op_hooks->forward(c, op);
		} else if (op->origin == CTL_ORIGIN_CONN) {
			op_not_controller(op);
		} else
			ctl_op_free(op);
	}
	c->ops_head = keep;
	c->ops_tail = keep_tail;
	c->n_ops = n_keep;
}

void
ctl_admin_kick(struct ctl *c)
{
	struct ctl_op *op;

	if (c->stopping || c->fatal)
		return;
	if (!c->ready) {
		if (c->ops_head != NULL)
			route_elsewhere(c);
		return;
	}
	while (c->op_inflight == NULL && (op = c->ops_head) != NULL) {
		c->ops_head = op->next;
		if (c->ops_head == NULL)
			c->ops_tail = NULL;
		c->n_ops--;
		op->next = NULL;
		op_run(c, op);
	}
	if (c->op_inflight == NULL)
		maybe_reconcile(c);
}

void
ctl_admin_fail_all(struct ctl *c)
{
	struct ctl_op *op;

	while ((op = c->ops_head) != NULL) {
		c->ops_head = op->next;
		c->n_ops--;
		op_not_controller(op);
	}
	c->ops_tail = NULL;
	/* the in-flight one ends in op_applied with raft's verdict */
}

