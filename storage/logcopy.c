/*
 * Copying a log into another directory while it is written (see
 * logcopy.h): the future replica of a move between log dirs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* copy_file_range, sync_file_range */
#endif
#include "storage/logcopy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/checkpoint.h"
#include "storage/index.h"
#include "storage/segment.h"

#define CHUNK (8 << 20)		/* bytes per copy call */
#define BUF_BYTES (1 << 20)	/* the last way's buffer */

ssize_t
rn_copy_range(int in, int64_t ioff, int out, int64_t ooff, size_t len,
    bool *no_cfr, bool *no_sendfile, uint8_t **buf)
{
	ssize_t n;

	if (!*no_cfr) {
		loff_t io = ioff, oo = ooff;

		n = copy_file_range(in, &io, out, &oo, len, 0);
		if (n >= 0)
			return n;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
		    errno != EOPNOTSUPP && errno != EBADF)
			return -errno;
		*no_cfr = true;
	}
	if (!*no_sendfile) {
		off_t io = ioff;

		/* sendfile writes at out's file position */
		if (lseek(out, ooff, SEEK_SET) < 0)
			return -errno;
		n = sendfile(out, in, &io, len);
		if (n >= 0)
			return n;
		if (errno != EINVAL && errno != ENOSYS)
			return -errno;
		*no_sendfile = true;
	}
	if (*buf == NULL && (*buf = malloc(BUF_BYTES)) == NULL)
		return -ENOMEM;
	if (len > BUF_BYTES)
		len = BUF_BYTES;
	n = rn_pread_full(in, *buf, len, ioff);
	if (n <= 0)
		return n;
	return rn_pwrite_full(out, *buf, (size_t)n, ooff) < 0 ? -errno : n;
}

static ssize_t
copy_range(struct rn_logcopy *lc, int in, int64_t ioff, int out,
    int64_t ooff, size_t len)
{
	return rn_copy_range(in, ioff, out, ooff, len, &lc->no_cfr,
	    &lc->no_sendfile, &lc->buf);
}

/* Every file in the copy's directory goes: a copy always starts over. */
static void
wipe(int dirfd)
{
	struct dirent *de;
	DIR *d = rn_opendirat(dirfd);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			(void)unlinkat(dirfd, de->d_name, 0);
	closedir(d);
}

void
rn_logcopy_init(struct rn_logcopy *lc, int dst_dirfd)
{
	memset(lc, 0, sizeof(*lc));
	lc->dst = dst_dirfd;
	lc->in_fd = lc->out_fd = -1;
	lc->io_base = -1;
	if (dst_dirfd >= 0)
		wipe(dst_dirfd);
}

static void
io_close(struct rn_logcopy *lc)
{
	if (lc->in_fd >= 0)
		close(lc->in_fd);
	if (lc->out_fd >= 0)
		close(lc->out_fd);
	lc->in_fd = lc->out_fd = -1;
	lc->io_base = -1;
}

void
rn_logcopy_free(struct rn_logcopy *lc)
{
	io_close(lc);
	if (lc->dst >= 0)
		close(lc->dst);
	lc->dst = -1;
	free(lc->segs);
	free(lc->bases);
	free(lc->sizes);
	free(lc->buf);
	lc->segs = NULL;
	lc->bases = lc->sizes = NULL;
	lc->buf = NULL;
	lc->n = lc->cap = lc->lcap = 0;
}

void
rn_logcopy_discard(struct rn_logcopy *lc)
{
	io_close(lc);
	if (lc->dst >= 0)
		wipe(lc->dst);
}

/* The source's segments and state; lc->bases/sizes hold them. */
static int
list(struct rn_logcopy *lc, struct rn_log *src, struct rn_log_view *v)
{
	for (;;) {
		int n = rn_log_segments(src, lc->bases, lc->sizes, lc->lcap, v);
		int cap;
		int64_t *nb, *ns;

		if (n < 0 || n <= lc->lcap)
			return n;
		cap = n + 16;
		if ((nb = realloc(lc->bases, sizeof(*nb) * (size_t)cap)) ==
		    NULL)
			return -ENOMEM;
		lc->bases = nb;
		if ((ns = realloc(lc->sizes, sizeof(*ns) * (size_t)cap)) ==
		    NULL)
			return -ENOMEM;
		lc->sizes = ns;
		lc->lcap = cap;
	}
}

