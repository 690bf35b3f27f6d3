/*
 * The relays of the controller listener's secured connections: outer
 * is the TCP connection, inner the relay's end of the socketpair.
 * Handshake bytes go between outer and the session only; once the login
 * is done (and, on the server side, the principal allowed), plaintext
 * flows both ways. A direction whose destination has more than
 * RELAY_QUEUE_MAX bytes queued stops reading its source until it drains.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/acl.h"
#include "common/log.h"
#include "common/util.h"
#include "workers/controller/relay.h"
#include "workers/controller/transport.h"
#include "workers/secure_client.h"

#define RELAY_CHUNK 65536
#define RELAY_QUEUE_MAX (4 * 1024 * 1024)
#define RELAY_LOG_EVERY_MS 10000

struct relay {
	struct relay *prev, *next;
	uv_tcp_t outer;
	uv_pipe_t inner;
	uv_timer_t timer;
	uv_connect_t conn;
	uv_shutdown_t shut;
	struct rn_secc *s;
	const struct rn_authz *authz;
	bool server, ready, closing;
	bool failing;           /* what is queued goes out, then it closes */
	bool outer_reading, inner_reading;
	int handles;            /* not yet closed */
	char what[128];         /* for logs */
};

struct wreq {
	uv_write_t req;
	struct relay *r;
	char data[];
};

/* One controller loop per process: its relays. */
static struct relay *relays;

/* When each outgoing connection (by its name) last logged a failure:
 * raft and the agent retry often, a log line every 10 s is enough. */
#define FAIL_LOG_SLOTS 16
static struct {
	char what[128];
	int64_t ms;
} fail_logged[FAIL_LOG_SLOTS];

static bool
fail_log_due(const char *what)
{
	int64_t now = rn_now_ms();
	int i, oldest = 0;

	for (i = 0; i < FAIL_LOG_SLOTS; i++) {
		if (strcmp(fail_logged[i].what, what) == 0) {
			if (now - fail_logged[i].ms < RELAY_LOG_EVERY_MS)
				return false;
			fail_logged[i].ms = now;
			return true;
		}
		if (fail_logged[i].ms < fail_logged[oldest].ms)
			oldest = i;
	}
	strlcpy(fail_logged[oldest].what, what,
	    sizeof(fail_logged[oldest].what));
	fail_logged[oldest].ms = now;
	return true;
}

static void pump_to_inner(struct relay *r);
static void flush_outer(struct relay *r);

static void
relay_handle_closed(uv_handle_t *h)
{
	struct relay *r = h->data;

	if (--r->handles > 0)
		return;
	if (r->prev != NULL)
		r->prev->next = r->next;
	else
		relays = r->next;
	if (r->next != NULL)
		r->next->prev = r->prev;
	rn_secc_free(r->s);
	free(r);
}

static void
relay_close(struct relay *r)
{
	if (r->closing)
		return;
	r->closing = true;
	uv_close((uv_handle_t *)&r->timer, relay_handle_closed);
	uv_close((uv_handle_t *)&r->inner, relay_handle_closed);
	if (!uv_is_closing((uv_handle_t *)&r->outer))
		uv_close((uv_handle_t *)&r->outer, relay_handle_closed);
}

static void
relay_shut(uv_shutdown_t *req, int status)
{
	(void)status;
	relay_close(req->data);
}

static void
fail_timeout(uv_timer_t *t)
{
	relay_close(t->data);   /* a peer that does not read its refusal */
}

/* One end closed or the login failed: what is queued towards the
 * other end (the last bytes, a refusal) goes out, then both close. */
static void
relay_finish(struct relay *r, uv_stream_t *towards)
{
	if (r->closing || r->failing)
		return;
	r->failing = true;
	uv_read_stop((uv_stream_t *)&r->outer);
	uv_read_stop((uv_stream_t *)&r->inner);
	r->outer_reading = r->inner_reading = false;
	r->shut.data = r;
	uv_timer_start(&r->timer, fail_timeout, 1000, 0);
	if (uv_shutdown(&r->shut, towards, relay_shut) != 0)
		relay_close(r);
}

static void
relay_fail(struct relay *r, const char *why)
{
	int level = LOG_WARNING;

	if (r->closing || r->failing)
		return;
	/* by the connection's name, or for a server by the reason (the
	 * peer's port changes with each try) */
	if (!fail_log_due(r->server ? why : r->what))
		level = LOG_DEBUG;
	rn_log(level, "%s: %s", r->what, why);
	flush_outer(r);
	relay_finish(r, (uv_stream_t *)&r->outer);
}

static void
written(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct relay *r = w->r;

	free(w);
	if (status != 0 && status != UV_ECANCELED)
		relay_close(r);
	if (status != 0 || r->closing || r->failing)
		return;
	/* resume the source a full queue had stopped */
	if (!r->outer_reading && r->ready &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&r->inner) <
	    RELAY_QUEUE_MAX / 4)
		pump_to_inner(r);
	if (!r->inner_reading && r->ready &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&r->outer) <
	    RELAY_QUEUE_MAX / 4)
		flush_outer(r);
}

