#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "protocol/kerrors.h"
#include "storage/checkpoint.h"
#include "storage/errors.h"
#include "workers/partition.h"
#include "workers/worker.h"

int
rn_part_table_init(struct rn_part_table *t, const struct rn_shm *shm,
    const struct rn_config *cfg)
{
	t->shm = shm;
	t->cfg = cfg;
	t->w = NULL;
	t->n = shm->hdr->max_partitions;
	t->parts = calloc(t->n, sizeof(*t->parts));
	return t->parts == NULL ? -ENOMEM : 0;
}

void
rn_part_table_close(struct rn_part_table *t)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (t->parts[i].log != NULL)
			rn_log_close(t->parts[i].log);
	free(t->parts);
	t->parts = NULL;
}

static void
no_repair(void *arg)
{
	(void)arg;
}

/* Lock; if the last holder died holding it, repair the log first. */
static int
part_lock_rt(struct rn_part_rt *rt, struct rn_log *log)
{
	int rc = rn_rlock_lock(&rt->lock, no_repair, NULL);

	if (rc == 1) {
		log_warnx("a partition lock holder died: repairing its log");
		if (log != NULL && (rc = rn_log_repair(log)) != 0) {
			log_warnx("log repair failed: %s", strerror(-rc));
			rn_rlock_unlock(&rt->lock);
			return rc;
		}
		return 0;
	}
	return rc;
}

int
rn_part_lock(struct rn_part *p)
{
	return part_lock_rt(p->rt, p->log);
}

void
rn_part_unlock(struct rn_part *p)
{
	rn_rlock_unlock(&p->rt->lock);
}

int64_t
rn_part_config_int(const struct rn_mdview *v, const struct rn_mdv_topic *t,
    const struct rn_config *cfg, const char *key, int64_t dflt)
{
	enum rn_config_source src;
	const char *value;
	char buf[64], *end;
	long long n;

	if (rn_mdview_topic_config(v, t, cfg, key, &value, &src, buf,
	    sizeof(buf)) != 0 || value == NULL)
		return dflt;
	n = strtoll(value, &end, 10);
	return *value != '\0' && *end == '\0' ? n : dflt;
}

void
rn_part_config_str(const struct rn_mdview *v, const struct rn_mdv_topic *t,
    const struct rn_config *cfg, const char *key, char *out, size_t outlen)
{
	enum rn_config_source src;
	const char *value;
	char buf[256];

	if (rn_mdview_topic_config(v, t, cfg, key, &value, &src, buf,
	    sizeof(buf)) != 0 || value == NULL)
		value = "";
	strlcpy(out, value, outlen);
}

void
rn_part_log_config(const struct rn_mdview *v, const struct rn_mdv_topic *t,
    const struct rn_config *cfg, struct rn_log_config *out)
{
	char ts[32] = "";

	*out = rn_log_config_default();
	out->segment_bytes = rn_part_config_int(v, t, cfg, "segment.bytes", cfg->log_segment_bytes);
	out->segment_ms = rn_part_config_int(v, t, cfg, "segment.ms",
	    cfg->log_roll_ms);
	out->retention_ms = rn_part_config_int(v, t, cfg, "retention.ms", cfg->log_retention_ms);
	out->retention_bytes = rn_part_config_int(v, t, cfg, "retention.bytes", cfg->log_retention_bytes);
	out->max_message_bytes = rn_part_config_int(v, t, cfg, "max.message.bytes", cfg->message_max_bytes);
	out->flush_messages = rn_part_config_int(v, t, cfg, "flush.messages", cfg->log_flush_interval_messages);
	out->flush_ms = rn_part_config_int(v, t, cfg, "flush.ms",
	    cfg->log_flush_interval_ms < 0 ? INT64_MAX :
	    cfg->log_flush_interval_ms);
	rn_part_config_str(v, t, cfg, "message.timestamp.type", ts, sizeof(ts));
	out->timestamp_type_log_append = strcmp(ts, "LogAppendTime") == 0;
}

static bool
log_config_same(const struct rn_log_config *a, const struct rn_log_config *b)
{
	return a->segment_bytes == b->segment_bytes &&
	    a->segment_ms == b->segment_ms &&
	    a->retention_ms == b->retention_ms &&
	    a->retention_bytes == b->retention_bytes &&
	    a->max_message_bytes == b->max_message_bytes &&
	    a->flush_messages == b->flush_messages &&
	    a->flush_ms == b->flush_ms &&
	    a->index_interval_bytes == b->index_interval_bytes &&
	    a->segment_index_bytes == b->segment_index_bytes &&
	    a->timestamp_type_log_append == b->timestamp_type_log_append;
}

