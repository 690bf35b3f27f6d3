/*
 * The storage duty's periodic checkpoints (replication-offset-checkpoint
 * every 5 s, recovery-point-offset-checkpoint every
 * log.flush.offset.checkpoint.interval.ms) without holding the worker's
 * clients: each file lists every local partition, and at 100,000
 * partitions building and syncing it took 10-30 ms of one loop turn, a
 * stall every produce and fetch on that worker saw in its p99. Here the
 * entries are gathered a bounded step per turn, straight into each log
 * dir's text (buffers kept from pass to pass), and a thread writes the
 * files (tmp, fsync, rename, fsync of the dir); for the recovery points
 * the same thread first reads the old files, whose entries a log not open
 * in this start keeps. The loop looks at the thread's work once a turn.
 * The clean stop runs the same pass to its end inline (rn_ckpt_pass_run).
 */
#include "autoconf.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "storage/checkpoint.h"
#include "workers/partition/dirfail.h"
#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

/* Room before the entries for the header, "0\n<count>\n". */
#define CKPT_HEAD 32
/* A pass the image's topics changed under starts again, this often; then
 * it finishes in one go, so a churning image cannot starve it. */
#define CKPT_RESTARTS 3

enum ckpt_state { CKPT_IDLE, CKPT_LOADING, CKPT_GATHERING, CKPT_WRITING };

struct ckpt_dir {
	char path[1100];
	char *p;                   /* CKPT_HEAD bytes, then the entries */
	size_t len, cap, count;
	struct rn_tp_offset *old;  /* the file as it was (recovery points) */
	size_t n_old;
	bool online, write;
	int rc;
};

struct rn_ckpt_pass {
	enum rn_ckpt_kind kind;
	enum ckpt_state state;
	bool inline_jobs;          /* the clean stop: no thread */
	pthread_t thread;
	atomic_bool thread_done;
	int topic, part;           /* the gathering's place in the image */
	uint64_t body_version;
	int restarts;
	int n_dirs;
	struct ckpt_dir d[RN_CONFIG_MAX_LOGDIRS];
};

struct rn_ckpt_pass *
rn_ckpt_pass_new(enum rn_ckpt_kind kind)
{
	struct rn_ckpt_pass *c = calloc(1, sizeof(*c));

	if (c != NULL)
		c->kind = kind;
	return c;
}

static const char *
ckpt_file(const struct rn_ckpt_pass *c)
{
	return c->kind == RN_CKPT_HW ? RN_REPLICATION_CHECKPOINT :
	    RN_RECOVERY_POINT_CHECKPOINT;
}

static void
ckpt_forget_old(struct rn_ckpt_pass *c)
{
	int i;

	for (i = 0; i < c->n_dirs; i++) {
		free(c->d[i].old);
		c->d[i].old = NULL;
		c->d[i].n_old = 0;
	}
}

/* The thread's jobs: read and sort the old files, or write the new. */
static void *
ckpt_load_job(void *arg)
{
	struct rn_ckpt_pass *c = arg;
	int i;

	for (i = 0; i < c->n_dirs; i++) {
		struct ckpt_dir *d = &c->d[i];

		if (d->online &&
		    rn_offset_checkpoint_read(d->path, &d->old, &d->n_old) == 0)
			qsort(d->old, d->n_old, sizeof(*d->old), rn_part_ckpt_cmp);
	}
	atomic_store(&c->thread_done, true);
	return NULL;
}

static void *
ckpt_write_job(void *arg)
{
	struct rn_ckpt_pass *c = arg;
	int i;

	for (i = 0; i < c->n_dirs; i++) {
		struct ckpt_dir *d = &c->d[i];
		char head[CKPT_HEAD];
		int hl;

		if (!d->write)
			continue;
		hl = snprintf(head, sizeof(head), "0\n%zu\n", d->count);
		memcpy(d->p + CKPT_HEAD - hl, head, (size_t)hl);
		d->rc = rn_ckpt_write_atomic(d->path, d->p + CKPT_HEAD - hl,
		    d->len - CKPT_HEAD + (size_t)hl);
	}
	atomic_store(&c->thread_done, true);
	return NULL;
}

static bool
ckpt_spawn(struct rn_ckpt_pass *c, void *(*job)(void *))
{
	atomic_store(&c->thread_done, false);
	if (c->inline_jobs || pthread_create(&c->thread, NULL, job, c) != 0) {
		job(c);	/* here, once: asked to, or no thread to be had */
		return false;
	}
	return true;
}

