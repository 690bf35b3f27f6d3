/*
 * The transaction coordinator's WriteTxnMarkers: for each prepared
 * transaction, a marker to the leader of every partition in it (this
 * node included, over its own inter-broker listener, so one path serves
 * all). One connection per leader, one request in flight on it, carrying
 * the markers of every transaction waiting for that leader. A partition
 * is done when its leader answers NONE (the marker is in the ISR); a
 * leader that moved, is down or answers an error is asked again after a
 * short wait, through whoever leads then. When every partition of a
 * transaction is done it completes (txn_coord.c).
 */
#include "autoconf.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/coordinator/coord_int.h"

#define MARKER_TIMEOUT_MS 30000
#define RETRY_MS 100
#define POLL_MS 2
/* Markers one request carries at most: a request stays small. */
#define MAX_ITEMS 1000

static struct co_mconn *
mconn_get(struct co *co, int32_t broker)
{
	struct co_mconn *mc;
	int i;

	for (i = 0; i < co->n_mconns; i++)
		if (co->mconns[i].broker == broker)
			return &co->mconns[i];
	if (co->n_mconns >= CO_MAX_MCONNS)
		return NULL;
	mc = &co->mconns[co->n_mconns++];
	memset(mc, 0, sizeof(*mc));
	mc->broker = broker;
	mc->fd = -1;
	return mc;
}

static void
mconn_close(struct co *co, struct co_mconn *mc, const char *why)
{
	int i;

	if (why != NULL)
		rn_log_about(LOG_INFO, rn_subj_broker(mc->broker),
		    "transaction markers: connection to broker %d closed: %s",
		    mc->broker, why);
	if (mc->fd >= 0)
		close(mc->fd);
	mc->fd = -1;
	if (mc->sec != NULL)
		rn_secc_free(mc->sec);
	mc->sec = NULL;
	mc->in.len = 0;
	for (i = 0; i < mc->n_items; i++)
		if (mc->items[i].txn != NULL)
			mc->items[i].txn->tps[mc->items[i].tp].inflight = false;
	mc->n_items = 0;
	mc->in_flight = false;
	mc->retry_ms = co->now + RETRY_MS * 5;
}

void
co_txn_markers_forget(struct co *co, struct co_txn *txn)
{
	int i, j;

	for (i = 0; i < co->n_mconns; i++)
		for (j = 0; j < co->mconns[i].n_items; j++)
			if (co->mconns[i].items[j].txn == txn)
				co->mconns[i].items[j].txn = NULL;
}

void
co_txn_markers_close(struct co *co)
{
	int i;

	for (i = 0; i < co->n_mconns; i++) {
		mconn_close(co, &co->mconns[i], NULL);
		free(co->mconns[i].items);
		rn_kfb_free(&co->mconns[i].in);
	}
	co->n_mconns = 0;
}

/* A bounded blocking connect (and login): a dead broker costs 2 s. */
static int
mconn_connect(struct co *co, struct co_mconn *mc)
{
	const struct rn_secc_cfg *sc = co->w->env->ib_client;
	char host[256];
	uint16_t port;
	int fd;

	if (rn_mdview_broker_address(&co->view, mc->broker,
	    co->cfg->inter_broker_listener_name, host, sizeof(host), &port) != 0)
		return -ENOENT;
	if ((fd = rn_tcp_connect_timed(host, port, 2000)) < 0)
		return fd;
	mc->fd = fd;
	if (sc != NULL && ((mc->sec = rn_secc_new(sc, host)) == NULL ||
	    rn_secc_handshake_fd(mc->sec, fd, 2000) != 0)) {
		rn_log_about(LOG_WARNING, rn_subj_broker(mc->broker),
		    "transaction markers: cannot log in to broker %d: %s",
		    mc->broker, mc->sec == NULL ? "out of memory" :
		    rn_secc_error(mc->sec));
		mconn_close(co, mc, NULL);
		return -EACCES;
	}
	return 0;
}

/* What TLS has to send, out on the (blocking, timed-out) socket. */
static int
sec_flush(struct co_mconn *mc)
{
	uint8_t buf[16384];
	size_t n;

	while ((n = rn_secc_take(mc->sec, buf, sizeof(buf))) > 0)
		if (rn_write_all(mc->fd, buf, n) < 0)
			return -EPIPE;
	return 0;
}

/* Bytes of the answer as they are there now; never waits. */
static int
sec_flush_any(void *arg)
{
	return sec_flush(arg);
}

static ssize_t
mconn_read(void *arg, void *buf, size_t len)
{
	struct co_mconn *mc = arg;

	return rn_secc_recv_now(mc->fd, mc->sec, buf, len, sec_flush_any, mc);
}

static bool
topic_gone(struct co *co, const char *topic, int32_t p)
{
	const struct rn_mdv_topic *t = rn_mdview_topic(&co->view, topic,
	    strlen(topic));

	return t == NULL || p >= t->n_parts;
}

