/* RecordBatch v2: parsing, validation, leader assignment, building. */
#include "storage/batch.h"

#include <errno.h>
#include <string.h>

#include "storage/bytes.h"
#include "storage/crc32c.h"

void
rn_batch_parse_header(const void *buf, struct rn_batch_header *h)
{
	const uint8_t *p = buf;

	h->base_offset = (int64_t)rn_get_be64(p + RN_BATCH_OFF_BASE_OFFSET);
	h->batch_length = (int32_t)rn_get_be32(p + RN_BATCH_OFF_LENGTH);
	h->partition_leader_epoch = (int32_t)rn_get_be32(p + RN_BATCH_OFF_LEADER_EPOCH);
	h->magic = (int8_t)p[RN_BATCH_OFF_MAGIC];
	h->crc = rn_get_be32(p + RN_BATCH_OFF_CRC);
	h->attributes = (int16_t)rn_get_be16(p + RN_BATCH_OFF_ATTRIBUTES);
	h->last_offset_delta = (int32_t)rn_get_be32(p + RN_BATCH_OFF_LAST_OFFSET_DELTA);
	h->base_timestamp = (int64_t)rn_get_be64(p + RN_BATCH_OFF_BASE_TIMESTAMP);
	h->max_timestamp = (int64_t)rn_get_be64(p + RN_BATCH_OFF_MAX_TIMESTAMP);
	h->producer_id = (int64_t)rn_get_be64(p + RN_BATCH_OFF_PRODUCER_ID);
	h->producer_epoch = (int16_t)rn_get_be16(p + RN_BATCH_OFF_PRODUCER_EPOCH);
	h->base_sequence = (int32_t)rn_get_be32(p + RN_BATCH_OFF_BASE_SEQUENCE);
	h->record_count = (int32_t)rn_get_be32(p + RN_BATCH_OFF_RECORD_COUNT);
}

uint32_t
rn_batch_compute_crc(const void *batch, size_t size)
{
	return rn_crc32c(0, (const uint8_t *)batch + RN_BATCH_OFF_ATTRIBUTES,
	    size - RN_BATCH_OFF_ATTRIBUTES);
}

/*
 * Offsets and timestamps from the wire are added like Java's longs do:
 * wrapping. A signed overflow in C is undefined behaviour, and a client or
 * a peer picks these values (the fuzzer found base + delta overflowing).
 */
static inline int64_t
add_wrap(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* Zig-zag varints as in Kafka's record format (protobuf style). */
static inline int
get_uvarint(const uint8_t **pp, const uint8_t *end, int maxbytes, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;

	for (int i = 0, shift = 0; i < maxbytes; i++, shift += 7) {
		uint8_t b;

		if (p >= end)
			return -1;
		b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if ((b & 0x80) == 0) {
			*pp = p;
			*out = v;
			return 0;
		}
	}
	return -1;
}

static inline int
get_varint(const uint8_t **pp, const uint8_t *end, int32_t *out)
{
	uint64_t u;

	if (get_uvarint(pp, end, 5, &u) < 0 || u > 0xffffffffu)
		return -1;
	*out = (int32_t)((uint32_t)(u >> 1) ^ -(uint32_t)(u & 1));
	return 0;
}

static inline int
get_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
	uint64_t u;

	if (get_uvarint(pp, end, 10, &u) < 0)
		return -1;
	*out = (int64_t)((u >> 1) ^ -(u & 1));
	return 0;
}

