/*
 * Kafka wire codec runtime: see kcodec.h.
 */
#include "protocol/kcodec.h"

#include <stdlib.h>

/* ---- reader ---------------------------------------------------------- */

uint32_t
rn_kr_uvarint_slow(struct rn_kreader *r)
{
	uint32_t v = 0;
	int shift;

	for (shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (r->p >= r->end) {
			rn_kr_fail(r, RN_KE_MALFORMED);
			return 0;
		}
		b = *r->p++;
		if (shift == 28 && (b & 0xf0) != 0) {
			/* More than 32 bits, or a 6th byte. */
			rn_kr_fail(r, RN_KE_MALFORMED);
			return 0;
		}
		v |= (uint32_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0)
			return v;
	}
	rn_kr_fail(r, RN_KE_MALFORMED);
	return 0;
}

static uint64_t
kr_uvarlong(struct rn_kreader *r)
{
	uint64_t v = 0;
	int shift;

	for (shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (r->p >= r->end) {
			rn_kr_fail(r, RN_KE_MALFORMED);
			return 0;
		}
		b = *r->p++;
		if (shift == 63 && (b & 0xfe) != 0) {
			rn_kr_fail(r, RN_KE_MALFORMED);
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0)
			return v;
	}
	rn_kr_fail(r, RN_KE_MALFORMED);
	return 0;
}

int32_t
rn_kr_varint(struct rn_kreader *r)
{
	uint32_t u = rn_kr_uvarint(r);
	return (int32_t)((u >> 1) ^ (~(u & 1) + 1));
}