static void
item_result(struct co *co, struct co_mconn *mc, struct co_mitem *it,
    int16_t err)
{
	struct co_txn_tp *tp;

	if (it->txn == NULL)
		return;
	tp = &it->txn->tps[it->tp];
	tp->inflight = false;
	switch (err) {
	case RN_KERR_NONE:
	/* a later epoch's marker is there, or another coordinator took over */
	case RN_KERR_INVALID_PRODUCER_EPOCH:
	case RN_KERR_TRANSACTION_COORDINATOR_FENCED:
		tp->acked = true;
		return;
	case RN_KERR_UNKNOWN_TOPIC_OR_PARTITION:
		if (topic_gone(co, tp->topic, tp->partition)) {
			tp->acked = true;
			return;
		}
		break;
	default:
		break;
	}
	rn_log_about(LOG_DEBUG, rn_subj_part(tp->topic, tp->partition),
	    "transaction marker for %s-%d: %s from broker %d; again soon",
	    tp->topic, tp->partition, rn_kerr_name(err), mc->broker);
	mc->retry_ms = co->now + RETRY_MS;
}

static void
mconn_answer(struct co *co, struct co_mconn *mc, const uint8_t *frame,
    size_t size)
{
	struct rn_WriteTxnMarkersResponse resp;
	struct rn_kreader kr;
	struct rn_arena a;
	int32_t i, j, k;
	int n = 0;

	rn_arena_init(&a, 4 * size + 4096);
	if (rn_kframe_response(&kr, frame, size, -1, RN_KAPI_WRITE_TXN_MARKERS,
	    1, mc->corr) != 0 || rn_WriteTxnMarkersResponse_decode(&kr, 1, &a,
	    &resp) < 0) {
		rn_arena_free(&a);
		mconn_close(co, mc, "an undecodable WriteTxnMarkers answer");
		return;
	}
	/* one topic entry of one partition per item, in order */
	for (i = 0; i < resp.markers_count; i++)
		for (j = 0; j < resp.markers[i].topics_count; j++)
			for (k = 0; k < resp.markers[i].topics[j].
			    partitions_count && n < mc->n_items; k++)
				item_result(co, mc, &mc->items[n++],
				    resp.markers[i].topics[j].partitions[k].
				    error_code);
	rn_arena_free(&a);
	for (; n < mc->n_items; n++)
		item_result(co, mc, &mc->items[n], RN_KERR_UNKNOWN_SERVER_ERROR);
	mc->n_items = 0;
	mc->in_flight = false;
	mc->in.len = 0;
}

static void
mconn_poll(struct co *co, struct co_mconn *mc)
{
	int rc = rn_kframe_recv_fn(mconn_read, mc, &mc->in, 16 << 20);

	if (rc == 1) {
		mconn_answer(co, mc, mc->in.buf + 4, mc->in.len - 4);
		return;
	}
	if (rc < 0)
		mconn_close(co, mc, strerror(-rc));
	else if (co->now - mc->sent_ms > MARKER_TIMEOUT_MS)
		mconn_close(co, mc, "no answer in 30 s");
}

static int
item_add(struct co_mconn *mc, struct co_txn *t, int tp)
{
	if (mc->n_items >= MAX_ITEMS)
		return -ENOSPC;
	if (mc->n_items == mc->cap_items) {
		int cap = mc->cap_items ? 2 * mc->cap_items : 16;
		void *n = realloc(mc->items, sizeof(*mc->items) * (size_t)cap);

		if (n == NULL)
			return -ENOMEM;
		mc->items = n;
		mc->cap_items = cap;
	}
	mc->items[mc->n_items].txn = t;
	mc->items[mc->n_items].tp = tp;
	mc->n_items++;
	return 0;
}

