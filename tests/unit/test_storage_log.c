/*
 * Partition log: append/read, rolling, time lookups, truncation, deletion,
 * retention, reopen and crash recovery, several processes over one shared
 * state, and repair after a writer was SIGKILLed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "storage/log.h"
#include "storage/bytes.h"
#include "storage/checkpoint.h"
#include "storage/crc32c.h"
#include "storage/segment.h"
#include "tests/lib/logfixture.h"
#include "tests/lib/tap.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char root[256];

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static off_t
file_size(const char *dir, int64_t base, const char *sfx)
{
	char path[512], name[RN_SEGMENT_NAME_MAX];
	struct stat st;

	rn_segment_name(name, base, sfx);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 ? st.st_size : -1;
}

static void
seg_path(char *buf, size_t size, const char *dir, int64_t base, const char *sfx)
{
	char name[RN_SEGMENT_NAME_MAX];

	rn_segment_name(name, base, sfx);
	snprintf(buf, size, "%s/%s", dir, name);
}

static void
test_basic(void)
{
	char dir[300];
	struct rn_log_config cfg = lf_small_config();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log *log;
	struct rn_log_slice sl;
	int64_t nb, bases[256], leo;
	int rolls = 0, nseg, bad;
	uint32_t d1, d2;

	snprintf(dir, sizeof(dir), "%s/basic-0", root);
	is_int(rn_log_open(dir, &cfg, sh, NULL, &log), 0, "open a new log");
	is_int(rn_log_end_offset(log), 0, "new log ends at 0");
	is_int(file_size(dir, 0, ".index"), 16 * 1024, "active offset index preallocated");
	is_int(file_size(dir, 0, ".timeindex"), 16 * 1024 / 12 * 12, "active time index preallocated");
	is_int(rn_log_read(log, 0, 1000, -1, &sl), 0, "read at the end of an empty log");
	is_int(sl.len, 0, "... returns nothing");

	is_int(lf_append_varied(log, 600, 1, 1000, 5000, &rolls), 0, "600 varied appends, contiguous offsets");
	leo = rn_log_end_offset(log);
	nseg = rn_log_segment_bases(log, bases, 256);
	ok(rolls > 3 && nseg == rolls + 1, "rolled by size %d times (%d segments)", rolls, nseg);
	bad = 0;
	for (int i = 0; i + 1 < nseg; i++) {
		off_t ls = file_size(dir, bases[i], ".log"), is = file_size(dir, bases[i], ".index");
		off_t ts = file_size(dir, bases[i], ".timeindex");

		if (ls > cfg.segment_bytes || is % 8 || is >= 16 * 1024 || is == 0 ||
		    ts % 12 || ts >= 16 * 1024 / 12 * 12 || ts == 0)
			bad++;
	}
	is_int(bad, 0, "older segments within segment.bytes, indexes trimmed");
	is_int(lf_check_all(log, 0, 1 << 20, &nb, &d1), leo, "read back everything in 1 MiB slices");
	is_int(nb, 600, "... all 600 batches");
	is_int(lf_check_all(log, 0, 1, &nb, &d2), leo, "read back in one-batch slices");
	is_int(d1, d2, "same bytes either way");

	/* Every offset maps to the batch that contains it. */
	bad = 0;
	for (int64_t o = 0; o < leo; o += 7) {
		uint8_t hdr[RN_BATCH_HEADER_SIZE];
		struct rn_batch_header h;

		if (rn_log_read(log, o, 100, -1, &sl) != 0 || sl.len <= 0 ||
		    pread(sl.fd, hdr, sizeof(hdr), sl.file_pos) != (ssize_t)sizeof(hdr)) {
			bad++;
			continue;
		}
		rn_batch_parse_header(hdr, &h);
		if (h.base_offset > o || rn_batch_last_offset(&h) < o ||
		    (int64_t)rn_batch_total_size(&h) != sl.len)
			bad++;
		rn_log_slice_release(log, &sl);
	}
	is_int(bad, 0, "read(offset) starts at the containing batch, one batch when small");

	is_int(rn_log_read(log, leo + 1, 100, -1, &sl), -ERANGE, "past the end: -ERANGE");
	is_int(rn_log_read(log, leo, 100, -1, &sl), 0, "at the end: ok");
	is_int(sl.len, 0, "... and empty");
	/* High watermark bound: batches at or past it are not returned. */
	{
		int64_t hw = bases[1] + 3;
		uint8_t hdr[RN_BATCH_HEADER_SIZE];
		struct rn_batch_header h;
		int64_t pos, end_off = -1;

		int64_t mb = -1;

		is_int(rn_log_read(log, bases[1] - 1, 1 << 20, bases[1], &sl), 0, "read bounded at a segment start");
		ok(sl.len > 0 && sl.file_pos + sl.len == file_size(dir, bases[0], ".log"),
		    "returns the rest of the segment");
		rn_log_slice_release(log, &sl);
		/* a multi-record batch, bounded in its middle */
		for (int64_t o = 0; o < leo && mb < 0; o++) {
			rn_log_read(log, o, 1, -1, &sl);
			if (pread(sl.fd, hdr, sizeof(hdr), sl.file_pos) < 0)
				bail("I/O failed: line %d", __LINE__);
			rn_batch_parse_header(hdr, &h);
			if (h.last_offset_delta > 0)
				mb = h.base_offset;
			rn_log_slice_release(log, &sl);
		}
		rn_log_read(log, mb, 1 << 20, mb + 1, &sl);
		ok(mb >= 0 && sl.len == 0, "a bound inside the first batch returns nothing");
		rn_log_slice_release(log, &sl);
		is_int(rn_log_read(log, bases[1], 1 << 20, hw + 200, &sl), 0, "bounded read");
		for (pos = sl.file_pos; pos < sl.file_pos + sl.len; pos += (int64_t)rn_batch_total_size(&h)) {
			if (pread(sl.fd, hdr, sizeof(hdr), pos) < 0)
				bail("I/O failed: line %d", __LINE__);
			rn_batch_parse_header(hdr, &h);
			end_off = rn_batch_last_offset(&h);
		}
		ok(sl.len > 0 && end_off < hw + 200, "every returned batch ends below the bound (%lld)",
		    (long long)end_off);
		rn_log_slice_release(log, &sl);
	}
	/* Slices never cross a segment. */
	is_int(rn_log_read(log, bases[1] - 1, 1 << 30, -1, &sl), 0, "big read near a segment end");
	ok(sl.file_pos + sl.len == file_size(dir, bases[0], ".log"), "stops at the segment end");
	rn_log_slice_release(log, &sl);

	/* Close and reopen with the same shared state: nothing changes. */
	rn_log_close(log);
	is_int(rn_log_open(dir, &cfg, sh, NULL, &log), 0, "second handle over live shared state");
	is_int(lf_check_all(log, 0, 65536, NULL, &d2), leo, "reads the same log");
	is_int(d2, d1, "same bytes");

	/* Clean shutdown, fresh shared state, reopen from checkpoints. */
	{
		int64_t rp = rn_log_shutdown(log);
		struct rn_log_recovery rec = { rp, 0, 1 };

		is_int(rp, leo, "shutdown flushes: recovery point = log end");
		is_int(file_size(dir, bases[nseg - 1], ".index") % 8, 0, "active index trimmed on shutdown");
		ok(file_size(dir, bases[nseg - 1], ".index") < 16 * 1024, "... below its preallocation");
		rn_log_close(log);
		memset(sh, 0, sizeof(*sh));
		is_int(rn_log_open(dir, &cfg, sh, &rec, &log), 0, "reopen after clean shutdown");
		is_int(rn_log_end_offset(log), leo, "same log end");
		is_int(rn_log_segment_count(log), nseg, "same segments");
		is_int(lf_check_all(log, 0, 65536, NULL, &d2), leo, "readable");
		is_int(d2, d1, "identical bytes");
		is_int(file_size(dir, bases[nseg - 1], ".index"), 16 * 1024, "active index regrown for appends");
		is_int(lf_append_varied(log, 20, 7000, 1000, 5000, NULL), 0, "appends continue after reopen");
		leo = rn_log_end_offset(log);
	}

	/* Unclean: fresh shared state, no checkpoint: full scan. */
	rn_log_close(log);
	memset(sh, 0, sizeof(*sh));
	is_int(rn_log_open(dir, &cfg, sh, NULL, &log), 0, "reopen without shutdown (full recovery)");
	is_int(rn_log_end_offset(log), leo, "recovered log end");
	is_int(lf_check_all(log, 0, 65536, &nb, NULL), leo, "recovered log is readable");
	is_int(nb, 620, "all 620 batches");
	rn_log_close(log);
	free(sh);
}

