/*
 * Cleaning one log: map every key of the dirty part to its last offset,
 * then rewrite the segments below the cleanable end, a group of them at a
 * time, into one <base>.log.cleaned that keeps of each batch the records
 * whose key has no later offset (and tombstones until their horizon), and
 * swap it in under the partition lock (storage/swap.h).
 *
 * Offsets never change: a batch keeps its base offset and last offset
 * delta however many records it loses (consumers go on from a batch's last
 * offset), and a batch that loses them all goes, except an idempotent
 * producer's last batch (its sequence must survive), which stays as an
 * empty batch. A kept batch keeps its codec. Tombstones get a
 * delete horizon, delete.retention.ms after the cleaning that first keeps
 * them, in the batch (the delete-horizon attribute, with the base
 * timestamp carrying the horizon); a later cleaning past it drops them.
 *
 * Transactions (txn.c), as Kafka's cleaner treats them: the records of an
 * aborted transaction are neither mapped nor kept; a marker stays while
 * any batch of its transaction is left, then gets a delete horizon the
 * same way and goes after it, its .txnindex entry with it. (Kafka gives
 * the horizon in the pass after the one that removed the last batch;
 * here the pass that removes it does, as nothing of the transaction is
 * left once its swap is in.) The caller
 * never lets the cleanable end pass the last stable offset, so no batch
 * of an open transaction is looked at.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/batch.h"
#include "storage/bytes.h"
#include "storage/crc32c.h"
#include "storage/segment.h"
#include "storage/swap.h"
#include "workers/cleaner/cl_int.h"

#define RD_CHUNK (1024 * 1024)
#define OUT_FLUSH (1024 * 1024)
#define MAX_BATCH (256LL * 1024 * 1024)	/* bound on a stored batch */
#define MAX_BODY (256 * 1024 * 1024)	/* bound on a decompressed body */

/* Sequential batch reader over one segment file (buffer in c->rd). */
struct rdr {
	int fd;
	int64_t fpos;           /* file position of rd.p[0] */
	int64_t fend;
	size_t off;
};

static int
rdr_open(struct cl_ctx *c, struct rn_log *log, const struct rn_log_seginfo *s,
    struct rdr *r)
{
	char name[RN_SEGMENT_NAME_MAX];

	rn_segment_name(name, s->base, ".log");
	r->fd = openat(rn_log_dirfd(log), name, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0)
		return errno == ENOENT ? -ESTALE : -errno;
	r->fpos = 0;
	r->fend = s->size;
	r->off = 0;
	c->rd.len = 0;
	return 0;
}

/* 1 when need bytes are buffered from r->off, 0 at the end of the file. */
static int
rdr_fill(struct cl_ctx *c, struct rdr *r, size_t need)
{
	struct rn_buf *b = &c->rd;
	size_t keep = b->len - r->off, want = need > RD_CHUNK ? need : RD_CHUNK;
	int rc;

	if (keep >= need)
		return 1;
	if (keep > 0)
		memmove(b->p, b->p + r->off, keep);
	r->fpos += (int64_t)r->off;
	r->off = 0;
	b->len = keep;
	if ((rc = rn_buf_reserve(b, want)) < 0)
		return rc;
	while (b->len < need && r->fpos + (int64_t)b->len < r->fend) {
		int64_t left = r->fend - r->fpos - (int64_t)b->len;
		size_t room = b->cap - b->len;
		ssize_t n = rn_pread_full(r->fd, b->p + b->len,
		    (int64_t)room < left ? room : (size_t)left,
		    r->fpos + (int64_t)b->len);

		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		b->len += (size_t)n;
		cl_throttle_io(&c->thr, (size_t)n);
		if (c->tick != NULL && c->tick(c->tick_arg))
			return -EINTR;	/* stopping: the cleaning is redone later */
	}
	return b->len >= need;
}

