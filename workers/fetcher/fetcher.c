/*
 * A replica-fetcher worker: one of num.replica.fetchers processes that
 * keep this node's follower replicas in step with their leaders. A
 * partition belongs to fetcher hash(topic id, partition) % n. Per leader
 * broker there is one connection with one Fetch in flight (replica id set,
 * long-polled on the leader); all leaders are polled at once so an idle
 * leader never delays a busy one. On a new leader epoch the follower first
 * asks OffsetForLeaderEpoch and truncates a divergent tail.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/metrics.h"
#include "protocol/kerrors.h"
#include "protocol/kframe.h"
#include "protocol/kmsg_gen.h"
#include "storage/batch.h"
#include "workers/fetcher/fetcher.h"
#include "workers/fetcher/fetcher_int.h"
#include "workers/fetcher/mover.h"
#include "workers/partition/dirfail.h"
#include "workers/partition/partition.h"
#include "workers/peer.h"
#include "workers/replquota.h"
#include "workers/secure_client.h"

#define FETCH_VERSION 13         /* topic ids: never another topic's data */
#define OFFSETS_VERSION 3
#define FETCH_MAX_WAIT_MS 500
#define COLLECT_RETRY_MS 1000     /* a followed log that could not be opened */
#define COLLECT_IDLE_MS 30000     /* the list built again from the image */
#define IO_TIMEOUT_MS 10000
#define LOGIN_TIMEOUT_MS 5000     /* TLS handshake and SASL login */
#define LAG_PUBLISH_MS 500

static bool
is_replica(const struct rn_mdv_partition *mp, int32_t id)
{
	int i;

	for (i = 0; i < mp->n_replicas; i++)
		if (mp->replicas[i] == id)
			return true;
	return false;
}

static void
leader_close(struct leader *l, const char *why)
{
	if (l->fd >= 0) {
		if (why != NULL)
			rn_log_about(LOG_INFO, rn_subj_broker(l->id),
			    "connection to leader %d closed: %s", l->id, why);
		close(l->fd);
	}
	rn_secc_free(l->sec);
	l->sec = NULL;
	l->fd = -1;
	l->in_flight = false;
	l->in.len = 0;
	/* the leader's session ended with the connection */
	fsn_reset(l);
}

static struct leader *
leader_get(struct fetcher *f, int32_t id)
{
	struct leader *l;
	int i;

	for (i = 0; i < f->n_leaders; i++)
		if (f->leaders[i]->id == id)
			return f->leaders[i];
	if (f->n_leaders == f->cap_leaders) {
		int cap = f->cap_leaders ? 2 * f->cap_leaders : 8;
		struct leader **nl = realloc(f->leaders, sizeof(*nl) *
		    (size_t)cap);
		struct pollfd *np;
		struct leader **npl;

		if (nl == NULL)
			return NULL;
		f->leaders = nl;
		if ((np = realloc(f->pfd, sizeof(*np) * (size_t)cap)) == NULL)
			return NULL;
		f->pfd = np;
		if ((npl = realloc(f->polled, sizeof(*npl) * (size_t)cap)) ==
		    NULL)
			return NULL;
		f->polled = npl;
		f->cap_leaders = cap;
	}
	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	l->id = id;
	l->fd = -1;
	rn_arena_init(&l->arena, 0);
	f->leaders[f->n_leaders++] = l;
	return l;
}

/*
 * TLS and the SASL login on the inter-broker listener, blocking within
 * the I/O timeout like the connect before it. A failure is logged at
 * most every 10 s per leader (the next round tries again), naming the
 * leader and the reason, never the password.
 */
static int
leader_login(struct fetcher *f, struct leader *l, const char *host)
{
	const struct rn_secc_cfg *c = f->w->env->ib_client;

	if ((l->sec = rn_secc_new(c, host)) != NULL &&
	    rn_secc_handshake_fd(l->sec, l->fd, LOGIN_TIMEOUT_MS) == 0)
		return 0;
	if (rn_now_ms() - l->sec_logged_ms >= 10000) {
		l->sec_logged_ms = rn_now_ms();
		rn_log_about(LOG_WARNING, rn_subj_broker(l->id),
		    "cannot log in to leader %d at %s listener %s: %s", l->id,
		    host, c->listener, l->sec == NULL ? "out of memory" :
		    rn_secc_error(l->sec));
	}
	leader_close(l, NULL);
	return -EACCES;
}

static int
leader_connect(struct fetcher *f, struct leader *l)
{
	char host[256];
	uint16_t port;
	int fd;

	if (rn_mdview_broker_address(&f->view, l->id,
	    f->cfg->inter_broker_listener_name, host, sizeof(host), &port) != 0)
		return -ENOENT;
	if ((fd = rn_tcp_connect_timed(host, port, 2000)) < 0)
		return fd;
	l->fd = fd;
	if (f->w->env->ib_client != NULL)
		return leader_login(f, l, host);
	return 0;
}

/* What TLS has to send, out on the (blocking, timed-out) socket. */
static int
sec_flush(struct leader *l)
{
	uint8_t buf[16384];
	size_t n;
	ssize_t rc;

	while ((n = rn_secc_take(l->sec, buf, sizeof(buf))) > 0)
		if ((rc = rn_write_all(l->fd, buf, n)) < 0)
			return (int)rc;
	return 0;
}

