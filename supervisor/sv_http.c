/*
 * The metrics endpoint, served from the supervisor's own loop. A request
 * is read into a fixed buffer (a larger head gets 431); the answer is
 * built at once from shared memory into the connection's buffer, its head
 * put before its body, and written in one send as the socket takes it.
 * The connection then waits for the next request (HTTP/1.1 keep-alive, as
 * Prometheus scrapes) unless the client or an error ends it. Anything but
 * GET is 405, any other path 404.
 */
#include "autoconf.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "supervisor/sv.h"
#include "supervisor/sv_http.h"
#include "supervisor/sv_metrics.h"

/*
 * A connection is idle (waiting for a request), reading one, writing an
 * answer, or draining (its last answer written, reading to the peer's
 * close so that closing does not reset the answer).
 */
struct http_conn {
	int fd;
	int64_t since_ms;       /* idle or busy since */
	size_t have;            /* request bytes in in[] */
	struct sv_obuf out;     /* the answer: head room, then the body */
	size_t out_off, out_end;
	bool writing;
	bool last;              /* the answer being written is the last */
	bool draining;
	char in[SV_HTTP_MAX_REQUEST];
};

/* A scraper keeps its connection between scrapes (Prometheus does);
 * one idle this long is closed (nginx's keepalive_timeout). */
#define HTTP_IDLE_MS 75000
/* A request or an answer that takes this long: a stuck peer. */
#define HTTP_BUSY_MS 10000
/* Before the body in out: where its head is written once its length is
 * known, so head and body go out in one write. */
#define HTTP_HEAD_ROOM 256

static int http_fd = -1;
static bool paused;        /* an upgrade: the next supervisor accepts */
static struct http_conn *conns[SV_HTTP_MAX_CONNS];
/* a closed connection's answer buffer, for the next connection */
static struct sv_obuf spare;

/* "http://host:port" into host and port; 0 or -EINVAL. */
static int
parse_listener(const char *s, char *host, size_t hlen, char *port,
    size_t plen)
{
	const char *p, *colon;

	if (strncmp(s, "http://", 7) != 0)
		return -EINVAL;
	p = s + 7;
	if ((colon = strrchr(p, ':')) == NULL || colon[1] == '\0' ||
	    (size_t)(colon - p) >= hlen || strlen(colon + 1) >= plen ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -EINVAL;
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = '\0';
	strlcpy(port, colon + 1, plen);
	return 0;
}

static bool
on_kafka_port(const struct sv *sv, unsigned port)
{
	int i;

	for (i = 0; i < sv->cfg.n_listeners; i++)
		if (sv->cfg.listeners[i].port == port)
			return true;
	return false;
}

static int
bind_listener(const char *host, const char *port)
{
	struct addrinfo hints, *res;
	int fd, one = 1, rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res)) != 0)
		return -EADDRNOTAVAIL;
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0);
	if (fd == -1 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) == -1 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) == -1 ||
	    listen(fd, 16) == -1) {
		rc = -errno;
		if (fd != -1)
			close(fd);
		freeaddrinfo(res);
		return rc;
	}
	freeaddrinfo(res);
	return fd;
}

int
sv_http_open(struct sv *sv)
{
	const char *l = sv->cfg.metrics_listener;
	char host[256], port[8];
	int fd;

	if (l[0] == '\0')
		return 0;
	if (parse_listener(l, host, sizeof(host), port, sizeof(port)) != 0) {
		log_warnx("metrics.listener %s: not http://host:port", l);
		return -EINVAL;
	}
	if (on_kafka_port(sv, (unsigned)atoi(port))) {
		log_warnx("metrics.listener %s: the port of a Kafka "
		    "listener", l);
		return -EADDRINUSE;
	}
	if ((fd = bind_listener(host, port)) < 0) {
		log_warnx("metrics.listener %s: %s", l, strerror(-fd));
		return fd;
	}
	http_fd = fd;
	log_info("metrics served at %s/metrics", l);
	return 0;
}

