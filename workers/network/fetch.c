/*
 * Reading: Fetch (with max.wait.ms/min.bytes long polling and zero-copy
 * responses: record data goes from the segment file to the socket with
 * sendfile), ListOffsets, OffsetForLeaderEpoch and DeleteRecords.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/acl.h"
#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"

/* Leader-epoch fencing of a request that names the epoch it expects. */
static int16_t
check_epoch(const struct rn_mdv_partition *mp, int32_t current)
{
	if (current < 0)
		return RN_KERR_NONE;
	if (current < mp->leader_epoch)
		return RN_KERR_FENCED_LEADER_EPOCH;
	if (current > mp->leader_epoch)
		return RN_KERR_UNKNOWN_LEADER_EPOCH;
	return RN_KERR_NONE;
}

static bool
replica_of(const struct rn_mdv_partition *mp, int32_t id)
{
	int i;

	for (i = 0; i < mp->n_replicas; i++)
		if (mp->replicas[i] == id)
			return true;
	return false;
}

/*
 * The local leader replica, or an error code. Without need_log its log may
 * be closed: a fetch with nothing to read needs only the slot, so a leader
 * answering fetches of more partitions than it keeps open reopens only
 * those with data (fetch_read opens them).
 */
static struct rn_part *
leader_part(struct net *n, const struct rn_mdv_topic *t, int32_t partition,
    int32_t current_epoch, bool need_log, const struct rn_mdv_partition **mpp,
    int16_t *kerr)
{
	const struct rn_mdv_partition *mp;

	if (t == NULL || (mp = rn_mdview_partition(t, partition)) == NULL) {
		*kerr = RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
		return NULL;
	}
	*mpp = mp;
	if (rn_part_offline(&n->parts, t, mp)) {
		*kerr = RN_KERR_KAFKA_STORAGE_ERROR;
		return NULL;
	}
	if ((*kerr = check_epoch(mp, current_epoch)) != RN_KERR_NONE)
		return NULL;
	if (!net_leads(n, mp)) {
		*kerr = RN_KERR_NOT_LEADER_OR_FOLLOWER;
		return NULL;
	}
	return need_log ? rn_part_get(&n->parts, &n->view, t, mp, kerr) :
	    rn_part_led(&n->parts, &n->view, t, mp, kerr);
}

struct fetch_state {
	struct rn_FetchResponse r;
	struct rn_log_slice *slices;
	struct rn_part **slice_parts;
	int n_slices;
	int64_t bytes;
	bool error;
	struct net_watch *touched; /* partitions to watch if parked */
	int n_touched;
	/* a session's answer: the entry being built, and those with
	 * records left behind (fetch_session.c keeps them pending) */
	int entry;
	uint8_t *unsent;
	struct rn_arena *arena;    /* the connection's: copied small reads */
};

static void
fetch_release(struct fetch_state *fs)
{
	int i;

	for (i = 0; i < fs->n_slices; i++)
		rn_log_slice_release(fs->slice_parts[i]->log, &fs->slices[i]);
	fs->n_slices = 0;
}

/*
 * A small read is copied into the response and its segment let go at
 * once: a fetch of thousands of partitions with a few records each then
 * holds no descriptor per partition until it is sent (those ran a node
 * out of descriptors), and one write beats a sendfile per partition. The
 * slice stays in the list, empty-handed, so the bytes are still counted.
 * Bulk reads stay zero-copy.
 */
#define FETCH_COPY_MAX 16384

static void
fetch_copy_small(struct fetch_state *fs, struct rn_part *p,
    struct rn_log_slice *sl, struct rn_FetchResponse_PartitionData *pd)
{
	int64_t len;
	void *buf;

	if (sl->len > FETCH_COPY_MAX ||
	    (buf = rn_arena_alloc(fs->arena, (size_t)sl->len)) == NULL ||
	    pread(sl->fd, buf, (size_t)sl->len, (off_t)sl->file_pos) !=
	    (ssize_t)sl->len)
		return;	/* sent from the file as usual */
	pd->records = (struct rn_records){ buf, (int32_t)sl->len, -1, 0 };
	len = sl->len;
	rn_log_slice_release(p->log, sl);
	sl->len = len;	/* still counted as bytes out */
}

