/*
 * Log compaction: the offset map, cleaning (latest value per key at its
 * offset, codecs kept, tombstones until their horizon), the crash-safe swap
 * with the cleaner killed at each step and the log recovered or repaired,
 * and a reader in another process while segments are swapped under it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "storage/batch.h"
#include "storage/bytes.h"
#include "storage/codec.h"
#include "storage/log.h"
#include "storage/segment.h"
#include "storage/swap.h"
#include "tests/lib/logfixture.h"
#include "tests/lib/tap.h"
#include "workers/cleaner/cl_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NKEYS 40
#define MAXREC 20000
#define T0 1700000000000LL

static char root[256];

/* What was written: per offset, its key, whether a tombstone, its codec. */
static int w_key[MAXREC];
static int w_tomb[MAXREC];
static int w_codec[MAXREC];
static int64_t w_n;
static int64_t ts_bump;         /* added to the timestamps written */
static int check_written = 1;   /* reads compare with w_*[] */
static int64_t w_pid = -1;      /* producer id of the batches appended */

static struct rn_log_config
small_cfg(void)
{
	struct rn_log_config c = rn_log_config_default();

	c.segment_bytes = 8192;
	c.segment_index_bytes = 4096;
	c.index_interval_bytes = 512;
	c.retention_ms = -1;
	return c;
}

/* Append one batch of n records for keys[] (value NULL: tombstone). */
static int
append(struct rn_log *log, const int *keys, const int *tomb, int n, int codec)
{
	static uint8_t buf[65536], hdr[RN_BATCH_HEADER_SIZE];
	static struct rn_buf cmp;
	struct rn_record_in recs[64];
	char kb[64][16], vb[64][32];
	struct rn_batch_build_opts o;
	struct rn_append_info info;
	ssize_t len;

	rn_batch_build_opts_default(&o);
	if (w_pid >= 0) {
		o.producer_id = w_pid;
		o.producer_epoch = 0;
		o.base_sequence = 0;
	}
	for (int i = 0; i < n; i++) {
		snprintf(kb[i], sizeof(kb[i]), "key%03d", keys[i]);
		snprintf(vb[i], sizeof(vb[i]), "v%lld", (long long)(w_n + i));
		recs[i] = (struct rn_record_in){ kb[i], (int32_t)strlen(kb[i]),
		    tomb[i] ? NULL : vb[i], tomb[i] ? -1 : (int32_t)strlen(vb[i]),
		    T0 + ts_bump + w_n + i, NULL, 0 };
	}
	len = rn_batch_build(buf, sizeof(buf), &o, recs, n);
	if (len < 0)
		return (int)len;
	if (codec != RN_COMPRESSION_NONE) {
		if (rn_codec_compress(codec, buf + RN_BATCH_HEADER_SIZE,
		    (size_t)len - RN_BATCH_HEADER_SIZE, &cmp) != 0)
			return -EIO;
		memcpy(hdr, buf, sizeof(hdr));
		memcpy(buf, hdr, sizeof(hdr));
		memcpy(buf + RN_BATCH_HEADER_SIZE, cmp.p, cmp.len);
		len = (ssize_t)(RN_BATCH_HEADER_SIZE + cmp.len);
		rn_put_be32(buf + RN_BATCH_OFF_LENGTH,
		    (uint32_t)(len - RN_BATCH_LOG_OVERHEAD));
		rn_put_be16(buf + RN_BATCH_OFF_ATTRIBUTES, (uint16_t)codec);
		rn_put_be32(buf + RN_BATCH_OFF_CRC,
		    rn_batch_compute_crc(buf, (size_t)len));
	}
	if (rn_log_append(log, buf, (size_t)len, 0, T0, &info) != 0)
		return -EIO;
	for (int i = 0; i < n; i++) {
		w_key[w_n + i] = keys[i];
		w_tomb[w_n + i] = tomb[i];
		w_codec[w_n + i] = codec;
	}
	w_n += n;
	return 0;
}

/* A record past segment.ms starts a new active segment (key NKEYS - 1). */
static int
roll(struct rn_log *log)
{
	int k = NKEYS - 1, no = 0, rc;

	ts_bump += 30LL * 86400000;
	rc = append(log, &k, &no, 1, RN_COMPRESSION_NONE);
	return rc;
}

