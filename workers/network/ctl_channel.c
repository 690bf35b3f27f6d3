/*
 * Admin requests the controller answers: forwarded over this worker's ring
 * as they came (header stripped), answered with the encoded response body,
 * which is framed here with the client's correlation id. The connection
 * waits meanwhile; a controller that does not answer within the request's
 * own timeout costs the client its connection, never a wrong answer.
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
#include "protocol/kframe.h"
#include "workers/network/net_int.h"

#define ADMIN_TIMEOUT_MS 60000

static int
admin_send(struct net *n, struct conn *c, msgpack_sbuffer *sb);

int
net_admin_forward(struct net *n, struct conn *c)
{
	msgpack_sbuffer sb;
	int rc;

	if ((rc = net_forward_pack(n, c, NULL, &sb)) != 0)
		return rc;
	return admin_send(n, c, &sb);
}

int
net_admin_forward_body(struct net *n, struct conn *c, const void *body,
    size_t len)
{
	msgpack_sbuffer sb;
	int rc;

	if ((rc = net_forward_pack_body(n, c, NULL, body, len, &sb)) != 0)
		return rc;
	return admin_send(n, c, &sb);
}

/* Send the packed request to the controller; the connection waits. */
static int
admin_send(struct net *n, struct conn *c, msgpack_sbuffer *sb)
{
	int rc;

	rc = rn_worker_send_ctl(n->w, RN_IPC_ADMIN_REQUEST, sb->data,
	    (uint32_t)sb->size);
	msgpack_sbuffer_destroy(sb);
	if (rc == -EMSGSIZE) {
		log_warnx("%s: admin request of %zu bytes is too large to "
		    "forward", c->peer, c->frame_len);
		return -EMSGSIZE;
	}
	if (rc != 0)
		return rc;
	net_conn_park(n, c, CONN_WAIT_CONTROLLER, rn_now_ms() +
	    ADMIN_TIMEOUT_MS);
	return 0;
}

/* One message from the controller: a reply, or the answer to hello. */
static int
ctl_channel_handle(void *arg, pid_t sender, uint16_t type,
    const msgpack_object *m)
{
	(void)sender;
	if (type == RN_IPC_ADMIN_RESPONSE)
		net_forwarded_reply(arg, CONN_WAIT_CONTROLLER, m,
		    "the controller");
	else if (type != RN_IPC_HELLO_ACK)
		return -EBADMSG;
	return 0;
}

/*
 * Replies larger than a ring frame come in pieces; the controller is
 * woken to push the next, and the whole reply is bounded like any
 * response.
 */
int
net_ctl_drain(struct net *n)
{
	struct rn_drain d = {
		.ring = rn_shm_ring_from_ctl(n->w->env->shm, n->w->slot),
		.sender_pid = &rn_shm_worker(n->w->env->shm, 0)->pid,
		.in = &n->from_ctl,
		.wake_fd = n->w->env->efd[0],
		.max_len = (size_t)n->cfg->socket_request_max_bytes + 65536,
		.from = "the controller",
		.handle = ctl_channel_handle,
		.arg = n,
	};

	return rn_worker_drain(&d);
}

void
net_auto_create(struct net *n, const struct rn_kstr *names, int count)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int i;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "topics");
	msgpack_pack_array(&pk, (size_t)count);
	for (i = 0; i < count; i++) {
		msgpack_pack_str(&pk, (size_t)names[i].len);
		msgpack_pack_str_body(&pk, names[i].ptr, (size_t)names[i].len);
	}
	if (rn_worker_send_ctl(n->w, RN_IPC_AUTO_CREATE, sb.data,
	    (uint32_t)sb.size) != 0)
		log_warnx("cannot ask the controller to create %d topics",
		    count);
	msgpack_sbuffer_destroy(&sb);
}

int
net_alter_partition(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp, const int32_t *isr, int n_isr)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int i, rc;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 6);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "topic_id");
	msgpack_pack_bin(&pk, 16);
	msgpack_pack_bin_body(&pk, t->id, 16);
	rn_mp_pack_str(&pk, "p");
	msgpack_pack_int32(&pk, mp->p);
	rn_mp_pack_str(&pk, "leader_epoch");
	msgpack_pack_int32(&pk, mp->leader_epoch);
	rn_mp_pack_str(&pk, "partition_epoch");
	msgpack_pack_int32(&pk, mp->partition_epoch);
	rn_mp_pack_str(&pk, "isr");
	msgpack_pack_array(&pk, (size_t)n_isr);
	for (i = 0; i < n_isr; i++)
		msgpack_pack_int32(&pk, isr[i]);
	rc = rn_worker_send_ctl(n->w, RN_IPC_ALTER_PARTITION, sb.data,
	    (uint32_t)sb.size);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}
