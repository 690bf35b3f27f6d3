/*
 * A network worker: one of num.network.threads processes serving the
 * Kafka protocol on the broker listeners, which it inherits from the
 * supervisor already bound. All workers accept on the same sockets
 * (EPOLLEXCLUSIVE wakes one of them per connection).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/network/net_int.h"
#include "workers/network/network.h"

#define MAX_EVENTS 128
#define ACCEPT_PAUSE_MS 200
/*
 * The storage duty's passes over every local partition go a step per
 * turn, this long at most, between the turn's requests: at 100,000
 * partitions a whole pass is 10-30 ms, which every client of the worker
 * would otherwise wait out.
 */
#define DUTY_STEP_US 1000
/* How soon after a roll its segment is synced and the recovery point moves */
#define FLUSH_PASS_EVERY_MS 1000
#define NET_DRAIN_MS 5000    /* a stopping worker's wait for in-flight requests */

/* epoll tags for what is not a connection */
static char tag_listener[RN_CONFIG_MAX_LISTENERS];
static char tag_wakeup;

/* Watch (or stop watching) one client listener (env index); idempotent. */
static int
net_listen_one(struct net *n, int l, bool on)
{
	struct epoll_event ev;

	if (n->w->env->listen[l].controller || n->lwatched[l] == on)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLEXCLUSIVE;
	ev.data.ptr = &tag_listener[l];
	if (epoll_ctl(n->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL,
	    n->w->env->listen[l].fd, &ev) == -1)
		return -errno;
	n->lwatched[l] = on;
	return 0;
}

/*
 * Watch (or stop watching) the client listeners; one paused by a
 * connection limit stays unwatched until its time (net_wait_ms).
 */
static int
net_listen(struct net *n, bool on)
{
	int l, rc;

	for (l = 0; l < n->w->env->n_listen; l++)
		if ((rc = net_listen_one(n, l, on &&
		    n->lpause_ms[l] == 0)) != 0)
			return rc;
	return 0;
}

static void
net_accept(struct net *n, int l)
{
	int lfd = n->w->env->listen[l].fd;
	int listener = n->w->env->listen[l].listener;

	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct net_connlim_ticket tk;
		int64_t wait;
		int fd;

		if ((wait = net_connlim_admit_wait(n, listener)) > 0) {
			/*
			 * At max.connections or over a creation rate: as
			 * Kafka's acceptor, take no more for now; clients
			 * wait in the backlog, no connection is touched.
			 */
			if (net_listen_one(n, l, false) == 0)
				n->lpause_ms[l] = rn_now_ms() + wait;
			return;
		}
		fd = accept4(lfd, (struct sockaddr *)&ss, &sl,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1 && (errno == EMFILE || errno == ENFILE)) {
			/*
			 * Out of descriptors (each partition served holds a
			 * few): the pending connection would keep the listener
			 * readable and this loop spinning. Stop accepting for
			 * a while instead; clients wait in the backlog.
			 */
			int64_t now = rn_now_ms();

			if (now - n->accept_warned_ms >= 10000) {
				log_warn("accept: pausing new connections");
				n->accept_warned_ms = now;
			}
			if (net_listen(n, false) == 0)
				n->accept_resume_ms = now + ACCEPT_PAUSE_MS;
			return;
		}
		if (fd == -1) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("accept");
			return;
		}
		if (!net_connlim_take(n, listener, &ss, &tk)) {
			/* over a limit (logged): the client sees a close */
			close(fd);
			continue;
		}
		if (net_conn_new(n, fd, listener, &tk) == NULL) {
			log_warnx("cannot take a connection: out of memory");
			net_connlim_release(n, &tk);
			close(fd);
		}
	}
}

/*
 * A login (TLS handshake or SASL) not done in time: closed, and logged
 * (a re-authentication each time, a stranger's once per NET_LOGRATE_MS
 * with how many went unsaid: a flood of them would fill the log).
 */
