/*
 * This node's broker agent: it speaks Kafka protocol to the active
 * controller over that controller's CONTROLLER listener, like any other
 * broker, even when the active controller is this very process (a
 * loopback connection keeps one code path).
 *
 *  - lifecycle channel: BrokerRegistration, then BrokerHeartbeat every
 *    broker.heartbeat.interval.ms with the applied metadata offset, and
 *    want_shut_down once the supervisor asked for a controlled shutdown;
 *  - forward channel: admin requests of this node's network workers when
 *    this node is not the active controller (CTL_API_FORWARD), and the
 *    network workers' AlterPartition requests;
 *  - image channel (nodes without the metadata log only): long polls
 *    for the metadata (CTL_API_IMAGE v1): the log entries after this
 *    node's offset, or the whole state when the voter no longer has
 *    them; applied and published here with this node's own slots and
 *    directories.
 *
 * Which controller: a voter asks raft who leads; a broker-only node uses
 * the controller id its last image named, else tries the voters in turn.
 * A call whose connection breaks, or that is answered NOT_CONTROLLER, is
 * sent again on the next connection.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "protocol/kframe.h"
#include "ipc/msgtypes.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"
#include "workers/controller/relay.h"
#include "workers/partition/dirfail.h"
#include "workers/partition/partition.h"

#define AGENT_TICK_MS 50
#define RETRY_MS 200
#define FORWARD_TIMEOUT_MS 60000
#define ALTER_TIMEOUT_MS 30000
#define IMAGE_WAIT_MS 1000
#define SHUTDOWN_HB_MS 100
#define ASSIGN_MAX 2000         /* replicas per AssignReplicasToDirs */

struct chan;

struct call {
	struct call *next;
	struct chan *ch;
	int32_t corr;
	int16_t key, ver;
	int hver;                /* response header version */
	uint8_t *frame;
	size_t len;
	bool sent;
	int64_t deadline_ms;     /* 0: none */
	void (*cb)(struct ctl *c, struct call *call, int16_t err,
	    struct rn_kreader *r);
	struct ctl_op *op;       /* forwarded admin request */
};

struct chan {
	struct ctl *c;
	const char *name;
	uv_tcp_t *tcp;
	bool connected;
	int32_t target;          /* node id connected to, -1: none */
	struct rn_kframebuf in;
	struct call *head;
	int32_t next_corr;
	int64_t retry_at_ms;
};

/* One partition's ISR change a network worker asked for. */
struct alter_item {
	uint8_t tid[16];
	int32_t p, leader_epoch, partition_epoch;
	int32_t isr[CTL_MAX_RF];
	int n_isr;
};

enum agent_state { AG_UNREGISTERED, AG_REGISTERING, AG_REGISTERED };

struct ctl_agent {
	struct chan life, fwd, img;
	enum agent_state state;
	int64_t epoch;
	int64_t next_reg_ms, next_hb_ms;
	bool hb_inflight, img_inflight;
	bool following;          /* the last image answer was log entries */
	bool fenced;
	bool shutdown_done;
	bool sd_asked;           /* a heartbeat with want_shut_down went */
	unsigned rr;             /* round-robin over voters */
	int32_t hint;            /* controller id from the last image */
	bool dup_logged;
	struct alter_item *alt;  /* ISR changes not sent yet */
	int n_alt, cap_alt;
	bool alt_inflight;
	bool ard_inflight;       /* an AssignReplicasToDirs is out */
	int64_t next_ard_ms;
	uint64_t ard_index;       /* state counted at (+1; 0: never) */
	uint32_t reports_seen;    /* the segment header's dir_reports */
	int wanted;               /* replicas whose slot wants a dir recorded */
	/* offline log dirs (bits of the segment header's): in the heartbeat
	 * in flight, accepted by the active controller, and since when some
	 * are not (log.dir.failure.timeout.ms) */
	uint32_t off_inflight, off_acked;
	int64_t off_since_ms;
};

static const struct rn_voter *
voter(struct ctl *c, int32_t id)
{
	int i;

	for (i = 0; i < c->cfg->n_voters; i++)
		if (c->cfg->voters[i].id == id)
			return &c->cfg->voters[i];
	return NULL;
}

/* The node this node should talk to now; -1: wait. */
static int32_t
pick_target(struct ctl *c)
{
	struct ctl_agent *a = c->agent;
	raft_id id = 0;
	const char *addr = NULL;

	if (c->raft_inited) {
		raft_leader(&c->raft, &id, &addr);
		return id != 0 ? (int32_t)id : -1;
	}
	if (a->hint >= 0 && voter(c, a->hint) != NULL)
		return a->hint;
	if (c->cfg->n_voters == 0)
		return -1;
	return c->cfg->voters[a->rr % (unsigned)c->cfg->n_voters].id;
}

/* ---- channels ------------------------------------------------------- */

static void chan_pump(struct chan *ch);

static void
chan_tcp_closed(uv_handle_t *h)
{
	free(h);
}

/* Drop the connection; every call stays queued, to be sent again. */
static void
chan_reset(struct chan *ch, bool rotate)
{
	struct ctl *c = ch->c;
	struct call *k;

	if (ch->tcp != NULL) {
		uv_read_stop((uv_stream_t *)ch->tcp);
		ch->tcp->data = NULL;
		uv_close((uv_handle_t *)ch->tcp, chan_tcp_closed);
		ch->tcp = NULL;
	}
	ch->connected = false;
	ch->in.len = 0;
	for (k = ch->head; k != NULL; k = k->next)
		k->sent = false;
	if (rotate) {
		if (!c->raft_inited) {
			c->agent->hint = -1;
			c->agent->rr++;
		}
		ch->retry_at_ms = rn_now_ms() + RETRY_MS;
	}
	ch->target = -1;
}

static void
call_free(struct call *k)
{
	free(k->frame);
	free(k);
}