static void
conn_close(struct http_conn **cp)
{
	struct http_conn *c = *cp;

	close(c->fd);
	if (spare.b == NULL)
		spare = c->out;
	else
		sv_obuf_free(&c->out);
	free(c);
	*cp = NULL;
}

void
sv_http_close(void)
{
	int i;

	for (i = 0; i < SV_HTTP_MAX_CONNS; i++)
		if (conns[i] != NULL)
			conn_close(&conns[i]);
	sv_obuf_free(&spare);
	if (http_fd >= 0)
		close(http_fd);
	http_fd = -1;
}

int
sv_http_listener(void)
{
	return http_fd;
}

void
sv_http_adopt(int fd)
{
	http_fd = fd;
}

void
sv_http_pause(void)
{
	paused = true;
}

int
sv_http_pollfds(struct pollfd *pfd, int max)
{
	int i, n = 0;

	if (http_fd < 0 || max < 1)
		return 0;
	pfd[n++] = (struct pollfd){ http_fd, paused ? 0 : POLLIN, 0 };
	for (i = 0; i < SV_HTTP_MAX_CONNS && n < max; i++)
		if (conns[i] != NULL)
			pfd[n++] = (struct pollfd){ conns[i]->fd,
			    conns[i]->writing ? POLLOUT : POLLIN, 0 };
	return n;
}

static bool
conn_idle(const struct http_conn *c)
{
	return c->have == 0 && !c->writing && !c->draining;
}

/* A free place in the table, or the one of the longest idle connection. */
static int
conn_slot(void)
{
	int i, oldest = -1;

	for (i = 0; i < SV_HTTP_MAX_CONNS; i++) {
		if (conns[i] == NULL)
			return i;
		if (conn_idle(conns[i]) && (oldest < 0 ||
		    conns[i]->since_ms < conns[oldest]->since_ms))
			oldest = i;
	}
	if (oldest >= 0)
		conn_close(&conns[oldest]);
	return oldest;
}

static void
http_accept(void)
{
	int fd, i;

	while ((fd = accept4(http_fd, NULL, NULL, SOCK_CLOEXEC |
	    SOCK_NONBLOCK)) != -1) {
		/* every connection busy: this scraper tries again at its
		 * next round */
		if ((i = conn_slot()) < 0 ||
		    (conns[i] = calloc(1, sizeof(*conns[i]))) == NULL) {
			close(fd);
			continue;
		}
		conns[i]->fd = fd;
		conns[i]->since_ms = rn_now_ms();
		conns[i]->out = spare;
		spare = (struct sv_obuf){ NULL, 0, 0 };
	}
}

/* An answer's body goes after the head's room; false on ENOMEM. */
static bool
answer_begin(struct http_conn *c)
{
	c->out.len = 0;
	if (sv_obuf_reserve(&c->out, HTTP_HEAD_ROOM) != 0)
		return false;
	c->out.len = HTTP_HEAD_ROOM;
	return true;
}

/* The head before the body in out; the answer is then written. */
static void
respond(struct http_conn *c, const char *status, const char *extra,
    const char *ctype)
{
	char head[HTTP_HEAD_ROOM];
	int k;

	k = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\n%sConnection: %s\r\n\r\n", status, ctype,
	    c->out.len - HTTP_HEAD_ROOM, extra, c->last ? "close" :
	    "keep-alive");
	if (k < 0 || (size_t)k >= sizeof(head))
		return;
	memcpy(c->out.b + HTTP_HEAD_ROOM - k, head, (size_t)k);
	c->out_off = HTTP_HEAD_ROOM - (size_t)k;
	c->out_end = c->out.len;
	c->writing = true;
}

