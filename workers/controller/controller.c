/*
 * The controller worker: one per node. It runs the metadata quorum
 * (libraft on a libuv loop, see raft.h), owns the metadata image in
 * shared memory (its only writer) and consumes every worker's ring to the
 * controller.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "storage/metaprops.h"
#include "workers/controller/controller.h"
#include "workers/partition/partition.h"
#include "workers/controller/op.h"
#include "workers/controller/raft.h"
#include "workers/partition/dirfail.h"
#include "workers/worker.h"

int
ctl_send(struct ctl *c, unsigned slot, uint16_t type, const void *buf,
    size_t len, pid_t dest)
{
	struct rn_ring *r = rn_shm_ring_from_ctl(c->shm, slot);
	int rc;

	if ((rc = rn_ringq_send(&c->to_slot[slot], r, type, buf, len,
	    dest)) != 0)
		return rc;
	rc = rn_ring_notify(r, c->w->env->efd[slot]);
	return rc < 0 ? rc : 0;
}

/* Push what waits for each worker's ring; the worker wakes us as it reads. */
static void
ctl_pump_all(struct ctl *c)
{
	unsigned slot;

	for (slot = 1; slot < c->w->env->n_workers; slot++) {
		struct rn_ring *r = rn_shm_ring_from_ctl(c->shm, slot);

		if (rn_ringq_pending(&c->to_slot[slot]) &&
		    rn_ringq_pump(&c->to_slot[slot], r, atomic_load(
		    &rn_shm_worker(c->shm, slot)->pid)) == 1)
			(void)rn_ring_notify(r, c->w->env->efd[slot]);
	}
}

static int
ctl_reply(struct ctl *c, unsigned slot, uint16_t type,
    const msgpack_sbuffer *sb)
{
	return ctl_send(c, slot, type, sb->data, sb->size,
	    atomic_load(&rn_shm_worker(c->shm, slot)->pid));
}

static int
ctl_on_hello(struct ctl *c, unsigned slot, const msgpack_object *m)
{
	struct rn_meta_image *mi = rn_shm_meta(c->shm);
	struct rn_worker_slot *ws = rn_shm_worker(c->shm, slot);
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char role[32];
	int64_t v;
	int rc;

	v = rn_mp_get_int(m, "v", -1);
	if (v != RN_IPC_VERSION || rn_mp_get_str(m, "role", role,
	    sizeof(role)) != 0) {
		log_warnx("slot %u: hello with IPC version %lld, expected %d",
		    slot, (long long)v, RN_IPC_VERSION);
		return -EPROTO;
	}
	atomic_fetch_add(&ws->hellos, 1);
	log_debug("hello from %s-%lld pid %lld", role,
	    (long long)rn_mp_get_int(m, "index", -1),
	    (long long)rn_mp_get_int(m, "pid", -1));

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "image");
	msgpack_pack_uint64(&pk, atomic_load(&mi->version));
	rc = ctl_reply(c, slot, RN_IPC_HELLO_ACK, &sb);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

/* The worker slot a message came from, for the handler. */
struct ctl_from {
	struct ctl *c;
	unsigned slot;
};

/* One message from a worker; -EBADMSG or -EPROTO cost it a restart. */
static int
ctl_handle(void *arg, pid_t sender, uint16_t type, const msgpack_object *m)
{
	struct ctl_from *f = arg;
	struct ctl *c = f->c;
	unsigned slot = f->slot;

	if (m->type != MSGPACK_OBJECT_MAP) {
		log_warnx("slot %u: malformed IPC message type %u", slot,
		    type);
		return -EBADMSG;
	}
	if (type == RN_IPC_HELLO)
		return ctl_on_hello(c, slot, m);
	if (type == RN_IPC_ALTER_PARTITION)
		return ctl_agent_alter_partition(c, m);
	if (type == RN_IPC_ADMIN_REQUEST || type == RN_IPC_AUTO_CREATE)
		/* copied: the ring space is released after this */
		return ctl_admin_enqueue(c, slot, sender, type, m);
	log_warnx("slot %u: unexpected IPC message type %u", slot, type);
	return -EBADMSG;
}

/*
 * Drain one worker's ring. A message from the wrong sender is left over
 * from an earlier incarnation and dropped; one that does not parse is a
 * bug inside the node: it costs this worker a restart, never the node.
 * Requests larger than a ring frame come in pieces, bounded like a
 * request (socket.request.max.bytes).
 */
static int
ctl_drain(struct ctl *c, unsigned slot)
{
	struct ctl_from f = { c, slot };
	char from[32];
	struct rn_drain d = {
		.ring = rn_shm_ring_to_ctl(c->shm, slot),
		.sender_pid = &rn_shm_worker(c->shm, slot)->pid,
		.in = &c->from_slot[slot],
		.wake_fd = c->w->env->efd[slot],
		.max_len = (size_t)c->cfg->socket_request_max_bytes + 65536,
		.from = from,
		.handle = ctl_handle,
		.arg = &f,
	};

	snprintf(from, sizeof(from), "slot %u", slot);
	return rn_worker_drain(&d);
}

