/*
 * Moving replicas between this node's log dirs, in the replica fetcher
 * that owns each partition (the one that fetches it as a follower), as
 * Kafka's ReplicaAlterLogDirsThread moves one replica at a time. A move
 * is recorded in the partition's slot by the network worker that took
 * the AlterReplicaLogDirs (or found on disk when the slot was taken after
 * a restart: workers/partition/move.c); here the log is copied into the
 * future replica a bounded step per turn of the fetcher's loop
 * (storage/logcopy.c: copy_file_range, no buffer), then marked caught up
 * (the broker agent has its destination recorded), then swapped in under
 * the partition's lock once the image records the destination.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "workers/fetcher/mover.h"
#include "workers/partition/dirfail.h"
#include "workers/partition/partition.h"
#include "workers/worker.h"

/* Bytes copied per turn: a few milliseconds of the loop. */
#define STEP_BYTES (16 << 20)
/* Caught up: the active segment within this of the source's. */
#define NEAR_BYTES (1 << 20)
#define SCAN_MS 1000
/* After a start, the image is looked at for future replicas on disk
 * (a move a crash cut short) for this long. */
#define PROBE_MS 60000

static uint32_t
part_hash(const uint8_t id[16], int32_t p)
{
	return rn_hash32_more(rn_hash32(id, 16), &p, sizeof(p));
}

bool
rn_fetcher_owns(const struct rn_worker *w, const uint8_t id[16],
    int32_t partition)
{
	return part_hash(id, partition) % w->env->n_fetchers == w->index;
}

void
rn_mover_init(struct rn_mover *m, struct rn_worker *w)
{
	memset(m, 0, sizeof(*m));
	m->w = w;
	m->lc.dst = -1;
	m->probe_until_ms = rn_now_ms() + PROBE_MS;
	rn_replquota_init_key(&m->quota,
	    "replica.alter.log.dirs.io.max.bytes.per.second");
}

static void
stop(struct rn_mover *m)
{
	rn_logcopy_free(&m->lc);
	m->active = false;
}

/*
 * The move was cancelled or sent elsewhere: whoever did it renamed its
 * future replica "-delete" and removed the tree, but a file this copy
 * made meanwhile may have kept it; what is left goes now. A future dir
 * still under its own name is left alone (a restarted copy reuses it).
 */
static void
stop_cancelled(struct rn_mover *m)
{
	char link[64], path[4400];
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", m->lc.dst);
	k = m->lc.dst >= 0 ? readlink(link, path, sizeof(path) - 1) : -1;
	if (k > 7) {
		path[k] = '\0';
		if (strcmp(path + k - 7, "-delete") == 0) {
			rn_logcopy_discard(&m->lc);
			(void)rmdir(path);
		}
	}
	stop(m);
}

void
rn_mover_free(struct rn_mover *m)
{
	if (m->active)
		stop(m);
}

/*
 * After a start: a future replica on disk for a partition this fetcher
 * owns means a move a crash cut short; taking the slot (rn_part_get)
 * finishes or resumes it.
 */
static void
probe(struct rn_mover *m, struct rn_part_table *parts,
    const struct rn_mdview *v)
{
	const struct rn_config *cfg = m->w->env->cfg;
	int i, j, d;

	for (i = 0; i < v->n_topics; i++) {
		const struct rn_mdv_topic *t = &v->topics[i];
		char fut[RN_PART_DIRNAME_MAX + 64], path[4400];

		for (j = 0; j < t->n_parts; j++) {
			const struct rn_mdv_partition *mp = &t->parts[j];
			struct stat st;
			int16_t kerr;

			if (mp->slot < 0 || mp->dir == RN_MDV_DIR_LOST ||
			    !rn_fetcher_owns(m->w, t->id, mp->p) ||
			    rn_part_future_name(fut, sizeof(fut), t->name,
			    mp->p, t->id) != 0)
				continue;
			for (d = 0; d < cfg->n_log_dirs; d++) {
				snprintf(path, sizeof(path), "%s/%s",
				    cfg->log_dirs[d], fut);
				if (stat(path, &st) == 0) {
					(void)rn_part_get(parts, v, t, mp, &kerr);
					break;
				}
			}
		}
	}
}