/* An error's answer; all but a 404 end the connection. */
static void
respond_error(struct http_conn *c, const char *status, const char *extra)
{
	size_t n = strlen(status);

	if (strncmp(status, "404", 3) != 0)
		c->last = true;
	c->out.len = HTTP_HEAD_ROOM;
	if (sv_obuf_reserve(&c->out, n + 1) != 0)
		return;
	memcpy(c->out.b + c->out.len, status, n);
	c->out.b[c->out.len + n] = '\n';
	c->out.len += n + 1;
	respond(c, status, extra, "text/plain; charset=utf-8");
}

static void
respond_metrics(struct sv *sv, struct http_conn *c)
{
	struct sv_metrics m;
	int rc;

	if ((rc = sv_metrics_collect(sv, &m)) == 0)
		rc = sv_metrics_render(&m, &c->out);
	sv_metrics_free(&m);
	if (rc != 0)
		respond_error(c, "500 Internal Server Error", "");
	else
		respond(c, "200 OK", "", "text/plain; version=0.0.4; "
		    "charset=utf-8");
}

/* The value of header name in the head's first hlen bytes, or NULL;
 * *vlen its length. */
static const char *
header_value(const char *in, size_t hlen, const char *name, size_t *vlen)
{
	size_t n = strlen(name);
	const char *p, *end = in + hlen, *eol;

	for (p = memchr(in, '\n', hlen); p != NULL && p + 1 < end; p = eol) {
		p++;
		if ((eol = memchr(p, '\n', (size_t)(end - p))) == NULL)
			break;
		if ((size_t)(eol - p) > n && strncasecmp(p, name, n) == 0 &&
		    p[n] == ':') {
			p += n + 1;
			p += strspn(p, " \t");
			*vlen = (size_t)(eol - p);
			return p;
		}
	}
	return NULL;
}

/* Whether a comma-separated header value names token. */
static bool
value_has(const char *v, size_t vlen, const char *token)
{
	size_t n = strlen(token), i;

	for (i = 0; i + n <= vlen; i++)
		if (strncasecmp(v + i, token, n) == 0)
			return true;
	return false;
}

/*
 * Whether the connection stays open after this request: HTTP/1.1 unless
 * it says close, HTTP/1.0 if it says keep-alive; never after a request
 * with a body (a GET has none; we would read it as the next request).
 */
static bool
keep_alive(const char *in, size_t hlen, const char *version)
{
	const char *v;
	size_t vlen;

	if (header_value(in, hlen, "Transfer-Encoding", &vlen) != NULL ||
	    ((v = header_value(in, hlen, "Content-Length", &vlen)) != NULL &&
	    strtoul(v, NULL, 10) != 0))
		return false;
	if ((v = header_value(in, hlen, "Connection", &vlen)) == NULL)
		return strcmp(version, "HTTP/1.1") == 0;
	if (value_has(v, vlen, "close"))
		return false;
	return strcmp(version, "HTTP/1.1") == 0 ||
	    value_has(v, vlen, "keep-alive");
}

/* The next word of s after blanks into w (cap bytes with its NUL); what
 * follows it, or NULL when there is none or it is too long. */
static const char *
next_word(const char *s, char *w, size_t cap)
{
	size_t n;

	s += strspn(s, " \t");
	if ((n = strcspn(s, " \t\r\n")) == 0 || n >= cap)
		return NULL;
	memcpy(w, s, n);
	w[n] = '\0';
	return s + n;
}

/* Answer the request whose head is the first hlen bytes of in[]. */
static void
route(struct sv *sv, struct http_conn *c, size_t hlen)
{
	char method[16], path[256], version[16];
	const char *p;
	size_t plen;

	if (!answer_begin(c))
		return;
	if ((p = next_word(c->in, method, sizeof(method))) == NULL ||
	    (p = next_word(p, path, sizeof(path))) == NULL ||
	    next_word(p, version, sizeof(version)) == NULL ||
	    strncmp(version, "HTTP/1.", 7) != 0) {
		respond_error(c, "400 Bad Request", "");
		return;
	}
	c->last = !keep_alive(c->in, hlen, version);
	plen = strcspn(path, "?");
	if (strcmp(method, "GET") != 0) {
		respond_error(c, "405 Method Not Allowed", "Allow: GET\r\n");
		return;
	}
	if (plen != strlen("/metrics") ||
	    strncmp(path, "/metrics", plen) != 0) {
		respond_error(c, "404 Not Found", "");
		return;
	}
	respond_metrics(sv, c);
}

