/*
 * A direct Metadata v10-v12 request to the first bootstrap server.
 *
 * librdkafka 2.0.2 asks for Metadata v4 at most through rd_kafka_metadata(),
 * which carries neither topic ids (v10) nor offline replicas and the
 * internal flag in its public structs. One blocking request/response on a
 * plain-text socket gets them; any failure (TLS/SASL listener, an older
 * broker, a parse error) makes the caller fall back to librdkafka.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/util.h"
#include "tools/tool_common.h"

#define API_METADATA 3
#define API_VERSIONS 18
/* the protocol's own limit: as Kafka's clients, trust the broker asked */
#define MAX_RESPONSE INT32_MAX
#define MAX_API_KEY 128

/* What ApiVersions said: -2 not asked (or no answer), -1 not supported,
 * else the highest version. */
static int api_max[MAX_API_KEY];
static bool api_known;

struct wbuf {
	uint8_t b[512];
	size_t n;
};

static void
w_bytes(struct wbuf *w, const void *p, size_t n)
{
	if (w->n + n <= sizeof(w->b)) {
		memcpy(w->b + w->n, p, n);
		w->n += n;
	}
}

static void
w_i16(struct wbuf *w, int16_t v)
{
	uint8_t b[2] = { (uint8_t)((uint16_t)v >> 8), (uint8_t)v };

	w_bytes(w, b, 2);
}

static void
w_i32(struct wbuf *w, int32_t v)
{
	uint32_t u = (uint32_t)v;
	uint8_t b[4] = { (uint8_t)(u >> 24), (uint8_t)(u >> 16),
		(uint8_t)(u >> 8), (uint8_t)u };

	w_bytes(w, b, 4);
}

static void
w_u8(struct wbuf *w, uint8_t v)
{
	w_bytes(w, &v, 1);
}

/* Reader: every get fails softly, r->bad says the response was short. */
struct rbuf {
	const uint8_t *p, *end;
	int bad;
};

static int
r_need(struct rbuf *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	return 1;
}

static int8_t
r_i8(struct rbuf *r)
{
	return r_need(r, 1) ? (int8_t)*r->p++ : 0;
}

static int16_t
r_i16(struct rbuf *r)
{
	int16_t v;

	if (!r_need(r, 2))
		return 0;
	v = (int16_t)((r->p[0] << 8) | r->p[1]);
	r->p += 2;
	return v;
}

static int32_t
r_i32(struct rbuf *r)
{
	uint32_t v;

	if (!r_need(r, 4))
		return 0;
	v = ((uint32_t)r->p[0] << 24) | ((uint32_t)r->p[1] << 16) |
	    ((uint32_t)r->p[2] << 8) | r->p[3];
	r->p += 4;
	return (int32_t)v;
}

static uint32_t
r_uvarint(struct rbuf *r)
{
	uint32_t v = 0;
	int shift = 0;

	while (r_need(r, 1)) {
		uint8_t b = *r->p++;
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		if ((shift += 7) > 28) {
			r->bad = 1;
			break;
		}
	}
	return 0;
}

/* Compact (nullable) string: a malloc'd copy, NULL for null or on error. */
static char *
r_cstr(struct rbuf *r)
{
	uint32_t n = r_uvarint(r);
	char *s;

	if (n == 0 || !r_need(r, n - 1))
		return NULL;
	if ((s = malloc(n)) == NULL) {
		r->bad = 1;
		return NULL;
	}
	memcpy(s, r->p, n - 1);
	s[n - 1] = '\0';
	r->p += n - 1;
	return s;
}

static void
r_skip_tags(struct rbuf *r)
{
	uint32_t n = r_uvarint(r), i;

	for (i = 0; i < n && !r->bad; i++) {
		uint32_t len;

		(void)r_uvarint(r); /* tag */
		len = r_uvarint(r);
		if (r_need(r, len))
			r->p += len;
	}
}

/* Compact int32 array into a malloc'd array (never NULL on success). */
static int32_t *
r_i32_array(struct rbuf *r, int *np)
{
	uint32_t n = r_uvarint(r), i;
	int32_t *a;

	*np = 0;
	n = n ? n - 1 : 0;
	if (n > (uint32_t)(r->end - r->p) / 4) {
		r->bad = 1;
		return NULL;
	}
	if ((a = calloc(n + 1, sizeof(*a))) == NULL) {
		r->bad = 1;
		return NULL;
	}
	for (i = 0; i < n; i++)
		a[i] = r_i32(r);
	*np = (int)n;
	return a;
}

