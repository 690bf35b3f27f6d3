/*
 * Client connections of a network worker: bounded framing on input, an
 * ordered queue of responses on output sent with writev() and, for record
 * data, sendfile() straight from the segment files. On a TLS listener the
 * same goes through tls.c, after its handshake.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/network/net_int.h"

#define RBUF_MIN (64 * 1024)
/* before authentication a buffer starts small: a flood of idle logins
 * costs little each */
#define RBUF_PREAUTH (4 * 1024)
/* A drop of this many connections from their peak gives the heap back. */
#define TRIM_DROP 256
#define TRIM_EVERY_MS 2000
/* Stop taking requests from a client that does not read its responses. */
#define OUT_MAX_PENDING 4

static unsigned out_count(const struct conn *c);

/* Off n->parked, and idle. */
static void
conn_unpark(struct net *n, struct conn *c)
{
	if (c->wait == CONN_IDLE)
		return;
	if (c->prev_parked != NULL)
		c->prev_parked->next_parked = c->next_parked;
	else
		n->parked = c->next_parked;
	if (c->next_parked != NULL)
		c->next_parked->prev_parked = c->prev_parked;
	c->next_parked = c->prev_parked = NULL;
	c->wait = CONN_IDLE;
}

bool
net_conn_wants_input(const struct conn *c)
{
	return c->fd >= 0 && c->wait == CONN_IDLE && !c->closing &&
	    c->mute_until_ms == 0 && out_count(c) < OUT_MAX_PENDING;
}

static void
conn_epoll(struct net *n, struct conn *c)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLRDHUP;
	/* read only while requests can be taken: a parked request points
	 * into the buffer, which must not move */
	if (c->wait == CONN_IDLE && !c->closing && c->mute_until_ms == 0 &&
	    out_count(c) < OUT_MAX_PENDING)
		ev.events |= EPOLLIN;
	if (c->want_write)
		ev.events |= EPOLLOUT;
	/* a TLS handshake goes both ways, whatever else waits */
	if (c->ssl != NULL && !c->tls_done)
		ev.events = EPOLLRDHUP | (net_tls_wants_write(c) ? EPOLLOUT :
		    EPOLLIN);
	/* a syscall per request otherwise */
	if (ev.events == c->ep_events)
		return;
	c->ep_events = ev.events;
	ev.data.ptr = c;
	epoll_ctl(n->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

void
net_out_free(struct net *n, struct net_out *o)
{
	int i;

	(void)n;
	for (i = 0; i < o->n_slices; i++)
		/* the slice holds its segment even if the log was closed */
		if (o->slice_parts[i] != NULL)
			rn_log_slice_release(o->slice_parts[i]->log,
			    &o->slices[i]);
	free(o->slices);
	free(o->slice_parts);
	free(o->chunks);
	rn_kwriter_free(&o->w);
	free(o);
}

struct conn *
net_conn_new(struct net *n, int fd, int listener,
    const struct net_connlim_ticket *lim)
{
	const struct rn_listen_sec *sec = &n->w->env->sec[listener];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct epoll_event ev;
	struct conn *c;
	int one = 1;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	c->fd = fd;
	c->id = ++n->next_conn_id;
	c->listener = listener;
	c->active_ms = rn_now_ms();
	c->sasl = sec->sasl;
	c->authed = sec->ssl_ctx == NULL && sec->sasl == NULL;
	strlcpy(c->principal, "User:ANONYMOUS", sizeof(c->principal));
	if (!c->authed)
		c->auth_deadline_ms = rn_now_ms() + NET_TLS_HANDSHAKE_MS;
	if (c->auth_deadline_ms != 0)
		net_deadline_soon(n, c->auth_deadline_ms);
	if (n->lim.idle_ms > 0)
		net_deadline_soon(n, c->active_ms + n->lim.idle_ms);
	rn_arena_init(&c->arena, 0);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		char host[48] = "?";
		int port = 0;
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
			port = ntohs(in6->sin6_port);
		}
		snprintf(c->peer, sizeof(c->peer), "%s:%d", host, port);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (sec->ssl_ctx != NULL && net_tls_start(n, c, sec->ssl_ctx) != 0) {
		free(c);
		return NULL;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLRDHUP;
	c->ep_events = ev.events;
	ev.data.ptr = c;
	if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, fd, &ev) == -1) {
		net_tls_free(c);
		free(c);
		return NULL;
	}
	/* counted from here: released by net_conn_close */
	c->lim = *lim;
	c->next_all = n->conns;
	if (n->conns)
		n->conns->prev_all = c;
	n->conns = c;
	n->n_conns++;
	if (n->n_conns > n->conns_peak)
		n->conns_peak = n->n_conns;
	net_count_conns(n);
	return c;
}

