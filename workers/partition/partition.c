#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/wakeset.h"
#include "protocol/kerrors.h"
#include "storage/checkpoint.h"
#include "storage/errors.h"
#include "storage/logdir.h"
#include "workers/partition/dirfail.h"
#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"
#include "workers/worker.h"

int
rn_part_table_init(struct rn_part_table *t, const struct rn_shm *shm,
    const struct rn_config *cfg)
{
	const char *exp = rn_config_static(cfg, "producer.id.expiration.ms");

	t->shm = shm;
	t->cfg = cfg;
	t->n = shm->hdr->max_partitions;
	/* producers beyond a slot's own chain into the node's pool, each
	 * kept until idle for producer.id.expiration.ms (Kafka's key) */
	rn_idem_pool_attach(rn_shm_prodpool(shm));
	rn_idem_set_expiration(exp != NULL ? strtoll(exp, NULL, 10) : 0);
	t->hi = 0;
	t->n_open = 0;
	t->max_open = rn_part_handle_budget();
	t->clock = 0;
	t->turns = false;
	t->mark_ms = rn_now_ms();
	t->mark_clock = t->idle_clock = t->idle_looked = 0;
	t->last = NULL;
	t->lcfg_version = 0;
	t->lcfg_topic = NULL;
	t->worker = NULL;
	/* calloc'd pages stay unbacked until a slot below them is used */
	t->parts = calloc(t->n, sizeof(*t->parts));
	return t->parts == NULL ? -ENOMEM : 0;
}

