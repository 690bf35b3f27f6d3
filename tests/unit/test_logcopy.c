/*
 * Copying a log into another directory while it is written
 * (storage/logcopy.c): steps with a small budget between appends, rolls,
 * retention and a truncation; the last step; then the copy is the same
 * log, byte for byte, under the same shared state and recovered alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "storage/log.h"
#include "storage/logcopy.h"
#include "storage/bytes.h"
#include "storage/checkpoint.h"
#include "storage/crc32c.h"
#include "storage/segment.h"
#include "tests/lib/logfixture.h"
#include "tests/lib/tap.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[256];

/* Are the two files the same bytes (len < 0: whole, else the first len)? */
static int
same_file(const char *a, const char *b, off_t len)
{
	static uint8_t x[1 << 16], y[1 << 16];
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY), same = 1;
	struct stat sa, sb;
	off_t off = 0;

	if (fa < 0 || fb < 0 || fstat(fa, &sa) < 0 || fstat(fb, &sb) < 0) {
		same = 0;
		goto out;
	}
	if (len < 0) {
		if (sa.st_size != sb.st_size) {
			same = 0;
			goto out;
		}
		len = sa.st_size;
	} else if (sb.st_size != len || sa.st_size < len) {
		same = 0;
		goto out;
	}
	while (off < len && same) {
		size_t n = (size_t)(len - off) > sizeof(x) ? sizeof(x) :
		    (size_t)(len - off);

		if (pread(fa, x, n, off) != (ssize_t)n ||
		    pread(fb, y, n, off) != (ssize_t)n || memcmp(x, y, n) != 0)
			same = 0;
		off += (off_t)n;
	}
out:
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return same;
}