static void
chan_unlink(struct chan *ch, struct call *k)
{
	struct call **pp;

	for (pp = &ch->head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	k->next = NULL;
}

static void
chan_append(struct chan *ch, struct call *k)
{
	struct call **pp;

	k->ch = ch;
	k->sent = false;
	k->next = NULL;
	for (pp = &ch->head; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = k;
}

/* Answered NOT_CONTROLLER or similar: queue it again elsewhere. */
static void
call_retry(struct call *k)
{
	struct chan *ch = k->ch;

	chan_append(ch, k);
	chan_reset(ch, true);
}

static void
chan_handle(struct chan *ch, const uint8_t *p, size_t n)
{
	struct rn_kreader r;
	struct call *k;
	int32_t corr;

	if (!rn_kframe_corr(p, n, &corr))
		return;
	for (k = ch->head; k != NULL; k = k->next)
		if (k->corr == corr && k->sent)
			break;
	if (k == NULL)
		return; /* already given up on */
	chan_unlink(ch, k);
	(void)rn_kframe_response(&r, p, n, k->hver, k->key, k->ver, corr);
	k->cb(ch->c, k, 0, &r);
}

static void
chan_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct chan *ch = h->data;
	uint8_t *base;

	(void)suggested;
	rn_kfb_room(&ch->in, &base, &buf->len);
	buf->base = (char *)base;
}

static void
chan_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct chan *ch = s->data;
	const uint8_t *frame;
	size_t off = 0, size;
	int rc;

	(void)buf;
	if (ch == NULL)
		return;
	if (nread < 0) {
		rn_log_about(LOG_DEBUG, rn_subj_broker(ch->target), "%s "
		    "channel to node %d: %s", ch->name, ch->target,
		    uv_strerror((int)nread));
		chan_reset(ch, true);
		return;
	}
	ch->in.len += (size_t)nread;
	while ((rc = rn_kfb_next(&ch->in, &off, INT32_MAX, &frame, &size)) ==
	    1) {
		uv_tcp_t *tcp = ch->tcp;

		chan_handle(ch, frame, size);
		if (ch->tcp != tcp)
			return; /* a callback reset the channel */
	}
	if (rc < 0) {
		chan_reset(ch, true);
		return;
	}
	rn_kfb_consume(&ch->in, off);
}

static void
chan_ready(struct chan *ch)
{
	ch->connected = true;
	if (uv_read_start((uv_stream_t *)ch->tcp, chan_alloc, chan_read) != 0) {
		chan_reset(ch, true);
		return;
	}
	chan_pump(ch);
}

static void
chan_connected(uv_connect_t *req, int status)
{
	struct chan *ch = req->data;
	uv_tcp_t *tcp = (uv_tcp_t *)req->handle;

	free(req);
	if (tcp != ch->tcp || tcp->data == NULL)
		return; /* reset meanwhile */
	if (status != 0) {
		rn_log_about(LOG_DEBUG, rn_subj_broker(ch->target), "%s "
		    "channel: connecting to node %d: %s", ch->name, ch->target,
		    uv_strerror(status));
		chan_reset(ch, true);
		return;
	}
	uv_tcp_nodelay(ch->tcp, 1);
	chan_ready(ch);
}

/*
 * A secured controller listener: the channel talks to a relay's
 * socketpair at once; the relay connects and logs in, and a failure
 * reaches the channel as end of file (workers/controller/relay.h).
 */
static void
chan_connect_relayed(struct chan *ch, const struct sockaddr *addr,
    const char *host)
{
	struct ctl *c = ch->c;
	char what[64];
	int rfd, rc;

	if ((ch->tcp = calloc(1, sizeof(*ch->tcp))) == NULL)
		return;
	rc = ctl_relay_pair(&c->loop, ch->tcp, &rfd);
	ch->tcp->data = ch;
	snprintf(what, sizeof(what), "%s channel to controller %d", ch->name,
	    ch->target);
	if (rc != 0 || ctl_relay_client(&c->loop, rfd, addr, host,
	    c->w->env->ctl_client, what) != 0) {
		chan_reset(ch, true);
		return;
	}
	chan_ready(ch);
}

static void
chan_connect(struct chan *ch)
{
	struct ctl *c = ch->c;
	const struct rn_voter *v;
	struct sockaddr_storage ss;
	uv_connect_t *cr;
	int32_t t = pick_target(c);

	if (t < 0 || (v = voter(c, t)) == NULL)
		return;
	memset(&ss, 0, sizeof(ss));
	if (uv_ip4_addr(v->host, v->port, (struct sockaddr_in *)&ss) != 0 &&
	    uv_ip6_addr(v->host, v->port, (struct sockaddr_in6 *)&ss) != 0) {
		/* a name: resolve it the simple way (rare, small) */
		if (strcmp(v->host, "localhost") == 0)
			uv_ip4_addr("127.0.0.1", v->port,
			    (struct sockaddr_in *)&ss);
		else {
			log_warnx("controller address %s is not numeric: "
			    "not supported by the broker agent", v->host);
			ch->retry_at_ms = rn_now_ms() + 5000;
			return;
		}
	}
	if (c->w->env->ctl_client != NULL) {
		ch->target = t;
		chan_connect_relayed(ch, (struct sockaddr *)&ss, v->host);
		return;
	}
	if ((cr = malloc(sizeof(*cr))) == NULL)
		return;
	if ((ch->tcp = calloc(1, sizeof(*ch->tcp))) == NULL) {
		free(cr);
		return;
	}
	uv_tcp_init(&c->loop, ch->tcp);
	ch->tcp->data = ch;
	ch->target = t;
	cr->data = ch;
	if (uv_tcp_connect(cr, ch->tcp, (struct sockaddr *)&ss,
	    chan_connected) != 0) {
		free(cr);
		chan_reset(ch, true);
	}
}

static void
call_written(uv_write_t *req, int status)
{
	(void)status;
	free(req);
}

