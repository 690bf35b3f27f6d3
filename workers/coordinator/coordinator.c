/*
 * The group coordinator worker: one per node. It takes the group
 * requests each network worker forwards over its ring, answers them from
 * the groups it holds (those whose __consumer_offsets partition this node
 * leads), and follows the metadata image to load a partition it comes to
 * lead and drop one it no longer does. Everything it knows is rebuilt
 * from __consumer_offsets, so a restart costs a reload, never an offset.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "workers/coordinator/coord_int.h"
#include "workers/coordinator/coordinator.h"
#include "workers/peer.h"

#define CO_WAIT_MS 100
#define CO_LOAD_STEP_MS 20

char *
co_strdup(struct rn_kstr s)
{
	size_t n = s.len > 0 ? (size_t)s.len : 0;
	char *p = malloc(n + 1);

	if (p == NULL)
		fatalx("group coordinator: out of memory");
	if (n > 0)
		memcpy(p, s.ptr, n);
	p[n] = '\0';
	return p;
}

const struct rn_mdv_topic *
co_offsets_topic(struct co *co)
{
	const struct rn_mdv_topic *t = rn_mdview_topic(&co->view,
	    RN_OFFSETS_TOPIC, strlen(RN_OFFSETS_TOPIC));

	if (t == NULL || memcmp(t->id, co->topic_id, 16) != 0)
		return NULL;
	return t;
}

int32_t
co_partition_of(struct co *co, struct rn_kstr group)
{
	if (co->n_parts <= 0)
		return -1;
	return rn_group_partition(group.ptr, (size_t)(group.len > 0 ?
	    group.len : 0), co->n_parts);
}

int16_t
co_part_error(struct co *co, int32_t p)
{
	if (p < 0 || p >= co->n_parts || p >= CO_MAX_PARTS)
		return RN_KERR_NOT_COORDINATOR;
	switch (co->part[p].state) {
	case CP_LOADED: return RN_KERR_NONE;
	case CP_LOADING: return RN_KERR_COORDINATOR_LOAD_IN_PROGRESS;
	default: return RN_KERR_NOT_COORDINATOR;
	}
}

int
co_reply(struct co *co, const struct co_pending *p, const void *resp)
{
	const struct rn_kapi *api = rn_kapi_find(p->key);
	const struct rn_worker_env *env = co->w->env;
	struct rn_ring *ring;
	struct rn_kwriter w;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int rc;

	if (api == NULL || p->slot >= env->n_workers)
		return -EINVAL;
	rn_kwriter_init(&w);
	api->encode_response(&w, p->ver, resp);
	if (w.err != 0) {
		log_warnx("cannot encode a %s v%d response: %d", api->name,
		    p->ver, w.err);
		rn_kwriter_free(&w);
		return -EINVAL;
	}
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 3);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "req");
	msgpack_pack_uint64(&pk, p->req);
	rn_mp_pack_str(&pk, "body");
	msgpack_pack_bin(&pk, w.len);
	msgpack_pack_bin_body(&pk, w.buf, w.len);
	rn_kwriter_free(&w);
	ring = rn_shm_ring_from_coord(env->shm, p->slot);
	rc = rn_ringq_send(&co->out[p->slot], ring, RN_IPC_GROUP_RESPONSE,
	    sb.data, sb.size, atomic_load(&rn_shm_worker(env->shm,
	    p->slot)->pid));
	msgpack_sbuffer_destroy(&sb);
	if (rc == 0)
		(void)rn_ring_notify(ring, env->efd[p->slot]);
	return rc;
}

/*
 * A request that cannot be answered (out of memory, undecodable): a reply
 * without a body, on which the network worker closes the connection, so
 * the client retries rather than waits.
 */
static void
co_fail(struct co *co, const struct co_pending *p)
{
	const struct rn_worker_env *env = co->w->env;
	struct rn_ring *ring = rn_shm_ring_from_coord(env->shm, p->slot);
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "req");
	msgpack_pack_uint64(&pk, p->req);
	if (rn_ringq_send(&co->out[p->slot], ring, RN_IPC_GROUP_RESPONSE,
	    sb.data, sb.size, atomic_load(&rn_shm_worker(env->shm,
	    p->slot)->pid)) == 0)
		(void)rn_ring_notify(ring, env->efd[p->slot]);
	msgpack_sbuffer_destroy(&sb);
}

