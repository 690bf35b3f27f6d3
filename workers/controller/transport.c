/*
 * The raft transport on the inherited CONTROLLER listener. Stream handles
 * given to raft come from raft_malloc() because raft frees them itself
 * when it closes a connection.
 */
#include "autoconf.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/acl.h"
#include "common/log.h"
#include "workers/controller/relay.h"
#include "workers/controller/transport.h"

struct ct;

struct ct_incoming {
	struct ct *ct;
	uv_tcp_t *tcp;
	uv_timer_t timer;
	uint8_t buf[CTL_RAFT_PREAMBLE_LEN];
	size_t n;
	struct ct_incoming *prev, *next;
};

struct ct_outgoing {
	struct ct *ct;
	struct raft_uv_connect *req;
	raft_uv_connect_cb cb;
	raft_id id;
	uv_getaddrinfo_t gai;
	bool resolving;
	uv_tcp_t *tcp;
	bool tcp_closing;
	uv_connect_t conn;
	uv_write_t wr;
	uint8_t pre[CTL_RAFT_PREAMBLE_LEN];
	char host[RN_CONFIG_HOST_MAX];
	struct ct_outgoing *prev, *next;
};

struct ct {
	struct raft_uv_transport *t;
	uv_loop_t *loop;
	const struct rn_config *cfg;
	raft_id id;
	int listen_fd;
	uv_tcp_t listener;
	bool listening;
	raft_uv_accept_cb accept_cb;
	ctl_kafka_conn_cb kafka_cb;
	void *kafka_arg;
	struct ct_incoming *incoming;
	struct ct_outgoing *outgoing;
	unsigned handles;       /* our handles not yet closed */
	bool closing;
	raft_uv_transport_close_cb close_cb;
	/* a secured controller listener: connections go through relays */
	const struct rn_secc_cfg *client;   /* NULL: PLAINTEXT */
	SSL_CTX *srv_ctx;
	const struct rn_sasl_cfg *srv_users;
	bool srv_secured;
	struct rn_authz authz;
};

int
ctl_split_address(const char *address, char *host, size_t hostlen,
    uint16_t *port)
{
	const char *colon = strrchr(address, ':'), *h = address;
	size_t n;
	char *end;
	long p;

	if (colon == NULL)
		return -EINVAL;
	n = (size_t)(colon - address);
	if (n >= 2 && address[0] == '[' && address[n - 1] == ']') {
		h++;
		n -= 2;
	}
	if (n >= hostlen)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	p = strtol(colon + 1, &end, 10);
	if (*end != '\0' || p <= 0 || p > 65535)
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

static void
ct_maybe_closed(struct ct *ct)
{
	if (ct->closing && ct->handles == 0 && ct->incoming == NULL &&
	    ct->outgoing == NULL && ct->close_cb != NULL) {
		raft_uv_transport_close_cb cb = ct->close_cb;

		ct->close_cb = NULL;
		cb(ct->t);
	}
}

/* Close callback of a raft_malloc'd stream handle we still own. */
static void
ct_stream_closed(uv_handle_t *h)
{
	struct ct *ct = h->data;

	raft_free(h);
	ct->handles--;
	ct_maybe_closed(ct);
}

static void
ct_close_stream(struct ct *ct, uv_tcp_t *tcp)
{
	tcp->data = ct;
	uv_close((uv_handle_t *)tcp, ct_stream_closed);
}

/* ---- incoming ------------------------------------------------------- */

static void
in_unlink(struct ct_incoming *in)
{
	struct ct *ct = in->ct;

	if (in->prev != NULL)
		in->prev->next = in->next;
	else
		ct->incoming = in->next;
	if (in->next != NULL)
		in->next->prev = in->prev;
}

static void
in_timer_closed(uv_handle_t *h)
{
	struct ct_incoming *in = h->data;
	struct ct *ct = in->ct;

	in_unlink(in);
	free(in);
	ct->handles--;
	ct_maybe_closed(ct);
}

/* Done with the handshake: tcp already handed over or being closed. */
static void
in_finish(struct ct_incoming *in)
{
	uv_timer_stop(&in->timer);
	uv_close((uv_handle_t *)&in->timer, in_timer_closed);
}

static void
in_fail(struct ct_incoming *in)
{
	uv_read_stop((uv_stream_t *)in->tcp);
	ct_close_stream(in->ct, in->tcp);
	in->tcp = NULL;
	in_finish(in);
}

static void
in_timeout(uv_timer_t *timer)
{
	struct ct_incoming *in = timer->data;

	log_warnx("controller listener: no preamble within %d ms: closing "
	    "the connection", CTL_HANDSHAKE_TIMEOUT_MS);
	in_fail(in);
}

static void
in_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct ct_incoming *in = h->data;

	(void)suggested;
	/* never read past the preamble: what follows belongs to raft */
	buf->base = (char *)in->buf + in->n;
	buf->len = sizeof(in->buf) - in->n;
}

