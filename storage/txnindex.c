/* Aborted-transaction index files in Kafka's TransactionIndex layout. */
#include "storage/txnindex.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "common/util.h"
#include "storage/bytes.h"
#include "storage/segment.h"

/* Entries read per system call. */
#define READ_ENTRIES 128

void
rn_txnindex_encode(const struct rn_aborted_txn *a, uint8_t *buf)
{
	rn_put_be16(buf, RN_TXNINDEX_VERSION);
	rn_put_be64(buf + 2, (uint64_t)a->producer_id);
	rn_put_be64(buf + 10, (uint64_t)a->first_offset);
	rn_put_be64(buf + 18, (uint64_t)a->last_offset);
	rn_put_be64(buf + 26, (uint64_t)a->last_stable_offset);
}

int
rn_txnindex_decode(const uint8_t *buf, struct rn_aborted_txn *a)
{
	if ((int16_t)rn_get_be16(buf) != RN_TXNINDEX_VERSION)
		return -EBADMSG;
	a->producer_id = (int64_t)rn_get_be64(buf + 2);
	a->first_offset = (int64_t)rn_get_be64(buf + 10);
	a->last_offset = (int64_t)rn_get_be64(buf + 18);
	a->last_stable_offset = (int64_t)rn_get_be64(buf + 26);
	return 0;
}

static int
open_index(int dirfd, int64_t base, int flags)
{
	char name[RN_SEGMENT_NAME_MAX];

	rn_segment_name(name, base, RN_TXNINDEX_SUFFIX);
	return openat(dirfd, name, flags | O_CLOEXEC, 0644);
}

int
rn_txnindex_append(int dirfd, int64_t base, const struct rn_aborted_txn *a)
{
	uint8_t buf[RN_TXNINDEX_ENTRY];
	off_t end;
	ssize_t w;
	int fd, rc = 0;

	if ((fd = open_index(dirfd, base, O_RDWR | O_CREAT)) < 0)
		return -errno;
	/* past the last whole entry: a torn one is written over */
	if ((end = lseek(fd, 0, SEEK_END)) < 0) {
		rc = -errno;
		goto out;
	}
	end -= end % RN_TXNINDEX_ENTRY;
	rn_txnindex_encode(a, buf);
	w = pwrite(fd, buf, sizeof(buf), end);
	if (w != (ssize_t)sizeof(buf))
		rc = w < 0 ? -errno : -EIO;
	else if (ftruncate(fd, end + (off_t)sizeof(buf)) < 0)
		rc = -errno;
out:
	close(fd);
	return rc;
}

/* Walk whole entries; *cut: the position of the first one whose marker is
 * at or after cut_at (-1 to not look), or the end. */
static int
walk(int fd, rn_txnindex_fn fn, void *arg, int64_t cut_at, off_t *cut)
{
	uint8_t buf[READ_ENTRIES * RN_TXNINDEX_ENTRY];
	off_t pos = 0;
	ssize_t r;
	int rc;

	for (;;) {
		size_t i, n;

		r = pread(fd, buf, sizeof(buf), pos);
		if (r < 0)
			return -errno;
		n = (size_t)r / RN_TXNINDEX_ENTRY;
		for (i = 0; i < n; i++) {
			struct rn_aborted_txn a;

			if (rn_txnindex_decode(buf + i * RN_TXNINDEX_ENTRY,
			    &a) != 0)
				return -EBADMSG;
			if (cut_at >= 0 && a.last_offset >= cut_at) {
				*cut = pos + (off_t)(i * RN_TXNINDEX_ENTRY);
				return 0;
			}
			if (fn != NULL && (rc = fn(arg, &a)) != 0)
				return rc;
		}
		pos += (off_t)(n * RN_TXNINDEX_ENTRY);
		if ((size_t)r < sizeof(buf)) {
			if (cut != NULL)
				*cut = pos;
			return 0;
		}
	}
}

