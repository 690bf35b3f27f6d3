/*
 * A network worker: one of num.network.threads processes serving the
 * Kafka protocol on the broker listeners, which it inherits from the
 * supervisor already bound. All workers accept on the same sockets
 * (EPOLLEXCLUSIVE wakes one of them per connection).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/net.h"

#define MAX_EVENTS 128

/* epoll tags for what is not a connection */
static char tag_listener[RN_CONFIG_MAX_LISTENERS];
static char tag_wakeup;

static void
net_accept(struct net *n, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd == -1) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("accept");
			return;
		}
		if (net_conn_new(n, fd) == NULL) {
			log_warnx("cannot take a connection: out of memory");
			close(fd);
		}
	}
}

/* Parked requests whose time is up, and the nearest deadline left. */
static int64_t
net_deadlines(struct net *n, int64_t now)
{
	int64_t next = now + RN_WORKER_HEARTBEAT_MS;
	struct conn *c, *nc;

	for (c = n->conns; c != NULL; c = nc) {
		nc = c->next_all;
		if (c->wait == CONN_IDLE)
			continue;
		if (c->deadline_ms <= now) {
			if (c->wait == CONN_WAIT_FETCH)
				net_fetch_recheck(n, c, true);
			else if (c->wait == CONN_WAIT_ACKS)
				net_produce_recheck(n, c, true);
			else {
				log_warnx("%s: no answer from the controller "
				    "in time: closing", c->peer);
				net_conn_close(n, c, "controller timeout");
			}
		} else if (c->deadline_ms < next)
			next = c->deadline_ms;
	}
	return next;
}

/* Something was appended somewhere: parked fetches look again. */
static void
net_wakeup(struct net *n)
{
	struct conn *c, *nc;
	bool any = false;

	for (c = n->conns; c != NULL; c = nc) {
		nc = c->next_all;
		if (c->wait == CONN_WAIT_FETCH) {
			net_fetch_recheck(n, c, false);
			any = any || c->wait == CONN_WAIT_FETCH;
		} else if (c->wait == CONN_WAIT_ACKS) {
			net_produce_recheck(n, c, false);
			any = any || c->wait == CONN_WAIT_ACKS;
		}
	}
	if (!any)
		rn_part_clear_waiters(&n->parts, n->w->index);
}

static int
net_setup(struct net *n, struct rn_worker *w)
{
	const struct rn_worker_env *env = w->env;
	struct epoll_event ev;
	unsigned i;
	int l;

	memset(n, 0, sizeof(*n));
	n->w = w;
	n->cfg = env->cfg;
	n->efd = env->efd[w->slot];
	for (i = 0; i < env->n_network && i < 64; i++)
		n->fetch_efds[i] = env->efd[rn_worker_slot_of(env,
		    RN_ROLE_W_NETWORK, i)];
	if ((n->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return -errno;
	for (l = 0; l < env->n_listen; l++) {
		if (env->listen[l].controller)
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLIN | EPOLLEXCLUSIVE;
		ev.data.ptr = &tag_listener[l];
		if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, env->listen[l].fd,
		    &ev) == -1)
			return -errno;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &tag_wakeup;
	if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, n->efd, &ev) == -1)
		return -errno;
	if (net_apis_init(n) != 0 ||
	    rn_part_table_init(&n->parts, env->shm, env->cfg) != 0)
		return -ENOMEM;
	n->parts.w = w;
	rn_mdview_init(&n->view);
	return 0;
}

/*
 * Retention and time-based flushing for every local partition. One worker
 * (index 0) does it, so two never race for the same deletions.
 */
