/*
 * Each log dir's offset checkpoints, in Kafka's text format: the high
 * watermarks (replication-offset-checkpoint) and the recovery points
 * (recovery-point-offset-checkpoint) of its local partitions, written by
 * the storage duty and at a clean shutdown, read when a slot is taken.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/log.h"
#include "ipc/mdimage.h"
#include "storage/checkpoint.h"
#include "workers/partition/dirfail.h"
#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

int
rn_part_ckpt_cmp(const void *a, const void *b)
{
	const struct rn_tp_offset *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);

	return c != 0 ? c : (x->partition > y->partition) -
	    (x->partition < y->partition);
}

int64_t
rn_part_ckpt_lookup(const struct rn_tp_offset *e, size_t n, const char *topic,
    int32_t partition)
{
	struct rn_tp_offset key;
	const struct rn_tp_offset *hit;

	if (n == 0 || strlcpy(key.topic, topic, sizeof(key.topic)) >=
	    sizeof(key.topic))
		return -1;
	key.partition = partition;
	hit = bsearch(&key, e, n, sizeof(*e), rn_part_ckpt_cmp);
	return hit != NULL ? hit->offset : -1;
}

/*
 * A checkpoint file read and sorted once, kept while the file stays the
 * same: after a start every log's first open looks itself up, and with
 * 100,000 partitions a read per open was quadratic.
 */
struct ckpt_file {
	char path[1100];
	struct stat st;
	struct rn_tp_offset *e;
	size_t n;
};

#define CKPT_CACHED 8

static const struct ckpt_file *
ckpt_cached(const char *path)
{
	static struct ckpt_file cache[CKPT_CACHED];
	static unsigned next;
	struct ckpt_file *f = NULL;
	struct stat st;
	unsigned i;

	if (stat(path, &st) != 0)
		return NULL;
	for (i = 0; i < CKPT_CACHED && f == NULL; i++)
		if (strcmp(cache[i].path, path) == 0)
			f = &cache[i];
	if (f != NULL && f->st.st_ino == st.st_ino &&
	    f->st.st_size == st.st_size &&
	    f->st.st_mtim.tv_sec == st.st_mtim.tv_sec &&
	    f->st.st_mtim.tv_nsec == st.st_mtim.tv_nsec)
		return f;
	if (f == NULL)
		f = &cache[next++ % CKPT_CACHED];
	free(f->e);
	f->e = NULL;
	f->n = 0;
	f->path[0] = '\0';
	if (rn_offset_checkpoint_read(path, &f->e, &f->n) != 0)
		return NULL;
	qsort(f->e, f->n, sizeof(*f->e), rn_part_ckpt_cmp);
	strlcpy(f->path, path, sizeof(f->path));
	f->st = st;
	return f;
}

int64_t
rn_part_checkpointed(const char *root, const char *file, const char *topic,
    int32_t partition)
{
	const struct ckpt_file *f;
	char path[1100];

	snprintf(path, sizeof(path), "%s/%s", root, file);
	if ((f = ckpt_cached(path)) == NULL)
		return -1;
	return rn_part_ckpt_lookup(f->e, f->n, topic, partition);
}

int
rn_part_ckpt_dir(const struct rn_part_rt *rt,
    const struct rn_mdv_partition *mp)
{
	int32_t ld = atomic_load(&rt->cur_dir);

	return ld >= 0 ? ld : (mp->dir >= 0 ? mp->dir : 0);
}

int64_t
rn_part_ckpt_hw_value(const struct rn_part_rt *rt)
{
	return atomic_load(&rt->high_watermark);
}

int64_t
rn_part_ckpt_rp_value(const struct rn_part_rt *rt)
{
	uint64_t magic = atomic_load(&rt->log.magic);

	/* a log shut down at the stop keeps the point it was shut at */
	return magic == RN_LOG_SHARED_MAGIC || magic == RN_LOG_SHARED_SHUT ?
	    atomic_load(&rt->log.recovery_point) : -1;
}

/*
 * One checkpoint file per online log dir: value(slot) of every local
 * partition there; one without a value keeps the file's old entry when
 * keep_old (its log untouched since), else is left out.
 */
