/*
 * Durability off the append path. The storage duty flushes the segments
 * a roll left behind in small steps (Kafka schedules that flush at the
 * roll) and moves each log's recovery point to the rolled-to base, so a
 * restart after a crash scans only from there; the worker that stops last
 * shuts every log down cleanly and marks the log dirs, so the next start
 * scans nothing.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "storage/logdir.h"
#include "storage/prodsnap.h"
#include "workers/partition/dirfail.h"
#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

/* One call waits for at most this much writeback. */
#define FLUSH_STEP_BYTES (4 << 20)
#define SNAP_SYNC_CAP 16

/* Rolled segments not yet below the recovery point (no handle needed). */
static bool
slot_needs_flush(const struct rn_part_table *t, const struct rn_mdv_topic *tp,
    const struct rn_mdv_partition *mp)
{
	struct rn_part_rt *rt = rn_part_slot_held(t, tp, mp);

	return rt != NULL &&
	    atomic_load(&rt->log.magic) == RN_LOG_SHARED_MAGIC &&
	    atomic_load(&rt->log.recovery_point) <
	    atomic_load(&rt->log.active_base_offset);
}

/* The producer snapshots taken at rolls in (from, upto], synced. */
static int
sync_snapshots(struct rn_part *p, int64_t from, int64_t upto)
{
	int64_t offs[SNAP_SYNC_CAP];
	int dirfd = rn_log_dirfd(p->log), n, i, rc;

	if ((n = rn_prodsnap_list(dirfd, offs, SNAP_SYNC_CAP)) < 0)
		return n;
	for (i = 0; i < n && i < SNAP_SYNC_CAP; i++)
		if (offs[i] > from && offs[i] <= upto &&
		    (rc = rn_prodsnap_sync(dirfd, offs[i])) < 0)
			return rc;
	return fsync(dirfd) < 0 ? -errno : 0;
}

/* Some of p's rolled segments: 1 all durable now, 0 more to do, -errno. */
static int
flush_some(struct rn_part *p)
{
	int64_t rp = rn_log_recovery_point(p->log), upto;
	uint32_t gen;
	int rc;

	rc = rn_log_flush_rolled_step(p->log, &p->flush, FLUSH_STEP_BYTES,
	    &upto, &gen);
	if (rc == 1 && upto > rp)
		rc = rn_part_txnindex_sync(p, rp, upto) == 0 &&
		    sync_snapshots(p, rp, upto) == 0 ? 1 : -EIO;
	if (rc != 1)
		return rc < 0 ? rn_part_io(p, rc, "flushing rolled segments") : 0;
	if (rn_part_lock(p) != 0)
		return 1;
	(void)rn_log_recovery_point_advance(p->log, gen, upto);
	rn_part_unlock(p);
	rn_part_snapshots_prune(p, rn_log_start_offset(p->log), -1);
	return 1;
}

bool
rn_part_flush_pass(struct rn_part_table *t, const struct rn_mdview *v,
    struct rn_part_pass *pass, int64_t deadline_us)
{
	while (pass->topic < v->n_topics) {
		const struct rn_mdv_topic *tp = &v->topics[pass->topic];
		const struct rn_mdv_partition *mp;
		struct rn_part *p;
		int16_t kerr;

		if (pass->part >= tp->n_parts) {
			pass->topic++;
			pass->part = 0;
			continue;
		}
		mp = &tp->parts[pass->part];
		if (!slot_needs_flush(t, tp, mp) ||
		    (p = rn_part_get(t, v, tp, mp, &kerr)) == NULL ||
		    flush_some(p) != 0)
			pass->part++;
		if (rn_now_us() >= deadline_us)
			return true;
	}
	pass->topic = pass->part = 0;
	return false;
}

/* The slot of a local replica this start opened (its slot-map bit). */
static bool
opened_this_start(const struct rn_part_table *t,
    const struct rn_mdv_partition *mp)
{
	return mp->slot >= 0 && (uint32_t)mp->slot < t->n &&
	    mp->dir != RN_MDV_DIR_LOST &&
	    rn_shm_slot_used(t->shm, (unsigned)mp->slot);
}

