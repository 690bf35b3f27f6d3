/*
 * Moving a replica between this node's log dirs (AlterReplicaLogDirs,
 * KIP-113): the slot's side. The request makes the future replica's
 * directory and records the move in the slot; the replica fetcher that
 * owns the partition copies the log into it (storage/logcopy.c), marks it
 * caught up (the broker agent then has the destination recorded with
 * AssignReplicasToDirs, as Kafka 3.7 does before it promotes a future
 * replica) and swaps it in here, under the slot's lock:
 *
 *   S1  the rest of the copy, synced; the marker RN_FUTURE_COMPLETE
 *       written in the future dir, synced
 *   S2  <cur dir>/<name> renamed <name>.<hex>-delete (synced)
 *   S3  <dest>/<name>.<id>-future renamed <dest>/<name> (synced)
 *   S4  the marker removed; the slot's dir is dest; every handle reopens
 *   S5  (lock released) the -delete tree removed
 *
 * The rule after a crash (a node start takes the slot fresh, or the lock
 * reports its holder died): a future replica holding the marker wins and
 * the swap is finished (the current dir, if still there, renamed -delete,
 * the future renamed, the marker removed); without the marker the current
 * replica wins and the copy starts over in the same future dir. Nothing
 * is appended between S1 and S4 (the lock is held), so a marked future
 * replica is the whole log.
 */
#include "autoconf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "storage/checkpoint.h"
#include "storage/logcopy.h"
#include "storage/logdir.h"
#include "workers/partition/dirfail.h"
#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

static void
hex_id(const uint8_t id[16], char out[33])
{
	int i;

	for (i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
}

int
rn_part_future_name(char *buf, size_t len, const char *topic,
    int32_t partition, const uint8_t id[16])
{
	char hex[33];
	int n;

	hex_id(id, hex);
	n = snprintf(buf, len, "%s-%d.%s-future", topic, partition, hex);
	return n < 0 || (size_t)n >= len || n > 255 ? -ENAMETOOLONG : 0;
}

/* The future dir's name for the slot's partition. */
static void
fut_name(const struct rn_part_rt *rt, const uint8_t id[16], char *buf,
    size_t len)
{
	char hex[33];

	hex_id(id, hex);
	snprintf(buf, len, "%s.%s-future", rt->move.name, hex);
}

static bool
is_dir(const char *root, const char *name)
{
	char path[4400];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool
has_marker(const char *root, const char *name)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s/%s", root, name,
	    RN_FUTURE_COMPLETE);
	return access(path, F_OK) == 0;
}

static void
drop_marker(const char *root, const char *name)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s/%s", root, name,
	    RN_FUTURE_COMPLETE);
	(void)unlink(path);
}

static int
sync_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* Does root/name hold the replica of topic id (partition.metadata)? */
static bool
holds_id(const char *root, const char *name, const uint8_t id[16])
{
	char path[4400];
	uint8_t have[16];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	return rn_partition_metadata_read(path, have) == 0 &&
	    memcmp(have, id, 16) == 0;
}

/* The "<name>.<32 hex>-delete" trees a swap cut short left behind. */
static void
remove_retired_copies(const struct rn_config *cfg, const char *name)
{
	size_t nl = strlen(name);
	struct dirent *de;
	char path[4400];
	DIR *dp;
	int d;

	for (d = 0; d < cfg->n_log_dirs; d++) {
		if ((dp = opendir(cfg->log_dirs[d])) == NULL)
			continue;
		while ((de = readdir(dp)) != NULL) {
			size_t n = strlen(de->d_name);

			if (n != nl + 1 + 32 + 7 ||
			    strncmp(de->d_name, name, nl) != 0 ||
			    de->d_name[nl] != '.' ||
			    strcmp(de->d_name + n - 7, "-delete") != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", cfg->log_dirs[d],
			    de->d_name);
			(void)rn_logdir_remove_tree(path);
		}
		closedir(dp);
	}
}

/*
 * The marked future replica in dest becomes the replica (recovery): the
 * other copies are renamed out of the way, the future one renamed in, and
 * then the renamed trees removed.
 */
