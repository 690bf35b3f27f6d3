/*
 * Kafka wire codec runtime: a bounded reader over one request frame, a
 * growable writer that can reference record data instead of copying it;
 * decoded arrays come from a capped arena (common/arena.h).
 *
 * The generated message codecs (protocol/kmsg_gen.h) are built on these.
 * Errors are sticky on both reader and writer: the first failure is kept
 * in ->err, later reads return zero and later writes are dropped, so the
 * generated code checks once per array instead of once per field.
 */
#ifndef RN_KCODEC_H
#define RN_KCODEC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/arena.h"	/* decoded arrays */
#include "common/util.h"	/* struct rn_uuid */

/* Codec errors are negative errno values. */
#define RN_KE_MALFORMED   (-EBADMSG)   /* truncated or invalid encoding */
#define RN_KE_ARENA       (-E2BIG)     /* arena cap reached */
#define RN_KE_VERSION     (-ENOTSUP)   /* version (or API key) not served */
#define RN_KE_INVALID     (-EINVAL)    /* encoder given a value the version cannot carry */
#define RN_KE_NOMEM       (-ENOMEM)    /* malloc failed */
#define RN_KE_FRAMESIZE   (-EMSGSIZE)  /* frame size prefix out of bounds */

/* Strings are slices of the request buffer (not NUL-terminated).
 * len < 0 means null. */
struct rn_kstr {
	const char *ptr;
	int32_t len;
};

/* Opaque bytes; len < 0 means null. */
struct rn_kbytes {
	const uint8_t *ptr;
	int32_t len;
};

/*
 * A record set. Decoded: a slice of the request buffer (fd = -1).
 * To encode, either memory (ptr, fd = -1) or a file range (fd >= 0,
 * file_pos); the writer references it as a chunk, it never copies a file
 * range. len < 0 means null.
 */
struct rn_records {
	const void *ptr;
	int32_t len;
	int fd;
	int64_t file_pos;
};


static inline struct rn_kstr
rn_kstr_c(const char *s)
{
	struct rn_kstr k = { s, s ? (int32_t)strlen(s) : -1 };
	return k;
}

static inline bool
rn_kstr_eq(struct rn_kstr a, const char *s)
{
	size_t n;

	if (a.len < 0 || s == NULL)
		return a.len < 0 && s == NULL;
	n = strlen(s);
	return (size_t)a.len == n && (n == 0 || memcmp(a.ptr, s, n) == 0);
}


/* ---- reader ---------------------------------------------------------- */

struct rn_kreader {
	const uint8_t *p;
	const uint8_t *end;
	int err;
};

static inline void
rn_kreader_init(struct rn_kreader *r, const void *buf, size_t len)
{
	r->p = buf;
	r->end = r->p + len;
	r->err = 0;
}

static inline size_t
rn_kr_left(const struct rn_kreader *r)
{
	return (size_t)(r->end - r->p);
}

/* Mark the frame bad; consuming everything makes every later read fail. */
static inline void
rn_kr_fail(struct rn_kreader *r, int err)
{
	if (r->err == 0)
		r->err = err;
	r->p = r->end;
}

static inline const uint8_t *
rn_kr_take(struct rn_kreader *r, size_t n)
{
	const uint8_t *p = r->p;

	if (rn_kr_left(r) < n) {
		rn_kr_fail(r, RN_KE_MALFORMED);
		return NULL;
	}
	r->p += n;
	return p;
}

static inline uint8_t
rn_kr_u8(struct rn_kreader *r)
{
	const uint8_t *p = rn_kr_take(r, 1);
	return p ? p[0] : 0;
}

static inline int8_t
rn_kr_int8(struct rn_kreader *r)
{
	return (int8_t)rn_kr_u8(r);
}

static inline bool
rn_kr_bool(struct rn_kreader *r)
{
	return rn_kr_u8(r) != 0;
}

static inline uint16_t
rn_kr_u16(struct rn_kreader *r)
{
	const uint8_t *p = rn_kr_take(r, 2);
	return p ? (uint16_t)((p[0] << 8) | p[1]) : 0;
}

static inline int16_t
rn_kr_int16(struct rn_kreader *r)
{
	return (int16_t)rn_kr_u16(r);
}