static const char *
voter_address(const struct rn_config *cfg, raft_id id, char *buf,
    size_t len)
{
	int i;

	for (i = 0; i < cfg->n_voters; i++)
		if ((raft_id)cfg->voters[i].id == id) {
			snprintf(buf, len, "%s:%u", cfg->voters[i].host,
			    cfg->voters[i].port);
			return buf;
		}
	snprintf(buf, len, "node-%llu", (unsigned long long)id);
	return buf;
}

static void
in_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct ct_incoming *in = s->data;
	struct ct *ct = in->ct;
	enum ctl_preamble what;
	uint64_t id = 0;
	char addr[RN_CONFIG_HOST_MAX + 8];
	uv_tcp_t *tcp;

	(void)buf;
	if (nread < 0) {
		in_fail(in);
		return;
	}
	in->n += (size_t)nread;
	if ((what = ctl_preamble_read(in->buf, in->n, &id)) ==
	    CTL_PREAMBLE_MORE)
		return;
	uv_read_stop(s);
	tcp = in->tcp;
	in->tcp = NULL;
	if (what == CTL_PREAMBLE_KAFKA) {
		/* a Kafka client or broker, not a raft peer */
		if (ct->kafka_cb != NULL && !ct->closing) {
			ct->handles--;
			ct->kafka_cb(ct->kafka_arg, tcp, in->buf, in->n);
		} else {
			log_info("controller listener: Kafka-protocol "
			    "connection, not served by the controller yet: "
			    "closing it");
			ct_close_stream(ct, tcp);
		}
	} else if (ct->closing || what == CTL_PREAMBLE_NO_ID) {
		ct_close_stream(ct, tcp);
	} else {
		rn_log_about(LOG_DEBUG, rn_subj_broker((int32_t)id), "raft "
		    "connection from node %llu", (unsigned long long)id);
		ct->handles--;
		tcp->data = NULL;
		ct->accept_cb(ct->t, id, voter_address(ct->cfg, id, addr,
		    sizeof(addr)), (uv_stream_t *)tcp);
	}
	in_finish(in);
}

static void
ct_on_connection(uv_stream_t *server, int status)
{
	struct ct *ct = server->data;
	struct ct_incoming *in;

	if (status != 0) {
		log_warnx("controller listener: %s", uv_strerror(status));
		return;
	}
	if (ct->closing)
		return;
	if ((in = calloc(1, sizeof(*in))) == NULL ||
	    (in->tcp = raft_malloc(sizeof(*in->tcp))) == NULL) {
		free(in);
		return; /* the connection waits in the backlog */
	}
	in->ct = ct;
	if (ct->srv_secured) {
		/* the preamble and all after it come decrypted, through
		 * the relay's socketpair */
		int rfd, rc = ctl_relay_pair(ct->loop, in->tcp, &rfd);

		ct->handles++;
		in->tcp->data = in;
		if (rc != 0 || ctl_relay_server(ct->loop, server, rfd,
		    ct->srv_ctx, ct->srv_users, &ct->authz) != 0) {
			ct_close_stream(ct, in->tcp);
			free(in);
			return;
		}
	} else {
		uv_tcp_init(ct->loop, in->tcp);
		ct->handles++;
		in->tcp->data = in;
		if (uv_accept(server, (uv_stream_t *)in->tcp) != 0) {
			ct_close_stream(ct, in->tcp);
			free(in);
			return;
		}
		uv_tcp_nodelay(in->tcp, 1);
	}
	uv_timer_init(ct->loop, &in->timer);
	ct->handles++;
	in->timer.data = in;
	in->next = ct->incoming;
	if (ct->incoming != NULL)
		ct->incoming->prev = in;
	ct->incoming = in;
	uv_timer_start(&in->timer, in_timeout, CTL_HANDSHAKE_TIMEOUT_MS, 0);
	if (uv_read_start((uv_stream_t *)in->tcp, in_alloc, in_read) != 0)
		in_fail(in);
}

/* ---- outgoing ------------------------------------------------------- */

static void
out_done(struct ct_outgoing *o, uv_tcp_t *stream, int status)
{
	struct ct *ct = o->ct;

	if (o->prev != NULL)
		o->prev->next = o->next;
	else
		ct->outgoing = o->next;
	if (o->next != NULL)
		o->next->prev = o->prev;
	o->cb(o->req, (uv_stream_t *)stream, status);
	free(o);
	ct_maybe_closed(ct);
}