static void
chan_pump(struct chan *ch)
{
	struct call *k, *next;
	int64_t now = rn_now_ms();
	bool stale = false;

	/* calls past their deadline are answered with a timeout */
	for (k = ch->head; k != NULL; k = next) {
		next = k->next;
		if (k->deadline_ms != 0 && now >= k->deadline_ms) {
			stale |= k->sent;
			chan_unlink(ch, k);
			k->cb(ch->c, k, RN_KERR_REQUEST_TIMED_OUT, NULL);
		}
	}
	/*
	 * A call sent and never answered: the peer accepts and says nothing
	 * (a node whose supervisor holds the listener while its controller
	 * worker is down). Try another controller rather than wait on it.
	 */
	if (stale && ch->tcp != NULL) {
		rn_log_about(LOG_WARNING, rn_subj_broker(ch->target),
		    "controller %d answered nothing in time: trying another",
		    ch->target);
		chan_reset(ch, true);
	}
	if (ch->head == NULL || ch->c->stopping)
		return;
	if (ch->tcp == NULL) {
		if (now >= ch->retry_at_ms)
			chan_connect(ch);
		return;
	}
	if (!ch->connected)
		return;
	for (k = ch->head; k != NULL; k = k->next) {
		uv_write_t *wr;
		uv_buf_t b;

		if (k->sent)
			continue;
		if ((wr = malloc(sizeof(*wr))) == NULL)
			return;
		b = uv_buf_init((char *)k->frame, (unsigned)k->len);
		if (uv_write(wr, (uv_stream_t *)ch->tcp, &b, 1,
		    call_written) != 0) {
			free(wr);
			chan_reset(ch, true);
			return;
		}
		k->sent = true;
	}
}

/* A call carrying body under a request header (v1 for the private APIs).
 * NULL on failure. */
static struct call *
call_new(struct chan *ch, int16_t key, int16_t ver, const struct rn_kwriter
    *body)
{
	struct ctl *c = ch->c;
	struct rn_kwriter w;
	struct call *k;
	char client[32];
	int hver;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	hver = key == CTL_API_FORWARD || key == CTL_API_IMAGE ? 1 :
	    rn_kapi_request_header_version(key, ver);
	k->hver = key == CTL_API_FORWARD || key == CTL_API_IMAGE ? 0 :
	    rn_kapi_response_header_version(key, ver);
	if (hver < 0 || k->hver < 0) {
		free(k);
		return NULL;
	}
	k->corr = ++ch->next_corr;
	k->key = key;
	k->ver = ver;
	snprintf(client, sizeof(client), "runnel-agent-%d", c->cfg->node_id);
	rn_kwriter_init(&w);
	if (rn_kframe_request(&w, hver, key, ver, k->corr, client, NULL,
	    body->buf, body->len) != 0 || (k->frame = malloc(w.len)) == NULL) {
		rn_kwriter_free(&w);
		free(k);
		return NULL;
	}
	memcpy(k->frame, w.buf, w.len);
	k->len = w.len;
	rn_kwriter_free(&w);
	return k;
}

static void
call_send(struct chan *ch, struct call *k, int64_t timeout_ms, void (*cb)(
    struct ctl *, struct call *, int16_t, struct rn_kreader *))
{
	k->cb = cb;
	k->deadline_ms = timeout_ms > 0 ? rn_now_ms() + timeout_ms : 0;
	chan_append(ch, k);
	chan_pump(ch);
}

/* ---- registration and heartbeats ------------------------------------- */

static void
fatal_cluster_id(struct ctl *c)
{
	rn_log_about(LOG_ERR, rn_subj_broker(c->cfg->node_id), "the active "
	    "controller refused this node: its cluster id %s (from "
	    "meta.properties) is not the cluster's; this node belongs to "
	    "another cluster and stops", c->known_cluster_id[0] ?
	    c->known_cluster_id : "(none)");
	c->fatal = true;
	c->exit_code = RN_WORKER_EXIT_FATAL;
}

static void
registered(struct ctl *c, struct call *k, int16_t err, struct rn_kreader *r)
{
	struct ctl_agent *a = c->agent;
	struct rn_BrokerRegistrationResponse resp;
	struct rn_arena ar;
	struct chan *ch = k->ch;
	int64_t now = rn_now_ms();

	rn_arena_init(&ar, 1u << 16);
	a->state = AG_UNREGISTERED;
	if (err != 0 || rn_BrokerRegistrationResponse_decode(r, k->ver, &ar,
	    &resp) != 0) {
		a->next_reg_ms = now + RETRY_MS;
		goto out;
	}
	switch (resp.error_code) {
	case 0:
		a->state = AG_REGISTERED;
		a->epoch = resp.broker_epoch;
		a->off_acked = 0; /* a new epoch: say it again */
		a->next_hb_ms = now;
		a->dup_logged = false;
		atomic_store(&c->shm->hdr->registered_epoch, a->epoch);
		rn_log_about(LOG_INFO, rn_subj_broker(c->cfg->node_id),
		    "broker %d registered with the active controller (node "
		    "%d), broker epoch %lld", c->cfg->node_id, ch->target,
		    (long long)a->epoch);
		break;
	case RN_KERR_INCONSISTENT_CLUSTER_ID:
		fatal_cluster_id(c);
		break;
	case RN_KERR_INVALID_REQUEST:
		if (c->n_dirs > 0)
			goto refused;
		/* KIP-858: a broker without an online log dir has no place
		 * for a replica; retrying would not change that */
		rn_log_about(LOG_ERR, rn_subj_broker(c->cfg->node_id), "the "
		    "active controller refused this node's registration "
		    "(INVALID_REQUEST): it has no online log directory; it "
		    "stops");
		c->fatal = true;
		c->exit_code = RN_WORKER_EXIT_FATAL;
		break;
	case RN_KERR_NOT_CONTROLLER:
		chan_reset(ch, true);
		a->next_reg_ms = now + RETRY_MS;
		break;
	case RN_KERR_DUPLICATE_BROKER_REGISTRATION:
		if (!a->dup_logged)
			rn_log_about(LOG_INFO, rn_subj_broker(c->cfg->node_id),
			    "the previous incarnation of broker %d is still "
			    "registered: retrying until its session expires",
			    c->cfg->node_id);
		a->dup_logged = true;
		a->next_reg_ms = now + c->cfg->broker_heartbeat_interval_ms;
		break;
	default:
	refused:
		rn_log_about(LOG_WARNING, rn_subj_broker(c->cfg->node_id),
		    "broker registration refused: %s",
		    rn_kerr_name(resp.error_code));
		a->next_reg_ms = now + 1000;
	}
out:
	rn_arena_free(&ar);
	call_free(k);
}