/* Plaintext of a secured connection, for rn_kframe_recv_fn: what the
 * session holds, else what the socket has now, decrypted. */
static ssize_t
sec_read(void *arg, void *buf, size_t len)
{
	struct leader *l = arg;
	uint8_t raw[65536];
	ssize_t n, k;

	for (;;) {
		if ((n = rn_secc_read(l->sec, buf, len)) != 0)
			return n < 0 ? -ENOTCONN : n;
		k = recv(l->fd, raw, sizeof(raw), MSG_DONTWAIT);
		if (k == 0)
			return -ENOTCONN;
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		if (rn_secc_feed(l->sec, raw, (size_t)k) != 0)
			return -ENOMEM;
		/* TLS may answer (a key update) */
		if (rn_secc_wants_send(l->sec) && sec_flush(l) != 0)
			return -EPIPE;
	}
}

static int
send_request(struct fetcher *f, struct leader *l, int16_t key, int16_t ver,
    const void *body)
{
	int32_t corr = ++f->next_corr;
	struct rn_kwriter w;
	ssize_t rc;

	rn_kwriter_init(&w);
	rc = rn_kframe_request(&w, -1, key, ver, corr, "runnel-replica-fetcher",
	    body, NULL, 0);
	if (rc == 0 && l->sec == NULL)
		rc = rn_write_all(l->fd, w.buf, w.len);
	else if (rc == 0)
		rc = rn_secc_write(l->sec, w.buf, w.len) != 0 ? -EPROTO :
		    sec_flush(l);
	rn_kwriter_free(&w);
	if (rc < 0)
		return (int)rc;
	l->in_flight = true;
	l->api_key = key;
	l->corr = corr;
	l->sent_ms = rn_now_ms();
	l->in.len = 0;
	return 0;
}

/*
 * The replica's log, opened again if the bound on open logs closed it
 * (rn_part_table_trim): its handle is used until the next one is opened.
 */
static struct rn_part *
fp_open(struct fetcher *f, struct fpart *fp)
{
	int16_t kerr;

	if (fp->p != NULL && fp->p->log != NULL)
		return fp->p;
	return fp->p = rn_part_get(&f->parts, &f->view, fp->t, fp->mp, &kerr);
}

/*
 * The replica for what its slot answers alone (the high watermark, the
 * log end): an answer without records opens no log, so following more
 * replicas than this process may keep open costs a reopen only for those
 * the leader sent records for.
 */
static struct rn_part *
fp_slot(struct fetcher *f, struct fpart *fp)
{
	if (fp->p != NULL && !rn_part_stale(fp->p))
		return fp->p;
	return fp_open(f, fp);
}

static void
apply_partition(struct fetcher *f, struct leader *l, struct fpart *fp,
    const struct rn_FetchResponse_PartitionData *pd)
{
	struct rn_part *p = pd->records.len > 0 ||
	    pd->error_code == RN_KERR_OFFSET_OUT_OF_RANGE ? fp_open(f, fp) :
	    fp_slot(f, fp);
	int16_t kerr;
	int rc;

	if (p == NULL)
		return;	/* its dir went offline, or the slot moved on */

	switch (pd->error_code) {
	case RN_KERR_NONE:
		break;
	case RN_KERR_OFFSET_OUT_OF_RANGE:
		/* the leader deleted what we miss: start over there */
		if (rn_part_restart_at(p, pd->log_start_offset))
			rn_log_about(LOG_WARNING, rn_subj_part(fp->t->name,
			    fp->mp->p), "%s-%d: below the leader's log start "
			    "%lld: restarted the replica there", fp->t->name,
			    fp->mp->p, (long long)pd->log_start_offset);
		fp->synced_epoch = -1; /* ahead of the leader: check divergence */
		f->epoch_gen++;
		fsn_moved(l, fp);
		return;
	case RN_KERR_NOT_LEADER_OR_FOLLOWER:
	case RN_KERR_FENCED_LEADER_EPOCH:
	case RN_KERR_UNKNOWN_LEADER_EPOCH:
	case RN_KERR_UNKNOWN_TOPIC_OR_PARTITION:
	case RN_KERR_UNKNOWN_TOPIC_ID:
	case RN_KERR_KAFKA_STORAGE_ERROR: /* its dir failed: it moves */
		return; /* the next image tells who leads */
	default:
		rn_log_about(LOG_WARNING, rn_subj_part(fp->t->name, fp->mp->p),
		    "%s-%d: fetch error %s", fp->t->name, fp->mp->p,
		    rn_kerr_name(pd->error_code));
		return;
	}
	if (pd->records.len > 0) {
		fsn_moved(l, fp); /* the leader is told where it stands */
		if (fp->throttled)
			rn_replquota_charge(&f->quota, (size_t)pd->records.len);
		rc = rn_part_append_follower(p, pd->records.ptr,
		    (size_t)pd->records.len);
		if (rc == RN_PART_STALE && rn_part_stale(p) &&
		    (p = rn_part_get(&f->parts, &f->view, fp->t, fp->mp,
		    &kerr)) != NULL) {
			/* its log moved to another dir (mover.c): there */
			fp->p = p;
			rc = rn_part_append_follower(p, pd->records.ptr,
			    (size_t)pd->records.len);
		}
		if (rc == RN_PART_STALE || p == NULL)
			return;
		if (rc != 0 && rc != -EILSEQ) {
			rn_log_about(LOG_WARNING, rn_subj_part(fp->t->name,
			    fp->mp->p), "%s-%d: cannot append fetched records: "
			    "%s", fp->t->name, fp->mp->p, strerror(-rc));
			return;
		}
	}
	/* a follower's high watermark: the leader's, as far as we have it */
	rn_part_hw_follow(p, pd->high_watermark);
	/* Kafka's fetcher lag: what the leader has committed beyond us */
	fp->lag = pd->high_watermark - rn_part_log_end(p);
	if (fp->lag < 0)
		fp->lag = 0;
	f->lag_moved = true;
}