/* The next whole batch: 1, 0 at the end (or a torn tail), or -errno. */
static int
rdr_next(struct cl_ctx *c, struct rdr *r, struct rn_batch_header *h,
    const uint8_t **batch)
{
	int rc = rdr_fill(c, r, RN_BATCH_HEADER_SIZE);
	size_t size;

	if (rc <= 0)
		return rc;
	rn_batch_parse_header(c->rd.p + r->off, h);
	if (h->magic != RN_BATCH_MAGIC_V2 ||
	    h->batch_length < RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD ||
	    (int64_t)rn_batch_total_size(h) > MAX_BATCH)
		return -EBADMSG;
	size = rn_batch_total_size(h);
	if ((rc = rdr_fill(c, r, size)) <= 0)
		return rc;
	*batch = c->rd.p + r->off;
	r->off += size;
	return 1;
}

/* The records of a batch, decompressed when it is compressed. */
static int
batch_body(struct cl_ctx *c, const struct rn_batch_header *h,
    const uint8_t *b, const uint8_t **body, size_t *len)
{
	size_t size = rn_batch_total_size(h) - RN_BATCH_HEADER_SIZE;
	int codec = rn_batch_compression(h), rc;

	if (codec == RN_COMPRESSION_NONE) {
		*body = b + RN_BATCH_HEADER_SIZE;
		*len = size;
		return 0;
	}
	rc = rn_codec_decompress(codec, b + RN_BATCH_HEADER_SIZE, size,
	    &c->dec, MAX_BODY);
	*body = c->dec.p;
	*len = c->dec.len;
	return rc;
}

/* Add the keys at or past from of one segment to the map. */
static int
map_segment(struct cl_ctx *c, struct rn_log *log, const struct rn_log_seginfo *s,
    int64_t from, struct cl_result *res)
{
	struct rn_batch_header h;
	const uint8_t *b;
	struct rdr r;
	int rc;

	if ((rc = rdr_open(c, log, s, &r)) < 0)
		return rc;
	while ((rc = rdr_next(c, &r, &h, &b)) == 1) {
		struct rn_record_view rec;
		const uint8_t *body;
		size_t len, pos = 0;

		if ((h.attributes & RN_BATCH_ATTR_CONTROL) ||
		    rn_batch_last_offset(&h) < from || h.record_count == 0)
			continue;
		/* an aborted record supersedes nothing */
		if ((h.attributes & RN_BATCH_ATTR_TRANSACTIONAL) &&
		    cl_txn_aborted(&c->txn, h.producer_id, h.base_offset))
			continue;
		if ((rc = batch_body(c, &h, b, &body, &len)) < 0)
			break;
		while ((rc = rn_records_next(&h, body, len, &pos, &rec)) == 1) {
			if (rec.offset < from || rec.key_len < 0)
				continue;
			if ((rc = cl_map_put(&c->map, rec.key, (size_t)rec.key_len,
			    rec.offset)) < 0)
				break;
		}
		if (rc < 0)
			break;
	}
	res->bytes_read += s->size;
	close(r.fd);
	return rc < 0 ? rc : 0;
}

/*
 * Map the dirty part; where the map fills, the cleanable end moves back
 * to the start of the segment that did not fit (the entries it added name
 * later offsets only, so they remove nothing wrongly).
 */