/* The APIs the coordinator answers. */
static const struct {
	int16_t key;
	int (*fn)(struct co *, struct co_req *);
} handlers[] = {
	{ RN_KAPI_JOIN_GROUP, co_join_group },
	{ RN_KAPI_SYNC_GROUP, co_sync_group },
	{ RN_KAPI_HEARTBEAT, co_heartbeat },
	{ RN_KAPI_LEAVE_GROUP, co_leave_group },
	{ RN_KAPI_OFFSET_COMMIT, co_offset_commit },
	{ RN_KAPI_OFFSET_FETCH, co_offset_fetch },
	{ RN_KAPI_LIST_GROUPS, co_list_groups },
	{ RN_KAPI_DESCRIBE_GROUPS, co_describe_groups },
	{ RN_KAPI_DELETE_GROUPS, co_delete_groups },
	{ RN_KAPI_OFFSET_DELETE, co_offset_delete },
	{ RN_KAPI_INIT_PRODUCER_ID, co_init_producer_id },
	{ RN_KAPI_ADD_PARTITIONS_TO_TXN, co_add_partitions_to_txn },
	{ RN_KAPI_ADD_OFFSETS_TO_TXN, co_add_offsets_to_txn },
	{ RN_KAPI_END_TXN, co_end_txn },
	{ RN_KAPI_TXN_OFFSET_COMMIT, co_txn_offset_commit },
	{ RN_KAPI_LIST_TRANSACTIONS, co_list_transactions },
	{ RN_KAPI_DESCRIBE_TRANSACTIONS, co_describe_transactions },
};

/* A string of a message as a NUL-terminated copy, or dflt. */
static const char *
mp_cstr(struct rn_arena *a, const msgpack_object *o, const char *dflt)
{
	char *s;

	if (o == NULL || o->type != MSGPACK_OBJECT_STR || o->via.str.size > 1024 ||
	    (s = rn_arena_strndup(a, o->via.str.ptr, o->via.str.size)) == NULL)
		return dflt;
	return s;
}

bool
co_authorized(struct co *co, struct co_req *r, int8_t op, int8_t res,
    struct rn_kstr name)
{
	char what[256];
	size_t len = name.len > 0 ? (size_t)name.len : 0;

	if (!co->authz.on)
		return true;
	if (r->who.principal != NULL && rn_authz_allowed(&co->authz,
	    co->view.acls, co->view.n_acls, &r->who, op, res,
	    name.ptr != NULL ? name.ptr : "", len))
		return true;
	/* clients retry every few seconds: one line per 10 s at most */
	if (co->now - co->authz_logged_ms < 10000 && co->authz_logged_ms != 0) {
		co->authz_unlogged++;
		return false;
	}
	if (len >= sizeof(what))
		len = sizeof(what) - 1;
	memcpy(what, name.ptr != NULL ? name.ptr : "", len);
	what[len] = '\0';
	rn_log_about(LOG_NOTICE, res == RN_ACL_RES_GROUP ? rn_subj_group(what) :
	    res == RN_ACL_RES_TOPIC ? rn_subj_topic(what) : rn_subj_topic(NULL),
	    "authorization: %s from %s denied %s on %s %s (API %d; %u "
	    "denials not logged before this one)", r->who.principal != NULL ?
	    r->who.principal : "(no principal forwarded)",
	    r->who.host, rn_acl_op_name(op), rn_acl_resource_name(res), what,
	    r->pend.key, co->authz_unlogged);
	co->authz_logged_ms = co->now;
	co->authz_unlogged = 0;
	return false;
}

bool
co_authorized_cluster(struct co *co, struct co_req *r, int8_t op)
{
	if (!co->authz.on)
		return true;
	return r->who.principal != NULL && rn_authz_allowed(&co->authz, co->view.acls, co->view.n_acls,
	    &r->who, op, RN_ACL_RES_CLUSTER, RN_ACL_CLUSTER_NAME,
	    strlen(RN_ACL_CLUSTER_NAME));
}

/* Which network worker a drained message came from. */
struct co_src {
	struct co *co;
	unsigned slot;
};