/* The first move recorded in a slot of a partition this fetcher owns. */
static bool
find(struct rn_mover *m, const struct rn_mdview *v,
    const struct rn_mdv_topic **tp, const struct rn_mdv_partition **mpp,
    struct rn_part_move_info *mi)
{
	const struct rn_shm *shm = m->w->env->shm;
	int i, j;

	for (i = 0; i < v->n_topics; i++) {
		const struct rn_mdv_topic *t = &v->topics[i];

		for (j = 0; j < t->n_parts; j++) {
			const struct rn_mdv_partition *mp = &t->parts[j];

			if (mp->slot < 0 || !rn_fetcher_owns(m->w, t->id, mp->p) ||
			    !rn_part_slot_move(shm, mp->slot, t->id, mp->p, mi) ||
			    mi->state == RN_MOVE_SWAPPING)
				continue;
			*tp = t;
			*mpp = mp;
			return true;
		}
	}
	return false;
}

static bool
start(struct rn_mover *m, struct rn_part_table *parts,
    const struct rn_mdview *v)
{
	const struct rn_config *cfg = m->w->env->cfg;
	const struct rn_mdv_topic *t;
	const struct rn_mdv_partition *mp;
	struct rn_part_move_info mi;
	char fut[RN_PART_DIRNAME_MAX + 64], path[4400];
	struct rn_part *p;
	uint32_t seq;
	int16_t kerr;
	int fd;

	if (!find(m, v, &t, &mp, &mi))
		return false;
	if ((p = rn_part_get(parts, v, t, mp, &kerr)) == NULL)
		return false;	/* not now: the next scan */
	/* taking the handle may have finished a swap its worker died in */
	seq = mi.seq;
	if (!rn_part_slot_move(m->w->env->shm, mp->slot, t->id, mp->p, &mi) ||
	    mi.seq != seq || mi.state == RN_MOVE_SWAPPING)
		return false;
	if (rn_part_future_name(fut, sizeof(fut), t->name, mp->p, t->id) != 0) {
		rn_part_move_abandon(p, mi.seq, "its name is too long");
		return false;
	}
	snprintf(path, sizeof(path), "%s/%s", cfg->log_dirs[mi.dest], fut);
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		fd = -1;
	else
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		(void)rn_dirfail_check(m->w->env->shm, mi.dest,
		    cfg->log_dirs[mi.dest], -errno, "opening a future replica");
		rn_part_move_abandon(p, mi.seq, strerror(errno));
		return false;
	}
	/* a copy always starts over: what a crash left there goes */
	rn_logcopy_init(&m->lc, fd);
	m->active = true;
	m->asked = false;
	m->slot = mp->slot;
	m->partition = mp->p;
	m->dest = mi.dest;
	m->seq = mi.seq;
	memcpy(m->id, t->id, 16);
	m->started_ms = rn_now_ms();
	m->caught_ms = 0;
	rn_log_about(LOG_INFO, rn_subj_part(t->name, mp->p), "%s-%d: copying "
	    "to %s", t->name, mp->p, path);
	return true;
}

static void
done(struct rn_mover *m, const struct rn_mdv_topic *t)
{
	int64_t ms = rn_now_ms() - m->started_ms;

	rn_log_about(LOG_INFO, rn_subj_part(t->name, m->partition), "%s-%d: "
	    "moved to %s in %lld ms (%lld bytes copied, %.1f MB/s; caught up "
	    "after %lld ms)", t->name, m->partition,
	    m->w->env->cfg->log_dirs[m->dest], (long long)ms,
	    (long long)m->lc.copied, ms > 0 ? (double)m->lc.copied / 1e3 /
	    (double)ms : 0.0, (long long)(m->caught_ms - m->started_ms));
	stop(m);
}