static int
connect_first(const char *bootstrap, int timeout_ms, char *err, size_t errlen)
{
	char host[256], port[16];
	const char *comma = strchr(bootstrap, ','), *colon;
	size_t len = comma ? (size_t)(comma - bootstrap) : strlen(bootstrap);
	struct addrinfo hints, *res = NULL, *ai;
	struct timeval tv;
	int fd = -1, rc;

	if (len >= sizeof(host)) {
		snprintf(err, errlen, "bootstrap host too long");
		return -1;
	}
	memcpy(host, bootstrap, len);
	host[len] = '\0';
	if ((colon = strrchr(host, ':')) == NULL) {
		snprintf(err, errlen, "no port in %s", host);
		return -1;
	}
	strlcpy(port, colon + 1, sizeof(port));
	host[colon - host] = '\0';
	/* [::1]:9092 */
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		struct pollfd pfd;
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
		    SOCK_NONBLOCK, ai->ai_protocol);
		if (fd == -1)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (errno == EINPROGRESS) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, timeout_ms) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr,
			    &sl) == 0 && soerr == 0)
				break;
			errno = soerr ? soerr : ETIMEDOUT;
		}
		snprintf(err, errlen, "connect %s:%s: %s", host, port,
		    strerror(errno));
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1)
		return -1;
	/* blocking from here on, bounded by the socket timeouts */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Send one request (header already in w) and read the whole response. */
