/*
 * Kafka frames over a byte stream: see kframe.h.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "protocol/kframe.h"
#include "protocol/kmsg_gen.h"

/* A read into the buffer gets at least this much room. */
#define KFB_MIN_ROOM 65536

/* ---- headers that need the API table ------------------------------- */

int
rn_krequest_header_decode(struct rn_kreader *r, struct rn_krequest_header *h)
{
	const uint8_t *start = r->p;
	int16_t key, ver;
	int hver;

	key = rn_kr_int16(r);
	ver = rn_kr_int16(r);
	if (r->err)
		return r->err;
	r->p = start;
	hver = rn_kapi_request_header_version(key, ver);
	if (hver < 0) {
		/* Unknown key: give the caller what is fixed for every key. */
		(void)rn_krequest_header_decode_v(r, 0, h);
		return r->err ? r->err : RN_KE_VERSION;
	}
	return rn_krequest_header_decode_v(r, hver, h);
}

int
rn_kresponse_begin(struct rn_kwriter *w, int16_t api_key,
    int16_t api_version, int32_t correlation_id, size_t *mark)
{
	int hver = rn_kapi_response_header_version(api_key, api_version);

	if (hver < 0)
		return RN_KE_VERSION;
	*mark = rn_kw_frame_begin(w);
	return rn_kresponse_header_encode(w, hver, correlation_id);
}

/* ---- client: requests out, responses in ---------------------------- */

int
rn_kframe_request(struct rn_kwriter *w, int hver, int16_t key, int16_t ver,
    int32_t corr, const char *client_id, const void *body, const void *raw,
    size_t rawlen)
{
	struct rn_krequest_header h;
	const struct rn_kapi *api = NULL;
	size_t mark;

	if (hver < 0 && (hver = rn_kapi_request_header_version(key, ver)) < 0)
		return RN_KE_VERSION;
	if (body != NULL && ((api = rn_kapi_find(key)) == NULL ||
	    api->encode_request == NULL))
		return RN_KE_VERSION;
	memset(&h, 0, sizeof(h));
	h.api_key = key;
	h.api_version = ver;
	h.correlation_id = corr;
	h.client_id = rn_kstr_c(client_id);
	mark = rn_kw_frame_begin(w);
	rn_krequest_header_encode(w, hver, &h);
	if (api != NULL)
		api->encode_request(w, ver, body);
	else
		rn_kw_raw(w, raw, rawlen);
	rn_kw_frame_end(w, mark);
	return w->err;
}

bool
rn_kframe_corr(const void *frame, size_t size, int32_t *corr)
{
	struct rn_kreader r;

	rn_kreader_init(&r, frame, size);
	*corr = rn_kr_int32(&r);
	return r.err == 0;
}

int
rn_kframe_response(struct rn_kreader *r, const void *frame, size_t size,
    int hver, int16_t key, int16_t ver, int32_t corr)
{
	int32_t got;

	if (hver < 0 && (hver = rn_kapi_response_header_version(key, ver)) < 0)
		return RN_KE_VERSION;
	rn_kreader_init(r, frame, size);
	if (rn_kresponse_header_decode(r, hver, &got) != 0)
		return r->err;
	return got == corr ? 0 : -EPROTO;
}

/* ---- reading frames ------------------------------------------------ */

void
rn_kfb_free(struct rn_kframebuf *fb)
{
	free(fb->buf);
	fb->buf = NULL;
	fb->len = fb->cap = 0;
}

void
rn_kfb_room(struct rn_kframebuf *fb, uint8_t **base, size_t *room)
{
	if (fb->cap - fb->len < KFB_MIN_ROOM) {
		size_t cap = fb->cap ? fb->cap * 2 : 2 * KFB_MIN_ROOM;
		uint8_t *nb = realloc(fb->buf, cap);

		if (nb != NULL) {
			fb->buf = nb;
			fb->cap = cap;
		}
	}
	*base = fb->buf + fb->len;
	*room = fb->cap - fb->len;
}

int
rn_kfb_next(const struct rn_kframebuf *fb, size_t *off, int32_t max,
    const uint8_t **frame, size_t *size)
{
	int32_t n;

	if (fb->len - *off < 4)
		return 0;
	if ((n = rn_kframe_size(fb->buf + *off, max)) < 0)
		return n;
	if (fb->len - *off - 4 < (size_t)n)
		return 0;
	*frame = fb->buf + *off + 4;
	*size = (size_t)n;
	*off += 4 + (size_t)n;
	return 1;
}

void
rn_kfb_consume(struct rn_kframebuf *fb, size_t off)
{
	memmove(fb->buf, fb->buf + off, fb->len - off);
	fb->len -= off;
}

static ssize_t
fd_read(void *arg, void *buf, size_t len)
{
	ssize_t k = recv(*(int *)arg, buf, len, MSG_DONTWAIT);

	if (k == 0)
		return -ENOTCONN;
	if (k == -1)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	return k;
}

int
rn_kframe_recv(int fd, struct rn_kframebuf *fb, int32_t max)
{
	return rn_kframe_recv_fn(fd_read, &fd, fb, max);
}

int
rn_kframe_recv_fn(rn_kframe_read_fn rd, void *arg, struct rn_kframebuf *fb,
    int32_t max)
{
	for (;;) {
		size_t need = 4;
		ssize_t k;

		if (fb->len >= 4) {
			int32_t size = rn_kframe_size(fb->buf, max);

			if (size < 0)
				return -EMSGSIZE;
			need = 4 + (size_t)size;
			if (fb->len == need)
				return 1;
		}
		if (fb->len == fb->cap) {
			size_t cap = fb->cap < KFB_MIN_ROOM / 2 ? KFB_MIN_ROOM :
			    2 * fb->cap;
			uint8_t *nb;

			if (cap > need && need > 4)
				cap = need;
			if ((nb = realloc(fb->buf, cap)) == NULL)
				return -ENOMEM;
			fb->buf = nb;
			fb->cap = cap;
		}
		if (need > fb->cap)
			need = fb->cap;
		if ((k = rd(arg, fb->buf + fb->len, need - fb->len)) <= 0)
			return (int)k;
		fb->len += (size_t)k;
	}
}
