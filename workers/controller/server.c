/*
 * Kafka protocol on the CONTROLLER listener, served by the active
 * controller (the transport hands over every connection that is not a
 * raft peer). A connection may carry many requests; answers are matched
 * by correlation id, so they may come back out of order.
 *
 * Served: BrokerRegistration, BrokerHeartbeat, AlterPartition (the broker
 * lifecycle, run as controller operations), and two runnel-private APIs,
 * request header v1, response header v0:
 *
 *   CTL_API_FORWARD (32101) v0: an admin request a node that is not the
 *     active controller relays for its own network workers.
 *     Request body:  int16 api_key, int16 api_version, then the request
 *                    body exactly as the client sent it.
 *     Response body: int16 error (0, or NOT_CONTROLLER when this node is
 *                    not the active controller), then the response body.
 *
 *   CTL_API_IMAGE (32102) v0-1: a long poll for the metadata of a node
 *     without the metadata log (process.roles=broker). Any voter that
 *     has applied the log answers.
 *     Request body:  int64 have_offset (-1: none), int32 max_wait_ms.
 *     Response body: int16 error, int32 controller_id, int64 epoch,
 *                    int64 offset, then
 *                    v0: int32 length + bytes: the state snapshot
 *                    (ctl_state_snapshot) at offset;
 *                    v1: int8 kind, 0: the snapshot as in v0; 1: the
 *                    log entries after have_offset up to offset (the
 *                    journal still holds them): int32 count, then per
 *                    entry int64 index, int32 length + bytes (a record
 *                    batch as applied).
 *     Answered as soon as offset > have_offset, else at max_wait_ms with
 *     the current one.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "protocol/kframe.h"
#include "workers/controller/op.h"
#include "workers/controller/transport.h"

#define SRV_MAX_WAIT_MS 5000

struct sconn {
	struct sconn *next, *prev;
	struct ctl *c;
	uv_tcp_t *tcp;           /* raft_malloc'd by the transport */
	uint64_t id;
	struct rn_kframebuf in;
	bool closing;
};

/* Log entries per answer to a broker-only node catching up. */
#define IMG_ENTRIES_MAX_BYTES (4u << 20)

struct img_wait {
	struct img_wait *next;
	uint64_t conn_id;
	int32_t corr;
	int16_t ver;
	int64_t have;
	int64_t deadline_ms;
};

struct ctl_server {
	struct sconn *conns;
	uint64_t next_id;
	struct img_wait *waits;
};

struct wreq {
	uv_write_t req;
	size_t len;
	uint8_t data[];
};

static struct sconn *
conn_find(struct ctl *c, uint64_t id)
{
	struct sconn *s;

	if (c->server == NULL)
		return NULL;
	for (s = c->server->conns; s != NULL; s = s->next)
		if (s->id == id && !s->closing)
			return s;
	return NULL;
}

static void
conn_closed(uv_handle_t *h)
{
	struct sconn *s = h->data;

	raft_free(s->tcp);
	rn_kfb_free(&s->in);
	free(s);
}

static void
conn_close(struct sconn *s)
{
	struct ctl_server *srv = s->c->server;

	if (s->closing)
		return;
	s->closing = true;
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		srv->conns = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	uv_read_stop((uv_stream_t *)s->tcp);
	s->tcp->data = s;
	uv_close((uv_handle_t *)s->tcp, conn_closed);
}

static void
written(uv_write_t *req, int status)
{
	(void)status;
	free(req->data);
}

static void
conn_write(struct sconn *s, const void *data, size_t len)
{
	struct wreq *wr = malloc(sizeof(*wr) + len);
	uv_buf_t b;

	if (wr == NULL) {
		conn_close(s);
		return;
	}
	memcpy(wr->data, data, len);
	wr->len = len;
	wr->req.data = wr;
	b = uv_buf_init((char *)wr->data, (unsigned)len);
	if (uv_write(&wr->req, (uv_stream_t *)s->tcp, &b, 1, written) != 0) {
		free(wr);
		conn_close(s);
	}
}

void
ctl_server_reply(struct ctl *c, uint64_t conn_id, int32_t corr, int16_t key,
    int16_t ver, bool fwd, int16_t err, const void *body, size_t len)
{
	struct sconn *s = conn_find(c, conn_id);
	struct rn_kwriter w;
	size_t mark;

	if (s == NULL)
		return; /* the asking node went away */
	rn_kwriter_init(&w);
	if (fwd) {
		mark = rn_kw_frame_begin(&w);
		rn_kresponse_header_encode(&w, 0, corr);
		rn_kw_int16(&w, err);
		if (err == 0 && len > 0)
			rn_kw_raw(&w, body, len);
	} else if (err != 0 || rn_kresponse_begin(&w, key, ver, corr,
	    &mark) != 0) {
		log_warnx("controller listener: cannot answer API %d v%d "
		    "(error %d): closing the connection", key, ver, err);
		rn_kwriter_free(&w);
		conn_close(s);
		return;
	} else if (len > 0)
		rn_kw_raw(&w, body, len);
	rn_kw_frame_end(&w, mark);
	if (w.err == 0)
		conn_write(s, w.buf, w.len);
	else
		conn_close(s);
	rn_kwriter_free(&w);
}