static int
finish_swap(const struct rn_config *cfg, const char *name, const char *fut,
    int dest)
{
	char from[4400], to[4400], topic[RN_TOPIC_MAX + 1];
	struct rn_log_subject s = rn_logdir_subject(name, topic);
	int d, rc;

	for (d = 0; d < cfg->n_log_dirs; d++)
		if ((d != dest || is_dir(cfg->log_dirs[dest], fut)) &&
		    is_dir(cfg->log_dirs[d], name)) {
			rn_log_about(LOG_INFO, s, "%s/%s: the move to %s was "
			    "cut short after its copy was whole: this copy "
			    "goes", cfg->log_dirs[d], name,
			    cfg->log_dirs[dest]);
			(void)rn_logdir_retire(cfg->log_dirs[d], name, to,
			    sizeof(to));
		}
	if (is_dir(cfg->log_dirs[dest], fut)) {
		snprintf(from, sizeof(from), "%s/%s", cfg->log_dirs[dest], fut);
		snprintf(to, sizeof(to), "%s/%s", cfg->log_dirs[dest], name);
		if (rename(from, to) != 0) {
			rc = -errno;
			rn_log_about(LOG_WARNING, s, "finishing a move: "
			    "renaming %s: %s", from, strerror(-rc));
			return rc;
		}
		(void)sync_dir(cfg->log_dirs[dest]);
	}
	drop_marker(cfg->log_dirs[dest], name);
	rn_log_about(LOG_INFO, s, "%s/%s: the move cut short by a crash is "
	    "finished", cfg->log_dirs[dest], name);
	remove_retired_copies(cfg, name);
	return 0;
}

/* The metadata should record dir d for this replica: the agent reports it. */
static void
want_dir(const struct rn_shm *shm, struct rn_part_rt *rt, int32_t d)
{
	atomic_store(&rt->move.assign_want, d);
	atomic_fetch_add(&shm->hdr->dir_reports, 1);
}

static void
move_clear(struct rn_part_rt *rt)
{
	atomic_store(&rt->move.dest, -1);
	atomic_store(&rt->move.state, RN_MOVE_NONE);
	atomic_store(&rt->move.future_size, 0);
	atomic_store(&rt->move.future_end, 0);
	atomic_fetch_add(&rt->move.seq, 1);
}

int
rn_part_move_claim(const struct rn_config *cfg, const struct rn_shm *shm,
    struct rn_part_rt *rt, const char *topic, int32_t partition,
    const uint8_t id[16], int image_dir)
{
	char fut[RN_PART_DIRNAME_MAX + 64];
	int d, fut_d = -1, actual = -1;

	snprintf(rt->move.name, sizeof(rt->move.name), "%s-%d", topic,
	    partition);
	fut_name(rt, id, fut, sizeof(fut));
	move_clear(rt);
	atomic_store(&rt->move.assign_want, -1);
	atomic_store(&rt->move.truncations, 0);
	for (d = 0; d < cfg->n_log_dirs; d++)
		if (!rn_dirfail_offline(shm, d) &&
		    is_dir(cfg->log_dirs[d], fut) && (fut_d < 0 ||
		    has_marker(cfg->log_dirs[d], fut)))
			fut_d = d;
	if (fut_d >= 0 && has_marker(cfg->log_dirs[fut_d], fut) &&
	    finish_swap(cfg, rt->move.name, fut, fut_d) == 0) {
		actual = fut_d;
		fut_d = -1;
	} else if (is_dir(cfg->log_dirs[image_dir], rt->move.name))
		actual = image_dir;
	else
		/* not where the metadata says: a move whose destination was
		 * recorded before its swap, cut short; or one it reverted */
		for (d = 0; d < cfg->n_log_dirs && actual < 0; d++)
			if (d != image_dir && !rn_dirfail_offline(shm, d) &&
			    holds_id(cfg->log_dirs[d], rt->move.name, id))
				actual = d;
	if (actual < 0)
		actual = image_dir;	/* a new log */
	if (has_marker(cfg->log_dirs[actual], rt->move.name)) {
		/* cut short after its rename: only the marker is left, and
		 * the old copy's -delete tree */
		drop_marker(cfg->log_dirs[actual], rt->move.name);
		remove_retired_copies(cfg, rt->move.name);
		rn_log_about(LOG_INFO, rn_subj_part(topic, partition), "%s/%s: "
		    "the move cut short by a crash is finished",
		    cfg->log_dirs[actual], rt->move.name);
	}
	if (fut_d == actual) {
		(void)rn_logdir_discard(cfg->log_dirs[fut_d], fut);
		fut_d = -1;
	}
	atomic_store(&rt->cur_dir, actual);
	if (fut_d >= 0) {
		rn_log_about(LOG_INFO, rn_subj_part(topic, partition), "%s/%s: "
		    "a move cut short before its copy was whole: the copy "
		    "starts over", cfg->log_dirs[fut_d], fut);
		atomic_store(&rt->move.dest, fut_d);
		atomic_store(&rt->move.state, RN_MOVE_COPYING);
	}
	if (actual != image_dir && fut_d != image_dir) {
		rn_log_about(LOG_INFO, rn_subj_part(topic, partition), "%s/%s: "
		    "the log is here, not in %s where the metadata has it: "
		    "reporting its dir", cfg->log_dirs[actual], rt->move.name,
		    cfg->log_dirs[image_dir]);
		want_dir(shm, rt, actual);
	}
	return actual;
}

