/*
 * KIP-890 verifications for transactional ids another node coordinates:
 * this node's network workers ask here (txn_verify.c), and the ones this
 * coordinator cannot answer go to the coordinating node as
 * AddPartitionsToTxn v4 VerifyOnly over its inter-broker listener, one
 * connection a node with one request in flight, carrying every
 * verification waiting for that node (as txn_markers.c batches markers per
 * leader). Nothing here blocks the loop: the connect, the TLS/SASL login,
 * the writes and the reads all go as far as the socket allows and resume
 * on the next turn. A verification that cannot be sent or answered is
 * answered NETWORK_EXCEPTION, which the producer sees as a retriable
 * NOT_ENOUGH_REPLICAS.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
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

#define VR_MAX_CONNS 64
/* Transactions one node's request carries at most, and wait for it. */
#define VR_MAX_BATCH 1000
#define VR_MAX_WAITING 8192
#define VR_CONNECT_MS 5000
#define VR_TIMEOUT_MS 30000
#define VR_POLL_MS 2
#define VR_RETRY_MS 500

struct co_vitem {
	unsigned slot;           /* the asking network worker */
	uint64_t req;            /* its id for the produce */
	char *tid;
	int64_t pid;
	int16_t epoch;
	int n;                   /* partitions */
	char **topics;
	int32_t *parts;
};

enum { VC_IDLE = 0, VC_CONNECTING, VC_LOGIN, VC_READY };

struct co_vconn {
	int32_t broker;
	int fd;
	int state;
	struct rn_secc *sec;
	int64_t since_ms;        /* connecting or the request sent since */
	int64_t retry_ms;        /* not before this after a failure */
	bool in_flight;
	int32_t corr;
	struct rn_kframebuf in;
	uint8_t *out;            /* bytes the socket did not take yet */
	size_t out_len, out_off;
	struct co_vitem **wait, **sent;
	int n_wait, n_sent;
};

static struct co_vconn vconns[VR_MAX_CONNS];
static int n_vconns;

static void
item_free(struct co_vitem *it)
{
	int i;

	if (it == NULL)
		return;
	for (i = 0; i < it->n; i++)
		free(it->topics[i]);
	free(it->topics);
	free(it->parts);
	free(it->tid);
	free(it);
}

/* Answer an item, one error a partition (errs) or err for all. */
static void
item_answer(struct co *co, struct co_vitem *it, const int16_t *errs,
    int16_t err)
{
	int16_t one[1] = { 0 }, *all = NULL;
	int i;

	if (errs == NULL) {
		all = it->n > 0 ? calloc((size_t)it->n, sizeof(*all)) : one;
		if (all == NULL)
			fatalx("transaction coordinator: out of memory");
		for (i = 0; i < it->n; i++)
			all[i] = err;
		errs = all;
	}
	co_txn_verify_answer(co, it->slot, it->req, errs, (uint32_t)it->n);
	if (all != one)
		free(all);
	item_free(it);
}

static struct co_vconn *
vconn_get(int32_t broker)
{
	struct co_vconn *vc;
	int i;

	for (i = 0; i < n_vconns; i++)
		if (vconns[i].broker == broker)
			return &vconns[i];
	if (n_vconns >= VR_MAX_CONNS)
		return NULL;
	vc = &vconns[n_vconns++];
	memset(vc, 0, sizeof(*vc));
	vc->broker = broker;
	vc->fd = -1;
	vc->wait = calloc(VR_MAX_WAITING, sizeof(*vc->wait));
	vc->sent = calloc(VR_MAX_BATCH, sizeof(*vc->sent));
	if (vc->wait == NULL || vc->sent == NULL)
		fatalx("transaction coordinator: out of memory");
	return vc;
}

