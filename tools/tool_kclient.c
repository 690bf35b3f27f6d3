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
#include "protocol/kframe.h"
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

/* Send n bytes within the deadline; 0, or -1 (errno set). */
static int
send_all(int fd, const void *buf, size_t n, int64_t deadline)
{
	const uint8_t *p = buf;

	while (n > 0) {
		struct pollfd pfd = { fd, POLLOUT, 0 };
		int64_t left = deadline - rn_now_ms();
		ssize_t k;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		k = send(fd, p, n, MSG_NOSIGNAL);
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

/* Wait for one whole response frame in fb; 0, or -1 with err filled. */
static int
recv_frame(int fd, struct rn_kframebuf *fb, int64_t deadline, int timeout_ms,
    char *err, size_t errlen)
{
	int rc;

	/*
	 * Any size the protocol allows: as Kafka's clients, we trust the
	 * broker we asked.
	 */
	while ((rc = rn_kframe_recv(fd, fb, INT32_MAX)) == 0) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		int64_t left = deadline - rn_now_ms();

		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		(void)poll(&pfd, 1, (int)left);
	}
	if (rc == 1 && fb->len >= 8)
		return 0;
	if (rc == -ETIMEDOUT && fb->len == 0)
		snprintf(err, errlen, "no answer within %d ms", timeout_ms);
	else if (fb->len == 0)
		snprintf(err, errlen, "the broker closed the connection (does "
		    "it serve this request?)");
	else
		snprintf(err, errlen, rc == 1 || rc == -EMSGSIZE ?
		    "bad response size" : "bad or truncated response");
	return -1;
}

int
tkc_call(int fd, int16_t key, int16_t ver, const struct rn_kwriter *body,
    struct rn_arena *arena, struct rn_kreader *resp, int timeout_ms,
    char *err, size_t errlen)
{
	static int32_t corr;
	struct rn_kframebuf fb = { NULL, 0, 0 };
	struct rn_kwriter w;
	int64_t deadline = rn_now_ms() + timeout_ms;
	size_t size;
	uint8_t *buf;
	int rc;

	rn_kwriter_init(&w);
	rc = rn_kframe_request(&w, -1, key, ver, ++corr, "runnel-tools", NULL,
	    body->buf, body->len);
	if (rc == RN_KE_VERSION) {
		snprintf(err, errlen, "API %d v%d is unknown here", key, ver);
		rn_kwriter_free(&w);
		return -1;
	}
	if (rc != 0 || send_all(fd, w.buf, w.len, deadline) != 0) {
		snprintf(err, errlen, "sending the request: %s",
		    strerror(errno));
		rn_kwriter_free(&w);
		return -1;
	}
	rn_kwriter_free(&w);
	if (recv_frame(fd, &fb, deadline, timeout_ms, err, errlen) != 0) {
		rn_kfb_free(&fb);
		return -1;
	}
	/*
	 * The arena gets room for the response and what it decodes into, a
	 * small multiple of it.
	 */
	size = fb.len - 4;
	rn_arena_set_limit(arena, rn_arena_used(arena) + 17 * size +
	    (1u << 20));
	if ((buf = rn_arena_alloc(arena, size)) != NULL)
		memcpy(buf, fb.buf + 4, size);
	rn_kfb_free(&fb);
	if (buf == NULL) {
		snprintf(err, errlen, "bad or truncated response");
		return -1;
	}
	if (rn_kframe_response(resp, buf, size, -1, key, ver, corr) != 0) {
		snprintf(err, errlen, "response for another request");
		return -1;
	}
	return 0;
}

int
tkc_call_api(int fd, int16_t key, int16_t ver, const void *req,
    struct rn_arena *arena, void *resp, int timeout_ms, char *err,
    size_t errlen)
{
	const struct rn_kapi *api = rn_kapi_find(key);
	struct rn_kwriter w;
	struct rn_kreader r;
	int rc = -1;

	rn_kwriter_init(&w);
	if (api == NULL || api->encode_request(&w, ver, req) != 0)
		snprintf(err, errlen, "cannot encode API %d v%d", key, ver);
	else if (tkc_call(fd, key, ver, &w, arena, &r, timeout_ms, err,
	    errlen) == 0) {
		if (api->decode_response(&r, ver, arena, resp) == 0)
			rc = 0;
		else
			snprintf(err, errlen, "the response does not decode");
	}
	rn_kwriter_free(&w);
	return rc;
}

void
tkc_cluster_id(int fd, int timeout_ms, struct rn_arena *arena, char *out,
    size_t outlen)
{
	struct rn_MetadataRequest req;
	struct rn_MetadataResponse resp;
	char err[256];
	const int16_t ver = 9;

	out[0] = '\0';
	rn_MetadataRequest_init(&req);
	req.topics_count = 0; /* no topics, just the cluster */
	req.allow_auto_topic_creation = false;
	if (tkc_call_api(fd, RN_KAPI_METADATA, ver, &req, arena, &resp,
	    timeout_ms, err, sizeof(err)) == 0 && resp.cluster_id.len > 0 &&
	    (size_t)resp.cluster_id.len < outlen) {
		memcpy(out, resp.cluster_id.ptr, (size_t)resp.cluster_id.len);
		out[resp.cluster_id.len] = '\0';
	}
}