static void
out_fail(struct ct_outgoing *o, int uvstatus)
{
	int status = o->ct->closing || uvstatus == UV_ECANCELED ?
	    RAFT_CANCELED : RAFT_NOCONNECTION;

	if (o->tcp != NULL && !o->tcp_closing)
		ct_close_stream(o->ct, o->tcp);
	o->tcp = NULL;
	out_done(o, NULL, status);
}

static void
out_written(uv_write_t *wr, int status)
{
	struct ct_outgoing *o = wr->data;
	uv_tcp_t *tcp = o->tcp;

	if (status != 0 || o->ct->closing) {
		out_fail(o, status);
		return;
	}
	o->ct->handles--; /* raft owns it now */
	tcp->data = NULL;
	o->tcp = NULL;
	out_done(o, tcp, 0);
}

static void
out_send_preamble(struct ct_outgoing *o)
{
	uv_buf_t b;
	int status;

	b = uv_buf_init((char *)o->pre, sizeof(o->pre));
	o->wr.data = o;
	if ((status = uv_write(&o->wr, (uv_stream_t *)o->tcp, &b, 1,
	    out_written)) != 0)
		out_fail(o, status);
}

static void
out_connected(uv_connect_t *c, int status)
{
	struct ct_outgoing *o = c->data;

	if (status != 0 || o->ct->closing) {
		if (status != 0 && status != UV_ECANCELED)
			rn_log_about(LOG_DEBUG, rn_subj_broker((int32_t)o->id),
			    "raft connection to node %llu: %s",
			    (unsigned long long)o->id, uv_strerror(status));
		out_fail(o, status);
		return;
	}
	uv_tcp_nodelay(o->tcp, 1);
	out_send_preamble(o);
}

/*
 * Through a relay: raft gets its end of the socketpair at once, and a
 * connection or login that fails reaches it as end of file.
 */
static void
out_relayed(struct ct_outgoing *o, const struct sockaddr *addr)
{
	struct ct *ct = o->ct;
	char what[64];
	int rfd, rc;

	rc = ctl_relay_pair(ct->loop, o->tcp, &rfd);
	ct->handles++;
	o->tcp->data = o;
	if (rc != 0) {
		out_fail(o, rc);
		return;
	}
	snprintf(what, sizeof(what), "raft connection to node %llu",
	    (unsigned long long)o->id);
	if ((rc = ctl_relay_client(ct->loop, rfd, addr, o->host, ct->client,
	    what)) != 0) {
		out_fail(o, rc);
		return;
	}
	out_send_preamble(o);
}

static void
out_resolved(uv_getaddrinfo_t *g, int status, struct addrinfo *res)
{
	struct ct_outgoing *o = g->data;
	struct ct *ct = o->ct;

	o->resolving = false;
	if (status != 0 || ct->closing) {
		if (res != NULL)
			uv_freeaddrinfo(res);
		out_fail(o, status);
		return;
	}
	if ((o->tcp = raft_malloc(sizeof(*o->tcp))) == NULL) {
		uv_freeaddrinfo(res);
		out_fail(o, UV_ENOMEM);
		return;
	}
	if (ct->client != NULL) {
		out_relayed(o, res->ai_addr);
		uv_freeaddrinfo(res);
		return;
	}
	uv_tcp_init(ct->loop, o->tcp);
	ct->handles++;
	o->tcp->data = o;
	o->conn.data = o;
	status = uv_tcp_connect(&o->conn, o->tcp, res->ai_addr,
	    out_connected);
	uv_freeaddrinfo(res);
	if (status != 0)
		out_fail(o, status);
}

/* ---- the raft_uv_transport methods ---------------------------------- */

static int
ct_init(struct raft_uv_transport *t, raft_id id, const char *address)
{
	struct ct *ct = t->impl;

	(void)address;
	ct->id = id;
	return 0;
}

static int
ct_listen(struct raft_uv_transport *t, raft_uv_accept_cb cb)
{
	struct ct *ct = t->impl;
	int rc;

	ct->accept_cb = cb;
	if (ct->listen_fd < 0)
		return 0; /* no CONTROLLER listener: connect-only */
	uv_tcp_init(ct->loop, &ct->listener);
	ct->handles++;
	ct->listener.data = ct;
	ct->listening = true;
	if ((rc = uv_tcp_open(&ct->listener, ct->listen_fd)) != 0 ||
	    (rc = uv_listen((uv_stream_t *)&ct->listener, 128,
	    ct_on_connection)) != 0) {
		snprintf(t->errmsg, sizeof(t->errmsg), "listen on the "
		    "inherited controller socket: %s", uv_strerror(rc));
		return RAFT_IOERR;
	}
	return 0;
}

