/*
 * The log cleaner worker: compacts the local replicas (leaders and
 * followers alike) of topics whose cleanup.policy has "compact". Each
 * round it looks at every such log the metadata image places on this node,
 * takes the one most worth cleaning (pick.c) and cleans it (clean.c); with
 * nothing to do it sleeps log.cleaner.backoff.ms. Its own process, so a
 * crash in it costs a restart and a cleaning done again, never a broker.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "storage/swap.h"
#include "workers/cleaner/ckpt.h"
#include "workers/cleaner/cl_int.h"
#include "workers/cleaner/cleaner.h"
#include "workers/partition/idempotence.h"
#include "workers/partition/partition.h"
#include "workers/peer.h"
#include "workers/worker.h"

#define RETRY_FAILED_MS 60000   /* a log whose cleaning failed waits */

/* What the cleaner remembers of one partition slot. */
struct cl_slot {
	uint8_t id[16];
	int32_t p;
	int64_t horizon_ms;     /* earliest tombstone horizon; 0: unknown */
	int64_t retry_ms;
	bool tidied;            /* leftovers of a killed cleaner removed */
};

struct cleaner {
	struct rn_worker *w;
	const struct rn_config *cfg;
	struct rn_mdview view;
	struct rn_part_table parts;
	struct cl_ctx ctx;
	struct cl_ckpt ck[RN_CONFIG_MAX_LOGDIRS];
	struct cl_slot *slots;
	struct rn_log_seginfo segs[CL_MAX_SEGS];
};

/* The best candidate of a round. */
struct cand {
	struct rn_part *p;
	const struct rn_mdv_topic *t;
	const struct rn_mdv_partition *mp;
	struct cl_params prm;
	struct cl_range r;
	double score;
};

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A log.cleaner.* key as this broker has it now (dynamic, static, default). */
static double
broker_double(const struct cleaner *c, const char *key, double dflt)
{
	enum rn_config_source src;
	const char *v = NULL;
	char buf[64], *end;
	double d;

	if (rn_mdview_broker_config(&c->view, c->cfg, key, &v, &src, buf,
	    sizeof(buf)) != 0 || v == NULL || src == RN_CFGSRC_DEFAULT_CONFIG)
		return dflt;	/* runnel's default may differ from Kafka's */
	d = strtod(v, &end);
	return *v != '\0' && *end == '\0' ? d : dflt;
}

static bool
has_compact(const char *policy)
{
	const char *p;

	for (p = strstr(policy, "compact"); p != NULL; p = strstr(p + 1, "compact"))
		if ((p == policy || p[-1] == ',' || p[-1] == ' ') &&
		    (p[7] == '\0' || p[7] == ',' || p[7] == ' '))
			return true;
	return false;
}

static bool
local_replica(const struct rn_mdv_partition *mp, int32_t self)
{
	if (mp->slot < 0 || mp->dir < 0)
		return false;
	for (int i = 0; i < mp->n_replicas; i++)
		if (mp->replicas[i] == self)
			return true;
	return false;
}

/* The topic's cleaning configs; false if it is not compacted. */
static bool
topic_params(struct cleaner *c, const struct rn_mdv_topic *t,
    struct cl_params *prm)
{
	char buf[64];
	const struct rn_mdview *v = &c->view;
	struct rn_log_config lc;

	rn_part_config_str(v, t, c->cfg, "cleanup.policy", buf, sizeof(buf));
	if (!has_compact(buf))
		return false;
	memset(prm, 0, sizeof(*prm));
	rn_part_log_config(v, t, c->cfg, &lc);
	prm->now_ms = wall_ms();
	prm->delete_retention_ms = rn_part_config_int(v, t, c->cfg,
	    "delete.retention.ms", 86400000);
	prm->min_lag_ms = rn_part_config_int(v, t, c->cfg,
	    "min.compaction.lag.ms", 0);
	prm->max_lag_ms = rn_part_config_int(v, t, c->cfg,
	    "max.compaction.lag.ms", INT64_MAX);
	rn_part_config_str(v, t, c->cfg, "min.cleanable.dirty.ratio", buf,
	    sizeof(buf));
	prm->min_dirty_ratio = buf[0] != '\0' ? strtod(buf, NULL) : 0.5;
	prm->segment_bytes = lc.segment_bytes;
	prm->segment_index_bytes = lc.segment_index_bytes;
	prm->index_interval = rn_part_config_int(v, t, c->cfg,
	    "index.interval.bytes", 4096);
	return true;
}

static struct cl_slot *
slot_state(struct cleaner *c, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp)
{
	struct cl_slot *s = &c->slots[mp->slot];

	if (memcmp(s->id, t->id, 16) != 0 || s->p != mp->p) {
		/* new here (or after a restart): its horizons are unknown,
		 * so one pass finds them */
		memcpy(s->id, t->id, 16);
		s->p = mp->p;
		s->horizon_ms = 0;
		s->retry_ms = 0;
		s->tidied = false;
	}
	return s;
}

/*
 * A cleaner killed earlier: its swap was finished by the lock's repair,
 * its half-written files go.
 */
