/* Segment files: naming, opening, index building, scanning, recovery. */
#include "storage/segment.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/bytes.h"

#define SCAN_BUF (1 << 20)

void
rn_segment_name(char buf[RN_SEGMENT_NAME_MAX], int64_t base, const char *suffix)
{
	snprintf(buf, RN_SEGMENT_NAME_MAX, "%020" PRId64 "%s", base, suffix);
}

int64_t
rn_segment_parse_name(const char *name, const char *suffix)
{
	size_t slen = strlen(suffix);
	int64_t v = 0;

	if (strlen(name) != 20 + slen || strcmp(name + 20, suffix) != 0)
		return -1;
	for (int i = 0; i < 20; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		if (v > (INT64_MAX - (name[i] - '0')) / 10)
			return -1;
		v = v * 10 + (name[i] - '0');
	}
	return v;
}

struct rn_segment *
rn_segment_new(int64_t base_offset)
{
	struct rn_segment *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->base_offset = base_offset;
	s->fd = -1;
	s->refs = 1;
	return s;
}

void
rn_segment_close_indexes(struct rn_segment *seg)
{
	rn_index_close(&seg->oidx);
	rn_index_close(&seg->tidx);
	seg->idx_active = 0;
	seg->idx_trusted = 0;
}

void
rn_segment_close_files(struct rn_segment *seg)
{
	rn_segment_close_indexes(seg);
	if (seg->fd >= 0)
		close(seg->fd);
	seg->fd = -1;
}

int
rn_segment_sync_indexes(struct rn_segment *seg)
{
	int rc = rn_index_sync(&seg->oidx);

	return rc < 0 ? rc : rn_index_sync(&seg->tidx);
}

void
rn_segment_free(struct rn_segment *seg)
{
	if (seg == NULL)
		return;
	rn_segment_close_files(seg);
	free(seg);
}

int
rn_segment_open_log(int dirfd, struct rn_segment *seg, int create)
{
	char name[RN_SEGMENT_NAME_MAX];
	struct stat st;

	if (seg->fd >= 0)
		return 0;
	rn_segment_name(name, seg->base_offset, ".log");
	seg->fd = openat(dirfd, name, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
	if (seg->fd < 0)
		return -errno;
	if (fstat(seg->fd, &st) < 0) {
		int rc = -errno;

		close(seg->fd);
		seg->fd = -1;
		return rc;
	}
	seg->dev = st.st_dev;
	seg->ino = st.st_ino;
	return 0;
}

int
rn_segment_open_indexes(int dirfd, struct rn_segment *seg, size_t prealloc,
    int create)
{
	char name[RN_SEGMENT_NAME_MAX];
	int rc;

	rn_segment_close_indexes(seg);
	rn_segment_name(name, seg->base_offset, ".index");
	rc = rn_index_open(&seg->oidx, dirfd, name, seg->base_offset,
	    RN_OFFSET_INDEX_ENTRY, prealloc, create);
	if (rc < 0)
		return rc;
	rn_segment_name(name, seg->base_offset, ".timeindex");
	rc = rn_index_open(&seg->tidx, dirfd, name, seg->base_offset,
	    RN_TIME_INDEX_ENTRY, prealloc, create);
	if (rc < 0) {
		rn_index_close(&seg->oidx);
		return rc;
	}
	seg->idx_active = prealloc > 0;
	if (!seg->idx_active) {
		seg->o_entries = rn_index_capacity(&seg->oidx);
		seg->t_entries = rn_index_capacity(&seg->tidx);
	}
	return 0;
}

int
rn_segment_unlink(int dirfd, int64_t base)
{
	static const char *const sfx[] = { ".log", ".index", ".timeindex", ".txnindex" };
	char name[RN_SEGMENT_NAME_MAX];
	int rc = 0;

	/* Data first: an index without its .log is an orphan recovery removes. */
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		rn_segment_name(name, base, sfx[i]);
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT && rc == 0)
			rc = -errno;
	}
	return rc;
}

void
rn_segment_cursor_init(struct rn_segment_cursor *c, int64_t base)
{
	memset(c, 0, sizeof(*c));
	c->next_offset = base;
	c->max_ts = RN_NO_TIMESTAMP;
	c->max_ts_offset = base;
	c->first_batch_ts = RN_NO_TIMESTAMP;
}

static void
time_index_maybe_append(struct rn_segment *seg, struct rn_segment_cursor *c)
{
	int64_t last_ts = RN_NO_TIMESTAMP, last_off;

	if (c->t_entries > 0)
		rn_tidx_get(&seg->tidx, c->t_entries - 1, &last_ts, &last_off);
	/* Only strictly growing timestamps are indexed (Kafka's maybeAppend). */
	/* an entry the disk has no room for is left out: the index is
	 * sparse, and the log's next write meets the full disk itself */
	if (c->max_ts > last_ts && c->t_entries < rn_index_capacity(&seg->tidx) &&
	    rn_tidx_put(&seg->tidx, c->t_entries, c->max_ts,
	    c->max_ts_offset) == 0)
		c->t_entries++;
}