/* ---- images --------------------------------------------------------- */

static bool
can_serve_image(struct ctl *c)
{
	return c->raft_inited && c->st.cluster_id[0] != '\0';
}

/* v1: the entries after have, when the journal reaches back to it. */
static bool
image_entries(struct ctl *c, struct rn_kwriter *w, int64_t have)
{
	const struct ctl_jentry *e = NULL;
	size_t first, count, k;

	if (have < 0 || ctl_journal_since(&c->journal, (uint64_t)have,
	    IMG_ENTRIES_MAX_BYTES, &first, &count) != 0)
		return false;
	if (count > 0)
		e = ctl_journal_at(&c->journal, first + count - 1);
	rn_kw_int64(w, e != NULL ? (int64_t)e->index : have);
	rn_kw_int8(w, 1);
	rn_kw_int32(w, (int32_t)count);
	for (k = 0; k < count; k++) {
		e = ctl_journal_at(&c->journal, first + k);
		rn_kw_int64(w, (int64_t)e->index);
		rn_kw_int32(w, (int32_t)e->len);
		rn_kw_raw(w, e->data, e->len);
	}
	return true;
}

static void
image_answer(struct ctl *c, struct sconn *s, int32_t corr, int16_t ver,
    int64_t have)
{
	struct rn_kwriter w;
	msgpack_sbuffer sb;
	raft_id id = 0;
	const char *addr = NULL;
	size_t mark;

	msgpack_sbuffer_init(&sb);
	rn_kwriter_init(&w);
	mark = rn_kw_frame_begin(&w);
	rn_kresponse_header_encode(&w, 0, corr);
	if (!can_serve_image(c)) {
		rn_kw_int16(&w, RN_KERR_NOT_CONTROLLER);
	} else {
		raft_leader(&c->raft, &id, &addr);
		rn_kw_int16(&w, 0);
		rn_kw_int32(&w, id != 0 ? (int32_t)id : -1);
		rn_kw_int64(&w, (int64_t)c->raft.current_term);
		if (ver >= 1 && image_entries(c, &w, have)) {
			/* the entries: their cost is theirs */
		} else if (ctl_state_snapshot(&c->st, &sb) == 0) {
			rn_kw_int64(&w, (int64_t)c->st.last_index);
			if (ver >= 1)
				rn_kw_int8(&w, 0);
			rn_kw_int32(&w, (int32_t)sb.size);
			rn_kw_raw(&w, sb.data, sb.size);
		} else {
			w.err = -ENOMEM;
		}
	}
	rn_kw_frame_end(&w, mark);
	if (w.err == 0)
		conn_write(s, w.buf, w.len);
	rn_kwriter_free(&w);
	msgpack_sbuffer_destroy(&sb);
}

void
ctl_server_image_poll(struct ctl *c, bool flush)
{
	struct img_wait **pp, *wt;
	int64_t now = rn_now_ms();

	if (c->server == NULL)
		return;
	pp = &c->server->waits;
	while ((wt = *pp) != NULL) {
		struct sconn *s = conn_find(c, wt->conn_id);

		if (s != NULL && !flush && now < wt->deadline_ms &&
		    (int64_t)c->st.last_index <= wt->have) {
			pp = &wt->next;
			continue;
		}
		*pp = wt->next;
		if (s != NULL)
			image_answer(c, s, wt->corr, wt->ver, wt->have);
		free(wt);
	}
}

static void
image_request(struct ctl *c, struct sconn *s, int32_t corr, int16_t ver,
    struct rn_kreader *r)
{
	int64_t have = rn_kr_int64(r);
	int32_t wait = rn_kr_int32(r);
	struct img_wait *wt;

	if (r->err != 0 || ver < 0 || ver > 1) {
		conn_close(s);
		return;
	}
	if (!can_serve_image(c) || (int64_t)c->st.last_index > have ||
	    wait <= 0 || (wt = calloc(1, sizeof(*wt))) == NULL) {
		image_answer(c, s, corr, ver, have);
		return;
	}
	wt->conn_id = s->id;
	wt->corr = corr;
	wt->ver = ver;
	wt->have = have;
	wt->deadline_ms = rn_now_ms() + (wait < SRV_MAX_WAIT_MS ? wait :
	    SRV_MAX_WAIT_MS);
	wt->next = c->server->waits;
	c->server->waits = wt;
}

/* ---- requests ------------------------------------------------------- */