/* One partition's records from fetch_offset, within the byte budget. */
static void
fetch_read(struct net *n, struct fetch_state *fs, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp,
    const struct rn_FetchRequest_FetchPartition *fp,
    struct rn_FetchResponse_PartitionData *pd, int64_t limit,
    int64_t *budget)
{
	struct rn_log_slice sl;
	struct rn_part *p;
	int64_t max = fp->partition_max_bytes;
	int16_t kerr;
	int rc;

	if (max > *budget)
		max = *budget;
	/* the first data always goes out whole, like Kafka */
	if (max <= 0 && fs->bytes > 0)
		return;
	if ((p = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) == NULL) {
		pd->error_code = kerr;
		fs->error = true;
		return;
	}
	rc = rn_part_io(p, rn_log_read(p->log, fp->fetch_offset, max, limit,
	    &sl), "reading");
	/*
	 * The segments kept changing under the read (rolls and deletions
	 * on a busy log): answer no data, the client's next fetch retries.
	 */
	if (rc == -EAGAIN)
		return;
	if (rc != 0) {
		pd->error_code = rc == -ERANGE ? RN_KERR_OFFSET_OUT_OF_RANGE :
		    net_storage_kerr(rc);
		fs->error = true;
		return;
	}
	/* at least one batch, but only for the first data: a
	 * response stays within max_bytes plus one batch */
	if (sl.len == 0 || (fs->bytes > 0 && (int64_t)sl.len > max)) {
		rn_log_slice_release(p->log, &sl);
		return;
	}
	pd->records = (struct rn_records){ NULL, (int32_t)sl.len, sl.fd,
	    sl.file_pos };
	fetch_copy_small(fs, p, &sl, pd);
	fs->slices[fs->n_slices] = sl;
	fs->slice_parts[fs->n_slices++] = p;
	fs->bytes += sl.len;
	*budget -= sl.len;
}

/*
 * A follower's fetch of a partition under the leader's replication
 * quota: no more than the quota allows now, nothing when it is spent.
 */
static void
fetch_throttled(struct net *n, struct fetch_state *fs,
    const struct rn_mdv_topic *t, const struct rn_mdv_partition *mp,
    const struct rn_FetchRequest_FetchPartition *fp,
    struct rn_FetchResponse_PartitionData *pd, int64_t *budget)
{
	struct rn_FetchRequest_FetchPartition capped = *fp;
	int64_t before = fs->bytes;

	capped.partition_max_bytes = rn_replquota_allowance(&n->lquota,
	    fp->partition_max_bytes);
	if (capped.partition_max_bytes <= 0)
		return;
	fetch_read(n, fs, t, mp, &capped, pd, -1, budget);
	rn_replquota_charge(&n->lquota, (size_t)(fs->bytes - before));
}

/*
 * A consumer needs READ on the topic, a follower CLUSTER_ACTION on the
 * cluster (Kafka answers both per partition). A topic id this node does
 * not know is judged by the empty name: unknown either way.
 */
static bool
fetch_allowed(struct net *n, struct conn *c, const struct rn_mdv_topic *t,
    const struct rn_FetchRequest_FetchTopic *ft)
{
	const struct rn_FetchRequest *req = c->req;

	if (!n->cfg->authorizer_on)
		return true;
	if (req->replica_id >= 0)
		return net_authorized_cluster(n, c, RN_ACL_OP_CLUSTER_ACTION);
	if (c->hdr.api_version >= 13)
		return net_authorized(n, c, RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
		    t != NULL ? t->name : "", t != NULL ? t->name_len : 0);
	return net_authorized(n, c, RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
	    ft->topic.ptr, ft->topic.len > 0 ? (size_t)ft->topic.len : 0);
}