int
rn_part_move_repair(const struct rn_config *cfg, struct rn_part_rt *rt,
    const uint8_t id[16])
{
	char fut[RN_PART_DIRNAME_MAX + 64], topic[RN_TOPIC_MAX + 1];
	int dest = atomic_load(&rt->move.dest);
	int cur = atomic_load(&rt->cur_dir);

	if (atomic_load(&rt->move.state) != RN_MOVE_SWAPPING || dest < 0 ||
	    dest >= cfg->n_log_dirs || cur < 0 || cur >= cfg->n_log_dirs)
		return 0;
	fut_name(rt, id, fut, sizeof(fut));
	if (!has_marker(cfg->log_dirs[dest], fut) &&
	    !has_marker(cfg->log_dirs[dest], rt->move.name)) {
		/* died before the copy was whole: it starts over */
		rn_log_about(LOG_WARNING, rn_logdir_subject(rt->move.name,
		    topic), "%s/%s: the worker swapping it in died before its "
		    "copy was whole: the copy starts over",
		    cfg->log_dirs[dest], fut);
		atomic_store(&rt->move.state, RN_MOVE_COPYING);
		atomic_fetch_add(&rt->move.seq, 1);
		return 0;
	}
	rn_log_about(LOG_WARNING, rn_logdir_subject(rt->move.name, topic),
	    "%s/%s: the worker swapping it in died: finishing the swap",
	    cfg->log_dirs[dest], fut);
	if (finish_swap(cfg, rt->move.name, fut, dest) != 0)
		return 0;
	atomic_store(&rt->cur_dir, dest);
	move_clear(rt);
	return 1;
}

int32_t
rn_part_dir(const struct rn_part *p)
{
	int32_t d = atomic_load(&p->rt->cur_dir);

	return d >= 0 ? d : p->dir;
}

/* The slot, if it holds (id, partition). */
static struct rn_part_rt *
slot_rt(const struct rn_shm *shm, int32_t slot, const uint8_t id[16],
    int32_t partition)
{
	struct rn_part_rt *rt;

	if (slot < 0 || (uint32_t)slot >= shm->hdr->max_partitions ||
	    !rn_shm_slot_used(shm, (unsigned)slot))
		return NULL;
	rt = (struct rn_part_rt *)rn_shm_partition(shm, (unsigned)slot);
	if (atomic_load(&rt->incarnation) == 0 || rt->partition != partition ||
	    memcmp(rt->topic_id.b, id, 16) != 0)
		return NULL;
	return rt;
}

int32_t
rn_part_slot_dir(const struct rn_shm *shm, int32_t slot, const uint8_t id[16],
    int32_t partition)
{
	struct rn_part_rt *rt = slot_rt(shm, slot, id, partition);

	return rt != NULL ? atomic_load(&rt->cur_dir) : -1;
}