/*
 * The high watermark a partition had when its log dir's
 * replication-offset-checkpoint was last written, or -1.
 */
static int64_t
part_checkpointed_hw(const char *dir, const char *topic, int32_t partition)
{
	struct rn_tp_offset *e = NULL;
	char path[1100];
	size_t n = 0, i;
	int64_t hw = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, RN_REPLICATION_CHECKPOINT);
	if (rn_offset_checkpoint_read(path, &e, &n) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (e[i].partition == partition && strcmp(e[i].topic, topic) == 0)
			hw = e[i].offset;
	free(e);
	return hw;
}

/* How far back a restarted node looks for idempotent producers' batches. */
#define IDEM_REBUILD_OFFSETS 10000

/*
 * After a restart the producer table is empty; rebuild it from the batch
 * headers at the log's end, so a producer retrying across the restart is
 * deduped rather than refused. Bounded: the last IDEM_REBUILD_OFFSETS
 * offsets (Kafka snapshots this state instead; we read it back).
 */
static void
part_idem_rebuild(struct rn_part *p)
{
	int64_t end = rn_log_end_offset(p->log), off = end - IDEM_REBUILD_OFFSETS;
	int64_t now = rn_wallclock_ms(), next;
	uint8_t *buf = NULL;
	size_t cap = 0;

	if (off < rn_log_start_offset(p->log))
		off = rn_log_start_offset(p->log);
	while (off < end) {
		struct rn_log_slice sl;
		size_t pos = 0, len;

		if (rn_log_read(p->log, off, 1 << 20, -1, &sl) != 0)
			break;
		len = (size_t)sl.len;
		if (len > cap) {
			uint8_t *nb = realloc(buf, len);

			if (nb == NULL)
				len = 0;
			else {
				buf = nb;
				cap = len;
			}
		}
		if (len == 0 || pread(sl.fd, buf, len, (off_t)sl.file_pos) !=
		    (ssize_t)len) {
			rn_log_slice_release(p->log, &sl);
			break;
		}
		rn_log_slice_release(p->log, &sl);
		next = off;
		while (len - pos >= RN_BATCH_HEADER_SIZE) {
			struct rn_batch_header h;

			rn_batch_parse_header(buf + pos, &h);
			if (h.batch_length <= 0 ||
			    (size_t)h.batch_length + 12 > len - pos)
				break;
			rn_idem_record(&p->rt->idem, &h, h.base_offset, now);
			next = rn_batch_last_offset(&h) + 1;
			pos += (size_t)h.batch_length + 12;
		}
		if (next <= off)
			break;
		off = next;
	}
	free(buf);
}

static int
part_open(struct rn_part_table *t, const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp,
    struct rn_part *p, struct rn_part_rt *rt)
{
	struct rn_log_config lcfg;
	char path[2048];
	int dir = mp->dir >= 0 && mp->dir < t->cfg->n_log_dirs ? mp->dir : 0;
	int rc, died;
	bool fresh = false;

	snprintf(path, sizeof(path), "%s/%s-%d", t->cfg->log_dirs[dir],
	    topic->name, mp->p);
	rn_part_log_config(v, topic, t->cfg, &lcfg);
	if (p->log != NULL) {
		rn_log_close(p->log);
		p->log = NULL;
	}
	p->rt = rt; /* the rebuild below writes through it */
	died = rn_rlock_lock(&rt->lock, no_repair, NULL);
	if (died < 0)
		return died;
	if (memcmp(rt->topic_id.b, topic->id, sizeof(rt->topic_id.b)) != 0 ||
	    rt->partition != mp->p ||
	    atomic_load(&rt->incarnation) == 0) {
		/* the slot changes hands: its old state means nothing here */
		memset(&rt->log, 0, sizeof(rt->log));
		rn_idem_reset(&rt->idem);
		memcpy(rt->topic_id.b, topic->id, sizeof(rt->topic_id.b));
		rt->partition = mp->p;
		atomic_store(&rt->high_watermark, -1);
		atomic_store(&rt->leader_epoch, -1);
		atomic_store(&rt->fetch_waiters, 0);
		atomic_fetch_add(&rt->incarnation, 1);
		fresh = true;
	}
	/* recovers from disk when the shared state is new */
	rc = rn_log_open(path, &lcfg, &rt->log, NULL, &p->log);
	if (rc == 0 && died == 1)
		rc = rn_log_repair(p->log);
	if (rc == 0 && fresh)
		part_idem_rebuild(p);
	if (rc == 0 && atomic_load(&rt->high_watermark) < 0) {
		/*
		 * After a restart: the checkpointed high watermark (Kafka's
		 * replication-offset-checkpoint), never past the log end. A
		 * leader alone in its ISR moves it to the log end at once.
		 */
		int64_t hw = part_checkpointed_hw(t->cfg->log_dirs[dir],
		    topic->name, mp->p), leo = rn_log_end_offset(p->log);

		atomic_store(&rt->high_watermark, hw < 0 || hw > leo ? leo : hw);
	}
	rn_rlock_unlock(&rt->lock);
	if (rc != 0) {
		log_warnx("cannot open log %s: %s", path, strerror(-rc));
		if (p->log != NULL) {
			rn_log_close(p->log);
			p->log = NULL;
		}
		return rc;
	}
	p->rt = rt;
	p->slot = mp->slot;
	p->incarnation = atomic_load(&rt->incarnation);
	p->config_version = v->version;
	p->lcfg = lcfg;
	return 0;
}