static void
fetch_refuse(struct fetch_state *fs, const struct rn_FetchRequest_FetchTopic
    *ft, struct rn_FetchResponse_FetchableTopicResponse *tr)
{
	int32_t j;

	for (j = 0; j < ft->partitions_count; j++) {
		struct rn_FetchResponse_PartitionData *pd = &tr->partitions[j];

		rn_FetchResponse_PartitionData_init(pd);
		pd->partition_index = ft->partitions[j].partition;
		pd->records = (struct rn_records){ NULL, 0, -1, 0 };
		pd->error_code = RN_KERR_TOPIC_AUTHORIZATION_FAILED;
	}
	fs->error = true;
}

/*
 * read_committed: the transactions aborted in the range returned, whose
 * records the client drops. The search ends at the last stable offset
 * where Kafka ends it at the first offset past the bytes returned: a
 * transaction that begins past them may be named too, which a client
 * ignores.
 */
#define FETCH_ABORTED_MAX 1024

static void
fetch_aborted(struct fetch_state *fs, struct rn_part *p, int64_t from,
    int64_t upper, struct rn_FetchResponse_PartitionData *pd)
{
	struct rn_aborted_txn *a = malloc(FETCH_ABORTED_MAX * sizeof(*a));
	int n, i;

	if (a == NULL)
		return;
	n = rn_part_aborted_txns(p, from, upper, a, FETCH_ABORTED_MAX);
	if (n > 0 && (pd->aborted_transactions = rn_arena_alloc(fs->arena,
	    (size_t)n * sizeof(*pd->aborted_transactions))) != NULL) {
		for (i = 0; i < n; i++) {
			pd->aborted_transactions[i].producer_id =
			    a[i].producer_id;
			pd->aborted_transactions[i].first_offset =
			    a[i].first_offset;
		}
		pd->aborted_transactions_count = n;
	}
	free(a);
}

/* One partition of the request: checks, follower progress, then data. */
static void
fetch_partition(struct net *n, struct conn *c, struct fetch_state *fs,
    const struct rn_mdv_topic *t, const struct rn_FetchRequest_FetchPartition
    *fp, struct rn_FetchResponse_PartitionData *pd, bool first, int64_t now,
    int64_t *budget)
{
	const struct rn_FetchRequest *req = c->req;
	bool by_id = c->hdr.api_version >= 13;
	const struct rn_mdv_partition *mp = NULL;
	struct rn_part *p;
	int16_t kerr = RN_KERR_NONE;
	int64_t hw, limit;

	rn_FetchResponse_PartitionData_init(pd);
	pd->partition_index = fp->partition;
	pd->records = (struct rn_records){ NULL, 0, -1, 0 };
	p = leader_part(n, t, fp->partition, fp->current_leader_epoch, false,
	    &mp, &kerr);
	if (p == NULL) {
		if (t == NULL && by_id)
			kerr = RN_KERR_UNKNOWN_TOPIC_ID;
		pd->error_code = kerr;
		fs->error = true;
		return;
	}
	fs->touched[fs->n_touched++] = (struct net_watch){ p, fp->fetch_offset };
	if (req->replica_id >= 0) {
		if (!replica_of(mp, req->replica_id)) {
			pd->error_code = RN_KERR_NOT_LEADER_OR_FOLLOWER;
			fs->error = true;
			return;
		}
		if (first)
			net_replica_fetched(n, t, mp, p, req->replica_id,
			    fp->fetch_offset, now);
	}
	hw = rn_part_hw(p);
	pd->high_watermark = hw;
	pd->last_stable_offset = rn_part_lso(p);
	pd->log_start_offset = rn_part_log_start(p);
	if (fp->fetch_offset < pd->log_start_offset ||
	    fp->fetch_offset > rn_part_log_end(p)) {
		pd->error_code = RN_KERR_OFFSET_OUT_OF_RANGE;
		fs->error = true;
		return;
	}
	/* consumers get committed records (read_committed: below the last
	 * stable offset), followers all */
	limit = req->replica_id >= 0 ? -1 : req->isolation_level == 1 ?
	    pd->last_stable_offset : hw;
	if (limit >= 0 && fp->fetch_offset >= limit)
		return;
	if (limit < 0 && fp->fetch_offset >= rn_part_log_end(p))
		return;
	if (req->replica_id >= 0 && rn_replquota_applies(&n->lquota, t, mp,
	    n->cfg->node_id, req->replica_id))
		fetch_throttled(n, fs, t, mp, fp, pd, budget);
	else
		fetch_read(n, fs, t, mp, fp, pd, limit, budget);
	if (fs->unsent != NULL && pd->records.len == 0 &&
	    pd->error_code == RN_KERR_NONE)
		fs->unsent[fs->entry] = 1;
	if (req->replica_id < 0 && req->isolation_level == 1 &&
	    pd->records.len > 0)
		fetch_aborted(fs, p, fp->fetch_offset, limit, pd);
}