static void
vconn_close(struct co *co, struct co_vconn *vc, const char *why)
{
	int i;

	if (why != NULL)
		rn_log_about(LOG_INFO, rn_subj_broker(vc->broker),
		    "transaction verification: connection to broker %d "
		    "closed: %s", vc->broker, why);
	if (vc->fd >= 0)
		close(vc->fd);
	vc->fd = -1;
	if (vc->sec != NULL)
		rn_secc_free(vc->sec);
	vc->sec = NULL;
	vc->state = VC_IDLE;
	vc->in.len = 0;
	free(vc->out);
	vc->out = NULL;
	vc->out_len = vc->out_off = 0;
	for (i = 0; i < vc->n_sent; i++)
		item_answer(co, vc->sent[i], NULL, RN_KERR_NETWORK_EXCEPTION);
	vc->n_sent = 0;
	vc->in_flight = false;
	if (why != NULL) {
		/* the waiting ones too: the producers retry, not wait */
		for (i = 0; i < vc->n_wait; i++)
			item_answer(co, vc->wait[i], NULL,
			    RN_KERR_NETWORK_EXCEPTION);
		vc->n_wait = 0;
		vc->retry_ms = co->now + VR_RETRY_MS;
	}
}

/* A connect that returns at once; done when the socket is writable. */
static int
vconn_connect(struct co *co, struct co_vconn *vc)
{
	struct addrinfo hints, *res;
	char host[256], port_s[8];
	uint16_t port;
	int fd, one = 1;

	if (rn_mdview_broker_address(&co->view, vc->broker,
	    co->cfg->inter_broker_listener_name, host, sizeof(host), &port) != 0)
		return -ENOENT;
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port_s, sizeof(port_s), "%u", port);
	if (getaddrinfo(host, port_s, &hints, &res) != 0)
		return -EHOSTUNREACH;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (fd < 0) {
		freeaddrinfo(res);
		return -errno;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, res->ai_addr, res->ai_addrlen) == -1 &&
	    errno != EINPROGRESS) {
		int e = errno;

		freeaddrinfo(res);
		close(fd);
		return -e;
	}
	freeaddrinfo(res);
	vc->fd = fd;
	vc->state = VC_CONNECTING;
	vc->since_ms = co->now;
	if (co->w->env->ib_client != NULL &&
	    (vc->sec = rn_secc_new(co->w->env->ib_client, host)) == NULL)
		return -ENOMEM;
	return 0;
}