static void
net_housekeeping(struct net *n, int64_t now)
{
	const struct rn_mdview *v = &n->view;
	int i, j;

	if (n->w->index != 0)
		return;
	if (now >= n->next_isr_check_ms) {
		n->next_isr_check_ms = now + 1000;
		net_isr_housekeeping(n, now);
	}
	if (now >= n->next_hw_checkpoint_ms) {
		/* Kafka's replica.high.watermark.checkpoint.interval.ms: 5 s */
		n->next_hw_checkpoint_ms = now + 5000;
		rn_part_checkpoint_hw(&n->parts, &n->view);
	}
	if (now < n->next_retention_ms)
		return;
	n->next_retention_ms = now + n->cfg->log_retention_check_interval_ms;
	for (i = 0; i < v->n_topics; i++) {
		const struct rn_mdv_topic *t = &v->topics[i];

		for (j = 0; j < t->n_parts; j++) {
			const struct rn_mdv_partition *mp = &t->parts[j];
			struct rn_part *p;
			int16_t kerr;
			int deleted;

			if (mp->slot < 0 ||
			    (p = rn_part_get(&n->parts, v, t, mp, &kerr)) == NULL)
				continue;
			if (rn_part_lock(p) != 0)
				continue;
			deleted = rn_log_retention(p->log, rn_wallclock_ms());
			rn_part_unlock(p);
			if (deleted > 0)
				log_info("%s-%d: retention deleted %d segments",
				    t->name, mp->p, deleted);
		}
	}
}

int
rn_network_main(struct rn_worker *w)
{
	struct epoll_event evs[MAX_EVENTS];
	struct rn_ring *in;
	struct net n;
	int i, k, rc;

	if ((rc = net_setup(&n, w)) != 0) {
		log_errx("network worker setup failed: %s", strerror(-rc));
		return RN_WORKER_EXIT_RESTART;
	}
	in = rn_shm_ring_from_ctl(w->env->shm, w->slot);
	rn_mdview_refresh(&n.view, w->env->shm);
	if (rn_worker_send_hello(w) != 0)
		log_warnx("cannot reach the controller yet");
	rn_worker_heartbeat(w);
	log_info("network worker up");

	while (!rn_worker_should_stop()) {
		int64_t now = rn_now_ms(), next;
		int timeout;

		/* a new image may settle parked requests (ISR, leader moved) */
		if (rn_mdview_refresh(&n.view, w->env->shm) == 1)
			net_wakeup(&n);
		next = net_deadlines(&n, now);
		net_housekeeping(&n, now);
		rn_ring_consumer_sleeping(in, true);
		if (net_admin_drain(&n) != 0) {
			log_errx("bad message from the controller: restarting");
			return RN_WORKER_EXIT_RESTART;
		}
		timeout = (int)(next - now);
		if (timeout < 0)
			timeout = 0;
		k = epoll_wait(n.epfd, evs, MAX_EVENTS, timeout);
		rn_ring_consumer_sleeping(in, false);
		for (i = 0; i < k; i++) {
			void *p = evs[i].data.ptr;

			if (p == &tag_wakeup) {
				uint64_t v;

				(void)read(n.efd, &v, sizeof(v));
				rn_mdview_refresh(&n.view, w->env->shm);
				net_wakeup(&n);
				continue;
			}
			if (p >= (void *)tag_listener &&
			    p < (void *)(tag_listener + RN_CONFIG_MAX_LISTENERS)) {
				int l = (int)((char *)p - tag_listener);
				net_accept(&n, w->env->listen[l].fd);
				continue;
			}
			struct conn *c = p;
			if (c->fd < 0)
				continue;
			if (c->wait != CONN_IDLE) {
				/* a parked request points into its buffer:
				 * no reading until it is answered */
				if (evs[i].events & (EPOLLRDHUP | EPOLLHUP |
				    EPOLLERR))
					net_conn_close(&n, c, "hang-up");
				else if (evs[i].events & EPOLLOUT)
					net_conn_writable(&n, c);
				continue;
			}
			if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
				net_conn_close(&n, c, "hang-up");
				continue;
			}
			if (evs[i].events & EPOLLOUT)
				net_conn_writable(&n, c);
			if (c->fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLRDHUP)))
				net_conn_readable(&n, c);
		}
		net_conn_reap(&n);
		if (rn_now_ms() >= w->next_heartbeat_ms)
			rn_worker_heartbeat(w);
	}
	log_info("network worker stopping: %u connections", n.n_conns);
	while (n.conns != NULL)
		net_conn_close(&n, n.conns, NULL);
	net_conn_reap(&n);
	rn_part_table_close(&n.parts);
	return RN_WORKER_EXIT_OK;
}