/* The thread's job is over (joined), or none runs; false: still at it. */
static bool
ckpt_joined(struct rn_ckpt_pass *c, bool *spawned)
{
	if (!*spawned)
		return true;
	if (!atomic_load(&c->thread_done))
		return false;
	pthread_join(c->thread, NULL);
	*spawned = false;
	return true;
}

static bool
ckpt_reserve(struct ckpt_dir *d, size_t more)
{
	char *np;
	size_t ncap;

	if (d->cap - d->len >= more)
		return true;
	ncap = d->cap ? d->cap * 2 : 65536;
	while (ncap - d->len < more)
		ncap *= 2;
	if ((np = realloc(d->p, ncap)) == NULL)
		return false;
	d->p = np;
	d->cap = ncap;
	return true;
}

/* "topic partition offset\n", without printf: 100,000 of them a pass. */
static bool
ckpt_append(struct ckpt_dir *d, const char *topic, int32_t partition,
    int64_t offset)
{
	size_t tl = strlen(topic);
	char num[48], *q = num + sizeof(num);
	uint64_t o = (uint64_t)offset, pt = (uint64_t)(uint32_t)partition;

	*--q = '\n';
	do
		*--q = (char)('0' + o % 10);
	while ((o /= 10) != 0);
	*--q = ' ';
	do
		*--q = (char)('0' + pt % 10);
	while ((pt /= 10) != 0);
	*--q = ' ';
	if (!ckpt_reserve(d, tl + (size_t)(num + sizeof(num) - q)))
		return false;
	memcpy(d->p + d->len, topic, tl);
	memcpy(d->p + d->len + tl, q, (size_t)(num + sizeof(num) - q));
	d->len += tl + (size_t)(num + sizeof(num) - q);
	d->count++;
	return true;
}

static void
ckpt_gather_begin(struct rn_ckpt_pass *c, const struct rn_mdview *v)
{
	int i;

	c->topic = c->part = 0;
	c->body_version = v->body_version;
	for (i = 0; i < c->n_dirs; i++) {
		c->d[i].len = CKPT_HEAD;
		c->d[i].count = 0;
	}
}

/* One partition's entries: where its log is, or (recovery points of a
 * log not open in this start) wherever the old files had it. */
static bool
ckpt_gather_one(struct rn_ckpt_pass *c, const struct rn_part_table *t,
    const struct rn_mdv_topic *tp, const struct rn_mdv_partition *mp)
{
	struct rn_part_rt *rt;
	int64_t off;
	int i;

	if (mp->slot < 0 || mp->dir == RN_MDV_DIR_LOST)
		return true;
	rt = rn_part_slot_held(t, tp, mp);
	off = rt == NULL ? -1 : c->kind == RN_CKPT_HW ?
	    rn_part_ckpt_hw_value(rt) : rn_part_ckpt_rp_value(rt);
	for (i = 0; i < c->n_dirs; i++) {
		struct ckpt_dir *d = &c->d[i];
		int64_t here = off;

		if (!d->online)
			continue;
		if (off < 0 && c->kind == RN_CKPT_RECOVERY && (rt == NULL ||
		    rn_part_ckpt_dir(rt, mp) == i))
			here = rn_part_ckpt_lookup(d->old, d->n_old, tp->name,
			    mp->p);
		else if (rt == NULL || rn_part_ckpt_dir(rt, mp) != i)
			continue;
		if (here >= 0 && !ckpt_append(d, tp->name, mp->p, here))
			return false;
	}
	return true;
}

/* Some of the gathering; true once it is complete. */
static bool
ckpt_gather(struct rn_ckpt_pass *c, const struct rn_part_table *t,
    const struct rn_mdview *v, int64_t deadline_us)
{
	unsigned n = 0;

	if (v->body_version != c->body_version) {
		/* topics came or went: the place in the image means nothing */
		c->restarts++;
		ckpt_gather_begin(c, v);
	}
	if (c->restarts > CKPT_RESTARTS)
		deadline_us = INT64_MAX;
	while (c->topic < v->n_topics) {
		const struct rn_mdv_topic *tp = &v->topics[c->topic];

		if (c->part >= tp->n_parts) {
			c->topic++;
			c->part = 0;
			continue;
		}
		if (!ckpt_gather_one(c, t, tp, &tp->parts[c->part++])) {
			log_warnx("no memory for the %s: skipping it this time",
			    ckpt_file(c));
			ckpt_forget_old(c);
			c->state = CKPT_IDLE;
			return false;
		}
		if ((++n & 63) == 0 && rn_now_us() >= deadline_us)
			return false;
	}
	return true;
}

