/*
 * Transactions on the partition side, as Kafka's partition leaders keep
 * them: the markers the transaction coordinator has written (a control
 * batch ending one producer's transaction), the first unstable offset
 * (where the earliest open transaction begins) in the slot, and the
 * aborted-transaction index of each segment (storage/txnindex.c), written
 * when an abort marker is appended, read by read_committed fetches.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "storage/bytes.h"
#include "storage/errors.h"
#include "storage/logdir.h"
#include "storage/txnindex.h"
#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

/* Segments looked at for one fetch's aborted transactions. */
#define SEGMENTS_CAP 4096

void
rn_part_txn_sync(struct rn_part_rt *rt)
{
	atomic_store(&rt->first_unstable, rn_idem_first_unstable(&rt->idem));
}

int64_t
rn_part_lso(const struct rn_part *p)
{
	int64_t hw = rn_part_hw(p);
	int64_t fu = atomic_load(&p->rt->first_unstable);

	return fu >= 0 && fu < hw ? fu : hw;
}

/* The base of the segment holding offset, or -1. */
static int64_t
segment_of(struct rn_part *p, int64_t offset)
{
	int64_t bases[SEGMENTS_CAP];
	int n = rn_log_segment_bases(p->log, bases, SEGMENTS_CAP), i;

	if (n > SEGMENTS_CAP)
		n = SEGMENTS_CAP;
	for (i = n - 1; i >= 0; i--)
		if (bases[i] <= offset)
			return bases[i];
	return -1;
}

struct has_entry {
	int64_t last;
};

static int
entry_is(void *arg, const struct rn_aborted_txn *a)
{
	return a->last_offset == ((struct has_entry *)arg)->last;
}

/* An aborted transaction into the index of the segment holding its
 * marker, unless it is there already (a replay after a restart). */
static void
index_abort(struct rn_part *p, const struct rn_aborted_txn *a)
{
	struct has_entry he = { a->last_offset };
	int64_t base = segment_of(p, a->last_offset);
	char topic[RN_TOPIC_MAX + 1];
	int rc;

	if (base < 0)
		return;
	rc = rn_txnindex_read(rn_log_dirfd(p->log), base, entry_is, &he);
	if (rc == 1)
		return;
	/* synced at once (aborts are few): an entry the log outlives would
	 * be lost for good, as the replay at open starts at a snapshot;
	 * one the log lost is trimmed at open (rn_part_txn_truncated) */
	if (rc == 0 && (rc = rn_txnindex_append(rn_log_dirfd(p->log), base,
	    a)) == 0)
		rc = rn_txnindex_sync(rn_log_dirfd(p->log), base);
	if (rc < 0)
		rn_log_about(LOG_WARNING, rn_logdir_subject(rn_log_dir(p->log),
		    topic), "%s: cannot index the transaction aborted at "
		    "offset %lld: %s", rn_log_dir(p->log),
		    (long long)a->last_offset, strerror(-rc));
}

/* A marker written at offset by (pid) ended the transaction begun at
 * first (-1: none open): an abort goes to the index (lock held). */
static void
marker_done(struct rn_part *p, int64_t pid, int64_t first, int64_t offset,
    bool commit)
{
	struct rn_aborted_txn a;
	int64_t others;

	if (!commit) {
		others = rn_idem_first_unstable_but(&p->rt->idem, pid);
		a.producer_id = pid;
		a.first_offset = first >= 0 ? first : offset;
		a.last_offset = offset;
		a.last_stable_offset = others >= 0 ? others : offset + 1;
		index_abort(p, &a);
	}
	rn_part_txn_sync(p->rt);
}

int
rn_part_marker_type(const uint8_t *batch, size_t len, int32_t *coord_epoch)
{
	struct rn_record_view rec;
	size_t pos = 0;

	*coord_epoch = -1;
	if (len < RN_BATCH_HEADER_SIZE ||
	    (batch[RN_BATCH_OFF_ATTRIBUTES + 1] &
	    RN_BATCH_ATTR_COMPRESSION_MASK) != 0 ||
	    rn_batch_next_record(batch, len, &pos, &rec) != 1 ||
	    rec.key == NULL || rec.key_len < 4)
		return -1;
	/* EndTransactionMarker value: int16 version, int32 coordinator epoch */
	if (rec.value != NULL && rec.value_len >= 6)
		*coord_epoch = (int32_t)rn_get_be32(rec.value + 2);
	/* ControlRecordType key: int16 version, int16 type */
	return (int16_t)rn_get_be16(rec.key + 2);
}