/* ReplicaFetcherManager MaxLag, this fetcher's share: the largest lag
 * among the replicas it follows now. */
static void
publish_max_lag(struct fetcher *f, struct fpart **mine, int n,
    struct rn_met_worker *met)
{
	int64_t max = 0;
	int i;

	for (i = 0; i < n; i++)
		if (mine[i]->lag > max)
			max = mine[i]->lag;
	atomic_store_explicit(&met->fetch_max_lag, (uint64_t)max,
	    memory_order_relaxed);
	f->lag_moved = false;
}

/*
 * The replica a response entry is about, or NULL (gone from this fetcher
 * since the request). Leaders answer in request order, so the entry at
 * the same position is tried first: no quadratic scan per response.
 */
static struct fpart *
response_part(struct fetcher *f, struct leader *l, int *pos,
    const uint8_t *topic_id, struct rn_kstr topic, int32_t partition)
{
	int k;

	for (k = 0; k < l->n_parts; k++) {
		int at = (*pos + k) % l->n_parts;
		struct fpart *fp = l->parts[at];

		/* by id where the API has one (Fetch), else by name */
		if (fp->round == f->round && fp->mp->p == partition &&
		    (topic_id != NULL ? memcmp(topic_id, fp->t->id, 16) == 0 :
		    rn_kstr_eq(topic, fp->t->name))) {
			*pos = at + 1;
			return fp;
		}
	}
	return NULL;
}

/*
 * A response decodes into at most a few times its own size, plus the
 * fixed-size structs of the entries we asked for (records stay in the
 * read buffer).
 */
static void
response_arena(struct leader *l, size_t per_entry)
{
	rn_arena_reset(&l->arena);
	rn_arena_set_limit(&l->arena, 4 * l->in.len + 4096 +
	    (size_t)l->n_parts * per_entry);
}

static void
handle_fetch_response(struct fetcher *f, struct leader *l,
    struct rn_kreader *r)
{
	struct rn_FetchResponse resp;
	int i, j, pos = 0;

	response_arena(l, sizeof(struct rn_FetchResponse_PartitionData) +
	    sizeof(struct rn_FetchResponse_FetchableTopicResponse));
	if (rn_FetchResponse_decode(r, FETCH_VERSION, &l->arena, &resp) < 0) {
		leader_close(l, "malformed fetch response");
		return;
	}
	if (!fsn_answered(l, &resp))
		return;
	if (resp.error_code != RN_KERR_NONE)
		rn_log_about(LOG_WARNING, rn_subj_broker(l->id), "fetch from "
		    "leader %d: %s", l->id, rn_kerr_name(resp.error_code));
	for (i = 0; i < resp.responses_count; i++) {
		const struct rn_FetchResponse_FetchableTopicResponse *tr =
		    &resp.responses[i];

		for (j = 0; j < tr->partitions_count; j++) {
			struct fpart *fp = response_part(f, l, &pos,
			    tr->topic_id.b, tr->topic,
			    tr->partitions[j].partition_index);

			/* a session's answer also holds members not named */
			if (fp == NULL)
				fp = fsn_member(f, l, tr->topic_id.b,
				    tr->partitions[j].partition_index);

			if (fp != NULL)
				apply_partition(f, l, fp, &tr->partitions[j]);
		}
	}
}

/* Cut a divergent tail where our history and the leader's part. */
static void
epoch_apply(struct fetcher *f, struct leader *l, struct fpart *fp,
    const struct rn_OffsetForLeaderEpochResponse_EpochEndOffset *e)
{
	int32_t our_epoch;
	int64_t our_end, cut, from;

	if (fp_open(f, fp) == NULL)
		return;
	rn_log_end_offset_for_epoch(fp->p->log, e->leader_epoch, &our_epoch,
	    &our_end);
	cut = e->end_offset;
	if (our_end >= 0 && our_end < cut)
		cut = our_end;
	if (e->end_offset >= 0 && rn_part_truncate(fp->p, cut, &from))
		rn_log_about(LOG_WARNING, rn_subj_part(fp->t->name, fp->mp->p),
		    "%s-%d: truncated from %lld to %lld after leader epoch %d",
		    fp->t->name, fp->mp->p, (long long)from, (long long)cut,
		    fp->mp->leader_epoch);
	fp->synced_epoch = fp->mp->leader_epoch;
	fsn_moved(l, fp);
}

