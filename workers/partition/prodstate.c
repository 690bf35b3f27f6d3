/*
 * The idempotent-producer table across restarts, as Kafka's
 * ProducerStateManager keeps it: a snapshot (storage/prodsnap.c) of each
 * producer's last batch when a segment rolls (at the new segment's base)
 * and at a clean shutdown (at the log end); at open the newest good
 * snapshot at or below the log end is loaded and the batch headers from
 * its offset to the log end are replayed, so the replay is about one
 * segment and a producer idle for any number of records is remembered.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "storage/logdir.h"
#include "storage/prodsnap.h"
#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

/* Without a snapshot (a log written before them): how far back to look. */
#define LEGACY_REPLAY_OFFSETS 10000
/* Snapshots looked at when loading: the newest ones are what counts. */
#define SNAP_LIST_CAP 64

static int32_t
seq_delta(int32_t first, int32_t last)
{
	/* sequences wrap at INT32_MAX, as Kafka's do */
	int64_t d = (int64_t)last - first;

	return (int32_t)(d < 0 ? d + INT32_MAX + 1 : d);
}

/*
 * The table as of offset `below`: each producer's newest batch starting
 * below it (a follower records a fetch's producers before the append that
 * rolled). Returns the entries written to out (rn_idem_count room).
 */
static size_t
table_entries(const struct rn_idem_state *s, int64_t below,
    struct rn_prodsnap_entry *out, size_t cap)
{
	struct rn_idem_iter it = RN_IDEM_ITER_INIT;
	const struct rn_idem_producer *p;
	size_t n = 0;
	int j;

	while (n < cap && (p = rn_idem_next(s, &it)) != NULL) {
		const struct rn_idem_batch *best = NULL;

		if (p->pid <= 0)
			continue;
		for (j = 0; j < p->n; j++)
			if (p->b[j].base_offset < below && (best == NULL ||
			    p->b[j].base_offset > best->base_offset))
				best = &p->b[j];
		if (best == NULL)
			continue;
		out[n].producer_id = p->pid;
		out[n].epoch = p->epoch;
		out[n].last_seq = best->last_seq;
		out[n].offset_delta = seq_delta(best->first_seq, best->last_seq);
		out[n].last_offset = best->base_offset + out[n].offset_delta;
		out[n].timestamp = p->last_used_ms;
		out[n].coordinator_epoch = p->coord_epoch;
		/* a transaction begun at or past the snapshot is replayed */
		out[n].txn_first_offset = p->txn_first >= 0 &&
		    p->txn_first < below ? p->txn_first : -1;
		n++;
	}
	return n;
}

int
rn_part_snapshot_producers(struct rn_part *p, int64_t offset, int durable)
{
	/* one allocation per snapshot (a roll, a clean stop), sized by the
	 * table: inline producers and the slot's pooled ones */
	size_t cap = rn_idem_count(&p->rt->idem), n;
	struct rn_prodsnap_entry *e = malloc((cap > 0 ? cap : 1) * sizeof(*e));
	char topic[RN_TOPIC_MAX + 1];
	int rc;

	if (e == NULL)
		rc = -ENOMEM;
	else {
		n = table_entries(&p->rt->idem, offset, e, cap);
		rc = rn_prodsnap_write(rn_log_dirfd(p->log), offset, e, n,
		    durable);
		free(e);
	}
	if (rc != 0)
		rn_log_about(LOG_WARNING, rn_logdir_subject(rn_log_dir(p->log),
		    topic), "%s: cannot write the producer snapshot at offset "
		    "%lld: %s", rn_log_dir(p->log), (long long)offset,
		    strerror(-rc));
	return rc;
}

/* How often a partition's evictions and refusals make a log line. */
#define NOTE_INTERVAL_MS 60000

void
rn_part_producers_note(struct rn_part *p, int64_t now_ms)
{
	struct rn_idem_state *s = &p->rt->idem;
	char topic[RN_TOPIC_MAX + 1];

	if ((s->evicted == 0 && s->refused == 0) ||
	    (s->logged_ms != 0 && now_ms - s->logged_ms < NOTE_INTERVAL_MS) ||
	    p->log == NULL)
		return;
	rn_log_about(LOG_WARNING, rn_logdir_subject(rn_log_dir(p->log), topic),
	    "%s: the node's producer pool (shm.max.producers) is full: %u "
	    "idle producer(s) evicted (a retry of theirs may be written "
	    "twice), %u batch(es) of new producers refused (every producer "
	    "here has an open transaction) since the last such line",
	    rn_log_dir(p->log), s->evicted, s->refused);
	s->evicted = s->refused = 0;
	s->logged_ms = now_ms;
}

static int
load_entry(void *arg, const struct rn_prodsnap_entry *e)
{
	struct rn_idem_state *s = arg;
	struct rn_batch_header h;
	int64_t base;

	if (e->producer_id < 0 || e->last_offset < 0 || e->offset_delta < 0)
		return 0;	/* nothing Kafka would keep either */
	memset(&h, 0, sizeof(h));
	h.producer_id = e->producer_id;
	h.producer_epoch = e->epoch;
	h.last_offset_delta = e->offset_delta;
	base = (int64_t)e->last_seq - e->offset_delta;
	h.base_sequence = (int32_t)(base < 0 ? base + INT32_MAX + 1 : base);
	(void)rn_idem_record(s, &h, e->last_offset - e->offset_delta,
	    e->timestamp);
	rn_idem_set_txn(s, e->producer_id, e->txn_first_offset >= 0 &&
	    e->txn_first_offset <= e->last_offset ? e->txn_first_offset : -1,
	    e->coordinator_epoch);
	return 0;
}