int16_t
rn_part_write_marker(struct rn_part *p, int64_t pid, int16_t epoch,
    bool commit, int32_t coordinator_epoch, int32_t leader_epoch,
    int64_t *offset)
{
	uint8_t key[4], value[6], buf[128];
	struct rn_batch_build_opts o;
	struct rn_append_info info;
	struct rn_batch_header h;
	struct rn_record_in rec;
	int64_t now = rn_wallclock_ms(), first;
	ssize_t len;
	int rc;

	rn_put_be16(key, 0);
	rn_put_be16(key + 2, commit ? 1 : 0);
	rn_put_be16(value, 0);
	rn_put_be32(value + 2, (uint32_t)coordinator_epoch);
	memset(&rec, 0, sizeof(rec));
	rec.key = key;
	rec.key_len = sizeof(key);
	rec.value = value;
	rec.value_len = sizeof(value);
	rec.timestamp = now;
	rn_batch_build_opts_default(&o);
	o.attributes = RN_BATCH_ATTR_CONTROL | RN_BATCH_ATTR_TRANSACTIONAL;
	o.producer_id = pid;
	o.producer_epoch = epoch;
	o.base_sequence = -1;
	if ((len = rn_batch_build(buf, sizeof(buf), &o, &rec, 1)) < 0)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	if (rn_part_lock(p) != 0)
		return RN_KERR_KAFKA_STORAGE_ERROR;
	if ((rc = rn_idem_marker_check(&p->rt->idem, pid, epoch,
	    coordinator_epoch)) < 0) {
		rn_part_unlock(p);
		return (int16_t)-rc;
	}
	rc = rn_part_io(p, rn_log_append_control(p->log, buf, (size_t)len,
	    leader_epoch, now, &info), "appending a transaction marker");
	if (rc == 0) {
		if (info.rolled)
			rn_part_rolled(p);
		rn_batch_parse_header(buf, &h);
		first = rn_idem_record(&p->rt->idem, &h, info.base_offset, now);
		rn_idem_set_coord_epoch(&p->rt->idem, pid, coordinator_epoch);
		marker_done(p, pid, first, info.base_offset, commit);
		*offset = info.base_offset;
	}
	rn_part_unlock(p);
	return rc != 0 ? (int16_t)rn_storage_kafka_error(rc) : RN_KERR_NONE;
}

void
rn_part_producers_appended(struct rn_part *p, const uint8_t *buf, size_t len,
    int64_t from)
{
	uint32_t gen = p->rt->idem.txn_gen;
	size_t off = 0;

	while (len - off >= RN_BATCH_HEADER_SIZE) {
		struct rn_batch_header h;
		int64_t first;
		int32_t cepoch;
		int type;

		rn_batch_parse_header(buf + off, &h);
		if (h.batch_length <= 0 ||
		    (size_t)h.batch_length + 12 > len - off)
			break;
		if (h.base_offset < from || h.producer_id < 0) {
			off += (size_t)h.batch_length + 12;
			continue;
		}
		first = rn_idem_record(&p->rt->idem, &h, h.base_offset,
		    rn_wallclock_ms());
		if (h.attributes & RN_BATCH_ATTR_CONTROL) {
			type = rn_part_marker_type(buf + off,
			    (size_t)h.batch_length + 12, &cepoch);
			rn_idem_set_coord_epoch(&p->rt->idem, h.producer_id,
			    cepoch);
			marker_done(p, h.producer_id, first, h.base_offset,
			    type != 0);
		}
		off += (size_t)h.batch_length + 12;
	}
	/* a walk of every producer (thousands, with the pool): only when a
	 * transaction began or ended */
	if (p->rt->idem.txn_gen != gen)
		rn_part_txn_sync(p->rt);
	rn_part_producers_note(p, rn_wallclock_ms());
}

