/*
 * Kafka's segment index files, mmap'd MAP_SHARED so every process sees the
 * entries the writer adds. The number of valid entries is not stored in the
 * file: for the active segment it lives in the shared log state, for older
 * segments the file is trimmed to exactly its entries.
 *
 *   .index      8-byte entries: int32 offset - base, int32 file position
 *   .timeindex 12-byte entries: int64 timestamp, int32 offset - base
 * All big-endian, both monotonic.
 */
#ifndef RN_STORAGE_INDEX_H
#define RN_STORAGE_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RN_OFFSET_INDEX_ENTRY 8
#define RN_TIME_INDEX_ENTRY 12

#define RN_INDEX_NAME_MAX 64

/*
 * An index holds no descriptor while open, only its mapping: a log is
 * then a directory and a .log descriptor, and a process can keep three
 * times as many logs open under its RLIMIT_NOFILE. The few calls that
 * need the file itself (sizing, a page's blocks, a sync) reopen it by
 * name in dirfd (the log's, borrowed) and check it is still the file
 * mapped.
 */
struct rn_index {
	bool open;
	uint8_t *map;
	size_t map_len;		/* bytes mapped (the file size when mapped) */
	int64_t base_offset;
	int entry_size;
	int dirfd;
	ino_t ino;
	char name[RN_INDEX_NAME_MAX];
};

/*
 * Open (creating if asked) and map an index file. With prealloc > 0 the file
 * is first grown to prealloc bytes (rounded down to whole entries); it is
 * never shrunk here. Returns 0 or -errno.
 */
int rn_index_open(struct rn_index *ix, int dirfd, const char *name,
    int64_t base_offset, int entry_size, size_t prealloc, int create);
void rn_index_close(struct rn_index *ix);

static inline bool
rn_index_is_open(const struct rn_index *ix)
{
	return ix->open;
}

/* fdatasync the file. Returns 0 or -errno. */
int rn_index_sync(struct rn_index *ix);

/* Entries that fit in the mapping. */
static inline uint32_t
rn_index_capacity(const struct rn_index *ix)
{
	return ix->map ? (uint32_t)(ix->map_len / (size_t)ix->entry_size) : 0;
}

/* Set the file size to n entries (trim or grow); the mapping is redone. */
int rn_index_resize(struct rn_index *ix, uint32_t n_entries);

/* Grow the file and mapping to at least bytes (never shrinks). */
int rn_index_grow(struct rn_index *ix, size_t bytes);

/* Offset index. */
void rn_oidx_get(const struct rn_index *ix, uint32_t i, int64_t *offset,
    int64_t *pos);
/*
 * The puts return 0, or -errno when the entry's page of the file could
 * not be given blocks (a full disk): nothing was written then, where a
 * store into a hole of the mapping would have raised SIGBUS.
 */
int rn_oidx_put(struct rn_index *ix, uint32_t i, int64_t offset, int64_t pos);

/*
 * Largest entry among the first n with offset <= target and position <
 * max_pos; returns its slot or -1 (then start at position 0).
 */
int64_t rn_oidx_lookup(const struct rn_index *ix, uint32_t n, int64_t target,
    int64_t max_pos, int64_t *offset, int64_t *pos);

/* Largest entry among the first n with position <= max_pos and offset < max_off. */
int64_t rn_oidx_lookup_pos(const struct rn_index *ix, uint32_t n,
    int64_t max_pos, int64_t max_off, int64_t *offset, int64_t *pos);

/* Time index. */
void rn_tidx_get(const struct rn_index *ix, uint32_t i, int64_t *ts,
    int64_t *offset);
int rn_tidx_put(struct rn_index *ix, uint32_t i, int64_t ts, int64_t offset);

/* Largest entry among the first n with timestamp <= ts; slot or -1. */
int64_t rn_tidx_lookup(const struct rn_index *ix, uint32_t n, int64_t ts,
    int64_t *found_ts, int64_t *offset);

/*
 * Cheap structural check of a trimmed index (like Kafka's sanity check):
 * first/last entries ordered, positions inside the log file. 0 or -EBADMSG.
 */
int rn_oidx_sanity(const struct rn_index *ix, uint32_t n, int64_t log_size);
int rn_tidx_sanity(const struct rn_index *ix, uint32_t n);

#endif /* RN_STORAGE_INDEX_H */