/*
 * A handle opened over live shared state lists only the active segment
 * until something needs the older ones; each of those, asked first thing
 * on a new handle, answers as the handle that listed them all does.
 */
static void
test_tail_open(void)
{
	char dir[300];
	struct rn_log_config cfg = lf_small_config();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log *a, *b;
	struct rn_append_info info;
	int64_t bases[256], leo, size, nb, off_a, off_b, ts;
	int nseg;
	size_t n;

	snprintf(dir, sizeof(dir), "%s/tail-0", root);
	rn_log_open(dir, &cfg, sh, NULL, &a);
	lf_append_varied(a, 300, 77, 1000, 5000, NULL);
	nseg = rn_log_segment_bases(a, bases, 256);
	ok(nseg > 4, "a log of %d segments", nseg);

	is_int(rn_log_open(dir, &cfg, sh, NULL, &b), 0, "a second handle opens");
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 5, 100, 1000, 9);
	leo = rn_log_end_offset(a);
	is_int(rn_log_append(b, lf_pbuf, n, 2, 5000, &info), 0, "appends through it");
	is_int(info.base_offset, leo, "... at the log end");
	leo += 5;
	is_int(rn_log_end_offset(a), leo, "the first handle sees the append");
	size = rn_log_size_bytes(a);
	rn_log_close(b);

	rn_log_open(dir, &cfg, sh, NULL, &b);
	is_int(rn_log_segment_count(b), nseg, "a new handle counts every segment");
	rn_log_close(b);
	rn_log_open(dir, &cfg, sh, NULL, &b);
	is_int(rn_log_size_bytes(b), size, "... sums every segment");
	rn_log_close(b);
	rn_log_open(dir, &cfg, sh, NULL, &b);
	is_int(lf_check_all(b, 0, 65536, &nb, NULL), leo, "... reads from offset 0");
	is_int(nb, 301, "... every batch");
	rn_log_close(b);
	rn_log_open(dir, &cfg, sh, NULL, &b);
	rn_log_offset_for_time(a, 0, &off_a, &ts);
	is_int(rn_log_offset_for_time(b, 0, &off_b, &ts), 0, "... finds a time");
	is_int(off_b, off_a, "... in the oldest segment (%lld)", (long long)off_a);
	rn_log_close(b);
	rn_log_open(dir, &cfg, sh, NULL, &b);
	is_int(rn_log_flush(b, 1), 0, "... flushes from recovery point 0");
	is_int(rn_log_recovery_point(b), leo, "... up to the log end");
	rn_log_close(b);
	rn_log_open(dir, &cfg, sh, NULL, &b);
	is_int(rn_log_delete_records_before(b, bases[2]), bases[2],
	    "... deletes records into the third segment");
	is_int(rn_log_segment_count(a), nseg - 2, "the first handle sees two segments gone");
	rn_log_close(b);
	rn_log_open(dir, &cfg, sh, NULL, &b);
	is_int(rn_log_truncate_to(b, bases[3]), 0, "a new handle truncates to the fourth segment");
	is_int(rn_log_end_offset(a), bases[3], "the first handle sees the new end");
	is_int(rn_log_segment_count(a), 2, "... and the segments left");
	is_int(lf_check_all(a, bases[2], 65536, NULL, NULL), bases[3], "... which read");
	rn_log_close(b);
	rn_log_close(a);
	free(sh);
}

