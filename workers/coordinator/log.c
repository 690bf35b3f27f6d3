/*
 * __consumer_offsets as the coordinator uses it: appends as the leader
 * through the partition runtime (the produce path's lock and log), a
 * commit settled once the high watermark covers it (acks=all against the
 * ISR and min.insync.replicas), and loading a partition this node comes
 * to lead, a bounded read at a time.
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
#include "workers/coordinator/coord_int.h"

#define LOAD_READ_BYTES (1024 * 1024)
#define SETTLE_POLL_MS 2

/* Kafka's mapping of a log append's error to an OffsetCommit error. */
static int16_t
commit_error(int16_t kerr)
{
	switch (kerr) {
	case RN_KERR_NONE:
		return RN_KERR_NONE;
	case RN_KERR_INVALID_PRODUCER_EPOCH:   /* a fenced transaction's */
	case RN_KERR_INVALID_TXN_STATE:
		return kerr;
	case RN_KERR_UNKNOWN_TOPIC_OR_PARTITION:
	case RN_KERR_NOT_ENOUGH_REPLICAS:
	case RN_KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
	case RN_KERR_REQUEST_TIMED_OUT:
		return RN_KERR_COORDINATOR_NOT_AVAILABLE;
	case RN_KERR_NOT_LEADER_OR_FOLLOWER:
	case RN_KERR_KAFKA_STORAGE_ERROR:
		return RN_KERR_NOT_COORDINATOR;
	case RN_KERR_MESSAGE_TOO_LARGE:
	case RN_KERR_RECORD_LIST_TOO_LARGE:
	case RN_KERR_INVALID_FETCH_SIZE:
		return RN_KERR_INVALID_COMMIT_OFFSET_SIZE;
	default:
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	}
}

/*
 * The partition of __consumer_offsets (txn false) or __transaction_state,
 * if it is still led here at the epoch it was loaded at.
 */
struct rn_part *
co_led_part(struct co *co, bool txn, int32_t partition,
    const struct rn_mdv_partition **mpp, const struct rn_mdv_topic **tp,
    int16_t *kerr)
{
	const struct rn_mdv_topic *t = txn ? co_txn_topic(co) :
	    co_offsets_topic(co);
	const struct co_part *cp = txn ? co->txn_part : co->part;
	const struct rn_mdv_partition *mp;

	*kerr = RN_KERR_NOT_LEADER_OR_FOLLOWER;
	if (t == NULL || partition < 0 || partition >= CO_MAX_PARTS ||
	    (mp = rn_mdview_partition(t, partition)) == NULL ||
	    mp->leader != co->cfg->node_id ||
	    cp[partition].leader_epoch != mp->leader_epoch)
		return NULL;
	*mpp = mp;
	*tp = t;
	return rn_part_get(&co->parts, &co->view, t, mp, kerr);
}

static int32_t
min_isr(struct co *co, const struct rn_mdv_topic *t)
{
	return (int32_t)rn_part_config_int(&co->view, t, co->cfg,
	    "min.insync.replicas", co->cfg->min_insync_replicas);
}

int16_t
co_log_append(struct co *co, int32_t partition,
    const struct rn_record_in *recs, int n, int64_t *end)
{
	return co_log_append_to(co, false, partition, recs, n, -1, -1, end);
}

