/*
 * Consumer groups and transactions on the network side. FindCoordinator
 * is answered here from the image (the leader of the group's
 * __consumer_offsets partition, or of the transactional id's
 * __transaction_state partition), asking the controller to create that
 * topic on first use. Every other group or transaction API goes to this node's group coordinator over this worker's
 * ring pair to it, as the client sent it; the connection waits for the
 * reply, which may come much later (a JoinGroup waits for the rebalance).
 * A coordinator that restarts meanwhile costs the waiting clients their
 * connection: they reconnect and ask again, as after a coordinator move.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/acl.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "protocol/kframe.h"
#include "protocol/group_records.h"
#include "protocol/txn_records.h"
#include "workers/network/net_int.h"

/* A client whose coordinator never answers gives up long before this. */
#define GROUP_TIMEOUT_MS (35 * 60 * 1000)

static unsigned
coord_slot(const struct net *n)
{
	return rn_worker_slot_of(n->w->env, RN_ROLE_W_COORDINATOR, 0);
}

int
net_coord_send(struct net *n, const void *buf, size_t len)
{
	const struct rn_worker_env *env = n->w->env;
	struct rn_ring *r = rn_shm_ring_to_coord(env->shm, n->w->slot);
	int rc;

	if ((rc = rn_ringq_send(&n->to_coord, r, RN_IPC_GROUP_REQUEST, buf,
	    len, 0)) != 0)
		return rc;
	rc = rn_ring_notify(r, env->efd[coord_slot(n)]);
	return rc < 0 ? rc : 0;
}

/* Push what is queued for the coordinator; true if some is left. */
bool
net_coord_pump(struct net *n)
{
	const struct rn_worker_env *env = n->w->env;
	struct rn_ring *r = rn_shm_ring_to_coord(env->shm, n->w->slot);

	if (!rn_ringq_pending(&n->to_coord))
		return false;
	if (rn_ringq_pump(&n->to_coord, r, 0) == 1)
		(void)rn_ring_notify(r, env->efd[coord_slot(n)]);
	return rn_ringq_pending(&n->to_coord);
}

int
net_group_forward(struct net *n, struct conn *c)
{
	msgpack_sbuffer sb;
	size_t hl;
	char host[64];
	const char *colon;
	int rc;

	uint32_t st = atomic_load(&rn_shm_worker(n->w->env->shm,
	    coord_slot(n))->state);

	/* given up on: nobody would answer; the client tries elsewhere */
	if (st == RN_WS_FAILED || st == RN_WS_STOPPED)
		return -EHOSTDOWN;
	/* Kafka names a member's host as "/address" */
	colon = strrchr(c->peer, ':');
	hl = colon != NULL ? (size_t)(colon - c->peer) : strlen(c->peer);
	snprintf(host, sizeof(host), "/%.*s", (int)hl, c->peer);
	if ((rc = net_forward_pack(n, c, host, &sb)) != 0)
		return rc;
	rc = net_coord_send(n, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	if (rc != 0)
		return rc;
	net_conn_park(n, c, CONN_WAIT_COORDINATOR, rn_now_ms() +
	    GROUP_TIMEOUT_MS);
	return 0;
}

/*
 * A transaction marker written to a __consumer_offsets partition: the
 * group coordinator makes the producer's pending offsets visible (commit)
 * or drops them (abort). One-way: req 0 wants no answer.
 */
void
net_coord_txn_marker(struct net *n, int32_t partition, int64_t pid,
    bool commit)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 6);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "req");
	msgpack_pack_uint64(&pk, 0);
	rn_mp_pack_str(&pk, "key");
	msgpack_pack_int16(&pk, RN_KAPI_WRITE_TXN_MARKERS);
	rn_mp_pack_str(&pk, "partition");
	msgpack_pack_int32(&pk, partition);
	rn_mp_pack_str(&pk, "pid");
	msgpack_pack_int64(&pk, pid);
	rn_mp_pack_str(&pk, "commit");
	msgpack_pack_int(&pk, commit ? 1 : 0);
	if (net_coord_send(n, sb.data, sb.size) != 0)
		rn_log_about(LOG_WARNING, rn_subj_part(RN_OFFSETS_TOPIC,
		    partition), "cannot tell the group coordinator of a "
		    "transaction marker on %s-%d", RN_OFFSETS_TOPIC, partition);
	msgpack_sbuffer_destroy(&sb);
}