static void
handle_epoch_response(struct fetcher *f, struct leader *l,
    struct rn_kreader *r)
{
	struct rn_OffsetForLeaderEpochResponse resp;
	int i, j, pos = 0;

	response_arena(l, sizeof(struct
	    rn_OffsetForLeaderEpochResponse_EpochEndOffset) + sizeof(struct
	    rn_OffsetForLeaderEpochResponse_OffsetForLeaderTopicResult));
	if (rn_OffsetForLeaderEpochResponse_decode(r, OFFSETS_VERSION,
	    &l->arena, &resp) < 0) {
		leader_close(l, "malformed OffsetForLeaderEpoch response");
		return;
	}
	for (i = 0; i < resp.topics_count; i++)
		for (j = 0; j < resp.topics[i].partitions_count; j++) {
			const struct rn_OffsetForLeaderEpochResponse_EpochEndOffset *e =
			    &resp.topics[i].partitions[j];
			struct fpart *fp = response_part(f, l, &pos, NULL,
			    resp.topics[i].topic, e->partition);

			if (fp != NULL && e->error_code == RN_KERR_NONE)
				epoch_apply(f, l, fp, e);
		}
}

/* Arena bytes a request takes per partition it names. */
#define REQ_ENTRY_BYTES \
	(sizeof(struct rn_FetchRequest_FetchTopic) + \
	sizeof(struct rn_FetchRequest_FetchPartition) + \
	sizeof(struct rn_OffsetForLeaderEpochRequest_OffsetForLeaderTopic) + \
	sizeof(struct rn_OffsetForLeaderEpochRequest_OffsetForLeaderPartition))

/*
 * The largest answer a request for these partitions can bring: fixed
 * bytes per topic and partition, plus, for a fetch, max_bytes and one
 * batch over it (the first data always goes out whole, like Kafka).
 */
static size_t
response_bound(struct fpart **in_req, int n, bool fetch)
{
	size_t bytes = 256 + (size_t)n * RESP_PART_BYTES;
	int64_t batch = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (i == 0 || in_req[i]->t != in_req[i - 1]->t)
			bytes += 16 + in_req[i]->t->name_len;
		if (in_req[i]->p->lcfg.max_message_bytes > batch)
			batch = in_req[i]->p->lcfg.max_message_bytes;
	}
	if (fetch)
		bytes += FETCH_MAX_BYTES + (size_t)batch + RN_BATCH_HEADER_SIZE;
	return bytes;
}

/* OffsetForLeaderEpoch for the partitions whose leader epoch is new to
 * us; true if one went out (the fetch waits for its answer). */
static bool
kick_epochs(struct fetcher *f, struct leader *l, struct fpart **mine, int n)
{
	struct rn_OffsetForLeaderEpochRequest req;
	struct rn_OffsetForLeaderEpochRequest_OffsetForLeaderTopic *t = NULL;
	struct rn_OffsetForLeaderEpochRequest_OffsetForLeaderPartition *pp;
	struct rn_arena *a = &l->arena;
	int i;

	/* nothing new since the last look found every epoch synced */
	if (l->epochs_ok_gen == f->epoch_gen)
		return false;
	rn_OffsetForLeaderEpochRequest_init(&req);
	req.replica_id = f->cfg->node_id;
	req.topics = rn_arena_alloc(a, sizeof(*req.topics) * (size_t)n);
	pp = rn_arena_alloc(a, sizeof(*pp) * (size_t)n);
	if (req.topics == NULL || pp == NULL)
		return true;
	for (i = 0; i < n; i++) {
		struct fpart *fp = mine[i];
		int32_t latest;

		if (fp->synced_epoch == fp->mp->leader_epoch)
			continue;
		latest = rn_part_latest_epoch(fp->p);
		if (latest < 0) {
			/* no history of our own: nothing can diverge */
			fp->synced_epoch = fp->mp->leader_epoch;
			continue;
		}
		/* mine is sorted by topic: one entry per topic */
		if (t == NULL || l->parts[l->n_parts - 1]->t != fp->t) {
			t = &req.topics[req.topics_count++];
			rn_OffsetForLeaderEpochRequest_OffsetForLeaderTopic_init(t);
			t->topic = (struct rn_kstr){ fp->t->name,
			    (int32_t)fp->t->name_len };
			t->partitions = &pp[l->n_parts];
		}
		rn_OffsetForLeaderEpochRequest_OffsetForLeaderPartition_init(
		    &pp[l->n_parts]);
		pp[l->n_parts].partition = fp->mp->p;
		pp[l->n_parts].current_leader_epoch = fp->mp->leader_epoch;
		pp[l->n_parts].leader_epoch = latest;
		t->partitions_count++;
		l->parts[l->n_parts++] = fp;
	}
	if (req.topics_count == 0) {
		l->epochs_ok_gen = f->epoch_gen;
		return false;
	}
	l->resp_max = response_bound(l->parts, l->n_parts, false);
	if (send_request(f, l, RN_KAPI_OFFSET_FOR_LEADER_EPOCH,
	    OFFSETS_VERSION, &req) != 0)
		leader_close(l, "send failed");
	return true;
}

