/* Producer-state snapshot files in Kafka's PidSnapshot format. */
#include "storage/prodsnap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "storage/bytes.h"
#include "storage/crc32c.h"
#include "storage/segment.h"

#define CRC_AT 2
#define ENTRIES_AT 6

void
rn_prodsnap_encode(const struct rn_prodsnap_entry *e, size_t n, uint8_t *buf)
{
	uint8_t *p = buf + RN_PRODSNAP_HEADER;
	size_t i;

	rn_put_be16(buf, RN_PRODSNAP_VERSION);
	rn_put_be32(buf + ENTRIES_AT, (uint32_t)n);
	for (i = 0; i < n; i++, p += RN_PRODSNAP_ENTRY) {
		rn_put_be64(p, (uint64_t)e[i].producer_id);
		rn_put_be16(p + 8, (uint16_t)e[i].epoch);
		rn_put_be32(p + 10, (uint32_t)e[i].last_seq);
		rn_put_be64(p + 14, (uint64_t)e[i].last_offset);
		rn_put_be32(p + 22, (uint32_t)e[i].offset_delta);
		rn_put_be64(p + 26, (uint64_t)e[i].timestamp);
		rn_put_be32(p + 34, (uint32_t)e[i].coordinator_epoch);
		rn_put_be64(p + 38, (uint64_t)e[i].txn_first_offset);
	}
	rn_put_be32(buf + CRC_AT, rn_crc32c(0, buf + ENTRIES_AT,
	    rn_prodsnap_size(n) - ENTRIES_AT));
}

int
rn_prodsnap_decode(const uint8_t *buf, size_t len, rn_prodsnap_fn fn,
    void *arg)
{
	const uint8_t *p = buf + RN_PRODSNAP_HEADER;
	uint32_t n, i;
	int rc;

	if (len < RN_PRODSNAP_HEADER ||
	    (int16_t)rn_get_be16(buf) != RN_PRODSNAP_VERSION)
		return -EBADMSG;
	n = rn_get_be32(buf + ENTRIES_AT);
	/* the count must describe exactly the bytes present */
	if (n > (len - RN_PRODSNAP_HEADER) / RN_PRODSNAP_ENTRY ||
	    rn_prodsnap_size(n) != len ||
	    rn_get_be32(buf + CRC_AT) != rn_crc32c(0, buf + ENTRIES_AT,
	    len - ENTRIES_AT))
		return -EBADMSG;
	for (i = 0; i < n; i++, p += RN_PRODSNAP_ENTRY) {
		struct rn_prodsnap_entry e = {
			.producer_id = (int64_t)rn_get_be64(p),
			.epoch = (int16_t)rn_get_be16(p + 8),
			.last_seq = (int32_t)rn_get_be32(p + 10),
			.last_offset = (int64_t)rn_get_be64(p + 14),
			.offset_delta = (int32_t)rn_get_be32(p + 22),
			.timestamp = (int64_t)rn_get_be64(p + 26),
			.coordinator_epoch = (int32_t)rn_get_be32(p + 34),
			.txn_first_offset = (int64_t)rn_get_be64(p + 38),
		};

		if ((rc = fn(arg, &e)) != 0)
			return rc;
	}
	return 0;
}

static void
snap_name(char *buf, size_t cap, int64_t offset, const char *tail)
{
	snprintf(buf, cap, "%020lld%s%s", (long long)offset,
	    RN_PRODSNAP_SUFFIX, tail);
}

int
rn_prodsnap_write(int dirfd, int64_t offset,
    const struct rn_prodsnap_entry *e, size_t n, int durable)
{
	char tmp[64], name[64];
	size_t len = rn_prodsnap_size(n);
	uint8_t *buf;
	int fd, rc = 0;

	if (len > RN_PRODSNAP_MAX_FILE)
		return -EFBIG;
	if ((buf = malloc(len)) == NULL)
		return -ENOMEM;
	rn_prodsnap_encode(e, n, buf);
	snap_name(tmp, sizeof(tmp), offset, ".tmp");
	snap_name(name, sizeof(name), offset, "");
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		rc = -errno;
	else {
		rc = rn_pwrite_full(fd, buf, len, 0);
		if (rc == 0 && durable && fsync(fd) < 0)
			rc = -errno;
		if (close(fd) < 0 && rc == 0)
			rc = -errno;
	}
	free(buf);
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		rc = -errno;
	if (rc != 0) {
		(void)unlinkat(dirfd, tmp, 0);
		return rc;
	}
	if (durable && fsync(dirfd) < 0)
		return -errno;
	return 0;
}

int
rn_prodsnap_read(int dirfd, int64_t offset, rn_prodsnap_fn fn, void *arg)
{
	char name[64];
	struct stat st;
	uint8_t *buf;
	int fd, rc;

	snap_name(name, sizeof(name), offset, "");
	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (st.st_size < RN_PRODSNAP_HEADER || st.st_size > RN_PRODSNAP_MAX_FILE) {
		close(fd);
		return -EBADMSG;
	}
	if ((buf = malloc((size_t)st.st_size)) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	if (rn_pread_full(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		rc = -EBADMSG;	/* shorter than it said: a torn file */
	else
		rc = rn_prodsnap_decode(buf, (size_t)st.st_size, fn, arg);
	free(buf);
	close(fd);
	return rc;
}

static int
cmp_off(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int
rn_prodsnap_list(int dirfd, int64_t *offsets, int cap)
{
	DIR *d = rn_opendirat(dirfd);
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		int64_t off = rn_segment_parse_name(de->d_name,
		    RN_PRODSNAP_SUFFIX);

		if (off < 0)
			continue;
		if (n < cap)
			offsets[n] = off;
		n++;
	}
	closedir(d);
	qsort(offsets, (size_t)(n < cap ? n : cap), sizeof(*offsets), cmp_off);
	return n;
}

int
rn_prodsnap_sync(int dirfd, int64_t offset)
{
	char name[64];

	snap_name(name, sizeof(name), offset, "");
	return rn_fsync_at(dirfd, name);
}

int
rn_prodsnap_remove(int dirfd, int64_t offset)
{
	char name[64];

	snap_name(name, sizeof(name), offset, "");
	return unlinkat(dirfd, name, 0) == 0 || errno == ENOENT ? 0 : -errno;
}

/* Enough for any partition: snapshots are pruned as they are written. */
#define PRUNE_CAP 256

int
rn_prodsnap_prune(int dirfd, int64_t below, int64_t above, int keep)
{
	int64_t offs[PRUNE_CAP];
	int n, i, kept = 0, gone = 0, rc;

	if ((n = rn_prodsnap_list(dirfd, offs, PRUNE_CAP)) < 0)
		return n;
	if (n > PRUNE_CAP)
		n = PRUNE_CAP;	/* the rest go at a later prune */
	for (i = n - 1; i >= 0; i--) {
		if (offs[i] >= below && (above < 0 || offs[i] <= above) &&
		    kept < keep) {
			kept++;
			continue;
		}
		if ((rc = rn_prodsnap_remove(dirfd, offs[i])) < 0)
			return rc;
		gone++;
	}
	return gone;
}
