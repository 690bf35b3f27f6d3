#include "autoconf.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "protocol/kmsg_gen.h"
#include "tools/tool_kclient.h"

static int
split_first(const char *bootstrap, char *host, size_t hlen, char *port,
    size_t plen)
{
	const char *end = strchr(bootstrap, ','), *colon;
	size_t n = end != NULL ? (size_t)(end - bootstrap) : strlen(bootstrap);
	char first[512];

	if (n == 0 || n >= sizeof(first))
		return -1;
	memcpy(first, bootstrap, n);
	first[n] = '\0';
	if ((colon = strrchr(first, ':')) == NULL || colon == first ||
	    colon[1] == '\0')
		return -1;
	n = (size_t)(colon - first);
	if (first[0] == '[' && n >= 2 && first[n - 1] == ']') {
		memmove(first, first + 1, n - 2);
		n -= 2;
	}
	if (n >= hlen || strlen(colon + 1) >= plen)
		return -1;
	memcpy(host, first, n);
	host[n] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

int
tkc_connect(const char *bootstrap, int timeout_ms, char *err, size_t errlen)
{
	struct addrinfo hints, *res, *ai;
	char host[256], port[16];
	int fd = -1, rc;

	if (split_first(bootstrap, host, sizeof(host), port, sizeof(port)) !=
	    0) {
		snprintf(err, errlen, "bad --bootstrap-server %s (want "
		    "host:port)", bootstrap);
		return -1;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
		return -1;
	}
	snprintf(err, errlen, "cannot connect to %s:%s", host, port);
	for (ai = res; ai != NULL && fd < 0; ai = ai->ai_next) {
		struct pollfd pfd;
		socklen_t sl = sizeof(rc);

		if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0)) < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 &&
		    errno != EINPROGRESS) {
			snprintf(err, errlen, "connect to %s:%s: %s", host, port,
			    strerror(errno));
			close(fd);
			fd = -1;
			continue;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		rc = 0;
		if (poll(&pfd, 1, timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET,
		    SO_ERROR, &rc, &sl) != 0 || rc != 0) {
			snprintf(err, errlen, "connect to %s:%s: %s", host, port,
			    rc != 0 ? strerror(rc) : "timed out");
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	return fd;
}

/* Move n bytes within the deadline; 0, or -1 (errno set). */
static int
xfer(int fd, void *buf, size_t n, bool out, int64_t deadline)
{
	uint8_t *p = buf;

	while (n > 0) {
		struct pollfd pfd = { fd, out ? POLLOUT : POLLIN, 0 };
		int64_t left = deadline - rn_now_ms();
		ssize_t k;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		k = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
		if (k == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (k < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int
tkc_call(int fd, int16_t key, int16_t ver, const struct rn_kwriter *body,
    struct rn_arena *arena, struct rn_kreader *resp, int timeout_ms,
    char *err, size_t errlen)
{
	static int32_t corr;
	struct rn_krequest_header h;
	struct rn_kwriter w;
	int64_t deadline = rn_now_ms() + timeout_ms;
	uint8_t szb[4], *buf;
	int32_t size, got_corr;
	size_t mark;
	int hver = rn_kapi_request_header_version(key, ver);

	if (hver < 0) {
		snprintf(err, errlen, "API %d v%d is unknown here", key, ver);
		return -1;
	}
	memset(&h, 0, sizeof(h));
	h.api_key = key;
	h.api_version = ver;
	h.correlation_id = ++corr;
	h.client_id = rn_kstr_c("runnel-tools");
	rn_kwriter_init(&w);
	mark = rn_kw_frame_begin(&w);
	rn_krequest_header_encode(&w, hver, &h);
	rn_kw_raw(&w, body->buf, body->len);
	rn_kw_frame_end(&w, mark);
	if (w.err != 0 || xfer(fd, w.buf, w.len, true, deadline) != 0) {
		snprintf(err, errlen, "sending the request: %s",
		    strerror(errno));
		rn_kwriter_free(&w);
		return -1;
	}
	rn_kwriter_free(&w);
	if (xfer(fd, szb, 4, false, deadline) != 0) {
		snprintf(err, errlen, errno == ETIMEDOUT ? "no answer within "
		    "%d ms" : "the broker closed the connection (does it "
		    "serve this request?)", timeout_ms);
		return -1;
	}
	/*
	 * Any size the protocol allows (as Kafka's clients, we trust the
	 * broker we asked); the arena gets room for the response and what
	 * it decodes into, a small multiple of it.
	 */
	if ((size = rn_kframe_size(szb, INT32_MAX)) < 4) {
		snprintf(err, errlen, "bad response size");
		return -1;
	}
	rn_arena_set_limit(arena, rn_arena_used(arena) + 17 * (size_t)size +
	    (1u << 20));
	if ((buf = rn_arena_alloc(arena, (size_t)size)) == NULL ||
	    xfer(fd, buf, (size_t)size, false, deadline) != 0) {
		snprintf(err, errlen, "bad or truncated response");
		return -1;
	}
	rn_kreader_init(resp, buf, (size_t)size);
	rn_kresponse_header_decode(resp, rn_kapi_response_header_version(key,
	    ver), &got_corr);
	if (got_corr != corr) {
		snprintf(err, errlen, "response for another request");
		return -1;
	}
	return 0;
}

void
tkc_cluster_id(int fd, int timeout_ms, struct rn_arena *arena, char *out,
    size_t outlen)
{
	struct rn_MetadataRequest req;
	struct rn_MetadataResponse resp;
	struct rn_kwriter w;
	struct rn_kreader r;
	char err[256];
	const int16_t ver = 9;

	out[0] = '\0';
	rn_MetadataRequest_init(&req);
	req.topics_count = 0; /* no topics, just the cluster */
	req.allow_auto_topic_creation = false;
	rn_kwriter_init(&w);
	if (rn_MetadataRequest_encode(&w, ver, &req) == 0 && tkc_call(fd,
	    RN_KAPI_METADATA, ver, &w, arena, &r, timeout_ms, err,
	    sizeof(err)) == 0 && rn_MetadataResponse_decode(&r, ver, arena,
	    &resp) == 0 && resp.cluster_id.len > 0 &&
	    (size_t)resp.cluster_id.len < outlen) {
		memcpy(out, resp.cluster_id.ptr, (size_t)resp.cluster_id.len);
		out[resp.cluster_id.len] = '\0';
	}
	rn_kwriter_free(&w);
}