static int
co_handle(void *arg, pid_t sender, uint16_t type, const msgpack_object *m)
{
	struct co_src *src = arg;
	struct co *co = src->co;
	unsigned slot = src->slot;
	const msgpack_object *body = rn_mp_get(m, "body");
	const msgpack_object *o;
	const struct rn_kapi *api;
	struct co_req r;
	struct rn_kreader kr;
	size_t i;
	int rc;

	(void)sender;
	if (type == RN_IPC_GROUP_REQUEST && rn_mp_get_int(m, "v", -1) ==
	    RN_IPC_VERSION && rn_mp_get_int(m, "key", -1) ==
	    RN_KAPI_WRITE_TXN_MARKERS) {
		/* a marker a network worker wrote to __consumer_offsets */
		int64_t part = rn_mp_get_int(m, "partition", -1);

		if (part >= 0 && part < co->n_parts)
			co_txn_offsets_marker(co, (int32_t)part,
			    rn_mp_get_int(m, "pid", -1),
			    rn_mp_get_int(m, "commit", 0) != 0);
		return 0;
	}
	if (type == RN_IPC_GROUP_REQUEST && rn_mp_get_int(m, "v", -1) ==
	    RN_IPC_VERSION && rn_mp_get(m, "verify") != NULL) {
		/* a transactional write's check (KIP-890) */
		co_txn_verify_ring(co, slot, m);
		return 0;
	}
	if (type != RN_IPC_GROUP_REQUEST || rn_mp_get_int(m, "v", -1) !=
	    RN_IPC_VERSION || body == NULL || body->type != MSGPACK_OBJECT_BIN)
		return -EBADMSG;
	memset(&r, 0, sizeof(r));
	r.pend.slot = slot;
	r.pend.req = (uint64_t)rn_mp_get_int(m, "req", 0);
	r.pend.key = (int16_t)rn_mp_get_int(m, "key", -1);
	r.pend.ver = (int16_t)rn_mp_get_int(m, "ver", -1);
	r.pend.active = true;
	if ((o = rn_mp_get(m, "client")) != NULL && o->type ==
	    MSGPACK_OBJECT_STR) {
		r.client.ptr = o->via.str.ptr;
		r.client.len = (int32_t)o->via.str.size;
	}
	if ((o = rn_mp_get(m, "host")) != NULL && o->type ==
	    MSGPACK_OBJECT_STR) {
		r.host.ptr = o->via.str.ptr;
		r.host.len = (int32_t)o->via.str.size;
	}
	r.body = (const uint8_t *)body->via.bin.ptr;
	r.len = body->via.bin.size;
	if ((api = rn_kapi_find(r.pend.key)) == NULL)
		return -EBADMSG;
	rn_arena_reset(&co->arena);
	rn_arena_set_limit(&co->arena, 4 * r.len + 4096 +
	    (size_t)co->cfg->socket_request_max_bytes);
	/* none (a network worker of an older binary): every check denies */
	r.who.principal = mp_cstr(&co->arena, rn_mp_get(m, "principal"), NULL);
	r.who.host = mp_cstr(&co->arena, rn_mp_get(m, "addr"), "");
	rn_kreader_init(&kr, r.body, r.len);
	if ((r.req = rn_arena_alloc(&co->arena, api->request_size)) == NULL ||
	    (rc = api->decode_request(&kr, r.pend.ver, &co->arena,
	    r.req)) < 0) {
		/* the network worker decoded it already: not expected */
		log_warnx("cannot decode a %s v%d request from slot %u",
		    api->name, r.pend.ver, slot);
		co_fail(co, &r.pend);
		return 0;
	}
	for (i = 0; i < RN_ARRAY_SIZE(handlers); i++)
		if (handlers[i].key == r.pend.key) {
			if ((rc = handlers[i].fn(co, &r)) != 0) {
				log_warnx("%s v%d failed: %s", api->name,
				    r.pend.ver, strerror(-rc));
				co_fail(co, &r.pend);
			}
			return 0;
		}
	co_fail(co, &r.pend);
	return 0;
}

static void
co_drain_all(struct co *co)
{
	const struct rn_worker_env *env = co->w->env;
	unsigned i, slot;

	for (i = 0; i < env->n_network; i++) {
		struct co_src src;
		struct rn_drain d;

		slot = rn_worker_slot_of(env, RN_ROLE_W_NETWORK, i);
		src.co = co;
		src.slot = slot;
		memset(&d, 0, sizeof(d));
		d.ring = rn_shm_ring_to_coord(env->shm, slot);
		d.sender_pid = &rn_shm_worker(env->shm, slot)->pid;
		d.in = &co->in[slot];
		d.wake_fd = env->efd[slot];
		d.max_len = (size_t)co->cfg->socket_request_max_bytes + 65536;
		d.from = "a network worker";
		d.handle = co_handle;
		d.arg = &src;
		if (rn_worker_drain(&d) != 0)
			log_warnx("network worker slot %u sent a bad message",
			    slot);
	}
}