static int
send_copy(struct relay *r, uv_stream_t *to, const void *p, size_t n)
{
	struct wreq *w = malloc(sizeof(*w) + n);
	uv_buf_t b;

	if (w == NULL)
		return -ENOMEM;
	w->r = r;
	memcpy(w->data, p, n);
	b = uv_buf_init(w->data, (unsigned)n);
	if (uv_write(&w->req, to, &b, 1, written) != 0) {
		free(w);
		return -EPIPE;
	}
	return 0;
}

static void
alloc_chunk(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	buf->base = malloc(RELAY_CHUNK);
	buf->len = buf->base != NULL ? RELAY_CHUNK : 0;
}

static void inner_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);
static void outer_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);

/* What the session has for the network; reading inner again when the
 * outer queue has room. */
static void
flush_outer(struct relay *r)
{
	uint8_t buf[16384];
	size_t n;

	while ((n = rn_secc_take(r->s, buf, sizeof(buf))) > 0)
		if (send_copy(r, (uv_stream_t *)&r->outer, buf, n) != 0) {
			relay_close(r);
			return;
		}
	if (!r->ready || r->closing || r->failing)
		return;
	if (uv_stream_get_write_queue_size((uv_stream_t *)&r->outer) >
	    RELAY_QUEUE_MAX) {
		if (r->inner_reading)
			uv_read_stop((uv_stream_t *)&r->inner);
		r->inner_reading = false;
	} else if (!r->inner_reading) {
		r->inner_reading = uv_read_start((uv_stream_t *)&r->inner,
		    alloc_chunk, inner_read) == 0;
	}
}

/* Decrypted bytes to the user's end; reading outer again when its queue
 * has room. */
static void
pump_to_inner(struct relay *r)
{
	uint8_t *buf = malloc(RELAY_CHUNK);
	ssize_t n;

	if (buf == NULL) {
		relay_close(r);
		return;
	}
	while ((n = rn_secc_read(r->s, buf, RELAY_CHUNK)) > 0)
		if (send_copy(r, (uv_stream_t *)&r->inner, buf, (size_t)n) !=
		    0) {
			n = -1;
			break;
		}
	free(buf);
	if (n < 0) {
		relay_close(r);
		return;
	}
	flush_outer(r);    /* TLS may have answered something */
	if (r->closing || r->failing)
		return;
	if (uv_stream_get_write_queue_size((uv_stream_t *)&r->inner) >
	    RELAY_QUEUE_MAX) {
		if (r->outer_reading)
			uv_read_stop((uv_stream_t *)&r->outer);
		r->outer_reading = false;
	} else if (!r->outer_reading) {
		r->outer_reading = uv_read_start((uv_stream_t *)&r->outer,
		    alloc_chunk, outer_read) == 0;
	}
}

static void
login_done(struct relay *r)
{
	char why[400];

	if (r->server && r->authz != NULL && r->authz->on &&
	    !rn_authz_is_super(r->authz, rn_secc_principal(r->s))) {
		snprintf(why, sizeof(why), "%s is not a super user: the "
		    "controller listener takes cluster actions only",
		    rn_secc_principal(r->s));
		relay_fail(r, why);
		return;
	}
	r->ready = true;
	uv_timer_stop(&r->timer);
	rn_log(LOG_DEBUG, "%s: secured%s%s", r->what, r->server ? " for " : "",
	    r->server ? rn_secc_principal(r->s) : "");
	pump_to_inner(r);
}

static void
outer_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct relay *r = st->data;
	int rc;

	if (n < 0) {
		free(buf->base);
		if (!r->ready)
			relay_fail(r, "closed during the login");
		else    /* what it sent last still reaches the user */
			relay_finish(r, (uv_stream_t *)&r->inner);
		return;
	}
	rc = n > 0 ? rn_secc_feed(r->s, buf->base, (size_t)n) : 0;
	free(buf->base);
	if (rc != 0) {
		if (!r->ready)
			relay_fail(r, rn_secc_error(r->s));
		else
			relay_close(r);
		return;
	}
	if (r->ready) {
		pump_to_inner(r);
		return;
	}
	rc = rn_secc_handshake(r->s);
	if (rc < 0) {
		relay_fail(r, rn_secc_error(r->s));
		return;
	}
	flush_outer(r);
	if (rc > 0 && !r->closing && !r->failing)
		login_done(r);
}

static void
inner_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct relay *r = st->data;

	if (n < 0) {
		free(buf->base);
		/* the user closed its end: what it wrote last goes out */
		relay_finish(r, (uv_stream_t *)&r->outer);
		return;
	}
	if (n > 0 && rn_secc_write(r->s, buf->base, (size_t)n) != 0) {
		free(buf->base);
		relay_close(r);
		return;
	}
	free(buf->base);
	flush_outer(r);
}

