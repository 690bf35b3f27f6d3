/*
 * Requests a network worker forwards to another worker (admin requests
 * to the controller, group requests to the group coordinator): the reply
 * back to the connection parked waiting for it.
 */
#include "autoconf.h"

#include <errno.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "ipc/msgtypes.h"
#include "protocol/kframe.h"
#include "workers/network/net_int.h"

int
net_forward_pack(struct net *n, struct conn *c, const char *host,
    msgpack_sbuffer *sb)
{
	const uint8_t *frame = c->rbuf + c->frame_off + 4;
	size_t body_off;
	struct rn_kreader r;

	/* find where the body starts: decode the header again */
	rn_kreader_init(&r, frame, c->frame_len);
	if (rn_krequest_header_decode(&r, &c->hdr) < 0)
		return -EPROTO;
	body_off = (size_t)(r.p - frame);
	return net_forward_pack_body(n, c, host, frame + body_off,
	    c->frame_len - body_off, sb);
}

int
net_forward_pack_body(struct net *n, struct conn *c, const char *host,
    const void *body, size_t len, msgpack_sbuffer *sb)
{
	size_t client_len;
	msgpack_packer pk;

	client_len = c->hdr.client_id.len > 0 ? (size_t)c->hdr.client_id.len :
	    0;
	c->admin_req = ++n->next_admin_id;
	msgpack_sbuffer_init(sb);
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, host != NULL ? 9 : 6);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "req");
	msgpack_pack_uint64(&pk, c->admin_req);
	rn_mp_pack_str(&pk, "key");
	msgpack_pack_int16(&pk, c->hdr.api_key);
	rn_mp_pack_str(&pk, "ver");
	msgpack_pack_int16(&pk, c->hdr.api_version);
	rn_mp_pack_str(&pk, "client");
	msgpack_pack_str(&pk, client_len);
	msgpack_pack_str_body(&pk, c->hdr.client_id.ptr, client_len);
	if (host != NULL) {
		char addr[64];

		/* the group coordinator authorizes as this worker would */
		net_peer_addr(c, addr, sizeof(addr));
		rn_mp_pack_str(&pk, "host");
		rn_mp_pack_str(&pk, host);
		rn_mp_pack_str(&pk, "principal");
		rn_mp_pack_str(&pk, net_principal(c));
		rn_mp_pack_str(&pk, "addr");
		rn_mp_pack_str(&pk, addr);
	}
	rn_mp_pack_str(&pk, "body");
	msgpack_pack_bin(&pk, len);
	msgpack_pack_bin_body(&pk, body, len);
	return 0;
}

static struct conn *
conn_waiting(struct net *n, enum conn_wait wait, uint64_t req)
{
	struct conn *c;

	for (c = n->conns; c != NULL; c = c->next_all)
		if (c->wait == wait && c->admin_req == req)
			return c;
	return NULL;
}

void
net_forwarded_reply(struct net *n, enum conn_wait wait,
    const msgpack_object *m, const char *from)
{
	const msgpack_object *body = rn_mp_get(m, "body");
	struct conn *c = conn_waiting(n, wait,
	    (uint64_t)rn_mp_get_int(m, "req", 0));
	struct net_out *o = NULL;
	size_t mark;

	if (c == NULL)
		return; /* the client went away */
	if (body == NULL || body->type != MSGPACK_OBJECT_BIN ||
	    rn_mp_get_int(m, "err", 0) != 0)
		log_warnx("%s: %s could not answer %s (error %lld)", c->peer,
		    from, rn_kapi_find(c->hdr.api_key)->name,
		    (long long)rn_mp_get_int(m, "err", 0));
	else if (wait == CONN_WAIT_CONTROLLER && c->authz_denied != NULL) {
		/* forwarded without the items it may not touch: put them back */
		if (net_admin_merge(n, c, body->via.bin.ptr,
		    body->via.bin.size) != 0)
			c->closing = true;
		net_conn_request_done(n, c);
		return;
	} else
		o = net_out_begin(c, &mark);
	if (o == NULL) {
		c->closing = true;
		net_conn_request_done(n, c);
		return;
	}
	rn_kw_raw(&o->w, body->via.bin.ptr, body->via.bin.size);
	net_out_finish(n, c, o, mark);
	net_conn_request_done(n, c);
}