/* Many updates over NKEYS keys, then each key once more (codec by key),
 * then tombstones for keys 0..4. */
static int
fill(struct rn_log *log, int rounds)
{
	int keys[8], tomb[8] = { 0 };

	for (int r = 0; r < rounds; r++)
		for (int b = 0; b < NKEYS / 8; b++) {
			for (int i = 0; i < 8; i++)
				keys[i] = b * 8 + i;
			if (append(log, keys, tomb, 8, (r + b) % 5) != 0)
				return -1;
		}
	for (int k = 0; k < NKEYS; k++)
		if (append(log, &k, tomb, 1, k % 5) != 0)
			return -1;
	for (int k = 0; k < 5; k++) {
		int one = 1;

		if (append(log, &k, &one, 1, RN_COMPRESSION_NONE) != 0)
			return -1;
	}
	return roll(log);
}

struct seen {
	int64_t last_off[NKEYS];
	int tomb[NKEYS];
	int count[NKEYS];       /* below the active segment */
	int codec_ok;
	int64_t nrec, prev;
	int bad;
	int horizon_batches;
};

/* Read the whole log the way a consumer would, checking every batch. */
static int
read_all(struct rn_log *log, struct seen *s)
{
	static struct rn_buf dec;
	static uint8_t buf[1 << 20];
	int64_t off = rn_log_start_offset(log), abase = -1;
	struct rn_log_seginfo segs[CL_MAX_SEGS];
	uint32_t gen;

	memset(s, 0, sizeof(*s));
	s->prev = -1;
	s->codec_ok = 1;
	for (int k = 0; k < NKEYS; k++)
		s->last_off[k] = -1;
	if (rn_log_cleanable(log, segs, CL_MAX_SEGS, &gen, &abase) < 0)
		return -1;
	for (;;) {
		struct rn_log_slice sl;
		int rc = rn_log_read(log, off, sizeof(buf), -1, &sl);
		size_t pos = 0;

		if (rc < 0)
			return rc;
		if (sl.len == 0)
			break;
		int64_t got = rn_pread_full(sl.fd, buf, (size_t)sl.len, sl.file_pos);

		/* a short read is the data removed since: read again */
		rn_log_slice_release(log, &sl);
		if (got < 0)
			return -1;
		while (pos + RN_BATCH_HEADER_SIZE <= (size_t)got) {
			struct rn_batch_header h;
			struct rn_record_view rec;
			const uint8_t *body;
			size_t size, blen, rp = 0;

			rn_batch_parse_header(buf + pos, &h);
			size = rn_batch_total_size(&h);
			if (pos + size > (size_t)got)
				break;
			if (
			    rn_batch_compute_crc(buf + pos, size) != h.crc ||
			    h.base_offset <= s->prev) {
				s->bad++;
				return 0;
			}
			if (h.attributes & RN_BATCH_ATTR_DELETE_HORIZON)
				s->horizon_batches++;
			body = buf + pos + RN_BATCH_HEADER_SIZE;
			blen = size - RN_BATCH_HEADER_SIZE;
			if (rn_batch_compression(&h) != 0) {
				if (rn_codec_decompress(rn_batch_compression(&h),
				    body, blen, &dec, 1 << 24) != 0) {
					s->bad++;
					return 0;
				}
				body = dec.p;
				blen = dec.len;
			}
			while (rn_records_next(&h, body, blen, &rp, &rec) == 1) {
				int k = atoi((const char *)rec.key + 3);

				if (rec.offset <= s->prev || k < 0 || k >= NKEYS ||
				    (check_written && (rec.offset >= w_n ||
				    w_key[rec.offset] != k))) {
					s->bad++;
					return 0;
				}
				s->prev = rec.offset;
				s->nrec++;
				s->last_off[k] = rec.offset;
				s->tomb[k] = rec.value_len < 0;
				if (rec.offset < abase)
					s->count[k]++;
				if (check_written &&
				    w_codec[rec.offset] != rn_batch_compression(&h) &&
				    h.record_count > 0)
					s->codec_ok = 0;
			}
			s->prev = rn_batch_last_offset(&h);
			pos += size;
		}
		if (s->prev + 1 <= off && pos == 0)
			return -1;	/* no progress */
		off = s->prev + 1;
		if (off >= rn_log_end_offset(log))
			break;
	}
	return 0;
}

