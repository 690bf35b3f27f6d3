/*
 * A worker that only says hello to the controller (the replica fetchers):
 * follow the controller's answers.
 */
#include "autoconf.h"

#include <errno.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "ipc/msgtypes.h"
#include "workers/peer.h"

static int
peer_handle(void *arg, pid_t sender, uint16_t type, const msgpack_object *m)
{
	(void)arg;
	(void)sender;
	if (type != RN_IPC_HELLO_ACK)
		return -EBADMSG;
	log_debug("controller acknowledged, image version %lld",
	    (long long)rn_mp_get_int(m, "image", -1));
	return 0;
}

int
rn_peer_drain(struct rn_worker *w)
{
	struct rn_drain d = {
		.ring = rn_shm_ring_from_ctl(w->env->shm, w->slot),
		.sender_pid = &rn_shm_worker(w->env->shm, 0)->pid,
		.from = "the controller",
		.handle = peer_handle,
	};

	return rn_worker_drain(&d);
}