static void
send_registration(struct ctl *c)
{
	struct ctl_agent *a = c->agent;
	struct rn_BrokerRegistrationRequest req;
	struct rn_BrokerRegistrationRequest_Listener ls[RN_CONFIG_MAX_LISTENERS];
	struct rn_BrokerRegistrationRequest_Feature f;
	struct rn_uuid dirs[RN_CONFIG_MAX_LOGDIRS];
	struct rn_kwriter w;
	struct call *k;
	int i;

	rn_BrokerRegistrationRequest_init(&req);
	req.broker_id = c->cfg->node_id;
	req.cluster_id = rn_kstr_c(c->known_cluster_id);
	memcpy(req.incarnation_id.b, c->incarnation, 16);
	for (i = 0; i < c->cfg->n_advertised; i++) {
		rn_BrokerRegistrationRequest_Listener_init(&ls[i]);
		ls[i].name = rn_kstr_c(c->cfg->advertised[i].name);
		ls[i].host = rn_kstr_c(c->cfg->advertised[i].host);
		ls[i].port = c->cfg->advertised[i].port;
		ls[i].security_protocol = (int16_t)c->cfg->advertised[i].proto;
	}
	req.listeners = ls;
	req.listeners_count = c->cfg->n_advertised;
	rn_BrokerRegistrationRequest_Feature_init(&f);
	f.name = rn_kstr_c("metadata.version");
	f.min_supported_version = 1;
	f.max_supported_version = CTL_METADATA_VERSION;
	req.features = &f;
	req.features_count = 1;
	req.rack = c->cfg->broker_rack[0] ? rn_kstr_c(c->cfg->broker_rack) :
	    rn_kstr_c(NULL);
	for (i = 0; i < c->n_dirs; i++)
		memcpy(dirs[i].b, c->dir_ids[i], 16);
	req.log_dirs = dirs;
	req.log_dirs_count = c->n_dirs;
	rn_kwriter_init(&w);
	if (rn_BrokerRegistrationRequest_encode(&w, 2, &req) == 0 &&
	    (k = call_new(&a->life, RN_KAPI_BROKER_REGISTRATION, 2, &w)) !=
	    NULL) {
		a->state = AG_REGISTERING;
		call_send(&a->life, k, 0, registered);
	} else
		a->next_reg_ms = rn_now_ms() + 1000;
	rn_kwriter_free(&w);
}

static void
heartbeat_done(struct ctl *c, struct call *k, int16_t err,
    struct rn_kreader *r)
{
	struct ctl_agent *a = c->agent;
	struct rn_BrokerHeartbeatResponse resp;
	struct rn_arena ar;
	int64_t now = rn_now_ms();

	a->hb_inflight = false;
	rn_arena_init(&ar, 1u << 16);
	if (err != 0 || rn_BrokerHeartbeatResponse_decode(r, k->ver, &ar,
	    &resp) != 0)
		goto out;
	switch (resp.error_code) {
	case 0:
		a->off_acked |= a->off_inflight;
		if (a->fenced != resp.is_fenced)
			rn_log_about(LOG_INFO, rn_subj_broker(c->cfg->node_id),
			    "broker %d is %s", c->cfg->node_id,
			    resp.is_fenced ? "fenced" : "unfenced");
		a->fenced = resp.is_fenced;
		if (resp.should_shut_down && !a->shutdown_done &&
		    atomic_load(&c->shm->hdr->controlled_shutdown) == 1) {
			rn_log_about(LOG_INFO, rn_subj_broker(c->cfg->node_id),
			    "controlled shutdown: the active controller moved "
			    "this broker's leaderships away");
			a->shutdown_done = true;
			atomic_store(&c->shm->hdr->controlled_shutdown, 2);
		}
		break;
	case RN_KERR_NOT_CONTROLLER:
		chan_reset(k->ch, true);
		a->next_hb_ms = now + RETRY_MS;
		break;
	case RN_KERR_STALE_BROKER_EPOCH:
	case RN_KERR_BROKER_ID_NOT_REGISTERED:
		rn_log_about(LOG_INFO, rn_subj_broker(c->cfg->node_id),
		    "heartbeat refused (%s): registering again",
		    rn_kerr_name(resp.error_code));
		a->state = AG_UNREGISTERED;
		a->next_reg_ms = now;
		break;
	default:
		rn_log_about(LOG_WARNING, rn_subj_broker(c->cfg->node_id),
		    "heartbeat refused: %s", rn_kerr_name(resp.error_code));
	}
out:
	rn_arena_free(&ar);
	call_free(k);
}

/* The directory ids of the log dirs in mask, into out; their count. */
static int
offline_dirs(struct ctl *c, uint32_t mask, struct rn_uuid *out)
{
	int i, n = 0;

	for (i = 0; i < c->n_dirs && i < 32; i++)
		if (mask & (1u << i))
			memcpy(out[n++].b, c->dir_ids[i], 16);
	return n;
}

/*
 * A dir went offline: the heartbeat that says so goes at once; when the
 * active controller has not taken it within log.dir.failure.timeout.ms,
 * the broker stops, as Kafka's does (its replicas there would look alive
 * to the cluster), and so it does when no dir is left. True when it
 * stops.
 */
static bool
offline_overdue(struct ctl *c, int64_t now)
{
	struct ctl_agent *a = c->agent;
	uint32_t mask = rn_dirfail_mask(c->shm);

	if (c->n_dirs > 0 && c->n_dirs < 32 &&
	    mask == (1u << c->n_dirs) - 1) {
		log_errx("shutting down: every log dir is offline");
		c->fatal = true;
		c->exit_code = RN_WORKER_EXIT_FATAL;
		return true;
	}
	if ((mask & ~a->off_acked) == 0) {
		a->off_since_ms = 0;
		return false;
	}
	if (a->off_since_ms == 0)
		a->off_since_ms = now;
	if (now - a->off_since_ms <= c->cfg->log_dir_failure_timeout_ms)
		return false;
	log_errx("shutting down: the active controller did not learn of "
	    "the offline log dir(s) within log.dir.failure.timeout.ms "
	    "(%lld ms)", (long long)c->cfg->log_dir_failure_timeout_ms);
	c->fatal = true;
	c->exit_code = RN_WORKER_EXIT_FATAL;
	return true;
}