/*
 * Build the answer from the logs as they are now. A follower's fetch
 * positions are noted once per request (first), not on each re-check of
 * a parked fetch: that was work per partition per append.
 */
static int
fetch_build(struct net *n, struct conn *c, struct fetch_state *fs, bool first)
{
	const struct rn_FetchRequest *req = c->req;
	int64_t budget = req->max_bytes > 0 ? req->max_bytes : INT32_MAX;
	int64_t now = first && req->replica_id >= 0 ? rn_wallclock_ms() : 0;
	int total = 0, i, j;

	for (i = 0; i < req->topics_count; i++)
		total += req->topics[i].partitions_count;
	/* each wake-up of a parked fetch rebuilds in the same memory */
	rn_arena_rewind(&c->arena, &c->req_mark);
	memset(fs, 0, sizeof(*fs));
	fs->arena = &c->arena;
	rn_FetchResponse_init(&fs->r);
	fs->slices = calloc((size_t)(total ? total : 1), sizeof(*fs->slices));
	fs->slice_parts = calloc((size_t)(total ? total : 1),
	    sizeof(*fs->slice_parts));
	fs->touched = rn_arena_alloc(&c->arena,
	    sizeof(*fs->touched) * (size_t)(total ? total : 1));
	fs->r.responses_count = req->topics_count;
	fs->r.responses = net_array(c, req->topics_count, sizeof(*fs->r.responses));
	if (!fs->slices || !fs->slice_parts || !fs->touched || !fs->r.responses)
		return -ENOMEM;
	if (c->fsess_on && (fs->unsent = rn_arena_alloc(&c->arena,
	    (size_t)(total ? total : 1))) == NULL)
		return -ENOMEM;
	if (fs->unsent != NULL)
		memset(fs->unsent, 0, (size_t)(total ? total : 1));

	for (i = 0; i < req->topics_count; i++) {
		const struct rn_FetchRequest_FetchTopic *ft = &req->topics[i];
		struct rn_FetchResponse_FetchableTopicResponse *tr =
		    &fs->r.responses[i];
		const struct rn_mdv_topic *t;

		rn_FetchResponse_FetchableTopicResponse_init(tr);
		tr->topic = ft->topic;
		tr->topic_id = ft->topic_id;
		t = c->hdr.api_version >= 13 ?
		    rn_mdview_topic_by_id(&n->view, ft->topic_id.b) :
		    net_topic(n, ft->topic);
		tr->partitions_count = ft->partitions_count;
		tr->partitions = net_array(c, ft->partitions_count, sizeof(*tr->partitions));
		if (tr->partitions == NULL)
			return -ENOMEM;
		if (!fetch_allowed(n, c, t, ft)) {
			fetch_refuse(fs, ft, tr);
			fs->entry += ft->partitions_count;
			continue;
		}
		for (j = 0; j < ft->partitions_count; j++, fs->entry++)
			fetch_partition(n, c, fs, t, &ft->partitions[j],
			    &tr->partitions[j], first, now, &budget);
	}
	return 0;
}