static inline size_t
uvarint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline size_t
varint_size(int64_t v)
{
	return uvarint_size(((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static inline uint8_t *
put_varint(uint8_t *p, int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);

	while (u >= 0x80) {
		*p++ = (uint8_t)(u | 0x80);
		u >>= 7;
	}
	*p++ = (uint8_t)u;
	return p;
}

/* Skip a length-prefixed field; min_len is -1 for nullable, 0 otherwise. */
static inline int
skip_bytes(const uint8_t **pp, const uint8_t *end, int32_t min_len,
    const uint8_t **data, int32_t *len)
{
	int32_t n;

	if (get_varint(pp, end, &n) < 0 || n < min_len)
		return -1;
	if (n > 0 && (size_t)(end - *pp) < (size_t)n)
		return -1;
	if (data != NULL) {
		*data = n >= 0 ? *pp : NULL;
		*len = n;
	}
	if (n > 0)
		*pp += n;
	return 0;
}

/*
 * Decode one record at *pp (bounded by end). Fills what the caller needs;
 * any framing error is an invalid record, like Kafka's DefaultRecord.
 */
static int
read_record(const uint8_t **pp, const uint8_t *end, int64_t *ts_delta,
    int32_t *off_delta, struct rn_record_view *v)
{
	const uint8_t *p = *pp, *rend;
	int32_t len, nh;

	if (get_varint(&p, end, &len) < 0 || len < 0 ||
	    (size_t)(end - p) < (size_t)len)
		return -1;
	rend = p + len;
	if (p >= rend)
		return -1;
	if (v != NULL)
		v->attributes = (int8_t)*p;
	p++;
	if (get_varlong(&p, rend, ts_delta) < 0 ||
	    get_varint(&p, rend, off_delta) < 0)
		return -1;
	if (skip_bytes(&p, rend, -1, v ? &v->key : NULL, v ? &v->key_len : NULL) < 0 ||
	    skip_bytes(&p, rend, -1, v ? &v->value : NULL, v ? &v->value_len : NULL) < 0)
		return -1;
	if (get_varint(&p, rend, &nh) < 0 || nh < 0)
		return -1;
	if (v != NULL) {
		v->headers = p;
		v->nheaders = nh;
	}
	for (int32_t i = 0; i < nh; i++) {
		/* Header keys are non-null strings; values may be null. */
		if (skip_bytes(&p, rend, 0, NULL, NULL) < 0 ||
		    skip_bytes(&p, rend, -1, NULL, NULL) < 0)
			return -1;
	}
	if (p != rend)
		return -1;
	if (v != NULL) {
		v->raw = *pp;
		v->raw_len = (size_t)(p - *pp);
		v->ts_delta = *ts_delta;
		v->offset_delta = *off_delta;
	}
	*pp = p;
	return 0;
}

/* Walk all records of an uncompressed batch, checking framing and deltas. */
static int
check_records(const uint8_t *b, size_t size, const struct rn_batch_header *h,
    int strict_offsets, int64_t *max_ts)
{
	const uint8_t *p = b + RN_BATCH_HEADER_SIZE, *end = b + size;
	int64_t mts = RN_NO_TIMESTAMP;
	int32_t prev = -1;

	for (int32_t i = 0; i < h->record_count; i++) {
		int64_t tsd;
		int32_t od;

		if (read_record(&p, end, &tsd, &od, NULL) < 0)
			return RN_ERR_INVALID_RECORD;
		if (strict_offsets ? od != i :
		    (od <= prev || od > h->last_offset_delta))
			return RN_ERR_INVALID_RECORD;
		prev = od;
		if (add_wrap(h->base_timestamp, tsd) > mts)
			mts = add_wrap(h->base_timestamp, tsd);
	}
	if (p != end)	/* more records than recordCount, or trailing junk */
		return RN_ERR_INVALID_RECORD;
	*max_ts = mts;
	return 0;
}

/*
 * The batch at b: its magic, length (within avail and max_bytes) and CRC;
 * 0 with *size and *h set, or the Kafka error.
 */
static int
frame_batch(const uint8_t *b, size_t avail, int64_t max_bytes, size_t *size,
    struct rn_batch_header *h)
{
	int32_t blen;
	int8_t magic;

	/* Magic sits at the same place in every message format. */
	if (avail < RN_BATCH_OFF_MAGIC + 1)
		return RN_ERR_CORRUPT_MESSAGE;
	magic = (int8_t)b[RN_BATCH_OFF_MAGIC];
	if (magic == 0 || magic == 1)
		return RN_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
	if (magic != RN_BATCH_MAGIC_V2)
		return RN_ERR_CORRUPT_MESSAGE;
	blen = (int32_t)rn_get_be32(b + RN_BATCH_OFF_LENGTH);
	if (blen < RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD)
		return RN_ERR_CORRUPT_MESSAGE;
	*size = (size_t)blen + RN_BATCH_LOG_OVERHEAD;
	if (max_bytes > 0 && (int64_t)*size > max_bytes)
		return RN_ERR_MESSAGE_TOO_LARGE;
	if (*size > avail)
		return RN_ERR_CORRUPT_MESSAGE;
	rn_batch_parse_header(b, h);
	if (rn_batch_compute_crc(b, *size) != h->crc)
		return RN_ERR_CORRUPT_MESSAGE;
	return 0;
}

/*
 * The header's counts and flags: a producer's batch is checked as Kafka
 * checks a client's, a replicated one for offsets that keep increasing
 * after those of s.
 */
static int
check_header(const struct rn_batch_header *h, unsigned flags, int produce,
    const struct rn_batch_summary *s)
{
	if (rn_batch_compression(h) > RN_COMPRESSION_ZSTD)
		return RN_ERR_CORRUPT_MESSAGE;
	if (h->record_count < 0 || h->last_offset_delta < 0)
		return RN_ERR_INVALID_RECORD;
	if (produce) {
		if (h->record_count == 0 ||
		    (int64_t)h->last_offset_delta + 1 != h->record_count)
			return RN_ERR_INVALID_RECORD;
		if ((h->attributes & RN_BATCH_ATTR_CONTROL) &&
		    !(flags & RN_BATCH_V_ALLOW_CONTROL))
			return RN_ERR_INVALID_RECORD;
		/* a marker has no sequence; a transaction needs a producer */
		if (h->producer_id >= 0 && h->base_sequence < 0 &&
		    !(h->attributes & RN_BATCH_ATTR_CONTROL) &&
		    !((flags & RN_BATCH_V_COORDINATOR) &&
		    (h->attributes & RN_BATCH_ATTR_TRANSACTIONAL)))
			return RN_ERR_INVALID_RECORD;
		if ((h->attributes & RN_BATCH_ATTR_TRANSACTIONAL) &&
		    h->producer_id < 0)
			return RN_ERR_INVALID_RECORD;
		return 0;
	}
	if ((int64_t)h->record_count > (int64_t)h->last_offset_delta + 1)
		return RN_ERR_INVALID_RECORD;
	/* Replicated offsets must increase across batches. */
	if (s->nbatches > 0 && h->base_offset <= s->last_offset)
		return RN_ERR_CORRUPT_MESSAGE;
	if (h->base_offset < 0)
		return RN_ERR_CORRUPT_MESSAGE;
	/* and end where an int64 offset can still be */
	if (h->base_offset > INT64_MAX - h->last_offset_delta)
		return RN_ERR_CORRUPT_MESSAGE;
	return 0;
}

/* Add one batch to the summary. */
static void
summarize(struct rn_batch_summary *s, const struct rn_batch_header *h)
{
	if (s->nbatches == 0)
		s->first_offset = h->base_offset;
	/* a client's base offset is overwritten by rn_batch_assign and
	 * may be anything: wrap like Kafka rather than overflow */
	s->last_offset = add_wrap(h->base_offset, h->last_offset_delta);
	s->nbatches++;
	s->offset_count += (int64_t)h->last_offset_delta + 1;
	s->record_count += h->record_count;
	if (h->max_timestamp > s->max_timestamp)
		s->max_timestamp = h->max_timestamp;
}

int
rn_batch_validate(const void *buf, size_t len,
    const struct rn_batch_limits *lim, struct rn_batch_summary *out)
{
	const uint8_t *base = buf;
	unsigned flags = lim ? lim->flags : RN_BATCH_V_PRODUCE;
	int64_t max_bytes = lim ? lim->max_batch_bytes : 0;
	int produce = (flags & RN_BATCH_V_REPLICA) == 0;
	struct rn_batch_summary s = {
		.first_offset = -1, .last_offset = -1,
		.max_timestamp = RN_NO_TIMESTAMP,
	};
	size_t off = 0;

	while (off < len) {
		const uint8_t *b = base + off;
		struct rn_batch_header h;
		size_t size;
		int rc;

		if ((rc = frame_batch(b, len - off, max_bytes, &size, &h)) != 0 ||
		    (rc = check_header(&h, flags, produce, &s)) != 0)
			return rc;
		if (rn_batch_compression(&h) == RN_COMPRESSION_NONE) {
			int64_t mts;

			if ((rc = check_records(b, size, &h, produce, &mts)) < 0)
				return rc;
			if (!(h.attributes & RN_BATCH_ATTR_LOG_APPEND_TIME) &&
			    h.record_count > 0 && mts != h.max_timestamp)
				s.ts_mismatch++;
		} else if (size == RN_BATCH_HEADER_SIZE && h.record_count > 0) {
			return RN_ERR_INVALID_RECORD;	/* no room for a compressed body */
		}
		summarize(&s, &h);
		off += size;
	}
	if (s.nbatches == 0)
		return RN_ERR_CORRUPT_MESSAGE;
	if (out != NULL)
		*out = s;
	return 0;
}

/* Rewrite attributes and maxTimestamp, patching the CRC instead of redoing it. */
static void
set_attrs_and_max_ts(uint8_t *b, size_t size, int16_t attrs, int64_t max_ts)
{
	/* xor delta over bytes [21, 43): attributes .. end of maxTimestamp */
	uint8_t delta[RN_BATCH_OFF_PRODUCER_ID - RN_BATCH_OFF_ATTRIBUTES];
	uint8_t before[sizeof(delta)];
	uint32_t crc = rn_get_be32(b + RN_BATCH_OFF_CRC);

	memcpy(before, b + RN_BATCH_OFF_ATTRIBUTES, sizeof(before));
	rn_put_be16(b + RN_BATCH_OFF_ATTRIBUTES, (uint16_t)attrs);
	rn_put_be64(b + RN_BATCH_OFF_MAX_TIMESTAMP, (uint64_t)max_ts);
	for (size_t i = 0; i < sizeof(delta); i++)
		delta[i] = before[i] ^ b[RN_BATCH_OFF_ATTRIBUTES + i];
	crc = rn_crc32c_patch(crc, size - RN_BATCH_OFF_ATTRIBUTES, delta,
	    sizeof(delta));
	rn_put_be32(b + RN_BATCH_OFF_CRC, crc);
}

int64_t
rn_batch_assign(void *buf, size_t len, int64_t base_offset,
    int32_t leader_epoch, int64_t log_append_time_ms, int fix_max_timestamp)
{
	uint8_t *base = buf;
	int64_t next = base_offset;
	size_t off = 0;

	while (off + RN_BATCH_HEADER_SIZE <= len) {
		uint8_t *b = base + off;
		struct rn_batch_header h;
		size_t size;
		int16_t attrs;
		int64_t mts;

		rn_batch_parse_header(b, &h);
		size = rn_batch_total_size(&h);
		rn_put_be64(b + RN_BATCH_OFF_BASE_OFFSET, (uint64_t)next);
		rn_put_be32(b + RN_BATCH_OFF_LEADER_EPOCH, (uint32_t)leader_epoch);
		attrs = h.attributes;
		mts = h.max_timestamp;
		if (log_append_time_ms >= 0) {
			attrs |= RN_BATCH_ATTR_LOG_APPEND_TIME;
			mts = log_append_time_ms;
		} else {
			attrs &= ~RN_BATCH_ATTR_LOG_APPEND_TIME;
			if (fix_max_timestamp && rn_batch_compression(&h) == 0 &&
			    h.record_count > 0 &&
			    check_records(b, size, &h, 0, &mts) < 0)
				mts = h.max_timestamp;
		}
		if (attrs != h.attributes || mts != h.max_timestamp)
			set_attrs_and_max_ts(b, size, attrs, mts);
		next += (int64_t)h.last_offset_delta + 1;
		off += size;
	}
	return next;
}

void
rn_batch_build_opts_default(struct rn_batch_build_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->partition_leader_epoch = -1;
	o->producer_id = -1;
	o->producer_epoch = -1;
	o->base_sequence = -1;
}

static size_t
record_body_size(const struct rn_record_in *r, int64_t ts_delta, int32_t off_delta)
{
	size_t n = 1 + varint_size(ts_delta) + varint_size(off_delta);

	n += varint_size(r->key_len) + (r->key_len > 0 ? (size_t)r->key_len : 0);
	n += varint_size(r->value_len) + (r->value_len > 0 ? (size_t)r->value_len : 0);
	n += varint_size(r->nheaders);
	for (int32_t i = 0; i < r->nheaders; i++) {
		const struct rn_header_in *hd = &r->headers[i];

		n += varint_size(hd->key_len) + (size_t)hd->key_len;
		n += varint_size(hd->value_len) +
		    (hd->value_len > 0 ? (size_t)hd->value_len : 0);
	}
	return n;
}

static uint8_t *
put_bytes(uint8_t *p, const void *data, int32_t len)
{
	p = put_varint(p, len);
	if (len > 0) {
		memcpy(p, data, (size_t)len);
		p += len;
	}
	return p;
}

ssize_t
rn_batch_build(void *buf, size_t cap, const struct rn_batch_build_opts *o,
    const struct rn_record_in *recs, int n)
{
	int64_t base_ts, max_ts = RN_NO_TIMESTAMP;
	size_t size = RN_BATCH_HEADER_SIZE;
	uint8_t *b = buf, *p;

	if (n <= 0 || recs == NULL || o == NULL ||
	    (o->attributes & RN_BATCH_ATTR_COMPRESSION_MASK) != 0)
		return -EINVAL;
	base_ts = recs[0].timestamp;
	for (int i = 0; i < n; i++) {
		const struct rn_record_in *r = &recs[i];
		size_t body;

		if (r->key_len < -1 || r->value_len < -1 || r->nheaders < 0 ||
		    (r->nheaders > 0 && r->headers == NULL))
			return -EINVAL;
		for (int32_t j = 0; j < r->nheaders; j++)
			if (r->headers[j].key_len < 0 || r->headers[j].value_len < -1)
				return -EINVAL;
		body = record_body_size(r, r->timestamp - base_ts, i);
		size += varint_size((int64_t)body) + body;
		if (r->timestamp > max_ts)
			max_ts = r->timestamp;
	}
	if (size - RN_BATCH_LOG_OVERHEAD > INT32_MAX)
		return -EINVAL;
	if (buf == NULL)
		return (ssize_t)size;
	if (cap < size)
		return -ENOSPC;

	rn_put_be64(b + RN_BATCH_OFF_BASE_OFFSET, (uint64_t)o->base_offset);
	rn_put_be32(b + RN_BATCH_OFF_LENGTH, (uint32_t)(size - RN_BATCH_LOG_OVERHEAD));
	rn_put_be32(b + RN_BATCH_OFF_LEADER_EPOCH, (uint32_t)o->partition_leader_epoch);
	b[RN_BATCH_OFF_MAGIC] = RN_BATCH_MAGIC_V2;
	rn_put_be16(b + RN_BATCH_OFF_ATTRIBUTES, (uint16_t)o->attributes);
	rn_put_be32(b + RN_BATCH_OFF_LAST_OFFSET_DELTA, (uint32_t)(n - 1));
	rn_put_be64(b + RN_BATCH_OFF_BASE_TIMESTAMP, (uint64_t)base_ts);
	rn_put_be64(b + RN_BATCH_OFF_MAX_TIMESTAMP, (uint64_t)max_ts);
	rn_put_be64(b + RN_BATCH_OFF_PRODUCER_ID, (uint64_t)o->producer_id);
	rn_put_be16(b + RN_BATCH_OFF_PRODUCER_EPOCH, (uint16_t)o->producer_epoch);
	rn_put_be32(b + RN_BATCH_OFF_BASE_SEQUENCE, (uint32_t)o->base_sequence);
	rn_put_be32(b + RN_BATCH_OFF_RECORD_COUNT, (uint32_t)n);

	p = b + RN_BATCH_HEADER_SIZE;
	for (int i = 0; i < n; i++) {
		const struct rn_record_in *r = &recs[i];
		int64_t tsd = r->timestamp - base_ts;

		p = put_varint(p, (int64_t)record_body_size(r, tsd, i));
		*p++ = 0;	/* record attributes: unused */
		p = put_varint(p, tsd);
		p = put_varint(p, i);
		p = put_bytes(p, r->key, r->key_len);
		p = put_bytes(p, r->value, r->value_len);
		p = put_varint(p, r->nheaders);
		for (int32_t j = 0; j < r->nheaders; j++) {
			p = put_bytes(p, r->headers[j].key, r->headers[j].key_len);
			p = put_bytes(p, r->headers[j].value, r->headers[j].value_len);
		}
	}
	rn_put_be32(b + RN_BATCH_OFF_CRC, rn_batch_compute_crc(b, size));
	return (ssize_t)size;
}

int
rn_batch_next_record(const void *batch, size_t size, size_t *pos,
    struct rn_record_view *rec)
{
	const uint8_t *b = batch, *p, *end = b + size;
	struct rn_batch_header h;
	int64_t tsd;
	int32_t od;

	if (size < RN_BATCH_HEADER_SIZE)
		return RN_ERR_CORRUPT_MESSAGE;
	if (*pos == 0)
		*pos = RN_BATCH_HEADER_SIZE;
	if (*pos >= size)
		return 0;
	rn_batch_parse_header(b, &h);
	p = b + *pos;
	if (read_record(&p, end, &tsd, &od, rec) < 0)
		return RN_ERR_INVALID_RECORD;
	rec->offset = add_wrap(h.base_offset, od);
	/* With LogAppendTime every record carries the batch's maxTimestamp. */
	rec->timestamp = (h.attributes & RN_BATCH_ATTR_LOG_APPEND_TIME) ?
	    h.max_timestamp : add_wrap(h.base_timestamp, tsd);
	*pos = (size_t)(p - b);
	return 1;
}

int
rn_records_next(const struct rn_batch_header *h, const uint8_t *buf,
    size_t len, size_t *pos, struct rn_record_view *rec)
{
	const uint8_t *p = buf + *pos;
	int64_t tsd;
	int32_t od;

	if (*pos >= len)
		return 0;
	if (read_record(&p, buf + len, &tsd, &od, rec) < 0)
		return RN_ERR_INVALID_RECORD;
	rec->offset = add_wrap(h->base_offset, od);
	rec->timestamp = (h->attributes & RN_BATCH_ATTR_LOG_APPEND_TIME) ?
	    h->max_timestamp : add_wrap(h->base_timestamp, tsd);
	*pos = (size_t)(p - buf);
	return 1;
}

size_t
rn_record_rebased_max(const struct rn_record_view *rec)
{
	return rec->raw_len + 20;	/* two varints may grow to 10 bytes */
}

size_t
rn_record_rebased(uint8_t *out, const struct rn_record_view *rec,
    int64_t old_base_ts, int64_t new_base_ts)
{
	const uint8_t *p = rec->raw, *end = rec->raw + rec->raw_len;
	int64_t tsd = (int64_t)((uint64_t)add_wrap(old_base_ts, rec->ts_delta) -
	    (uint64_t)new_base_ts);
	int64_t old_tsd = 0;
	int32_t len = 0, od = 0;
	size_t body;
	uint8_t *q = out;

	/* skip the old length, attributes, timestamp and offset deltas */
	(void)get_varint(&p, end, &len);
	body = (size_t)(end - p);
	p++;
	(void)get_varlong(&p, end, &old_tsd);
	(void)get_varint(&p, end, &od);
	body = body - (size_t)(varint_size(old_tsd)) + varint_size(tsd);
	q = put_varint(q, (int64_t)body);
	*q++ = (uint8_t)rec->attributes;
	q = put_varint(q, tsd);
	q = put_varint(q, od);
	memcpy(q, p, (size_t)(end - p));
	q += end - p;
	return (size_t)(q - out);
}