static bool
move_info(struct rn_part_rt *rt, struct rn_part_move_info *mi)
{
	mi->seq = atomic_load(&rt->move.seq);
	mi->dest = atomic_load(&rt->move.dest);
	mi->state = atomic_load(&rt->move.state);
	mi->size = atomic_load(&rt->move.future_size);
	mi->end = atomic_load(&rt->move.future_end);
	return mi->dest >= 0 && mi->state != RN_MOVE_NONE;
}

bool
rn_part_slot_move(const struct rn_shm *shm, int32_t slot, const uint8_t id[16],
    int32_t partition, struct rn_part_move_info *mi)
{
	struct rn_part_rt *rt = slot_rt(shm, slot, id, partition);

	return rt != NULL && move_info(rt, mi);
}

/* Rename the future dir in dir d out of the way; its tree in to. */
static void
retire_future(struct rn_part *p, int d, char *to, size_t tolen)
{
	char fut[RN_PART_DIRNAME_MAX + 64], topic[RN_TOPIC_MAX + 1];
	int rc;

	to[0] = '\0';
	fut_name(p->rt, p->topic_id, fut, sizeof(fut));
	if (d < 0 || d >= p->cfg->n_log_dirs)
		return;
	if ((rc = rn_logdir_retire(p->cfg->log_dirs[d], fut, to, tolen)) != 0) {
		to[0] = '\0';
		if (rc != -ENOENT)
			rn_log_about(LOG_WARNING, rn_logdir_subject(
			    p->rt->move.name, topic), "%s/%s: cannot remove "
			    "it: %s", p->cfg->log_dirs[d], fut, strerror(-rc));
	}
}

static void
remove_retired(const char *to)
{
	int rc;

	if (to[0] != '\0' && (rc = rn_logdir_remove_tree(to)) != 0)
		log_warnx("removing %s: %s", to, strerror(-rc));
}

int16_t
rn_part_move_request(struct rn_part *p, int32_t dest)
{
	struct rn_part_rt *rt = p->rt;
	char fut[RN_PART_DIRNAME_MAX + 64], path[4400], old_to[4400];
	char topic[RN_TOPIC_MAX + 1];
	struct rn_log_subject s = rn_logdir_subject(rt->move.name, topic);
	int32_t cur, old;
	int rc;

	if (dest < 0 || dest >= p->cfg->n_log_dirs)
		return RN_KERR_LOG_DIR_NOT_FOUND;
	if (rn_part_lock(p) != 0)
		return RN_KERR_KAFKA_STORAGE_ERROR;
	cur = rn_part_dir(p);
	old = atomic_load(&rt->move.dest);
	old_to[0] = '\0';
	if (dest == old) {
		rn_part_unlock(p);
		return RN_KERR_NONE;	/* already under way */
	}
	if (old >= 0) {
		/* another destination, or back home: this copy goes, and
		 * a destination it had recorded is taken back; a copy under
		 * way is removed by its fetcher, which sees the move gone at
		 * its next step (mover.c), so no network worker spends its
		 * clients' time unlinking gigabytes */
		retire_future(p, old, old_to, sizeof(old_to));
		if (atomic_load(&rt->move.future_size) > 0)
			old_to[0] = '\0';
		move_clear(rt);
		want_dir(p->shm, rt, cur);
		rn_log_about(LOG_INFO, s, "%s: the move to %s is cancelled",
		    rt->move.name, p->cfg->log_dirs[old]);
	}
	if (dest == cur) {
		rn_part_unlock(p);
		remove_retired(old_to);
		return RN_KERR_NONE;
	}
	fut_name(rt, p->topic_id, fut, sizeof(fut));
	snprintf(path, sizeof(path), "%s/%s", p->cfg->log_dirs[dest], fut);
	rc = mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -errno;
	if (rc == 0)
		rc = sync_dir(p->cfg->log_dirs[dest]);
	if (rc != 0) {
		(void)rn_dirfail_check(p->shm, dest, p->cfg->log_dirs[dest], rc,
		    "making a future replica's directory");
		rn_part_unlock(p);
		remove_retired(old_to);
		rn_log_about(LOG_WARNING, s, "%s: cannot make it: %s", path,
		    strerror(-rc));
		return RN_KERR_KAFKA_STORAGE_ERROR;
	}
	atomic_store(&rt->move.future_size, 0);
	atomic_store(&rt->move.future_end, rn_log_start_offset(p->log));
	atomic_store(&rt->move.dest, dest);
	atomic_store(&rt->move.state, RN_MOVE_COPYING);
	atomic_fetch_add(&rt->move.seq, 1);
	rn_part_unlock(p);
	remove_retired(old_to);
	rn_log_about(LOG_INFO, s, "%s: moving from %s to %s", rt->move.name,
	    p->cfg->log_dirs[cur], p->cfg->log_dirs[dest]);
	return RN_KERR_NONE;
}