int
rn_txnindex_read(int dirfd, int64_t base, rn_txnindex_fn fn, void *arg)
{
	int fd, rc;

	if ((fd = open_index(dirfd, base, O_RDONLY)) < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = walk(fd, fn, arg, -1, NULL);
	close(fd);
	return rc;
}

int
rn_txnindex_sync(int dirfd, int64_t base)
{
	char name[RN_SEGMENT_NAME_MAX];

	rn_segment_name(name, base, RN_TXNINDEX_SUFFIX);
	return rn_fsync_at(dirfd, name);
}

int
rn_txnindex_truncate(int dirfd, int64_t base, int64_t offset)
{
	off_t cut = 0, size;
	int fd, rc;

	if ((fd = open_index(dirfd, base, O_RDWR)) < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = walk(fd, NULL, NULL, offset, &cut);
	if (rc == 0 && (size = lseek(fd, 0, SEEK_END)) >= 0 && size > cut &&
	    ftruncate(fd, cut) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

struct merge {
	int dirfd;
	int64_t base;
	int64_t last;	/* the newest marker in the merged index */
};

static int
last_of(void *arg, const struct rn_aborted_txn *a)
{
	struct merge *m = arg;

	if (a->last_offset > m->last)
		m->last = a->last_offset;
	return 0;
}

static int
merge_one(void *arg, const struct rn_aborted_txn *a)
{
	struct merge *m = arg;

	/* a merge cut short and run again: entries already there stay once */
	if (a->last_offset <= m->last)
		return 0;
	m->last = a->last_offset;
	return rn_txnindex_append(m->dirfd, m->base, a);
}

int
rn_txnindex_merge(int dirfd, const int64_t *olds, int n)
{
	struct merge m = { dirfd, n > 0 ? olds[0] : -1, -1 };
	bool any = false;
	int i, rc;

	if (n < 2)
		return 0;
	if ((rc = rn_txnindex_read(dirfd, olds[0], last_of, &m)) < 0)
		return rc;
	for (i = 1; i < n; i++) {
		char name[RN_SEGMENT_NAME_MAX];

		rn_segment_name(name, olds[i], RN_TXNINDEX_SUFFIX);
		if (faccessat(dirfd, name, F_OK, 0) != 0)
			continue;
		any = true;
		if ((rc = rn_txnindex_read(dirfd, olds[i], merge_one, &m)) < 0)
			return rc;
	}
	return any ? rn_txnindex_sync(dirfd, olds[0]) : 0;
}

void
rn_txnindex_unlink_merged(int dirfd, const int64_t *olds, int n)
{
	int i;

	for (i = 1; i < n; i++) {
		char name[RN_SEGMENT_NAME_MAX];

		rn_segment_name(name, olds[i], RN_TXNINDEX_SUFFIX);
		(void)unlinkat(dirfd, name, 0);
	}
}

struct filter {
	rn_txnindex_fn keep;
	void *arg;
	int fd;
	off_t pos;
	int dropped;
};

static int
filter_one(void *arg, const struct rn_aborted_txn *a)
{
	struct filter *f = arg;
	uint8_t buf[RN_TXNINDEX_ENTRY];

	if (!f->keep(f->arg, a)) {
		f->dropped++;
		return 0;
	}
	rn_txnindex_encode(a, buf);
	if (pwrite(f->fd, buf, sizeof(buf), f->pos) != (ssize_t)sizeof(buf))
		return errno != 0 ? -errno : -EIO;
	f->pos += (off_t)sizeof(buf);
	return 0;
}

int
rn_txnindex_filter(int dirfd, int64_t base, rn_txnindex_fn keep, void *arg)
{
	char name[RN_SEGMENT_NAME_MAX], tmp[RN_SEGMENT_NAME_MAX + 16];
	struct filter f = { keep, arg, -1, 0, 0 };
	int fd, rc;

	rn_segment_name(name, base, RN_TXNINDEX_SUFFIX);
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -errno;
	f.fd = openat(dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (f.fd < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = walk(fd, filter_one, &f, -1, NULL);
	close(fd);
	if (rc == 0 && f.dropped > 0 && fsync(f.fd) < 0)
		rc = -errno;
	close(f.fd);
	if (rc != 0 || f.dropped == 0) {
		(void)unlinkat(dirfd, tmp, 0);
		return rc;
	}
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		rc = -errno;
		(void)unlinkat(dirfd, tmp, 0);
		return rc;
	}
	return fsync(dirfd) < 0 ? -errno : 0;
}
