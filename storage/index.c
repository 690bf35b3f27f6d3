/* Offset and time index files: mmap, lookup, append, trim. */
#include "storage/index.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/bytes.h"

static int
index_map(struct rn_index *ix)
{
	struct stat st;
	size_t len;

	if (fstat(ix->fd, &st) < 0)
		return -errno;
	len = (size_t)st.st_size / (size_t)ix->entry_size * (size_t)ix->entry_size;
	ix->map = NULL;
	ix->map_len = 0;
	if (len == 0)
		return 0;
	ix->map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ix->fd, 0);
	if (ix->map == MAP_FAILED) {
		ix->map = NULL;
		return -errno;
	}
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

int
rn_index_open(struct rn_index *ix, int dirfd, const char *name,
    int64_t base_offset, int entry_size, size_t prealloc, int create)
{
	int rc;

	ix->map = NULL;
	ix->map_len = 0;
	ix->base_offset = base_offset;
	ix->entry_size = entry_size;
	ix->fd = openat(dirfd, name, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
	if (ix->fd < 0)
		return -errno;
	if (prealloc > 0) {
		rc = rn_index_grow(ix, prealloc);
		if (rc < 0)
			goto fail;
		return 0;
	}
	rc = index_map(ix);
	if (rc < 0)
		goto fail;
	return 0;
fail:
	close(ix->fd);
	ix->fd = -1;
	return rc;
}

void
rn_index_close(struct rn_index *ix)
{
	index_unmap(ix);
	if (ix->fd >= 0)
		close(ix->fd);
	ix->fd = -1;
}

int64_t
rn_index_file_entries(const struct rn_index *ix)
{
	struct stat st;

	if (fstat(ix->fd, &st) < 0)
		return -errno;
	return st.st_size / ix->entry_size;
}

int
rn_index_resize(struct rn_index *ix, uint32_t n_entries)
{
	index_unmap(ix);
	if (ftruncate(ix->fd, (off_t)n_entries * ix->entry_size) < 0)
		return -errno;
	return index_map(ix);
}

int
rn_index_grow(struct rn_index *ix, size_t bytes)
{
	struct stat st;

	bytes = bytes / (size_t)ix->entry_size * (size_t)ix->entry_size;
	if (fstat(ix->fd, &st) < 0)
		return -errno;
	if ((size_t)st.st_size < bytes && ftruncate(ix->fd, (off_t)bytes) < 0)
		return -errno;
	if (ix->map != NULL && ix->map_len >= bytes)
		return 0;
	index_unmap(ix);
	return index_map(ix);
}

void
rn_oidx_get(const struct rn_index *ix, uint32_t i, int64_t *offset, int64_t *pos)
{
	const uint8_t *e = ix->map + (size_t)i * RN_OFFSET_INDEX_ENTRY;

	*offset = ix->base_offset + (int32_t)rn_get_be32(e);
	*pos = (int64_t)rn_get_be32(e + 4);
}

void
rn_oidx_put(struct rn_index *ix, uint32_t i, int64_t offset, int64_t pos)
{
	uint8_t *e = ix->map + (size_t)i * RN_OFFSET_INDEX_ENTRY;

	rn_put_be32(e, (uint32_t)(offset - ix->base_offset));
	rn_put_be32(e + 4, (uint32_t)pos);
}

void
rn_tidx_get(const struct rn_index *ix, uint32_t i, int64_t *ts, int64_t *offset)
{
	const uint8_t *e = ix->map + (size_t)i * RN_TIME_INDEX_ENTRY;

	*ts = (int64_t)rn_get_be64(e);
	*offset = ix->base_offset + (int32_t)rn_get_be32(e + 8);
}

void
rn_tidx_put(struct rn_index *ix, uint32_t i, int64_t ts, int64_t offset)
{
	uint8_t *e = ix->map + (size_t)i * RN_TIME_INDEX_ENTRY;

	rn_put_be64(e, (uint64_t)ts);
	rn_put_be32(e + 8, (uint32_t)(offset - ix->base_offset));
}

static inline uint32_t
clamp_n(const struct rn_index *ix, uint32_t n)
{
	uint32_t cap = rn_index_capacity(ix);

	return n < cap ? n : cap;
}

int64_t
rn_oidx_lookup(const struct rn_index *ix, uint32_t n, int64_t target,
    int64_t max_pos, int64_t *offset, int64_t *pos)
{
	int64_t lo = 0, hi = (int64_t)clamp_n(ix, n) - 1, found = -1;

	/* Both columns are monotonic, so one predicate bisects. */
	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2, o, p;

		rn_oidx_get(ix, (uint32_t)mid, &o, &p);
		if (o <= target && p < max_pos) {
			found = mid;
			*offset = o;
			*pos = p;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

int64_t
rn_oidx_lookup_pos(const struct rn_index *ix, uint32_t n, int64_t max_pos,
    int64_t max_off, int64_t *offset, int64_t *pos)
{
	int64_t lo = 0, hi = (int64_t)clamp_n(ix, n) - 1, found = -1;

	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2, o, p;

		rn_oidx_get(ix, (uint32_t)mid, &o, &p);
		if (p <= max_pos && o < max_off) {
			found = mid;
			*offset = o;
			*pos = p;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

int64_t
rn_tidx_lookup(const struct rn_index *ix, uint32_t n, int64_t ts,
    int64_t *found_ts, int64_t *offset)
{
	int64_t lo = 0, hi = (int64_t)clamp_n(ix, n) - 1, found = -1;

	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2, t, o;

		rn_tidx_get(ix, (uint32_t)mid, &t, &o);
		if (t <= ts) {
			found = mid;
			*found_ts = t;
			*offset = o;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
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
