/* The crash-safe replacement of segments by a cleaned one (see swap.h). */
#include "storage/swap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/batch.h"
#include "storage/segment.h"

static const char *const idx_sfx[] = { ".index", ".timeindex" };

void
rn_swap_name(char *buf, size_t len, int64_t base, const char *suffix,
    const char *state)
{
	snprintf(buf, len, "%020lld%s%s", (long long)base, suffix, state);
}

void
rn_swap_crash_point(const char *step)
{
	const char *path = getenv("RUNNEL_CLEANER_CRASH_FILE");
	char want[64];
	ssize_t n;
	int fd;

	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	n = read(fd, want, sizeof(want) - 1);
	close(fd);
	if (n <= 0)
		return;
	want[n] = '\0';
	want[strcspn(want, "\n")] = '\0';
	if (strcmp(want, step) != 0)
		return;
	unlink(path);
	raise(SIGKILL);
}

void
rn_swap_discard(int dirfd, int64_t base)
{
	static const char *const sfx[] = { ".log", ".index", ".timeindex" };
	char name[64];

	for (size_t i = 0; i < 3; i++) {
		rn_swap_name(name, sizeof(name), base, sfx[i], RN_SWAP_CLEANED);
		unlinkat(dirfd, name, 0);
	}
}

static int
rename_state(int dirfd, int64_t base, const char *sfx, const char *from,
    const char *to)
{
	char a[64], b[64];

	rn_swap_name(a, sizeof(a), base, sfx, from);
	rn_swap_name(b, sizeof(b), base, sfx, to);
	return renameat(dirfd, a, dirfd, b) < 0 ? -errno : 0;
}

int
rn_swap_promote(int dirfd, int64_t base)
{
	int rc;

	for (size_t i = 0; i < 2; i++)
		if ((rc = rename_state(dirfd, base, idx_sfx[i], RN_SWAP_CLEANED,
		    RN_SWAP_SWAP)) < 0)
			return rc;
	rn_swap_crash_point("promote");
	if ((rc = rename_state(dirfd, base, ".log", RN_SWAP_CLEANED,
	    RN_SWAP_SWAP)) < 0)
		return rc;
	return fsync(dirfd) < 0 ? -errno : 0;
}

/* The .swap indexes become the segment's (or its stale ones go). */
static int
install_indexes(int dirfd, int64_t base)
{
	for (size_t i = 0; i < 2; i++) {
		int rc = rename_state(dirfd, base, idx_sfx[i], RN_SWAP_SWAP, "");

		if (rc == -ENOENT) {
			char name[64];

			/* rebuilt from the data by the log's recovery */
			rn_swap_name(name, sizeof(name), base, idx_sfx[i], "");
			if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
				return -errno;
		} else if (rc < 0) {
			return rc;
		}
	}
	return 0;
}

int
rn_swap_install(int dirfd, int64_t base, const int64_t *olds, int n)
{
	int rc;

	for (int i = n - 1; i > 0; i--)
		if ((rc = rn_segment_unlink(dirfd, olds[i])) < 0)
			return rc;
	rn_swap_crash_point("unlink");
	if ((rc = install_indexes(dirfd, base)) < 0)
		return rc;
	rn_swap_crash_point("indexes");
	if ((rc = rename_state(dirfd, base, ".log", RN_SWAP_SWAP, "")) < 0)
		return rc;
	return fsync(dirfd) < 0 ? -errno : 0;
}

/* Last offset + 1 of the data in a .log.swap, or -errno. */
static int64_t
swap_end(int dirfd, int64_t base)
{
	uint8_t hb[RN_BATCH_HEADER_SIZE];
	struct rn_batch_header h;
	int64_t pos = 0, end = base;
	char name[64];
	int fd;

	rn_swap_name(name, sizeof(name), base, ".log", RN_SWAP_SWAP);
	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	while (rn_pread_full(fd, hb, sizeof(hb), pos) == (ssize_t)sizeof(hb)) {
		rn_batch_parse_header(hb, &h);
		if (h.magic != RN_BATCH_MAGIC_V2 ||
		    h.batch_length < RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD ||
		    h.base_offset < end)
			break;
		end = rn_batch_last_offset(&h) + 1;
		pos += (int64_t)rn_batch_total_size(&h);
	}
	close(fd);
	return end;
}