/* Stop coordinating one partition: its groups and their waiters go. */
static void
co_unload(struct co *co, int32_t p)
{
	if (co->part[p].state == CP_NONE)
		return;
	rn_log_about(LOG_INFO, rn_subj_part(RN_OFFSETS_TOPIC, p), "%s-%d: no "
	    "longer led here: unloading its groups", RN_OFFSETS_TOPIC, p);
	/* its groups' writes; the transaction state's of the same number
	 * are another partition's */
	co_writes_fail(co, false, p);
	co_groups_unload(co, p);
	co->part[p].state = CP_NONE;
}

/*
 * Which partitions of an internal topic lead here now, as a new image
 * says (__consumer_offsets for the groups, __transaction_state for the
 * transactional ids). One led at a new epoch is loaded again (another
 * leader may have written in between); one no longer led here, or every
 * one of a topic recreated under a new id, is unloaded.
 */
void
co_follow_topic(struct co *co, const char *name, uint8_t id[16],
    int32_t *n_parts, struct co_part *part,
    void (*unload)(struct co *, int32_t))
{
	const struct rn_mdv_topic *t = rn_mdview_topic(&co->view, name,
	    strlen(name));
	int32_t p, n;

	if (t == NULL || memcmp(t->id, id, 16) != 0) {
		for (p = 0; p < *n_parts && p < CO_MAX_PARTS; p++)
			unload(co, p);
		*n_parts = 0;
		memset(id, 0, 16);
		if (t == NULL)
			return;
		memcpy(id, t->id, 16);
	}
	n = t->n_parts < CO_MAX_PARTS ? t->n_parts : CO_MAX_PARTS;
	*n_parts = t->n_parts;
	for (p = 0; p < n; p++) {
		const struct rn_mdv_partition *mp = rn_mdview_partition(t, p);
		struct co_part *cp = &part[p];
		bool mine = mp != NULL && mp->leader == co->cfg->node_id &&
		    mp->slot >= 0;

		if (cp->state != CP_NONE && (!mine ||
		    mp->leader_epoch != cp->leader_epoch))
			unload(co, p);
		if (mine && cp->state == CP_NONE) {
			cp->state = CP_LOADING;
			cp->leader_epoch = mp->leader_epoch;
			cp->load_next = -1;
			rn_log_about(LOG_DEBUG, rn_subj_part(name, p),
			    "%s-%d: led here at epoch %d: loading", name, p,
			    mp->leader_epoch);
		}
	}
}

/* Load the partitions being loaded, a bounded time per turn. */
static bool
co_load(struct co *co)
{
	int64_t until = rn_now_ms() + CO_LOAD_STEP_MS;
	int32_t p;

	/* a partition that cannot be read yet is tried again next turn */
	for (p = 0; p < co->n_parts && p < CO_MAX_PARTS; p++) {
		if (co->part[p].state != CP_LOADING)
			continue;
		while (!co_log_load_step(co, p))
			if (rn_now_ms() >= until)
				return true;
	}
	return co_txn_load(co, until);
}

static int
co_setup(struct co *co, struct rn_worker *w)
{
	const struct rn_worker_env *env = w->env;
	unsigned i;

	memset(co, 0, sizeof(*co));
	co->w = w;
	co->cfg = env->cfg;
	rn_group_settings_load(env->cfg, &co->gs);
	rn_txn_settings_load(env->cfg, &co->ts);
	if (co->gs.max_size > CO_MAX_MEMBERS)
		co->gs.max_size = CO_MAX_MEMBERS;
	co->writes_tail = &co->writes;
	co->coord_slot = w->slot;
	for (i = 0; i < env->n_network && i < 64; i++)
		co->net_efds[i] = env->efd[rn_worker_slot_of(env,
		    RN_ROLE_W_NETWORK, i)];
	rn_arena_init(&co->arena, 0);
	if (rn_part_table_init(&co->parts, env->shm, env->cfg) != 0)
		return -ENOMEM;
	co->parts.worker = w;
	rn_mdview_init(&co->view);
	if (rn_authz_init(&co->authz, co->cfg->authorizer_on,
	    co->cfg->super_users, co->cfg->allow_everyone_if_no_acl_found) != 0)
		fatal("out of memory");
	return 0;
}

static void
co_sleeping(struct co *co, bool on)
{
	const struct rn_worker_env *env = co->w->env;
	unsigned i;

	for (i = 0; i < env->n_network; i++)
		rn_ring_consumer_sleeping(rn_shm_ring_to_coord(env->shm,
		    rn_worker_slot_of(env, RN_ROLE_W_NETWORK, i)), on);
}