static void
auth_timeout(struct net *n, struct conn *c)
{
	const char *lname = n->cfg->listeners[c->listener].name;
	unsigned unsaid;

	if (c->reauthing)
		log_warnx("connection from %s on listener %s: SASL "
		    "re-authentication of %s not done in %d ms: closing",
		    c->peer, lname, c->principal, NET_TLS_HANDSHAKE_MS);
	else if (net_lograte_ok(&n->log_preauth_timeout, n->now_ms, &unsaid))
		log_warnx("connection from %s on listener %s: %s not done in "
		    "%d ms: closing (%u more such closes not logged)", c->peer,
		    lname, c->ssl != NULL && !c->tls_done ? "TLS handshake" :
		    "SASL authentication", NET_TLS_HANDSHAKE_MS, unsaid);
	net_conn_close(n, c, "authentication timeout");
}

/*
 * Parked requests whose time is up, and the nearest deadline left. Every
 * connection is looked at only once one may be due (n->scan_at_ms, kept
 * by net_deadline_soon): a thousand idle connections, logged in or not,
 * then cost nothing per turn of the loop.
 */
static int64_t
net_deadlines(struct net *n, int64_t now)
{
	int64_t next = now + RN_WORKER_HEARTBEAT_MS;
	struct conn *c, *nc;

	if (now < n->scan_at_ms && !n->scan_each_turn)
		return n->scan_at_ms < next ? n->scan_at_ms : next;
	n->scan_each_turn = false;
	/* what is set while we walk (a mute, a park) lowers it again */
	n->scan_at_ms = INT64_MAX;
	for (c = n->conns; c != NULL; c = nc) {
		nc = c->next_all;
		/* Kafka's connections.max.idle.ms: nothing read or written,
		 * nothing in flight. active_ms only moves on, so a busy
		 * connection's end is no earlier than this */
		if (n->lim.idle_ms > 0) {
			int64_t idle_end = c->active_ms + n->lim.idle_ms;

			if (idle_end <= now && c->wait == CONN_IDLE &&
			    c->out_head == NULL) {
				net_conn_close(n, c, "idle longer than "
				    "connections.max.idle.ms");
				continue;
			}
			if (idle_end > now && idle_end < next)
				next = idle_end;
		}
		/* a parked connection's login deadline is looked at again
		 * when it is unparked (net_conn_request_done) */
		if (c->auth_deadline_ms != 0 && c->wait == CONN_IDLE) {
			if (c->auth_deadline_ms <= now) {
				auth_timeout(n, c);
				continue;
			}
			if (c->auth_deadline_ms < next)
				next = c->auth_deadline_ms;
		}
		/* a client quota's mute (quota.c) is over: read again */
		if (c->mute_until_ms != 0) {
			if (c->mute_until_ms <= now) {
				c->mute_until_ms = 0;
				net_conn_process(n, c);
				if (c->fd < 0)
					continue;
			} else if (c->mute_until_ms < next)
				next = c->mute_until_ms;
		}
		/* decrypted bytes epoll cannot see: take them now, or on
		 * the first turn the connection reads again */
		if (net_tls_pending(c)) {
			if (net_conn_wants_input(c)) {
				net_conn_readable(n, c);
				if (c->fd < 0)
					continue;
			}
			if (net_tls_pending(c)) {
				if (net_conn_wants_input(c))
					next = now;
				else
					n->scan_each_turn = true;
			}
		}
		if (c->wait == CONN_IDLE)
			continue;
		if (c->deadline_ms <= now) {
			if (c->wait == CONN_WAIT_AUTH_FAILED)
				net_sasl_fail_now(n, c);
			else if (c->wait == CONN_WAIT_FETCH)
				net_fetch_recheck(n, c, true);
			else if (c->wait == CONN_WAIT_ACKS)
				net_produce_recheck(n, c, true);
			else if (c->wait == CONN_WAIT_COORDINATOR)
				net_conn_close(n, c, "group coordinator timeout");
			else if (c->wait == CONN_WAIT_VERIFY)
				net_verify_timeout(n, c);
			else {
				log_warnx("%s: no answer from the controller "
				    "in time: closing", c->peer);
				net_conn_close(n, c, "controller timeout");
			}
		} else if (c->deadline_ms < next)
			next = c->deadline_ms;
	}
	/* what the walk itself set (net_deadline_soon) counts too */
	if (n->scan_at_ms < next)
		next = n->scan_at_ms;
	n->scan_at_ms = next;
	return next;
}