static inline uint32_t
rn_kr_u32(struct rn_kreader *r)
{
	const uint8_t *p = rn_kr_take(r, 4);
	return p ? ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	    ((uint32_t)p[2] << 8) | p[3] : 0;
}

static inline int32_t
rn_kr_int32(struct rn_kreader *r)
{
	return (int32_t)rn_kr_u32(r);
}

static inline uint64_t
rn_kr_u64(struct rn_kreader *r)
{
	const uint8_t *p = rn_kr_take(r, 8);
	uint64_t v = 0;
	int i;

	if (p)
		for (i = 0; i < 8; i++)
			v = (v << 8) | p[i];
	return v;
}

static inline int64_t
rn_kr_int64(struct rn_kreader *r)
{
	return (int64_t)rn_kr_u64(r);
}

static inline double
rn_kr_float64(struct rn_kreader *r)
{
	uint64_t u = rn_kr_u64(r);
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

static inline struct rn_uuid
rn_kr_uuid(struct rn_kreader *r)
{
	struct rn_uuid u;
	const uint8_t *p = rn_kr_take(r, 16);

	if (p)
		memcpy(u.b, p, 16);
	else
		memset(u.b, 0, 16);
	return u;
}

uint32_t rn_kr_uvarint_slow(struct rn_kreader *r);

/* Unsigned varint of at most 32 bits; a 5th byte with spare bits set or a
 * continuation bit is an overflow. One-byte values take the fast path. */
static inline uint32_t
rn_kr_uvarint(struct rn_kreader *r)
{
	if (r->p < r->end && r->p[0] < 0x80)
		return *r->p++;
	return rn_kr_uvarint_slow(r);
}

int32_t rn_kr_varint(struct rn_kreader *r);     /* zigzag, 32-bit */
int64_t rn_kr_varlong(struct rn_kreader *r);    /* zigzag, 64-bit */

/*
 * Length of an array, string or bytes: classic int16/int32 form or compact
 * (unsigned varint, 0 = null, n+1 = n). Returns -1 for null, else >= 0.
 * A null where the schema does not allow one is RN_KE_MALFORMED, and so is
 * any length < -1. The caller still checks the length against the bytes
 * left before using it.
 */
static inline int32_t
rn_kr_len(struct rn_kreader *r, bool compact, bool wide, bool nullable)
{
	int64_t n;

	if (compact)
		n = (int64_t)rn_kr_uvarint(r) - 1;
	else if (wide)
		n = rn_kr_int32(r);
	else
		n = rn_kr_int16(r);
	if (r->err)
		return 0;
	if (n < -1 || (n == -1 && !nullable) || n > INT32_MAX) {
		rn_kr_fail(r, RN_KE_MALFORMED);
		return 0;
	}
	return (int32_t)n;
}

static inline struct rn_kstr
rn_kr_string(struct rn_kreader *r, bool compact, bool nullable)
{
	struct rn_kstr s = { NULL, 0 };
	int32_t n = rn_kr_len(r, compact, false, nullable);

	if (n < 0) {
		s.len = -1;
	} else if (n > 0) {
		s.ptr = (const char *)rn_kr_take(r, (size_t)n);
		s.len = s.ptr ? n : 0;
	}
	return s;
}

static inline struct rn_kbytes
rn_kr_bytes(struct rn_kreader *r, bool compact, bool nullable)
{
	struct rn_kbytes b = { NULL, 0 };
	int32_t n = rn_kr_len(r, compact, true, nullable);

	if (n < 0) {
		b.len = -1;
	} else if (n > 0) {
		b.ptr = rn_kr_take(r, (size_t)n);
		b.len = b.ptr ? n : 0;
	}
	return b;
}

static inline struct rn_records
rn_kr_records(struct rn_kreader *r, bool compact, bool nullable)
{
	struct rn_kbytes b = rn_kr_bytes(r, compact, nullable);
	struct rn_records rec = { b.ptr, b.len, -1, 0 };
	return rec;
}

/*
 * Allocate 'n' decoded elements of 'size' bytes each, after checking that
 * the frame has at least n * min_wire bytes left (every element occupies
 * at least min_wire bytes on the wire). Returns NULL with r->err set on
 * failure; NULL without error when n == 0.
 */
void *rn_kr_array(struct rn_kreader *r, struct rn_arena *a, int32_t n,
    size_t size, size_t min_wire);

/* Skip a tagged-field section, ignoring every tag. */
void rn_kr_skip_tags(struct rn_kreader *r);

/* ---- writer ---------------------------------------------------------- */

/* One piece of an encoded message: memory (fd < 0) or a file range. */
struct rn_kchunk {
	const void *ptr;
	size_t len;
	int fd;
	int64_t file_pos;
};

struct rn_kwref {
	size_t at;              /* offset in buf where the reference sits */
	struct rn_records rec;
};

/*
 * Growable output buffer. Record sets are not copied (unless small memory
 * ones and inline_max allows): the writer keeps a reference and
 * rn_kwriter_chunks() yields the message as an ordered list of memory spans
 * and file ranges for writev/sendfile.
 */
struct rn_kwriter {
	uint8_t *buf;
	size_t len;
	size_t cap;
	struct rn_kwref *refs;
	size_t nrefs;
	size_t refcap;
	size_t ref_bytes;       /* sum of referenced lengths */
	size_t inline_max;      /* copy memory records up to this size */
	int err;
};

void rn_kwriter_init(struct rn_kwriter *w);
void rn_kwriter_reset(struct rn_kwriter *w);   /* keeps the buffer */
void rn_kwriter_free(struct rn_kwriter *w);
int rn_kwriter_reserve_slow(struct rn_kwriter *w, size_t n);

/* Total encoded size including referenced record bytes. */
static inline size_t
rn_kwriter_size(const struct rn_kwriter *w)
{
	return w->len + w->ref_bytes;
}

/*
 * Fill up to 'max' chunks in wire order; returns how many the message
 * needs (call again with a bigger array if that is > max), or w->err.
 */
int rn_kwriter_chunks(const struct rn_kwriter *w, struct rn_kchunk *out,
    int max);

static inline uint8_t *
rn_kw_room(struct rn_kwriter *w, size_t n)
{
	uint8_t *p;

	if (w->cap - w->len < n && rn_kwriter_reserve_slow(w, n) < 0)
		return NULL;
	p = w->buf + w->len;
	w->len += n;
	return p;
}

static inline void
rn_kw_fail(struct rn_kwriter *w, int err)
{
	if (w->err == 0)
		w->err = err;
}

static inline void
rn_kw_raw(struct rn_kwriter *w, const void *src, size_t n)
{
	uint8_t *p;

	if (n == 0)
		return;
	p = rn_kw_room(w, n);
	if (p)
		memcpy(p, src, n);
}

static inline void
rn_kw_u8(struct rn_kwriter *w, uint8_t v)
{
	uint8_t *p = rn_kw_room(w, 1);
	if (p)
		p[0] = v;
}

static inline void
rn_kw_int8(struct rn_kwriter *w, int8_t v)
{
	rn_kw_u8(w, (uint8_t)v);
}

static inline void
rn_kw_bool(struct rn_kwriter *w, bool v)
{
	rn_kw_u8(w, v ? 1 : 0);
}

static inline void
rn_kw_u16(struct rn_kwriter *w, uint16_t v)
{
	uint8_t *p = rn_kw_room(w, 2);
	if (p) {
		p[0] = (uint8_t)(v >> 8);
		p[1] = (uint8_t)v;
	}
}

static inline void
rn_kw_int16(struct rn_kwriter *w, int16_t v)
{
	rn_kw_u16(w, (uint16_t)v);
}

static inline void
rn_kw_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void
rn_kw_u32(struct rn_kwriter *w, uint32_t v)
{
	uint8_t *p = rn_kw_room(w, 4);
	if (p)
		rn_kw_put32(p, v);
}

static inline void
rn_kw_int32(struct rn_kwriter *w, int32_t v)
{
	rn_kw_u32(w, (uint32_t)v);
}

static inline void
rn_kw_u64(struct rn_kwriter *w, uint64_t v)
{
	uint8_t *p = rn_kw_room(w, 8);
	int i;

	if (p)
		for (i = 7; i >= 0; i--, v >>= 8)
			p[i] = (uint8_t)v;
}

static inline void
rn_kw_int64(struct rn_kwriter *w, int64_t v)
{
	rn_kw_u64(w, (uint64_t)v);
}

static inline void
rn_kw_float64(struct rn_kwriter *w, double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	rn_kw_u64(w, u);
}

static inline void
rn_kw_uuid(struct rn_kwriter *w, const struct rn_uuid *u)
{
	rn_kw_raw(w, u->b, 16);
}

static inline void
rn_kw_uvarint(struct rn_kwriter *w, uint32_t v)
{
	uint8_t tmp[5];
	size_t n = 0;

	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	rn_kw_raw(w, tmp, n);
}

void rn_kw_varint(struct rn_kwriter *w, int32_t v);
void rn_kw_varlong(struct rn_kwriter *w, int64_t v);

/* Length prefix for arrays/strings/bytes; -1 is null and must be allowed. */
static inline void
rn_kw_len(struct rn_kwriter *w, int32_t n, bool compact, bool wide,
    bool nullable)
{
	if (n < 0) {
		if (!nullable) {
			rn_kw_fail(w, RN_KE_INVALID);
			return;
		}
		n = -1;
	} else if (!wide && !compact && n > INT16_MAX) {
		rn_kw_fail(w, RN_KE_INVALID);
		return;
	}
	if (compact)
		rn_kw_uvarint(w, (uint32_t)n + 1);
	else if (wide)
		rn_kw_int32(w, n);
	else
		rn_kw_int16(w, (int16_t)n);
}

static inline void
rn_kw_string(struct rn_kwriter *w, struct rn_kstr s, bool compact,
    bool nullable)
{
	rn_kw_len(w, s.len, compact, false, nullable);
	if (s.len > 0)
		rn_kw_raw(w, s.ptr, (size_t)s.len);
}

static inline void
rn_kw_bytes(struct rn_kwriter *w, struct rn_kbytes b, bool compact,
    bool nullable)
{
	rn_kw_len(w, b.len, compact, true, nullable);
	if (b.len > 0)
		rn_kw_raw(w, b.ptr, (size_t)b.len);
}

/* Writes the length prefix from rec->len, then references the data. */
void rn_kw_records(struct rn_kwriter *w, const struct rn_records *rec,
    bool compact, bool nullable);

/*
 * Tagged field framing: begin writes the tag and reserves one byte for the
 * size; end patches the size, moving the value if the size needs more than
 * one varint byte. Record references must not occur inside.
 */
static inline size_t
rn_kw_tag_begin(struct rn_kwriter *w, uint32_t tag)
{
	rn_kw_uvarint(w, tag);
	rn_kw_u8(w, 0);
	return w->len;
}

void rn_kw_tag_end(struct rn_kwriter *w, size_t mark);

/* ---- frames and headers --------------------------------------------- */

/*
 * Validate a 4-byte big-endian size prefix: negative or above max_size
 * means the peer is broken or hostile and the connection should close.
 * Returns the size (>= 0) or RN_KE_FRAMESIZE.
 */
int32_t rn_kframe_size(const void *prefix, int32_t max_size);

/* Reserve a size prefix at the current position; returns its offset. */
size_t rn_kw_frame_begin(struct rn_kwriter *w);
/* Patch the prefix with everything after it, referenced records included. */
void rn_kw_frame_end(struct rn_kwriter *w, size_t mark);

struct rn_krequest_header {
	int16_t api_key;
	int16_t api_version;
	int32_t correlation_id;
	struct rn_kstr client_id;       /* null in header v0 */
	int8_t header_version;          /* 0, 1 or 2 */
};

/*
 * Decode a request header of version 0..2 (protocol/kframe.h has the one
 * that finds the version from the API table).
 */
int rn_krequest_header_decode_v(struct rn_kreader *r, int hver,
    struct rn_krequest_header *h);
int rn_krequest_header_encode(struct rn_kwriter *w, int hver,
    const struct rn_krequest_header *h);

int rn_kresponse_header_decode(struct rn_kreader *r, int hver,
    int32_t *correlation_id);
int rn_kresponse_header_encode(struct rn_kwriter *w, int hver,
    int32_t correlation_id);

#endif /* RN_KCODEC_H */