/*
 * The bytes each throttled replica may fetch in this request (the
 * quota's allowance shared among them); 0: leave them out.
 */
static int32_t
throttled_share(struct fetcher *f, struct leader *l, struct fpart **mine,
    int n, int *throttled)
{
	int i, k = 0;

	/* who is throttled changes only with the list */
	if (l->thr_gen != f->mine_gen) {
		for (i = 0; i < n; i++)
			k += mine[i]->throttled;
		l->n_throttled = k;
		l->thr_gen = f->mine_gen;
	}
	k = *throttled = l->n_throttled;
	if (k == 0)
		return PARTITION_MAX_BYTES;
	return rn_replquota_allowance(&f->quota, PARTITION_MAX_BYTES) / k;
}

static void
kick_fetch(struct fetcher *f, struct leader *l, struct fpart **mine, int n)
{
	struct rn_FetchRequest req;
	struct rn_FetchRequest_FetchTopic *t = NULL;
	struct rn_FetchRequest_FetchPartition *pp;
	struct rn_arena *a = &l->arena;
	int throttled;
	int32_t share = throttled_share(f, l, mine, n, &throttled);
	struct fpart **cand;
	enum fsn_mode mode;
	int i, k = 0;

	rn_FetchRequest_init(&req);
	req.replica_id = f->cfg->node_id;
	req.max_wait_ms = FETCH_MAX_WAIT_MS;
	req.min_bytes = 1;
	req.max_bytes = FETCH_MAX_BYTES;
	mode = fsn_begin(f, l, &req, throttled > 0);
	cand = fsn_candidates(f, l, mode, mine, &n);
	req.topics = rn_arena_alloc(a, sizeof(*req.topics) * (size_t)(n ? n : 1));
	pp = rn_arena_alloc(a, sizeof(*pp) * (size_t)(n ? n : 1));
	if (req.topics == NULL || pp == NULL)
		return;
	f->kicks++;
	for (i = 0; i < n; i++) {
		struct fpart *fp = cand[i];

		if (fp->throttled && share <= 0)
			continue; /* over the quota: not this time */
		if (mode == FSN_INCREMENTAL && !fsn_wanted(f, l, fp))
			continue; /* the leader has it as it is */
		if (t == NULL || l->parts[l->n_parts - 1]->t != fp->t) {
			t = &req.topics[req.topics_count++];
			rn_FetchRequest_FetchTopic_init(t);
			t->topic = (struct rn_kstr){ fp->t->name,
			    (int32_t)fp->t->name_len };
			memcpy(t->topic_id.b, fp->t->id, 16);
			t->partitions = &pp[k];
		}
		rn_FetchRequest_FetchPartition_init(&pp[k]);
		pp[k].partition = fp->mp->p;
		pp[k].current_leader_epoch = fp->mp->leader_epoch;
		pp[k].fetch_offset = rn_part_log_end(fp->p);
		pp[k].log_start_offset = rn_part_log_start(fp->p);
		pp[k].partition_max_bytes = fp->throttled ? share :
		    PARTITION_MAX_BYTES;
		t->partitions_count++;
		l->parts[l->n_parts++] = fp;
		if (fsn_sent(f, l, mode, fp, &pp[k]) != 0) {
			leader_close(l, "out of memory");
			return;
		}
		k++;
	}
	/* an incremental fetch naming nothing still waits for news */
	if (mode == FSN_INCREMENTAL) {
		if (fsn_forget(f, l, &req, a) != 0) {
			leader_close(l, "out of memory");
			return;
		}
	} else if (k == 0) {
		return;
	}
	l->resp_max = mode == FSN_INCREMENTAL ? fsn_resp_bound(l) :
	    response_bound(l->parts, l->n_parts, true);
	fsn_kicked(l);
	if (send_request(f, l, RN_KAPI_FETCH, FETCH_VERSION, &req) != 0)
		leader_close(l, "send failed");
}

/*
 * Build and send the next request to a leader: epochs first, then fetch.
 * mine holds this leader's replicas, sorted by topic and partition.
 */
static void
leader_kick(struct fetcher *f, struct leader *l, struct fpart **mine, int n)
{
	if (l->in_flight || n == 0)
		return;
	if (l->fd < 0 && leader_connect(f, l) != 0)
		return;
	if (n > l->cap_parts) {
		struct fpart **np = realloc(l->parts, sizeof(*np) * (size_t)n);
		if (np == NULL)
			return;
		l->parts = np;
		l->cap_parts = n;
	}
	l->n_parts = 0;
	/* a request's structs grow with the partitions it names or forgets
	 * (a session's members that left), no more */
	rn_arena_reset(&l->arena);
	rn_arena_set_limit(&l->arena, 4096 + (size_t)(n + l->sess.n_members) *
	    REQ_ENTRY_BYTES);
	if (!kick_epochs(f, l, mine, n)) {
		l->n_parts = 0;
		kick_fetch(f, l, mine, n);
	}
}

