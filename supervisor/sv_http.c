/*
 * The metrics endpoint. A scrape is small and rare next to the Kafka
 * traffic, so the supervisor answers it from its own loop: the request is
 * read into a fixed buffer (a larger one gets 431), the answer is built
 * at once from shared memory and written as the socket takes it, then
 * the connection closes. Anything but GET is 405, any other path 404.
 */
#include "autoconf.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "supervisor/sv.h"
#include "supervisor/sv_http.h"
#include "supervisor/sv_metrics.h"

struct http_conn {
	int fd;
	int64_t opened_ms;
	size_t have;
	char *out;              /* the response once there is one */
	size_t out_len, out_off;
	bool draining;          /* answered: read to the peer's close */
	char in[SV_HTTP_MAX_REQUEST];
};

static int http_fd = -1;
static bool paused;        /* an upgrade: the next supervisor accepts */
static struct http_conn *conns[SV_HTTP_MAX_CONNS];

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
	close((*cp)->fd);
	free((*cp)->out);
	free(*cp);
	*cp = NULL;
}

void
sv_http_close(void)
{
	int i;

	for (i = 0; i < SV_HTTP_MAX_CONNS; i++)
		if (conns[i] != NULL)
			conn_close(&conns[i]);
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
			    conns[i]->out && !conns[i]->draining ? POLLOUT :
			    POLLIN, 0 };
	return n;
}

static void
http_accept(void)
{
	int fd, i;

	while ((fd = accept4(http_fd, NULL, NULL, SOCK_CLOEXEC |
	    SOCK_NONBLOCK)) != -1) {
		for (i = 0; i < SV_HTTP_MAX_CONNS; i++)
			if (conns[i] == NULL)
				break;
		/* a full table: this scraper tries again at its next round */
		if (i == SV_HTTP_MAX_CONNS ||
		    (conns[i] = calloc(1, sizeof(*conns[i]))) == NULL) {
			close(fd);
			continue;
		}
		conns[i]->fd = fd;
		conns[i]->opened_ms = rn_now_ms();
	}
}

/* Queue a whole response; the body is copied. */
static void
respond(struct http_conn *c, const char *status, const char *extra,
    const char *ctype, const char *body, size_t blen)
{
	char head[512];
	int k;

	/* the head, then the body in one copy (a scrape's is large) */
	k = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\n%sConnection: close\r\n\r\n", status,
	    ctype, blen, extra);
	if (k < 0 || (size_t)k >= sizeof(head) ||
	    (c->out = malloc((size_t)k + blen)) == NULL)
		return;
	memcpy(c->out, head, (size_t)k);
	memcpy(c->out + k, body, blen);
	c->out_len = (size_t)k + blen;
	c->out_off = 0;
}

static void
respond_error(struct http_conn *c, const char *status, const char *extra)
{
	char body[64];

	snprintf(body, sizeof(body), "%s\n", status);
	respond(c, status, extra, "text/plain; charset=utf-8", body,
	    strlen(body));
}

static void
respond_metrics(struct sv *sv, struct http_conn *c)
{
	struct sv_metrics m;
	char *text = NULL;
	size_t len = 0;

	if (sv_metrics_collect(sv, &m) != 0 ||
	    (text = sv_metrics_text(&m, &len)) == NULL)
		respond_error(c, "500 Internal Server Error", "");
	else
		respond(c, "200 OK", "", "text/plain; version=0.0.4; "
		    "charset=utf-8", text, len);
	free(text);
	sv_metrics_free(&m);
}

/* The request line of a whole head: method, path, version. */
static void
route(struct sv *sv, struct http_conn *c)
{
	char method[16], path[256], version[16];
	size_t plen;

	if (sscanf(c->in, "%15s %255s %15s", method, path, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7) != 0) {
		respond_error(c, "400 Bad Request", "");
		return;
	}
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

/* Write what the socket takes; once all is out, only wait for the close. */
static bool
http_write(struct http_conn *c)
{
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		    MSG_NOSIGNAL);
		if (n == -1)
			return errno == EAGAIN || errno == EINTR;
		c->out_off += (size_t)n;
	}
	/* closing with the peer's bytes unread would reset the answer */
	shutdown(c->fd, SHUT_WR);
	c->draining = true;
	return true;
}

/* Read the head; false when the connection is done with. */
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
	if (n > 0)
		c->have += (size_t)n;
	c->in[c->have] = '\0';
	if (strstr(c->in, "\r\n\r\n") != NULL || strstr(c->in, "\n\n"))
		route(sv, c);
	else if (c->have == sizeof(c->in) - 1)
		respond_error(c, "431 Request Header Fields Too Large", "");
	else
		return true;
	if (c->out == NULL)
		return false;
	return http_write(c);
}

void
sv_http_handle(struct sv *sv, const struct pollfd *pfd, int n)
{
	int64_t now = rn_now_ms();
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
			if (conns[j] == NULL || conns[j]->fd != pfd[i].fd)
				continue;
			keep = conns[j]->out && !conns[j]->draining ?
			    http_write(conns[j]) : http_read(sv, conns[j]);
			if (!keep)
				conn_close(&conns[j]);
			break;
		}
	}
	/* a scraper that sits on its connection loses it */
	for (j = 0; j < SV_HTTP_MAX_CONNS; j++)
		if (conns[j] != NULL && now - conns[j]->opened_ms > 10000)
			conn_close(&conns[j]);
}