static int
fetch_respond(struct net *n, struct conn *c, struct fetch_state *fs)
{
	struct net_out *o;
	size_t mark;

	if ((o = net_out_begin(c, &mark)) == NULL) {
		fetch_release(fs);
		free(fs->slices);
		free(fs->slice_parts);
		return -ENOMEM;
	}
	/* session id 0 tells the client no session exists */
	fs->r.session_id = 0;
	if (c->fsess_on)
		net_fsess_answered(c, &fs->r, fs->unsent);
	if (((const struct rn_FetchRequest *)c->req)->replica_id < 0)
		fs->r.throttle_time_ms = net_quota_record(n, c, RN_CQ_FETCH,
		    fs->bytes);
	/* copied reads live in the connection's arena, which the next
	 * request reuses: into the output with the rest */
	o->w.inline_max = FETCH_COPY_MAX;
	rn_FetchResponse_encode(&o->w, c->hdr.api_version, &fs->r);
	if (((const struct rn_FetchRequest *)c->req)->replica_id < 0)
		for (int i = 0; i < fs->n_slices; i++)
			net_count_out(n, fs->slice_parts[i], fs->slices[i].len);
	/* the output owns the slices until the bytes are on the wire */
	o->slices = fs->slices;
	o->slice_parts = fs->slice_parts;
	o->n_slices = fs->n_slices;
	net_out_finish(n, c, o, mark);
	return 0;
}

static void
fetch_watch(struct net *n, struct fetch_state *fs)
{
	int i;

	for (i = 0; i < fs->n_touched; i++)
		rn_part_park(fs->touched[i].p, n->w->index);
}

/*
 * Keep what the parked fetch waits on (fetch_still_waits). Out of memory
 * it keeps nothing, and its wake-ups build the answer again.
 */
static void
fetch_keep_watch(struct net *n, struct conn *c, const struct fetch_state *fs)
{
	c->n_watch = 0;
	if (fs->n_touched > c->watch_cap) {
		struct net_watch *w = realloc(c->watch,
		    sizeof(*w) * (size_t)fs->n_touched);

		if (w == NULL)
			return;
		c->watch = w;
		c->watch_cap = fs->n_touched;
	}
	/* a session fetch may look at nothing (none named, none pending) */
	if (fs->n_touched > 0)
		memcpy(c->watch, fs->touched,
		    sizeof(*c->watch) * (size_t)fs->n_touched);
	c->n_watch = fs->n_touched;
	c->watch_version = n->view.version;
}

/*
 * A wake-up came from an append or a high watermark anywhere on this
 * node. A follower's fetch of 10,000 partitions built again for each one
 * was most of a leader's work: true while none of its partitions has
 * records past what it asked for (the log end for a follower, the high
 * watermark for a consumer) and the image is the one it was built on.
 * Only a fetch waiting for its first byte is judged so.
 */
static bool
fetch_still_waits(struct net *n, struct conn *c)
{
	const struct rn_FetchRequest *req = c->req;
	int i;

	if (c->n_watch == 0 || c->watch_version != n->view.version ||
	    req->min_bytes > 1)
		return false;
	for (i = 0; i < c->n_watch; i++) {
		struct rn_part *p = c->watch[i].p;
		int64_t end = req->replica_id >= 0 ? rn_part_log_end(p) :
		    req->isolation_level == 1 ? rn_part_lso(p) : rn_part_hw(p);

		if (rn_part_stale(p) || c->watch[i].offset < end)
			return false;
	}
	return true;
}

bool
net_fetch_watches(const struct conn *c, const uint64_t *changed)
{
	int i;

	if (c->n_watch == 0)
		return true;	/* it kept nothing to judge by */
	for (i = 0; i < c->n_watch; i++)
		if (rn_wakeset_test(changed, (uint32_t)c->watch[i].p->slot))
			return true;
	return false;
}