static void
leader_readable(struct fetcher *f, struct leader *l)
{
	struct rn_kreader r;
	int32_t max = l->resp_max < INT32_MAX ? (int32_t)l->resp_max :
	    INT32_MAX;
	int rc = l->sec != NULL ? rn_kframe_recv_fn(sec_read, l, &l->in, max) :
	    rn_kframe_recv(l->fd, &l->in, max);

	if (atomic_load(&f->w->env->shm->hdr->fault_stall_fetch)) {
		leader_close(l, NULL); /* the stall fault began meanwhile */
		return;
	}
	if (rc == 0)
		return;
	if (rc < 0) {
		leader_close(l, rc == -ENOTCONN ? "closed by the leader" :
		    rc == -EMSGSIZE ? "response larger than the request allows" :
		    strerror(-rc));
		return;
	}
	l->in_flight = false;
	if (rn_kframe_response(&r, l->in.buf + 4, l->in.len - 4, -1,
	    l->api_key, l->api_key == RN_KAPI_FETCH ? FETCH_VERSION :
	    OFFSETS_VERSION, l->corr) != 0) {
		leader_close(l, "unexpected response");
		return;
	}
	if (l->api_key == RN_KAPI_FETCH)
		handle_fetch_response(f, l, &r);
	else
		handle_epoch_response(f, l, &r);
	l->in.len = 0;
}

/*
 * Whether this fetcher follows the replica mp of t now; if so its fpart
 * is made this round's (it may not be: one that cannot be opened yet).
 */
static struct fpart *
collect_one(struct fetcher *f, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp)
{
	int32_t self = f->cfg->node_id;
	struct fpart *fp;
	int16_t kerr;

	if (mp->slot < 0 || mp->leader < 0 || mp->leader == self ||
	    !is_replica(mp, self) || !rn_fetcher_owns(f->w, t->id, mp->p))
		return NULL;
	fp = &f->fp[mp->slot];
	if (memcmp(fp->id, t->id, 16) != 0) {
		/* another topic in this slot: nothing carries over */
		static const uint8_t none[16];

		if (memcmp(fp->id, none, 16) != 0)
			f->id_moved = true;
		memcpy(fp->id, t->id, 16);
		fp->leader = -1;
		fp->lag = 0;
		fp->sess_gen = 0;
	}
	/* fp->mp may point into an image freed since */
	if (fp->leader != mp->leader)
		fp->synced_epoch = -1;
	fp->leader = mp->leader;
	fp->t = t;
	fp->mp = mp;
	/* one that cannot be opened (yet) is not this round's: an answer in
	 * flight for it is dropped, not applied; one opened before is looked
	 * up without opening its log */
	fp->p = rn_part_peek(&f->parts, t, mp);
	if ((fp->p == NULL || fp->p->log != NULL) &&
	    (fp->p = rn_part_get(&f->parts, &f->view, t, mp, &kerr)) == NULL) {
		f->unopened++; /* looked at again by the next full collect */
		return NULL;
	}
	fp->round = f->round;
	fp->throttled = rn_replquota_applies(&f->quota, t, mp, self, self);
	return fp;
}

/* The follower replicas this fetcher owns, as the current image says. */
static int
collect(struct fetcher *f, struct fpart **out, int max)
{
	const struct rn_mdview *v = &f->view;
	struct fpart *fp;
	int i, j, n = 0;

	for (i = 0; i < v->n_topics && n < max; i++)
		for (j = 0; j < v->topics[i].n_parts && n < max; j++)
			if ((fp = collect_one(f, &v->topics[i],
			    &v->topics[i].parts[j])) != NULL)
				out[n++] = fp;
	return n;
}

/*
 * After a delta: only the replicas it changed can join, leave or change
 * leader, so only they are looked at (an ISR change of a cluster with
 * 30,000 partitions costs what it costs with 30). Whether the list must
 * be sorted again.
 */
static bool
collect_changes(struct fetcher *f, struct fpart **mine, int *n_mine, int max)
{
	const struct rn_mdview *v = &f->view;
	bool moved = false;
	int i, k, n;

	for (k = 0; k < v->n_changes; k++) {
		const struct rn_mdv_change *c = &v->changes[k];
		const struct rn_mdv_topic *t = &v->topics[c->topic];
		const struct rn_mdv_partition *mp = &t->parts[c->p];
		struct fpart *fp;

		if (c->old_slot >= 0 && c->old_slot != mp->slot) {
			fp = &f->fp[c->old_slot];
			if (fp->round == f->round && fp->mp == mp) {
				fp->round = 0; /* left its slot */
				moved = true;
			}
		}
		if (mp->slot < 0)
			continue;
		fp = &f->fp[mp->slot];
		if (fp->round == f->round) {
			int32_t was = fp->leader;

			fp->round = 0;
			if (collect_one(f, t, mp) == NULL || fp->leader != was)
				moved = true;
		} else if (collect_one(f, t, mp) != NULL) {
			moved = true;
		}
	}
	if (!moved)
		return false;
	/* keep this round's once each, then add the ones that joined */
	for (i = n = 0; i < *n_mine; i++)
		if (mine[i]->round == f->round && !mine[i]->listed) {
			mine[i]->listed = true;
			mine[n++] = mine[i];
		}
	for (k = 0; k < v->n_changes && n < max; k++) {
		const struct rn_mdv_topic *t = &v->topics[v->changes[k].topic];
		int32_t slot = t->parts[v->changes[k].p].slot;

		if (slot >= 0 && f->fp[slot].round == f->round &&
		    !f->fp[slot].listed) {
			f->fp[slot].listed = true;
			mine[n++] = &f->fp[slot];
		}
	}
	for (i = 0; i < n; i++)
		mine[i]->listed = false;
	*n_mine = n;
	return true;
}