static int
build_map(struct cl_ctx *c, struct rn_log *log, const struct rn_log_seginfo *segs,
    int n, const struct cl_range *r, int64_t *end, struct cl_result *res)
{
	int first = -1, rc;

	cl_map_clear(&c->map);
	*end = r->end;
	for (int i = 0; i < n && segs[i].base < r->end; i++) {
		int64_t next = i + 1 < n ? segs[i + 1].base : INT64_MAX;

		if (next <= r->first_dirty)
			continue;
		if (first < 0)
			first = i;
		rc = map_segment(c, log, &segs[i], r->first_dirty, res);
		if (rc == -ENOSPC && i > first) {
			*end = segs[i].base;
			return 0;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

static bool
keep_for_producer(const struct cl_params *p, const struct rn_batch_header *h)
{
	int lo = 0, hi = p->n_keep;

	if (h->producer_id < 0)
		return false;
	/* sorted: a partition may have thousands of producers */
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (p->keep_offsets[mid] < h->base_offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->n_keep && p->keep_offsets[lo] == h->base_offset;
}

static bool
keep_record(struct cl_ctx *c, const struct rn_batch_header *h,
    const struct rn_record_view *rec, const struct cl_params *p)
{
	int64_t last;

	if (h->attributes & RN_BATCH_ATTR_CONTROL)
		return true;	/* a marker given its horizon: kept whole */
	if (rec->key_len < 0)
		return false;	/* a compacted log has no use for it */
	last = cl_map_get(&c->map, rec->key, (size_t)rec->key_len);
	if (last >= 0 && rec->offset < last)
		return false;
	if (rec->value_len < 0 && (h->attributes & RN_BATCH_ATTR_DELETE_HORIZON) &&
	    p->now_ms >= h->base_timestamp)
		return false;	/* a tombstone past its horizon */
	return true;
}

/* Where the group's output goes. */
struct out_seg {
	struct rn_segment *seg;
	struct rn_segment_cursor cur;
	int64_t flushed;        /* bytes written to the file */
	int64_t interval;
	int64_t batches;        /* written so far */
	bool changed;
};

static int
out_flush(struct cl_ctx *c, struct out_seg *o)
{
	int rc;

	if (c->out.len == 0)
		return 0;
	rc = rn_pwrite_full(o->seg->fd, c->out.p, c->out.len, o->flushed);
	if (rc < 0)
		return rc;
	cl_throttle_io(&c->thr, c->out.len);
	o->flushed += (int64_t)c->out.len;
	c->out.len = 0;
	return 0;
}

/* Append a finished batch (already in c->out at pos) to the index. */
static int
out_batch_done(struct cl_ctx *c, struct out_seg *o, size_t at)
{
	struct rn_batch_header h;

	rn_batch_parse_header(c->out.p + at, &h);
	o->batches++;
	rn_segment_index_batch(o->seg, &o->cur, o->flushed + (int64_t)at, &h,
	    o->interval);
	return c->out.len >= OUT_FLUSH ? out_flush(c, o) : 0;
}

static void
seal_crc(uint8_t *b, size_t size)
{
	rn_put_be32(b + RN_BATCH_OFF_CRC, rn_batch_compute_crc(b, size));
}

/* A batch with its header only: its offsets and producer state stay. */
static int
out_empty(struct cl_ctx *c, struct out_seg *o, const uint8_t *hdr)
{
	size_t at = c->out.len;
	uint8_t *b;
	int16_t attrs = (int16_t)rn_get_be16(hdr + RN_BATCH_OFF_ATTRIBUTES);
	int rc = rn_buf_reserve(&c->out, at + RN_BATCH_HEADER_SIZE);

	if (rc < 0)
		return rc;
	b = c->out.p + at;
	memcpy(b, hdr, RN_BATCH_HEADER_SIZE);
	rn_put_be32(b + RN_BATCH_OFF_LENGTH,
	    RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD);
	rn_put_be16(b + RN_BATCH_OFF_ATTRIBUTES,
	    (uint16_t)(attrs & ~RN_BATCH_ATTR_COMPRESSION_MASK));
	rn_put_be32(b + RN_BATCH_OFF_RECORD_COUNT, 0);
	seal_crc(b, RN_BATCH_HEADER_SIZE);
	c->out.len += RN_BATCH_HEADER_SIZE;
	return out_batch_done(c, o, at);
}

/* Append batch b as it is. */
static int
out_copy(struct cl_ctx *c, struct out_seg *o, const uint8_t *b, size_t size)
{
	size_t at = c->out.len;
	int rc = rn_buf_reserve(&c->out, at + size);

	if (rc < 0)
		return rc;
	memcpy(c->out.p + at, b, size);
	c->out.len += size;
	return out_batch_done(c, o, at);
}

/* What pass one over a batch's records found. */
struct kept {
	int32_t n;
	bool tombstone;
	int64_t max_ts;
};

/* Append the kept records of a batch, rebased on base_ts, recompressed. */
static int
out_rebuild(struct cl_ctx *c, struct out_seg *o, const struct rn_batch_header *h,
    const uint8_t *b, const uint8_t *body, size_t len, const struct kept *k,
    int64_t base_ts, const struct cl_params *p)
{
	struct rn_record_view rec;
	size_t pos = 0, at, blen;
	const uint8_t *src;
	int16_t attrs = h->attributes;
	int codec = rn_batch_compression(h), rc;
	uint8_t *q;

	if ((rc = rn_buf_reserve(&c->body, len + 20 * (size_t)k->n)) < 0)
		return rc;
	c->body.len = 0;
	while ((rc = rn_records_next(h, body, len, &pos, &rec)) == 1)
		if (keep_record(c, h, &rec, p))
			c->body.len += rn_record_rebased(c->body.p + c->body.len,
			    &rec, h->base_timestamp, base_ts);
	if (rc < 0)
		return rc;
	src = c->body.p;
	blen = c->body.len;
	if (codec != RN_COMPRESSION_NONE) {
		if ((rc = rn_codec_compress(codec, src, blen, &c->cmp)) < 0)
			return rc;
		src = c->cmp.p;
		blen = c->cmp.len;
	}
	at = c->out.len;
	if ((rc = rn_buf_reserve(&c->out, at + RN_BATCH_HEADER_SIZE + blen)) < 0)
		return rc;
	q = c->out.p + at;
	memcpy(q, b, RN_BATCH_HEADER_SIZE);
	if (base_ts != h->base_timestamp)
		attrs |= RN_BATCH_ATTR_DELETE_HORIZON;
	rn_put_be32(q + RN_BATCH_OFF_LENGTH, (uint32_t)(RN_BATCH_HEADER_SIZE -
	    RN_BATCH_LOG_OVERHEAD + blen));
	rn_put_be16(q + RN_BATCH_OFF_ATTRIBUTES, (uint16_t)attrs);
	rn_put_be64(q + RN_BATCH_OFF_BASE_TIMESTAMP, (uint64_t)base_ts);
	if (!(attrs & RN_BATCH_ATTR_LOG_APPEND_TIME))
		rn_put_be64(q + RN_BATCH_OFF_MAX_TIMESTAMP, (uint64_t)k->max_ts);
	rn_put_be32(q + RN_BATCH_OFF_RECORD_COUNT, (uint32_t)k->n);
	memcpy(q + RN_BATCH_HEADER_SIZE, src, blen);
	seal_crc(q, RN_BATCH_HEADER_SIZE + blen);
	c->out.len += RN_BATCH_HEADER_SIZE + blen;
	return out_batch_done(c, o, at);
}

/* A delete horizon from now, saturating. */
static int64_t
horizon_from_now(const struct cl_params *p)
{
	return p->delete_retention_ms > INT64_MAX - p->now_ms ? INT64_MAX :
	    p->now_ms + p->delete_retention_ms;
}

/*
 * A transaction's marker: kept while a batch of its transaction is kept
 * by this pass; else given a delete horizon (Kafka's KIP-534 rule for
 * markers of emptied transactions), kept until it, then dropped with its
 * .txnindex entry. A segment that would drop more markers than it can
 * note keeps the rest.
 */
static int
clean_marker(struct cl_ctx *c, struct out_seg *o, const struct rn_batch_header *h,
    const uint8_t *b, const struct cl_params *p, struct cl_result *res)
{
	struct rn_record_view rec;
	struct kept k = { 0, false, RN_NO_TIMESTAMP };
	const uint8_t *body;
	size_t len, pos = 0;
	int64_t hz;
	int rc;

	if (h->producer_id < 0 || !cl_txn_marker_empty(&c->txn, h->producer_id))
		return out_copy(c, o, b, rn_batch_total_size(h));
	if (h->attributes & RN_BATCH_ATTR_DELETE_HORIZON) {
		if (p->now_ms >= h->base_timestamp &&
		    c->txn.n_dropped < CL_TXN_DROPS) {
			c->txn.dropped[c->txn.n_dropped++] = h->base_offset;
			o->changed = true;
			return 0;
		}
		if (h->base_timestamp < res->horizon_ms)
			res->horizon_ms = h->base_timestamp;
		return out_copy(c, o, b, rn_batch_total_size(h));
	}
	hz = horizon_from_now(p);
	if (hz < res->horizon_ms)
		res->horizon_ms = hz;
	if ((rc = batch_body(c, h, b, &body, &len)) < 0)
		return rc;
	while ((rc = rn_records_next(h, body, len, &pos, &rec)) == 1) {
		k.n++;
		if (rec.timestamp > k.max_ts)
			k.max_ts = rec.timestamp;
	}
	if (rc < 0)
		return rc;
	o->changed = true;
	return out_rebuild(c, o, h, b, body, len, &k, hz, p);
}

/* Decide one source batch: copy, rebuild, keep empty or drop. */
static int
clean_data_batch(struct cl_ctx *c, struct out_seg *o, const struct rn_batch_header *h,
    const uint8_t *b, const struct cl_params *p, struct cl_result *res)
{
	struct rn_record_view rec;
	struct kept k = { 0, false, RN_NO_TIMESTAMP };
	const uint8_t *body;
	size_t len, pos = 0;
	int64_t base_ts = h->base_timestamp, hz;
	bool horizon = (h->attributes & RN_BATCH_ATTR_DELETE_HORIZON) != 0;
	int rc;

	if (h->attributes & RN_BATCH_ATTR_CONTROL)
		return clean_marker(c, o, h, b, p, res);
	if (h->attributes & RN_BATCH_ATTR_TRANSACTIONAL) {
		if (cl_txn_aborted(&c->txn, h->producer_id, h->base_offset)) {
			/* every record goes; the batch too unless its
			 * producer's sequence needs it */
			res->records_in += h->record_count;
			o->changed = true;
			return keep_for_producer(p, h) ? out_empty(c, o, b) : 0;
		}
	}
	if (h->record_count == 0 && !keep_for_producer(p, h)) {
		o->changed = true;	/* an empty batch no producer needs */
		return 0;
	}
	if ((rc = batch_body(c, h, b, &body, &len)) < 0)
		return rc;
	while ((rc = rn_records_next(h, body, len, &pos, &rec)) == 1) {
		res->records_in++;
		if (!keep_record(c, h, &rec, p))
			continue;
		k.n++;
		k.tombstone |= rec.value_len < 0;
		if (rec.timestamp > k.max_ts)
			k.max_ts = rec.timestamp;
	}
	if (rc < 0)
		return rc;
	res->records_out += k.n;
	if (k.tombstone) {
		if (!horizon)
			base_ts = horizon_from_now(p);
		hz = horizon ? h->base_timestamp : base_ts;
		if (hz < res->horizon_ms)
			res->horizon_ms = hz;
	}
	if (k.n == h->record_count && base_ts == h->base_timestamp)
		return out_copy(c, o, b, rn_batch_total_size(h));
	o->changed = true;
	if (k.n == 0)
		return keep_for_producer(p, h) ? out_empty(c, o, b) : 0;
	return out_rebuild(c, o, h, b, body, len, &k, base_ts, p);
}

/*
 * One source batch; a transactional one the output keeps (even empty)
 * keeps its transaction's marker.
 */
static int
clean_batch(struct cl_ctx *c, struct out_seg *o, const struct rn_batch_header *h,
    const uint8_t *b, const struct cl_params *p, struct cl_result *res)
{
	int64_t before = o->batches;
	int rc = clean_data_batch(c, o, h, b, p, res);

	if (rc == 0 && o->batches > before && h->producer_id >= 0 &&
	    (h->attributes & (RN_BATCH_ATTR_TRANSACTIONAL |
	    RN_BATCH_ATTR_CONTROL)) == RN_BATCH_ATTR_TRANSACTIONAL)
		cl_txn_batch(&c->txn, h->producer_id);
	return rc;
}

static int
out_open(struct rn_log *log, int64_t base, const struct cl_params *p,
    struct out_seg *o)
{
	char name[64];
	int dirfd = rn_log_dirfd(log), rc;
	size_t prealloc = p->segment_index_bytes > 0 ?
	    (size_t)p->segment_index_bytes : 10485760;

	memset(o, 0, sizeof(*o));
	o->interval = p->index_interval;
	rn_swap_discard(dirfd, base);
	if ((o->seg = rn_segment_new(base)) == NULL)
		return -ENOMEM;
	rn_segment_cursor_init(&o->cur, base);
	rn_swap_name(name, sizeof(name), base, ".log", RN_SWAP_CLEANED);
	o->seg->fd = openat(dirfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644);
	if (o->seg->fd < 0)
		return -errno;
	rn_swap_name(name, sizeof(name), base, ".index", RN_SWAP_CLEANED);
	rc = rn_index_open(&o->seg->oidx, dirfd, name, base,
	    RN_OFFSET_INDEX_ENTRY, prealloc, 1);
	rn_swap_name(name, sizeof(name), base, ".timeindex", RN_SWAP_CLEANED);
	if (rc == 0)
		rc = rn_index_open(&o->seg->tidx, dirfd, name, base,
		    RN_TIME_INDEX_ENTRY, prealloc, 1);
	return rc;
}

/* Trim the indexes to their entries and make everything durable. */
static int
out_seal(struct cl_ctx *c, struct out_seg *o)
{
	int rc = out_flush(c, o);

	if (rc < 0)
		return rc;
	rn_segment_time_index_final(o->seg, &o->cur);
	if ((rc = rn_index_resize(&o->seg->oidx, o->cur.o_entries)) < 0 ||
	    (rc = rn_index_resize(&o->seg->tidx, o->cur.t_entries)) < 0)
		return rc;
	if (fdatasync(o->seg->fd) < 0)
		return -errno;
	return rn_segment_sync_indexes(o->seg);
}

/* The swap itself, under the partition's lock. */
struct swap_args {
	uint32_t *gen;
	int64_t base;
	const int64_t *olds;
	int n;
	const struct cl_txn *txn;
	bool ran;
};

static int
not_dropped(void *arg, const struct rn_aborted_txn *a)
{
	const struct cl_txn *t = arg;

	for (int i = 0; i < t->n_dropped; i++)
		if (t->dropped[i] == a->last_offset)
			return 0;
	return 1;
}

static int
swap_locked(struct rn_log *log, void *arg)
{
	struct swap_args *sw = arg;
	int rc = 0;

	sw->ran = true;
	/*
	 * The entries of the markers this segment drops go first: their
	 * transactions have no record left in the log as it is, so readers
	 * of the old segments lose nothing, while an entry outliving its
	 * marker would hide that producer's later records from
	 * read_committed consumers.
	 */
	for (int i = 0; sw->txn->n_dropped > 0 && i < sw->n && rc == 0; i++)
		rc = rn_txnindex_filter(rn_log_dirfd(log), sw->olds[i],
		    not_dropped, (void *)sw->txn);
	if (rc < 0)
		return rc;
	rc = rn_log_swap_segments(log, *sw->gen, sw->base, sw->olds, sw->n);
	if (rc == 0)
		*sw->gen = rn_log_generation(log);
	return rc;
}

/* Rewrite one group of segments and swap it in. */
static int
clean_group(struct cl_ctx *c, struct rn_log *log, const struct rn_log_seginfo *g,
    int n, uint32_t *gen, const struct cl_params *p, const struct cl_lock *lk,
    struct cl_result *res)
{
	int64_t olds[CL_MAX_SEGS];
	struct swap_args sw;
	struct out_seg o;
	int rc, dirfd = rn_log_dirfd(log);

	c->out.len = 0;
	c->txn.n_dropped = 0;
	rc = out_open(log, g[0].base, p, &o);
	for (int i = 0; rc == 0 && i < n; i++) {
		struct rn_batch_header h;
		const uint8_t *b;
		struct rdr r;

		olds[i] = g[i].base;
		if ((rc = rdr_open(c, log, &g[i], &r)) < 0)
			break;
		while ((rc = rdr_next(c, &r, &h, &b)) == 1)
			if ((rc = clean_batch(c, &o, &h, b, p, res)) < 0)
				break;
		close(r.fd);
		res->bytes_read += g[i].size;
	}
	if (rc == 0)
		rc = out_seal(c, &o);
	rn_segment_free(o.seg);
	if (rc < 0 || (!o.changed && n == 1)) {
		rn_swap_discard(dirfd, g[0].base);	/* nothing to gain */
		return rc;
	}
	rn_swap_crash_point("cleaned");
	sw = (struct swap_args){ gen, g[0].base, olds, n, &c->txn, false };
	rc = lk->locked(lk->arg, swap_locked, &sw);
	if (!sw.ran || rc == -ESTALE)
		rn_swap_discard(dirfd, g[0].base);
	if (rc == 0) {
		res->groups++;
		res->bytes_written += o.flushed;
	}
	return rc;
}

/* How many segments from i go into one cleaned segment. */
static int
group_len(const struct rn_log_seginfo *segs, int n, int i, int64_t end,
    const struct cl_params *p)
{
	int64_t size = segs[i].size;
	int k = 1;

	while (i + k < n && segs[i + k].base < end &&
	    size + segs[i + k].size <= p->segment_bytes &&
	    (i + k + 1 < n ? segs[i + k + 1].base : end) - segs[i].base <
	    INT32_MAX) {
		size += segs[i + k].size;
		k++;
	}
	return k;
}

int
cl_clean_log(struct cl_ctx *c, struct rn_log *log, const struct cl_range *r,
    const struct cl_params *p, const struct cl_lock *lk, struct cl_result *res)
{
	static struct rn_log_seginfo segs[CL_MAX_SEGS];
	struct cl_range now;
	uint32_t gen;
	int64_t end;
	int n, rc;

	memset(res, 0, sizeof(*res));
	res->horizon_ms = INT64_MAX;
	res->next_dirty = r->first_dirty;
	cl_throttle_init(&c->thr, c->thr.rate);
	/* listed again: the range may be from an older look at the log */
	if ((n = cl_range_of(log, r->first_dirty, p, segs, &gen, &now)) <= 0)
		return n;
	if ((rc = cl_txn_load(&c->txn, log, now.end)) < 0)
		return rc;
	if ((rc = build_map(c, log, segs, n, &now, &end, res)) < 0)
		return rc;
	for (int i = 0; i < n && segs[i].base < end; ) {
		int k = group_len(segs, n, i, end, p);

		rc = clean_group(c, log, segs + i, k, &gen, p, lk, res);
		if (rc < 0)
			return rc;
		i += k;
	}
	res->next_dirty = end;
	return 0;
}

int
cl_ctx_init(struct cl_ctx *c, size_t dedupe_bytes, double io_rate)
{
	memset(c, 0, sizeof(*c));
	cl_throttle_init(&c->thr, io_rate);
	if (cl_txn_init(&c->txn) != 0)
		return -ENOMEM;
	return cl_map_init(&c->map, dedupe_bytes);
}

void
cl_ctx_free(struct cl_ctx *c)
{
	cl_map_free(&c->map);
	cl_txn_free(&c->txn);
	rn_buf_free(&c->rd);
	rn_buf_free(&c->dec);
	rn_buf_free(&c->body);
	rn_buf_free(&c->cmp);
	rn_buf_free(&c->out);
}