/*
 * Becoming leader in a new epoch: the epoch starts at the current log end,
 * and every follower gets a fresh caught-up clock (as Kafka resets them),
 * so nobody is shrunk out of the ISR for the time before we led.
 */
static void
part_epoch(struct rn_part *p, const struct rn_mdv_partition *mp)
{
	int64_t now;
	int i;

	/* every lookup of a led partition passes here: no clock read */
	if (mp->leader_epoch <= atomic_load(&p->rt->leader_epoch))
		return;
	now = rn_wallclock_ms();
	if (rn_part_lock(p) != 0)
		return;
	if (mp->leader_epoch > atomic_load(&p->rt->leader_epoch)) {
		rn_log_assign_epoch(p->log, mp->leader_epoch,
		    rn_log_end_offset(p->log));
		for (i = 0; i < RN_PART_MAX_REPLICAS; i++) {
			struct rn_part_follower *f = &p->rt->followers[i];

			if (i < mp->n_replicas) {
				atomic_store(&f->id, mp->replicas[i]);
				atomic_store(&f->leo, -1);
				atomic_store(&f->last_fetch_ms, 0);
				atomic_store(&f->last_fetch_leader_leo, -1);
				atomic_store(&f->last_caught_up_ms, now);
			} else
				atomic_store(&f->id, -1);
		}
		atomic_store(&p->rt->isr_change_sent_ms, 0);
		atomic_store(&p->rt->leader_epoch, mp->leader_epoch);
	}
	rn_part_unlock(p);
	/* a leader alone in its ISR commits its whole log at once (Kafka
	 * moves the high watermark as soon as it becomes leader) */
	rn_part_advance_hw(p, mp, mp->leader);
}

struct rn_part_follower *
rn_part_follower(struct rn_part *p, int32_t id)
{
	int i;

	for (i = 0; i < RN_PART_MAX_REPLICAS; i++)
		if (atomic_load(&p->rt->followers[i].id) == id)
			return &p->rt->followers[i];
	return NULL;
}

bool
rn_part_advance_hw(struct rn_part *p, const struct rn_mdv_partition *mp,
    int32_t self)
{
	int64_t hw = rn_log_end_offset(p->log), old;
	int i;

	/* the smallest log end among the in-sync replicas */
	for (i = 0; i < mp->n_isr; i++) {
		struct rn_part_follower *f;

		if (mp->isr[i] == self)
			continue;
		f = rn_part_follower(p, mp->isr[i]);
		if (f == NULL || atomic_load(&f->leo) < 0)
			return false; /* not heard from since we lead: wait */
		if (atomic_load(&f->leo) < hw)
			hw = atomic_load(&f->leo);
	}
	old = atomic_load(&p->rt->high_watermark);
	while (hw > old) {
		if (atomic_compare_exchange_weak(&p->rt->high_watermark, &old,
		    hw))
			return true;
	}
	return false;
}

bool
rn_part_follower_fetched(struct rn_part *p, const struct rn_mdv_partition *mp,
    int32_t replica, int64_t fetch_offset, int64_t now_ms)
{
	struct rn_part_follower *f = rn_part_follower(p, replica);
	int64_t leo = rn_log_end_offset(p->log);
	int64_t prev_leader_leo;

	if (f == NULL)
		return false;
	prev_leader_leo = atomic_load(&f->last_fetch_leader_leo);
	/*
	 * Kafka's rule: caught up now if it asked for our log end; caught up
	 * at its previous fetch if it now has what we had back then.
	 */
	if (fetch_offset >= leo)
		atomic_store(&f->last_caught_up_ms, now_ms);
	else if (prev_leader_leo >= 0 && fetch_offset >= prev_leader_leo)
		atomic_store(&f->last_caught_up_ms,
		    atomic_load(&f->last_fetch_ms));
	atomic_store(&f->leo, fetch_offset);
	atomic_store(&f->last_fetch_leader_leo, leo);
	atomic_store(&f->last_fetch_ms, now_ms);
	return rn_part_advance_hw(p, mp, mp->leader);
}