/* The length of the first whole request head in in[], or 0. */
static size_t
head_length(const struct http_conn *c)
{
	const char *a = memmem(c->in, c->have, "\r\n\r\n", 4);
	const char *b = memmem(c->in, c->have, "\n\n", 2);

	if (a != NULL && (b == NULL || a < b))
		return (size_t)(a - c->in) + 4;
	return b != NULL ? (size_t)(b - c->in) + 2 : 0;
}

/*
 * Write what the socket takes (the whole answer, as a rule). Once it is
 * out: after the last answer, only wait for the peer's close; else the
 * connection is idle again. false when the connection broke.
 */
static bool
http_write(struct http_conn *c)
{
	ssize_t n;

	while (c->out_off < c->out_end) {
		n = send(c->fd, c->out.b + c->out_off, c->out_end - c->out_off,
		    MSG_NOSIGNAL);
		if (n == -1)
			return errno == EAGAIN || errno == EINTR;
		c->out_off += (size_t)n;
	}
	c->writing = false;
	c->since_ms = rn_now_ms();
	if (c->last) {
		shutdown(c->fd, SHUT_WR);
		c->draining = true;
	}
	return true;
}

/* Answer every whole request read, while the socket takes the answers;
 * false when the connection is done with. */
static bool
http_serve(struct sv *sv, struct http_conn *c)
{
	size_t hlen;

	while (!c->writing && !c->draining) {
		if ((hlen = head_length(c)) != 0) {
			route(sv, c, hlen);
			/* the next request (pipelined) moves to the front */
			memmove(c->in, c->in + hlen, c->have - hlen);
			c->have -= hlen;
			c->in[c->have] = '\0';
		} else if (c->have == sizeof(c->in) - 1) {
			if (answer_begin(c))
				respond_error(c, "431 Request Header Fields "
				    "Too Large", "");
		} else
			return true;
		/* no answer: out of memory */
		if (!c->writing || !http_write(c))
			return false;
	}
	return true;
}

/* Read requests (or, draining, to the close); false when done with. */
static bool
http_read(struct sv *sv, struct http_conn *c)
{
	char sink[4096];
	ssize_t n;

	if (c->draining) {
		while ((n = read(c->fd, sink, sizeof(sink))) > 0)
			;
		return n == -1 && errno == EAGAIN;
	}
	n = read(c->fd, c->in + c->have, sizeof(c->in) - 1 - c->have);
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
		return false;
	if (n > 0) {
		if (c->have == 0)
			c->since_ms = rn_now_ms();
		c->have += (size_t)n;
		c->in[c->have] = '\0';
	}
	return http_serve(sv, c);
}

void
sv_http_handle(struct sv *sv, const struct pollfd *pfd, int n)
{
	struct http_conn *c;
	int64_t now;
	bool keep;
	int i, j;

	for (i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		if (pfd[i].fd == http_fd) {
			http_accept();
			continue;
		}
		for (j = 0; j < SV_HTTP_MAX_CONNS; j++) {
			if ((c = conns[j]) == NULL || c->fd != pfd[i].fd)
				continue;
			keep = c->writing ? http_write(c) && http_serve(sv, c) :
			    http_read(sv, c);
			if (!keep)
				conn_close(&conns[j]);
			break;
		}
	}
	/* an idle scraper keeps its connection a while; a stuck one not */
	now = rn_now_ms();
	for (j = 0; j < SV_HTTP_MAX_CONNS; j++)
		if ((c = conns[j]) != NULL && now - c->since_ms >
		    (conn_idle(c) ? HTTP_IDLE_MS : HTTP_BUSY_MS))
			conn_close(&conns[j]);
}