static uint8_t *
roundtrip(int fd, struct wbuf *w, int32_t corr, size_t *lenp, char *err,
    size_t errlen)
{
	uint8_t sz[4], *resp;
	uint32_t n;
	ssize_t got;

	/* the size prefix goes in front of what w holds */
	sz[0] = (uint8_t)(w->n >> 24);
	sz[1] = (uint8_t)(w->n >> 16);
	sz[2] = (uint8_t)(w->n >> 8);
	sz[3] = (uint8_t)w->n;
	if (rn_write_all(fd, sz, 4) != 4 ||
	    rn_write_all(fd, w->b, w->n) != (ssize_t)w->n) {
		snprintf(err, errlen, "send: %s", strerror(errno));
		return NULL;
	}
	if ((got = rn_read_full(fd, sz, 4)) != 4) {
		snprintf(err, errlen, "no response (%s)",
		    got < 0 ? strerror((int)-got) : "connection closed");
		return NULL;
	}
	n = ((uint32_t)sz[0] << 24) | ((uint32_t)sz[1] << 16) |
	    ((uint32_t)sz[2] << 8) | sz[3];
	if (n < 4 || n > (uint32_t)MAX_RESPONSE) {
		snprintf(err, errlen, "response size %u out of range", n);
		return NULL;
	}
	if ((resp = malloc(n)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (rn_read_full(fd, resp, n) != (ssize_t)n) {
		snprintf(err, errlen, "short response");
		free(resp);
		return NULL;
	}
	if ((int32_t)(((uint32_t)resp[0] << 24) | ((uint32_t)resp[1] << 16) |
	    ((uint32_t)resp[2] << 8) | resp[3]) != corr) {
		snprintf(err, errlen, "correlation id mismatch");
		free(resp);
		return NULL;
	}
	*lenp = n;
	return resp;
}

static void
header(struct wbuf *w, int16_t key, int16_t ver, int32_t corr, int flexible)
{
	static const char cid[] = "runnel-tools";

	w->n = 0;
	w_i16(w, key);
	w_i16(w, ver);
	w_i32(w, corr);
	w_i16(w, (int16_t)(sizeof(cid) - 1));
	w_bytes(w, cid, sizeof(cid) - 1);
	if (flexible)
		w_u8(w, 0); /* no tagged fields */
}

/* Highest Metadata version the broker takes, from ApiVersions v0. */
static int
metadata_max_version(int fd, char *err, size_t errlen)
{
	struct wbuf w;
	struct rbuf r;
	uint8_t *resp;
	size_t len;
	int32_t n, i;
	int16_t ec;
	int max = -1;

	header(&w, API_VERSIONS, 0, 1, 0);
	if ((resp = roundtrip(fd, &w, 1, &len, err, errlen)) == NULL)
		return -1;
	r.p = resp + 4;
	r.end = resp + len;
	r.bad = 0;
	ec = r_i16(&r);
	n = r_i32(&r);
	for (i = 0; i < MAX_API_KEY; i++)
		api_max[i] = -1;
	for (i = 0; i < n && !r.bad; i++) {
		int16_t key = r_i16(&r), lo = r_i16(&r), hi = r_i16(&r);
		if (key >= 0 && key < MAX_API_KEY)
			api_max[key] = hi;
		if (key == API_METADATA && lo <= 12)
			max = hi;
	}
	free(resp);
	if (r.bad || ec != 0) {
		snprintf(err, errlen, "ApiVersions failed (error %d)", ec);
		return -1;
	}
	api_known = true;
	return max;
}

static int
decode_metadata(struct rbuf *r, int ver, struct tool_md *md)
{
	uint32_t nb, nt, np, i, j;
	char *s;

	(void)r_i32(r); /* throttle_time_ms */
	nb = r_uvarint(r);
	nb = nb ? nb - 1 : 0;
	if (nb > (uint32_t)(r->end - r->p))
		return -1;
	if ((md->brokers = calloc(nb + 1, sizeof(int32_t))) == NULL)
		return -1;
	for (i = 0; i < nb && !r->bad; i++) {
		md->brokers[md->n_brokers++] = r_i32(r);
		free(r_cstr(r)); /* host */
		(void)r_i32(r);  /* port */
		free(r_cstr(r)); /* rack */
		r_skip_tags(r);
	}
	md->cluster_id = r_cstr(r);
	md->controller = r_i32(r);
	nt = r_uvarint(r);
	nt = nt ? nt - 1 : 0;
	if (nt > (uint32_t)(r->end - r->p))
		return -1;
	if ((md->topics = calloc(nt + 1, sizeof(*md->topics))) == NULL)
		return -1;
	for (i = 0; i < nt && !r->bad; i++) {
		struct tool_topic *t = &md->topics[md->n_topics];
		struct rn_uuid id;

		t->err = r_i16(r);
		s = r_cstr(r);
		if (r_need(r, 16)) {
			memcpy(id.b, r->p, 16);
			r->p += 16;
			if (!rn_uuid_is_zero(&id))
				rn_uuid_str(&id, t->id);
		}
		t->internal = r_i8(r) != 0;
		np = r_uvarint(r);
		np = np ? np - 1 : 0;
		if (s == NULL || np > (uint32_t)(r->end - r->p)) {
			free(s);
			return -1;
		}
		t->name = s;
		md->n_topics++;
		if ((t->parts = calloc(np + 1, sizeof(*t->parts))) == NULL)
			return -1;
		for (j = 0; j < np && !r->bad; j++) {
			struct tool_part *p = &t->parts[t->n_parts++];

			p->err = r_i16(r);
			p->id = r_i32(r);
			p->leader = r_i32(r);
			(void)r_i32(r); /* leader_epoch */
			p->replicas = r_i32_array(r, &p->n_replicas);
			p->isr = r_i32_array(r, &p->n_isr);
			p->offline = r_i32_array(r, &p->n_offline);
			r_skip_tags(r);
		}
		(void)r_i32(r); /* topic_authorized_operations */
		r_skip_tags(r);
	}
	if (ver == 10)
		(void)r_i32(r); /* cluster_authorized_operations */
	r_skip_tags(r);
	return r->bad ? -1 : 0;
}

bool
tool_api_unsupported(int key)
{
	return api_known && key >= 0 && key < MAX_API_KEY && api_max[key] < 0;
}

void
tool_api_probe(const char *bootstrap, int timeout_ms)
{
	char err[256];
	int fd;

	if (api_known)
		return;
	if ((fd = connect_first(bootstrap, timeout_ms, err, sizeof(err))) ==
	    -1)
		return;
	(void)metadata_max_version(fd, err, sizeof(err));
	close(fd);
}

int
tool_kmeta_fetch(const char *bootstrap, int timeout_ms, struct tool_md *md,
    char *err, size_t errlen)
{
	struct wbuf w;
	struct rbuf r;
	uint8_t *resp = NULL;
	size_t len;
	int fd, ver, rc = -1;

	memset(md, 0, sizeof(*md));
	md->controller = -1;
	if ((fd = connect_first(bootstrap, timeout_ms, err, errlen)) == -1)
		return -1;
	if ((ver = metadata_max_version(fd, err, errlen)) < 0)
		goto out;
	if (ver < 10) {
		snprintf(err, errlen, "broker speaks Metadata v%d at most", ver);
		goto out;
	}
	if (ver > 12)
		ver = 12;
	header(&w, API_METADATA, (int16_t)ver, 2, 1);
	w_u8(&w, 0); /* topics: null, i.e. all of them */
	w_u8(&w, 0); /* allow_auto_topic_creation */
	if (ver == 10)
		w_u8(&w, 0); /* include_cluster_authorized_operations */
	w_u8(&w, 0); /* include_topic_authorized_operations */
	w_u8(&w, 0); /* no tagged fields */
	if ((resp = roundtrip(fd, &w, 2, &len, err, errlen)) == NULL)
		goto out;
	r.p = resp + 4;
	r.end = resp + len;
	r.bad = 0;
	r_skip_tags(&r); /* response header v1 */
	if (decode_metadata(&r, ver, md) != 0) {
		snprintf(err, errlen, "malformed Metadata v%d response", ver);
		goto out;
	}
	md->version = ver;
	rc = 0;
out:
	free(resp);
	close(fd);
	return rc;
}