static int
drop_leftovers(struct rn_log *log, void *arg)
{
	(void)arg;
	rn_swap_drop_leftovers(rn_log_dirfd(log));
	return 0;
}

/* Look at one partition; keep it in best if it beats it. */
static void
consider(struct cleaner *c, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp, const struct cl_params *prm,
    struct cand *best)
{
	char topic[RN_TOPIC_MAX + 1];
	struct cl_slot *s = slot_state(c, t, mp);
	struct cl_params prm_hw;
	struct cl_range r;
	struct rn_part_move_info mi;
	struct rn_part *p;
	uint32_t gen;
	int16_t kerr;
	double score;

	if (prm->now_ms < s->retry_ms)
		return;
	if ((p = rn_part_get(&c->parts, &c->view, t, mp, &kerr)) == NULL)
		return;
	/* a log being copied to another dir is not cleaned meanwhile (as
	 * Kafka pauses cleaning for a future replica) */
	if (rn_part_slot_move(c->w->env->shm, mp->slot, t->id, mp->p, &mi))
		return;
	if (!s->tidied && rn_part_locked(p, drop_leftovers, NULL) == 0)
		s->tidied = true;
	prm_hw = *prm;
	/* never past the last stable offset: an open transaction's
	 * records may yet be aborted */
	prm_hw.max_end = rn_part_lso(p);
	prm = &prm_hw;
	strlcpy(topic, t->name, t->name_len + 1 < sizeof(topic) ?
	    t->name_len + 1 : sizeof(topic));
	if (cl_range_of(p->log, cl_ckpt_get(&c->ck[rn_part_dir(p)], topic,
	    mp->p), prm, c->segs, &gen, &r) <= 0 ||
	    !cl_range_due(&r, prm, s->horizon_ms))
		return;
	score = r.overdue ? 2.0 : r.dirty_bytes > 0 ? r.ratio : 0.01;
	if (best->p == NULL || score > best->score) {
		best->p = p;
		best->t = t;
		best->mp = mp;
		best->prm = *prm;
		best->r = r;
		best->score = score;
	}
}

static int
locked_part(void *arg, int (*fn)(struct rn_log *log, void *fnarg),
    void *fnarg)
{
	return rn_part_locked(arg, fn, fnarg);
}