uint64_t
rn_part_truncations(const struct rn_part *p)
{
	return atomic_load(&p->rt->move.truncations);
}

void
rn_part_move_progress(struct rn_part *p, uint32_t seq, int64_t size,
    int64_t end)
{
	if (atomic_load(&p->rt->move.seq) != seq)
		return;
	atomic_store(&p->rt->move.future_size, size);
	atomic_store(&p->rt->move.future_end, end);
}

bool
rn_part_move_caught_up(struct rn_part *p, uint32_t seq)
{
	struct rn_part_rt *rt = p->rt;
	bool ok = false;

	if (rn_part_lock(p) != 0)
		return false;
	if (atomic_load(&rt->move.seq) == seq) {
		uint32_t st = atomic_load(&rt->move.state);

		if (st == RN_MOVE_COPYING) {
			atomic_store(&rt->move.state, RN_MOVE_CAUGHT_UP);
			want_dir(p->shm, rt, atomic_load(&rt->move.dest));
		}
		ok = atomic_load(&rt->move.state) == RN_MOVE_CAUGHT_UP;
	}
	rn_part_unlock(p);
	return ok;
}

/*
 * For crash tests only: RUNNEL_MOVE_CRASH_FILE in runneld's environment
 * names a file; when it holds a step name (finished, marked, retired,
 * renamed), the worker swapping a moved replica in removes it and
 * SIGKILLs itself there ("node:<step>": the whole node).
 */