static int
find(const struct rn_logcopy *lc, int64_t base)
{
	int i;

	for (i = 0; i < lc->n; i++)
		if (lc->segs[i].base == base)
			return i;
	return -1;
}

/* Segment i of the copy goes, files and all. */
static void
drop(struct rn_logcopy *lc, int i)
{
	struct rn_logcopy_seg *s = &lc->segs[i];

	if (lc->io_base == s->base)
		io_close(lc);
	(void)rn_segment_unlink(lc->dst, s->base);
	lc->bytes -= s->copied;
	memmove(s, s + 1, sizeof(*s) * (size_t)(lc->n - i - 1));
	lc->n--;
}

/* The copy's segment for base, added in order when new; NULL: no memory. */
static struct rn_logcopy_seg *
seg_for(struct rn_logcopy *lc, int64_t base)
{
	int i = find(lc, base), k;

	if (i >= 0)
		return &lc->segs[i];
	if (lc->n == lc->cap) {
		int cap = lc->cap ? 2 * lc->cap : 16;
		struct rn_logcopy_seg *ns = realloc(lc->segs,
		    sizeof(*ns) * (size_t)cap);

		if (ns == NULL)
			return NULL;
		lc->segs = ns;
		lc->cap = cap;
	}
	for (k = lc->n; k > 0 && lc->segs[k - 1].base > base; k--)
		;
	memmove(&lc->segs[k + 1], &lc->segs[k],
	    sizeof(*lc->segs) * (size_t)(lc->n - k));
	memset(&lc->segs[k], 0, sizeof(lc->segs[k]));
	lc->segs[k].base = base;
	lc->n++;
	return &lc->segs[k];
}

/*
 * The source's generation (or the truncation count) moved: segments it
 * no longer has go, a file that is not the one copied is copied again,
 * and after a truncation so is every segment that was not sealed.
 */
static void
check(struct rn_logcopy *lc, struct rn_log *src, int n,
    const struct rn_log_view *v, uint64_t trunc)
{
	bool truncated = lc->have_gen && trunc != lc->trunc;
	int i, k;

	for (i = lc->n - 1; i >= 0; i--) {
		struct rn_logcopy_seg *s = &lc->segs[i];
		char name[RN_SEGMENT_NAME_MAX];
		struct stat st;

		for (k = 0; k < n && lc->bases[k] != s->base; k++)
			;
		rn_segment_name(name, s->base, ".log");
		if (k == n || fstatat(rn_log_dirfd(src), name, &st, 0) != 0 ||
		    (s->copied > 0 && (st.st_dev != s->dev ||
		    st.st_ino != s->ino)) ||
		    (s->sealed && (k == n - 1 || lc->sizes[k] != s->copied)) ||
		    (!s->sealed && (truncated || s->copied > lc->sizes[k])))
			drop(lc, i);
	}
	lc->gen = v->gen;
	lc->trunc = trunc;
	lc->have_gen = true;
}