static void
send_heartbeat(struct ctl *c, bool shut_down)
{
	struct ctl_agent *a = c->agent;
	struct rn_BrokerHeartbeatRequest req;
	struct rn_uuid off[RN_CONFIG_MAX_LOGDIRS];
	uint32_t mask = rn_dirfail_mask(c->shm);
	struct rn_kwriter w;
	struct call *k;

	rn_BrokerHeartbeatRequest_init(&req);
	req.offline_log_dirs = off;
	req.offline_log_dirs_count = offline_dirs(c, mask, off);
	req.broker_id = c->cfg->node_id;
	req.broker_epoch = a->epoch;
	req.current_metadata_offset = c->raft_inited || c->image_loaded ?
	    (int64_t)c->st.last_index : -1;
	/* KIP-858: fenced while a replica is assigned to another dir than
	 * the one it is kept in (with one dir too: its registration may
	 * have dropped a dir that held replicas) */
	req.want_fence = atomic_load(&c->shm->hdr->dir_mismatches) > 0;
	req.want_shut_down = shut_down;
	rn_kwriter_init(&w);
	if (rn_BrokerHeartbeatRequest_encode(&w, 1, &req) == 0 &&
	    (k = call_new(&a->life, RN_KAPI_BROKER_HEARTBEAT, 1, &w)) !=
	    NULL) {
		a->hb_inflight = true;
		a->off_inflight = mask; /* what this one says */
		/* one lost in a dead connection is not retried: the next one
		 * carries newer news */
		call_send(&a->life, k, c->cfg->broker_session_timeout_ms,
		    heartbeat_done);
	}
	rn_kwriter_free(&w);
}

/* ---- images (nodes without the metadata log) -------------------------- */

static void
image_apply(struct ctl *c, int32_t controller, int64_t epoch,
    int64_t offset, const uint8_t *snap, size_t len)
{
	struct ctl_state nst;
	char before[23];
	int i;

	if (controller >= 0)
		c->agent->hint = controller;
	if (c->image_loaded && offset <= (int64_t)c->st.last_index) {
		if (controller != c->image_controller) {
			c->image_controller = controller;
			c->image_epoch = (uint64_t)epoch;
			c->dirty = true;
			ctl_publish(c);
		}
		return;
	}
	ctl_state_init(&nst);
	if (ctl_state_restore(&nst, snap, len) == -EBADMSG &&
	    nst.last_index == 0) {
		rn_log_about(LOG_WARNING, rn_subj_broker(c->agent->img.target),
		    "metadata image from node %d does not parse",
		    c->agent->img.target);
		ctl_state_free(&nst);
		return;
	}
	/* topics gone since the last image: their local dirs go */
	for (i = 0; i < c->st.n_topics; i++)
		if (ctl_state_topic_by_id(&nst, c->st.topics[i]->id) == NULL)
			ctl_admin_topic_removed(c, c->st.topics[i]);
	ctl_admin_replicas_moved(c, &nst);
	strlcpy(before, c->st.cluster_id, sizeof(before));
	nst.on_remove_topic = c->st.on_remove_topic;
	nst.on_remove_replica = c->st.on_remove_replica;
	nst.hook_arg = c->st.hook_arg;
	ctl_state_free(&c->st);
	c->st = nst;
	if (!c->image_loaded)
		log_info("metadata image from the controller quorum at offset "
		    "%lld", (long long)offset);
	c->image_loaded = true;
	c->image_controller = controller;
	c->image_epoch = (uint64_t)epoch;
	c->dirty = true;
	ctl_cluster_id_applied(c, before);
	ctl_publish(c);
}

/*
 * The log entries after this node's offset: applied as a voter applies
 * them (the state's hooks remove what a record drops here), then
 * published, as a delta when they only touch partitions. An entry that
 * does not parse stops the batch; the next poll asks from there.
 */
static void
image_entries_apply(struct ctl *c, int32_t controller, int64_t epoch,
    struct rn_kreader *r)
{
	int32_t n = rn_kr_int32(r), i;
	bool applied = false;
	char before[23];

	if (controller >= 0)
		c->agent->hint = controller;
	if (!c->image_loaded)
		return; /* entries only go on top of a state */
	if (!c->agent->following)
		rn_log_about(LOG_INFO, rn_subj_broker(c->agent->img.target),
		    "following the metadata log from offset %llu (node %d)",
		    (unsigned long long)c->st.last_index, c->agent->img.target);
	c->agent->following = true;
	strlcpy(before, c->st.cluster_id, sizeof(before));
	for (i = 0; i < n && r->err == 0; i++) {
		int64_t index = rn_kr_int64(r);
		int32_t len = rn_kr_int32(r);
		const uint8_t *p = len >= 0 ? rn_kr_take(r, (size_t)len) :
		    NULL;

		if (r->err != 0 || p == NULL)
			break;
		if (index <= (int64_t)c->st.last_index)
			continue;
		ctl_state_apply(&c->st, p, (size_t)len, (uint64_t)index);
		applied = true;
	}
	if (r->err != 0 || i < n)
		rn_log_about(LOG_WARNING, rn_subj_broker(c->agent->img.target),
		    "metadata entries from node %d do not parse",
		    c->agent->img.target);
	if (!applied && controller == c->image_controller)
		return;
	c->image_controller = controller;
	c->image_epoch = (uint64_t)epoch;
	c->dirty = true;
	ctl_cluster_id_applied(c, before);
	ctl_publish(c);
}

static void
image_done(struct ctl *c, struct call *k, int16_t err, struct rn_kreader *r)
{
	struct ctl_agent *a = c->agent;
	int16_t e;

	a->img_inflight = false;
	if (err != 0 || r == NULL)
		goto out;
	e = rn_kr_int16(r);
	if (r->err == 0 && e == 0) {
		int32_t controller = rn_kr_int32(r);
		int64_t epoch = rn_kr_int64(r), offset = rn_kr_int64(r);
		int8_t kind = rn_kr_int8(r);
		int32_t n;
		const uint8_t *p;

		if (r->err == 0 && kind == 1) {
			image_entries_apply(c, controller, epoch, r);
			goto out;
		}
		n = rn_kr_int32(r);
		p = n >= 0 ? rn_kr_take(r, (size_t)n) : NULL;
		if (r->err == 0 && kind == 0 && p != NULL) {
			/* too far behind the entries the voter keeps */
			a->following = false;
			image_apply(c, controller, epoch, offset, p,
			    (size_t)n);
		}
	} else if (e == RN_KERR_NOT_CONTROLLER) {
		chan_reset(k->ch, true);
	}
out:
	call_free(k);
}