static void
test_time(void)
{
	char dir[300];
	struct rn_log_config cfg = lf_small_config();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log *log;
	struct rn_append_info info;
	int64_t off, ts, t0 = 1700000000000LL;
	int bad = 0;
	size_t n;

	snprintf(dir, sizeof(dir), "%s/time-0", root);
	cfg.segment_ms = 1000;
	rn_log_open(dir, &cfg, sh, NULL, &log);
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 2, 100, t0, 1);
	rn_log_append(log, lf_pbuf, n, 0, t0, &info);
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 2, 100, t0 + 900, 2);
	rn_log_append(log, lf_pbuf, n, 0, t0 + 900, &info);
	is_int(info.rolled, 0, "no roll within segment.ms");
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 2, 100, t0 + 1001, 3);
	rn_log_append(log, lf_pbuf, n, 0, t0 + 1001, &info);
	is_int(info.rolled, 1, "roll once segment.ms passed since the first batch");
	is_int(rn_log_segment_count(log), 2, "two segments");
	rn_log_close(log);
	lf_rm_rf(dir);

	/* Time lookups over 300 batches of 3 records, ts = t0 + 10*i + j. */
	memset(sh, 0, sizeof(*sh));
	cfg = lf_small_config();
	cfg.segment_bytes = 32 * 1024;
	rn_log_open(dir, &cfg, sh, NULL, &log);
	for (int i = 0; i < 300; i++) {
		struct rn_record_in recs[3];
		struct rn_batch_build_opts o;
		char v[200];

		memset(v, 'x', sizeof(v));
		rn_batch_build_opts_default(&o);
		for (int j = 0; j < 3; j++)
			recs[j] = (struct rn_record_in){ NULL, -1, v, 50 + i % 150,
			    t0 + 10 * i + j, NULL, 0 };
		n = (size_t)rn_batch_build(lf_pbuf, sizeof(lf_pbuf), &o, recs, 3);
		if (rn_log_append(log, lf_pbuf, n, 0, t0, &info) != 0)
			bad++;
	}
	ok(bad == 0 && rn_log_segment_count(log) > 1, "300 timestamped batches over %d segments",
	    rn_log_segment_count(log));
	bad = 0;
	for (int i = 0; i < 300; i++)
		for (int j = 0; j < 3; j++)
			if (rn_log_offset_for_time(log, t0 + 10 * i + j, &off, &ts) != 0 ||
			    off != 3 * i + j || ts != t0 + 10 * i + j)
				bad++;
	is_int(bad, 0, "exact timestamps find their record");
	bad = 0;
	for (int i = 0; i < 299; i++)
		if (rn_log_offset_for_time(log, t0 + 10 * i + 5, &off, &ts) != 0 ||
		    off != 3 * (i + 1))
			bad++;
	is_int(bad, 0, "timestamps between batches find the next record");
	is_int(rn_log_offset_for_time(log, t0 - 100, &off, &ts), 0, "before everything");
	is_int(off, 0, "... is offset 0");
	is_int(rn_log_offset_for_time(log, t0 + 5000, &off, &ts), -ENOENT, "after everything: -ENOENT");
	rn_log_offset_for_time(log, RN_LIST_LATEST, &off, &ts);
	is_int(off, 900, "latest = log end");
	rn_log_offset_for_time(log, RN_LIST_EARLIEST, &off, &ts);
	is_int(off, 0, "earliest = log start");
	is_int(rn_log_offset_for_time(log, RN_LIST_MAX_TIMESTAMP, &off, &ts), 0, "max timestamp lookup");
	is_int(off * 100000 + (ts - t0), 899 * 100000 + 2992, "... the last record, t0 + 2992");
	/* a batch with an older timestamp later on does not change the max */
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 2, 10, t0 + 5, 1);
	rn_log_append(log, lf_pbuf, n, 0, t0, &info);
	rn_log_offset_for_time(log, RN_LIST_MAX_TIMESTAMP, &off, &ts);
	is_int(off, 899, "max timestamp still found in an older place");
	rn_log_truncate_to(log, 900);

	/* Retention by time: segments whose newest record is old go. */
	{
		int64_t bases[64];
		int nseg = rn_log_segment_bases(log, bases, 64), del;

		rn_log_close(log);
		cfg.retention_ms = 1000;
		rn_log_open(dir, &cfg, sh, NULL, &log);
		/* now chosen so that only segments with max ts < t0 + 1500 expire */
		del = rn_log_retention(log, t0 + 2500);
		ok(del > 0 && del < nseg - 1, "retention.ms deleted %d of %d segments", del, nseg);
		is_int(rn_log_start_offset(log), bases[del], "log start = first remaining base");
		rn_log_offset_for_time(log, t0, &off, &ts);
		is_int(off, bases[del], "time lookups start at the log start");
		del = rn_log_retention(log, t0 + 10000000);
		is_int(rn_log_segment_count(log), 1, "everything expired: only the active segment stays");
		is_int(rn_log_end_offset(log), 900, "log end unchanged");
		ok(rn_log_start_offset(log) == bases[nseg - 1], "log start = active base");
	}
	rn_log_close(log);
	free(sh);
}

static void
test_truncate_delete(void)
{
	char dir[300];
	struct rn_log_config cfg = lf_small_config();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log *log;
	struct rn_log_slice sl;
	struct rn_append_info info;
	int64_t bases[256], leo, target, nb;
	int nseg;
	size_t n;

	snprintf(dir, sizeof(dir), "%s/trunc-0", root);
	rn_log_open(dir, &cfg, sh, NULL, &log);
	lf_append_varied(log, 400, 100, 1000, 5000, NULL);
	leo = rn_log_end_offset(log);
	nseg = rn_log_segment_bases(log, bases, 256);

	/* Truncate into an older segment at a batch boundary. */
	target = bases[2];
	is_int(rn_log_truncate_to(log, target), 0, "truncate_to an older segment's base");
	is_int(rn_log_end_offset(log), target, "log end = target");
	is_int(rn_log_segment_count(log), 3, "later segments deleted");
	is_int(file_size(dir, bases[3], ".log"), -1, "their files are gone");
	is_int(file_size(dir, bases[2], ".log"), 0, "the segment at target is empty");
	is_int(lf_check_all(log, 0, 65536, NULL, NULL), target, "prefix still reads");
	is_int(rn_log_read(log, target + 1, 100, -1, &sl), -ERANGE, "beyond the new end: -ERANGE");
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 5, 100, 1000, 9);
	is_int(rn_log_append(log, lf_pbuf, n, 2, 5000, &info), 0, "append after truncation");
	is_int(info.base_offset, target, "continues at the truncation point");

	/* Truncate mid-batch: the whole batch goes. */
	is_int(rn_log_truncate_to(log, target + 2), 0, "truncate inside a batch");
	is_int(rn_log_end_offset(log), target, "log end = that batch's base");
	/* Truncate inside the active segment to a prior batch boundary. */
	{
		int64_t mid = bases[1] + (bases[2] - bases[1]) / 2, lo;
		uint8_t hdr[RN_BATCH_HEADER_SIZE];
		struct rn_batch_header h;

		rn_log_read(log, mid, 1, -1, &sl);
		if (pread(sl.fd, hdr, sizeof(hdr), sl.file_pos) < 0)
			bail("I/O failed: line %d", __LINE__);
		rn_batch_parse_header(hdr, &h);
		rn_log_slice_release(log, &sl);
		lo = h.base_offset;
		is_int(rn_log_truncate_to(log, lo), 0, "truncate into the middle of segment 1");
		is_int(rn_log_end_offset(log), lo, "log end");
		is_int(rn_log_segment_count(log), 2, "segment 1 is active again");
		is_int(file_size(dir, bases[1], ".index"), 16 * 1024, "its index is writable again");
		is_int(lf_append_varied(log, 50, 300, 1000, 5000, NULL), 0, "appends continue there");
		is_int(lf_check_all(log, 0, 65536, &nb, NULL), rn_log_end_offset(log), "log reads contiguously");
	}
	leo = rn_log_end_offset(log);
	nseg = rn_log_segment_bases(log, bases, 256);

	/* DeleteRecords. */
	is_int(rn_log_delete_records_before(log, leo + 1), -ERANGE, "delete beyond the end: -ERANGE");
	target = bases[1] + 3;
	is_int(rn_log_delete_records_before(log, target), target, "delete records before an offset");
	is_int(rn_log_start_offset(log), target, "log start moved");
	is_int(rn_log_segment_count(log), nseg - 1, "segment wholly below it deleted");
	is_int(rn_log_read(log, target - 1, 100, -1, &sl), -ERANGE, "below the log start: -ERANGE");
	is_int(lf_check_all(log, target, 65536, NULL, NULL), leo, "from the log start everything reads");
	is_int(rn_log_delete_records_before(log, 1), target, "moving the start back is a no-op");

	/* Retention by size. */
	{
		int64_t total = rn_log_size_bytes(log), after;
		int del;

		rn_log_close(log);
		cfg.retention_bytes = 200 * 1024;
		rn_log_open(dir, &cfg, sh, NULL, &log);
		del = rn_log_retention(log, 0);
		after = rn_log_size_bytes(log);
		ok(del > 0, "retention.bytes deleted %d segments", del);
		ok(after <= 200 * 1024 + cfg.segment_bytes && after < total,
		    "size %lld -> %lld", (long long)total, (long long)after);
		ok(after >= 200 * 1024 || rn_log_segment_count(log) == 1, "not more than needed");
		nseg = rn_log_segment_bases(log, bases, 256);
		is_int(rn_log_start_offset(log), bases[0], "log start = first remaining segment");
		is_int(lf_check_all(log, bases[0], 65536, NULL, NULL), leo, "remaining log reads");
	}

	/* Truncation below the log start empties the log. */
	is_int(rn_log_truncate_to(log, 5), 0, "truncate below the log start");
	is_int(rn_log_end_offset(log) * 10 + rn_log_start_offset(log), 55, "log restarts at 5");
	is_int(rn_log_segment_count(log), 1, "one empty segment");
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 2, 10, 1000, 1);
	rn_log_append(log, lf_pbuf, n, 3, 5000, &info);
	is_int(info.base_offset, 5, "appends continue at 5");
	rn_log_close(log);
	free(sh);
}