/* Markers replayed whose aborts are checked against the index. */
#define REPLAY_MARKERS_CAP 1024

struct replay {
	struct rn_idem_state *s;
	int64_t from, end, now;
	int batches;
	struct rn_part_marker *markers;
	int n_markers;
};

static int
replay_batch(void *arg, int64_t pos, const struct rn_batch_header *h,
    const uint8_t *unused)
{
	struct replay *r = arg;

	(void)pos;
	(void)unused;
	if (rn_batch_last_offset(h) >= r->end)
		return 1;
	if (h->base_offset >= r->from) {
		int64_t first = rn_idem_record(r->s, h, h->base_offset, r->now);

		if ((h->attributes & RN_BATCH_ATTR_CONTROL) &&
		    h->producer_id >= 0 && r->markers != NULL &&
		    r->n_markers < REPLAY_MARKERS_CAP)
			r->markers[r->n_markers++] = (struct rn_part_marker){
				h->producer_id, first, h->base_offset };
		r->batches++;
	}
	return 0;
}

/* The newest good snapshot at or above lso and at or below leo: its
 * offset, or -1 (a bad one is logged and removed, an older one tried). */
static int64_t
load_newest_snapshot(struct rn_part *p, int64_t lso, int64_t leo)
{
	int64_t offs[SNAP_LIST_CAP];
	int dirfd = rn_log_dirfd(p->log), n, i, rc;
	char topic[RN_TOPIC_MAX + 1];

	if ((n = rn_prodsnap_list(dirfd, offs, SNAP_LIST_CAP)) < 0)
		return -1;
	if (n > SNAP_LIST_CAP)
		n = SNAP_LIST_CAP;
	for (i = n - 1; i >= 0; i--) {
		if (offs[i] > leo)
			continue;	/* pruned below */
		if (offs[i] < lso)
			break;
		rn_idem_reset(&p->rt->idem);
		if ((rc = rn_prodsnap_read(dirfd, offs[i], load_entry,
		    &p->rt->idem)) == 0)
			return offs[i];
		rn_log_about(LOG_WARNING, rn_logdir_subject(rn_log_dir(p->log),
		    topic), "%s/%020lld%s: %s: producer snapshot skipped and "
		    "removed; trying an older one", rn_log_dir(p->log),
		    (long long)offs[i], RN_PRODSNAP_SUFFIX,
		    rc == -EBADMSG ? "corrupt" : strerror(-rc));
		(void)rn_prodsnap_remove(dirfd, offs[i]);
	}
	rn_idem_reset(&p->rt->idem);
	return -1;
}

void
rn_part_producers_load(struct rn_part *p, struct rn_part_prodload *out)
{
	int64_t leo = rn_log_end_offset(p->log), lso = rn_log_start_offset(p->log);
	int64_t abase = atomic_load(&p->rt->log.active_base_offset);
	int64_t t0 = rn_now_ms(), snap;
	struct replay r = { &p->rt->idem, 0, leo, rn_wallclock_ms(), 0,
		malloc(REPLAY_MARKERS_CAP * sizeof(struct rn_part_marker)), 0 };
	char topic[RN_TOPIC_MAX + 1];
	int rc;

	/* snapshots past the log end describe data it no longer has, and
	 * so do aborted-index entries of markers a crash cut off */
	(void)rn_prodsnap_prune(rn_log_dirfd(p->log), 0, leo, INT32_MAX);
	rn_part_txn_truncated(p, leo);
	snap = load_newest_snapshot(p, lso, leo);
	if (snap >= 0)
		r.from = snap;
	else {
		/* the whole active segment, and at least the old window */
		r.from = leo - LEGACY_REPLAY_OFFSETS;
		if (r.from > abase)
			r.from = abase;
		if (r.from < lso)
			r.from = lso;
	}
	rc = rn_log_scan_headers(p->log, r.from, replay_batch, &r);
	if (rc < 0)
		rn_log_about(LOG_WARNING, rn_logdir_subject(rn_log_dir(p->log),
		    topic), "%s: replaying producers from offset %lld: %s",
		    rn_log_dir(p->log), (long long)r.from, strerror(-rc));
	/* aborts whose index entries a crash lost are indexed again */
	rn_part_txn_replayed(p, r.markers, r.n_markers);
	free(r.markers);
	rn_part_txn_sync(p->rt);
	out->snapshot = snap;
	out->from = r.from;
	out->batches = r.batches;
	out->ms = rn_now_ms() - t0;
}

void
rn_part_snapshots_prune(struct rn_part *p, int64_t below, int64_t above)
{
	int rc = rn_prodsnap_prune(rn_log_dirfd(p->log), below, above,
	    RN_PART_SNAPSHOTS_KEPT);
	char topic[RN_TOPIC_MAX + 1];

	if (rc < 0)
		rn_log_about(LOG_WARNING, rn_logdir_subject(rn_log_dir(p->log),
		    topic), "%s: cannot remove old producer snapshots: %s",
		    rn_log_dir(p->log), strerror(-rc));
}
