/* Offset and time index files: mmap, lookup, append, trim. */
#include "autoconf.h"

#include "storage/index.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/bytes.h"

/* The mapped file again, for a call that needs it; the caller closes it. */
static int
index_fd(const struct rn_index *ix)
{
	struct stat st;
	int fd = openat(ix->dirfd, ix->name, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	if (st.st_ino != ix->ino) {
		/* replaced under this handle (a swap): the mapping is stale */
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static int
index_map(struct rn_index *ix, int fd)
{
	struct stat st;
	size_t len;

	if (fstat(fd, &st) < 0)
		return -errno;
	ix->ino = st.st_ino;
	len = (size_t)st.st_size / (size_t)ix->entry_size * (size_t)ix->entry_size;
	ix->map = NULL;
	ix->map_len = 0;
	if (len == 0)
		return 0;
	ix->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ix->map == MAP_FAILED) {
		ix->map = NULL;
		return -errno;
	}
	/*
	 * Lookups are binary searches and appends touch one page: without
	 * this a fault on a preallocated (sparse) index read ahead and zeroed
	 * up to megabytes around it, and the first entries of 1,000 new
	 * partitions took a network worker seconds of memset.
	 */
	(void)madvise(ix->map, len, MADV_RANDOM);
	ix->map_len = len;
	return 0;
}

static void
index_unmap(struct rn_index *ix)
{
	if (ix->map != NULL)
		munmap(ix->map, ix->map_len);
	ix->map = NULL;
	ix->map_len = 0;
}

/* The file grown to at least bytes (never shrunk), and mapped whole. */
static int
index_grow_fd(struct rn_index *ix, int fd, size_t bytes)
{
	struct stat st;

	bytes = bytes / (size_t)ix->entry_size * (size_t)ix->entry_size;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((size_t)st.st_size < bytes && ftruncate(fd, (off_t)bytes) < 0)
		return -errno;
	if (ix->map != NULL && ix->map_len >= bytes)
		return 0;
	index_unmap(ix);
	return index_map(ix, fd);
}

int
rn_index_open(struct rn_index *ix, int dirfd, const char *name,
    int64_t base_offset, int entry_size, size_t prealloc, int create)
{
	int fd, rc;

	ix->open = false;
	ix->map = NULL;
	ix->map_len = 0;
	ix->base_offset = base_offset;
	ix->entry_size = entry_size;
	ix->dirfd = dirfd;
	if ((size_t)snprintf(ix->name, sizeof(ix->name), "%s", name) >=
	    sizeof(ix->name))
		return -ENAMETOOLONG;
	fd = openat(dirfd, name, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
	if (fd < 0)
		return -errno;
	rc = prealloc > 0 ? index_grow_fd(ix, fd, prealloc) : index_map(ix, fd);
	close(fd);
	if (rc < 0) {
		index_unmap(ix);
		return rc;
	}
	ix->open = true;
	return 0;
}

void
rn_index_close(struct rn_index *ix)
{
	index_unmap(ix);
	ix->open = false;
}

int
rn_index_sync(struct rn_index *ix)
{
	int fd = index_fd(ix), rc = 0;

	/* gone or replaced since it was mapped: nothing of ours to sync */
	if (fd == -ENOENT || fd == -ESTALE)
		return 0;
	if (fd < 0)
		return fd;
	if (fdatasync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int
rn_index_resize(struct rn_index *ix, uint32_t n_entries)
{
	int fd = index_fd(ix), rc = 0;

	if (fd < 0)
		return fd;
	index_unmap(ix);
	if (ftruncate(fd, (off_t)n_entries * ix->entry_size) < 0)
		rc = -errno;
	if (rc == 0)
		rc = index_map(ix, fd);
	close(fd);
	return rc;
}

int
rn_index_grow(struct rn_index *ix, size_t bytes)
{
	int fd = index_fd(ix), rc;

	if (fd < 0)
		return fd;
	rc = index_grow_fd(ix, fd, bytes);
	close(fd);
	return rc;
}

/*
 * The offset an entry's relative one names. Added as Java adds longs
 * (wrapping): the entry is read from disk, and a garbage one in a segment
 * based near INT64_MAX must fail the sanity checks, not overflow (UB;
 * the fuzzer found it).
 */
static inline int64_t
rel_offset(const struct rn_index *ix, const uint8_t *rel)
{
	return (int64_t)((uint64_t)ix->base_offset +
	    (uint64_t)(int64_t)(int32_t)rn_get_be32(rel));
}

void
rn_oidx_get(const struct rn_index *ix, uint32_t i, int64_t *offset, int64_t *pos)
{
	const uint8_t *e = ix->map + (size_t)i * RN_OFFSET_INDEX_ENTRY;

	*offset = rel_offset(ix, e);
	*pos = (int64_t)rn_get_be32(e + 4);
}

/*
 * The file is sized ahead (sparse): before an entry is the first store
 * into a page, give that page blocks, so a full disk is an error here
 * and not a SIGBUS in the store. Filesystems without fallocate go on.
 */
static int
index_reserve(struct rn_index *ix, uint32_t i)
{
	off_t start = (off_t)i * ix->entry_size;
	long pg = 4096;
	int fd, rc = 0;

	if (start % pg != 0 && start % pg + ix->entry_size <= pg)
		return 0; /* its page had blocks for the entry before */
	/* once a page: 512 offset entries, some 2 MiB of log */
	if ((fd = index_fd(ix)) < 0)
		return fd;
	if (fallocate(fd, 0, start, ix->entry_size) < 0 &&
	    errno != EOPNOTSUPP && errno != ENOSYS)
		rc = -errno;
	close(fd);
	return rc;
}

int
rn_oidx_put(struct rn_index *ix, uint32_t i, int64_t offset, int64_t pos)
{
	uint8_t *e = ix->map + (size_t)i * RN_OFFSET_INDEX_ENTRY;
	int rc;

	if ((rc = index_reserve(ix, i)) != 0)
		return rc;
	rn_put_be32(e, (uint32_t)(offset - ix->base_offset));
	rn_put_be32(e + 4, (uint32_t)pos);
	return 0;
}

void
rn_tidx_get(const struct rn_index *ix, uint32_t i, int64_t *ts, int64_t *offset)
{
	const uint8_t *e = ix->map + (size_t)i * RN_TIME_INDEX_ENTRY;

	*ts = (int64_t)rn_get_be64(e);
	*offset = rel_offset(ix, e + 8);
}

int
rn_tidx_put(struct rn_index *ix, uint32_t i, int64_t ts, int64_t offset)
{
	uint8_t *e = ix->map + (size_t)i * RN_TIME_INDEX_ENTRY;
	int rc;

	if ((rc = index_reserve(ix, i)) != 0)
		return rc;
	rn_put_be64(e, (uint64_t)ts);
	rn_put_be32(e + 8, (uint32_t)(offset - ix->base_offset));
	return 0;
}

static inline uint32_t
clamp_n(const struct rn_index *ix, uint32_t n)
{
	uint32_t cap = rn_index_capacity(ix);

	return n < cap ? n : cap;
}

typedef void entry_fn(const struct rn_index *, uint32_t, int64_t *,
    int64_t *);
typedef bool below_fn(int64_t a, int64_t b, int64_t x, int64_t y);

/*
 * The last of the first n entries for which below() holds (the entries
 * are sorted, so it holds for a prefix): its index with *a and *b set
 * to its two columns, or -1.
 */
static int64_t
bisect(const struct rn_index *ix, uint32_t n, entry_fn *get, below_fn *below,
    int64_t x, int64_t y, int64_t *a, int64_t *b)
{
	int64_t lo = 0, hi = (int64_t)clamp_n(ix, n) - 1, found = -1;

	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2, ea, eb;

		get(ix, (uint32_t)mid, &ea, &eb);
		if (below(ea, eb, x, y)) {
			found = mid;
			*a = ea;
			*b = eb;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

static bool
offset_below(int64_t o, int64_t p, int64_t target, int64_t max_pos)
{
	return o <= target && p < max_pos;
}

static bool
position_below(int64_t o, int64_t p, int64_t max_off, int64_t max_pos)
{
	return p <= max_pos && o < max_off;
}

static bool
time_below(int64_t t, int64_t o, int64_t ts, int64_t unused)
{
	(void)o;
	(void)unused;
	return t <= ts;
}

int64_t
rn_oidx_lookup(const struct rn_index *ix, uint32_t n, int64_t target,
    int64_t max_pos, int64_t *offset, int64_t *pos)
{
	/* Both columns are monotonic, so one predicate bisects. */
	return bisect(ix, n, rn_oidx_get, offset_below, target, max_pos,
	    offset, pos);
}

int64_t
rn_oidx_lookup_pos(const struct rn_index *ix, uint32_t n, int64_t max_pos,
    int64_t max_off, int64_t *offset, int64_t *pos)
{
	return bisect(ix, n, rn_oidx_get, position_below, max_off, max_pos,
	    offset, pos);
}

int64_t
rn_tidx_lookup(const struct rn_index *ix, uint32_t n, int64_t ts,
    int64_t *found_ts, int64_t *offset)
{
	return bisect(ix, n, rn_tidx_get, time_below, ts, 0, found_ts,
	    offset);
}

int
rn_oidx_sanity(const struct rn_index *ix, uint32_t n, int64_t log_size)
{
	int64_t fo, fp, lo, lp;

	if (n == 0)
		return 0;
	if (n > rn_index_capacity(ix))
		return -EBADMSG;
	rn_oidx_get(ix, 0, &fo, &fp);
	rn_oidx_get(ix, n - 1, &lo, &lp);
	/* Zero-filled (untrimmed) tails fail here: positions must grow. */
	if (fo < ix->base_offset || lp >= log_size || fp <= 0)
		return -EBADMSG;
	if (n > 1 && (lo <= fo || lp <= fp))
		return -EBADMSG;
	return 0;
}

int
rn_tidx_sanity(const struct rn_index *ix, uint32_t n)
{
	int64_t ft, fo, lt, lo;

	if (n == 0)
		return 0;
	if (n > rn_index_capacity(ix))
		return -EBADMSG;
	rn_tidx_get(ix, 0, &ft, &fo);
	rn_tidx_get(ix, n - 1, &lt, &lo);
	if (fo < ix->base_offset)
		return -EBADMSG;
	if (n > 1 && (lt <= ft || lo < fo))
		return -EBADMSG;
	return 0;
}