static int
cmp_offset(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void
clean_one(struct cleaner *c, struct cand *b)
{
	char topic[RN_TOPIC_MAX + 1];
	int64_t few[RN_IDEM_PRODUCERS], *keep = few;
	struct cl_lock lk = { locked_part, b->p };
	struct cl_slot *s = &c->slots[b->mp->slot];
	struct cl_result res;
	int64_t t0 = rn_now_ms(), ms;
	int rc;

	strlcpy(topic, b->t->name, b->t->name_len + 1 < sizeof(topic) ?
	    b->t->name_len + 1 : sizeof(topic));
	/* each idempotent producer's last batch stays */
	b->prm.n_keep = rn_part_producer_last_batches(b->p, keep,
	    RN_IDEM_PRODUCERS);
	/* more producers than a slot keeps inline: one allocation per
	 * cleaning, with room for newcomers (short of memory: the few) */
	for (int cap = RN_IDEM_PRODUCERS, *k = &b->prm.n_keep; *k > cap;) {
		int64_t *more = malloc(((size_t)*k + 64) * sizeof(*more));

		if (more == NULL) {
			*k = cap;
			break;
		}
		if (keep != few)
			free(keep);
		keep = more;
		cap = *k + 64;
		*k = rn_part_producer_last_batches(b->p, keep, cap);
	}
	qsort(keep, (size_t)b->prm.n_keep, sizeof(*keep), cmp_offset);
	b->prm.keep_offsets = keep;
	/* writing the cleaned files in its dir fails like any write */
	rc = rn_part_io(b->p, cl_clean_log(&c->ctx, b->p->log, &b->r, &b->prm,
	    &lk, &res), "cleaning");
	ms = rn_now_ms() - t0;
	if (rc == 0) {
		s->horizon_ms = res.horizon_ms;
		if (rn_part_io(b->p, cl_ckpt_set(&c->ck[rn_part_dir(b->p)],
		    topic, b->mp->p, res.next_dirty),
		    "writing the cleaner checkpoint")
		    != 0)
			rn_log_about(LOG_WARNING, rn_subj_part(topic,
			    b->mp->p), "%s-%d: cannot write the cleaner "
			    "checkpoint", topic, b->mp->p);
		rn_log_about(LOG_INFO, rn_subj_part(topic, b->mp->p), "%s-%d: "
		    "cleaned up to offset %lld: %d segment(s) swapped, %lld of "
		    "%lld records kept, %lld bytes read, %lld written in %lld "
		    "ms", topic, b->mp->p,
		    (long long)res.next_dirty, res.groups,
		    (long long)res.records_out, (long long)res.records_in,
		    (long long)res.bytes_read, (long long)res.bytes_written,
		    (long long)ms);
	} else if (rc == -ESTALE || rc == -EAGAIN || rc == -EINTR) {
		s->retry_ms = b->prm.now_ms + 1000;	/* the log moved: later */
	} else if (rc == -E2BIG) {
		rn_log_about(LOG_WARNING, rn_subj_part(topic, b->mp->p),
		    "%s-%d: not cleaned: more than %d aborted transactions "
		    "or %d segments to look through", topic, b->mp->p,
		    CL_TXN_ABORTS, CL_MAX_SEGS);
		s->retry_ms = b->prm.now_ms + RETRY_FAILED_MS;
	} else {
		rn_log_about(LOG_WARNING, rn_subj_part(topic, b->mp->p),
		    "%s-%d: cleaning failed: %s", topic, b->mp->p,
		    strerror(rc < -4096 ? EINVAL : -rc));
		s->retry_ms = b->prm.now_ms + RETRY_FAILED_MS;
	}
	if (keep != few)
		free(keep);
	b->prm.keep_offsets = NULL;
}

/* One round: the log most worth cleaning; false when there is none. */
static bool
round_once(struct cleaner *c)
{
	struct cand best;
	int32_t self = c->cfg->node_id;

	memset(&best, 0, sizeof(best));
	for (int i = 0; i < c->view.n_topics; i++) {
		const struct rn_mdv_topic *t = &c->view.topics[i];
		struct cl_params prm;

		if (!topic_params(c, t, &prm))
			continue;
		for (int j = 0; j < t->n_parts; j++)
			if (local_replica(&t->parts[j], self))
				consider(c, t, &t->parts[j], &prm, &best);
		rn_worker_heartbeat(c->w);
	}
	if (best.p == NULL)
		return false;
	clean_one(c, &best);
	return true;
}

static bool
tick(void *arg)
{
	struct rn_worker *w = arg;

	if (rn_now_ms() >= w->next_heartbeat_ms)
		rn_worker_heartbeat(w);
	return rn_worker_should_stop();
}

static int
cleaner_init(struct cleaner *c, struct rn_worker *w)
{
	uint32_t max = w->env->shm->hdr->max_partitions;
	double dedupe = broker_double(c, "log.cleaner.dedupe.buffer.size",
	    (double)CL_DEDUPE_DEFAULT);
	double rate = broker_double(c, "log.cleaner.io.max.bytes.per.second", 0);

	if (dedupe < 1024 * 1024)
		dedupe = 1024 * 1024;
	if (rn_part_table_init(&c->parts, w->env->shm, c->cfg) != 0 ||
	    (c->slots = calloc(max, sizeof(*c->slots))) == NULL ||
	    cl_ctx_init(&c->ctx, (size_t)dedupe, rate) != 0)
		return -ENOMEM;
	c->ctx.tick = tick;
	c->ctx.tick_arg = w;
	c->parts.worker = w;
	for (int i = 0; i < c->cfg->n_log_dirs; i++)
		if (cl_ckpt_load(&c->ck[i], c->cfg->log_dirs[i]) != 0)
			log_warnx("%s: cannot read %s", c->cfg->log_dirs[i],
			    CL_CKPT_FILE);
	return 0;
}

int
rn_cleaner_main(struct rn_worker *w)
{
	static struct cleaner c;
	int64_t backoff;

	memset(&c, 0, sizeof(c));
	c.w = w;
	c.cfg = w->env->cfg;
	backoff = (int64_t)broker_double(&c, "log.cleaner.backoff.ms", 15000);
	rn_mdview_init(&c.view);
	if (cleaner_init(&c, w) != 0) {
		log_errx("log cleaner: out of memory");
		return RN_WORKER_EXIT_RESTART;
	}
	if (rn_worker_send_hello(w) != 0)
		log_warnx("cannot reach the controller yet");
	rn_worker_heartbeat(w);
	log_info("log cleaner up (dedupe buffer %zu slots)", c.ctx.map.nslots);
	while (!rn_worker_should_stop()) {
		if (rn_peer_drain(w) != 0) {
			log_errx("bad message from the controller: restarting");
			return RN_WORKER_EXIT_RESTART;
		}
		if (rn_mdview_refresh(&c.view, w->env->shm) == 1)
			rn_part_table_sync(&c.parts, &c.view);
		rn_worker_heartbeat(w);
		/* both may be changed at run time, as in Kafka */
		backoff = (int64_t)broker_double(&c, "log.cleaner.backoff.ms", 15000);
		c.ctx.thr.rate = broker_double(&c,
		    "log.cleaner.io.max.bytes.per.second", 0);
		if (!round_once(&c))
			rn_worker_wait(w, (int)(backoff < 100 ? 100 :
			    backoff > 60000 ? 60000 : backoff));
	}
	rn_part_table_close(&c.parts);
	cl_ctx_free(&c.ctx);
	for (int i = 0; i < c.cfg->n_log_dirs; i++)
		cl_ckpt_free(&c.ck[i]);
	free(c.slots);
	rn_mdview_free(&c.view);
	return RN_WORKER_EXIT_OK;
}