void
rn_segment_index_batch(struct rn_segment *seg, struct rn_segment_cursor *c,
    int64_t pos, const struct rn_batch_header *h, int64_t interval)
{
	int64_t last = rn_batch_last_offset(h);
	int64_t size = (int64_t)rn_batch_total_size(h);

	if (h->max_timestamp > c->max_ts) {
		c->max_ts = h->max_timestamp;
		c->max_ts_offset = last;
	}
	if (c->bytes_since_index > interval) {
		if (c->o_entries < rn_index_capacity(&seg->oidx) &&
		    rn_oidx_put(&seg->oidx, c->o_entries, last, pos) == 0)
			c->o_entries++;
		time_index_maybe_append(seg, c);
		c->bytes_since_index = 0;
	}
	c->bytes_since_index += size;
	if (pos == 0)
		c->first_batch_ts = h->max_timestamp;
	c->size = pos + size;
	c->next_offset = last + 1;
}

void
rn_segment_time_index_final(struct rn_segment *seg, struct rn_segment_cursor *c)
{
	time_index_maybe_append(seg, c);
}

ssize_t
rn_pread_full(int fd, void *buf, size_t len, int64_t pos)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)pos + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int
rn_pwrite_full(int fd, const void *buf, size_t len, int64_t pos)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
		    (off_t)pos + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

DIR *
rn_opendirat(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return d;
}

/* The scan's window on the file: buf holds [bpos, bpos + blen). */
struct scanbuf {
	uint8_t *buf;
	size_t cap;
	int64_t bpos, blen;
};

/*
 * Have [pos, pos + need) in the window, reading from pos (up to end) and
 * growing the buffer when need exceeds it. 1 when it is there, 0 when the
 * file is shorter, or -errno.
 */
static int
scan_fill(const struct rn_segment *seg, struct scanbuf *sb, int64_t pos,
    int64_t end, int64_t need)
{
	ssize_t n;

	if (pos >= sb->bpos && pos + need <= sb->bpos + sb->blen)
		return 1;
	if ((size_t)need > sb->cap) {
		uint8_t *nb = realloc(sb->buf, (size_t)need);

		if (nb == NULL)
			return -ENOMEM;
		sb->buf = nb;
		sb->cap = (size_t)need;
	}
	n = rn_pread_full(seg->fd, sb->buf, (size_t)(end - pos <
	    (int64_t)sb->cap ? end - pos : (int64_t)sb->cap), pos);
	if (n < 0)
		return (int)n;
	sb->bpos = pos;
	sb->blen = n;
	return sb->blen >= need;
}

/*
 * A header that can start a batch of this segment after next_min: its
 * last offset + 1 fits an int64 and is within 2^31 of the segment's base
 * (the indexes hold offsets relative to it). The header is read from
 * disk, so this is computed without overflowing (the fuzzer found
 * base + delta wrapping for a base near INT64_MAX).
 */
static bool
header_plausible(const struct rn_segment *seg,
    const struct rn_batch_header *h, int64_t next_min)
{
	return h->magic == RN_BATCH_MAGIC_V2 &&
	    h->batch_length >= RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD &&
	    h->base_offset >= next_min && next_min >= 0 &&
	    h->last_offset_delta >= 0 &&
	    h->base_offset < INT64_MAX - h->last_offset_delta &&
	    h->base_offset - seg->base_offset <= INT32_MAX -
	    h->last_offset_delta;
}

int
rn_segment_scan(const struct rn_segment *seg, int64_t start, int64_t end,
    int64_t min_offset, int validate, rn_segment_batch_fn fn, void *arg,
    int64_t *valid_end)
{
	static const struct rn_batch_limits lim = {
		.flags = RN_BATCH_V_REPLICA | RN_BATCH_V_ALLOW_CONTROL,
	};
	struct scanbuf sb = { malloc(SCAN_BUF), SCAN_BUF, 0, 0 };
	int64_t pos = start, next_min = min_offset;
	int rc = 0;

	if (sb.buf == NULL)
		return -ENOMEM;
	while (pos < end) {
		struct rn_batch_header h;
		int64_t size;
		const uint8_t *b;

		if (end - pos < RN_BATCH_HEADER_SIZE)
			break;	/* torn header */
		if ((rc = scan_fill(seg, &sb, pos, end, RN_BATCH_HEADER_SIZE)) <= 0)
			break;
		rn_batch_parse_header(sb.buf + (pos - sb.bpos), &h);
		size = (int64_t)rn_batch_total_size(&h);
		/* a torn batch, or not one of ours */
		if (!header_plausible(seg, &h, next_min) || size > end - pos)
			break;
		if (validate) {
			if ((rc = scan_fill(seg, &sb, pos, end, size)) <= 0)
				break;
			if (rn_batch_validate(sb.buf + (pos - sb.bpos),
			    (size_t)size, &lim, NULL) != 0)
				break;
		}
		b = validate ? sb.buf + (pos - sb.bpos) : NULL;
		if (fn != NULL && (rc = fn(arg, pos, &h, b)) != 0)
			break;	/* > 0: the caller wants the data to end here */
		next_min = rn_batch_last_offset(&h) + 1;
		pos += size;
	}
	if (valid_end != NULL)
		*valid_end = pos;
	free(sb.buf);
	return rc < 0 ? rc : 0;
}

