/*
 * libFuzzer target for what crash recovery reads from disk: the input is
 * a segment's .log. RecordBatch framing and validation run over it as
 * bytes (rn_batch_validate under each rule set), then storage/log.c's two
 * ways in run over it as files in a scratch directory ($FUZZ_SCRATCH, or
 * a fresh one under $TMPDIR):
 *   recovery     rn_segment_recover: scan, cut after the last good batch,
 *                rebuild both indexes;
 *   trusted      the indexes as found (their bytes come from the input
 *                too) through rn_oidx_sanity / rn_tidx_sanity, then
 *                rn_segment_load_tail from the last entry, falling back
 *                to recovery as log.c does.
 *
 * The first byte picks the options, so a segment file with a byte in
 * front is a seed (tests/fuzz/corpus-segment/):
 *   bit 0     validate batches (CRC, records), as log.c recovers
 *   bit 1     recompute each framed batch's CRC first, so that mutated
 *             batches get past the checksum to the records
 *   bits 2-3  the segment's base offset: 0, 1000, 2^40, INT64_MAX - 2^20
 *   bits 4-5  index.interval.bytes: 0, 100, 4096; or tiny indexes (3
 *             entries) with interval 0, to fill them
 *   bit 6     trusted: then two big-endian 16-bit lengths follow, the
 *             .index bytes, the .timeindex bytes, and the .log is the rest
 *
 * Invariants that abort() (bugs, not bad input):
 *   - the .log is left cut at the cursor's size, *truncated when it shrank;
 *   - recovering the recovered segment again cuts nothing and gives the
 *     same cursor (size, next offset, max timestamp and its offset, first
 *     batch timestamp, index entry counts);
 *   - rn_segment_load_tail over the rebuilt indexes reaches the same end,
 *     next offset, max timestamp and first batch timestamp;
 *   - every offset index entry names the start of a batch whose last
 *     offset it holds, entries increasing; time index entries increasing;
 *   - a buffer rn_batch_validate accepts as replicated batches within the
 *     segment's offsets is kept whole by a validating recovery.
 * Sanitizers report the rest (overreads, UB, leaks).
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/batch.h"
#include "storage/bytes.h"
#include "tests/fuzz/fix_crcs.h"
#include "storage/index.h"
#include "storage/segment.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OPT_VALIDATE 0x01
#define OPT_FIX_CRC 0x02
#define OPT_BASE(o) (((o) >> 2) & 3)
#define OPT_INDEX(o) (((o) >> 4) & 3)
#define OPT_TRUSTED 0x40

static const int64_t bases[] = { 0, 1000, 1LL << 40, INT64_MAX - (1 << 20) };

static int sfd = -1;
static char dirpath[4096];

static void
bug(const char *what, int64_t a, int64_t b)
{
	fprintf(stderr, "fuzz_segment: %s (%lld, %lld)\n", what, (long long)a,
	    (long long)b);
	abort();
}

static void
scratch_cleanup(void)
{
	if (sfd >= 0)
		(void)rmdir(dirpath);
}

/* The scratch directory, made once per process. */
static int
scratch(void)
{
	const char *d = getenv("FUZZ_SCRATCH"), *tmp = getenv("TMPDIR");

	if (sfd >= 0)
		return sfd;
	if (d != NULL && d[0] != '\0') {
		snprintf(dirpath, sizeof(dirpath), "%s", d);
		if (mkdir(dirpath, 0700) != 0 && errno != EEXIST)
			bug("cannot make $FUZZ_SCRATCH", errno, 0);
	} else {
		snprintf(dirpath, sizeof(dirpath), "%s/runnel-fuzz-seg.XXXXXX",
		    tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
		if (mkdtemp(dirpath) == NULL)
			bug("cannot make a scratch directory", errno, 0);
	}
	if ((sfd = open(dirpath, O_RDONLY | O_DIRECTORY)) < 0)
		bug("cannot open the scratch directory", errno, 0);
	atexit(scratch_cleanup);
	return sfd;
}

/* Write a whole file of the segment (name from its base and suffix). */
static void
put_file(int64_t base, const char *suffix, const uint8_t *p, size_t len)
{
	char name[RN_SEGMENT_NAME_MAX];
	int fd;

	rn_segment_name(name, base, suffix);
	fd = openat(sfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644);
	if (fd < 0 || (len > 0 && rn_pwrite_full(fd, p, len, 0) != 0))
		bug("cannot write a scratch file", errno, 0);
	close(fd);
}


/* What the callback saw: batches arrive in file order, whole when
 * validating. */
struct seen {
	int validate;
	int64_t next_pos;
	int n;
};

static int
on_batch(void *arg, int64_t pos, const struct rn_batch_header *h,
    const uint8_t *batch)
{
	struct seen *s = arg;

	if (pos != s->next_pos)
		bug("batches not visited back to back", pos, s->next_pos);
	if ((batch != NULL) != s->validate)
		bug("batch bytes given iff validating", s->validate, 0);
	if (batch != NULL && rn_get_be64(batch) != (uint64_t)h->base_offset)
		bug("batch bytes do not match their header", pos, 0);
	s->next_pos = pos + (int64_t)rn_batch_total_size(h);
	s->n++;
	return 0;
}

static int64_t
file_size(int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		bug("fstat", errno, 0);
	return st.st_size;
}

/* The rebuilt indexes say what the .log holds. */
static void
check_indexes(const struct rn_segment *seg,
    const struct rn_segment_cursor *c)
{
	int64_t prev_off = INT64_MIN, prev_pos = -1, prev_ts = INT64_MIN;
	uint8_t hdr[RN_BATCH_HEADER_SIZE];
	uint32_t i;

	for (i = 0; i < c->o_entries; i++) {
		struct rn_batch_header h;
		int64_t off, pos;

		rn_oidx_get(&seg->oidx, i, &off, &pos);
		if (off <= prev_off || pos <= prev_pos || pos >= c->size)
			bug("offset index entries out of order", off, pos);
		if (rn_pread_full(seg->fd, hdr, sizeof(hdr), pos) !=
		    (ssize_t)sizeof(hdr))
			bug("offset index entry past the data", pos, c->size);
		rn_batch_parse_header(hdr, &h);
		if (rn_batch_last_offset(&h) != off)
			bug("offset index entry names no batch end", off, pos);
		prev_off = off;
		prev_pos = pos;
	}
	prev_off = INT64_MIN;
	for (i = 0; i < c->t_entries; i++) {
		int64_t ts, off;

		rn_tidx_get(&seg->tidx, i, &ts, &off);
		if (ts <= prev_ts || off < prev_off || off >= c->next_offset)
			bug("time index entries out of order", ts, off);
		prev_ts = ts;
		prev_off = off;
	}
}

static void
same_cursor(const char *what, const struct rn_segment_cursor *a,
    const struct rn_segment_cursor *b, int counts)
{
	if (a->size != b->size || a->next_offset != b->next_offset ||
	    a->max_ts != b->max_ts || a->max_ts_offset != b->max_ts_offset ||
	    a->first_batch_ts != b->first_batch_ts ||
	    (counts && (a->o_entries != b->o_entries ||
	    a->t_entries != b->t_entries))) {
		fprintf(stderr, "size %lld/%lld next %lld/%lld max_ts %lld/%lld "
		    "at %lld/%lld first_ts %lld/%lld entries %u,%u/%u,%u\n",
		    (long long)a->size, (long long)b->size,
		    (long long)a->next_offset, (long long)b->next_offset,
		    (long long)a->max_ts, (long long)b->max_ts,
		    (long long)a->max_ts_offset, (long long)b->max_ts_offset,
		    (long long)a->first_batch_ts, (long long)b->first_batch_ts,
		    a->o_entries, a->t_entries, b->o_entries, b->t_entries);
		bug(what, 0, 0);
	}
}

/* One recovery of the segment at base; the cursor in *c. */
static struct rn_segment *
recover(int64_t base, int64_t interval, size_t prealloc, int validate,
    struct rn_segment_cursor *c, int *truncated)
{
	struct rn_segment *seg = rn_segment_new(base);
	struct seen s = { validate, 0, 0 };
	int64_t before;
	int rc;

	if (seg == NULL)
		bug("out of memory", 0, 0);
	rc = rn_segment_recover(sfd, seg, interval, prealloc, validate,
	    on_batch, &s, c, truncated);
	if (rc == -ENOMEM) {
		rn_segment_free(seg);
		return NULL;
	}
	if (rc != 0)
		bug("recovery failed on a readable file", rc, 0);
	before = s.next_pos;
	if (before != c->size || seg->size != c->size)
		bug("recovery's end is not the last visited batch's end",
		    before, c->size);
	if (file_size(seg->fd) != c->size)
		bug("the .log is not cut at the recovered size",
		    file_size(seg->fd), c->size);
	check_indexes(seg, c);
	return seg;
}

/* The recovery path, with its cross-checks. */
static void
fuzz_recovery(const uint8_t *log, size_t len, int64_t base, unsigned opt)
{
	static const int64_t intervals[] = { 0, 100, 4096, 0 };
	int64_t interval = intervals[OPT_INDEX(opt)];
	size_t prealloc = OPT_INDEX(opt) == 3 ? 3 * RN_TIME_INDEX_ENTRY : 4096;
	int validate = (opt & OPT_VALIDATE) != 0, truncated, again;
	struct rn_segment_cursor c, c2, t;
	struct rn_segment *seg, *seg2;
	struct rn_batch_summary sum;
	static const struct rn_batch_limits replica = {
		RN_BATCH_V_REPLICA | RN_BATCH_V_ALLOW_CONTROL, 0
	};

	if ((seg = recover(base, interval, prealloc, validate, &c,
	    &truncated)) == NULL)
		return;
	if (truncated != (c.size < (int64_t)len))
		bug("*truncated does not say whether the .log shrank",
		    truncated, c.size);
	/* what rn_batch_validate accepts within the segment's offsets is
	 * what a validating recovery keeps */
	if (validate && len > 0 && rn_batch_validate(log, len, &replica,
	    &sum) == 0 && sum.first_offset >= base &&
	    sum.last_offset - base <= INT32_MAX && c.size != (int64_t)len)
		bug("recovery cut batches rn_batch_validate accepts", c.size,
		    (int64_t)len);
	rn_segment_free(seg);

	/* again over what the first left: nothing to cut, the same cursor */
	if ((seg2 = recover(base, interval, prealloc, validate, &c2,
	    &again)) == NULL)
		return;
	if (again)
		bug("a recovered segment is cut again", c.size, c2.size);
	same_cursor("a second recovery disagrees", &c, &c2, 1);

	/* the tail from the last index entry, as a restart with the
	 * indexes trusted reads it */
	if (rn_segment_load_tail(seg2, c2.o_entries, c2.t_entries, c2.size,
	    &t) != 0)
		bug("load_tail refuses a recovered segment", c2.size, 0);
	same_cursor("load_tail disagrees with recovery", &c2, &t, 1);
	rn_segment_free(seg2);
}

/* The trusted path: indexes as found, sanity-checked, then the tail. */
static void
fuzz_trusted(const uint8_t *p, size_t len, int64_t base, unsigned opt)
{
	size_t ilen, tlen;
	struct rn_segment *seg;
	struct rn_segment_cursor c;
	int64_t size;

	if (len < 4)
		return;
	ilen = rn_get_be16(p);
	tlen = rn_get_be16(p + 2);
	p += 4;
	len -= 4;
	if (ilen > len || tlen > len - ilen)
		return;
	put_file(base, ".index", p, ilen);
	put_file(base, ".timeindex", p + ilen, tlen);
	put_file(base, ".log", p + ilen + tlen, len - ilen - tlen);
	if ((seg = rn_segment_new(base)) == NULL)
		return;
	if (rn_segment_open_log(sfd, seg, 0) != 0)
		bug("cannot open the .log", 0, 0);
	size = file_size(seg->fd);
	if (rn_segment_open_indexes(sfd, seg, 0, 0) == 0 &&
	    rn_oidx_sanity(&seg->oidx, seg->o_entries, size) == 0 &&
	    rn_tidx_sanity(&seg->tidx, seg->t_entries) == 0 &&
	    rn_segment_load_tail(seg, seg->o_entries, seg->t_entries, size,
	    &c) == 0) {
		if (c.size != size)
			bug("load_tail ends short of the file", c.size, size);
		rn_segment_free(seg);
		return;
	}
	rn_segment_free(seg);
	/* what log.c does next: a full recovery */
	fuzz_recovery(p + ilen + tlen, len - ilen - tlen, base,
	    opt & ~OPT_TRUSTED);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct rn_batch_limits lims[] = {
		{ RN_BATCH_V_PRODUCE, 0 },
		{ RN_BATCH_V_REPLICA | RN_BATCH_V_ALLOW_CONTROL, 0 },
		{ RN_BATCH_V_REPLICA, 1 << 10 },
	};
	struct rn_batch_summary sum;
	unsigned opt;
	uint8_t *log;
	int64_t base;
	size_t i, len;

	if (size == 0)
		return 0;
	scratch();
	opt = data[0];
	base = bases[OPT_BASE(opt)];
	len = size - 1;
	/* a private copy: the CRCs may be rewritten; never a NULL for
	 * an empty file */
	if ((log = malloc(len + 1)) == NULL)
		return 0;
	memcpy(log, data + 1, len);
	if (opt & OPT_FIX_CRC) {
		/* the .log's part of the input */
		size_t at = (opt & OPT_TRUSTED) && len >= 4 ? 4 +
		    (size_t)rn_get_be16(log) + rn_get_be16(log + 2) : 0;

		if (at <= len)
			fuzz_fix_crcs(log + at, len - at);
	}
	for (i = 0; i < sizeof(lims) / sizeof(lims[0]); i++)
		(void)rn_batch_validate(log, len, &lims[i], &sum);
	(void)rn_segment_unlink(sfd, base);
	if (opt & OPT_TRUSTED) {
		fuzz_trusted(log, len, base, opt);
	} else {
		put_file(base, ".log", log, len);
		fuzz_recovery(log, len, base, opt);
	}
	(void)rn_segment_unlink(sfd, base);
	free(log);
	return 0;
}