int16_t
co_log_append_to(struct co *co, bool txn, int32_t partition,
    const struct rn_record_in *recs, int n, int64_t pid, int16_t epoch,
    int64_t *end)
{
	const struct rn_mdv_partition *mp;
	const struct rn_mdv_topic *t;
	struct rn_batch_build_opts o;
	struct rn_append_info info;
	struct rn_batch_header h;
	struct rn_part *p;
	ssize_t size;
	int64_t dup;
	void *buf;
	int16_t kerr;

	if ((p = co_led_part(co, txn, partition, &mp, &t, &kerr)) == NULL)
		return commit_error(kerr);
	if (mp->n_isr < min_isr(co, t))
		return commit_error(RN_KERR_NOT_ENOUGH_REPLICAS);
	rn_batch_build_opts_default(&o);
	if (pid >= 0) {
		/* a transaction's offsets: no sequence, as Kafka's coordinator
		 * writes them; the marker ends them */
		o.attributes = RN_BATCH_ATTR_TRANSACTIONAL;
		o.producer_id = pid;
		o.producer_epoch = epoch;
		o.base_sequence = -1;
	}
	if ((size = rn_batch_build(NULL, 0, &o, recs, n)) < 0)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	if (size > co->cfg->message_max_bytes)
		return commit_error(RN_KERR_RECORD_LIST_TOO_LARGE);
	if ((buf = malloc((size_t)size)) == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	if (rn_batch_build(buf, (size_t)size, &o, recs, n) != size) {
		free(buf);
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	}
	rn_batch_parse_header(buf, &h);
	kerr = (pid >= 0 ? rn_part_append_coordinator :
	    rn_part_append_leader)(p, buf, (size_t)size, &h,
	    mp->leader_epoch, &info, &dup);
	if (kerr == RN_KERR_KAFKA_STORAGE_ERROR && rn_part_stale(p) &&
	    (p = rn_part_get(&co->parts, &co->view, t, mp, &kerr)) != NULL)
		/* the log moved to another dir under it: once more there */
		kerr = (pid >= 0 ? rn_part_append_coordinator :
		    rn_part_append_leader)(p, buf, (size_t)size, &h,
		    mp->leader_epoch, &info, &dup);
	free(buf);
	if (kerr != RN_KERR_NONE) {
		if (commit_error(kerr) == RN_KERR_UNKNOWN_SERVER_ERROR)
			log_warnx("%s-%d: append refused: %s", txn ?
			    RN_TXN_TOPIC : RN_OFFSETS_TOPIC, partition,
			    rn_kerr_name(kerr));
		return commit_error(kerr);
	}
	/* alone in the ISR, this commits at once; followers are woken */
	rn_part_advance_hw(p, mp, co->cfg->node_id);
	rn_part_wake_parked(p, co->net_efds, 0);
	*end = info.last_offset + 1;
	return RN_KERR_NONE;
}

/* One write: settled (true) or still waiting. */
static bool
settle_one(struct co *co, struct co_write *wr, int16_t *kerr)
{
	const struct rn_mdv_partition *mp;
	const struct rn_mdv_topic *t;
	struct rn_part *p;

	if ((p = co_led_part(co, wr->txn_log, wr->partition, &mp, &t,
	    kerr)) == NULL ||
	    mp->leader_epoch != wr->leader_epoch) {
		*kerr = RN_KERR_NOT_COORDINATOR;
		return true;
	}
	rn_part_advance_hw(p, mp, co->cfg->node_id);
	if (rn_part_hw(p) >= wr->need) {
		*kerr = mp->n_isr < min_isr(co, t) ?
		    commit_error(RN_KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND) : 0;
		return true;
	}
	if (co->now >= wr->deadline_ms) {
		*kerr = commit_error(RN_KERR_REQUEST_TIMED_OUT);
		return true;
	}
	return false;
}

/*
 * The high watermark moves in the network worker that serves the
 * followers' fetches; the coordinator looks again every few
 * milliseconds while a write waits.
 */
int64_t
co_log_settle(struct co *co)
{
	struct co_write *wr, **pp;
	int16_t kerr;

	for (pp = &co->writes; (wr = *pp) != NULL;) {
		if (!settle_one(co, wr, &kerr)) {
			pp = &wr->next;
			continue;
		}
		*pp = wr->next;
		if (co->writes_tail == &wr->next)
			co->writes_tail = pp;
		co_write_settled(co, wr, kerr);
	}
	return co->writes != NULL ? co->now + SETTLE_POLL_MS : INT64_MAX;
}

/* Apply one record of __consumer_offsets to the coordinator's state. */
static void
load_record(struct co *co, int32_t partition, const struct rn_record_view *rv,
    int64_t txn_pid)
{
	struct rn_grec_key k;
	struct rn_grec_offset ov;
	struct rn_grec_group gv;
	struct rn_arena a;

	if (rv->key == NULL || rn_grec_key_decode(rv->key,
	    (size_t)rv->key_len, &k) != 0)
		return;
	if (k.kind == RN_GREC_OFFSET && txn_pid >= 0) {
		/* a transaction's: pending until its marker, further on */
		struct co_group *g = co_group_find(co, k.group);

		if (rv->value == NULL || rn_grec_offset_decode(rv->value,
		    (size_t)rv->value_len, &ov) != 0)
			return;
		if (g == NULL)
			g = co_group_create(co, k.group, partition);
		co_txn_offset_add(g, txn_pid, k.topic, k.partition, &ov);
		return;
	}
	if (k.kind == RN_GREC_OFFSET) {
		if (rv->value == NULL)
			co_offset_load(co, partition, &k, NULL);
		else if (rn_grec_offset_decode(rv->value, (size_t)rv->value_len,
		    &ov) == 0)
			co_offset_load(co, partition, &k, &ov);
		return;
	}
	if (rv->value == NULL) {
		co_group_load(co, partition, k.group, NULL);
		return;
	}
	rn_arena_init(&a, 4 * (size_t)rv->value_len + 4096);
	if (rn_grec_group_decode(rv->value, (size_t)rv->value_len, &a,
	    &gv) == 0)
		co_group_load(co, partition, k.group, &gv);
	rn_arena_free(&a);
}

static void
load_batches(struct co *co, int32_t partition, const uint8_t *buf,
    size_t len, int64_t *next)
{
	struct rn_batch_header h;
	struct rn_record_view rv;
	size_t off = 0, pos, size;

	while (len - off >= RN_BATCH_HEADER_SIZE) {
		rn_batch_parse_header(buf + off, &h);
		size = (size_t)h.batch_length + RN_BATCH_LOG_OVERHEAD;
		if (h.batch_length < 0 || size > len - off)
			break;
		if ((h.attributes & (RN_BATCH_ATTR_CONTROL |
		    RN_BATCH_ATTR_COMPRESSION_MASK)) == 0) {
			int64_t pid = (h.attributes &
			    RN_BATCH_ATTR_TRANSACTIONAL) ? h.producer_id : -1;

			pos = 0;
			while (rn_batch_next_record(buf + off, size, &pos,
			    &rv) == 1)
				if (rv.offset >= *next)
					load_record(co, partition, &rv, pid);
		} else if ((h.attributes & RN_BATCH_ATTR_CONTROL) &&
		    rn_batch_last_offset(&h) >= *next) {
			/* a transaction marker: its offsets applied or dropped */
			pos = 0;
			if (rn_batch_next_record(buf + off, size, &pos,
			    &rv) == 1 && rv.key != NULL && rv.key_len >= 4)
				co_txn_offsets_marker(co, partition,
				    h.producer_id, rn_get_be16(rv.key + 2) == 1);
		} else if (h.attributes & RN_BATCH_ATTR_COMPRESSION_MASK)
			rn_log_about(LOG_WARNING, rn_subj_part(RN_OFFSETS_TOPIC,
			    partition), "%s-%d: skipping a compressed batch "
			    "at %lld", RN_OFFSETS_TOPIC, partition,
			    (long long)h.base_offset);
		*next = rn_batch_last_offset(&h) + 1;
		off += size;
	}
}

bool
co_load_step(struct co *co, bool txn_log, int32_t partition,
    co_batches_fn *batches)
{
	struct co_part *cp = txn_log ? &co->txn_part[partition] :
	    &co->part[partition];
	const char *topic = txn_log ? RN_TXN_TOPIC : RN_OFFSETS_TOPIC;
	const struct rn_mdv_partition *mp;
	const struct rn_mdv_topic *t;
	struct rn_log_slice sl;
	struct rn_part *p;
	uint8_t *buf;
	int64_t before;
	int16_t kerr;
	ssize_t k;
	int rc;

	if ((p = co_led_part(co, txn_log, partition, &mp, &t, &kerr)) == NULL) {
		/* not led here after all, or not open yet: try next turn */
		return true;
	}
	if (cp->load_next < 0)
		cp->load_next = rn_log_start_offset(p->log);
	rc = rn_part_io(p, rn_log_read(p->log, cp->load_next, LOAD_READ_BYTES,
	    -1, &sl), "reading");
	if (rc == -ERANGE && cp->load_next < rn_log_start_offset(p->log)) {
		cp->load_next = rn_log_start_offset(p->log);
		return false;
	}
	/* segments rolled or deleted under the read: not the end, retry */
	if (rc == -EAGAIN)
		return true;
	if (rc != 0 || sl.len == 0) {
		if (rc == 0)
			rn_log_slice_release(p->log, &sl);
		cp->state = CP_LOADED;
		if (cp->load_next > rn_log_start_offset(p->log))
			rn_log_about(LOG_INFO, rn_subj_part(topic, partition),
			    "%s-%d: loaded up to offset %lld", topic,
			    partition, (long long)cp->load_next);
		return true;
	}
	if ((buf = malloc((size_t)sl.len)) == NULL) {
		rn_log_slice_release(p->log, &sl);
		return true;
	}
	k = pread(sl.fd, buf, (size_t)sl.len, sl.file_pos);
	rn_log_slice_release(p->log, &sl);
	before = cp->load_next;
	if (k > 0)
		batches(co, partition, buf, (size_t)k, &cp->load_next);
	free(buf);
	if (k <= 0 || cp->load_next == before) {
		/* the next turn tries again rather than spin on it here */
		rn_log_about(LOG_WARNING, rn_subj_part(topic, partition),
		    "%s-%d: cannot read at offset %lld", topic, partition,
		    (long long)cp->load_next);
		return true;
	}
	return false;
}

bool
co_log_load_step(struct co *co, int32_t partition)
{
	return co_load_step(co, false, partition, load_batches);
}