struct recover_ctx {
	struct rn_segment *seg;
	struct rn_segment_cursor *c;
	int64_t interval;
	rn_segment_batch_fn on_batch;
	void *arg;
};

static int
recover_cb(void *arg, int64_t pos, const struct rn_batch_header *h,
    const uint8_t *batch)
{
	struct recover_ctx *r = arg;
	int rc = r->on_batch ? r->on_batch(r->arg, pos, h, batch) : 0;

	if (rc == 0)
		rn_segment_index_batch(r->seg, r->c, pos, h, r->interval);
	return rc;
}

int
rn_segment_recover(int dirfd, struct rn_segment *seg, int64_t interval,
    size_t prealloc, int validate, rn_segment_batch_fn on_batch, void *arg,
    struct rn_segment_cursor *out, int *truncated)
{
	struct recover_ctx r = { seg, out, interval, on_batch, arg };
	struct stat st;
	int64_t valid_end;
	int rc;

	*truncated = 0;
	rc = rn_segment_open_log(dirfd, seg, 0);
	if (rc < 0)
		return rc;
	if (fstat(seg->fd, &st) < 0)
		return -errno;
	rc = rn_segment_open_indexes(dirfd, seg, prealloc, 1);
	if (rc < 0)
		return rc;
	rn_segment_cursor_init(out, seg->base_offset);
	rc = rn_segment_scan(seg, 0, st.st_size, seg->base_offset, validate,
	    recover_cb, &r, &valid_end);
	if (rc < 0)
		return rc;
	if (valid_end < st.st_size) {
		if (ftruncate(seg->fd, valid_end) < 0)
			return -errno;
		*truncated = 1;
	}
	seg->size = valid_end;
	return 0;
}

static int
tail_cb(void *arg, int64_t pos, const struct rn_batch_header *h,
    const uint8_t *batch)
{
	struct rn_segment_cursor *c = arg;
	int64_t last = rn_batch_last_offset(h);

	(void)batch;
	if (h->max_timestamp > c->max_ts) {
		c->max_ts = h->max_timestamp;
		c->max_ts_offset = last;
	}
	c->size = pos + (int64_t)rn_batch_total_size(h);
	c->next_offset = last + 1;
	return 0;
}

int
rn_segment_load_tail(struct rn_segment *seg, uint32_t o_entries,
    uint32_t t_entries, int64_t end, struct rn_segment_cursor *out)
{
	int64_t start = 0, min_off = seg->base_offset, valid_end;
	uint8_t hdr[RN_BATCH_HEADER_SIZE];
	int rc;

	rn_segment_cursor_init(out, seg->base_offset);
	out->o_entries = o_entries;
	out->t_entries = t_entries;
	if (o_entries > 0) {
		int64_t off;

		rn_oidx_get(&seg->oidx, o_entries - 1, &off, &start);
	}
	if (t_entries > 0)
		rn_tidx_get(&seg->tidx, t_entries - 1, &out->max_ts, &out->max_ts_offset);
	if (end >= RN_BATCH_HEADER_SIZE &&
	    rn_pread_full(seg->fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr)) {
		struct rn_batch_header h;

		rn_batch_parse_header(hdr, &h);
		out->first_batch_ts = h.max_timestamp;
	}
	rc = rn_segment_scan(seg, start, end, min_off, 0, tail_cb, out, &valid_end);
	if (rc < 0)
		return rc;
	if (valid_end != end)
		return -EBADMSG;	/* caller falls back to a full recovery */
	out->size = end;
	out->bytes_since_index = end - start;
	return 0;
}

int64_t
rn_segment_largest_ts(int dirfd, const struct rn_segment *seg)
{
	char name[RN_SEGMENT_NAME_MAX];
	uint8_t e[RN_TIME_INDEX_ENTRY];
	struct stat st;
	int fd;

	rn_segment_name(name, seg->base_offset, ".timeindex");
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		int64_t ts = RN_NO_TIMESTAMP;

		if (fstat(fd, &st) == 0 && st.st_size >= RN_TIME_INDEX_ENTRY &&
		    rn_pread_full(fd, e, sizeof(e), st.st_size / RN_TIME_INDEX_ENTRY *
		    RN_TIME_INDEX_ENTRY - RN_TIME_INDEX_ENTRY) == (ssize_t)sizeof(e))
			ts = (int64_t)rn_get_be64(e);
		close(fd);
		if (ts > 0)
			return ts;
	}
	rn_segment_name(name, seg->base_offset, ".log");
	if (fstatat(dirfd, name, &st, 0) < 0)
		return RN_NO_TIMESTAMP;
	return (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}