/* Every segment of the copy is the source's, and nothing else is there. */
static int
copy_matches(struct rn_log *log, const char *a, const char *b, int last)
{
	struct rn_log_view v;
	int64_t bases[512], sizes[512];
	int n = rn_log_segments(log, bases, sizes, 512, &v), i, files = 0;
	DIR *d;
	struct dirent *de;

	if (n <= 0 || n > 512)
		return 0;
	for (i = 0; i < n; i++) {
		char pa[512], pb[512], name[RN_SEGMENT_NAME_MAX];
		int active = i == n - 1;
		static const char *const sfx[] = { ".log", ".index", ".timeindex" };

		for (int k = 0; k < 3; k++) {
			off_t len = -1;

			if (active && !last)
				break; /* the last step copies the rest */
			rn_segment_name(name, bases[i], sfx[k]);
			snprintf(pa, sizeof(pa), "%s/%s", a, name);
			snprintf(pb, sizeof(pb), "%s/%s", b, name);
			if (active)
				len = k == 0 ? v.asize : k == 1 ?
				    (off_t)v.oc * 8 : (off_t)v.tc * 12;
			if (!same_file(pa, pb, len)) {
				diag("%s differs", name);
				return 0;
			}
			files++;
		}
		if (active && !last)
			files++; /* its .log only, partly */
	}
	if ((d = opendir(b)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (rn_segment_parse_name(de->d_name, ".log") >= 0 ||
		    rn_segment_parse_name(de->d_name, ".index") >= 0 ||
		    rn_segment_parse_name(de->d_name, ".timeindex") >= 0)
			files--;

	closedir(d);
	if (files != 0)
		diag("%d segment files too many or missing", -files);
	return files == 0;
}

static int
step_until(struct rn_logcopy *lc, struct rn_log *log, uint64_t trunc,
    int64_t budget, int max_steps)
{
	int rc = 0, i;

	for (i = 0; i < max_steps && (rc = rn_logcopy_step(lc, log, trunc,
	    budget, 0)) == 0; i++)
		;
	return rc;
}

static void
test_copy(void)
{
	struct rn_log_config cfg = lf_small_config();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log_shared *sh2 = calloc(1, sizeof(*sh2));
	struct rn_log *log, *copy, *alone;
	struct rn_logcopy lc;
	char a[300], b[300];
	int64_t nb1 = 0, nb2 = -1, nb3 = 0, end;
	uint32_t d1 = 0, d2 = 1, d3 = 0;
	uint64_t trunc = 0;
	int rolls = 0, rc, i, dfd;

	snprintf(a, sizeof(a), "%s/a", root);
	snprintf(b, sizeof(b), "%s/b", root);
	ok(rn_log_open(a, &cfg, sh, NULL, &log) == 0 &&
	    lf_append_varied(log, 300, 1, 1000, 1000, &rolls) == 0,
	    "a log of 300 batches");
	ok(rolls >= 3, "over %d segments", rolls + 1);
	mkdir(b, 0755);
	dfd = open(b, O_RDONLY | O_DIRECTORY);
	/* a leftover of an earlier copy is wiped */
	{
		char junk[400];

		snprintf(junk, sizeof(junk), "%s/00000000000000000007.log", b);
		close(open(junk, O_WRONLY | O_CREAT, 0644));
	}
	rn_logcopy_init(&lc, dfd);
	rc = rn_logcopy_step(&lc, log, trunc, 50 * 1024, 0);
	ok(rc == 0 && lc.bytes == 50 * 1024, "a step copies its budget (%lld)",
	    (long long)lc.bytes);
	/* appends (and rolls) between steps */
	for (i = 0; i < 20; i++) {
		(void)rn_logcopy_step(&lc, log, trunc, 30 * 1024, 0);
		lf_append_varied(log, 10, 1000 + (uint32_t)i * 10, 1000, 1000,
		    NULL);
	}
	/* retention drops the oldest segments under the copy */
	end = rn_log_delete_records_before(log, rn_log_end_offset(log) / 3);
	ok(end > 0 && rn_log_segment_count(log) > 1,
	    "DeleteRecords moved the log start to %lld", (long long)end);
	rc = step_until(&lc, log, trunc, 40 * 1024, 10000);
	ok(rc == 1, "the copy catches up");
	ok(copy_matches(log, a, b, 0), "the copy is the source's segments");
	/* a truncation: what was not sealed is copied again */
	lf_append_varied(log, 30, 5000, 1000, 1000, NULL);
	(void)rn_logcopy_step(&lc, log, trunc, 1 << 30, 0);
	trunc++;
	ok(rn_log_truncate_to(log, rn_log_end_offset(log) - 50) == 0,
	    "the source is truncated");
	lf_append_varied(log, 7, 7000, 1000, 1000, NULL);
	ok(rn_logcopy_finish(&lc, log, trunc, 1 << 30) == -ESTALE,
	    "the last step refuses a copy the source moved under");
	ok(step_until(&lc, log, trunc, 40 * 1024, 10000) == 1,
	    "it catches up again");
	lf_append_varied(log, 40, 8000, 1000, 1000, NULL);
	ok(rn_logcopy_finish(&lc, log, trunc, 100) == -EAGAIN,
	    "more than max bytes behind: not the last step yet");
	ok(step_until(&lc, log, trunc, 40 * 1024, 10000) == 1,
	    "caught up");
	lf_append_varied(log, 3, 9000, 1000, 1000, NULL);
	ok(rn_logcopy_finish(&lc, log, trunc, 1 << 20) == 0,
	    "the last step (under the lock) finishes the copy");
	ok(copy_matches(log, a, b, 1), "the copy is the source, byte for byte "
	    "(the active segment's committed bytes and index entries)");
	ok(lc.end_offset == rn_log_end_offset(log), "it holds every offset");
	rn_logcopy_free(&lc);

	/* the copy under the same shared state, as the other processes
	 * reopen it after a swap */
	ok(lf_check_all(log, rn_log_start_offset(log), 64 * 1024, &nb1, &d1) ==
	    rn_log_end_offset(log), "the source reads whole");
	ok(rn_log_open(b, &cfg, sh, NULL, &copy) == 0, "the copy opens over "
	    "the same shared state");
	ok(lf_check_all(copy, rn_log_start_offset(copy), 64 * 1024, &nb2, &d2) ==
	    rn_log_end_offset(log) && nb2 == nb1 && d2 == d1,
	    "it reads the same batches");
	ok(lf_append_varied(copy, 50, 11000, 1000, 1000, NULL) == 0,
	    "and takes appends, rolls included");
	/* and recovered alone, as after a crash */
	ok(rn_log_open(b, &cfg, sh2, NULL, &alone) == 0 &&
	    rn_log_end_offset(alone) == rn_log_end_offset(copy) &&
	    rn_log_start_offset(alone) <= rn_log_start_offset(copy),
	    "recovered from disk alone: the same log end");
	ok(lf_check_all(alone, rn_log_start_offset(copy), 64 * 1024, &nb3, &d3) ==
	    rn_log_end_offset(copy), "every batch valid");
	rn_log_close(alone);
	rn_log_close(copy);
	rn_log_close(log);
	free(sh);
	free(sh2);
}

/* An empty log (a replica just created) copies to an empty log. */
static void
test_copy_empty(void)
{
	struct rn_log_config cfg = lf_small_config();
	struct rn_log_shared *sh = calloc(1, sizeof(*sh));
	struct rn_log *log, *copy;
	struct rn_logcopy lc;
	char a[300], b[300], seg[400];

	snprintf(a, sizeof(a), "%s/ea", root);
	snprintf(b, sizeof(b), "%s/eb", root);
	mkdir(b, 0755);
	ok(rn_log_open(a, &cfg, sh, NULL, &log) == 0, "an empty log");
	rn_logcopy_init(&lc, open(b, O_RDONLY | O_DIRECTORY));
	ok(rn_logcopy_step(&lc, log, 0, 1 << 20, 0) == 1 &&
	    rn_logcopy_finish(&lc, log, 0, 1 << 20) == 0, "copied at once");
	rn_logcopy_free(&lc);
	snprintf(seg, sizeof(seg), "%s/00000000000000000000.log", b);
	ok(access(seg, F_OK) == 0, "its empty segment is there");
	ok(rn_log_open(b, &cfg, sh, NULL, &copy) == 0 &&
	    lf_append_varied(copy, 5, 77, 1000, 1000, NULL) == 0 &&
	    rn_log_end_offset(copy) > 0, "the copy takes appends");
	rn_log_close(copy);
	rn_log_close(log);
	free(sh);
}

static void
test_copy_range(void)
{
	char a[300], b[300];
	uint8_t *buf = NULL, data[5000];
	bool no_cfr = true, no_sf = true;
	int fa, fb;
	ssize_t n;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)lf_mix((uint32_t)i);
	snprintf(a, sizeof(a), "%s/ra", root);
	snprintf(b, sizeof(b), "%s/rb", root);
	fa = open(a, O_RDWR | O_CREAT, 0644);
	fb = open(b, O_RDWR | O_CREAT, 0644);
	(void)!write(fa, data, sizeof(data));
	/* the last way: through the buffer */
	n = rn_copy_range(fa, 1000, fb, 10, 3000, &no_cfr, &no_sf, &buf);
	ok(n == 3000 && same_file(a, a, -1), "through a buffer: %zd bytes", n);
	{
		uint8_t got[3000];

		ok(pread(fb, got, 3000, 10) == 3000 &&
		    memcmp(got, data + 1000, 3000) == 0, "at the offsets asked");
	}
	no_sf = false;
	n = rn_copy_range(fa, 4000, fb, 3010, 5000, &no_cfr, &no_sf, &buf);
	ok(n == 1000, "sendfile: short at the source's end (%zd)", n);
	free(buf);
	close(fa);
	close(fb);
}

int
main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(root, sizeof(root), "%s/rn-logcopy-XXXXXX", tmp ? tmp : "/tmp");
	if (mkdtemp(root) == NULL)
		bail("mkdtemp");
	test_copy();
	test_copy_empty();
	test_copy_range();
	lf_rm_rf(root);
	return done_testing();
}