/* A local replica on disk that no worker opened, so nobody recovered it. */
static bool
unopened_on_disk(const struct rn_part_table *t, const struct rn_mdv_topic *tp,
    const struct rn_mdv_partition *mp, int *dir)
{
	char path[2048];

	*dir = mp->dir >= 0 && mp->dir < t->cfg->n_log_dirs ? mp->dir : 0;
	if (mp->slot < 0 || mp->dir == RN_MDV_DIR_LOST ||
	    opened_this_start(t, mp))
		return false;
	snprintf(path, sizeof(path), "%s/%s-%d", t->cfg->log_dirs[*dir],
	    tp->name, mp->p);
	return access(path, F_OK) == 0;
}

/*
 * One log at the stop: its producers' snapshot at its end, everything
 * flushed, its active indexes trimmed and epochs written (as Kafka closes
 * a log), then the handle closed, so a node with 100,000 logs does not
 * hold them all open at once.
 */
static int
shutdown_one(struct rn_part_table *t, struct rn_part *p)
{
	char topic[RN_TOPIC_MAX + 1];
	int rc;

	if ((rc = rn_part_lock(p)) == 0) {
		rc = rn_part_snapshot_producers(p, rn_log_end_offset(p->log), 1);
		if (rc == 0) {
			int64_t rp = rn_log_shutdown(p->log);	/* flushes */

			rc = rp < 0 ? (int)rp : 0;
		}
		rn_part_unlock(p);
	}
	if (rc != 0)
		rn_log_about(LOG_WARNING, rn_logdir_subject(rn_log_dir(p->log),
		    topic), "%s: cannot flush it at the stop: %s",
		    rn_log_dir(p->log), strerror(-rc));
	rn_part_handle_close(t, p);
	return rc;
}

/*
 * Every log this start opened, shut down; *bad_dirs gets the dirs where
 * that failed, and the dirs holding a log nobody opened since a start
 * without the marker (its tail was never checked: the next start must
 * scan it from its recovery point).
 */
static int
shutdown_flush_all(struct rn_part_table *t, const struct rn_mdview *v,
    uint32_t *bad_dirs)
{
	uint32_t clean_at_start = atomic_load(&t->shm->hdr->clean_dirs);
	int i, j, n = 0, dir;

	for (i = 0; i < v->n_topics; i++) {
		const struct rn_mdv_topic *tp = &v->topics[i];

		for (j = 0; j < tp->n_parts; j++) {
			const struct rn_mdv_partition *mp = &tp->parts[j];
			struct rn_part *p;
			int16_t kerr;

			if (unopened_on_disk(t, tp, mp, &dir)) {
				if (!(clean_at_start & (1u << dir)))
					*bad_dirs |= 1u << dir;
				continue;
			}
			if (!opened_this_start(t, mp))
				continue;
			if ((p = rn_part_get(t, v, tp, mp, &kerr)) == NULL) {
				*bad_dirs |= 1u << (mp->dir >= 0 ? mp->dir : 0);
				continue;
			}
			if (shutdown_one(t, p) != 0)
				*bad_dirs |= 1u << p->dir;
			n++;
		}
	}
	return n;
}

int
rn_part_shutdown_node(const struct rn_shm *shm, const struct rn_config *cfg)
{
	struct rn_part_table t;
	struct rn_mdview v;
	uint32_t bad = 0;
	int64_t t0 = rn_now_ms();
	int n, d, marked = 0;

	rn_mdview_init(&v);
	if (rn_part_table_init(&t, shm, cfg) != 0)
		return -ENOMEM;
	if (rn_mdview_refresh(&v, shm) < 0) {
		rn_part_table_close(&t);
		return -EAGAIN;
	}
	n = shutdown_flush_all(&t, &v, &bad);
	if (rn_part_checkpoint_recovery(&t, &v) != 0)
		bad = ~0u;
	(void)rn_part_checkpoint_hw(&t, &v);
	for (d = 0; d < cfg->n_log_dirs; d++) {
		if ((bad & (1u << d)) || rn_dirfail_offline(shm, d))
			continue;
		if (rn_logdir_mark_clean(cfg->log_dirs[d]) == 0)
			marked++;
	}
	log_info("clean shutdown: %d logs flushed and checkpointed in %lld ms; "
	    "%d of %d log dirs marked clean", n, (long long)(rn_now_ms() - t0),
	    marked, cfg->n_log_dirs);
	rn_mdview_free(&v);
	rn_part_table_close(&t);
	return 0;
}