/* The request of mc's items: a marker per run of one transaction's. */
static int
mconn_send(struct co *co, struct co_mconn *mc)
{
	struct rn_WriteTxnMarkersRequest req;
	struct rn_kwriter w;
	struct rn_arena a;
	int i, j, m = 0, rc;

	/* a marker and a topic an item at most */
	rn_arena_init(&a, 4096 + (size_t)mc->n_items * (sizeof(*req.markers) +
	    sizeof(*req.markers->topics) + 64));
	rn_WriteTxnMarkersRequest_init(&req);
	req.markers = rn_arena_alloc(&a, sizeof(*req.markers) *
	    (size_t)mc->n_items);
	if (req.markers == NULL) {
		rn_arena_free(&a);
		return -ENOMEM;
	}
	for (i = 0; i < mc->n_items; i = j) {
		struct co_txn *t = mc->items[i].txn;
		struct rn_WriteTxnMarkersRequest_WritableTxnMarker *mk =
		    &req.markers[m++];

		rn_WriteTxnMarkersRequest_WritableTxnMarker_init(mk);
		mk->producer_id = t->cur.pid;
		mk->producer_epoch = t->cur.epoch;
		mk->transaction_result = t->cur.state == RN_TXN_PREPARE_COMMIT;
		mk->coordinator_epoch = co->txn_part[t->partition].leader_epoch;
		for (j = i; j < mc->n_items && mc->items[j].txn == t; j++)
			;
		mk->topics_count = j - i;
		mk->topics = rn_arena_alloc(&a, sizeof(*mk->topics) *
		    (size_t)(j - i));
		if (mk->topics == NULL) {
			rn_arena_free(&a);
			return -ENOMEM;
		}
		for (int k = i; k < j; k++) {
			struct co_txn_tp *tp = &t->tps[mc->items[k].tp];

			rn_WriteTxnMarkersRequest_WritableTxnMarkerTopic_init(
			    &mk->topics[k - i]);
			mk->topics[k - i].name = co_ks(tp->topic);
			mk->topics[k - i].partition_indexes_count = 1;
			mk->topics[k - i].partition_indexes = &tp->partition;
		}
	}
	req.markers_count = m;
	mc->corr = ++co->next_corr;
	rn_kwriter_init(&w);
	rc = rn_kframe_request(&w, -1, RN_KAPI_WRITE_TXN_MARKERS, 1, mc->corr,
	    "runnel-txn-coordinator", &req, NULL, 0);
	rn_arena_free(&a);
	if (rc == 0 && mc->sec == NULL)
		rc = rn_write_all(mc->fd, w.buf, w.len) < 0 ? -EPIPE : 0;
	else if (rc == 0)
		rc = rn_secc_write(mc->sec, w.buf, w.len) != 0 ? -EPROTO :
		    sec_flush(mc);
	rn_kwriter_free(&w);
	if (rc != 0)
		return rc;
	mc->in_flight = true;
	mc->sent_ms = co->now;
	mc->in.len = 0;
	return 0;
}

/* The leader now of a transaction's partition, or -1. */
static int32_t
leader_of(struct co *co, const struct co_txn_tp *tp)
{
	const struct rn_mdv_topic *t = rn_mdview_topic(&co->view, tp->topic,
	    strlen(tp->topic));
	const struct rn_mdv_partition *mp;

	if (t == NULL || (mp = rn_mdview_partition(t, tp->partition)) == NULL)
		return -1;
	return mp->leader;
}

int
co_txn_markers_fds(const struct co *co, int *fds, int max)
{
	int i, n = 0;

	for (i = 0; i < co->n_mconns && n < max; i++)
		if (co->mconns[i].in_flight && co->mconns[i].fd >= 0)
			fds[n++] = co->mconns[i].fd;
	return n;
}

int64_t
co_txn_markers_tick(struct co *co)
{
	struct co_txn *t, *nt;
	bool busy = false;
	int i;

	for (i = 0; i < co->n_mconns; i++)
		if (co->mconns[i].in_flight)
			mconn_poll(co, &co->mconns[i]);
	for (t = co->marking; t != NULL; t = nt) {
		bool all = true;

		nt = t->next_marking;
		if (t->writing)
			continue;
		for (i = 0; i < t->n_tps; i++) {
			struct co_txn_tp *tp = &t->tps[i];
			struct co_mconn *mc;
			int32_t leader;

			if (tp->acked)
				continue;
			all = false;
			if (tp->inflight)
				continue;
			if (topic_gone(co, tp->topic, tp->partition)) {
				tp->acked = true;   /* nothing left to mark */
				continue;
			}
			if ((leader = leader_of(co, tp)) < 0 ||
			    (mc = mconn_get(co, leader)) == NULL ||
			    mc->in_flight || co->now < mc->retry_ms)
				continue;
			if (item_add(mc, t, i) == 0)
				tp->inflight = true;
		}
		if (all)
			co_txn_markers_done(co, t);
	}
	for (i = 0; i < co->n_mconns; i++) {
		struct co_mconn *mc = &co->mconns[i];
		int rc;

		if (mc->in_flight || mc->n_items == 0)
			continue;
		if ((mc->fd < 0 && (rc = mconn_connect(co, mc)) != 0) ||
		    (rc = mconn_send(co, mc)) != 0) {
			if (mc->fd >= 0 || rc != -EACCES)
				mconn_close(co, mc, strerror(-rc));
			else
				mconn_close(co, mc, NULL);
		}
	}
	for (i = 0; i < co->n_mconns; i++)
		busy = busy || co->mconns[i].in_flight;
	/* the loop also waits on the sockets of answers in flight (TLS may
	 * hold decrypted bytes poll cannot see: look again soon anyway) */
	if (busy)
		return co->now + POLL_MS;
	return co->marking != NULL ? co->now + RETRY_MS : INT64_MAX;
}