static void
login_timeout(uv_timer_t *t)
{
	struct relay *r = t->data;
	char why[64];

	snprintf(why, sizeof(why), "no login within %d ms",
	    CTL_HANDSHAKE_TIMEOUT_MS);
	relay_fail(r, why);
}

static struct relay *
relay_new(uv_loop_t *loop, int plain_fd, bool server, const char *what)
{
	struct relay *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->server = server;
	strlcpy(r->what, what, sizeof(r->what));
	uv_tcp_init(loop, &r->outer);
	uv_pipe_init(loop, &r->inner, 0);
	uv_timer_init(loop, &r->timer);
	r->outer.data = r->inner.data = r->timer.data = r;
	r->handles = 3;
	r->next = relays;
	if (relays != NULL)
		relays->prev = r;
	relays = r;
	if (uv_pipe_open(&r->inner, plain_fd) != 0) {
		close(plain_fd);
		relay_close(r);
		return NULL;
	}
	uv_timer_start(&r->timer, login_timeout, CTL_HANDSHAKE_TIMEOUT_MS, 0);
	return r;
}

static void
client_connected(uv_connect_t *req, int status)
{
	struct relay *r = req->data;
	char why[128];
	int rc;

	if (r->closing || r->failing)
		return;
	if (status != 0) {
		snprintf(why, sizeof(why), "connect: %s", uv_strerror(status));
		relay_fail(r, why);
		return;
	}
	uv_tcp_nodelay(&r->outer, 1);
	if ((rc = rn_secc_handshake(r->s)) < 0) {
		relay_fail(r, rn_secc_error(r->s));
		return;
	}
	flush_outer(r);
	r->outer_reading = uv_read_start((uv_stream_t *)&r->outer,
	    alloc_chunk, outer_read) == 0;
	if (!r->outer_reading)
		relay_close(r);
}

int
ctl_relay_client(uv_loop_t *loop, int plain_fd, const struct sockaddr *addr,
    const char *host, const struct rn_secc_cfg *c, const char *what)
{
	struct relay *r = relay_new(loop, plain_fd, false, what);
	int rc;

	if (r == NULL)
		return -ENOMEM;
	if ((r->s = rn_secc_new(c, host)) == NULL) {
		relay_close(r);
		return -ENOMEM;
	}
	r->conn.data = r;
	if ((rc = uv_tcp_connect(&r->conn, &r->outer, addr,
	    client_connected)) != 0) {
		relay_close(r);
		return rc;
	}
	return 0;
}

static int
peer_name(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	int port;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		uv_ip4_name(a, ip, sizeof(ip));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		uv_ip6_name(a, ip, sizeof(ip));
		port = ntohs(a->sin6_port);
	} else
		return -1;
	snprintf(buf, len, "%s:%d", ip, port);
	return 0;
}

int
ctl_relay_server(uv_loop_t *loop, uv_stream_t *server, int plain_fd,
    SSL_CTX *ctx, const struct rn_sasl_cfg *users,
    const struct rn_authz *authz)
{
	struct relay *r = relay_new(loop, plain_fd, true,
	    "controller listener");
	struct sockaddr_storage ss;
	char addr[64];
	int len = sizeof(ss), rc;

	if (r == NULL)
		return -ENOMEM;
	r->authz = authz;
	if ((rc = uv_accept(server, (uv_stream_t *)&r->outer)) != 0 ||
	    (r->s = rn_secc_new_server(ctx, users)) == NULL) {
		relay_close(r);
		return rc != 0 ? rc : -ENOMEM;
	}
	if (uv_tcp_getpeername(&r->outer, (struct sockaddr *)&ss, &len) == 0 &&
	    peer_name(&ss, addr, sizeof(addr)) == 0)
		snprintf(r->what, sizeof(r->what), "controller listener: "
		    "connection from %s", addr);
	uv_tcp_nodelay(&r->outer, 1);
	r->outer_reading = uv_read_start((uv_stream_t *)&r->outer,
	    alloc_chunk, outer_read) == 0;
	if (!r->outer_reading)
		relay_close(r);
	return 0;
}

void
ctl_relay_close_all(void)
{
	struct relay *r;

	for (r = relays; r != NULL; r = r->next)
		relay_close(r);
}

int
ctl_relay_pair(uv_loop_t *loop, uv_tcp_t *tcp, int *relay_fd)
{
	int sv[2], rc;

	uv_tcp_init(loop, tcp);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
	    sv) != 0)
		return -errno;
	if ((rc = uv_tcp_open(tcp, sv[0])) != 0) {
		close(sv[0]);
		close(sv[1]);
		return rc;
	}
	*relay_fd = sv[1];
	return 0;
}