static void ctl_stop(struct ctl *c, int exit_code);

static void
ctl_drain_all(struct ctl *c)
{
	unsigned slot;

	if (c->stopping)
		return;
	for (slot = 1; slot < c->w->env->n_workers; slot++) {
		/* announce sleep first: a push after the last peek wakes us */
		rn_ring_consumer_sleeping(rn_shm_ring_to_ctl(c->shm, slot),
		    true);
		if (ctl_drain(c, slot) != 0) {
			log_errx("bad message from slot %u: restarting", slot);
			ctl_stop(c, RN_WORKER_EXIT_RESTART);
			return;
		}
	}
	ctl_pump_all(c);
	ctl_admin_kick(c);
}

static void
ctl_on_wake(uv_poll_t *p, int status, int events)
{
	struct ctl *c = p->data;
	uint64_t v;

	(void)status;
	(void)events;
	(void)!read(c->w->env->efd[0], &v, sizeof(v));
	ctl_drain_all(c);
}

static void
ctl_on_tick(uv_timer_t *t)
{
	struct ctl *c = t->data;

	rn_worker_heartbeat(c->w);
	if (rn_worker_should_stop()) {
		ctl_stop(c, RN_WORKER_EXIT_OK);
		return;
	}
	ctl_drain_all(c);
	ctl_quorum_track(c);
	ctl_server_image_poll(c, false);
}

static void
ctl_after_turn(uv_check_t *h)
{
	struct ctl *c = h->data;

	if (c->fatal && !c->stopping) {
		ctl_stop(c, c->exit_code);
		return;
	}
	ctl_raft_watch(c);
	ctl_admin_kick(c);
	ctl_pump_all(c);
}

static void
ctl_handle_closed(uv_handle_t *h)
{
	(void)h;
}

static void
ctl_quorum_closed(struct ctl *c)
{
	uv_close((uv_handle_t *)&c->tick, ctl_handle_closed);
	uv_close((uv_handle_t *)&c->wake, ctl_handle_closed);
	uv_close((uv_handle_t *)&c->after, ctl_handle_closed);
}

static void
ctl_stop(struct ctl *c, int exit_code)
{
	if (c->stopping)
		return;
	c->stopping = true;
	if (c->exit_code == RN_WORKER_EXIT_OK)
		c->exit_code = exit_code;
	ctl_admin_fail_all(c);
	ctl_server_image_poll(c, true);
	ctl_server_close(c);
	ctl_agent_stop(c);
	log_info("controller stopping");
	ctl_raft_close(c, ctl_quorum_closed);
}

static void
ctl_remove_topic_hook(void *arg, const struct ctl_topic *t)
{
	ctl_admin_topic_removed(arg, t);
}

static void
ctl_remove_replica_hook(void *arg, const struct ctl_topic *t, int32_t p,
    int32_t broker, int32_t slot, const uint8_t dir[16])
{
	ctl_admin_replica_removed(arg, t, p, broker, slot, dir);
}

static void
ctl_before_publish(struct ctl *c)
{
	ctl_admin_run_deletions(c);
	ctl_admin_sweep_strays(c);
}

static void
ctl_published(struct ctl *c)
{
	ctl_server_image_poll(c, false);
}

/* What the operation engine calls outside itself. */
static const struct ctl_op_hooks ctl_op_hooks = {
	.send = ctl_send,
	.conn_reply = ctl_server_reply,
	.forward = ctl_agent_forward,
	.auto_create = ctl_op_auto_create,
	.committed = ctl_op_committed,
	.reconcile = ctl_reconcile_all,
};

/* What the raft layer and the operation engine report, and who hears it. */
static void
ctl_wire(struct ctl *c)
{
	static struct ctl_op_hooks op;

	op = ctl_op_hooks;
	op.apis = ctl_op_apis;
	op.n_apis = ctl_op_n_apis;
	c->op_hooks = &op;
	c->hooks.transport_ready = ctl_server_init;
	c->hooks.before_publish = ctl_before_publish;
	c->hooks.published = ctl_published;
	c->hooks.became_active = ctl_live_reset;
	c->hooks.lost_leadership = ctl_admin_kick;
}

/*
 * Reads the cluster and dir ids from meta.properties: the files may know
 * more than the supervisor did at fork time.
 */
static int
ctl_load_ids(struct ctl *c, const struct rn_worker_env *env)
{
	char err[1400];
	int i;

	strlcpy(c->known_cluster_id, env->cluster_id,
	    sizeof(c->known_cluster_id));
	for (i = 0; i < c->n_dirs; i++)
		memcpy(c->dir_ids[i], env->dir_ids[i], 16);
	if (rn_metaprops_load(c->cfg, c->known_cluster_id, c->dir_ids,
	    err, sizeof(err)) != 0) {
		/* a supervisor that did not write them: do it here */
		char cid[23];
		uint8_t ids[RN_CONFIG_MAX_LOGDIRS][16];

		log_debug("%s: creating missing meta.properties", err);
		if (rn_metaprops_ensure(c->cfg, cid, ids) != 0 ||
		    rn_metaprops_load(c->cfg, c->known_cluster_id, c->dir_ids,
		    err, sizeof(err)) != 0) {
			log_errx("%s", err);
			return -1;
		}
	}
	return 0;
}