/* One bounded step of the move under way. */
static void
step(struct rn_mover *m, struct rn_part_table *parts,
    const struct rn_mdview *v)
{
	const struct rn_shm *shm = m->w->env->shm;
	const struct rn_mdv_topic *t = rn_mdview_topic_by_id(v, m->id);
	const struct rn_mdv_partition *mp = t != NULL ?
	    rn_mdview_partition(t, m->partition) : NULL;
	struct rn_part_move_info mi;
	struct rn_part *p;
	int64_t before;
	int32_t budget;
	int16_t kerr;
	int rc;

	if (mp == NULL || mp->slot != m->slot ||
	    !rn_part_slot_move(shm, m->slot, m->id, m->partition, &mi) ||
	    mi.seq != m->seq || mi.dest != m->dest) {
		/* cancelled, sent elsewhere, or the replica went away: who
		 * changed it removed the future replica */
		stop_cancelled(m);
		return;
	}
	if ((p = rn_part_get(parts, v, t, mp, &kerr)) == NULL)
		return;	/* its dir went offline, or a stale image: later */
	if (rn_dirfail_offline(shm, m->dest)) {
		rn_part_move_abandon(p, m->seq, "its destination is offline");
		stop(m);
		return;
	}
	/* Kafka's replica.alter.log.dirs.io.max.bytes.per.second */
	budget = rn_replquota_allowance(&m->quota, STEP_BYTES);
	before = m->lc.copied;
	rc = rn_logcopy_step(&m->lc, p->log, rn_part_truncations(p), budget,
	    NEAR_BYTES);
	rn_replquota_charge(&m->quota, (size_t)(m->lc.copied - before));
	if (rc < 0) {
		(void)rn_dirfail_check(shm, m->dest,
		    m->w->env->cfg->log_dirs[m->dest], rc, "copying a replica");
		rn_part_move_abandon(p, m->seq, strerror(-rc));
		stop(m);
		return;
	}
	rn_part_move_progress(p, m->seq, m->lc.bytes, m->lc.end_offset);
	if (rc == 1 && !m->asked) {
		if (m->caught_ms == 0)
			m->caught_ms = rn_now_ms();
		/* Kafka 3.7's order: the destination recorded first, then
		 * the swap (ReplicaAlterLogDirsThread) */
		m->asked = rn_part_move_caught_up(p, m->seq);
		if (m->asked)
			rn_log_about(LOG_INFO, rn_subj_part(t->name,
			    m->partition), "%s-%d: the copy caught up: asking "
			    "for %s to be recorded", t->name, m->partition,
			    m->w->env->cfg->log_dirs[m->dest]);
	}
	if (!m->asked || mp->dir != m->dest)
		return;
	rc = rn_part_move_swap(p, m->seq, &m->lc);
	if (rc == 1)
		done(m, t);
	else if (rc == -ESTALE)
		stop(m);
	else if (rc < 0) {
		rn_part_move_abandon(p, m->seq, strerror(-rc));
		stop(m);
	}
}

bool
rn_mover_turn(struct rn_mover *m, struct rn_part_table *parts,
    const struct rn_mdview *v)
{
	const struct rn_shm *shm = m->w->env->shm;
	int64_t now = rn_now_ms();
	uint32_t asked = atomic_load(&shm->hdr->moves_requested);
	int64_t copied;

	rn_replquota_update(&m->quota, v, m->w->env->cfg,
	    (int)m->w->env->n_fetchers);
	if (v->version != m->probed_version && now < m->probe_until_ms &&
	    now >= m->next_probe_ms && v->n_topics > 0) {
		m->probed_version = v->version;
		m->next_probe_ms = now + SCAN_MS;
		probe(m, parts, v);
	}
	if (!m->active && (now >= m->next_scan_ms || asked != m->moves_seen)) {
		m->moves_seen = asked;
		m->next_scan_ms = now + SCAN_MS;
		if (!start(m, parts, v))
			return false;
	}
	if (!m->active)
		return false;
	copied = m->lc.copied;
	step(m, parts, v);
	/* a copy waiting for its destination to be recorded does not spin */
	return m->active && m->lc.copied != copied;
}
