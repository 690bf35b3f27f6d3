/*
 * One log segment: <20-digit base offset>.log holding record batches back
 * to back, with its .index and .timeindex. This is a process-local handle;
 * the active segment's committed size and index entry counts are in the
 * shared log state, an older segment's are its file sizes (it is immutable).
 */
#ifndef RN_STORAGE_SEGMENT_H
#define RN_STORAGE_SEGMENT_H

#include <dirent.h>
#include <stdint.h>
#include <sys/types.h>

#include "storage/batch.h"
#include "storage/index.h"

#define RN_SEGMENT_NAME_MAX 40

struct rn_segment {
	int64_t base_offset;
	int fd;			/* .log, -1 until opened */
	struct rn_index oidx;	/* not open until mapped */
	struct rn_index tidx;
	int64_t size;		/* bytes, for non-active segments */
	dev_t dev;
	ino_t ino;
	int refs;		/* the log's list holds one; read slices others */
	int idx_active;		/* indexes mapped preallocated, for appending */
	int idx_trusted;	/* mapped while not active: entry counts = file sizes */
	uint32_t o_entries;	/* valid entries when not active */
	uint32_t t_entries;
};

/* "<dir-relative name>" of a segment file: suffix ".log", ".index", ... */
void rn_segment_name(char buf[RN_SEGMENT_NAME_MAX], int64_t base, const char *suffix);
/* Parse "<20 digits>.log"; returns the base offset or -1. */
int64_t rn_segment_parse_name(const char *name, const char *suffix);

struct rn_segment *rn_segment_new(int64_t base_offset);
void rn_segment_close_files(struct rn_segment *seg);
void rn_segment_close_indexes(struct rn_segment *seg);
void rn_segment_free(struct rn_segment *seg);
/* fdatasync both indexes (they hold no descriptor: reopened by name). */
int rn_segment_sync_indexes(struct rn_segment *seg);

/* Open (or create, empty) the .log; fills dev/ino. */
int rn_segment_open_log(int dirfd, struct rn_segment *seg, int create);

/*
 * Map both indexes. prealloc > 0: grow the files to that size (active
 * segment, appending); 0: map as they are and take entry counts from the
 * file sizes. create: make missing files.
 */
int rn_segment_open_indexes(int dirfd, struct rn_segment *seg, size_t prealloc,
    int create);

/* Remove the three files of a segment (missing ones are fine). */
int rn_segment_unlink(int dirfd, int64_t base);

/* Incremental index building, shared by append and recovery. */
struct rn_segment_cursor {
	int64_t size;		/* bytes of batches so far */
	int64_t next_offset;	/* last offset + 1 (base if empty) */
	uint32_t o_entries;
	uint32_t t_entries;
	int64_t bytes_since_index;
	int64_t max_ts;		/* largest batch maxTimestamp so far */
	int64_t max_ts_offset;	/* last offset of that batch */
	int64_t first_batch_ts;	/* maxTimestamp of the first batch, or -1 */
};

void rn_segment_cursor_init(struct rn_segment_cursor *c, int64_t base);

/*
 * Account one batch at position pos (writing index entries past the
 * cursor's counts into the mapped indexes when an entry is due, like Kafka
 * every index.interval.bytes). Entries are not published: the caller makes
 * the counts visible.
 */
void rn_segment_index_batch(struct rn_segment *seg, struct rn_segment_cursor *c,
    int64_t pos, const struct rn_batch_header *h, int64_t interval);

/* Kafka's onBecomeInactiveSegment: make the time index end with the max. */
void rn_segment_time_index_final(struct rn_segment *seg, struct rn_segment_cursor *c);

/* Visit each batch found; return < 0 to fail with that value, > 0 to end
 * the valid data before this batch. */
typedef int (*rn_segment_batch_fn)(void *arg, int64_t pos,
    const struct rn_batch_header *h, const uint8_t *batch);

/*
 * Walk batches of the .log in [start, end). validate: read each batch whole
 * and check it (CRC, framing, offsets increasing and fitting the segment),
 * stopping at the first bad or torn one; otherwise only headers are read and
 * batch is NULL in callbacks. *valid_end is the position after the last good
 * batch. Returns 0, -errno, or fn's negative value.
 */
int rn_segment_scan(const struct rn_segment *seg, int64_t start, int64_t end,
    int64_t min_offset, int validate, rn_segment_batch_fn fn, void *arg,
    int64_t *valid_end);

/*
 * Rebuild the indexes from the data: scan from 0 (validating when asked),
 * truncate the .log after the last good batch, write fresh index entries.
 * The indexes are left mapped at prealloc bytes. *truncated says whether
 * data was cut. on_batch, if set, sees every good batch (epoch cache).
 */
int rn_segment_recover(int dirfd, struct rn_segment *seg, int64_t interval,
    size_t prealloc, int validate, rn_segment_batch_fn on_batch, void *arg,
    struct rn_segment_cursor *out, int *truncated);

/*
 * Rebuild the cursor of a segment whose indexes are trusted: entry counts
 * given, tail scanned from the last offset index entry to end.
 */
int rn_segment_load_tail(struct rn_segment *seg, uint32_t o_entries,
    uint32_t t_entries, int64_t end, struct rn_segment_cursor *out);

/* Largest timestamp of a non-active segment: its last time index entry, or
 * the .log mtime when it has none (like Kafka). */
int64_t rn_segment_largest_ts(int dirfd, const struct rn_segment *seg);

ssize_t rn_pread_full(int fd, void *buf, size_t len, int64_t pos);
int rn_pwrite_full(int fd, const void *buf, size_t len, int64_t pos);

/* A directory stream on dirfd's directory, with a descriptor of its own
 * (closedir leaves dirfd open); NULL with errno set if it cannot be had. */
DIR *rn_opendirat(int dirfd);

#endif /* RN_STORAGE_SEGMENT_H */