/* Corrupt a file then reopen with fresh shared state. */
static void
test_recovery(void)
{
	char dir[300], path[512];
	struct rn_log_config cfg = lf_small_config();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log *log;
	struct rn_append_info info;
	int64_t bases[256], leo, last_base, nb;
	off_t sz;
	int fd, nseg;
	size_t n;
	uint32_t d;

	snprintf(dir, sizeof(dir), "%s/recover-0", root);
	rn_log_open(dir, &cfg, sh, NULL, &log);
	lf_append_varied(log, 300, 500, 1000, 5000, NULL);
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 4, 500, 1000, 77);
	rn_log_append(log, lf_pbuf, n, 1, 5000, &info);
	last_base = info.base_offset;
	leo = rn_log_end_offset(log);
	nseg = rn_log_segment_bases(log, bases, 256);
	rn_log_close(log);

	/* Torn tail: the file ends in the middle of the last batch. */
	seg_path(path, sizeof(path), dir, bases[nseg - 1], ".log");
	sz = file_size(dir, bases[nseg - 1], ".log");
	if (truncate(path, sz - 100) < 0)
		bail("I/O failed: line %d", __LINE__);
	memset(sh, 0, sizeof(*sh));
	is_int(rn_log_open(dir, &cfg, sh, NULL, &log), 0, "open after a torn write");
	is_int(rn_log_end_offset(log), last_base, "torn batch dropped, log end = its base");
	is_int(file_size(dir, bases[nseg - 1], ".log"), sz - (off_t)n, "file cut to the last whole batch");
	is_int(lf_check_all(log, 0, 65536, &nb, NULL), last_base, "valid prefix intact");
	is_int(nb, 300, "all earlier batches");
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 4, 500, 1000, 78);
	rn_log_append(log, lf_pbuf, n, 1, 5000, &info);
	is_int(info.base_offset, last_base, "next append reuses the offsets");
	rn_log_close(log);

	/* Garbage after the last batch. */
	sz = file_size(dir, bases[nseg - 1], ".log");
	fd = open(path, O_WRONLY | O_APPEND);
	for (int i = 0; i < 300; i++) {
		uint8_t g = (uint8_t)lf_mix((uint32_t)i);

		if (write(fd, &g, 1) < 0)
			bail("I/O failed: line %d", __LINE__);
	}
	close(fd);
	memset(sh, 0, sizeof(*sh));
	is_int(rn_log_open(dir, &cfg, sh, NULL, &log), 0, "open with garbage appended");
	is_int(rn_log_end_offset(log), leo, "log end unaffected");
	is_int(file_size(dir, bases[nseg - 1], ".log"), sz, "garbage cut off");
	rn_log_close(log);

	/* A flipped byte inside the last batch fails its CRC. */
	fd = open(path, O_RDWR);
	{
		uint8_t b;

		if (pread(fd, &b, 1, sz - 10) < 0)
			bail("I/O failed: line %d", __LINE__);
		b ^= 0x20;
		if (pwrite(fd, &b, 1, sz - 10) < 0)
			bail("I/O failed: line %d", __LINE__);
	}
	close(fd);
	memset(sh, 0, sizeof(*sh));
	is_int(rn_log_open(dir, &cfg, sh, NULL, &log), 0, "open with a corrupt last batch");
	is_int(rn_log_end_offset(log), last_base, "corrupt batch dropped");
	is_int(file_size(dir, bases[nseg - 1], ".log"), sz - (off_t)n, "exactly the valid prefix kept");
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 4, 500, 1000, 79);
	rn_log_append(log, lf_pbuf, n, 1, 5000, &info);
	leo = rn_log_end_offset(log);
	lf_check_all(log, 0, 65536, NULL, &d);

	/* Missing and damaged index files are rebuilt, byte for byte. */
	{
		static uint8_t before[16384], after[16384];
		int64_t rp = rn_log_shutdown(log);
		struct rn_log_recovery rec = { rp, 0, 1 };
		off_t isz = file_size(dir, bases[1], ".index");
		char ipath[512], tpath[512];
		int same;

		rn_log_close(log);
		seg_path(ipath, sizeof(ipath), dir, bases[1], ".index");
		seg_path(tpath, sizeof(tpath), dir, bases[nseg - 1], ".timeindex");
		fd = open(ipath, O_RDONLY);
		if (read(fd, before, (size_t)isz) < 0)
			bail("I/O failed: line %d", __LINE__);
		close(fd);
		unlink(ipath);
		unlink(tpath);
		seg_path(path, sizeof(path), dir, bases[2], ".index");
		if (truncate(path, 16 * 1024) < 0)	/* untrimmed: zero tail */
			bail("truncate");
		memset(sh, 0, sizeof(*sh));
		is_int(rn_log_open(dir, &cfg, sh, &rec, &log), 0, "open with index files missing");
		is_int(file_size(dir, bases[1], ".index"), isz, "offset index rebuilt, same size");
		fd = open(ipath, O_RDONLY);
		same = read(fd, after, (size_t)isz) == isz && memcmp(before, after, (size_t)isz) == 0;
		close(fd);
		ok(same, "rebuilt offset index is identical");
		ok(file_size(dir, bases[nseg - 1], ".timeindex") > 0, "active time index recreated");
		ok(file_size(dir, bases[2], ".index") < 16 * 1024, "untrimmed index rebuilt and trimmed");
		is_int(rn_log_end_offset(log), leo, "same log end");
		{
			uint32_t d2;

			is_int(lf_check_all(log, 0, 65536, NULL, &d2), leo, "log reads");
			is_int(d2, d, "same bytes");
		}
		rn_log_close(log);
	}

	/* Corruption in an older segment: the log ends there. */
	seg_path(path, sizeof(path), dir, bases[1], ".log");
	fd = open(path, O_RDWR);
	{
		uint8_t b;

		if (pread(fd, &b, 1, 5000) < 0)
			bail("I/O failed: line %d", __LINE__);
		b ^= 1;
		if (pwrite(fd, &b, 1, 5000) < 0)
			bail("I/O failed: line %d", __LINE__);
	}
	close(fd);
	memset(sh, 0, sizeof(*sh));
	is_int(rn_log_open(dir, &cfg, sh, NULL, &log), 0, "open with an old segment corrupt");
	ok(rn_log_end_offset(log) >= bases[1] && rn_log_end_offset(log) < bases[2],
	    "log ends inside the damaged segment");
	is_int(rn_log_segment_count(log), 2, "later segments dropped");
	is_int(lf_check_all(log, 0, 65536, NULL, NULL), rn_log_end_offset(log), "what is left reads");
	is_int(file_size(dir, bases[1], ".index"), 16 * 1024, "damaged segment became active");
	rn_log_close(log);
	free(sh);
}