void
net_conn_close(struct net *n, struct conn *c, const char *why)
{
	struct net_out *o, *next;

	if (why != NULL)
		log_debug("closing connection %llu from %s: %s",
		    (unsigned long long)c->id, c->peer, why);
	if (c->fd < 0)
		return;
	epoll_ctl(n->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	net_tls_free(c);
	net_fsess_free(n, c);
	close(c->fd);
	c->fd = -1;
	net_connlim_release(n, &c->lim);
	conn_unpark(n, c);
	for (o = c->out_head; o; o = next) {
		next = o->next;
		net_out_free(n, o);
	}
	c->out_head = c->out_tail = NULL;
	if (c->prev_all)
		c->prev_all->next_all = c->next_all;
	else
		n->conns = c->next_all;
	if (c->next_all)
		c->next_all->prev_all = c->prev_all;
	n->n_conns--;
	net_count_conns(n);
	/* later events of this round may still name it: free it after them */
	c->next_all = n->dead;
	n->dead = c;
}

void
net_conn_reap(struct net *n)
{
	struct conn *c;

	while ((c = n->dead) != NULL) {
		n->dead = c->next_all;
		rn_arena_free(&c->arena);
		net_scram_free(c);
		free(c->rbuf);
		free(c->watch);
		free(c);
	}
#ifdef __GLIBC__
	/*
	 * Hundreds of connections gone (a flood of strangers over): give
	 * back the heap their structs and buffers grew, or the worker keeps
	 * the flood's peak resident. glibc keeps freed chunks for reuse and
	 * returns only the heap's top, which a live connection may pin.
	 */
	if (n->conns_peak >= n->n_conns + TRIM_DROP &&
	    n->now_ms - n->trimmed_ms >= TRIM_EVERY_MS) {
		malloc_trim(0);
		n->trimmed_ms = n->now_ms;
		n->conns_peak = n->n_conns;
	}
#endif
}

static unsigned
out_count(const struct conn *c)
{
	unsigned k = 0;

	for (const struct net_out *o = c->out_head; o; o = o->next)
		k++;
	return k;
}

/* Send as much queued output as the socket takes. -1: connection broken. */
static int
conn_flush(struct net *n, struct conn *c)
{
	struct iovec iov[64];

	while (c->out_head != NULL) {
		struct net_out *o = c->out_head;

		while (o->cur < o->n_chunks) {
			struct rn_kchunk *ch = &o->chunks[o->cur];
			ssize_t k;

			if (ch->fd >= 0) {
				off_t pos = (off_t)(ch->file_pos + (int64_t)o->cur_off);
				k = c->ssl != NULL ? net_tls_sendfile(n, c, ch->fd,
				    pos, ch->len - o->cur_off) :
				    sendfile(c->fd, ch->fd, &pos, ch->len - o->cur_off);
				if (k == 0) {
					/* the file got shorter (truncation or
					 * retention): the frame cannot be
					 * completed, so the client must reconnect */
					return -1;
				}
			} else {
				int niov = 0, i;

				for (i = o->cur; i < o->n_chunks && niov < 64 &&
				    o->chunks[i].fd < 0; i++) {
					size_t skip = i == o->cur ? o->cur_off : 0;
					iov[niov].iov_base = (char *)o->chunks[i].ptr + skip;
					iov[niov].iov_len = o->chunks[i].len - skip;
					niov++;
				}
				k = c->ssl != NULL ? net_tls_writev(n, c, iov, niov) :
				    writev(c->fd, iov, niov);
			}
			if (k == -1) {
				if (errno == EAGAIN || errno == EINTR) {
					if (!c->want_write) {
						c->want_write = true;
						conn_epoll(n, c);
					}
					return 0;
				}
				return -1;
			}
			/* advance over what was written */
			size_t left = (size_t)k;

			c->active_ms = n->now_ms;
			while (left > 0 && o->cur < o->n_chunks) {
				size_t rest = o->chunks[o->cur].len - o->cur_off;
				if (left >= rest) {
					left -= rest;
					o->cur++;
					o->cur_off = 0;
				} else {
					o->cur_off += left;
					left = 0;
				}
			}
			/* skip empty chunks */
			while (o->cur < o->n_chunks && o->chunks[o->cur].len == 0)
				o->cur++;
		}
		c->out_head = o->next;
		if (c->out_head == NULL)
			c->out_tail = NULL;
		if (o->ready_us != 0) {
			int64_t now = rn_now_us();

			if (o->met_api == RN_MET_API_PRODUCE) {
				net_stage(n, RN_STAGE_SEND, now - o->queued_us);
				net_stage(n, RN_STAGE_TOTAL, now - o->ready_us);
			}
			net_request_timed(n, o->met_api, o->ready_us,
			    o->start_us, o->park_us, o->queued_us, now);
		}
		net_out_free(n, o);
	}
	/* nothing left to send: idle from here, maybe */
	if (n->lim.idle_ms > 0)
		net_deadline_soon(n, c->active_ms + n->lim.idle_ms);
	if (c->want_write) {
		c->want_write = false;
		conn_epoll(n, c);
	}
	return 0;
}

void
net_conn_queue(struct net *n, struct conn *c, struct net_out *o)
{
	o->next = NULL;
	if (c->out_tail)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	if (!c->want_write && conn_flush(n, c) == -1) {
		/* the peer is gone: nothing queued can be delivered */
		struct net_out *next;

		for (o = c->out_head; o; o = next) {
			next = o->next;
			net_out_free(n, o);
		}
		c->out_head = c->out_tail = NULL;
		c->closing = true;
	}
}

/*
 * Drive a TLS handshake on; true once it is done (the connection then
 * goes on as any other), false while it waits or after it failed (the
 * connection is closed then).
 */
static bool
conn_tls_handshake(struct net *n, struct conn *c)
{
	int rc;

	if (c->ssl == NULL || c->tls_done)
		return true;
	if ((rc = net_tls_handshake(n, c)) < 0) {
		net_conn_close(n, c, "TLS handshake failed");
		return false;
	}
	if (rc == 1 && c->sasl == NULL) {
		/* a TLS listener: the handshake is the authentication */
		c->authed = true;
		c->auth_deadline_ms = 0;
	}
	conn_epoll(n, c);
	return rc == 1;
}

void
net_conn_writable(struct net *n, struct conn *c)
{
	if (!conn_tls_handshake(n, c))
		return;
	if (conn_flush(n, c) == -1) {
		net_conn_close(n, c, "write failed");
		return;
	}
	if (c->closing && c->out_head == NULL) {
		net_conn_close(n, c, NULL);
		return;
	}
	/* output drained: requests held back by backpressure may go on */
	if (c->wait == CONN_IDLE)
		net_conn_process(n, c);
}

/* Drop handled frames from the front of the buffer. */
static void
conn_compact(struct conn *c)
{
	if (c->frame_off == 0)
		return;
	memmove(c->rbuf, c->rbuf + c->frame_off, c->rlen - c->frame_off);
	c->rlen -= c->frame_off;
	c->rx_from = c->rx_from > c->frame_off ? c->rx_from - c->frame_off : 0;
	c->frame_off = 0;
}

bool
net_lograte_ok(struct net_lograte *r, int64_t now, unsigned *unsaid)
{
	if (r->logged_ms != 0 && now - r->logged_ms < NET_LOGRATE_MS) {
		r->unsaid++;
		return false;
	}
	*unsaid = r->unsaid;
	r->logged_ms = now;
	r->unsaid = 0;
	return true;
}

/*
 * A frame size out of bounds: logged, but before authentication at most
 * once per 10 s (with how many went unsaid), or a flood of strangers
 * would fill the log.
 */
static void
conn_log_size(struct net *n, struct conn *c)
{
	int size = (int)ntohl(*(uint32_t *)(c->rbuf + c->frame_off));
	unsigned unsaid;

	if (c->authed) {
		log_warnx("connection from %s: frame size %d outside [0, "
		    "socket.request.max.bytes]: closing", c->peer, size);
		return;
	}
	if (!net_lograte_ok(&n->log_preauth_size, n->now_ms, &unsaid))
		return;
	log_warnx("connection from %s: frame size %d outside [0, "
	    "sasl.server.max.receive.size], before authentication: closing "
	    "(%u more such closes not logged)", c->peer, size, unsaid);
}

void
net_conn_process(struct net *n, struct conn *c)
{
	int32_t size;

	if (c->fd < 0)
		return;
	while (c->wait == CONN_IDLE && !c->closing && c->mute_until_ms == 0 &&
	    out_count(c) < OUT_MAX_PENDING) {
		if (c->rlen - c->frame_off < 4)
			break;
		size = rn_kframe_size(c->rbuf + c->frame_off,
		    (int32_t)(c->authed ? n->cfg->socket_request_max_bytes :
		    n->preauth_max));
		if (size < 0) {
			conn_log_size(n, c);
			c->closing = true;
			break;
		}
		if (c->rlen - c->frame_off - 4 < (size_t)size)
			break;
		c->frame_len = (size_t)size;
		if (!n->dispatch(n, c)) {
			c->closing = true;
			break;
		}
		if (c->wait != CONN_IDLE) {
			/* parked: resumes in net_conn_request_done; stop
			 * polling for input meanwhile, or a client's next
			 * pipelined request wakes epoll in a spin */
			conn_epoll(n, c);
			return;
		}
		c->frame_off += 4 + c->frame_len;
		c->frame_len = 0;
	}
	if (c->wait == CONN_IDLE)
		conn_compact(c);
	if (c->closing && c->out_head == NULL) {
		net_conn_close(n, c, "protocol error");
		return;
	}
	/* decrypted bytes epoll cannot see: the deadline pass reads them
	 * at the next turn */
	if (net_tls_pending(c) && net_conn_wants_input(c))
		net_deadline_soon(n, n->now_ms);
	conn_epoll(n, c);
}

void
net_deadline_soon(struct net *n, int64_t at_ms)
{
	if (at_ms < n->scan_at_ms)
		n->scan_at_ms = at_ms;
}

void
net_conn_park(struct net *n, struct conn *c, enum conn_wait wait,
    int64_t deadline_ms)
{
	if (c->wait == CONN_IDLE) {
		c->prev_parked = NULL;
		c->next_parked = n->parked;
		if (n->parked != NULL)
			n->parked->prev_parked = c;
		n->parked = c;
	}
	c->wait = wait;
	c->deadline_ms = deadline_ms;
	net_deadline_soon(n, deadline_ms);
}

void
net_conn_request_done(struct net *n, struct conn *c)
{
	/* a login's deadline is looked at only while nothing is parked;
	 * an idle one's from its last byte */
	if (c->auth_deadline_ms != 0)
		net_deadline_soon(n, c->auth_deadline_ms);
	if (n->lim.idle_ms > 0)
		net_deadline_soon(n, c->active_ms + n->lim.idle_ms);
	conn_unpark(n, c);
	c->frame_off += 4 + c->frame_len;
	c->frame_len = 0;
	net_conn_process(n, c);
}

void
net_conn_readable(struct net *n, struct conn *c)
{
	size_t from = c->rlen;

	if (!conn_tls_handshake(n, c))
		return;
	for (;;) {
		ssize_t k;

		if (c->rlen == c->rcap) {
			/* grow with what actually arrives, never to a
			 * size a frame prefix merely claims; before
			 * authentication, to a bound Kafka has too */
			size_t ncap = c->rcap ? c->rcap * 2 :
			    c->authed ? RBUF_MIN : RBUF_PREAUTH;
			size_t max = (size_t)(c->authed ?
			    n->cfg->socket_request_max_bytes : n->preauth_max) +
			    4 + RBUF_MIN;
			uint8_t *nb;

			if (ncap > max)
				ncap = max;
			if (ncap <= c->rcap) {
				/* full of frames we have not handled yet */
				break;
			}
			if ((nb = realloc(c->rbuf, ncap)) == NULL) {
				net_conn_close(n, c, "out of memory");
				return;
			}
			c->rbuf = nb;
			c->rcap = ncap;
		}
		k = c->ssl != NULL ? net_tls_read(c, c->rbuf + c->rlen,
		    c->rcap - c->rlen) :
		    read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
		if (k == 0) {
			net_conn_close(n, c, "peer closed");
			return;
		}
		if (k == -1) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			net_conn_close(n, c, strerror(errno));
			return;
		}
		c->rlen += (size_t)k;
		/* TLS hands out a record at a time: read on to EAGAIN */
		if (c->rlen < c->rcap && c->ssl == NULL)
			break;
	}
	if (c->rlen > from) {
		c->active_ms = n->now_ms;
		c->prev_rx_us = c->rx_us;
		c->rx_us = rn_now_us();
		c->rx_from = from;
	}
	net_conn_process(n, c);
}
