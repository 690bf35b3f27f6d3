/* Messages of any size over a ring (see ringq.h). */
#include "ipc/ringq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/msgtypes.h"

struct rn_ringq_msg {
	struct rn_ringq_msg *next;
	size_t len, off;         /* bytes, bytes already pushed */
	pid_t dest;
	uint16_t type;
	uint8_t data[];
};

static void
put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t
get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Push as much of m as fits: 1 when all of it is in the ring. */
static int
push_msg(struct rn_ring *r, struct rn_ringq_msg *m)
{
	uint8_t *frag;
	size_t chunk = rn_ring_max_payload(r) - RN_RINGQ_FRAG_HDR;
	int rc;

	if (m->len <= rn_ring_max_payload(r)) {
		rc = rn_ring_push(r, m->type, m->data, (uint32_t)m->len);
		return rc == 0 ? 1 : rc;
	}
	if ((frag = malloc(chunk + RN_RINGQ_FRAG_HDR)) == NULL)
		return -ENOMEM;
	for (rc = 0; m->off < m->len; ) {
		size_t n = m->len - m->off < chunk ? m->len - m->off : chunk;
		uint16_t t = m->type, zero = 0;

		put32(frag, (uint32_t)m->len);
		put32(frag + 4, (uint32_t)m->off);
		memcpy(frag + 8, &t, 2);
		memcpy(frag + 10, &zero, 2);
		memcpy(frag + RN_RINGQ_FRAG_HDR, m->data + m->off, n);
		if ((rc = rn_ring_push(r, RN_IPC_FRAGMENT, frag,
		    (uint32_t)(n + RN_RINGQ_FRAG_HDR))) != 0)
			break;
		m->off += n;
	}
	free(frag);
	return m->off == m->len ? 1 : rc;
}

int
rn_ringq_send(struct rn_ringq *q, struct rn_ring *r, uint16_t type,
    const void *buf, size_t len, pid_t dest)
{
	struct rn_ringq_msg *m;
	int rc;

	if (len > UINT32_MAX - RN_RINGQ_FRAG_HDR)
		return -EMSGSIZE;
	/* the common case: nothing waiting, and it fits a frame */
	if (q->head == NULL && len <= rn_ring_max_payload(r) &&
	    (rc = rn_ring_push(r, type, buf, (uint32_t)len)) != -EAGAIN)
		return rc;
	if ((m = malloc(sizeof(*m) + (len ? len : 1))) == NULL)
		return -ENOMEM;
	m->next = NULL;
	m->len = len;
	m->off = 0;
	m->dest = dest;
	m->type = type;
	memcpy(m->data, buf, len);
	if (q->tail != NULL)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	q->bytes += len;
	rc = rn_ringq_pump(q, r, dest);
	return rc < 0 && rc != -EAGAIN ? rc : 0;
}

int
rn_ringq_pump(struct rn_ringq *q, struct rn_ring *r, pid_t dest_now)
{
	struct rn_ringq_msg *m;
	int rc, moved = 0;

	while ((m = q->head) != NULL) {
		size_t before = m->off;

		/* never hand a half-sent or stale message to a newcomer */
		if (m->dest != 0 && m->dest != dest_now)
			rc = 1;
		else if ((rc = push_msg(r, m)) < 0) {
			if (m->off != before)
				moved = 1;
			return rc == -EAGAIN ? moved : rc;
		}
		moved = 1;
		q->head = m->next;
		if (q->head == NULL)
			q->tail = NULL;
		q->bytes -= m->len;
		free(m);
	}
	return moved;
}

bool
rn_ringq_pending(const struct rn_ringq *q)
{
	return q->head != NULL;
}

void
rn_ringq_clear(struct rn_ringq *q)
{
	struct rn_ringq_msg *m;

	while ((m = q->head) != NULL) {
		q->head = m->next;
		free(m);
	}
	q->tail = NULL;
	q->bytes = 0;
}

int
rn_ringq_take(struct rn_ringq_in *in, pid_t sender, const void *frag,
    size_t len, size_t max)
{
	const uint8_t *p = frag;
	size_t total, off, n;
	uint16_t type;

	if (len < RN_RINGQ_FRAG_HDR)
		return -EBADMSG;
	total = get32(p);
	off = get32(p + 4);
	memcpy(&type, p + 8, 2);
	n = len - RN_RINGQ_FRAG_HDR;
	if (off == 0) {
		/* a new message: whatever was pending will never finish */
		rn_ringq_in_done(in);
		if (total > max)
			return -EMSGSIZE;
		if ((in->buf = malloc(total ? total : 1)) == NULL)
			return -ENOMEM;
		in->total = total;
		in->type = type;
		in->sender = sender;
	} else if (in->buf == NULL || off != in->len ||
	    total != in->total || type != in->type || sender != in->sender) {
		rn_ringq_in_done(in);
		return -EBADMSG;
	}
	if (n > in->total - in->len) {
		rn_ringq_in_done(in);
		return -EBADMSG;
	}
	memcpy(in->buf + in->len, p + RN_RINGQ_FRAG_HDR, n);
	in->len += n;
	return in->len == in->total ? 1 : 0;
}

void
rn_ringq_in_done(struct rn_ringq_in *in)
{
	free(in->buf);
	in->buf = NULL;
	in->len = in->total = 0;
}