bool
rn_ckpt_pass_start(struct rn_ckpt_pass *c, const struct rn_part_table *t,
    const struct rn_mdview *v)
{
	bool spawned = false;
	int i;

	if (c->state != CKPT_IDLE)
		return false;
	c->n_dirs = t->cfg->n_log_dirs;
	c->restarts = 0;
	for (i = 0; i < c->n_dirs; i++) {
		struct ckpt_dir *d = &c->d[i];

		snprintf(d->path, sizeof(d->path), "%s/%s", t->cfg->log_dirs[i],
		    ckpt_file(c));
		d->online = !rn_dirfail_offline(t->shm, i);
		d->write = false;
		d->rc = 0;
		if (!ckpt_reserve(d, CKPT_HEAD))
			return false;
	}
	ckpt_gather_begin(c, v);
	if (c->kind == RN_CKPT_RECOVERY) {
		c->state = CKPT_LOADING;
		spawned = ckpt_spawn(c, ckpt_load_job);
	}
	if (!spawned)
		c->state = CKPT_GATHERING;
	return true;
}

/* The written files' outcome: a failed write may take its dir offline. */
static void
ckpt_written(struct rn_ckpt_pass *c, const struct rn_part_table *t)
{
	int i;

	for (i = 0; i < c->n_dirs; i++) {
		struct ckpt_dir *d = &c->d[i];

		if (!d->write || d->rc == 0)
			continue;
		log_warnx("cannot write %s: %s", d->path, strerror(-d->rc));
		(void)rn_dirfail_check(t->shm, i, t->cfg->log_dirs[i], d->rc,
		    c->kind == RN_CKPT_HW ?
		    "writing the high-watermark checkpoint" :
		    "writing the recovery-point checkpoint");
	}
}

bool
rn_ckpt_pass_step(struct rn_ckpt_pass *c, const struct rn_part_table *t,
    const struct rn_mdview *v, int64_t deadline_us)
{
	bool spawned = c->state == CKPT_LOADING || c->state == CKPT_WRITING;
	int i;

	switch (c->state) {
	case CKPT_IDLE:
		return false;
	case CKPT_LOADING:
		if (!ckpt_joined(c, &spawned))
			return false;
		c->state = CKPT_GATHERING;
		/* FALLTHROUGH */
	case CKPT_GATHERING:
		if (!ckpt_gather(c, t, v, deadline_us))
			return c->state == CKPT_GATHERING;
		ckpt_forget_old(c);
		for (i = 0; i < c->n_dirs; i++)
			c->d[i].write = c->d[i].online && c->d[i].count > 0 &&
			    !rn_dirfail_offline(t->shm, i);
		c->state = CKPT_WRITING;
		if (ckpt_spawn(c, ckpt_write_job))
			return false;
		/* written here already */
		spawned = false;
		/* FALLTHROUGH */
	case CKPT_WRITING:
		if (!ckpt_joined(c, &spawned))
			return false;
		ckpt_written(c, t);
		c->state = CKPT_IDLE;
		return false;
	}
	return false;
}

void
rn_ckpt_pass_free(struct rn_ckpt_pass *c)
{
	int i;

	if (c == NULL)
		return;
	if (c->state == CKPT_LOADING || c->state == CKPT_WRITING)
		pthread_join(c->thread, NULL);
	ckpt_forget_old(c);
	for (i = 0; i < RN_CONFIG_MAX_LOGDIRS; i++)
		free(c->d[i].p);
	free(c);
}

int
rn_ckpt_pass_run(struct rn_part_table *t, const struct rn_mdview *v,
    enum rn_ckpt_kind kind)
{
	struct rn_ckpt_pass *c = rn_ckpt_pass_new(kind);
	int i, rc = 0;

	if (c == NULL)
		return -ENOMEM;
	c->inline_jobs = true;
	if (!rn_ckpt_pass_start(c, t, v)) {
		rn_ckpt_pass_free(c);
		return -ENOMEM;
	}
	while (rn_ckpt_pass_step(c, t, v, INT64_MAX))
		;
	for (i = 0; i < c->n_dirs; i++)
		if (c->d[i].write && c->d[i].rc != 0)
			rc = c->d[i].rc;
	rn_ckpt_pass_free(c);
	return rc;
}