static void
send_image_poll(struct ctl *c)
{
	struct ctl_agent *a = c->agent;
	struct rn_kwriter w;
	struct call *k;

	rn_kwriter_init(&w);
	rn_kw_int64(&w, c->image_loaded ? (int64_t)c->st.last_index : -1);
	rn_kw_int32(&w, IMAGE_WAIT_MS);
	/* v1: the log entries after our offset when the answering voter
	 * still has them, the whole state otherwise */
	if ((k = call_new(&a->img, CTL_API_IMAGE, 1, &w)) != NULL) {
		a->img_inflight = true;
		call_send(&a->img, k, IMAGE_WAIT_MS * 5, image_done);
	}
	rn_kwriter_free(&w);
}

/* ---- forwarding ----------------------------------------------------- */

static void
forward_done(struct ctl *c, struct call *k, int16_t err,
    struct rn_kreader *r)
{
	struct ctl_op *op = k->op;
	int16_t e;

	(void)c;
	if (err != 0 || r == NULL) {
		log_warnx("forwarded API %d request: %s", op->key,
		    rn_kerr_name(err));
		ctl_op_reply_raw(op, err != 0 ? err :
		    RN_KERR_UNKNOWN_SERVER_ERROR, NULL, 0);
		call_free(k);
		return;
	}
	e = rn_kr_int16(r);
	if (r->err == 0 && e == RN_KERR_NOT_CONTROLLER) {
		call_retry(k);
		return;
	}
	ctl_op_reply_raw(op, r->err != 0 ? RN_KERR_UNKNOWN_SERVER_ERROR : e,
	    r->p, rn_kr_left(r));
	call_free(k);
}

void
ctl_agent_forward(struct ctl *c, struct ctl_op *op)
{
	struct ctl_agent *a = c->agent;
	struct rn_kwriter w;
	struct call *k = NULL;

	if (a == NULL) {
		ctl_op_reply_raw(op, RN_KERR_NOT_CONTROLLER, NULL, 0);
		return;
	}
	rn_kwriter_init(&w);
	rn_kw_int16(&w, op->key);
	rn_kw_int16(&w, op->ver);
	rn_kw_raw(&w, op->body, op->len);
	if (w.err == 0)
		k = call_new(&a->fwd, CTL_API_FORWARD, 0, &w);
	rn_kwriter_free(&w);
	if (k == NULL) {
		ctl_op_reply_raw(op, RN_KERR_UNKNOWN_SERVER_ERROR, NULL, 0);
		return;
	}
	log_debug("forwarding API %d v%d to the active controller", op->key,
	    op->ver);
	k->op = op;
	call_send(&a->fwd, k, FORWARD_TIMEOUT_MS, forward_done);
}

/*
 * ISR changes: the network workers ask one partition at a time; like
 * Kafka's AlterPartitionManager the agent keeps the newest ask per
 * partition and sends them all in one AlterPartition, one request in
 * flight, so catching up on thousands of partitions costs a few metadata
 * commits, not one each.
 */
static int
alter_cmp(const void *x, const void *y)
{
	const struct alter_item *a = x, *b = y;
	int d = memcmp(a->tid, b->tid, 16);

	return d != 0 ? d : (a->p > b->p) - (a->p < b->p);
}

static void alter_flush(struct ctl *c);

/*
 * A refused ISR change (the replica was not yet eligible, the epochs
 * moved): let the leader ask again soon, on a later fetch of that
 * follower, instead of after the full retry delay.
 */
static void
alter_refused(struct ctl *c, const uint8_t tid[16], int32_t p)
{
	const struct ctl_topic *t = ctl_state_topic_by_id(&c->st, tid);
	struct ctl_local loc;
	int32_t slot, dir;

	if (t == NULL || p < 0 || p >= t->n_parts)
		return;
	ctl_local(c, &loc);
	ctl_state_local_placement(&c->st, &loc, t, p, &slot, &dir);
	rn_part_isr_change_refused(c->shm, slot, tid, p);
}

static void
alter_done(struct ctl *c, struct call *k, int16_t err, struct rn_kreader *r)
{
	struct ctl_agent *a = c->agent;
	struct rn_AlterPartitionResponse resp;
	struct rn_arena ar;
	int i, j, refused = 0, total = 0;
	int16_t first = 0;
	int32_t first_p = -1;

	/* decoded arrays stay within a small multiple of the response */
	rn_arena_init(&ar, r != NULL ? 4 * rn_kr_left(r) + 4096 : 4096);
	if (err != 0 || rn_AlterPartitionResponse_decode(r, k->ver, &ar,
	    &resp) != 0) {
		log_warnx("AlterPartition: no answer (%s)", rn_kerr_name(err));
	} else if (resp.error_code == RN_KERR_NOT_CONTROLLER) {
		rn_arena_free(&ar);
		call_retry(k);
		return;
	} else if (resp.error_code != 0) {
		log_warnx("AlterPartition refused: %s",
		    rn_kerr_name(resp.error_code));
	} else {
		for (i = 0; i < resp.topics_count; i++)
			for (j = 0; j < resp.topics[i].partitions_count; j++) {
				const struct rn_AlterPartitionResponse_PartitionData
				    *pd = &resp.topics[i].partitions[j];

				total++;
				if (pd->error_code == 0)
					continue;
				alter_refused(c, resp.topics[i].topic_id.b,
				    pd->partition_index);
				if (refused++ == 0) {
					first = pd->error_code;
					first_p = pd->partition_index;
				}
			}
		if (refused > 0)
			log_info("AlterPartition: %d of %d ISR changes "
			    "refused (partition %d: %s, ...)", refused, total,
			    first_p, rn_kerr_name(first));
	}
	rn_arena_free(&ar);
	call_free(k);
	a->alt_inflight = false;
	alter_flush(c);
}