static void
crash_point(const char *step)
{
	const char *f = getenv("RUNNEL_MOVE_CRASH_FILE");
	char buf[32];
	ssize_t n;
	bool node;
	int fd;

	if (f == NULL || (fd = open(f, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	node = strncmp(buf, "node:", 5) == 0;
	if (strcmp(buf + (node ? 5 : 0), step) != 0)
		return;
	(void)unlink(f);
	log_warnx("RUNNEL_MOVE_CRASH_FILE: dying at step %s%s", step,
	    node ? ", the whole node with it" : "");
	/* the supervisor's death takes every worker (PR_SET_PDEATHSIG) */
	if (node)
		(void)kill(getppid(), SIGKILL);
	raise(SIGKILL);
}

int
rn_part_move_swap(struct rn_part *p, uint32_t seq, struct rn_logcopy *lc)
{
	struct rn_part_rt *rt = p->rt;
	const struct rn_config *cfg = p->cfg;
	char fut[RN_PART_DIRNAME_MAX + 64], from[4400], to[4400], gone[4400];
	char topic[RN_TOPIC_MAX + 1];
	int32_t dest, cur;
	int rc, fd;

	if (rn_part_lock(p) != 0)
		return 0;
	dest = atomic_load(&rt->move.dest);
	cur = rn_part_dir(p);
	if (atomic_load(&rt->move.seq) != seq ||
	    atomic_load(&rt->move.state) != RN_MOVE_CAUGHT_UP || dest < 0 ||
	    dest == cur) {
		rn_part_unlock(p);
		return -ESTALE;
	}
	/* S1: the rest of the copy (a few MiB at most: the lock is held) */
	rc = rn_logcopy_finish(lc, p->log, atomic_load(&rt->move.truncations),
	    4 << 20);
	if (rc == -EAGAIN || rc == -ESTALE) {
		rn_part_unlock(p);
		return 0;
	}
	if (rc < 0)
		goto fail;
	atomic_store(&rt->move.state, RN_MOVE_SWAPPING);
	crash_point("finished");
	fut_name(rt, p->topic_id, fut, sizeof(fut));
	if ((fd = openat(lc->dst, RN_FUTURE_COMPLETE, O_WRONLY | O_CREAT |
	    O_TRUNC | O_CLOEXEC, 0644)) < 0) {
		rc = -errno;
		goto undo;
	}
	rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	if (rc == 0 && fsync(lc->dst) < 0)
		rc = -errno;
	if (rc < 0)
		goto undo;
	crash_point("marked");
	/* S2: the current replica out of the way */
	if ((rc = rn_logdir_retire(cfg->log_dirs[cur], rt->move.name, gone,
	    sizeof(gone))) != 0) {
		(void)rn_dirfail_check(p->shm, cur, cfg->log_dirs[cur], rc,
		    "renaming a moved replica for deletion");
		goto undo;
	}
	crash_point("retired");
	/* S3: the future replica in its place */
	snprintf(from, sizeof(from), "%s/%s", cfg->log_dirs[dest], fut);
	snprintf(to, sizeof(to), "%s/%s", cfg->log_dirs[dest], rt->move.name);
	if (rename(from, to) != 0 || sync_dir(cfg->log_dirs[dest]) != 0) {
		rc = -errno;
		rn_log_about(LOG_WARNING, rn_logdir_subject(rt->move.name,
		    topic), "swapping in %s: %s", from, strerror(-rc));
		/* the marked copy wins at the next start */
		(void)rn_dirfail_check(p->shm, dest, cfg->log_dirs[dest], rc,
		    "renaming a future replica");
		atomic_store(&rt->log.magic, 0);
		atomic_fetch_add(&rt->incarnation, 1);
		rn_part_unlock(p);
		return rc;
	}
	crash_point("renamed");
	/* S4: the slot's log is there now; every handle reopens */
	drop_marker(cfg->log_dirs[dest], rt->move.name);
	atomic_store(&rt->cur_dir, dest);
	move_clear(rt);
	atomic_fetch_add(&rt->incarnation, 1);
	rn_part_unlock(p);
	rn_log_about(LOG_INFO, rn_logdir_subject(rt->move.name, topic), "%s: "
	    "moved from %s to %s", rt->move.name, cfg->log_dirs[cur],
	    cfg->log_dirs[dest]);
	/* S5 */
	remove_retired(gone);
	return 1;
undo:
	(void)unlinkat(lc->dst, RN_FUTURE_COMPLETE, 0);
	atomic_store(&rt->move.state, RN_MOVE_CAUGHT_UP);
fail:
	(void)rn_dirfail_check(p->shm, dest, cfg->log_dirs[dest], rc,
	    "finishing a future replica");
	rn_part_unlock(p);
	return rc;
}

void
rn_part_move_abandon(struct rn_part *p, uint32_t seq, const char *why)
{
	struct rn_part_rt *rt = p->rt;
	char to[4400], topic[RN_TOPIC_MAX + 1];
	int32_t dest;

	to[0] = '\0';
	if (rn_part_lock(p) != 0)
		return;
	dest = atomic_load(&rt->move.dest);
	if (atomic_load(&rt->move.seq) != seq || dest < 0) {
		rn_part_unlock(p);
		return;
	}
	retire_future(p, dest, to, sizeof(to));
	move_clear(rt);
	want_dir(p->shm, rt, rn_part_dir(p));
	rn_part_unlock(p);
	rn_log_about(LOG_WARNING, rn_logdir_subject(rt->move.name, topic),
	    "%s: the move to %s is abandoned: %s", rt->move.name,
	    p->cfg->log_dirs[dest], why);
	remove_retired(to);
}

int32_t
rn_part_slot_dir_wanted(const struct rn_shm *shm, int32_t slot,
    const uint8_t id[16], int32_t partition)
{
	struct rn_part_rt *rt = slot_rt(shm, slot, id, partition);

	return rt != NULL ? atomic_load(&rt->move.assign_want) : -1;
}

void
rn_part_slot_dir_recorded(const struct rn_shm *shm, int32_t slot,
    const uint8_t id[16], int32_t partition, int32_t dir)
{
	struct rn_part_rt *rt = slot_rt(shm, slot, id, partition);
	int32_t want = dir;

	if (rt != NULL)
		atomic_compare_exchange_strong(&rt->move.assign_want, &want, -1);
}
