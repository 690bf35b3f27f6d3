/*
 * Each log dir is created if missing and locked with flock() on its
 * ".lock" file for the life of the node, as Kafka does, so two nodes can
 * never share a directory. The lock fds are inherited by the workers,
 * which keeps the lock held across worker restarts.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/log.h"
#include "common/scram_boot.h"
#include "common/util.h"
#include "storage/logdir.h"
#include "supervisor/sv.h"

/*
 * The founding controller, running as the service user, reads the SCRAM
 * credentials runnel-storage (often run as root) left in the metadata log
 * dir: the file becomes the service user's, still 0600.
 */
static int
hand_over_scram_boot(struct sv *sv, const char *dir)
{
	char path[1100];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, RN_SCRAM_BOOT_FILE);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return 0; /* none (or not a file we hand over) */
	if (fchown(fd, sv->service_uid, sv->service_gid) == -1) {
		log_errx("log dir %s: cannot hand %s to the service user: %s",
		    dir, RN_SCRAM_BOOT_FILE, strerror(errno));
		rc = -1;
	}
	close(fd);
	return rc;
}

static int
lock_dir(struct sv *sv, const char *dir)
{
	char path[1100];
	int fd, rc;

	if ((rc = rn_mkdir_p(dir, 0750)) != 0) {
		log_errx("log dir %s: cannot create it: %s", dir,
		    strerror(-rc));
		return -1;
	}
	if (sv->drop_privileges && chown(dir, sv->service_uid,
	    sv->service_gid) == -1) {
		log_errx("log dir %s: cannot hand it to the service user: %s",
		    dir, strerror(errno));
		return -1;
	}
	if (sv->drop_privileges && hand_over_scram_boot(sv, dir) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/.lock", dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) == -1) {
		log_errx("log dir %s: cannot open %s: %s", dir, path,
		    strerror(errno));
		return -1;
	}
	/*
	 * Workers of a node that was just killed may still be exiting with
	 * the lock's fd open: give them a moment before calling it taken.
	 */
	for (int tries = 0; flock(fd, LOCK_EX | LOCK_NB) == -1 &&
	    errno == EWOULDBLOCK && tries < 50; tries++)
		usleep(100 * 1000);
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		log_errx("log dir %s is locked by another process (%s); is "
		    "another runneld or Kafka using it?", dir,
		    strerror(errno));
		close(fd);
		return -1;
	}
	/* the fd stays open, holding the lock; an upgrade passes it on */
	if (sv->n_lock_fd < (int)RN_ARRAY_SIZE(sv->lock_fd))
		sv->lock_fd[sv->n_lock_fd++] = fd;
	return 0;
}

int
sv_logdirs_lock(struct sv *sv)
{
	int i;

	for (i = 0; i < sv->cfg.n_log_dirs; i++)
		if (lock_dir(sv, sv->cfg.log_dirs[i]) != 0)
			return -1;
	/* the metadata log dir may be one of them or its own */
	for (i = 0; i < sv->cfg.n_log_dirs; i++)
		if (strcmp(sv->cfg.log_dirs[i], sv->cfg.metadata_log_dir) == 0)
			return 0;
	return lock_dir(sv, sv->cfg.metadata_log_dir);
}

/*
 * Each log dir's clean-shutdown marker, taken (removed, durably) before
 * any worker opens a log: its bit in the segment header lets the first
 * open of each log there skip the scan, and a crash from now on finds no
 * marker. The marker is the last thing a clean stop writes (workers/
 * partition/flush.c).
 */
void
sv_logdirs_take_clean(struct sv *sv)
{
	uint32_t clean = 0;
	int i, rc;

	for (i = 0; i < sv->cfg.n_log_dirs && i < 32; i++) {
		rc = rn_logdir_take_clean(sv->cfg.log_dirs[i]);
		if (rc == 1)
			clean |= 1u << i;
		else if (rc < 0)
			log_warnx("%s: cannot take %s: %s", sv->cfg.log_dirs[i],
			    RN_CLEAN_SHUTDOWN_FILE, strerror(-rc));
		log_info("log dir %s: %s", sv->cfg.log_dirs[i], rc == 1 ?
		    "stopped cleanly: its logs are not scanned" :
		    "no clean-shutdown marker: logs recover from their "
		    "recovery points");
	}
	atomic_store(&sv->shm.hdr->clean_dirs, clean);
}