static int
ckpt_write_all(struct rn_part_table *t, const struct rn_mdview *v,
    const char *file, int64_t (*value)(const struct rn_part_rt *),
    bool keep_old, const char *what)
{
	struct rn_tp_offset *e;
	size_t max = 0;
	int d, i, j, rc = 0;

	for (i = 0; i < v->n_topics; i++)
		max += (size_t)v->topics[i].n_parts;
	if (max > t->n)
		max = t->n;
	if ((e = calloc(max ? max : 1, sizeof(*e))) == NULL)
		return -ENOMEM;
	for (d = 0; d < t->cfg->n_log_dirs; d++) {
		struct rn_tp_offset *old = NULL;
		size_t n = 0, n_old = 0;
		char path[1100];
		int wrc;

		if (rn_dirfail_offline(t->shm, d))
			continue;
		snprintf(path, sizeof(path), "%s/%s", t->cfg->log_dirs[d], file);
		if (keep_old &&
		    rn_offset_checkpoint_read(path, &old, &n_old) == 0)
			qsort(old, n_old, sizeof(*old), rn_part_ckpt_cmp);
		for (i = 0; i < v->n_topics; i++) {
			const struct rn_mdv_topic *tp = &v->topics[i];

			for (j = 0; j < tp->n_parts && n < max; j++) {
				const struct rn_mdv_partition *mp = &tp->parts[j];
				struct rn_part_rt *rt =
				    rn_part_slot_held(t, tp, mp);
				int64_t off = rt != NULL ? value(rt) : -1;

				if (mp->slot < 0 || mp->dir == RN_MDV_DIR_LOST)
					continue;
				if (off < 0 && keep_old && (rt == NULL ||
				    rn_part_ckpt_dir(rt, mp) == d))
					off = rn_part_ckpt_lookup(old, n_old,
					    tp->name, mp->p);
				else if (rt == NULL || rn_part_ckpt_dir(rt, mp) != d)
					continue;
				if (off < 0)
					continue;
				strlcpy(e[n].topic, tp->name, sizeof(e[n].topic));
				e[n].partition = mp->p;
				e[n].offset = off;
				n++;
			}
		}
		free(old);
		if (n > 0 && (wrc = rn_offset_checkpoint_write(path, e, n)) != 0) {
			log_warnx("cannot write %s: %s", path, strerror(-wrc));
			(void)rn_dirfail_check(t->shm, d, t->cfg->log_dirs[d],
			    wrc, what);
			rc = wrc;
		}
	}
	free(e);
	return rc;
}

int
rn_part_checkpoint_hw(struct rn_part_table *t, const struct rn_mdview *v)
{
	return ckpt_write_all(t, v, RN_REPLICATION_CHECKPOINT,
	    rn_part_ckpt_hw_value, false,
	    "writing the high-watermark checkpoint");
}

int
rn_part_checkpoint_recovery(struct rn_part_table *t, const struct rn_mdview *v)
{
	return ckpt_write_all(t, v, RN_RECOVERY_POINT_CHECKPOINT,
	    rn_part_ckpt_rp_value, true,
	    "writing the recovery-point checkpoint");
}

void
rn_part_recovery_input(const struct rn_part_table *t, int dir,
    const char *topic, int32_t partition, bool fresh,
    struct rn_log_recovery *rec)
{
	int64_t rp = rn_part_checkpointed(t->cfg->log_dirs[dir],
	    RN_RECOVERY_POINT_CHECKPOINT, topic, partition);

	rec->recovery_point = rp > 0 ? rp : 0;
	rec->log_start_offset = -1;
	/*
	 * The marker vouches for the logs as the last clean stop left them:
	 * only for the first open of this start, and only for a log the
	 * stop checkpointed (a log recovered again later, after a writer
	 * died, is scanned from its recovery point).
	 */
	rec->clean_shutdown = fresh && rp >= 0 &&
	    (atomic_load(&t->shm->hdr->clean_dirs) & (1u << dir)) != 0;
}
