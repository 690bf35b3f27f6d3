/*
 * Copying a partition's log into another directory while it is read and
 * written: the future replica of a move between log dirs (KIP-113).
 *
 * The copy is the log byte for byte, segment files under the same names,
 * so that once it is whole the log's shared state (struct rn_log_shared:
 * offsets, sizes, index entry counts, epochs) describes it as well as the
 * original, and every process can reopen the log there without a
 * recovery. Steps run without the partition lock and copy a bounded
 * number of bytes each (copy_file_range, else sendfile, else one fixed
 * buffer); a sealed segment is copied whole with its indexes and synced;
 * the active segment's bytes follow its committed size. The last step,
 * under the lock, copies what is left of the active segment, its index
 * entries, the leader-epoch checkpoint and partition.metadata, and syncs.
 *
 * What changes the source under a copy: a roll (the active segment is
 * sealed: copied to its end, then its final indexes), retention and
 * DeleteRecords (oldest segments gone: dropped from the copy), a cleaned
 * segment swapped in (another file: copied again), a truncation (the
 * caller's count moves: what was copied of segments not sealed before is
 * copied again). Segments are checked against the source whenever its
 * generation moves.
 */
#ifndef RN_STORAGE_LOGCOPY_H
#define RN_STORAGE_LOGCOPY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "storage/log.h"

struct rn_logcopy_seg {
	int64_t base;
	int64_t copied;		/* .log bytes in the copy */
	dev_t dev;		/* the source .log they came from */
	ino_t ino;
	bool sealed;		/* whole, with its indexes, synced */
	bool dirty;		/* written since the last sync */
};

struct rn_logcopy {
	int dst;		/* the copy's directory (owned) */
	struct rn_logcopy_seg *segs;	/* oldest first */
	int n, cap;
	bool have_gen;
	uint32_t gen;		/* source generation last checked */
	uint64_t trunc;		/* caller's truncation count then */
	int64_t *bases, *sizes;	/* listing scratch */
	int lcap;
	int in_fd, out_fd;	/* .log files of the segment being copied */
	int64_t io_base;	/* their base, -1: none open */
	bool no_cfr, no_sendfile;	/* fall back to the next way */
	uint8_t *buf;		/* the last way's buffer, on first need */
	int64_t bytes;		/* bytes in the copy now */
	int64_t copied;		/* bytes copied in all (for a rate) */
	int64_t end_offset;	/* the copy holds everything below this */
};

/* Over the (empty or not) directory dst_dirfd, which it takes. */
void rn_logcopy_init(struct rn_logcopy *lc, int dst_dirfd);
void rn_logcopy_free(struct rn_logcopy *lc);
/* The copy is not wanted: its files go (the directory stays). */
void rn_logcopy_discard(struct rn_logcopy *lc);

/*
 * One step without the lock: check the copy against the source when its
 * generation (or trunc, the caller's count of truncations) moved, then
 * copy at most budget bytes. 1 when every segment below the active one
 * is whole and the active one is within near bytes of its committed
 * size, 0 when there is more to do, -errno.
 */
int rn_logcopy_step(struct rn_logcopy *lc, struct rn_log *src,
    uint64_t trunc, int64_t budget, int64_t near);

/*
 * The last step, partition lock held: the rest of the active segment (at
 * most max bytes, else -EAGAIN), its index entries, leader-epoch-checkpoint
 * and partition.metadata, everything synced. -ESTALE when the source
 * changed since the last step (take another step first).
 */
int rn_logcopy_finish(struct rn_logcopy *lc, struct rn_log *src,
    uint64_t trunc, int64_t max);

/*
 * Copy len bytes of in from ioff to out at ooff: copy_file_range, else
 * sendfile, else through buf (1 MiB, allocated by the caller's first
 * need). Bytes copied (short at the end of in), or -errno.
 */
ssize_t rn_copy_range(int in, int64_t ioff, int out, int64_t ooff, size_t len,
    bool *no_cfr, bool *no_sendfile, uint8_t **buf);

#endif /* RN_STORAGE_LOGCOPY_H */