/* Pending ISR changes that fit one request, grouped by topic. */
static int
alter_encode(struct ctl *c, struct rn_kwriter *w, int *used)
{
	struct ctl_agent *a = c->agent;
	struct rn_AlterPartitionRequest req;
	struct rn_AlterPartitionRequest_TopicData *td;
	struct rn_AlterPartitionRequest_PartitionData *pd;
	size_t per = 64 + 4 * CTL_MAX_RF, max = (size_t)(c->cfg->
	    socket_request_max_bytes > 0 ? c->cfg->socket_request_max_bytes :
	    104857600) / 2;
	int i, n = a->n_alt, rc;

	if ((size_t)n * per > max)
		n = (int)(max / per);
	qsort(a->alt, (size_t)n, sizeof(*a->alt), alter_cmp);
	td = calloc((size_t)n, sizeof(*td));
	pd = calloc((size_t)n, sizeof(*pd));
	if (td == NULL || pd == NULL) {
		free(td);
		free(pd);
		return -ENOMEM;
	}
	rn_AlterPartitionRequest_init(&req);
	req.broker_id = c->cfg->node_id;
	req.broker_epoch = a->epoch;
	req.topics = td;
	for (i = 0; i < n; i++) {
		const struct alter_item *it = &a->alt[i];
		struct rn_AlterPartitionRequest_TopicData *t;

		if (req.topics_count == 0 || memcmp(td[req.topics_count - 1].
		    topic_id.b, it->tid, 16) != 0) {
			t = &td[req.topics_count++];
			rn_AlterPartitionRequest_TopicData_init(t);
			memcpy(t->topic_id.b, it->tid, 16);
			t->partitions = &pd[i];
		}
		t = &td[req.topics_count - 1];
		rn_AlterPartitionRequest_PartitionData_init(&pd[i]);
		pd[i].partition_index = it->p;
		pd[i].leader_epoch = it->leader_epoch;
		pd[i].partition_epoch = it->partition_epoch;
		pd[i].new_isr = (int32_t *)it->isr;
		pd[i].new_isr_count = it->n_isr;
		t->partitions_count++;
	}
	rc = rn_AlterPartitionRequest_encode(w, 2, &req);
	free(td);
	free(pd);
	*used = n;
	return rc != 0 ? rc : w->err;
}

static void
alter_flush(struct ctl *c)
{
	struct ctl_agent *a = c->agent;
	struct rn_kwriter w;
	struct call *k = NULL;
	int used = 0;

	if (a->alt_inflight || a->n_alt == 0 || a->state != AG_REGISTERED)
		return;
	rn_kwriter_init(&w);
	if (alter_encode(c, &w, &used) == 0)
		k = call_new(&a->fwd, RN_KAPI_ALTER_PARTITION, 2, &w);
	rn_kwriter_free(&w);
	if (k == NULL)
		return; /* tried again on the next tick */
	memmove(a->alt, a->alt + used, sizeof(*a->alt) *
	    (size_t)(a->n_alt - used));
	a->n_alt -= used;
	a->alt_inflight = true;
	call_send(&a->fwd, k, ALTER_TIMEOUT_MS, alter_done);
}

int
ctl_agent_alter_partition(struct ctl *c, const msgpack_object *m)
{
	struct ctl_agent *a = c->agent;
	const msgpack_object *isr = rn_mp_get(m, "isr");
	struct alter_item it;
	uint32_t i;
	int k;

	memset(&it, 0, sizeof(it));
	if (rn_mp_get_int(m, "v", -1) != RN_IPC_VERSION ||
	    !ctl_mp_bin16_get(m, "topic_id", it.tid) || isr == NULL ||
	    isr->type != MSGPACK_OBJECT_ARRAY || isr->via.array.size == 0 ||
	    isr->via.array.size > CTL_MAX_RF)
		return -EBADMSG;
	for (i = 0; i < isr->via.array.size; i++) {
		int64_t v;

		if (!ctl_mp_int(&isr->via.array.ptr[i], &v))
			return -EBADMSG;
		it.isr[i] = (int32_t)v;
	}
	it.n_isr = (int)isr->via.array.size;
	it.p = (int32_t)rn_mp_get_int(m, "p", -1);
	it.leader_epoch = (int32_t)rn_mp_get_int(m, "leader_epoch", -1);
	it.partition_epoch = (int32_t)rn_mp_get_int(m, "partition_epoch", -1);
	if (a == NULL || a->state != AG_REGISTERED) {
		log_info("AlterPartition dropped: this broker is not "
		    "registered");
		return 0;
	}
	/* a newer ask for the same partition replaces the pending one */
	for (k = 0; k < a->n_alt; k++)
		if (a->alt[k].p == it.p && memcmp(a->alt[k].tid, it.tid,
		    16) == 0)
			break;
	if (k == a->n_alt) {
		if (a->n_alt == a->cap_alt) {
			int cap = a->cap_alt ? 2 * a->cap_alt : 256;
			struct alter_item *na = realloc(a->alt,
			    sizeof(*na) * (size_t)cap);

			if (na == NULL)
				return 0; /* the leader asks again later */
			a->alt = na;
			a->cap_alt = cap;
		}
		a->n_alt++;
	}
	a->alt[k] = it;
	alter_flush(c);
	return 0;
}

int64_t
ctl_agent_broker_epoch(struct ctl *c)
{
	return c->agent != NULL && c->agent->state == AG_REGISTERED ?
	    c->agent->epoch : -1;
}

/* ---- the loop ------------------------------------------------------- */

/* Connected to a node that no longer leads: reconnect. */
static void
chan_check_target(struct ctl *c, struct chan *ch)
{
	int32_t t;

	if (ch->tcp == NULL)
		return;
	t = pick_target(c);
	if (t >= 0 && ch->target >= 0 && t != ch->target)
		chan_reset(ch, false);
}

/* ---- AssignReplicasToDirs ------------------------------------------ */