static int
coord_channel_handle(void *arg, pid_t sender, uint16_t type,
    const msgpack_object *m)
{
	(void)sender;
	if (type != RN_IPC_GROUP_RESPONSE)
		return -EBADMSG;
	if (rn_mp_get(m, "verify") != NULL) {
		net_verify_reply(arg, m);
		return 0;
	}
	net_forwarded_reply(arg, CONN_WAIT_COORDINATOR, m,
	    "the group coordinator");
	return 0;
}

/*
 * Replies from the coordinator; and when it was restarted, the requests
 * it held are lost: their connections close so the clients ask again.
 */
int
net_coord_drain(struct net *n)
{
	const struct rn_worker_env *env = n->w->env;
	struct rn_worker_slot *ws = rn_shm_worker(env->shm, coord_slot(n));
	int32_t pid = atomic_load(&ws->pid);
	struct rn_drain d = {
		.ring = rn_shm_ring_from_coord(env->shm, n->w->slot),
		.sender_pid = &ws->pid,
		.in = &n->from_coord,
		.wake_fd = env->efd[coord_slot(n)],
		.max_len = (size_t)n->cfg->socket_request_max_bytes + 65536,
		.from = "the group coordinator",
		.handle = coord_channel_handle,
		.arg = n,
	};
	struct conn *c, *nc;

	if (n->coord_pid != 0 && pid != n->coord_pid)
		for (c = n->conns; c != NULL; c = nc) {
			nc = c->next_all;
			if (c->wait == CONN_WAIT_COORDINATOR ||
			    c->wait == CONN_WAIT_VERIFY)
				net_conn_close(n, c, "group coordinator "
				    "restarted");
		}
	n->coord_pid = pid;
	return rn_worker_drain(&d);
}

/* ---- FindCoordinator ------------------------------------------------ */

/*
 * Ask the controller for an internal topic (__consumer_offsets or
 * __transaction_state), at most once a second each.
 */
static void
internal_topic_create(struct net *n, const char *name, int32_t partitions,
    int32_t rf, int64_t segment_bytes, int32_t min_isr, int64_t *next_ms)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char seg[32], isr[16];
	int64_t now = rn_now_ms();

	if (now < *next_ms)
		return;
	*next_ms = now + 1000;
	snprintf(seg, sizeof(seg), "%lld", (long long)segment_bytes);
	snprintf(isr, sizeof(isr), "%d", (int)min_isr);
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "topics");
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 4);
	rn_mp_pack_str(&pk, "name");
	rn_mp_pack_str(&pk, name);
	rn_mp_pack_str(&pk, "partitions");
	msgpack_pack_int32(&pk, partitions);
	rn_mp_pack_str(&pk, "rf");
	msgpack_pack_int32(&pk, rf);
	rn_mp_pack_str(&pk, "configs");
	msgpack_pack_map(&pk, min_isr > 0 ? 4 : 3);
	rn_mp_pack_str(&pk, "cleanup.policy");
	rn_mp_pack_str(&pk, "compact");
	rn_mp_pack_str(&pk, "compression.type");
	rn_mp_pack_str(&pk, min_isr > 0 ? "uncompressed" : "producer");
	rn_mp_pack_str(&pk, "segment.bytes");
	rn_mp_pack_str(&pk, seg);
	if (min_isr > 0) {
		rn_mp_pack_str(&pk, "min.insync.replicas");
		rn_mp_pack_str(&pk, isr);
	}
	if (rn_worker_send_ctl(n->w, RN_IPC_AUTO_CREATE, sb.data,
	    (uint32_t)sb.size) != 0)
		rn_log_about(LOG_WARNING, rn_subj_topic(name),
		    "cannot ask the controller to create %s", name);
	msgpack_sbuffer_destroy(&sb);
}

static void
offsets_topic_create(struct net *n)
{
	struct rn_group_settings gs;

	rn_group_settings_load(n->cfg, &gs);
	internal_topic_create(n, RN_OFFSETS_TOPIC, gs.offsets_partitions,
	    gs.offsets_rf, gs.offsets_segment_bytes, 0,
	    &n->next_offsets_create_ms);
}

