/*
 * Log directory failure, as Kafka's LogDirFailureChannel: the first I/O
 * error any worker meets in a log dir takes that dir offline for the
 * node (a bit in the segment header), and from then every replica in it
 * stops serving (KAFKA_STORAGE_ERROR) while the other dirs go on. The
 * broker agent reports the offline dirs in its heartbeats. Nothing
 * clears the bit: a restart brings the dir back.
 */
#ifndef RN_DIRFAIL_H
#define RN_DIRFAIL_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/shm.h"

/* An errno (either sign) that means the disk failed, not the request. */
bool rn_dirfail_is_io_error(int err);

/*
 * rc is what a storage call in log dir dir (index in log.dirs, path
 * root) returned: if it is an I/O error, take the dir offline (logged
 * once per dir, with what failed). Returns rc.
 */
int rn_dirfail_check(const struct rn_shm *shm, int dir, const char *root,
    int rc, const char *what);

/* Is log dir dir offline? */
static inline bool
rn_dirfail_offline(const struct rn_shm *shm, int dir)
{
	return dir >= 0 && dir < 32 &&
	    (atomic_load(&shm->hdr->offline_dirs) & (1u << dir)) != 0;
}

/* The offline dirs, bit = index in log.dirs. */
static inline uint32_t
rn_dirfail_mask(const struct rn_shm *shm)
{
	return atomic_load(&shm->hdr->offline_dirs);
}

#endif /* RN_DIRFAIL_H */