/*
 * Parked requests look again: after a new image every one (all); after a
 * wake-up, the fetches watching a slot marked changed for this worker
 * (an append or a high watermark there), and the acks=all produces.
 */
void
net_wakeup(struct net *n, bool all)
{
	struct conn *c, *nc;
	bool any = false;
	uint32_t nw = 0, i;

	if (!all) {
		nw = rn_wakeset_take(&n->wake, n->changed, n->changed_words);
		net_fsess_marks(n, nw);
	} else {
		net_fsess_all(n);
	}
	for (c = n->parked; c != NULL; c = nc) {
		nc = c->next_parked;
		if (c->wait == CONN_WAIT_FETCH) {
			if (all || (c->fsess_on ? net_fsess_woken(c) :
			    nw > 0 && net_fetch_watches(c, n->changed)))
				net_fetch_recheck(n, c, false);
			any = any || c->wait == CONN_WAIT_FETCH;
		} else if (c->wait == CONN_WAIT_ACKS) {
			net_produce_recheck(n, c, false);
			any = any || c->wait == CONN_WAIT_ACKS;
		}
	}
	for (i = 0; i < nw; i++)
		n->changed[n->changed_words[i]] = 0;
	/* a fetch session's partitions keep their bits between fetches */
	if (!any && n->fsess == NULL)
		rn_part_clear_waiters(&n->parts, n->w->index);
}

/* A Kafka key's number as server.properties gave it, else its default. */
static int64_t
cfg_ms(const struct rn_config *cfg, const char *key, int64_t def)
{
	const char *v = rn_config_static(cfg, key);
	char *end;
	long long x;

	if (v == NULL)
		return def;
	x = strtoll(v, &end, 10);
	return *end == '\0' && x >= 0 ? x : def;
}