/* Send what the socket takes now; TLS's bytes are taken first. */
static int
vconn_flush(struct co_vconn *vc)
{
	ssize_t k;

	if (vc->sec != NULL && rn_secc_wants_send(vc->sec)) {
		uint8_t buf[16384];
		size_t n;

		while ((n = rn_secc_take(vc->sec, buf, sizeof(buf))) > 0) {
			uint8_t *o = realloc(vc->out, vc->out_len + n);

			if (o == NULL)
				return -ENOMEM;
			vc->out = o;
			memcpy(vc->out + vc->out_len, buf, n);
			vc->out_len += n;
		}
	}
	while (vc->out_off < vc->out_len) {
		k = send(vc->fd, vc->out + vc->out_off, vc->out_len -
		    vc->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		vc->out_off += (size_t)k;
	}
	free(vc->out);
	vc->out = NULL;
	vc->out_len = vc->out_off = 0;
	return 0;
}

/* Bytes as they are there now; never waits. */
static int
vconn_flush_any(void *arg)
{
	return vconn_flush(arg);
}

static ssize_t
vconn_read(void *arg, void *buf, size_t len)
{
	struct co_vconn *vc = arg;

	return rn_secc_recv_now(vc->fd, vc->sec, buf, len, vconn_flush_any, vc);
}

/* Connecting and logging in, as far as it goes now: 1 when ready. */
static int
vconn_progress(struct co *co, struct co_vconn *vc)
{
	if (vc->state == VC_CONNECTING) {
		int err = 0;
		socklen_t el = sizeof(err);
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		if (getsockopt(vc->fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
			return -errno;
		if (err != 0)
			return -err;
		if (getpeername(vc->fd, (struct sockaddr *)&ss, &sl) != 0)
			/* not connected yet */
			return co->now - vc->since_ms > VR_CONNECT_MS ?
			    -ETIMEDOUT : 0;
		vc->state = vc->sec != NULL ? VC_LOGIN : VC_READY;
	}
	if (vc->state == VC_LOGIN) {
		uint8_t raw[16384];
		ssize_t k;
		int h;

		for (;;) {
			if ((h = rn_secc_handshake(vc->sec)) != 0)
				break;
			if (vconn_flush(vc) != 0)
				return -EPIPE;
			k = recv(vc->fd, raw, sizeof(raw), MSG_DONTWAIT);
			if (k == 0)
				return -ENOTCONN;
			if (k < 0) {
				if (errno != EAGAIN && errno != EINTR)
					return -errno;
				return co->now - vc->since_ms >
				    VR_CONNECT_MS ? -ETIMEDOUT : 0;
			}
			if (rn_secc_feed(vc->sec, raw, (size_t)k) != 0)
				return -ENOMEM;
		}
		if (h < 0) {
			rn_log_about(LOG_WARNING, rn_subj_broker(vc->broker),
			    "transaction verification: cannot log in to "
			    "broker %d: %s", vc->broker,
			    rn_secc_error(vc->sec));
			return -EACCES;
		}
		if (vconn_flush(vc) != 0)
			return -EPIPE;
		vc->state = VC_READY;
	}
	return vc->state == VC_READY ? 1 : 0;
}

/* One v4 request of the waiting verifications (VerifyOnly each). */
static int
vconn_send(struct co *co, struct co_vconn *vc)
{
	struct rn_AddPartitionsToTxnRequest req;
	struct rn_kwriter w;
	struct rn_arena a;
	int i, j, n = vc->n_wait < VR_MAX_BATCH ? vc->n_wait : VR_MAX_BATCH;
	size_t parts = 0;
	int rc;

	for (i = 0; i < n; i++)
		parts += (size_t)vc->wait[i]->n;
	/* the request's arrays: a transaction and a topic entry each */
	rn_arena_init(&a, 4096 + (size_t)n * (sizeof(*req.transactions) +
	    64) + parts * (sizeof(*req.transactions->topics) + 64));
	rn_AddPartitionsToTxnRequest_init(&req);
	req.transactions_count = n;
	req.transactions = rn_arena_alloc(&a, sizeof(*req.transactions) *
	    (size_t)n);
	if (req.transactions == NULL) {
		rn_arena_free(&a);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct co_vitem *it = vc->wait[i];
		struct rn_AddPartitionsToTxnRequest_AddPartitionsToTxnTransaction
		    *tx = &req.transactions[i];

		rn_AddPartitionsToTxnRequest_AddPartitionsToTxnTransaction_init(
		    tx);
		tx->transactional_id = co_ks(it->tid);
		tx->producer_id = it->pid;
		tx->producer_epoch = it->epoch;
		tx->verify_only = true;
		/* a topic entry a partition: the answer maps back by name */
		tx->topics_count = it->n;
		tx->topics = rn_arena_alloc(&a, sizeof(*tx->topics) *
		    (size_t)(it->n > 0 ? it->n : 1));
		if (tx->topics == NULL) {
			rn_arena_free(&a);
			return -ENOMEM;
		}
		for (j = 0; j < it->n; j++) {
			tx->topics[j].name = co_ks(it->topics[j]);
			tx->topics[j].partitions = &it->parts[j];
			tx->topics[j].partitions_count = 1;
		}
	}
	vc->corr = ++co->next_corr;
	rn_kwriter_init(&w);
	rc = rn_kframe_request(&w, -1, RN_KAPI_ADD_PARTITIONS_TO_TXN, 4,
	    vc->corr, "runnel-txn-verify", &req, NULL, 0);
	rn_arena_free(&a);
	if (rc == 0 && vc->sec != NULL)
		rc = rn_secc_write(vc->sec, w.buf, w.len) != 0 ? -EPROTO : 0;
	else if (rc == 0) {
		if ((vc->out = malloc(w.len)) == NULL)
			rc = -ENOMEM;
		else {
			memcpy(vc->out, w.buf, w.len);
			vc->out_len = w.len;
			vc->out_off = 0;
		}
	}
	rn_kwriter_free(&w);
	if (rc == 0)
		rc = vconn_flush(vc);
	if (rc != 0)
		return rc;
	memcpy(vc->sent, vc->wait, sizeof(*vc->sent) * (size_t)n);
	vc->n_sent = n;
	memmove(vc->wait, vc->wait + n, sizeof(*vc->wait) *
	    (size_t)(vc->n_wait - n));
	vc->n_wait -= n;
	vc->in_flight = true;
	vc->since_ms = co->now;
	vc->in.len = 0;
	return 0;
}

static int16_t
result_of(const struct rn_AddPartitionsToTxnResponse_AddPartitionsToTxnResult
    *res, const char *topic, int32_t p)
{
	int32_t i, j;

	for (i = 0; res != NULL && i < res->topic_results_count; i++) {
		const struct
		    rn_AddPartitionsToTxnResponse_AddPartitionsToTxnTxnTopicResult
		    *tr = &res->topic_results[i];

		if (!co_kstr_is(tr->name, topic))
			continue;
		for (j = 0; j < tr->results_by_partition_count; j++)
			if (tr->results_by_partition[j].partition_index == p)
				return tr->results_by_partition[j].
				    partition_error_code;
	}
	return RN_KERR_UNKNOWN_SERVER_ERROR;
}

static void
vconn_answer(struct co *co, struct co_vconn *vc, const uint8_t *frame,
    size_t size)
{
	struct rn_AddPartitionsToTxnResponse resp;
	struct rn_kreader kr;
	struct rn_arena a;
	int16_t *errs;
	int i, j;
	int32_t k;

	rn_arena_init(&a, 4 * size + 4096);
	if (rn_kframe_response(&kr, frame, size, -1,
	    RN_KAPI_ADD_PARTITIONS_TO_TXN, 4, vc->corr) != 0 ||
	    rn_AddPartitionsToTxnResponse_decode(&kr, 4, &a, &resp) < 0) {
		rn_arena_free(&a);
		vconn_close(co, vc, "an undecodable AddPartitionsToTxn answer");
		return;
	}
	for (i = 0; i < vc->n_sent; i++) {
		struct co_vitem *it = vc->sent[i];
		const struct rn_AddPartitionsToTxnResponse_AddPartitionsToTxnResult
		    *res = NULL;

		if (resp.error_code != 0) {
			item_answer(co, it, NULL, resp.error_code);
			continue;
		}
		for (k = 0; k < resp.results_by_transaction_count; k++)
			if (co_kstr_is(resp.results_by_transaction[k].
			    transactional_id, it->tid))
				res = &resp.results_by_transaction[k];
		errs = rn_arena_alloc(&a, sizeof(*errs) *
		    (size_t)(it->n > 0 ? it->n : 1));
		if (errs == NULL) {
			item_answer(co, it, NULL, RN_KERR_NETWORK_EXCEPTION);
			continue;
		}
		for (j = 0; j < it->n; j++)
			errs[j] = result_of(res, it->topics[j], it->parts[j]);
		item_answer(co, it, errs, 0);
	}
	rn_arena_free(&a);
	vc->n_sent = 0;
	vc->in_flight = false;
	vc->in.len = 0;
}

/*
 * Queue a verification for the coordinating node (its partition of
 * __transaction_state is p). Like Kafka, one verification a transactional
 * id waits at a time: a newer one replaces it (the older is answered
 * NETWORK_EXCEPTION, or INVALID_PRODUCER_EPOCH when fenced by it).
 */
void
co_txn_verify_remote(struct co *co, unsigned slot, uint64_t req,
    struct rn_kstr tid, int64_t pid, int16_t epoch, int32_t n,
    const struct rn_kstr *topics, const int32_t *parts)
{
	/* by the image: this node may hold no partition of the topic */
	const struct rn_mdv_topic *t = rn_mdview_topic(&co->view,
	    RN_TXN_TOPIC, strlen(RN_TXN_TOPIC));
	const struct rn_mdv_partition *mp;
	struct co_vconn *vc;
	struct co_vitem *it;
	int32_t p = t != NULL && t->n_parts > 0 && tid.len > 0 ?
	    rn_group_partition(tid.ptr, (size_t)tid.len, t->n_parts) : -1;
	int i;

	if (t == NULL || p < 0 || (mp = rn_mdview_partition(t, p)) == NULL ||
	    mp->leader < 0) {
		co_txn_verify_answer_all(co, slot, req, n,
		    RN_KERR_COORDINATOR_NOT_AVAILABLE);
		return;
	}
	if (mp->leader == co->cfg->node_id) {
		/* ours by the image, not loaded yet: the producer retries */
		co_txn_verify_answer_all(co, slot, req, n,
		    RN_KERR_NOT_COORDINATOR);
		return;
	}
	if ((vc = vconn_get(mp->leader)) == NULL ||
	    vc->n_wait >= VR_MAX_WAITING || co->now < vc->retry_ms) {
		co_txn_verify_answer_all(co, slot, req, n,
		    RN_KERR_NETWORK_EXCEPTION);
		return;
	}
	for (i = 0; i < vc->n_wait; i++) {
		if (!co_kstr_is(tid, vc->wait[i]->tid))
			continue;
		if (vc->wait[i]->epoch > epoch) {
			co_txn_verify_answer_all(co, slot, req, n,
			    RN_KERR_INVALID_PRODUCER_EPOCH);
			return;
		}
		item_answer(co, vc->wait[i], NULL, vc->wait[i]->epoch < epoch ?
		    RN_KERR_INVALID_PRODUCER_EPOCH : RN_KERR_NETWORK_EXCEPTION);
		memmove(&vc->wait[i], &vc->wait[i + 1], sizeof(*vc->wait) *
		    (size_t)(vc->n_wait - i - 1));
		vc->n_wait--;
		break;
	}
	if ((it = calloc(1, sizeof(*it))) == NULL ||
	    (it->tid = co_strdup(tid)) == NULL ||
	    (it->topics = calloc((size_t)(n > 0 ? n : 1),
	    sizeof(*it->topics))) == NULL ||
	    (it->parts = calloc((size_t)(n > 0 ? n : 1),
	    sizeof(*it->parts))) == NULL)
		fatalx("transaction coordinator: out of memory");
	it->slot = slot;
	it->req = req;
	it->pid = pid;
	it->epoch = epoch;
	for (i = 0; i < n; i++) {
		if ((it->topics[i] = co_strdup(topics[i])) == NULL)
			fatalx("transaction coordinator: out of memory");
		it->parts[i] = parts[i];
		it->n++;
	}
	vc->wait[vc->n_wait++] = it;
}

int
co_txn_verify_fds(int *fds, int max)
{
	int i, n = 0;

	for (i = 0; i < n_vconns && n < max; i++)
		if (vconns[i].fd >= 0 && vconns[i].state != VC_IDLE)
			fds[n++] = vconns[i].fd;
	return n;
}

int64_t
co_txn_verify_tick(struct co *co)
{
	bool busy = false;
	int i, rc;

	for (i = 0; i < n_vconns; i++) {
		struct co_vconn *vc = &vconns[i];

		if (vc->in_flight) {
			if ((rc = vconn_flush(vc)) == 0)
				rc = rn_kframe_recv_fn(vconn_read, vc, &vc->in,
				    16 << 20);
			if (rc == 1)
				vconn_answer(co, vc, vc->in.buf + 4,
				    vc->in.len - 4);
			else if (rc < 0)
				vconn_close(co, vc, strerror(-rc));
			else if (co->now - vc->since_ms > VR_TIMEOUT_MS)
				vconn_close(co, vc, "no answer in 30 s");
		}
		if (vc->in_flight || vc->n_wait == 0)
			continue;
		if (vc->state == VC_READY) {
			uint8_t b;

			/* closed by the peer while idle (its idle timeout):
			 * connect again rather than fail the waiting asks */
			if (recv(vc->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
				vconn_close(co, vc, NULL);
		}
		if (vc->fd < 0 && (rc = vconn_connect(co, vc)) != 0) {
			vconn_close(co, vc, strerror(-rc));
			continue;
		}
		if ((rc = vconn_progress(co, vc)) < 0) {
			vconn_close(co, vc, strerror(-rc));
			continue;
		}
		if (rc == 1 && (rc = vconn_send(co, vc)) != 0)
			vconn_close(co, vc, strerror(-rc));
	}
	for (i = 0; i < n_vconns; i++)
		busy = busy || vconns[i].in_flight || vconns[i].n_wait > 0;
	return busy ? co->now + VR_POLL_MS : INT64_MAX;
}

void
co_txn_verify_close(struct co *co)
{
	int i;

	for (i = 0; i < n_vconns; i++) {
		vconn_close(co, &vconns[i], NULL);
		while (vconns[i].n_wait > 0)
			item_free(vconns[i].wait[--vconns[i].n_wait]);
		free(vconns[i].wait);
		free(vconns[i].sent);
		rn_kfb_free(&vconns[i].in);
	}
	n_vconns = 0;
}