/* Each key's last record is the last written; 1 if so. */
static int
latest_ok(const struct seen *s, int want_tombstones)
{
	for (int k = 0; k < NKEYS; k++) {
		int64_t want = -1;

		for (int64_t o = 0; o < w_n; o++)
			if (w_key[o] == k)
				want = o;
		if (k < 5 && !want_tombstones) {
			if (s->last_off[k] != -1 && !(s->last_off[k] == want &&
			    s->tomb[k]))
				return 0;
			continue;
		}
		if (s->last_off[k] != want || s->tomb[k] != (k < 5))
			return 0;
	}
	return s->bad == 0;
}

static int
unique_below_active(const struct seen *s)
{
	for (int k = 0; k < NKEYS; k++)
		if (s->count[k] > 1)
			return 0;
	return 1;
}

/* No partition here: the swap runs on the log it is handed. */
static int
nolock(void *log, int (*fn)(struct rn_log *log, void *fnarg), void *fnarg)
{
	return fn(log, fnarg);
}

static struct cl_params
params(int64_t now)
{
	struct cl_params p;

	memset(&p, 0, sizeof(p));
	p.now_ms = now;
	p.delete_retention_ms = 1000;
	p.max_lag_ms = INT64_MAX;
	p.min_dirty_ratio = 0;
	p.segment_bytes = 65536;
	p.segment_index_bytes = 4096;
	p.index_interval = 512;
	p.max_end = INT64_MAX;
	return p;
}

static int
clean(struct cl_ctx *c, struct rn_log *log, int64_t now, int64_t first_dirty,
    struct cl_result *res)
{
	struct cl_params p = params(now);
	struct cl_lock lk = { nolock, log };
	static struct rn_log_seginfo segs[CL_MAX_SEGS];
	struct cl_range r;
	uint32_t gen;

	if (cl_range_of(log, first_dirty, &p, segs, &gen, &r) < 0)
		return -1;
	return cl_clean_log(c, log, &r, &p, &lk, res);
}

static int
leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (strstr(de->d_name, ".cleaned") || strstr(de->d_name, ".swap"))
			n++;
	closedir(d);
	return n;
}

static void
test_map(void)
{
	struct cl_map m;
	int full = 0;

	ok(cl_map_init(&m, 64 * 1024) == 0, "map: allocated once");
	for (int i = 0; i < 100; i++) {
		char k[16];

		snprintf(k, sizeof(k), "k%d", i % 10);
		cl_map_put(&m, (const uint8_t *)k, strlen(k), i);
	}
	ok(cl_map_get(&m, (const uint8_t *)"k3", 2) == 93 && m.used == 10,
	    "map: the last offset of each key");
	ok(cl_map_get(&m, (const uint8_t *)"zz", 2) == -1, "map: unknown key");
	for (int i = 0; i < 100000 && !full; i++) {
		char k[16];

		snprintf(k, sizeof(k), "x%d", i);
		full = cl_map_put(&m, (const uint8_t *)k, strlen(k), i) == -ENOSPC;
	}
	ok(full && m.used == m.max_used, "map: full at its load factor, never grows");
	cl_map_free(&m);
}

static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
test_throttle(void)
{
	struct cl_throttle t;
	double t0 = mono_s(), el;

	cl_throttle_init(&t, 4e6);
	for (int i = 0; i < 20; i++)
		cl_throttle_io(&t, 100000);	/* 2 MB at 4 MB/s */
	el = mono_s() - t0;
	ok(el >= 0.45 && el < 1.5, "throttle: 2 MB at 4 MB/s take %.2f s", el);
	t0 = mono_s();
	cl_throttle_init(&t, 0);
	for (int i = 0; i < 20; i++)
		cl_throttle_io(&t, 100000);
	ok(mono_s() - t0 < 0.1, "throttle: no cap, no wait");
}