/* By leader, then topic (image order), then partition. */
int
fpart_cmp(const void *x, const void *y)
{
	const struct fpart *a = *(struct fpart *const *)x;
	const struct fpart *b = *(struct fpart *const *)y;

	if (a->leader != b->leader)
		return a->leader < b->leader ? -1 : 1;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return (a->mp->p > b->mp->p) - (a->mp->p < b->mp->p);
}

/* Wait for answers from the leaders with a request in flight. */
static void
poll_leaders(struct fetcher *f, struct rn_ring *in, bool busy)
{
	struct rn_worker *w = f->w;
	int i, np = 0;
	bool ready = false;     /* decrypted bytes wait: poll() cannot see them */

	for (i = 0; i < f->n_leaders; i++) {
		struct leader *l = f->leaders[i];

		if (l->in_flight && rn_now_ms() - l->sent_ms >
		    FETCH_MAX_WAIT_MS + IO_TIMEOUT_MS)
			leader_close(l, "no response in time");
		if (l->fd >= 0 && l->in_flight) {
			f->pfd[np].fd = l->fd;
			f->pfd[np].events = POLLIN;
			f->polled[np++] = l;
			if (l->sec != NULL && rn_secc_readable(l->sec))
				ready = true;
		}
	}
	if (np == 0) {
		rn_ring_consumer_sleeping(in, true);
		rn_worker_wait(w, busy ? 0 : 200);
		rn_ring_consumer_sleeping(in, false);
		return;
	}
	/* a move under way: its next step comes at once */
	if (poll(f->pfd, (nfds_t)np, busy || ready ? 0 :
	    RN_WORKER_HEARTBEAT_MS) >= 0)
		for (i = 0; i < np; i++) {
			if (f->pfd[i].revents || (f->polled[i]->sec != NULL &&
			    rn_secc_readable(f->polled[i]->sec)))
				leader_readable(f, f->polled[i]);
			/* thousands of partitions take a while to apply */
			if (rn_now_ms() >= w->next_heartbeat_ms)
				rn_worker_heartbeat(w);
		}
	if (rn_now_ms() >= w->next_heartbeat_ms)
		rn_worker_heartbeat(w);
}

static int
fetcher_setup(struct fetcher *f, struct rn_worker *w, struct fpart ***mine)
{
	uint32_t max = w->env->shm->hdr->max_partitions;

	memset(f, 0, sizeof(*f));
	f->w = w;
	f->cfg = w->env->cfg;
	rn_replquota_init(&f->quota, false, NULL);
	rn_mdview_init(&f->view);
	if (rn_part_table_init(&f->parts, w->env->shm, f->cfg) != 0 ||
	    (f->fp = calloc(max, sizeof(*f->fp))) == NULL ||
	    (*mine = calloc(max, sizeof(**mine))) == NULL)
		return -ENOMEM;
	f->parts.worker = w;
	rn_mover_init(&f->mover, w);
	/* a zeroed entry is formatted when a topic id first fills it
	 * (collect), so untouched pages stay unbacked */
	return 0;
}

static void
fetcher_free(struct fetcher *f, struct fpart **mine)
{
	int i;

	for (i = 0; i < f->n_leaders; i++) {
		leader_close(f->leaders[i], NULL);
		fsn_free(f->leaders[i]);
		free(f->leaders[i]->parts);
		rn_kfb_free(&f->leaders[i]->in);
		rn_arena_free(&f->leaders[i]->arena);
		free(f->leaders[i]);
	}
	free(f->leaders);
	free(f->pfd);
	free(f->polled);
	free(f->fp);
	free(f->runs);
	free(mine);
	rn_mover_free(&f->mover);
	rn_part_table_close(&f->parts);
}

/* Close the leader connections: all, or those with a request in flight. */
static void
fetcher_close_leaders(struct fetcher *f, bool in_flight_only)
{
	int i;

	for (i = 0; i < f->n_leaders; i++)
		if (!in_flight_only || f->leaders[i]->in_flight)
			leader_close(f->leaders[i], NULL);
}