static void
handle_frame(struct sconn *s, const uint8_t *p, size_t n)
{
	struct ctl *c = s->c;
	struct rn_krequest_header h;
	struct rn_kreader r;
	int16_t key;
	int rc;

	if (n < 8) {
		conn_close(s);
		return;
	}
	key = (int16_t)((p[0] << 8) | p[1]);
	rn_kreader_init(&r, p, n);
	if (key == CTL_API_FORWARD || key == CTL_API_IMAGE)
		rc = rn_krequest_header_decode_v(&r, 1, &h);
	else
		rc = rn_krequest_header_decode(&r, &h);
	if (rc != 0) {
		log_warnx("controller listener: API key %d: not a request "
		    "served here: closing the connection", key);
		conn_close(s);
		return;
	}
	switch (key) {
	case CTL_API_FORWARD: {
		int16_t ikey = rn_kr_int16(&r), iver = rn_kr_int16(&r);

		if (r.err != 0) {
			conn_close(s);
			return;
		}
		rc = ctl_admin_enqueue_conn(c, s->id, h.correlation_id, ikey,
		    iver, true, r.p, rn_kr_left(&r));
		break;
	}
	case CTL_API_IMAGE:
		image_request(c, s, h.correlation_id, h.api_version, &r);
		return;
	case RN_KAPI_BROKER_REGISTRATION:
	case RN_KAPI_BROKER_HEARTBEAT:
	case RN_KAPI_ALTER_PARTITION:
	case RN_KAPI_UNREGISTER_BROKER: /* kafka-cluster --bootstrap-controller */
	case RN_KAPI_ASSIGN_REPLICAS_TO_DIRS:
		rc = ctl_admin_enqueue_conn(c, s->id, h.correlation_id, key,
		    h.api_version, false, r.p, rn_kr_left(&r));
		break;
	default:
		log_info("controller listener: API key %d is not served "
		    "here: closing the connection", key);
		conn_close(s);
		return;
	}
	if (rc != 0)
		conn_close(s);
}

static void
conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct sconn *s = h->data;
	uint8_t *base;

	(void)suggested;
	rn_kfb_room(&s->in, &base, &buf->len);
	buf->base = (char *)base;
}

static void
conn_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct sconn *s = st->data;
	int32_t max = (int32_t)(s->c->cfg->socket_request_max_bytes > 0 &&
	    s->c->cfg->socket_request_max_bytes < INT32_MAX ?
	    s->c->cfg->socket_request_max_bytes : 104857600);
	const uint8_t *frame;
	size_t off = 0, size;
	int rc = 0;

	(void)buf;
	if (nread < 0) {
		conn_close(s);
		return;
	}
	s->in.len += (size_t)nread;
	while (!s->closing && (rc = rn_kfb_next(&s->in, &off, max, &frame,
	    &size)) == 1)
		handle_frame(s, frame, size);
	if (rc < 0) {
		log_warnx("controller listener: bad frame size: closing "
		    "the connection");
		conn_close(s);
		return;
	}
	if (s->closing)
		return;
	rn_kfb_consume(&s->in, off);
}

static void
tcp_free(uv_handle_t *h)
{
	raft_free(h);
}

static void
on_kafka_conn(void *arg, uv_tcp_t *tcp, const uint8_t *head, size_t n)
{
	struct ctl *c = arg;
	struct sconn *s = calloc(1, sizeof(*s));

	if (s == NULL || c->stopping || (s->in.buf = malloc(n > 65536 ? n :
	    65536)) == NULL) {
		free(s);
		tcp->data = NULL;
		uv_close((uv_handle_t *)tcp, tcp_free);
		return;
	}
	s->c = c;
	s->tcp = tcp;
	s->id = ++c->server->next_id;
	s->in.cap = n > 65536 ? n : 65536;
	memcpy(s->in.buf, head, n);
	s->in.len = 0;
	tcp->data = s;
	s->next = c->server->conns;
	if (s->next != NULL)
		s->next->prev = s;
	c->server->conns = s;
	/* the bytes the transport already read go through the parser */
	conn_read((uv_stream_t *)tcp, (ssize_t)n, NULL);
	if (!s->closing && uv_read_start((uv_stream_t *)tcp, conn_alloc,
	    conn_read) != 0)
		conn_close(s);
}

void
ctl_server_init(struct ctl *c)
{
	if ((c->server = calloc(1, sizeof(*c->server))) == NULL)
		fatal("out of memory");
	ctl_transport_set_kafka_cb(&c->transport, on_kafka_conn, c);
}

void
ctl_server_close(struct ctl *c)
{
	struct img_wait *wt;

	if (c->server == NULL)
		return;
	while (c->server->conns != NULL)
		conn_close(c->server->conns);
	while ((wt = c->server->waits) != NULL) {
		c->server->waits = wt->next;
		free(wt);
	}
}