static void
test_codecs(void)
{
	static uint8_t in[100000];
	struct rn_buf a = { 0 }, b = { 0 };
	int good = 1;

	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i % 251 < 100 ? 'a' : i * 7);
	for (int c = 1; c <= 4; c++)
		good &= rn_codec_compress(c, in, sizeof(in), &a) == 0 &&
		    rn_codec_decompress(c, a.p, a.len, &b, 1 << 20) == 0 &&
		    b.len == sizeof(in) && memcmp(b.p, in, sizeof(in)) == 0;
	ok(good, "codecs: gzip, snappy, lz4, zstd round trip");
	rn_codec_compress(RN_COMPRESSION_ZSTD, in, sizeof(in), &a);
	ok(rn_codec_decompress(RN_COMPRESSION_ZSTD, a.p, a.len, &b, 1000) == -EFBIG,
	    "codecs: output past the bound is refused");
	ok(rn_codec_decompress(RN_COMPRESSION_GZIP, in, 100, &b, 1 << 20) == -EBADMSG,
	    "codecs: garbage is refused");
	rn_buf_free(&a);
	rn_buf_free(&b);
}

static void
test_clean(struct cl_ctx *c)
{
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log_config cfg = small_cfg();
	struct rn_log *log;
	struct cl_result res;
	struct seen s;
	char dir[300];
	int64_t leo, size0;
	int rc;

	snprintf(dir, sizeof(dir), "%s/clean", root);
	w_n = 0;
	ok(rn_log_open(dir, &cfg, sh, NULL, &log) == 0 && fill(log, 30) == 0,
	    "clean: a log over %d keys", NKEYS);
	leo = rn_log_end_offset(log);
	size0 = rn_log_size_bytes(log);
	read_all(log, &s);
	ok(!unique_below_active(&s) && latest_ok(&s, 1), "clean: before, keys repeat");
	rc = clean(c, log, T0, 0, &res);
	ok(rc == 0 && res.groups > 0,
	    "clean: %d cleaned segments swapped in (%lld -> %lld bytes)", res.groups,
	    (long long)res.bytes_read, (long long)res.bytes_written);
	read_all(log, &s);
	ok(latest_ok(&s, 1) && unique_below_active(&s),
	    "clean: each key once, its latest record at its original offset");
	ok(s.codec_ok, "clean: kept batches keep their codec");
	ok(rn_log_end_offset(log) == leo && rn_log_size_bytes(log) < size0 / 4,
	    "clean: log end unchanged, the log much smaller");
	ok(s.horizon_batches > 0 && res.horizon_ms == T0 + 1000,
	    "clean: tombstones kept, with a delete horizon");
	ok(leftovers(dir) == 0, "clean: no .cleaned or .swap files left");
	ok(clean(c, log, T0 + 500, 0, &res) == 0, "clean: again before the horizon");
	read_all(log, &s);
	ok(latest_ok(&s, 1), "clean: tombstones still there before the horizon");
	ok(clean(c, log, T0 + 1001, 0, &res) == 0, "clean: again past the horizon");
	read_all(log, &s);
	ok(latest_ok(&s, 0) && s.last_off[0] == -1 && s.bad == 0,
	    "clean: tombstones gone past the horizon, other keys intact");
	rn_log_close(log);
	/* a fresh recovery reads the cleaned segments like any others */
	memset(sh, 0, sizeof(*sh));
	ok(rn_log_open(dir, &cfg, sh, NULL, &log) == 0, "clean: reopens");
	read_all(log, &s);
	ok(latest_ok(&s, 0) && rn_log_end_offset(log) == leo,
	    "clean: after recovery, the same records and log end");
	rn_log_close(log);
	free(sh);
}

/* The range: high watermark, min.compaction.lag.ms, the ratio. */
static void
test_range(void)
{
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log_config cfg = small_cfg();
	static struct rn_log_seginfo segs[CL_MAX_SEGS];
	struct cl_params p = params(T0);
	struct rn_log *log;
	struct cl_range r;
	char dir[300];
	uint32_t gen;
	int n;

	snprintf(dir, sizeof(dir), "%s/range", root);
	w_n = 0;
	ts_bump = 0;
	if (rn_log_open(dir, &cfg, sh, NULL, &log) != 0 || fill(log, 80) != 0) {
		ok(0, "range: set up");
		return;
	}
	n = cl_range_of(log, 0, &p, segs, &gen, &r);
	ok(n > 4 && r.end == rn_log_end_offset(log) - 1 && r.ratio == 1.0 &&
	    cl_range_due(&r, &p, INT64_MAX),
	    "range: all but the active segment, all dirty, due (%d segments, "
	    "end %lld of %lld, ratio %.2f)", n, (long long)r.end,
	    (long long)rn_log_end_offset(log), r.ratio);
	p.max_end = segs[3].base + 1;
	cl_range_of(log, 0, &p, segs, &gen, &r);
	ok(r.end == segs[3].base, "range: never past the high watermark");
	p.max_end = INT64_MAX;
	/* segments hold timestamps T0 + offset; the roll record is far later */
	p.now_ms = T0 + segs[2].base + 100;
	p.min_lag_ms = 100;
	cl_range_of(log, 0, &p, segs, &gen, &r);
	ok(r.end <= segs[2].base && r.end >= segs[1].base,
	    "range: segments younger than min.compaction.lag.ms wait");
	p = params(T0);
	cl_range_of(log, segs[n - 1].base, &p, segs, &gen, &r);
	ok(r.first_dirty == segs[n - 1].base && r.ratio > 0 && r.ratio < 0.5,
	    "range: the ratio counts only the dirty part (%.2f)", r.ratio);
	p.min_dirty_ratio = 0.9;
	ok(!cl_range_due(&r, &p, INT64_MAX) && cl_range_due(&r, &p, T0),
	    "range: under the ratio not due, unless a tombstone horizon came");
	rn_log_close(log);
	free(sh);
}