static bool
co_pump(struct co *co)
{
	const struct rn_worker_env *env = co->w->env;
	bool left = false;
	unsigned s;

	for (s = 0; s < env->n_workers; s++) {
		struct rn_ring *r;

		if (!rn_ringq_pending(&co->out[s]))
			continue;
		r = rn_shm_ring_from_coord(env->shm, s);
		if (rn_ringq_pump(&co->out[s], r, atomic_load(
		    &rn_shm_worker(env->shm, s)->pid)) == 1)
			(void)rn_ring_notify(r, env->efd[s]);
		left = left || rn_ringq_pending(&co->out[s]);
	}
	return left;
}

int
rn_coordinator_main(struct rn_worker *w)
{
	static struct co co; /* large: the ring queues of every slot */
	int rc;

	if ((rc = co_setup(&co, w)) != 0) {
		log_errx("group coordinator setup failed: %s", strerror(-rc));
		return RN_WORKER_EXIT_RESTART;
	}
	if (rn_worker_send_hello(w) != 0)
		log_warnx("cannot reach the controller yet");
	rn_worker_heartbeat(w);
	log_info("group coordinator up");
	while (!rn_worker_should_stop()) {
		int64_t next;
		int timeout;
		bool busy;

		co.now = rn_now_ms();
		if (rn_mdview_refresh(&co.view, w->env->shm) == 1) {
			rn_part_table_sync(&co.parts, &co.view);
			co_follow_topic(&co, RN_OFFSETS_TOPIC, co.topic_id,
			    &co.n_parts, co.part, co_unload);
			co_txn_follow_image(&co);
		}
		busy = co_load(&co);
		co_sleeping(&co, true);
		rn_ring_consumer_sleeping(rn_shm_ring_from_ctl(w->env->shm,
		    w->slot), true);
		if (rn_peer_drain(w) != 0) {
			log_errx("bad message from the controller: restarting");
			return RN_WORKER_EXIT_RESTART;
		}
		co_drain_all(&co);
		co.now = rn_now_ms();
		/* timers are looked at every 100 ms at least, not each turn */
		if (co.now >= co.next_tick_ms) {
			next = co_groups_tick(&co);
			co.next_tick_ms = next < co.now + 100 ? next :
			    co.now + 100;
		}
		next = co.next_tick_ms;
		if (co.writes != NULL) {
			int64_t s = co_log_settle(&co);

			if (s < next)
				next = s;
		}
		co_txn_tick(&co);
		if (co.marking != NULL || co.n_mconns > 0) {
			int64_t s = co_txn_markers_tick(&co);

			if (s < next)
				next = s;
		}
		{
			/* KIP-890 verifications asked of other nodes */
			int64_t s = co_txn_verify_tick(&co);

			if (s < next)
				next = s;
		}
		/* what those wrote may be replicated already (one node, or
		 * fast followers): settled now, not a poll later */
		if (co.writes != NULL) {
			int64_t s = co_log_settle(&co);

			if (s < next)
				next = s;
		}
		if (co.now >= co.next_expiry_ms) {
			co.next_expiry_ms = co.now + co.gs.retention_check_ms;
			co_offsets_expire(&co);
		}
		if (co_pump(&co) && next > co.now + 10)
			next = co.now + 10;
		timeout = busy ? 0 : (int)(next - rn_now_ms());
		if (timeout < 0)
			timeout = 0;
		if (timeout > CO_WAIT_MS)
			timeout = CO_WAIT_MS;
		{
			/* marker answers wake the loop as they come */
			int fds[RN_WORKER_WAIT_FDS], nf;

			nf = co_txn_markers_fds(&co, fds, RN_WORKER_WAIT_FDS);
			nf += co_txn_verify_fds(fds + nf,
			    RN_WORKER_WAIT_FDS - nf);
			rn_worker_wait_fds(w, timeout, fds, nf);
		}
		co_sleeping(&co, false);
		rn_ring_consumer_sleeping(rn_shm_ring_from_ctl(w->env->shm,
		    w->slot), false);
	}
	log_info("group coordinator stopping: %u groups, %u transactional ids",
	    co.n_groups, co.n_txns);
	co_txn_markers_close(&co);
	co_txn_verify_close(&co);
	rn_part_table_close(&co.parts);
	return RN_WORKER_EXIT_OK;
}