void
rn_part_table_close(struct rn_part_table *t)
{
	uint32_t i;

	for (i = 0; i < t->hi; i++)
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

/*
 * Called under the lock, before the mutex is marked consistent, when its
 * last holder died holding it: a locker that dies here leaves the lock
 * still marked, so the next one repairs again. A slot that changed hands,
 * or a repair that fails, is left to the next open's recovery.
 */
static void
part_repair(void *arg)
{
	struct rn_part *p = arg;
	struct rn_part_rt *rt = p->rt;
	int rc;

	/* it died swapping in a moved replica: finished, or undone */
	if (p->cfg != NULL && rn_part_move_repair(p->cfg, rt, rt->topic_id.b) ==
	    1) {
		/* the log is in another dir now: recovered there */
		atomic_store(&rt->log.magic, 0);
		atomic_fetch_add(&rt->incarnation, 1);
		return;
	}
	if (p->incarnation == atomic_load(&rt->incarnation) && p->log != NULL) {
		char topic[RN_TOPIC_MAX + 1];
		struct rn_log_subject s = rn_logdir_subject(rn_log_dir(p->log),
		    topic);

		rn_log_about(LOG_WARNING, s, "a partition lock holder died: "
		    "repairing its log");
		if ((rc = rn_log_repair(p->log)) == 0)
			return;
		rn_log_about(LOG_WARNING, s, "log repair failed (%s): the next "
		    "open recovers it", strerror(-rc));
	}
	atomic_store(&rt->log.magic, 0);
	atomic_fetch_add(&rt->incarnation, 1);
}

/*
 * Lock; if the last holder died holding it, repair the log first. A handle
 * taken before the slot changed hands (its topic was deleted meanwhile, or
 * its log was left to recovery) writes nothing: -ESTALE, and the caller's
 * next rn_part_get reopens.
 */
int
rn_part_lock(struct rn_part *p)
{
	struct rn_part_rt *rt = p->rt;
	int rc;

	/* an offline dir is written no more, by anyone */
	if (p->shm != NULL && rn_dirfail_offline(p->shm, p->dir))
		return -EIO;
	if ((rc = rn_rlock_lock(&rt->lock, part_repair, p)) < 0)
		return rc;
	if (p->incarnation != atomic_load(&rt->incarnation)) {
		rn_rlock_unlock(&rt->lock);
		return -ESTALE;
	}
	return 0;
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

static bool
policy_has_delete(const char *policy)
{
	const char *p;

	for (p = strstr(policy, "delete"); p != NULL; p = strstr(p + 1,
	    "delete"))
		if ((p == policy || p[-1] == ',' || p[-1] == ' ') &&
		    (p[6] == '\0' || p[6] == ',' || p[6] == ' '))
			return true;
	return false;
}

void
rn_part_log_config(const struct rn_mdview *v, const struct rn_mdv_topic *t,
    const struct rn_config *cfg, struct rn_log_config *out)
{
	char ts[32] = "", policy[64] = "";

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
	/* retention deletes only under the delete policy; a compact-only
	 * topic is trimmed by the log cleaner (workers/cleaner/) instead */
	rn_part_config_str(v, t, cfg, "cleanup.policy", policy, sizeof(policy));
	if (!policy_has_delete(policy)) {
		out->retention_ms = -1;
		out->retention_bytes = -1;
	}
	/* a compacted log rolls by max.compaction.lag.ms too, as in Kafka,
	 * so that no record waits in the active segment past it */
	if (strstr(policy, "compact") != NULL) {
		int64_t lag = rn_part_config_int(v, t, cfg,
		    "max.compaction.lag.ms", INT64_MAX);

		if (lag > 0 && lag < out->segment_ms)
			out->segment_ms = lag;
	}
}

/*
 * The topic's log rules, computed once per image and topic: every new
 * image has each handle's rules checked again, and with 30,000 partitions
 * the config lookups behind them were a fetcher's busiest work. Callers
 * ask partition after partition of one topic, so one entry does.
 */
static void
table_log_config(struct rn_part_table *t, const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, struct rn_log_config *out)
{
	if (t->lcfg_version != v->body_version || t->lcfg_topic != topic) {
		rn_part_log_config(v, topic, t->cfg, &t->lcfg);
		t->lcfg_version = v->body_version;
		t->lcfg_topic = topic;
	}
	*out = t->lcfg;
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
 * After a restart, or a slot taken fresh: the producers from their
 * snapshot, and one line saying what recovery cost (tests and operators
 * read it).
 */
static void
part_log_recovered(struct rn_part *p, const char *topic, int32_t partition)
{
	struct rn_log_recovery_stats st;
	struct rn_part_prodload pl;
	char from[64];

	rn_part_producers_load(p, &pl);
	rn_log_recovery_stats(p->log, &st);
	if (!st.recovered)
		return;
	if (st.recovery_point < 0)
		snprintf(from, sizeof(from), "clean shutdown");
	else
		snprintf(from, sizeof(from), "recovery point %lld",
		    (long long)st.recovery_point);
	/* a new or empty log says it only when asked: 100,000 of them
	 * would fill the journal */
	rn_log_about(st.segments > 1 || st.scanned_bytes > 0 ||
	    pl.batches > 0 || pl.snapshot >= 0 ? LOG_INFO : LOG_DEBUG,
	    rn_subj_part(topic, partition), "%s-%d: log recovered in %lld ms (%s): scanned %d of %d "
	    "segments, %lld bytes, from offset %lld; producers: snapshot %lld, "
	    "%d batches replayed from offset %lld in %lld ms", topic, partition,
	    (long long)st.ms, from, st.scanned, st.segments,
	    (long long)st.scanned_bytes, (long long)st.first_scanned,
	    (long long)pl.snapshot, pl.batches, (long long)pl.from,
	    (long long)pl.ms);
}

/*
 * After a restart: the checkpointed high watermark (Kafka's
 * replication-offset-checkpoint), never past the log end. A leader alone
 * in its ISR moves it to the log end at once.
 */
static void
part_restore_hw(struct rn_part *p, const char *root, const char *topic,
    int32_t partition)
{
	int64_t hw = rn_part_checkpointed(root, RN_REPLICATION_CHECKPOINT,
	    topic, partition);
	int64_t leo = rn_log_end_offset(p->log);

	atomic_store(&p->rt->high_watermark, hw < 0 || hw > leo ? leo : hw);
}

/* The view is the newest image published: only such a view takes a slot. */
static bool
view_current(const struct rn_shm *shm, const struct rn_mdview *v)
{
	return v->version == atomic_load(&rn_shm_meta(shm)->version) &&
	    v->generation == atomic_load(&shm->hdr->generation);
}

/*
 * A slot taken for a partition: its directory must be this topic id's. A
 * partition.metadata naming another id is a stray replica of a deleted
 * topic (the node was down when it went, or a crash came between): it is
 * removed as Kafka removes stray logs. 1 if partition.metadata is still
 * to be written, 0 if it names this id, or -errno.
 */
static int
part_check_dir(const char *root, const struct rn_mdv_topic *topic, int32_t p)
{
	char name[300], path[1400], have[23], want[23];
	uint8_t id[16];
	int rc;

	snprintf(name, sizeof(name), "%s-%d", topic->name, p);
	snprintf(path, sizeof(path), "%s/%s", root, name);
	rc = rn_partition_metadata_read(path, id);
	if (rc == -ENOENT)
		return 1; /* new, or written before topic ids were kept */
	if (rc < 0) {
		rn_log_about(LOG_WARNING, rn_subj_part(topic->name, p),
		    "%s/%s: %s", path, RN_PARTITION_METADATA, strerror(-rc));
		return rc;
	}
	if (memcmp(id, topic->id, 16) == 0)
		return 0;
	rn_uuid_to_base64url(id, have);
	rn_uuid_to_base64url(topic->id, want);
	rn_log_about(LOG_WARNING, rn_subj_part(topic->name, p), "%s: stray "
	    "partition directory of topic id %s (the metadata log has %s for "
	    "%s): removing it", path, have, want, topic->name);
	if ((rc = rn_logdir_discard(root, name)) != 0 && rc != -ENOENT) {
		rn_log_about(LOG_WARNING, rn_subj_part(topic->name, p),
		    "%s: cannot remove it: %s", path, strerror(-rc));
		return rc;
	}
	return 1;
}

/* The slot changes hands: its old state means nothing here (lock held). */
static void
part_claim(struct rn_part_rt *rt, const struct rn_mdv_topic *topic,
    int32_t partition, int64_t offset)
{
	memset(&rt->log, 0, sizeof(rt->log));
	rn_idem_reset(&rt->idem);
	atomic_store(&rt->first_unstable, -1);
	memcpy(rt->topic_id.b, topic->id, sizeof(rt->topic_id.b));
	rt->partition = partition;
	atomic_store(&rt->high_watermark, -1);
	atomic_store(&rt->leader_epoch, -1);
	atomic_store(&rt->parked_workers, 0);
	atomic_store(&rt->claim_offset, offset);
	/* where its log is, and a move, are found on disk (move.c) */
	atomic_store(&rt->cur_dir, -1);
	atomic_store(&rt->move.dest, -1);
	atomic_store(&rt->move.state, RN_MOVE_NONE);
	atomic_store(&rt->move.assign_want, -1);
	atomic_fetch_add(&rt->incarnation, 1);
}

/*
 * Takes the slot's lock and claims the slot when it holds another partition
 * (or none). Returns the lock's died flag with the lock held, or a negative
 * errno with it released.
 */
static int
part_lock_claim(struct rn_part_table *t, const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp,
    struct rn_part_rt *rt, bool *fresh)
{
	int died;

	*fresh = false;
	died = rn_rlock_lock(&rt->lock, no_repair, NULL);
	if (died < 0)
		return died;
	if (memcmp(rt->topic_id.b, topic->id, sizeof(rt->topic_id.b)) != 0 ||
	    rt->partition != mp->p ||
	    atomic_load(&rt->incarnation) == 0) {
		/* a worker behind the newest image might take back the slot
		 * of a topic deleted since: it waits for the image */
		if (v->offset < atomic_load(&rt->claim_offset) ||
		    !view_current(t->shm, v)) {
			rn_rlock_unlock(&rt->lock);
			return -EAGAIN;
		}
		part_claim(rt, topic, mp->p, v->offset);
		*fresh = true;
	}
	return died;
}

/*
 * Opens the log into the claimed slot (lock held). On failure a fresh claim
 * is dropped, so the next open starts over.
 */
static int
part_load(struct rn_part_table *t, const struct rn_mdv_topic *topic,
    const struct rn_mdv_partition *mp, struct rn_part *p, int dir,
    const char *path, const struct rn_log_config *lcfg, bool fresh, int died)
{
	struct rn_part_rt *rt = p->rt;
	struct rn_log_recovery rec = { 0, -1, 0 };
	int rc = 0, write_md = 0;
	bool recovering;

	if (fresh)
		rc = write_md = part_check_dir(t->cfg->log_dirs[dir], topic,
		    mp->p);
	/* recovers from disk when the shared state is new: from the
	 * checkpointed recovery point, or not at all after a clean stop */
	if ((recovering = atomic_load(&rt->log.magic) != RN_LOG_SHARED_MAGIC))
		rn_part_recovery_input(t, dir, topic->name, mp->p, fresh, &rec);
	if (rc >= 0)
		rc = rn_log_open(path, lcfg, &rt->log, &rec, &p->log);
	if (rc == 0 && write_md == 1 &&
	    (rc = rn_partition_metadata_write(path, topic->id,
	    !atomic_load(&rt->log.dir_unsynced))) != 0)
		rn_log_about(LOG_WARNING, rn_subj_part(topic->name, mp->p),
		    "%s: cannot write %s: %s", path, RN_PARTITION_METADATA,
		    strerror(-rc));
	if (rc == 0 && died == 1)
		rc = rn_log_repair(p->log);
	/* the size in the slot is kept by every change after recovery: a
	 * reopen leaves it (summing it lists every segment) */
	if (rc == 0 && (recovering || died == 1))
		rn_part_size_sync(p);
	(void)rn_dirfail_check(t->shm, dir, t->cfg->log_dirs[dir], rc,
	    "opening a log");
	if (rc == 0 && fresh)
		part_log_recovered(p, topic->name, mp->p);
	if (rc == 0 && atomic_load(&rt->high_watermark) < 0)
		part_restore_hw(p, t->cfg->log_dirs[dir], topic->name, mp->p);
	if (rc != 0 && fresh) {
		/* nobody holds it */
		memset(rt->topic_id.b, 0, sizeof(rt->topic_id.b));
		atomic_fetch_add(&rt->incarnation, 1);
	}
	return rc;
}

/*
 * With the lock held: the log dir the slot's log is in. A fresh claim
 * finds it on disk, finishing or taking up a move a crash cut short; a
 * slot whose last holder died swapping a moved replica in has that swap
 * finished or undone (*died is then cleared when its shared state must be
 * recovered from disk instead of repaired).
 */
static int
part_dir(struct rn_part_table *t, const struct rn_mdv_topic *topic,
    const struct rn_mdv_partition *mp, struct rn_part_rt *rt, bool fresh,
    int *died)
{
	int image_dir = mp->dir >= 0 && mp->dir < t->cfg->n_log_dirs ?
	    mp->dir : 0;
	int dir;

	if (fresh)
		return rn_part_move_claim(t->cfg, t->shm, rt, topic->name,
		    mp->p, topic->id, image_dir);
	if (*died == 1 && rn_part_move_repair(t->cfg, rt, topic->id) == 1) {
		atomic_store(&rt->log.magic, 0);
		atomic_fetch_add(&rt->incarnation, 1);
		*died = 0;
	}
	dir = atomic_load(&rt->cur_dir);
	return dir >= 0 && dir < t->cfg->n_log_dirs ? dir : image_dir;
}

static int
part_open(struct rn_part_table *t, const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp,
    struct rn_part *p, struct rn_part_rt *rt)
{
	struct rn_log_config lcfg;
	char path[2048];
	int dir, rc, died;
	bool fresh;

	table_log_config(t, v, topic, &lcfg);
	rn_part_handle_close(t, p);
	p->rt = rt; /* the rebuild in part_load writes through it */
	/* a flush cursor of another log (or incarnation) means nothing here */
	memset(&p->flush, 0, sizeof(p->flush));
	p->hw = &rt->high_watermark;
	p->cfg = t->cfg;
	rn_shm_slot_mark(t->shm, (unsigned)mp->slot);
	died = part_lock_claim(t, v, topic, mp, rt, &fresh);
	if (died < 0)
		return died;
	dir = part_dir(t, topic, mp, rt, fresh, &died);
	snprintf(path, sizeof(path), "%s/%s-%d", t->cfg->log_dirs[dir],
	    topic->name, mp->p);
	rc = part_load(t, topic, mp, p, dir, path, &lcfg, fresh, died);
	rn_rlock_unlock(&rt->lock);
	if (rc != 0) {
		rn_log_about(LOG_WARNING, rn_subj_part(topic->name, mp->p),
		    "cannot open log %s: %s", path, strerror(-rc));
		if (p->log != NULL) {
			rn_log_close(p->log);
			p->log = NULL;
		}
		return rc;
	}
	t->n_open++;
	p->slot = mp->slot;
	p->dir = dir;
	p->root = t->cfg->log_dirs[dir];
	p->shm = t->shm;
	memcpy(p->topic_id, topic->id, sizeof(p->topic_id));
	p->partition = mp->p;
	if ((uint32_t)mp->slot >= t->hi)
		t->hi = (uint32_t)mp->slot + 1;
	if (t->worker != NULL && rn_now_ms() >= t->worker->next_heartbeat_ms)
		rn_worker_heartbeat(t->worker);
	p->incarnation = atomic_load(&rt->incarnation);
	p->config_version = v->body_version;
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
	int64_t hw = rn_part_log_end(p), old;
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
	int64_t leo = rn_part_log_end(p);
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

/*
 * The replica's dir is offline here, or the controller marked it lost (a
 * dir that failed before this start: its replicas stay down until they
 * are placed again).
 */
static bool
part_dir_offline(const struct rn_part_table *t,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp)
{
	int32_t d;

	if (mp->dir == RN_MDV_DIR_LOST)
		return true;
	/* the dir the log is in (a move may have put it elsewhere) */
	if ((d = rn_part_slot_dir(t->shm, mp->slot, topic->id, mp->p)) < 0)
		d = mp->dir >= 0 && mp->dir < t->cfg->n_log_dirs ? mp->dir : 0;
	return rn_dirfail_offline(t->shm, d);
}

bool
rn_part_stale(const struct rn_part *p)
{
	return p->incarnation != atomic_load(&p->rt->incarnation);
}

int
rn_part_io(struct rn_part *p, int rc, const char *what)
{
	if (p->shm == NULL)
		return rc;
	return rn_dirfail_check(p->shm, p->dir, p->root, rc, what);
}

struct rn_part *
rn_part_peek(struct rn_part_table *t, const struct rn_mdv_topic *topic,
    const struct rn_mdv_partition *mp)
{
	struct rn_part *p;

	if (mp->slot < 0 || (uint32_t)mp->slot >= t->n)
		return NULL;
	p = &t->parts[mp->slot];
	if (p->rt == NULL || p->incarnation == 0 || p->slot != mp->slot ||
	    p->partition != mp->p ||
	    memcmp(p->topic_id, topic->id, sizeof(p->topic_id)) != 0 ||
	    p->incarnation != atomic_load(&p->rt->incarnation) ||
	    atomic_load(&p->rt->log.magic) != RN_LOG_SHARED_MAGIC ||
	    part_dir_offline(t, topic, mp))
		return NULL;
	return p;
}

struct rn_part *
rn_part_led(struct rn_part_table *t, const struct rn_mdview *v,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp,
    int16_t *kerr)
{
	struct rn_part *p = rn_part_peek(t, topic, mp);

	if (p != NULL && mp->leader_epoch <= atomic_load(&p->rt->leader_epoch))
		return p;
	return rn_part_get(t, v, topic, mp, kerr);
}

/* The slot of mp as this node holds it for topic tp, or NULL. */
struct rn_part_rt *
rn_part_slot_held(const struct rn_part_table *t, const struct rn_mdv_topic *tp,
    const struct rn_mdv_partition *mp)
{
	struct rn_part_rt *rt;

	if (mp->slot < 0 || (uint32_t)mp->slot >= t->n ||
	    !rn_shm_slot_used(t->shm, (unsigned)mp->slot))
		return NULL;
	/* followers' slots too: the state is shared */
	rt = (struct rn_part_rt *)rn_shm_partition(t->shm, (unsigned)mp->slot);
	if (atomic_load(&rt->incarnation) == 0 || rt->partition != mp->p ||
	    memcmp(rt->topic_id.b, tp->id, 16) != 0)
		return NULL;
	return rt;
}

bool
rn_part_offline(const struct rn_part_table *t,
    const struct rn_mdv_topic *topic, const struct rn_mdv_partition *mp)
{
	return (mp->slot >= 0 || mp->dir == RN_MDV_DIR_LOST) &&
	    part_dir_offline(t, topic, mp);
}

void
rn_part_size_sync(struct rn_part *p)
{
	int64_t all;

	if (p->log == NULL || (all = rn_log_size_bytes(p->log)) < 0)
		return;
	atomic_store_explicit(&p->rt->sealed_bytes, all -
	    atomic_load(&p->rt->log.active_size), memory_order_relaxed);
}

int64_t
rn_part_slot_log_size(const struct rn_shm *shm, unsigned slot,
    const uint8_t topic_id[16], int32_t partition)
{
	const struct rn_part_rt *rt;
	int64_t n;

	if (slot >= shm->hdr->max_partitions || !rn_shm_slot_used(shm, slot))
		return -1;
	rt = (const struct rn_part_rt *)rn_shm_partition(shm, slot);
	if (atomic_load(&rt->incarnation) == 0 || rt->partition != partition ||
	    memcmp(rt->topic_id.b, topic_id, 16) != 0 ||
	    atomic_load(&rt->log.magic) != RN_LOG_SHARED_MAGIC)
		return -1;
	n = atomic_load_explicit(&rt->sealed_bytes, memory_order_relaxed) +
	    atomic_load_explicit(&rt->log.active_size, memory_order_relaxed);
	return n > 0 ? n : 0;
}

int64_t
rn_part_log_end(const struct rn_part *p)
{
	return atomic_load(&p->rt->log.log_end_offset);
}

int64_t
rn_part_log_start(const struct rn_part *p)
{
	return atomic_load(&p->rt->log.log_start_offset);
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
	if (part_dir_offline(t, topic, mp)) {
		*kerr = RN_KERR_KAFKA_STORAGE_ERROR;
		return NULL;
	}
	p = &t->parts[mp->slot];
	rt = (struct rn_part_rt *)rn_shm_partition(t->shm, (unsigned)mp->slot);
	if (p->log != NULL && p->incarnation == atomic_load(&rt->incarnation) &&
	    p->config_version != v->body_version) {
		/* a new image: reopen only if this topic's log rules changed */
		struct rn_log_config lcfg;

		table_log_config(t, v, topic, &lcfg);
		if (log_config_same(&lcfg, &p->lcfg))
			p->config_version = v->body_version;
	}
	if (p->log == NULL || p->incarnation != atomic_load(&rt->incarnation) ||
	    p->config_version != v->body_version || p->partition != mp->p ||
	    memcmp(p->topic_id, topic->id, sizeof(p->topic_id)) != 0) {
		int rc;

		if (p->log == NULL)
			rn_part_handle_make_room(t, p);
		rc = part_open(t, v, topic, mp, p, rt);

		if (rc != 0) {
			*kerr = rc == -EAGAIN ? RN_KERR_NOT_LEADER_OR_FOLLOWER :
			    RN_KERR_KAFKA_STORAGE_ERROR;
			return NULL;
		}
	}
	if (mp->leader == t->cfg->node_id)
		part_epoch(p, mp);
	p->last_use = ++t->clock;
	t->last = p;
	return p;
}

/* Close slot i's handle if the image no longer places its partition there. */
static void
table_sync_slot(struct rn_part_table *t, const struct rn_mdview *v,
    uint32_t i)
{
	struct rn_part *p = &t->parts[i];
	const struct rn_mdv_partition *mp;
	const struct rn_mdv_topic *topic;

	if (i >= t->hi || p->log == NULL)
		return;
	topic = rn_mdview_topic_by_id(v, p->topic_id);
	mp = topic != NULL ? rn_mdview_partition(topic, p->partition) : NULL;
	if (mp != NULL && mp->slot == (int32_t)i)
		return;
	rn_part_handle_close(t, p);
	p->incarnation = 0;
}

void
rn_part_table_sync(struct rn_part_table *t, const struct rn_mdview *v)
{
	uint32_t i;
	int k;

	if (!v->changes_all) {
		/* a delta: only the slots its partitions left or took */
		for (k = 0; k < v->n_changes; k++) {
			const struct rn_mdv_change *c = &v->changes[k];

			if (c->old_slot >= 0)
				table_sync_slot(t, v, (uint32_t)c->old_slot);
			i = (uint32_t)v->topics[c->topic].parts[c->p].slot;
			if ((int32_t)i >= 0)
				table_sync_slot(t, v, i);
		}
		return;
	}
	for (i = 0; i < t->hi; i++)
		table_sync_slot(t, v, i);
}

void
rn_part_release(const struct rn_shm *shm, int32_t slot, const uint8_t id[16],
    int32_t partition, int64_t offset)
{
	struct rn_part_rt *rt;

	if (slot < 0 || (uint32_t)slot >= shm->hdr->max_partitions)
		return;
	rt = (struct rn_part_rt *)rn_shm_partition(shm, (unsigned)slot);
	if (rn_rlock_lock(&rt->lock, no_repair, NULL) < 0)
		return;
	if (memcmp(rt->topic_id.b, id, sizeof(rt->topic_id.b)) == 0 &&
	    rt->partition == partition) {
		memset(rt->topic_id.b, 0, sizeof(rt->topic_id.b));
		rt->partition = -1;
		/* its producers' pool entries go back for other slots */
		rn_idem_pool_attach(rn_shm_prodpool(shm));
		rn_idem_reset(&rt->idem);
		atomic_store(&rt->first_unstable, -1);
		if (offset > atomic_load(&rt->claim_offset))
			atomic_store(&rt->claim_offset, offset);
		atomic_fetch_add(&rt->incarnation, 1);
	}
	rn_rlock_unlock(&rt->lock);
}

void
rn_part_wake_parked(struct rn_part *p, const int *efd_by_worker,
    unsigned self)
{
	uint64_t bits = atomic_load(&p->rt->parked_workers), one = 1;
	struct rn_wakeset ws;
	unsigned i;

	(void)self;
	for (i = 0; bits != 0 && i < 64; i++, bits >>= 1)
		if (bits & 1) {
			/* which slot, then the wake-up: it re-checks only
			 * the requests watching a slot marked */
			rn_wakeset_of(p->shm, i, &ws);
			rn_wakeset_mark(&ws, (uint32_t)p->slot);
			(void)write(efd_by_worker[i], &one, sizeof(one));
		}
}

void
rn_part_clear_waiters(struct rn_part_table *t, unsigned self)
{
	uint64_t mask = ~(1ULL << self);
	uint32_t i;

	for (i = 0; i < t->hi; i++)
		if (t->parts[i].log != NULL)
			atomic_fetch_and(&t->parts[i].rt->parked_workers, mask);
}