static void
test_epochs(void)
{
	char dir[300], path[512], text[256];
	struct rn_log_config cfg = lf_small_config();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log *log;
	struct rn_append_info info;
	int32_t ep;
	int64_t eo;
	size_t n;
	int fd;
	ssize_t r;

	snprintf(dir, sizeof(dir), "%s/epoch-0", root);
	rn_log_open(dir, &cfg, sh, NULL, &log);
	for (int i = 0; i < 10; i++) {
		n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 3, 10, 1000, (uint32_t)i);
		rn_log_append(log, lf_pbuf, n, i < 4 ? 3 : 5, 5000, &info);
	}
	snprintf(path, sizeof(path), "%s/leader-epoch-checkpoint", dir);
	fd = open(path, O_RDONLY);
	r = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	text[r > 0 ? r : 0] = '\0';
	close(fd);
	is_str(text, "0\n2\n3 0\n5 12\n", "leader-epoch-checkpoint written by appends");
	rn_log_end_offset_for_epoch(log, 3, &ep, &eo);
	is_int(ep * 1000 + eo, 3012, "epoch 3 ends at 12");
	rn_log_end_offset_for_epoch(log, 5, &ep, &eo);
	is_int(ep * 1000 + eo, 5030, "latest epoch ends at the log end");
	rn_log_end_offset_for_epoch(log, 4, &ep, &eo);
	is_int(ep * 1000 + eo, 3012, "unknown epoch 4: floor 3, ends where 5 starts");
	rn_log_end_offset_for_epoch(log, 1, &ep, &eo);
	is_int(ep * 1000 + eo, 1000, "older than all: requested epoch, first start");
	rn_log_end_offset_for_epoch(log, 9, &ep, &eo);
	is_int(ep, -1, "newer than all: undefined");
	rn_log_truncate_to(log, 9);
	rn_log_end_offset_for_epoch(log, 3, &ep, &eo);
	is_int(ep * 1000 + eo, 3009, "truncation drops epoch 5");
	rn_log_close(log);
	memset(sh, 0, sizeof(*sh));
	rn_log_open(dir, &cfg, sh, NULL, &log);
	rn_log_end_offset_for_epoch(log, 3, &ep, &eo);
	is_int(ep * 1000 + eo, 3009, "epoch cache recovered");
	rn_log_close(log);
	free(sh);
}

static void
test_flush_and_replica(void)
{
	char dir[300];
	struct rn_log_config cfg = lf_small_config();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log *log;
	struct rn_append_info info;
	size_t n, n2;

	snprintf(dir, sizeof(dir), "%s/flush-0", root);
	cfg.flush_messages = 5;
	rn_log_open(dir, &cfg, sh, NULL, &log);
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 3, 10, 1000, 1);
	rn_log_append(log, lf_pbuf, n, 0, 5000, &info);
	is_int(rn_log_recovery_point(log), 0, "no flush before flush.messages");
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 3, 10, 1000, 2);
	rn_log_append(log, lf_pbuf, n, 0, 5000, &info);
	is_int(rn_log_recovery_point(log), 6, "flush.messages reached: flushed");
	n = 0;
	for (int i = 0; i < 3; i++)
		n += lf_mk_batch(lf_pbuf + n, sizeof(lf_pbuf) - n, 60, 1000, 1000, (uint32_t)i);
	is_int(rn_log_append(log, lf_pbuf, n, 0, 5000, &info), RN_ERR_RECORD_LIST_TOO_LARGE,
	    "payload larger than segment.bytes");
	rn_log_close(log);

	/* Follower appends keep the leader's offsets, gaps included. */
	snprintf(dir, sizeof(dir), "%s/replica-0", root);
	memset(sh, 0, sizeof(*sh));
	cfg = lf_small_config();
	rn_log_open(dir, &cfg, sh, NULL, &log);
	n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 3, 10, 1000, 1);
	rn_batch_assign(lf_pbuf, n, 0, 4, -1, 0);
	n2 = lf_mk_batch(lf_pbuf + n, sizeof(lf_pbuf) - n, 2, 10, 1000, 2);
	rn_batch_assign(lf_pbuf + n, n2, 10, 4, -1, 0);
	is_int(rn_log_append_replica(log, lf_pbuf, n + n2, 5000, &info), 0, "replica append with a gap");
	is_int(rn_log_end_offset(log), 12, "log end after the last replicated offset");
	is_int(rn_log_append_replica(log, lf_pbuf, n, 5000, &info), -EILSEQ, "offsets below the end refused");
	/* a gap wider than relative offsets can express starts a new segment */
	n2 = lf_mk_batch(lf_pbuf + n, sizeof(lf_pbuf) - n, 2, 10, 1000, 3);
	rn_batch_assign(lf_pbuf + n, n2, 12 + 3000000000LL, 4, -1, 0);
	is_int(rn_log_append_replica(log, lf_pbuf + n, n2, 5000, &info), 0, "replica append past a huge gap");
	{
		int64_t b[4];

		is_int(rn_log_segment_bases(log, b, 4), 2, "rolled");
		is_int(b[1], 12 + 3000000000LL, "new segment based at the batch");
		is_int(rn_log_end_offset(log), 14 + 3000000000LL, "log end after it");
	}
	{
		struct rn_log_slice sl;

		rn_log_read(log, 5, 100, -1, &sl);
		is_int(sl.first_offset, 10, "reading in the gap returns the next batch");
		rn_log_slice_release(log, &sl);
	}
	rn_log_close(log);
	free(sh);
}

