/*
 * The controller worker: one per node. It owns the metadata image in
 * shared memory (the only writer of it) and is the consumer of every
 * worker's ring to the controller.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "workers/worker.h"

static void
ctl_publish_image(struct rn_worker *w)
{
	struct rn_meta_image *mi = rn_shm_meta(w->env->shm);

	rn_seq_write_begin(&mi->lock);
	mi->writer_pid = getpid();
	mi->node_id = w->env->cfg->node_id;
	mi->published_ms = rn_wallclock_ms();
	atomic_fetch_add_explicit(&mi->version, 1, memory_order_relaxed);
	rn_seq_write_end(&mi->lock);
}

static int
ctl_reply(struct rn_worker *w, unsigned slot, uint16_t type,
    const msgpack_sbuffer *sb)
{
	struct rn_ring *r = rn_shm_ring_from_ctl(w->env->shm, slot);
	int rc;

	if ((rc = rn_ring_push(r, type, sb->data, (uint32_t)sb->size)) != 0)
		return rc;
	rc = rn_ring_notify(r, w->env->efd[slot]);
	return rc < 0 ? rc : 0;
}

static int
ctl_on_hello(struct rn_worker *w, unsigned slot, const msgpack_object *m)
{
	struct rn_meta_image *mi = rn_shm_meta(w->env->shm);
	struct rn_worker_slot *ws = rn_shm_worker(w->env->shm, slot);
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
	rc = ctl_reply(w, slot, RN_IPC_HELLO_ACK, &sb);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

/*
 * Drain one worker's ring. A message from the wrong sender or one that
 * does not parse is a bug inside the node: it costs this worker a
 * restart, never the node.
 */
static int
ctl_drain(struct rn_worker *w, unsigned slot)
{
	struct rn_ring *r = rn_shm_ring_to_ctl(w->env->shm, slot);
	struct rn_worker_slot *ws = rn_shm_worker(w->env->shm, slot);
	msgpack_unpacked up;
	const void *payload;
	uint16_t type;
	ssize_t len;
	int rc = 0;

	msgpack_unpacked_init(&up);
	while ((len = rn_ring_peek(r, &type, &payload)) >= 0) {
		pid_t sender = rn_ring_peek_sender(r);

		if (sender != atomic_load(&ws->pid)) {
			/* a message left by a previous incarnation: drop it */
			log_debug("slot %u: dropping message from old pid %d",
			    slot, (int)sender);
			rn_ring_release(r);
			continue;
		}
		if (msgpack_unpack_next(&up, payload, (size_t)len, NULL) !=
		    MSGPACK_UNPACK_SUCCESS) {
			log_warnx("slot %u: malformed IPC message type %u",
			    slot, type);
			rc = -EBADMSG;
		} else if (type == RN_IPC_HELLO) {
			rc = ctl_on_hello(w, slot, &up.data);
		} else {
			log_warnx("slot %u: unexpected IPC message type %u",
			    slot, type);
			rc = -EBADMSG;
		}
		rn_ring_release(r);
		if (rc == -EBADMSG || rc == -EPROTO)
			break;
		rc = 0;
	}
	msgpack_unpacked_destroy(&up);
	if (len == -EBADMSG)
		rc = -EBADMSG;
	return rc;
}

int
rn_controller_main(struct rn_worker *w)
{
	unsigned slot;

	ctl_publish_image(w);
	rn_worker_heartbeat(w);
	log_info("controller up: node %d, roles %s",
	    w->env->cfg->node_id, rn_config_roles_str(w->env->cfg->roles));

	while (!rn_worker_should_stop()) {
		for (slot = 1; slot < w->env->n_workers; slot++) {
			struct rn_ring *r = rn_shm_ring_to_ctl(w->env->shm, slot);

			rn_ring_consumer_sleeping(r, true);
			if (ctl_drain(w, slot) != 0) {
				log_errx("bad message from slot %u: restarting",
				    slot);
				return RN_WORKER_EXIT_RESTART;
			}
		}
		rn_worker_wait(w, 1000);
		for (slot = 1; slot < w->env->n_workers; slot++)
			rn_ring_consumer_sleeping(
			    rn_shm_ring_to_ctl(w->env->shm, slot), false);
	}
	log_info("controller stopping");
	return RN_WORKER_EXIT_OK;
}