void
rn_part_txn_replayed(struct rn_part *p, const struct rn_part_marker *m,
    int n)
{
	uint8_t buf[256];
	int i;

	for (i = 0; i < n; i++) {
		struct rn_log_slice sl;
		int32_t cepoch = -1;
		ssize_t r;
		int type = -1;

		if (rn_log_read(p->log, m[i].offset, sizeof(buf), -1, &sl) == 0 &&
		    sl.len > 0) {
			r = pread(sl.fd, buf, (size_t)(sl.len < (int64_t)sizeof(buf) ?
			    sl.len : (int64_t)sizeof(buf)), (off_t)sl.file_pos);
			if (r >= RN_BATCH_HEADER_SIZE)
				type = rn_part_marker_type(buf, (size_t)r,
				    &cepoch);
			rn_log_slice_release(p->log, &sl);
		}
		if (cepoch >= 0)
			rn_idem_set_coord_epoch(&p->rt->idem, m[i].pid, cepoch);
		if (type == 0) {
			struct rn_aborted_txn a = {
				m[i].pid, m[i].first >= 0 ? m[i].first :
				m[i].offset, m[i].offset, m[i].offset + 1,
			};

			index_abort(p, &a);
		}
	}
}

void
rn_part_txn_truncated(struct rn_part *p, int64_t cut)
{
	int64_t base = atomic_load(&p->rt->log.active_base_offset);
	int rc = rn_txnindex_truncate(rn_log_dirfd(p->log), base, cut);
	char topic[RN_TOPIC_MAX + 1];

	if (rc < 0)
		rn_log_about(LOG_WARNING, rn_logdir_subject(rn_log_dir(p->log),
		    topic), "%s: cannot trim the aborted-transaction index: %s",
		    rn_log_dir(p->log), strerror(-rc));
}

struct collect {
	int64_t from, upper;
	struct rn_aborted_txn *out;
	int n, cap;
	bool complete;
};

static int
collect_one(void *arg, const struct rn_aborted_txn *a)
{
	struct collect *c = arg;
	int i;

	if (a->last_offset >= c->from && a->first_offset < c->upper &&
	    c->n < c->cap) {
		/* seen twice after a cleaning's swap cut short: once */
		for (i = 0; i < c->n; i++)
			if (c->out[i].producer_id == a->producer_id &&
			    c->out[i].last_offset == a->last_offset)
				break;
		if (i == c->n)
			c->out[c->n++] = *a;
	}
	if (a->last_offset >= c->upper) {
		c->complete = true;
		return 1;
	}
	return 0;
}

int
rn_part_aborted_txns(struct rn_part *p, int64_t from, int64_t upper,
    struct rn_aborted_txn *out, int cap)
{
	int64_t *bases = malloc(SEGMENTS_CAP * sizeof(*bases));
	struct collect c = { from, upper, out, 0, cap, false };
	int n, i, start = 0;

	if (bases == NULL)
		return -ENOMEM;
	n = rn_log_segment_bases(p->log, bases, SEGMENTS_CAP);
	if (n > SEGMENTS_CAP)
		n = SEGMENTS_CAP;
	/* Kafka's search: from the segment holding `from`, later ones
	 * until a marker at or past the upper bound is met */
	for (i = 0; i < n; i++)
		if (bases[i] <= from)
			start = i;
	for (i = start; i < n && !c.complete; i++)
		if (rn_txnindex_read(rn_log_dirfd(p->log), bases[i],
		    collect_one, &c) < 0)
			break;
	free(bases);
	return c.n;
}

int
rn_part_txnindex_sync(struct rn_part *p, int64_t from, int64_t upto)
{
	int64_t *bases = malloc(SEGMENTS_CAP * sizeof(*bases));
	int n, i, rc = 0;

	if (bases == NULL)
		return -ENOMEM;
	n = rn_log_segment_bases(p->log, bases, SEGMENTS_CAP);
	if (n > SEGMENTS_CAP)
		n = SEGMENTS_CAP;
	for (i = 0; i < n && rc == 0; i++)
		if (bases[i] >= from && bases[i] < upto)
			rc = rn_txnindex_sync(rn_log_dirfd(p->log), bases[i]);
	free(bases);
	return rc;
}