/* Build the answer; park the connection if it is too small to send yet. */
static int
fetch_run(struct net *n, struct conn *c, bool may_park, bool first,
    bool *parked)
{
	const struct rn_FetchRequest *req = c->req;
	struct fetch_state fs;
	int rc;

	*parked = false;
	if ((rc = fetch_build(n, c, &fs, first)) != 0) {
		fetch_release(&fs);
		free(fs.slices);
		free(fs.slice_parts);
		return rc;
	}
	/* a session's partitions keep this worker's bit whether it parks
	 * or not: their appends mark them pending (fetch_session.c) */
	if (c->fsess_on)
		fetch_watch(n, &fs);
	if (may_park && !fs.error && fs.bytes < req->min_bytes &&
	    req->max_wait_ms > 0) {
		fetch_release(&fs);
		free(fs.slices);
		free(fs.slice_parts);
		/* announce first, then look again: an append in between
		 * either sees our bit or is seen by the second look, which
		 * builds only if the watch sees records */
		fetch_watch(n, &fs);
		fetch_keep_watch(n, c, &fs);
		if (fetch_still_waits(n, c)) {
			*parked = true;
			return 0;
		}
		if ((rc = fetch_build(n, c, &fs, false)) != 0) {
			fetch_release(&fs);
			free(fs.slices);
			free(fs.slice_parts);
			return rc;
		}
		if (fs.bytes < req->min_bytes && !fs.error) {
			fetch_release(&fs);
			free(fs.slices);
			free(fs.slice_parts);
			fetch_keep_watch(n, c, &fs);
			*parked = true;
			return 0;
		}
	}
	return fetch_respond(n, c, &fs);
}

/* A session error: the top-level code alone (Kafka's answer). */
static int
fetch_session_error(struct net *n, struct conn *c, int16_t err)
{
	struct rn_FetchResponse r;
	struct net_out *o;
	size_t mark;

	rn_FetchResponse_init(&r);
	r.error_code = err;
	if ((o = net_out_begin(c, &mark)) == NULL)
		return -ENOMEM;
	rn_FetchResponse_encode(&o->w, c->hdr.api_version, &r);
	net_out_finish(n, c, o, mark);
	return 0;
}

int
net_fetch(struct net *n, struct conn *c)
{
	const struct rn_FetchRequest *req = c->req;
	bool parked;
	int16_t err;
	int rc;

	c->fsess_on = false;
	if (c->hdr.api_version >= 7 &&
	    (req->session_id != 0 || req->session_epoch != -1)) {
		/* marks not yet taken (another worker's DeleteRecords that
		 * the client saw answered) count for this answer */
		if (c->fsess != NULL)
			net_wakeup(n, false);
		if ((rc = net_fsess_begin(n, c, &err)) < 0)
			return rc;
		if (err != RN_KERR_NONE)
			return fetch_session_error(n, c, err);
		if (rc == 1 && (rc = net_fsess_effective(n, c, true)) != 0)
			return rc;
		req = c->req;
	}
	if ((rc = fetch_run(n, c, true, true, &parked)) != 0)
		return rc;
	if (parked) {
		net_conn_park(n, c, CONN_WAIT_FETCH, rn_now_ms() +
		    req->max_wait_ms);
	}
	return 0;
}

void
net_fetch_recheck(struct net *n, struct conn *c, bool timed_out)
{
	bool parked = false;
	int rc = 0;

	if (c->fsess_on) {
		/* partitions of the session may have become pending */
		if (!timed_out && !net_fsess_woken(c))
			return;
		rc = net_fsess_effective(n, c, false);
	} else if (!timed_out && fetch_still_waits(n, c)) {
		return;
	}
	if (rc == 0)
		rc = fetch_run(n, c, !timed_out, false, &parked);
	if (rc != 0) {
		log_warnx("Fetch v%d from %s: cannot answer a parked fetch "
		    "(%s): closing", c->hdr.api_version, c->peer,
		    strerror(-rc));
		c->closing = true;
		net_conn_request_done(n, c);
		return;
	}
	if (!parked)
		net_conn_request_done(n, c);
}