/* ---- several processes ---- */

struct shm {
	pthread_mutex_t mu;
	_Atomic int turn;
	struct rn_log_shared sh;
};

static struct shm *
shm_new(void)
{
	struct shm *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t a;

	if (m == MAP_FAILED)
		bail("mmap");
	memset(m, 0, sizeof(*m));
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&m->mu, &a);
	pthread_mutexattr_destroy(&a);
	return m;
}

/* Lock; 1 if the previous owner died (caller repairs), 0 otherwise. */
static int
shm_lock(struct shm *m)
{
	int rc = pthread_mutex_lock(&m->mu);

	if (rc == EOWNERDEAD) {
		pthread_mutex_consistent(&m->mu);
		return 1;
	}
	if (rc != 0)
		bail("pthread_mutex_lock: %d", rc);
	return 0;
}

static int
writer_child(const char *dir, struct shm *m, int me, int count)
{
	struct rn_log_config cfg = lf_small_config();
	struct rn_log *log;
	static uint8_t buf[65536];

	cfg.segment_bytes = 16 * 1024;
	if (rn_log_open(dir, &cfg, &m->sh, NULL, &log) != 0)
		return 2;
	for (int i = 0; i < count; i++) {
		size_t n = lf_mk_batch(buf, sizeof(buf), 1 + i % 5, 50 + (i * 37) % 900, 1000,
		    (uint32_t)(me * 100000 + i));
		struct rn_append_info info;
		double t0 = now_s();

		while (atomic_load(&m->turn) % 2 != me) {
			if (now_s() - t0 > 30)
				return 3;
			sched_yield();
		}
		if (shm_lock(m))
			rn_log_repair(log);
		if (rn_log_append(log, buf, n, 1, 5000, &info) != 0)
			return 4;
		pthread_mutex_unlock(&m->mu);
		atomic_fetch_add(&m->turn, 1);
	}
	rn_log_close(log);
	return 0;
}

static int
reader_child(const char *dir, struct shm *m, int expect_batches)
{
	static uint8_t buf[1 << 20];
	struct rn_batch_limits lim = { RN_BATCH_V_REPLICA, 0 };
	struct rn_log_config cfg = lf_small_config();
	struct rn_log *log;
	int64_t off = 0;
	int seen = 0;
	double t0 = now_s();

	if (rn_log_open(dir, &cfg, &m->sh, NULL, &log) != 0)
		return 2;
	while (seen < expect_batches) {
		struct rn_log_slice sl;
		int rc = rn_log_read(log, off, 8192, -1, &sl);
		size_t p = 0, len;

		if (now_s() - t0 > 60)
			return 3;
		if (rc < 0)
			return 4;
		if (sl.len == 0) {
			sched_yield();
			continue;
		}
		if (pread(sl.fd, buf, (size_t)sl.len, sl.file_pos) != sl.len)
			return 5;
		len = (size_t)sl.len;
		rn_log_slice_release(log, &sl);
		while (p < len) {
			struct rn_batch_header h;
			size_t sz;

			rn_batch_parse_header(buf + p, &h);
			sz = rn_batch_total_size(&h);
			if (p + sz > len || h.base_offset != off ||
			    rn_batch_validate(buf + p, sz, &lim, NULL) != 0)
				return 6;
			off = rn_batch_last_offset(&h) + 1;
			seen++;
			p += sz;
		}
	}
	rn_log_close(log);
	return 0;
}