/* An idempotent producer's last batch stays, empty, when its records go. */
static void
test_producer_batch(struct cl_ctx *c)
{
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log_config cfg = small_cfg();
	struct cl_lock lk = { nolock, NULL };	/* .arg: the log, once open */
	static struct rn_log_seginfo segs[CL_MAX_SEGS];
	struct cl_params p = params(T0);
	struct rn_log *log;
	struct cl_result res;
	struct cl_range r;
	struct seen s;
	char dir[300];
	uint32_t gen;
	int64_t keep = 0;
	int k0 = 0, no = 0, kept_empty = 0;

	snprintf(dir, sizeof(dir), "%s/producer", root);
	w_n = 0;
	ts_bump = 0;
	/* offset 0: key 0 (its batch is the producer's last), then updates */
	w_pid = 42;
	if (rn_log_open(dir, &cfg, sh, NULL, &log) != 0 ||
	    append(log, &k0, &no, 1, 0) != 0) {
		ok(0, "producer: set up");
		return;
	}
	w_pid = -1;
	if (fill(log, 5) != 0) {
		ok(0, "producer: set up");
		return;
	}
	lk.arg = log;
	p.keep_offsets = &keep;
	p.n_keep = 1;
	cl_range_of(log, 0, &p, segs, &gen, &r);
	ok(cl_clean_log(c, log, &r, &p, &lk, &res) == 0, "producer: cleaned");
	read_all(log, &s);
	{
		struct rn_log_slice sl;
		uint8_t hb[RN_BATCH_HEADER_SIZE];
		struct rn_batch_header h;

		if (rn_log_read(log, 0, 1, -1, &sl) == 0 && sl.len > 0 &&
		    rn_pread_full(sl.fd, hb, sizeof(hb), sl.file_pos) ==
		    (ssize_t)sizeof(hb)) {
			rn_batch_parse_header(hb, &h);
			kept_empty = h.base_offset == 0 && h.record_count == 0;
		}
		rn_log_slice_release(log, &sl);
	}
	ok(kept_empty && latest_ok(&s, 1),
	    "producer: its last batch stays as an empty batch at its offset");
	rn_log_close(log);
	free(sh);
}