int64_t
rn_kr_varlong(struct rn_kreader *r)
{
	uint64_t u = kr_uvarlong(r);
	return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

void *
rn_kr_array(struct rn_kreader *r, struct rn_arena *a, int32_t n,
    size_t size, size_t min_wire)
{
	void *p;

	if (r->err || n <= 0)
		return NULL;
	/* Check the claim against the bytes present before allocating. */
	if (min_wire == 0)
		min_wire = 1;
	if ((uint64_t)n * min_wire > rn_kr_left(r)) {
		rn_kr_fail(r, RN_KE_MALFORMED);
		return NULL;
	}
	if (a == NULL || (uint64_t)n * size > SIZE_MAX / 2) {
		rn_kr_fail(r, RN_KE_ARENA);
		return NULL;
	}
	p = rn_arena_alloc(a, (size_t)n * size);
	if (p == NULL)
		rn_kr_fail(r, RN_KE_ARENA);
	return p;
}

void
rn_kr_skip_tags(struct rn_kreader *r)
{
	uint32_t n = rn_kr_uvarint(r), i;

	for (i = 0; i < n && r->err == 0; i++) {
		(void)rn_kr_uvarint(r);
		(void)rn_kr_take(r, rn_kr_uvarint(r));
	}
}

/* ---- writer ---------------------------------------------------------- */

void
rn_kwriter_init(struct rn_kwriter *w)
{
	memset(w, 0, sizeof(*w));
}

void
rn_kwriter_reset(struct rn_kwriter *w)
{
	w->len = 0;
	w->nrefs = 0;
	w->ref_bytes = 0;
	w->err = 0;
}

void
rn_kwriter_free(struct rn_kwriter *w)
{
	free(w->buf);
	free(w->refs);
	memset(w, 0, sizeof(*w));
}

int
rn_kwriter_reserve_slow(struct rn_kwriter *w, size_t n)
{
	size_t cap = w->cap ? w->cap : 256;
	uint8_t *nb;

	if (w->err)
		return w->err;
	while (cap - w->len < n) {
		if (cap > SIZE_MAX / 4) {
			rn_kw_fail(w, RN_KE_NOMEM);
			return w->err;
		}
		cap *= 2;
	}
	nb = realloc(w->buf, cap);
	if (nb == NULL) {
		rn_kw_fail(w, RN_KE_NOMEM);
		return w->err;
	}
	w->buf = nb;
	w->cap = cap;
	return 0;
}

void
rn_kw_varint(struct rn_kwriter *w, int32_t v)
{
	rn_kw_uvarint(w, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

void
rn_kw_varlong(struct rn_kwriter *w, int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	uint8_t tmp[10];
	size_t n = 0;

	while (u >= 0x80) {
		tmp[n++] = (uint8_t)(u | 0x80);
		u >>= 7;
	}
	tmp[n++] = (uint8_t)u;
	rn_kw_raw(w, tmp, n);
}

void
rn_kw_records(struct rn_kwriter *w, const struct rn_records *rec,
    bool compact, bool nullable)
{
	struct rn_kwref *ref;

	rn_kw_len(w, rec->len, compact, true, nullable);
	if (rec->len <= 0 || w->err)
		return;
	if (rec->fd < 0 && (size_t)rec->len <= w->inline_max) {
		rn_kw_raw(w, rec->ptr, (size_t)rec->len);
		return;
	}
	if (w->nrefs == w->refcap) {
		size_t nc = w->refcap ? w->refcap * 2 : 8;
		struct rn_kwref *nr = realloc(w->refs, nc * sizeof(*nr));

		if (nr == NULL) {
			rn_kw_fail(w, RN_KE_NOMEM);
			return;
		}
		w->refs = nr;
		w->refcap = nc;
	}
	ref = &w->refs[w->nrefs++];
	ref->at = w->len;
	ref->rec = *rec;
	w->ref_bytes += (size_t)rec->len;
}

void
rn_kw_tag_end(struct rn_kwriter *w, size_t mark)
{
	size_t size, extra = 0, s;
	uint8_t *p;

	if (w->err)
		return;
	size = w->len - mark;
	for (s = size; s >= 0x80; s >>= 7)
		extra++;
	if (size > UINT32_MAX) {
		rn_kw_fail(w, RN_KE_INVALID);
		return;
	}
	if (extra > 0) {
		if (rn_kw_room(w, extra) == NULL)
			return;
		memmove(w->buf + mark + extra, w->buf + mark, size);
	}
	p = w->buf + mark - 1;
	s = size;
	while (s >= 0x80) {
		*p++ = (uint8_t)(s | 0x80);
		s >>= 7;
	}
	*p = (uint8_t)s;
}

int
rn_kwriter_chunks(const struct rn_kwriter *w, struct rn_kchunk *out, int max)
{
	size_t pos = 0, i;
	int n = 0;

	if (w->err)
		return w->err;
#define EMIT(P, L, FD, OFF) do {                                        \
		if (n < max) {                                          \
			out[n].ptr = (P);                               \
			out[n].len = (L);                               \
			out[n].fd = (FD);                               \
			out[n].file_pos = (OFF);                        \
		}                                                       \
		n++;                                                    \
	} while (0)
	for (i = 0; i < w->nrefs; i++) {
		const struct rn_kwref *ref = &w->refs[i];

		if (ref->at > pos)
			EMIT(w->buf + pos, ref->at - pos, -1, 0);
		pos = ref->at;
		EMIT(ref->rec.fd >= 0 ? NULL : ref->rec.ptr,
		    (size_t)ref->rec.len, ref->rec.fd,
		    ref->rec.fd >= 0 ? ref->rec.file_pos : 0);
	}
	if (w->len > pos)
		EMIT(w->buf + pos, w->len - pos, -1, 0);
#undef EMIT
	return n;
}

/* ---- frames and headers --------------------------------------------- */

int32_t
rn_kframe_size(const void *prefix, int32_t max_size)
{
	const uint8_t *p = prefix;
	int32_t n = (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	    ((uint32_t)p[2] << 8) | p[3]);

	if (n < 0 || n > max_size)
		return RN_KE_FRAMESIZE;
	return n;
}

size_t
rn_kw_frame_begin(struct rn_kwriter *w)
{
	size_t mark = w->len;

	rn_kw_int32(w, 0);
	return mark;
}

void
rn_kw_frame_end(struct rn_kwriter *w, size_t mark)
{
	size_t total, i;

	if (w->err)
		return;
	total = w->len - mark - 4;
	for (i = 0; i < w->nrefs; i++)
		if (w->refs[i].at >= mark + 4)
			total += (size_t)w->refs[i].rec.len;
	if (total > INT32_MAX) {
		rn_kw_fail(w, RN_KE_INVALID);
		return;
	}
	rn_kw_put32(w->buf + mark, (uint32_t)total);
}

int
rn_krequest_header_decode_v(struct rn_kreader *r, int hver,
    struct rn_krequest_header *h)
{
	h->api_key = rn_kr_int16(r);
	h->api_version = rn_kr_int16(r);
	h->correlation_id = rn_kr_int32(r);
	h->header_version = (int8_t)hver;
	h->client_id.ptr = NULL;
	h->client_id.len = -1;
	/* The client id stays a classic int16 string even in header v2. */
	if (hver >= 1)
		h->client_id = rn_kr_string(r, false, true);
	if (hver >= 2)
		rn_kr_skip_tags(r);
	return r->err;
}

int
rn_krequest_header_encode(struct rn_kwriter *w, int hver,
    const struct rn_krequest_header *h)
{
	rn_kw_int16(w, h->api_key);
	rn_kw_int16(w, h->api_version);
	rn_kw_int32(w, h->correlation_id);
	if (hver >= 1)
		rn_kw_string(w, h->client_id, false, true);
	if (hver >= 2)
		rn_kw_uvarint(w, 0);
	return w->err;
}

int
rn_kresponse_header_decode(struct rn_kreader *r, int hver,
    int32_t *correlation_id)
{
	*correlation_id = rn_kr_int32(r);
	if (hver >= 1)
		rn_kr_skip_tags(r);
	return r->err;
}

int
rn_kresponse_header_encode(struct rn_kwriter *w, int hver,
    int32_t correlation_id)
{
	rn_kw_int32(w, correlation_id);
	if (hver >= 1)
		rn_kw_uvarint(w, 0);
	return w->err;
}