static int
open_io(struct rn_logcopy *lc, struct rn_log *src, struct rn_logcopy_seg *s)
{
	char name[RN_SEGMENT_NAME_MAX];
	struct stat st;

	if (lc->io_base == s->base)
		return 0;
	io_close(lc);
	rn_segment_name(name, s->base, ".log");
	if ((lc->in_fd = openat(rn_log_dirfd(src), name,
	    O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(lc->in_fd, &st) < 0) {
		io_close(lc);
		return -errno;
	}
	if (s->copied == 0) {
		s->dev = st.st_dev;
		s->ino = st.st_ino;
	} else if (st.st_dev != s->dev || st.st_ino != s->ino) {
		io_close(lc);
		/* replaced since: the next check drops it */
		return -ESTALE;
	}
	if ((lc->out_fd = openat(lc->dst, name, O_WRONLY | O_CREAT |
	    O_CLOEXEC, 0644)) < 0) {
		int rc = -errno;

		io_close(lc);
		return rc;
	}
	lc->io_base = s->base;
	return 0;
}

/* Copy s's .log up to target, at most *budget bytes. 0 or -errno. */
static int
copy_log(struct rn_logcopy *lc, struct rn_log *src, struct rn_logcopy_seg *s,
    int64_t target, int64_t *budget)
{
	int rc;

	/* an empty segment is a file too: the log lists its segments by
	 * their .log files */
	if (s->copied == 0 && (rc = open_io(lc, src, s)) < 0)
		return rc;

	while (s->copied < target && *budget > 0) {
		int64_t want = target - s->copied;
		ssize_t got;

		if (want > *budget)
			want = *budget;
		if (want > CHUNK)
			want = CHUNK;
		if ((rc = open_io(lc, src, s)) < 0)
			return rc;
		got = copy_range(lc, lc->in_fd, s->copied, lc->out_fd,
		    s->copied, (size_t)want);
		if (got < 0)
			return (int)got;
		if (got == 0)
			return -ESTALE;	/* shorter than listed */
		/* writeback starts now, so the sync at the end waits less */
		(void)sync_file_range(lc->out_fd, s->copied, got,
		    SYNC_FILE_RANGE_WRITE);
		s->copied += got;
		s->dirty = true;
		lc->bytes += got;
		lc->copied += got;
		*budget -= got;
	}
	return 0;
}

/*
 * Copy the file name whole (len < 0) or its first len bytes, synced. A
 * file the source lacks is not in the copy either. 0 or -errno.
 */
static int
copy_file(struct rn_logcopy *lc, struct rn_log *src, const char *name,
    int64_t len)
{
	int in = openat(rn_log_dirfd(src), name, O_RDONLY | O_CLOEXEC);
	int out, rc = 0;
	int64_t off = 0;
	struct stat st;

	if (in < 0) {
		if (errno != ENOENT)
			return -errno;
		(void)unlinkat(lc->dst, name, 0);
		return 0;
	}
	if (len < 0) {
		if (fstat(in, &st) < 0) {
			rc = -errno;
			close(in);
			return rc;
		}
		len = st.st_size;
	}
	if ((out = openat(lc->dst, name, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0644)) < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	while (off < len) {
		ssize_t got = copy_range(lc, in, off, out, off,
		    (size_t)(len - off > CHUNK ? CHUNK : len - off));

		if (got <= 0) {
			rc = got < 0 ? (int)got : -ESTALE;
			break;
		}
		off += got;
	}
	if (rc == 0 && fdatasync(out) < 0)
		rc = -errno;
	close(out);
	close(in);
	return rc;
}

static int
sync_log(struct rn_logcopy *lc, struct rn_logcopy_seg *s)
{
	char name[RN_SEGMENT_NAME_MAX];
	int fd, rc = 0;

	if (!s->dirty)
		return 0;
	rn_segment_name(name, s->base, ".log");
	if (lc->io_base == s->base)
		fd = dup(lc->out_fd);
	else
		fd = openat(lc->dst, name, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fdatasync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0)
		s->dirty = false;
	return rc;
}

/* A segment below the active one copied whole: its indexes, all synced. */
static int
seal(struct rn_logcopy *lc, struct rn_log *src, struct rn_logcopy_seg *s)
{
	char name[RN_SEGMENT_NAME_MAX];
	int rc;

	rn_segment_name(name, s->base, ".index");
	if ((rc = copy_file(lc, src, name, -1)) < 0)
		return rc;
	rn_segment_name(name, s->base, ".timeindex");
	if ((rc = copy_file(lc, src, name, -1)) < 0)
		return rc;
	rn_segment_name(name, s->base, ".txnindex");
	if ((rc = copy_file(lc, src, name, -1)) < 0)
		return rc;
	if ((rc = sync_log(lc, s)) < 0)
		return rc;
	if (lc->io_base == s->base)
		io_close(lc);
	s->sealed = true;
	return 0;
}

int
rn_logcopy_step(struct rn_logcopy *lc, struct rn_log *src, uint64_t trunc,
    int64_t budget, int64_t near)
{
	struct rn_log_view v;
	struct rn_logcopy_seg *s = NULL;
	int n = list(lc, src, &v), i, rc;
	bool whole = true;

	if (n < 0)
		return n;
	if (n == 0)
		return -ENOENT;
	if (!lc->have_gen || v.gen != lc->gen || trunc != lc->trunc)
		check(lc, src, n, &v, trunc);
	lc->end_offset = lc->bases[0];
	for (i = 0; i < n; i++) {
		bool active = i == n - 1;

		if ((s = seg_for(lc, lc->bases[i])) == NULL)
			return -ENOMEM;
		if (s->sealed) {
			lc->end_offset = active ? lc->bases[i] :
			    lc->bases[i + 1];
			continue;
		}
		if (budget > 0 && (rc = copy_log(lc, src, s, lc->sizes[i],
		    &budget)) < 0)
			return rc == -ESTALE || rc == -ENOENT ? 0 : rc;
		if (!active && s->copied == lc->sizes[i]) {
			if ((rc = seal(lc, src, s)) < 0)
				return rc == -ESTALE ? 0 : rc;
			lc->end_offset = lc->bases[i + 1];
			continue;
		}
		if (!active)
			whole = false;
		if (!whole)
			break;
	}
	if (!whole || i < n)
		return 0;
	if (s->copied == lc->sizes[n - 1])
		lc->end_offset = v.leo;
	return lc->sizes[n - 1] - s->copied <= near ? 1 : 0;
}

int
rn_logcopy_finish(struct rn_logcopy *lc, struct rn_log *src, uint64_t trunc,
    int64_t max)
{
	struct rn_log_view v;
	struct rn_logcopy_seg *s;
	char name[RN_SEGMENT_NAME_MAX];
	int64_t budget;
	int n = list(lc, src, &v), i, rc;

	if (n < 0)
		return n;
	if (n == 0)
		return -ENOENT;
	if (!lc->have_gen || v.gen != lc->gen || trunc != lc->trunc)
		return -ESTALE;
	for (i = 0; i < n - 1; i++)
		if ((i >= lc->n || lc->segs[i].base != lc->bases[i] ||
		    !lc->segs[i].sealed))
			return -EAGAIN;
	if (lc->n > n)
		return -ESTALE;
	if ((s = seg_for(lc, lc->bases[n - 1])) == NULL)
		return -ENOMEM;
	if (v.asize - s->copied > max)
		return -EAGAIN;
	budget = v.asize - s->copied;
	if ((rc = copy_log(lc, src, s, v.asize, &budget)) < 0)
		return rc;
	if ((rc = sync_log(lc, s)) < 0)
		return rc;
	io_close(lc);
	/* the active segment's indexes: the committed entries */
	rn_segment_name(name, s->base, ".index");
	if ((rc = copy_file(lc, src, name,
	    (int64_t)v.oc * RN_OFFSET_INDEX_ENTRY)) < 0)
		return rc;
	rn_segment_name(name, s->base, ".timeindex");
	if ((rc = copy_file(lc, src, name,
	    (int64_t)v.tc * RN_TIME_INDEX_ENTRY)) < 0)
		return rc;
	/* its aborted transactions (written under the same lock) */
	rn_segment_name(name, s->base, ".txnindex");
	if ((rc = copy_file(lc, src, name, -1)) < 0)
		return rc;
	if ((rc = copy_file(lc, src, RN_LEADER_EPOCH_CHECKPOINT, -1)) < 0 ||
	    (rc = copy_file(lc, src, RN_PARTITION_METADATA, -1)) < 0)
		return rc;
	/* the last look before it may replace the log: every segment file
	 * there, with the source's bytes */
	for (i = 0; i < n; i++) {
		struct stat st;

		rn_segment_name(name, lc->bases[i], ".log");
		if (fstatat(lc->dst, name, &st, 0) != 0 ||
		    st.st_size != (i == n - 1 ? v.asize : lc->sizes[i]))
			return -EUCLEAN;
	}
	if (fsync(lc->dst) < 0)
		return -errno;
	lc->end_offset = v.leo;
	return 0;
}