int
net_list_offsets(struct net *n, struct conn *c)
{
	const struct rn_ListOffsetsRequest *req = c->req;
	struct rn_ListOffsetsResponse r;
	int i, j;

	rn_ListOffsetsResponse_init(&r);
	r.topics_count = req->topics_count;
	r.topics = net_array(c, req->topics_count, sizeof(*r.topics));
	if (r.topics == NULL)
		return -ENOMEM;
	for (i = 0; i < req->topics_count; i++) {
		const struct rn_ListOffsetsRequest_ListOffsetsTopic *lt =
		    &req->topics[i];
		struct rn_ListOffsetsResponse_ListOffsetsTopicResponse *tr =
		    &r.topics[i];
		const struct rn_mdv_topic *t = net_topic(n, lt->name);
		bool allowed = net_authorized(n, c, RN_ACL_OP_DESCRIBE,
		    RN_ACL_RES_TOPIC, lt->name.ptr, lt->name.len > 0 ?
		    (size_t)lt->name.len : 0);

		rn_ListOffsetsResponse_ListOffsetsTopicResponse_init(tr);
		tr->name = lt->name;
		tr->partitions_count = lt->partitions_count;
		tr->partitions = net_array(c, lt->partitions_count, sizeof(*tr->partitions));
		if (tr->partitions == NULL)
			return -ENOMEM;
		for (j = 0; j < lt->partitions_count; j++) {
			const struct rn_ListOffsetsRequest_ListOffsetsPartition *lp =
			    &lt->partitions[j];
			struct rn_ListOffsetsResponse_ListOffsetsPartitionResponse *pr =
			    &tr->partitions[j];
			const struct rn_mdv_partition *mp = NULL;
			struct rn_part *p;
			int16_t kerr = RN_KERR_NONE;
			int64_t hw, off, ts;

			rn_ListOffsetsResponse_ListOffsetsPartitionResponse_init(pr);
			pr->partition_index = lp->partition_index;
			if (!allowed) {
				pr->error_code =
				    RN_KERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			p = leader_part(n, t, lp->partition_index,
			    lp->current_leader_epoch, true, &mp, &kerr);
			if (p == NULL) {
				pr->error_code = kerr;
				continue;
			}
			pr->leader_epoch = mp->leader_epoch;
			/* read_committed sees up to the last stable offset */
			hw = req->isolation_level == 1 ? rn_part_lso(p) :
			    rn_part_hw(p);
			if (lp->timestamp == RN_LIST_LATEST) {
				pr->offset = hw;
			} else if (lp->timestamp == RN_LIST_EARLIEST) {
				pr->offset = rn_log_start_offset(p->log);
			} else if (lp->timestamp < 0 && lp->timestamp != -3) {
				pr->error_code = RN_KERR_INVALID_REQUEST;
			} else if (rn_part_io(p, rn_log_offset_for_time(p->log,
			    lp->timestamp, &off, &ts), "reading") == 0 &&
			    off < hw) {
				pr->offset = off;
				pr->timestamp = ts;
			} else {
				pr->offset = -1;
				pr->timestamp = -1;
			}
		}
	}
	return net_respond(n, c, &r);
}

int
net_offset_for_leader_epoch(struct net *n, struct conn *c)
{
	const struct rn_OffsetForLeaderEpochRequest *req = c->req;
	struct rn_OffsetForLeaderEpochResponse r;
	int i, j;

	rn_OffsetForLeaderEpochResponse_init(&r);
	r.topics_count = req->topics_count;
	r.topics = net_array(c, req->topics_count, sizeof(*r.topics));
	if (r.topics == NULL)
		return -ENOMEM;
	for (i = 0; i < req->topics_count; i++) {
		const struct rn_OffsetForLeaderEpochRequest_OffsetForLeaderTopic *lt =
		    &req->topics[i];
		struct rn_OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult *tr =
		    &r.topics[i];
		const struct rn_mdv_topic *t = net_topic(n, lt->topic);
		/* a follower needs CLUSTER_ACTION, a consumer DESCRIBE */
		int16_t denied = req->replica_id >= 0 ?
		    (net_authorized_cluster(n, c, RN_ACL_OP_CLUSTER_ACTION) ? 0 :
		    RN_KERR_CLUSTER_AUTHORIZATION_FAILED) :
		    (net_authorized(n, c, RN_ACL_OP_DESCRIBE, RN_ACL_RES_TOPIC,
		    lt->topic.ptr, lt->topic.len > 0 ? (size_t)lt->topic.len :
		    0) ? 0 : RN_KERR_TOPIC_AUTHORIZATION_FAILED);

		rn_OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult_init(tr);
		tr->topic = lt->topic;
		tr->partitions_count = lt->partitions_count;
		tr->partitions = net_array(c, lt->partitions_count, sizeof(*tr->partitions));
		if (tr->partitions == NULL)
			return -ENOMEM;
		for (j = 0; j < lt->partitions_count; j++) {
			const struct rn_OffsetForLeaderEpochRequest_OffsetForLeaderPartition *lp =
			    &lt->partitions[j];
			struct rn_OffsetForLeaderEpochResponse_EpochEndOffset *pr =
			    &tr->partitions[j];
			const struct rn_mdv_partition *mp = NULL;
			struct rn_part *p;
			int16_t kerr = RN_KERR_NONE;

			rn_OffsetForLeaderEpochResponse_EpochEndOffset_init(pr);
			pr->partition = lp->partition;
			if (denied != 0) {
				pr->error_code = denied;
				continue;
			}
			p = leader_part(n, t, lp->partition,
			    lp->current_leader_epoch, true, &mp, &kerr);
			if (p == NULL) {
				pr->error_code = kerr;
				continue;
			}
			rn_log_end_offset_for_epoch(p->log, lp->leader_epoch,
			    &pr->leader_epoch, &pr->end_offset);
		}
	}
	return net_respond(n, c, &r);
}

int
net_delete_records(struct net *n, struct conn *c)
{
	const struct rn_DeleteRecordsRequest *req = c->req;
	struct rn_DeleteRecordsResponse r;
	int i, j;

	rn_DeleteRecordsResponse_init(&r);
	r.topics_count = req->topics_count;
	r.topics = net_array(c, req->topics_count, sizeof(*r.topics));
	if (r.topics == NULL)
		return -ENOMEM;
	for (i = 0; i < req->topics_count; i++) {
		const struct rn_DeleteRecordsRequest_DeleteRecordsTopic *dt =
		    &req->topics[i];
		struct rn_DeleteRecordsResponse_DeleteRecordsTopicResult *tr =
		    &r.topics[i];
		const struct rn_mdv_topic *t = net_topic(n, dt->name);
		bool allowed = net_authorized(n, c, RN_ACL_OP_DELETE,
		    RN_ACL_RES_TOPIC, dt->name.ptr, dt->name.len > 0 ?
		    (size_t)dt->name.len : 0);

		rn_DeleteRecordsResponse_DeleteRecordsTopicResult_init(tr);
		tr->name = dt->name;
		tr->partitions_count = dt->partitions_count;
		tr->partitions = net_array(c, dt->partitions_count, sizeof(*tr->partitions));
		if (tr->partitions == NULL)
			return -ENOMEM;
		for (j = 0; j < dt->partitions_count; j++) {
			const struct rn_DeleteRecordsRequest_DeleteRecordsPartition *dp =
			    &dt->partitions[j];
			struct rn_DeleteRecordsResponse_DeleteRecordsPartitionResult *pr =
			    &tr->partitions[j];
			const struct rn_mdv_partition *mp = NULL;
			struct rn_part *p;
			int16_t kerr = RN_KERR_NONE;
			int64_t hw, target, low;

			rn_DeleteRecordsResponse_DeleteRecordsPartitionResult_init(pr);
			pr->partition_index = dp->partition_index;
			pr->low_watermark = -1;
			if (!allowed) {
				pr->error_code =
				    RN_KERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			p = leader_part(n, t, dp->partition_index, -1, true, &mp,
			    &kerr);
			if (p == NULL) {
				pr->error_code = kerr;
				continue;
			}
			hw = rn_part_hw(p);
			/* -1 means "up to the high watermark" */
			target = dp->offset == -1 ? hw : dp->offset;
			if (target < 0 || target > hw) {
				pr->error_code = RN_KERR_OFFSET_OUT_OF_RANGE;
				continue;
			}
			pr->error_code = rn_part_delete_records(p, target, &low);
			if (pr->error_code == RN_KERR_NONE) {
				pr->low_watermark = low;
				/* fetch sessions hear of the new log start */
				rn_part_wake_parked(p, n->net_efds,
				    n->w->index);
			}
		}
	}
	return net_respond(n, c, &r);
}
