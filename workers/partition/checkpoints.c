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

/* The clean stop's checkpoints: the storage duty's pass (ckpt_pass.c)
 * run to its end here, its files read and written inline. */
int
rn_part_checkpoint_hw(struct rn_part_table *t, const struct rn_mdview *v)
{
	return rn_ckpt_pass_run(t, v, RN_CKPT_HW);
}

int
rn_part_checkpoint_recovery(struct rn_part_table *t, const struct rn_mdview *v)
{
	return rn_ckpt_pass_run(t, v, RN_CKPT_RECOVERY);
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