struct rn_part *
rn_part_get(struct rn_part_table *t, const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp,
    int16_t *kerr)
{
	struct rn_part_rt *rt;
	struct rn_part *p;

	if (mp->slot < 0 || (uint32_t)mp->slot >= t->n) {
		*kerr = RN_KERR_NOT_LEADER_OR_FOLLOWER;
		return NULL;
	}
	p = &t->parts[mp->slot];
	rt = (struct rn_part_rt *)rn_shm_partition(t->shm, (unsigned)mp->slot);
	if (p->log != NULL && p->incarnation == atomic_load(&rt->incarnation) &&
	    p->config_version != v->version) {
		/* a new image: reopen only if this topic's log rules changed */
		struct rn_log_config lcfg;

		rn_part_log_config(v, topic, t->cfg, &lcfg);
		if (log_config_same(&lcfg, &p->lcfg))
			p->config_version = v->version;
	}
	if (p->log == NULL || p->incarnation != atomic_load(&rt->incarnation) ||
	    p->config_version != v->version) {
		if (t->w != NULL && rn_now_ms() >= t->w->next_heartbeat_ms)
			rn_worker_heartbeat(t->w);
		if (part_open(t, v, topic, mp, p, rt) != 0) {
			*kerr = RN_KERR_KAFKA_STORAGE_ERROR;
			return NULL;
		}
	}
	if (mp->leader == t->cfg->node_id)
		part_epoch(p, mp);
	return p;
}

void
rn_part_wake_fetchers(struct rn_part *p, const int *efd_by_worker,
    unsigned self)
{
	uint64_t bits = atomic_load(&p->rt->fetch_waiters), one = 1;
	unsigned i;

	(void)self;
	for (i = 0; bits != 0 && i < 64; i++, bits >>= 1)
		if (bits & 1)
			(void)write(efd_by_worker[i], &one, sizeof(one));
}

void
rn_part_clear_waiters(struct rn_part_table *t, unsigned self)
{
	uint64_t mask = ~(1ULL << self);
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (t->parts[i].log != NULL)
			atomic_fetch_and(&t->parts[i].rt->fetch_waiters, mask);
}

int
rn_part_checkpoint_hw(struct rn_part_table *t, const struct rn_mdview *v)
{
	struct rn_tp_offset *e;
	int d, i, j, rc = 0;

	e = calloc(t->n ? t->n : 1, sizeof(*e));
	if (e == NULL)
		return -ENOMEM;
	for (d = 0; d < t->cfg->n_log_dirs; d++) {
		char path[1100];
		size_t n = 0;

		for (i = 0; i < v->n_topics; i++) {
			const struct rn_mdv_topic *tp = &v->topics[i];

			for (j = 0; j < tp->n_parts; j++) {
				const struct rn_mdv_partition *mp = &tp->parts[j];
				struct rn_part_rt *rt;
				int64_t hw;

				if (mp->slot < 0 || (uint32_t)mp->slot >= t->n ||
				    (mp->dir >= 0 ? mp->dir : 0) != d || n == t->n)
					continue;
				/* followers' slots too: the state is shared */
				rt = (struct rn_part_rt *)rn_shm_partition(t->shm,
				    (unsigned)mp->slot);
				if (atomic_load(&rt->incarnation) == 0 ||
				    rt->partition != mp->p ||
				    memcmp(rt->topic_id.b, tp->id, 16) != 0 ||
				    (hw = atomic_load(&rt->high_watermark)) < 0)
					continue;
				strlcpy(e[n].topic, tp->name, sizeof(e[n].topic));
				e[n].partition = mp->p;
				e[n].offset = hw;
				n++;
			}
		}
		snprintf(path, sizeof(path), "%s/%s", t->cfg->log_dirs[d],
		    RN_REPLICATION_CHECKPOINT);
		if (n > 0 && (rc = rn_offset_checkpoint_write(path, e, n)) != 0)
			log_warnx("cannot write %s: %s", path, strerror(-rc));
	}
	free(e);
	return rc;
}