/* Kill a cleaner at step; recover (reopen) or repair; check the log. */
static void
crash_at(struct cl_ctx *c, const char *step, int repair)
{
	struct rn_log_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct rn_log_config cfg = small_cfg();
	struct rn_log *log;
	char dir[300], cf[300];
	struct seen s;
	int64_t size0, leo;
	pid_t pid;
	int st, fd;

	snprintf(dir, sizeof(dir), "%s/crash-%s-%d", root, step, repair);
	snprintf(cf, sizeof(cf), "%s/crash-file", root);
	w_n = 0;
	if (rn_log_open(dir, &cfg, sh, NULL, &log) != 0 || fill(log, 20) != 0) {
		ok(0, "crash %s: set up", step);
		return;
	}
	size0 = rn_log_size_bytes(log);
	leo = rn_log_end_offset(log);
	rn_log_close(log);
	fd = open(cf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, step, strlen(step)) < 0)
		return;
	close(fd);
	setenv("RUNNEL_CLEANER_CRASH_FILE", cf, 1);
	if ((pid = fork()) == 0) {
		struct cl_result res;

		if (rn_log_open(dir, &cfg, sh, NULL, &log) != 0)
			_exit(3);
		clean(c, log, T0, 0, &res);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	unsetenv("RUNNEL_CLEANER_CRASH_FILE");
	if (repair) {
		if (rn_log_open(dir, &cfg, sh, NULL, &log) == 0 &&
		    rn_log_repair(log) != 0) {
			rn_log_close(log);
			log = NULL;
		}
	} else {
		memset(sh, 0, sizeof(*sh));
		if (rn_log_open(dir, &cfg, sh, NULL, &log) != 0)
			log = NULL;
	}
	if (log == NULL) {
		ok(0, "crash at %s: the log opens again", step);
		return;
	}
	read_all(log, &s);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && latest_ok(&s, 1) &&
	    rn_log_end_offset(log) == leo && leftovers(dir) == 0,
	    "crash at %s, %s: no key lost or doubled, log end kept, no leftovers",
	    step, repair ? "repaired" : "recovered");
	if (strcmp(step, "cleaned") == 0 || strcmp(step, "promote") == 0)
		ok(rn_log_size_bytes(log) == size0, "crash at %s: the old segments", step);
	else
		ok(rn_log_size_bytes(log) < size0, "crash at %s: the new segment", step);
	rn_log_close(log);
	munmap(sh, sizeof(*sh));
}

/* A reader in another process while the log is cleaned again and again. */
static void
test_concurrent_reader(struct cl_ctx *c)
{
	struct rn_log_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct rn_log_config cfg = small_cfg();
	struct rn_log *log;
	struct cl_result res;
	char dir[300];
	int swaps = 0, st;
	/* the writer tells the reader when to stop */
	atomic_int *stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	time_t start = time(NULL);
	pid_t pid;

	atomic_store(stop, 0);
	snprintf(dir, sizeof(dir), "%s/reader", root);
	w_n = 0;
	if (rn_log_open(dir, &cfg, sh, NULL, &log) != 0 || fill(log, 10) != 0)
		return;
	if ((pid = fork()) == 0) {
		struct rn_log *r;
		struct seen s;
		int reads = 0;

		/* appended after the fork: only the framing is checked */
		check_written = 0;
		if (rn_log_open(dir, &cfg, sh, NULL, &r) != 0)
			_exit(3);
		while (!atomic_load(stop) || reads == 0) {
			if (read_all(r, &s) != 0 || s.bad)
				_exit(1);
			reads++;
		}
		_exit(reads > 0 ? 0 : 2);
	}
	/*
	 * Two seconds and at least three swaps: a loaded machine may give
	 * the writer too few turns in two seconds (at most 60 s).
	 */
	while ((time(NULL) < start + 2 || swaps <= 2) &&
	    time(NULL) < start + 60) {
		int keys[8], tomb[8] = { 0 };

		for (int i = 0; i < 8; i++)
			keys[i] = (int)((w_n + i) % NKEYS);
		if (w_n + 8 < MAXREC)
			append(log, keys, tomb, 8, (int)(w_n % 5));
		if (clean(c, log, T0, 0, &res) == 0)
			swaps += res.groups;
	}
	atomic_store(stop, 1);
	waitpid(pid, &st, 0);
	munmap(stop, sizeof(*stop));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		diag("reader: status %#x", st);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && swaps > 2,
	    "a reader in another process sees whole batches throughout %d swaps",
	    swaps);
	rn_log_close(log);
	munmap(sh, sizeof(*sh));
}

int
main(void)
{
	static const char *const steps[] = { "cleaned", "promote", "swap",
	    "unlink", "indexes" };
	struct cl_ctx c;

	snprintf(root, sizeof(root), "/tmp/rn-cleaner-test.%d", (int)getpid());
	mkdir(root, 0755);
	if (cl_ctx_init(&c, 1 << 20, 0) != 0)
		return 1;
	test_map();
	test_codecs();
	test_throttle();
	test_clean(&c);
	test_range();
	test_producer_batch(&c);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		crash_at(&c, steps[i], 0);
		crash_at(&c, steps[i], 1);
	}
	test_concurrent_reader(&c);
	cl_ctx_free(&c);
	lf_rm_rf(root);
	return done_testing();
}