static int
wait_child(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void
test_processes(void)
{
	char dir[300];
	struct shm *m = shm_new();
	struct rn_log_config cfg = lf_small_config();
	struct rn_log *log;
	pid_t pids[3];
	int per_writer = 400, rc[3];
	int64_t nb;

	snprintf(dir, sizeof(dir), "%s/procs-0", root);
	cfg.segment_bytes = 16 * 1024;
	shm_lock(m);
	is_int(rn_log_open(dir, &cfg, &m->sh, NULL, &log), 0, "parent recovers the shared state");
	pthread_mutex_unlock(&m->mu);
	for (int i = 0; i < 3; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(i < 2 ? writer_child(dir, m, i, per_writer) :
			    reader_child(dir, m, 2 * per_writer));
	}
	for (int i = 0; i < 3; i++)
		rc[i] = wait_child(pids[i]);
	is_int(rc[0] * 100 + rc[1], 0, "two writer processes appended alternately");
	is_int(rc[2], 0, "reader process saw every batch in order, each valid");
	is_int(lf_check_all(log, 0, 65536, &nb, NULL), rn_log_end_offset(log), "parent reads the whole log");
	is_int(nb, 2 * per_writer, "all batches present");
	ok(rn_log_segment_count(log) > 10, "segments rolled by both writers (%d)", rn_log_segment_count(log));

	/* A writer dies after writing bytes, before publishing them. */
	{
		int64_t leo = rn_log_end_offset(log), asize;
		struct rn_append_info info;
		pid_t pid;
		size_t n;

		pid = fork();
		if (pid == 0) {
			struct rn_log *cl;
			char path[512];
			int fd;

			if (rn_log_open(dir, &cfg, &m->sh, NULL, &cl) != 0)
				_exit(2);
			shm_lock(m);
			n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 3, 300, 1000, 4242);
			rn_batch_assign(lf_pbuf, n, leo, 1, -1, 0);
			seg_path(path, sizeof(path), dir, atomic_load(&m->sh.active_base_offset), ".log");
			fd = open(path, O_WRONLY);
			if (pwrite(fd, lf_pbuf, n, atomic_load(&m->sh.active_size)) < 0)
				bail("I/O failed: line %d", __LINE__);
			if (pwrite(fd, lf_pbuf, n / 2, atomic_load(&m->sh.active_size) + (off_t)n) < 0)
				bail("I/O failed: line %d", __LINE__);
			raise(SIGKILL);
			_exit(0);
		}
		is_int(wait_child(pid), 128 + SIGKILL, "writer SIGKILLed holding the lock");
		asize = atomic_load(&m->sh.active_size);
		ok(file_size(dir, atomic_load(&m->sh.active_base_offset), ".log") > asize,
		    "unpublished bytes on disk");
		{
			struct rn_log_slice sl;

			is_int(rn_log_read(log, leo, 1 << 20, -1, &sl), 0, "readers do not see them");
			is_int(sl.len, 0, "... nothing past the log end");
		}
		is_int(shm_lock(m), 1, "next locker learns the owner died");
		is_int(rn_log_repair(log), 0, "rn_log_repair");
		is_int(file_size(dir, atomic_load(&m->sh.active_base_offset), ".log"), asize,
		    "active segment cut back to the committed size");
		n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 2, 100, 1000, 1);
		is_int(rn_log_append(log, lf_pbuf, n, 1, 5000, &info), 0, "append after repair");
		is_int(info.base_offset, leo, "offsets continue contiguously");
		pthread_mutex_unlock(&m->mu);
		is_int(lf_check_all(log, 0, 65536, NULL, NULL), leo + 2, "log reads contiguously");
	}

	/* Dies in the middle of publishing (sizes half stored). */
	{
		int64_t leo = rn_log_end_offset(log), asize = atomic_load(&m->sh.active_size);
		struct rn_append_info info;
		pid_t pid = fork();
		size_t n;

		if (pid == 0) {
			char path[512];
			int fd;

			shm_lock(m);
			n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 3, 300, 1000, 4343);
			rn_batch_assign(lf_pbuf, n, leo, 1, -1, 0);
			seg_path(path, sizeof(path), dir, atomic_load(&m->sh.active_base_offset), ".log");
			fd = open(path, O_WRONLY);
			if (pwrite(fd, lf_pbuf, n, asize) < 0)
				bail("I/O failed: line %d", __LINE__);
			atomic_fetch_add(&m->sh.commit_seq, 1);
			atomic_store(&m->sh.active_size, asize + (int64_t)n);
			raise(SIGKILL);
			_exit(0);
		}
		wait_child(pid);
		is_int(shm_lock(m), 1, "owner died mid-publication");
		is_int(rn_log_repair(log), 0, "repair");
		is_int(atomic_load(&m->sh.active_size), asize, "committed size restored");
		is_int(rn_log_end_offset(log), leo, "log end unchanged");
		ok(!(atomic_load(&m->sh.commit_seq) & 1), "commit sequence even again");
		n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 2, 100, 1000, 2);
		rn_log_append(log, lf_pbuf, n, 1, 5000, &info);
		is_int(info.base_offset, leo, "next append contiguous");
		pthread_mutex_unlock(&m->mu);
	}

	/* Dies in the middle of a roll (generation odd, new segment created). */
	{
		int64_t leo = rn_log_end_offset(log);
		int nseg = rn_log_segment_count(log);
		struct rn_append_info info;
		pid_t pid = fork();
		size_t n;

		if (pid == 0) {
			char path[512];

			shm_lock(m);
			atomic_fetch_add(&m->sh.generation, 1);
			seg_path(path, sizeof(path), dir, leo, ".log");
			close(open(path, O_CREAT | O_WRONLY, 0644));
			raise(SIGKILL);
			_exit(0);
		}
		wait_child(pid);
		is_int(shm_lock(m), 1, "owner died mid-roll");
		{
			struct rn_log *l2;

			is_int(rn_log_open(dir, &cfg, &m->sh, NULL, &l2), 0,
			    "a new handle opens while the generation is stuck odd");
			rn_log_close(l2);
		}
		is_int(rn_log_repair(log), 0, "repair");
		ok(!(atomic_load(&m->sh.generation) & 1), "generation even again");
		is_int(file_size(dir, leo, ".log"), -1, "half-made segment removed");
		is_int(rn_log_segment_count(log), nseg, "segment list as before");
		n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 2, 100, 1000, 3);
		is_int(rn_log_append(log, lf_pbuf, n, 1, 5000, &info), 0, "append");
		is_int(info.base_offset, leo, "contiguous");
		pthread_mutex_unlock(&m->mu);
		is_int(lf_check_all(log, 0, 65536, NULL, NULL), leo + 2, "whole log valid");
	}
	/* Dies in the middle of a truncation: the new log end was published. */
	{
		int64_t bases[256], target;
		int nseg = rn_log_segment_bases(log, bases, 256);
		struct rn_append_info info;
		pid_t pid;
		size_t n;

		target = bases[nseg - 3];
		pid = fork();
		if (pid == 0) {
			shm_lock(m);
			atomic_fetch_add(&m->sh.generation, 1);
			atomic_store(&m->sh.log_end_offset, target);
			raise(SIGKILL);
			_exit(0);
		}
		wait_child(pid);
		is_int(shm_lock(m), 1, "owner died mid-truncation");
		is_int(rn_log_repair(log), 0, "repair");
		is_int(rn_log_end_offset(log), target, "truncation completed at the published end");
		is_int(rn_log_segment_count(log), nseg - 2, "segments above it removed");
		n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 2, 100, 1000, 4);
		rn_log_append(log, lf_pbuf, n, 1, 5000, &info);
		is_int(info.base_offset, target, "appends continue there");
		pthread_mutex_unlock(&m->mu);
		is_int(lf_check_all(log, 0, 65536, NULL, NULL), target + 2, "whole log valid");
	}
	rn_log_close(log);
	munmap(m, sizeof(*m));
}