static int
ct_connect(struct raft_uv_transport *t, struct raft_uv_connect *req,
    raft_id id, const char *address, raft_uv_connect_cb cb)
{
	struct ct *ct = t->impl;
	struct ct_outgoing *o;
	struct addrinfo hints;
	char host[RN_CONFIG_HOST_MAX], port[8];
	uint16_t p;
	int rc;

	if (ct->closing)
		return RAFT_CANCELED;
	if (ctl_split_address(address, host, sizeof(host), &p) != 0) {
		snprintf(t->errmsg, sizeof(t->errmsg), "bad address %s",
		    address);
		return RAFT_NOCONNECTION;
	}
	if ((o = calloc(1, sizeof(*o))) == NULL)
		return RAFT_NOMEM;
	o->ct = ct;
	o->req = req;
	o->cb = cb;
	o->id = id;
	strlcpy(o->host, host, sizeof(o->host));
	ctl_preamble_write(o->pre, ct->id);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", p);
	o->gai.data = o;
	o->resolving = true;
	if ((rc = uv_getaddrinfo(ct->loop, &o->gai, out_resolved, host, port,
	    &hints)) != 0) {
		free(o);
		snprintf(t->errmsg, sizeof(t->errmsg), "resolve %.200s: %s", host,
		    uv_strerror(rc));
		return RAFT_NOCONNECTION;
	}
	o->next = ct->outgoing;
	if (ct->outgoing != NULL)
		ct->outgoing->prev = o;
	ct->outgoing = o;
	return 0;
}

static void
ct_listener_closed(uv_handle_t *h)
{
	struct ct *ct = h->data;

	ct->handles--;
	ct_maybe_closed(ct);
}

static void
ct_close(struct raft_uv_transport *t, raft_uv_transport_close_cb cb)
{
	struct ct *ct = t->impl;
	struct ct_incoming *in, *in_next;
	struct ct_outgoing *o;

	ct->closing = true;
	ct->close_cb = cb;
	ctl_relay_close_all();
	if (ct->listening) {
		ct->listening = false;
		uv_close((uv_handle_t *)&ct->listener, ct_listener_closed);
	} else if (ct->listen_fd >= 0) {
		close(ct->listen_fd);
	}
	ct->listen_fd = -1;
	for (in = ct->incoming; in != NULL; in = in_next) {
		in_next = in->next;
		if (in->tcp != NULL && !uv_is_closing((uv_handle_t *)&in->timer))
			in_fail(in);
	}
	/* pending connects end in their callbacks with RAFT_CANCELED */
	for (o = ct->outgoing; o != NULL; o = o->next) {
		if (o->resolving)
			uv_cancel((uv_req_t *)&o->gai);
		else if (o->tcp != NULL && !o->tcp_closing) {
			o->tcp_closing = true;
			ct_close_stream(ct, o->tcp);
		}
	}
	/* nothing pending at all: still answer asynchronously-safe */
	ct_maybe_closed(ct);
}

int
ctl_transport_init(struct raft_uv_transport *t, uv_loop_t *loop,
    int listen_fd, const struct rn_config *cfg)
{
	struct ct *ct = calloc(1, sizeof(*ct));

	if (ct == NULL)
		return -ENOMEM;
	ct->t = t;
	ct->loop = loop;
	ct->cfg = cfg;
	ct->listen_fd = listen_fd;
	t->impl = ct;
	t->init = ct_init;
	t->listen = ct_listen;
	t->connect = ct_connect;
	t->close = ct_close;
	return 0;
}

void
ctl_transport_set_kafka_cb(struct raft_uv_transport *t, ctl_kafka_conn_cb cb,
    void *arg)
{
	struct ct *ct = t->impl;

	ct->kafka_cb = cb;
	ct->kafka_arg = arg;
}

void
ctl_transport_set_security(struct raft_uv_transport *t,
    const struct rn_secc_cfg *client, SSL_CTX *srv_ctx,
    const struct rn_sasl_cfg *srv_users, bool srv_secured)
{
	struct ct *ct = t->impl;

	ct->client = client;
	ct->srv_ctx = srv_ctx;
	ct->srv_users = srv_users;
	ct->srv_secured = srv_secured;
	if (srv_secured && rn_authz_init(&ct->authz, ct->cfg->authorizer_on,
	    ct->cfg->super_users, false) != 0) {
		/* out of memory: nobody is a super user, rather than all */
		log_warnx("controller listener: no memory for super.users: "
		    "refusing every login");
		memset(&ct->authz, 0, sizeof(ct->authz));
		ct->authz.on = true;
	}
}

void
ctl_transport_free(struct raft_uv_transport *t)
{
	struct ct *ct = t->impl;

	if (ct != NULL)
		rn_authz_free(&ct->authz);
	free(t->impl);
	t->impl = NULL;
}
