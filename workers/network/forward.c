/*
 * Requests a network worker forwards to another worker (admin requests
 * to the controller, group requests to the group coordinator): the reply
 * back to the connection parked waiting for it.
 */
#include "autoconf.h"

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "workers/network/net_int.h"

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
	else
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
