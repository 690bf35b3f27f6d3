/*
 * Taking a log dir offline on an I/O error (see dirfail.h).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "workers/partition/dirfail.h"

bool
rn_dirfail_is_io_error(int err)
{
	switch (err < 0 ? -err : err) {
	case EIO:
	case ENOSPC:
	case EDQUOT:
	case EROFS:
		return true;
	default:
		return false;
	}
}

int
rn_dirfail_check(const struct rn_shm *shm, int dir, const char *root,
    int rc, const char *what)
{
	const char *fields[3] = { NULL, NULL, NULL };
	char fd[1100], fe[64];
	uint32_t bit, old;
	int err = rc < 0 ? -rc : rc;

	/* rc >= 0 is a result (segments deleted, bytes read): 122 deleted
	 * segments are not EDQUOT */
	if (rc >= 0 || !rn_dirfail_is_io_error(rc) || dir < 0 || dir >= 32)
		return rc;
	bit = 1u << dir;
	old = atomic_fetch_or(&shm->hdr->offline_dirs, bit);
	if (old & bit)
		return rc; /* someone said it already */
	snprintf(fd, sizeof(fd), "LOG_DIR=%s", root != NULL ? root : "?");
	snprintf(fe, sizeof(fe), "ERRNO=%d", err);
	fields[0] = fd;
	fields[1] = fe;
	rn_log_fields(LOG_ERR, fields, "log dir %s is offline: %s failed: %s; "
	    "its replicas stop serving until the broker restarts with it "
	    "healthy", root != NULL ? root : "?", what, strerror(err));
	return rc;
}