static void
ctl_loop_init(struct ctl *c, const struct rn_worker_env *env)
{
	int rc;

	if ((rc = uv_loop_init(&c->loop)) != 0)
		fatal("uv_loop_init: %s", uv_strerror(rc));
	uv_timer_init(&c->loop, &c->tick);
	c->tick.data = c;
	uv_poll_init(&c->loop, &c->wake, env->efd[0]);
	c->wake.data = c;
	uv_check_init(&c->loop, &c->after);
	c->after.data = c;
	uv_timer_start(&c->tick, ctl_on_tick, CTL_TICK_MS, CTL_TICK_MS);
	uv_poll_start(&c->wake, UV_READABLE, ctl_on_wake);
	uv_check_start(&c->after, ctl_after_turn);
}

static void
ctl_free(struct ctl *c)
{
	int i;

	for (i = 0; i < RN_SHM_MAX_WORKERS; i++) {
		rn_ringq_clear(&c->to_slot[i]);
		rn_ringq_in_done(&c->from_slot[i]);
	}
	ctl_raft_free(c);
	ctl_state_free(&c->st);
	ctl_journal_free(&c->journal);
	free(c->live);
	free(c->server);
	free(c->agent);
	free(c);
}

/*
 * The metadata log could not be opened for a full or failing disk: as
 * Kafka, the node stops instead of retrying what only an operator can
 * mend. When the dir is also a log dir it goes offline, said the usual way.
 */
static void
metadata_dir_failed(struct ctl *c, int rc)
{
	const struct rn_config *cfg = c->cfg;
	int i;

	for (i = 0; i < cfg->n_log_dirs; i++)
		if (strcmp(cfg->log_dirs[i], cfg->metadata_log_dir) == 0)
			rn_dirfail_check(c->shm, i, cfg->log_dirs[i], rc,
			    "opening the metadata log");
	log_errx("shutting down: the metadata log in %s cannot be opened: %s",
	    cfg->metadata_log_dir, strerror(-rc));
}

int
rn_controller_main(struct rn_worker *w)
{
	const struct rn_worker_env *env = w->env;
	struct ctl *c;
	int rc;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("out of memory");
	c->w = w;
	c->cfg = env->cfg;
	c->shm = env->shm;
	c->n_dirs = c->cfg->n_log_dirs;
	ctl_state_init(&c->st);
	c->st.on_remove_topic = ctl_remove_topic_hook;
	c->st.on_remove_replica = ctl_remove_replica_hook;
	c->st.hook_arg = c;
	ctl_wire(c);
	rn_worker_heartbeat(w);
	rn_log_about(LOG_INFO, rn_subj_broker(c->cfg->node_id), "controller "
	    "up: node %d, roles %s", c->cfg->node_id,
	    rn_config_roles_str(c->cfg->roles));
	if (ctl_load_ids(c, env) != 0) {
		free(c);
		return RN_WORKER_EXIT_FATAL;
	}
	ctl_admin_cleanup_deleted(c);
	ctl_loop_init(c, env);
	if (ctl_uuid_random(c->incarnation) != 0)
		fatal("no random incarnation id");
	rc = ctl_raft_start(c);
	if (rc == -EUCLEAN || rn_dirfail_is_io_error(rc)) {
		/* damaged files or a failed disk: no restart loop */
		if (rc != -EUCLEAN)
			metadata_dir_failed(c, rc);
		c->exit_code = RN_WORKER_EXIT_FATAL;
		ctl_stop(c, RN_WORKER_EXIT_FATAL);
	} else if (rc != 0 || ctl_agent_start(c) != 0) {
		c->exit_code = RN_WORKER_EXIT_RESTART;
		ctl_stop(c, RN_WORKER_EXIT_RESTART);
	}
	ctl_drain_all(c);
	uv_run(&c->loop, UV_RUN_DEFAULT);
	if (uv_loop_close(&c->loop) != 0)
		log_debug("event loop closed with handles left");
	rc = c->exit_code;
	/*
	 * The node stops, and the controller stops last: every other writer
	 * of the logs is gone, so this is where they are shut down cleanly
	 * (a restart of this worker alone leaves them to the others).
	 */
	if (rc == RN_WORKER_EXIT_OK && (c->cfg->roles & RN_ROLE_BROKER) &&
	    atomic_load(&c->shm->hdr->node_stopping))
		(void)rn_part_shutdown_node(c->shm, c->cfg);
	ctl_free(c);
	log_info("controller stopped");
	return rc;
}