static int
net_setup(struct net *n, struct rn_worker *w)
{
	const struct rn_worker_env *env = w->env;
	struct epoll_event ev;
	unsigned i;

	memset(n, 0, sizeof(*n));
	n->w = w;
	n->cfg = env->cfg;
	n->efd = env->efd[w->slot];
	for (i = 0; i < env->n_network && i < 64; i++)
		n->net_efds[i] = env->efd[rn_worker_slot_of(env,
		    RN_ROLE_W_NETWORK, i)];
	rn_wakeset_of(env->shm, w->index, &n->wake);
	n->changed = calloc(n->wake.n_words, sizeof(*n->changed));
	n->changed_words = calloc(n->wake.n_words, sizeof(*n->changed_words));
	if (n->changed == NULL || n->changed_words == NULL)
		return -ENOMEM;
	if ((n->epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return -errno;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = &tag_wakeup;
	if (epoll_ctl(n->epfd, EPOLL_CTL_ADD, n->efd, &ev) == -1)
		return -errno;
	if (net_apis_init(n) != 0 || net_authz_init(n) != 0 ||
	    rn_part_table_init(&n->parts, env->shm, env->cfg) != 0 ||
	    (n->hw_ckpt = rn_ckpt_pass_new(RN_CKPT_HW)) == NULL ||
	    (n->rp_ckpt = rn_ckpt_pass_new(RN_CKPT_RECOVERY)) == NULL)
		return -ENOMEM;
	n->parts.worker = w;
	net_count_fsess(n);	/* a restarted worker's sessions are gone */
	n->dispatch = net_dispatch;
	n->auth_fail_delay_ms = cfg_ms(env->cfg,
	    "connection.failed.authentication.delay.ms", 100);
	n->preauth_max = cfg_ms(env->cfg, "sasl.server.max.receive.size",
	    524288);
	net_connlim_init(n);
	rn_mdview_init(&n->view);
	rn_replquota_init(&n->lquota, true,
	    &w->env->shm->hdr->leader_quota_tat_us);
	return 0;
}

/* Whether a local partition has anything on disk (or in use) here. */
bool
net_part_exists(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp)
{
	char path[2048];
	int dir = mp->dir >= 0 && mp->dir < n->cfg->n_log_dirs ? mp->dir : 0;
	int d;

	if ((uint32_t)mp->slot < n->parts.hi &&
	    n->parts.parts[mp->slot].log != NULL)
		return true;
	snprintf(path, sizeof(path), "%s/%s-%d", n->cfg->log_dirs[dir],
	    t->name, mp->p);
	if (access(path, F_OK) == 0)
		return true;
	/* a move cut short may have left it in another dir (move.c) */
	for (d = 0; d < n->cfg->n_log_dirs; d++) {
		if (d == dir)
			continue;
		snprintf(path, sizeof(path), "%s/%s-%d", n->cfg->log_dirs[d],
		    t->name, mp->p);
		if (access(path, F_OK) == 0)
			return true;
	}
	return false;
}

/*
 * Part of a retention pass over every local partition, until deadline;
 * true while the pass goes on. A node with thousands of partitions (each
 * open costs fsyncs the first time) never stalls its clients for a whole
 * pass, and a partition with nothing on disk is not created for it.
 */
static bool
net_retention_step(struct net *n, int64_t deadline_us)
{
	const struct rn_mdview *v = &n->view;

	while (n->ret_topic < v->n_topics) {
		const struct rn_mdv_topic *t = &v->topics[n->ret_topic];
		const struct rn_mdv_partition *mp;
		struct rn_part *p;
		int16_t kerr;
		int deleted;

		if (n->ret_part >= t->n_parts) {
			n->ret_topic++;
			n->ret_part = 0;
			continue;
		}
		mp = &t->parts[n->ret_part++];
		if (mp->slot < 0 || !net_part_exists(n, t, mp) ||
		    (p = rn_part_get(&n->parts, v, t, mp, &kerr)) == NULL)
			continue;
		deleted = rn_part_retention(p, rn_wallclock_ms());
		if (deleted > 0)	/* fetch sessions hear of the new log start */
			rn_part_wake_parked(p, n->net_efds, n->w->index);
		if (deleted > 0)
			rn_log_about(LOG_INFO, rn_subj_part(t->name, mp->p),
			    "%s-%d: retention deleted %d segments", t->name,
			    mp->p, deleted);
		if (rn_now_us() >= deadline_us)
			return true;
	}
	return false;
}

/*
 * The rolled segments of every local log synced in the background, a
 * step per turn (its recovery point then moves), and the recovery points
 * checkpointed every log.flush.offset.checkpoint.interval.ms. True while
 * a flush pass still has work for the next turn.
 */
static bool
net_flush_housekeeping(struct net *n, int64_t now, int64_t until_us)
{
	int64_t every = n->cfg->log_flush_offset_checkpoint_interval_ms;

	if (!n->flush_active && now >= n->next_flush_ms) {
		n->next_flush_ms = now + FLUSH_PASS_EVERY_MS;
		n->flush_active = true;
	}
	if (n->flush_active)
		n->flush_active = rn_part_flush_pass(&n->parts, &n->view,
		    &n->flush_pass, until_us);
	if (now >= n->next_rp_checkpoint_ms) {
		n->next_rp_checkpoint_ms = now + (every < 100 ? 100 : every);
		(void)rn_ckpt_pass_start(n->rp_ckpt, &n->parts, &n->view);
	}
	return rn_ckpt_pass_step(n->rp_ckpt, &n->parts, &n->view,
	    until_us) || n->flush_active;
}

/*
 * The storage duty (RN_DUTY_STORAGE): retention, the background flush,
 * the ISR lag check, the high-watermark and recovery-point checkpoints
 * for every local partition, each a pass that shares DUTY_STEP_US of the
 * turn. The supervisor gives it to one worker, so two never race for the
 * same deletions. True while a pass still has work for the next turn.
 */
static bool
net_housekeeping(struct net *n, int64_t now)
{
	int64_t t0, until;
	bool more;

	if (!(n->w->ws->duties & RN_DUTY_STORAGE))
		return false;
	t0 = rn_now_us();
	until = t0 + DUTY_STEP_US;
	more = net_flush_housekeeping(n, now, until);
	if (!n->isr_active && now >= n->next_isr_check_ms) {
		n->next_isr_check_ms = now + 1000;
		n->isr_active = true;
	}
	if (n->isr_active) {
		n->isr_active = net_isr_housekeeping(n, &n->isr_pass, until);
		more |= n->isr_active;
	}
	if (now >= n->next_hw_checkpoint_ms) {
		/* Kafka's replica.high.watermark.checkpoint.interval.ms: 5 s */
		n->next_hw_checkpoint_ms = now + 5000;
		(void)rn_ckpt_pass_start(n->hw_ckpt, &n->parts, &n->view);
	}
	more |= rn_ckpt_pass_step(n->hw_ckpt, &n->parts, &n->view, until);
	if (!n->ret_active && now >= n->next_retention_ms) {
		n->next_retention_ms = now +
		    n->cfg->log_retention_check_interval_ms;
		n->ret_active = true;
		n->ret_topic = n->ret_part = 0;
	}
	if (n->ret_active)
		n->ret_active = net_retention_step(n, until);
	net_stage(n, RN_STAGE_LOOP_DUTY, rn_now_us() - t0);
	return n->ret_active || more;
}

/* A new image may settle parked requests (ISR, leader moved). */
static void
net_refresh(struct net *n)
{
	int64_t t0 = rn_now_us();

	if (rn_mdview_refresh(&n->view, n->w->env->shm) == 1) {
		rn_part_table_sync(&n->parts, &n->view);
		if (n->w->ws->duties & RN_DUTY_STORAGE)
			net_count_isr(n);
		net_wakeup(n, true);
		net_stage(n, RN_STAGE_METADATA, rn_now_us() - t0);
	}
	/* between requests: no handle is held across this point */
	(void)rn_part_table_trim(&n->parts);
	rn_replquota_update(&n->lquota, &n->view, n->cfg, 1);
}

/* What the image says of this incarnation's own registration. */
static void
net_self_refresh(struct net *n)
{
	int64_t e = atomic_load_explicit(
	    &n->w->env->shm->hdr->registered_epoch, memory_order_relaxed);
	const struct rn_mdv_broker *self;

	if (n->self_view_version == n->view.version && n->self_epoch == e)
		return;
	self = rn_mdview_broker(&n->view, n->cfg->node_id);
	n->self_registered = e > 0 && self != NULL && self->epoch == e;
	n->self_unfenced = n->self_registered && !self->fenced;
	n->self_view_version = n->view.version;
	n->self_epoch = e;
}

bool
net_leads(struct net *n, const struct rn_mdv_partition *mp)
{
	if (mp->leader != n->cfg->node_id)
		return false;
	net_self_refresh(n);
	return n->self_unfenced;
}

/*
 * Clients are accepted (they wait in the backlog until then) once this
 * incarnation's registration is in the image: before, the image may be
 * one the node left off with or one replayed only part way (topics since
 * deleted, others not yet re-created), and a client told that a topic
 * it reads is gone drops it.
 */
static void
net_start_serving(struct net *n)
{
	int rc;

	if (n->serving)
		return;
	net_self_refresh(n);
	if (!n->self_registered)
		return;
	if ((rc = net_listen(n, true)) != 0) {
		log_warnx("cannot listen for clients: %s", strerror(-rc));
		return;
	}
	n->serving = true;
	rn_log_about(LOG_INFO, rn_subj_broker(n->cfg->node_id), "serving "
	    "clients: this broker's registration is in the metadata image");
}

/* How long the next wait may last: deadlines, accept pause, the ring. */
static int
net_wait_ms(struct net *n, int64_t now, int64_t next)
{
	int timeout, l;

	if (n->accept_resume_ms != 0 && now >= n->accept_resume_ms &&
	    net_listen(n, true) == 0)
		n->accept_resume_ms = 0;
	if (n->accept_resume_ms != 0 && n->accept_resume_ms < next)
		next = n->accept_resume_ms;
	/* listeners paused by a connection limit: look again */
	for (l = 0; l < n->w->env->n_listen; l++) {
		if (n->lpause_ms[l] == 0)
			continue;
		if (now >= n->lpause_ms[l]) {
			n->lpause_ms[l] = 0;
			if (n->serving && n->accept_resume_ms == 0)
				(void)net_listen_one(n, l, true);
		} else if (n->lpause_ms[l] < next)
			next = n->lpause_ms[l];
	}
	timeout = (int)(next - now);
	if (timeout < 0)
		timeout = 0;
	/* the controller and the coordinator wake us as they drain; poll
	 * too, to be sure */
	if ((rn_worker_pump_ctl(n->w) | net_coord_pump(n)) && timeout > 10)
		timeout = 10;
	return timeout;
}

static void
net_event(struct net *n, const struct epoll_event *ev)
{
	void *p = ev->data.ptr;
	struct conn *c;

	if (p == &tag_wakeup) {
		uint64_t v;

		(void)read(n->efd, &v, sizeof(v));
		/* the image was refreshed right after the wait */
		net_wakeup(n, false);
		return;
	}
	if (p >= (void *)tag_listener &&
	    p < (void *)(tag_listener + RN_CONFIG_MAX_LISTENERS)) {
		net_accept(n, (int)((char *)p - tag_listener));
		return;
	}
	c = p;
	if (c->fd < 0)
		return;
	if (c->wait != CONN_IDLE) {
		/* a parked request points into its buffer:
		 * no reading until it is answered */
		if (ev->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
			net_conn_close(n, c, "hang-up");
		else if (ev->events & EPOLLOUT)
			net_conn_writable(n, c);
		return;
	}
	if (ev->events & (EPOLLERR | EPOLLHUP)) {
		net_conn_close(n, c, "hang-up");
		return;
	}
	if (ev->events & EPOLLOUT)
		net_conn_writable(n, c);
	if (c->fd >= 0 && (ev->events & (EPOLLIN | EPOLLRDHUP)))
		net_conn_readable(n, c);
}

/*
 * One turn of the loop: deadlines, the rings, the events, the heartbeat.
 * While draining (asked to stop) the listeners stay unwatched.
 */
static int
net_turn(struct net *n, struct epoll_event *evs, bool draining)
{
	struct rn_worker *w = n->w;
	struct rn_ring *in = rn_shm_ring_from_ctl(w->env->shm, w->slot);
	int64_t now = rn_now_ms(), next, t_wait;
	int i, k, timeout;

	n->now_ms = now;
	net_refresh(n);
	if (!draining)
		net_start_serving(n);
	next = net_deadlines(n, now);
	if (net_housekeeping(n, now))
		next = now; /* more of the pass after this turn */
	if (draining && next > now + 50)
		next = now + 50; /* look at idle connections often */
	rn_ring_consumer_sleeping(in, true);
	rn_ring_consumer_sleeping(rn_shm_ring_from_coord(w->env->shm,
	    w->slot), true);
	if (net_ctl_drain(n) != 0) {
		log_errx("bad message from the controller: restarting");
		return RN_WORKER_EXIT_RESTART;
	}
	if (net_coord_drain(n) != 0)
		log_warnx("bad message from the group coordinator");
	timeout = net_wait_ms(n, now, next);
	t_wait = rn_now_us();
	if (n->turn_start_us != 0)
		net_stage(n, RN_STAGE_LOOP_TURN, t_wait - n->turn_start_us);
	k = epoll_wait(n->epfd, evs, MAX_EVENTS, timeout);
	n->turn_start_us = rn_now_us();
	n->now_ms = rn_now_ms();
	net_stage(n, RN_STAGE_LOOP_WAIT, n->turn_start_us - t_wait);
	rn_ring_consumer_sleeping(in, false);
	rn_ring_consumer_sleeping(rn_shm_ring_from_coord(w->env->shm,
	    w->slot), false);
	/*
	 * Requests are answered from the image published before they
	 * arrived: a client that got an admin answer from another
	 * worker reads its own write here (the version check is cheap).
	 */
	if (k > 0)
		net_refresh(n);
	for (i = 0; i < k; i++)
		net_event(n, &evs[i]);
	net_conn_reap(n);
	if (rn_now_ms() >= w->next_heartbeat_ms)
		rn_worker_heartbeat(w);
	return -1;
}

/*
 * Asked to stop (a node shutdown or a restart of this worker): stop
 * accepting (the listeners are the supervisor's and stay open; the other
 * network workers, or this worker's successor, take the connections that
 * arrive), answer the requests in flight and close each connection once
 * it is idle, so that a client sees a clean close between requests. What
 * is still busy after NET_DRAIN_MS (or half shutdown.timeout.ms) is
 * closed as before.
 */
static int
net_drain(struct net *n, struct epoll_event *evs)
{
	int64_t limit = n->cfg->shutdown_timeout_ms / 2;
	int64_t deadline, start = rn_now_ms();
	struct conn *c, *nc;
	unsigned busy = 0;
	int rc;

	if (limit > NET_DRAIN_MS)
		limit = NET_DRAIN_MS;
	deadline = start + limit;
	n->serving = false;
	n->accept_resume_ms = 0;
	memset(n->lpause_ms, 0, sizeof(n->lpause_ms));
	(void)net_listen(n, false);
	log_info("network worker stopping: %u connections; no longer "
	    "accepting, answering what is in flight", n->n_conns);
	for (;;) {
		busy = 0;
		for (c = n->conns; c != NULL; c = nc) {
			nc = c->next_all;
			if (c->fd < 0)
				continue;
			if (c->wait == CONN_IDLE && c->out_head == NULL &&
			    c->rlen == 0)
				net_conn_close(n, c, "worker stopping");
			else
				busy++;
		}
		net_conn_reap(n);
		if (busy == 0 || rn_now_ms() >= deadline)
			break;
		if ((rc = net_turn(n, evs, true)) >= 0)
			return rc;
	}
	log_info("network worker drained in %lld ms; closing %u busy "
	    "connection(s)", (long long)(rn_now_ms() - start), busy);
	return -1;
}

int
rn_network_main(struct rn_worker *w)
{
	struct epoll_event evs[MAX_EVENTS];
	struct net n;
	int rc;

	if ((rc = net_setup(&n, w)) != 0) {
		log_errx("network worker setup failed: %s", strerror(-rc));
		return RN_WORKER_EXIT_RESTART;
	}
	rn_mdview_refresh(&n.view, w->env->shm);
	if (rn_worker_send_hello(w) != 0)
		log_warnx("cannot reach the controller yet");
	rn_worker_heartbeat(w);
	log_info("network worker up");

	while (!rn_worker_should_stop())
		if ((rc = net_turn(&n, evs, false)) >= 0)
			return rc;
	if ((rc = net_drain(&n, evs)) >= 0)
		return rc;
	while (n.conns != NULL)
		net_conn_close(&n, n.conns, NULL);
	net_conn_reap(&n);
	/* a checkpoint being written finishes before the logs close */
	rn_ckpt_pass_free(n.hw_ckpt);
	rn_ckpt_pass_free(n.rp_ckpt);
	rn_part_table_close(&n.parts);
	return RN_WORKER_EXIT_OK;
}