/* One request in flight per leader, for that leader's replicas. */
static void
fetcher_kick(struct fetcher *f, struct fpart **mine, int n_mine)
{
	int i, j;

	/* mine is sorted by leader: its runs are found again only when it
	 * changes, not at every turn (a walk over every replica) */
	if (f->runs_gen != f->mine_gen) {
		f->n_runs = 0;
		for (i = 0; i < n_mine; i = j) {
			j = i;
			while (j < n_mine && mine[j]->leader == mine[i]->leader)
				j++;
			if (f->n_runs == f->cap_runs) {
				int cap = f->cap_runs ? 2 * f->cap_runs : 8;
				void *nr = realloc(f->runs, sizeof(*f->runs) *
				    (size_t)cap);

				if (nr == NULL)
					return;	/* looked for again next turn */
				f->runs = nr;
				f->cap_runs = cap;
			}
			f->runs[f->n_runs++] = (struct leader_run){
				mine[i]->leader, i, j - i };
		}
		f->runs_gen = f->mine_gen;
	}
	for (i = 0; i < f->n_runs; i++) {
		struct leader *l = leader_get(f, f->runs[i].leader);

		if (l != NULL)
			leader_kick(f, l, mine + f->runs[i].start,
			    f->runs[i].count);
	}
}

int
rn_fetcher_main(struct rn_worker *w)
{
	struct fetcher f;
	struct fpart **mine = NULL;
	struct rn_ring *in = rn_shm_ring_from_ctl(w->env->shm, w->slot);
	int max = (int)w->env->shm->hdr->max_partitions;
	int64_t next_collect_ms = 0;
	uint32_t offline = 0;
	struct rn_met_worker *met = rn_metrics_worker(w->env->shm, w->slot);
	bool changed, whole, busy, relisted = false;
	int64_t t0;
	int n_mine = 0;

	if (fetcher_setup(&f, w, &mine) != 0) {
		log_errx("replica fetcher: out of memory");
		return RN_WORKER_EXIT_RESTART;
	}
	if (rn_worker_send_hello(w) != 0)
		log_warnx("cannot reach the controller yet");
	rn_worker_heartbeat(w);
	log_info("replica fetcher up");

	while (!rn_worker_should_stop()) {
		if (rn_peer_drain(w) != 0) {
			log_errx("bad message from the controller: restarting");
			return RN_WORKER_EXIT_RESTART;
		}
		/* no handle's log is in use between turns (fp_open) */
		(void)rn_part_table_trim(&f.parts);
		/*
		 * Which replicas, from whom: looked up again when the image
		 * changes, not for every response; with thousands of
		 * partitions that lookup was most of the work.
		 */
		t0 = rn_now_ns();
		if ((changed = rn_mdview_refresh(&f.view, w->env->shm) == 1))
			rn_part_table_sync(&f.parts, &f.view);
		whole = changed && f.view.changes_all;
		if (offline != rn_dirfail_mask(w->env->shm)) {
			/* a dir went offline: its replicas are fetched no more */
			offline = rn_dirfail_mask(w->env->shm);
			whole = true;
		}
		rn_replquota_update(&f.quota, &f.view, f.cfg,
		    (int)w->env->n_fetchers);
		if (changed && !whole && rn_now_ms() < next_collect_ms) {
			if (collect_changes(&f, mine, &n_mine, max))
				qsort(mine, (size_t)n_mine, sizeof(*mine),
				    fpart_cmp);
			if (f.unopened > 0 && next_collect_ms > rn_now_ms() +
			    COLLECT_RETRY_MS)
				next_collect_ms = rn_now_ms() + COLLECT_RETRY_MS;
		} else if (whole || changed || rn_now_ms() >= next_collect_ms) {
			f.round++;
			f.id_moved = false;
			f.unopened = 0;
			n_mine = collect(&f, mine, max);
			qsort(mine, (size_t)n_mine, sizeof(*mine), fpart_cmp);
			/*
			 * Deltas keep the list current: it is built again a
			 * second later only to retry logs that could not be
			 * opened, else every 30 s (O(partitions) each time).
			 */
			next_collect_ms = rn_now_ms() + (f.unopened > 0 ?
			    COLLECT_RETRY_MS : COLLECT_IDLE_MS);
			relisted = true;
		}
		if (changed || whole || relisted) {
			/* what each leader's fetch cached of the list is stale */
			f.mine_gen++;
			f.epoch_gen++;
			relisted = false;
		}
		if (changed)
			rn_met_observe(&met->stages[RN_STAGE_METADATA],
			    (rn_now_ns() - t0) / 1000);
		if (f.id_moved) {
			/* answers in flight may be for the slot's old topic (the
			 * epoch API names topics, it has no ids): drop them */
			fetcher_close_leaders(&f, true);
			f.id_moved = false;
		}
		if (rn_now_ms() >= w->next_heartbeat_ms)
			rn_worker_heartbeat(w);
		if (atomic_load(&w->env->shm->hdr->fault_stall_fetch)) {
			/* test fault: a follower that stops fetching, at once:
			 * fetches in flight are dropped too */
			fetcher_close_leaders(&f, false);
			rn_worker_wait(w, 100);
			continue;
		}
		busy = rn_mover_turn(&f.mover, &f.parts, &f.view);
		fetcher_kick(&f, mine, n_mine);
		poll_leaders(&f, in, busy);
		/* a gauge: twice a second is enough, and it walks the list */
		if ((f.lag_moved && rn_now_ms() >= f.lag_published_ms +
		    LAG_PUBLISH_MS) || changed) {
			publish_max_lag(&f, mine, n_mine, met);
			f.lag_published_ms = rn_now_ms();
		}
	}
	fetcher_free(&f, mine);
	return RN_WORKER_EXIT_OK;
}