/* Finish the swap of base: the old segments it covers go, it takes over. */
static int
finish_swap(int dirfd, int64_t base, const int64_t *logs, int nlogs)
{
	int64_t end = swap_end(dirfd, base);
	int rc;

	if (end < 0)
		return (int)end;
	for (int i = nlogs - 1; i >= 0; i--)
		if (logs[i] > base && logs[i] < end &&
		    (rc = rn_segment_unlink(dirfd, logs[i])) < 0)
			return rc;
	if ((rc = install_indexes(dirfd, base)) < 0)
		return rc;
	if ((rc = rename_state(dirfd, base, ".log", RN_SWAP_SWAP, "")) < 0)
		return rc;
	return fsync(dirfd) < 0 ? -errno : 1;
}

struct swap_scan {
	int64_t *logs, *swaps;
	int nlogs, nswaps, cap_logs, cap_swaps;
};

static int
push(int64_t **v, int *n, int *cap, int64_t x)
{
	if (*n == *cap) {
		int ncap = *cap ? *cap * 2 : 16;
		int64_t *nv = realloc(*v, (size_t)ncap * sizeof(**v));

		if (nv == NULL)
			return -ENOMEM;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = x;
	return 0;
}

/* .log bases and .log.swap bases; .cleaned files are removed on the way. */
static int
scan_dir(int dirfd, struct swap_scan *s)
{
	struct dirent *de;
	DIR *d = rn_opendirat(dirfd);
	int rc = 0;

	if (d == NULL)
		return -errno;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		int64_t b;
		size_t l = strlen(de->d_name);

		if ((b = rn_segment_parse_name(de->d_name, ".log")) >= 0)
			rc = push(&s->logs, &s->nlogs, &s->cap_logs, b);
		else if ((b = rn_segment_parse_name(de->d_name, ".log.swap")) >= 0)
			rc = push(&s->swaps, &s->nswaps, &s->cap_swaps, b);
		else if (l > 8 && strcmp(de->d_name + l - 8, RN_SWAP_CLEANED) == 0)
			unlinkat(dirfd, de->d_name, 0);
	}
	closedir(d);
	return rc;
}

/* Drop .swap indexes whose .log.swap does not exist. */
static void
drop_orphan_index_swaps(int dirfd)
{
	char name[64];
	struct dirent *de;
	DIR *d = rn_opendirat(dirfd);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		for (size_t i = 0; i < 2; i++) {
			char sfx[32];
			int64_t b;

			snprintf(sfx, sizeof(sfx), "%s%s", idx_sfx[i], RN_SWAP_SWAP);
			if ((b = rn_segment_parse_name(de->d_name, sfx)) < 0)
				continue;
			rn_swap_name(name, sizeof(name), b, ".log", RN_SWAP_SWAP);
			if (faccessat(dirfd, name, F_OK, 0) < 0)
				unlinkat(dirfd, de->d_name, 0);
		}
	}
	closedir(d);
}

void
rn_swap_drop_leftovers(int dirfd)
{
	struct swap_scan s;

	memset(&s, 0, sizeof(s));
	drop_orphan_index_swaps(dirfd);
	scan_dir(dirfd, &s);
	free(s.logs);
	free(s.swaps);
}

static int
cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int
rn_swap_recover(int dirfd)
{
	struct swap_scan s;
	int rc, done = 0;

	memset(&s, 0, sizeof(s));
	drop_orphan_index_swaps(dirfd);
	rc = scan_dir(dirfd, &s);
	if (rc == 0 && s.nlogs > 1)
		qsort(s.logs, (size_t)s.nlogs, sizeof(*s.logs), cmp64);
	for (int i = 0; rc >= 0 && i < s.nswaps; i++) {
		rc = finish_swap(dirfd, s.swaps[i], s.logs, s.nlogs);
		done += rc > 0;
	}
	free(s.logs);
	free(s.swaps);
	return rc < 0 ? rc : done;
}
