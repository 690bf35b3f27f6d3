/*
 * What network and replica-fetcher workers share for now: announce
 * themselves to the controller and follow its replies.
 */
#include "autoconf.h"

#include <errno.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "ipc/msgtypes.h"
#include "workers/peer.h"

int
rn_peer_drain(struct rn_worker *w)
{
	struct rn_ring *r = rn_shm_ring_from_ctl(w->env->shm, w->slot);
	struct rn_worker_slot *ctl = rn_shm_worker(w->env->shm, 0);
	msgpack_unpacked up;
	const void *payload;
	uint16_t type;
	ssize_t len;
	int rc = 0;

	msgpack_unpacked_init(&up);
	while ((len = rn_ring_peek(r, &type, &payload)) >= 0) {
		if (rn_ring_peek_sender(r) != atomic_load(&ctl->pid)) {
			rn_ring_release(r);
			continue;
		}
		if (msgpack_unpack_next(&up, payload, (size_t)len, NULL) !=
		    MSGPACK_UNPACK_SUCCESS) {
			rc = -EBADMSG;
		} else if (type == RN_IPC_HELLO_ACK) {
			log_debug("controller acknowledged, image version %lld",
			    (long long)rn_mp_get_int(&up.data, "image", -1));
		} else {
			rc = -EBADMSG;
		}
		rn_ring_release(r);
		if (rc != 0)
			break;
	}
	msgpack_unpacked_destroy(&up);
	return len == -EBADMSG ? -EBADMSG : rc;
}

int
rn_peer_loop(struct rn_worker *w)
{
	struct rn_ring *in = rn_shm_ring_from_ctl(w->env->shm, w->slot);
	int rc;

	if ((rc = rn_worker_send_hello(w)) != 0)
		log_warnx("cannot reach the controller yet (%d)", rc);
	rn_worker_heartbeat(w);
	while (!rn_worker_should_stop()) {
		rn_ring_consumer_sleeping(in, true);
		if (rn_peer_drain(w) != 0) {
			log_errx("bad message from the controller: restarting");
			return RN_WORKER_EXIT_RESTART;
		}
		rn_worker_wait(w, 1000);
		rn_ring_consumer_sleeping(in, false);
	}
	return RN_WORKER_EXIT_OK;
}