/* One writer, one process running retention, one reader chasing both. */
static int
retention_child(const char *dir, struct shm *m)
{
	struct rn_log_config cfg = lf_small_config();
	struct rn_log *log;
	int deleted = 0;

	cfg.segment_bytes = 8 * 1024;
	cfg.retention_bytes = 64 * 1024;
	if (rn_log_open(dir, &cfg, &m->sh, NULL, &log) != 0)
		return 2;
	while (atomic_load(&m->turn) >= 0) {
		int rc;

		if (shm_lock(m))
			rn_log_repair(log);
		rc = rn_log_retention(log, 0);
		pthread_mutex_unlock(&m->mu);
		if (rc < 0)
			return 3;
		deleted += rc;
		usleep(200);
	}
	rn_log_close(log);
	return deleted > 0 ? 0 : 4;
}

static int
chasing_reader(const char *dir, struct shm *m)
{
	static uint8_t buf[1 << 20];
	struct rn_batch_limits lim = { RN_BATCH_V_REPLICA, 0 };
	struct rn_log_config cfg = lf_small_config();
	struct rn_log *log;
	int64_t off = 0;
	int skips = 0;
	double t0 = now_s();

	if (rn_log_open(dir, &cfg, &m->sh, NULL, &log) != 0)
		return 2;
	for (;;) {
		struct rn_log_slice sl;
		int rc = rn_log_read(log, off, 4096, -1, &sl);
		size_t p = 0, len;

		if (now_s() - t0 > 60)
			return 3;
		if (rc == -ERANGE && off < rn_log_start_offset(log)) {
			off = rn_log_start_offset(log);	/* retention overtook us */
			skips++;
			continue;
		}
		if (rc == -EAGAIN) {
			/* segments changed under each try: a reader retries */
			sched_yield();
			continue;
		}
		if (rc < 0) {
			diag("chasing reader: read(%lld) = %d (start %lld)", (long long)off, rc,
			    (long long)rn_log_start_offset(log));
			return 4;
		}
		if (sl.len == 0) {
			if (atomic_load(&m->turn) < 0 && off == rn_log_end_offset(log))
				break;
			sched_yield();
			continue;
		}
		len = (size_t)sl.len;
		if (pread(sl.fd, buf, len, sl.file_pos) != (ssize_t)len) {
			/* the segment was deleted and cut under us: retry */
			rn_log_slice_release(log, &sl);
			continue;
		}
		rn_log_slice_release(log, &sl);
		while (p < len) {
			struct rn_batch_header h;
			size_t sz;

			rn_batch_parse_header(buf + p, &h);
			sz = rn_batch_total_size(&h);
			if (p + sz > len || h.base_offset != off ||
			    rn_batch_validate(buf + p, sz, &lim, NULL) != 0)
				return 6;
			off = rn_batch_last_offset(&h) + 1;
			p += sz;
		}
	}
	rn_log_close(log);
	return 0;
}

static void
test_concurrent_retention(void)
{
	char dir[300];
	struct shm *m = shm_new();
	struct rn_log_config cfg = lf_small_config();
	struct rn_log *log;
	pid_t ret, rd;
	int bad = 0;

	snprintf(dir, sizeof(dir), "%s/chase-0", root);
	cfg.segment_bytes = 8 * 1024;
	rn_log_open(dir, &cfg, &m->sh, NULL, &log);
	ret = fork();
	if (ret == 0)
		_exit(retention_child(dir, m));
	rd = fork();
	if (rd == 0)
		_exit(chasing_reader(dir, m));
	for (int i = 0; i < 3000; i++) {
		size_t n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 1 + i % 4, 20 + (i * 53) % 700, 1000,
		    (uint32_t)i);
		struct rn_append_info info;

		if (shm_lock(m))
			rn_log_repair(log);
		if (rn_log_append(log, lf_pbuf, n, 1, 5000, &info) != 0)
			bad++;
		pthread_mutex_unlock(&m->mu);
	}
	atomic_store(&m->turn, -1);
	is_int(bad, 0, "writer appended 3000 batches while retention ran");
	is_int(wait_child(ret), 0, "retention process deleted segments concurrently");
	is_int(wait_child(rd), 0, "reader kept up: contiguous, valid batches, skipping deleted ranges");
	ok(rn_log_segment_count(log) > 1 && rn_log_start_offset(log) > 0, "old data was deleted");
	rn_log_close(log);
	cfg.retention_bytes = 64 * 1024;
	rn_log_open(dir, &cfg, &m->sh, NULL, &log);
	rn_log_retention(log, 0);
	ok(rn_log_size_bytes(log) <= 64 * 1024 + 8 * 1024, "log kept within retention.bytes + a segment");
	is_int(lf_check_all(log, rn_log_start_offset(log), 65536, NULL, NULL), rn_log_end_offset(log),
	    "what remains reads");
	rn_log_close(log);
	munmap(m, sizeof(*m));
}

static void
test_throughput(void)
{
	char dir[300];
	struct rn_log_config cfg = rn_log_config_default();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log *log;
	struct rn_append_info info;
	size_t n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), 100, 600, 1000, 5);
	int64_t total = 0, reads = 0;
	double t0, t;
	int bad = 0;

	snprintf(dir, sizeof(dir), "%s/perf-0", root);
	cfg.segment_bytes = 64 << 20;
	rn_log_open(dir, &cfg, sh, NULL, &log);
	t0 = now_s();
	while (total < (128 << 20)) {
		if (rn_log_append(log, lf_pbuf, n, 1, 5000, &info) != 0)
			bad++;
		total += (int64_t)n;
	}
	t = now_s() - t0;
	diag("append: %.0f MB/s, %.0f batches/s (%.0f records/s), %d segments",
	    total / t / 1e6, total / (double)n / t, total / (double)n * 100 / t,
	    rn_log_segment_count(log));
	is_int(bad, 0, "128 MiB of %zu-byte batches appended", n);
	t0 = now_s();
	for (int64_t o = 0; now_s() - t0 < 0.3; o = (o + 7919) % rn_log_end_offset(log)) {
		struct rn_log_slice sl;

		if (rn_log_read(log, o, 1 << 20, -1, &sl) != 0 || sl.len <= 0)
			bad++;
		rn_log_slice_release(log, &sl);
		reads++;
	}
	t = now_s() - t0;
	diag("read lookups: %.0f/s", reads / t);
	is_int(bad, 0, "random 1 MiB reads");
	rn_log_close(log);
	lf_rm_rf(dir);
	free(sh);
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(root, sizeof(root), "%s/rn-storage-XXXXXX", tmp ? tmp : "/tmp");
	if (mkdtemp(root) == NULL)
		bail("mkdtemp");
	test_basic();
	test_tail_open();
	test_time();
	test_truncate_delete();
	test_recovery();
	test_epochs();
	test_flush_and_replica();
	test_processes();
	test_concurrent_retention();
	if (getenv("RN_SKIP_PERF") == NULL)
		test_throughput();
	lf_rm_rf(root);
	return done_testing();
}