static void
txn_topic_create(struct net *n)
{
	struct rn_txn_settings ts;

	rn_txn_settings_load(n->cfg, &ts);
	internal_topic_create(n, RN_TXN_TOPIC, ts.partitions, ts.rf,
	    ts.segment_bytes, ts.min_isr, &n->next_txn_create_ms);
}

/* The coordinator of one key: error code, and the broker when 0. */
static int16_t
find_one(struct net *n, struct rn_kstr key, int8_t key_type,
    const struct rn_mdv_broker **out)
{
	const struct rn_mdv_topic *t;
	const struct rn_mdv_partition *mp;
	const struct rn_mdv_broker *b;
	int32_t p;

	const char *topic = key_type == 1 ? RN_TXN_TOPIC : RN_OFFSETS_TOPIC;

	*out = NULL;
	if (key_type != 0 && key_type != 1)
		return RN_KERR_INVALID_REQUEST;
	if (key.len < 0 || (key_type == 1 && key.len == 0))
		return RN_KERR_INVALID_REQUEST;
	t = rn_mdview_topic(&n->view, topic, strlen(topic));
	if (t == NULL || t->n_parts <= 0) {
		if (key_type == 1)
			txn_topic_create(n);
		else
			offsets_topic_create(n);
		return RN_KERR_COORDINATOR_NOT_AVAILABLE;
	}
	p = rn_group_partition(key.ptr, (size_t)key.len, t->n_parts);
	if ((mp = rn_mdview_partition(t, p)) == NULL || mp->leader < 0 ||
	    (b = rn_mdview_broker(&n->view, mp->leader)) == NULL || b->fenced)
		return RN_KERR_COORDINATOR_NOT_AVAILABLE;
	*out = b;
	return RN_KERR_NONE;
}

/* DESCRIBE on the group or transactional id first, as Kafka checks. */
static int16_t
find_allowed(struct net *n, struct conn *c, struct rn_kstr key, int8_t type,
    const struct rn_mdv_broker **b)
{
	bool txn = type == 1;

	*b = NULL;
	if (!net_authorized(n, c, RN_ACL_OP_DESCRIBE, txn ?
	    RN_ACL_RES_TRANSACTIONAL_ID : RN_ACL_RES_GROUP, key.ptr,
	    key.len > 0 ? (size_t)key.len : 0))
		return txn ? RN_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED :
		    RN_KERR_GROUP_AUTHORIZATION_FAILED;
	return find_one(n, key, type, b);
}

int
net_find_coordinator(struct net *n, struct conn *c)
{
	const struct rn_FindCoordinatorRequest *req = c->req;
	struct rn_FindCoordinatorResponse r;
	const struct rn_mdv_broker *b;
	int32_t i;

	rn_FindCoordinatorResponse_init(&r);
	if (c->hdr.api_version < 4) {
		r.error_code = find_allowed(n, c, req->key, req->key_type, &b);
		r.error_message = rn_kstr_c(r.error_code ?
		    rn_kerr_name(r.error_code) : NULL);
		r.node_id = b ? b->id : -1;
		r.host = rn_kstr_c("");
		r.port = -1;
		if (b != NULL) {
			const char *host;
			uint16_t port;

			net_broker_endpoint(n, c, b, &host, &port);
			r.host = rn_kstr_c(host);
			r.port = port;
		}
		return net_respond(n, c, &r);
	}
	r.coordinators_count = req->coordinator_keys_count;
	r.coordinators = net_array(c, req->coordinator_keys_count,
	    sizeof(*r.coordinators));
	if (r.coordinators == NULL)
		return -ENOMEM;
	for (i = 0; i < req->coordinator_keys_count; i++) {
		struct rn_FindCoordinatorResponse_Coordinator *o =
		    &r.coordinators[i];

		rn_FindCoordinatorResponse_Coordinator_init(o);
		o->key = req->coordinator_keys[i];
		o->error_code = find_allowed(n, c, o->key, req->key_type, &b);
		o->error_message = rn_kstr_c(o->error_code ?
		    rn_kerr_name(o->error_code) : NULL);
		o->node_id = b ? b->id : -1;
		o->host = rn_kstr_c("");
		o->port = -1;
		if (b != NULL) {
			const char *host;
			uint16_t port;

			net_broker_endpoint(n, c, b, &host, &port);
			o->host = rn_kstr_c(host);
			o->port = port;
		}
	}
	return net_respond(n, c, &r);
}