static void
dirs_done(struct ctl *c, struct call *k, int16_t err, struct rn_kreader *r)
{
	struct ctl_agent *a = c->agent;
	struct rn_AssignReplicasToDirsResponse resp;
	struct rn_arena ar;

	a->ard_inflight = false;
	rn_arena_init(&ar, r != NULL ? 4 * rn_kr_left(r) + 4096 : 4096);
	if (err != 0 || rn_AssignReplicasToDirsResponse_decode(r, k->ver, &ar,
	    &resp) != 0)
		log_warnx("AssignReplicasToDirs: no answer (%s): retrying",
		    rn_kerr_name(err));
	else if (resp.error_code == RN_KERR_NOT_CONTROLLER) {
		rn_arena_free(&ar);
		a->ard_inflight = true;
		call_retry(k);
		return;
	} else if (resp.error_code != 0)
		log_warnx("AssignReplicasToDirs refused: %s: retrying",
		    rn_kerr_name(resp.error_code));
	rn_arena_free(&ar);
	call_free(k);
}

/*
 * Count the mismatching replicas after each change of the state, and
 * report them until the records say where they are (what is still
 * wrong is sent again, a second later).
 */
static void
dirs_flush(struct ctl *c, int64_t now)
{
	struct ctl_agent *a = c->agent;
	struct rn_AssignReplicasToDirsRequest req;
	struct rn_kwriter w;
	struct rn_arena ar;
	struct call *k = NULL;
	uint32_t reports;
	int n;

	if (!c->raft_inited && !c->image_loaded)
		return;
	reports = atomic_load(&c->shm->hdr->dir_reports);
	if (a->ard_index != c->st.last_index + 1 ||
	    reports != a->reports_seen) {
		a->ard_index = c->st.last_index + 1;
		atomic_store(&c->shm->hdr->dir_mismatches,
		    (uint32_t)ctl_dirs_mismatches(c));
		/* a move between dirs wants its destination recorded: now */
		if (reports != a->reports_seen)
			a->next_ard_ms = now;
		a->reports_seen = reports;
		a->wanted = ctl_dirs_wanted(c);
	}
	n = (int)atomic_load(&c->shm->hdr->dir_mismatches) + a->wanted;
	if (n == 0 || a->ard_inflight || a->state != AG_REGISTERED ||
	    now < a->next_ard_ms)
		return;
	rn_arena_init(&ar, 16u << 20);
	rn_kwriter_init(&w);
	if ((n = ctl_dirs_report(c, a->epoch, &ar, ASSIGN_MAX, &req)) > 0 &&
	    rn_AssignReplicasToDirsRequest_encode(&w, 0, &req) == 0)
		k = call_new(&a->fwd, RN_KAPI_ASSIGN_REPLICAS_TO_DIRS, 0, &w);
	rn_kwriter_free(&w);
	rn_arena_free(&ar);
	a->next_ard_ms = now + 1000;
	if (k == NULL)
		return;
	log_info("reporting the log dir of %d replica(s) to the active "
	    "controller", n);
	a->ard_inflight = true;
	call_send(&a->fwd, k, ALTER_TIMEOUT_MS, dirs_done);
}

static void
agent_tick(uv_timer_t *timer)
{
	struct ctl *c = timer->data;
	struct ctl_agent *a = c->agent;
	uint32_t cs = atomic_load(&c->shm->hdr->controlled_shutdown);
	int64_t now = rn_now_ms();

	if (c->stopping || c->fatal)
		return;
	if (cs == 1 && !a->shutdown_done && (!(c->cfg->roles &
	    RN_ROLE_BROKER) || a->state != AG_REGISTERED)) {
		/* nothing leads here that the controller could move */
		a->shutdown_done = true;
		atomic_store(&c->shm->hdr->controlled_shutdown, 2);
	}
	chan_check_target(c, &a->life);
	chan_check_target(c, &a->fwd);
	chan_check_target(c, &a->img);
	if ((c->cfg->roles & RN_ROLE_BROKER) && offline_overdue(c, now))
		return;
	if (c->cfg->roles & RN_ROLE_BROKER) {
		if (a->state == AG_UNREGISTERED && now >= a->next_reg_ms)
			send_registration(c);
		else if (a->state == AG_REGISTERED && !a->hb_inflight &&
		    (now >= a->next_hb_ms || (cs == 1 && !a->sd_asked) ||
		    (rn_dirfail_mask(c->shm) & ~a->off_acked &
		    ~a->off_inflight) != 0)) {
			/* a shutdown request goes at once, not at the next
			 * heartbeat */
			a->sd_asked = cs == 1;
			bool sd = cs == 1;

			send_heartbeat(c, sd);
			a->next_hb_ms = now + (sd ? SHUTDOWN_HB_MS :
			    c->cfg->broker_heartbeat_interval_ms);
		}
	}
	if (!c->raft_inited && !a->img_inflight)
		send_image_poll(c);
	alter_flush(c);
	dirs_flush(c, now);
	chan_pump(&a->life);
	chan_pump(&a->fwd);
	chan_pump(&a->img);
}

static void
chan_init(struct ctl *c, struct chan *ch, const char *name)
{
	ch->c = c;
	ch->name = name;
	ch->target = -1;
}

int
ctl_agent_start(struct ctl *c)
{
	struct ctl_agent *a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return -ENOMEM;
	c->agent = a;
	a->hint = -1;
	a->epoch = -1;
	a->fenced = true;
	chan_init(c, &a->life, "lifecycle");
	chan_init(c, &a->fwd, "forward");
	chan_init(c, &a->img, "image");
	uv_timer_init(&c->loop, &c->agent_timer);
	c->agent_timer.data = c;
	uv_timer_start(&c->agent_timer, agent_tick, AGENT_TICK_MS,
	    AGENT_TICK_MS);
	return 0;
}

static void
chan_stop(struct chan *ch)
{
	struct call *k;

	chan_reset(ch, false);
	while ((k = ch->head) != NULL) {
		ch->head = k->next;
		if (k->op != NULL)
			ctl_op_reply_raw(k->op, RN_KERR_NOT_CONTROLLER, NULL,
			    0);
		call_free(k);
	}
	rn_kfb_free(&ch->in);
}

static void
agent_timer_closed(uv_handle_t *h)
{
	(void)h;
}

void
ctl_agent_stop(struct ctl *c)
{
	struct ctl_agent *a = c->agent;

	if (a == NULL)
		return;
	uv_timer_stop(&c->agent_timer);
	uv_close((uv_handle_t *)&c->agent_timer, agent_timer_closed);
	chan_stop(&a->life);
	chan_stop(&a->fwd);
	chan_stop(&a->img);
}
