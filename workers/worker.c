#include "autoconf.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <msgpack.h>
#include <openssl/ssl.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/principal_map.h"
#include "common/sasl_config.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "workers/secure_client.h"
#include "workers/worker.h"

static volatile sig_atomic_t worker_stop;

static void
worker_sigterm(int sig)
{
	(void)sig;
	worker_stop = 1;
}

bool
rn_worker_should_stop(void)
{
	return worker_stop != 0;
}

unsigned
rn_worker_slot_of(const struct rn_worker_env *env, enum rn_worker_role role,
    unsigned index)
{
	switch (role) {
	case RN_ROLE_W_CONTROLLER: return 0;
	case RN_ROLE_W_NETWORK: return 1 + index;
	case RN_ROLE_W_FETCHER: return 1 + env->n_network + index;
	case RN_ROLE_W_CLEANER:
		return 1 + env->n_network + env->n_fetchers + index;
	case RN_ROLE_W_COORDINATOR:
		return 1 + env->n_network + env->n_fetchers + env->n_cleaners +
		    index;
	}
	return 0;
}

void
rn_worker_name(enum rn_worker_role role, unsigned index, char *buf,
    size_t len)
{
	if (role == RN_ROLE_W_CONTROLLER || role == RN_ROLE_W_COORDINATOR)
		strlcpy(buf, rn_worker_role_name(role), len);
	else
		snprintf(buf, len, "%s-%u", rn_worker_role_name(role), index);
}

static void
worker_signals(void)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = worker_sigterm;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	/* the supervisor runs with signals blocked outside ppoll() */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void
worker_drop_privileges(uid_t uid, gid_t gid)
{
	if (setgroups(1, &gid) == -1 || setresgid(gid, gid, gid) == -1 ||
	    setresuid(uid, uid, uid) == -1)
		fatal("cannot drop privileges to uid %u", (unsigned)uid);
	if (setuid(0) != -1)
		fatalx("privileges could be regained after dropping them");
}

/* Keep only the listeners this role serves. */
static void
worker_close_listeners(const struct rn_worker_env *env,
    enum rn_worker_role role)
{
	int i;

	for (i = 0; i < env->n_listen; i++) {
		bool keep = (role == RN_ROLE_W_NETWORK &&
		    !env->listen[i].controller) ||
		    (role == RN_ROLE_W_CONTROLLER && env->listen[i].controller);
		if (!keep)
			close(env->listen[i].fd);
	}
}

/*
 * Keys and passwords stay in the processes that use them: the network
 * workers, which serve the client listeners; the replica fetchers, which
 * log in to the leaders (only that); the controller worker, which serves
 * the controller listener and logs in to the other controllers (only
 * those). Every other role wipes its copy (fork gave it one) before it
 * runs.
 */
static void
worker_forget_secrets(const struct rn_worker_env *env,
    enum rn_worker_role role)
{
	struct rn_worker_env *e = (struct rn_worker_env *)env;
	int i;

	if (role != RN_ROLE_W_FETCHER && e->ib_client != NULL) {
		rn_secc_cfg_free(e->ib_client);
		free(e->ib_client);
		e->ib_client = NULL;
	}
	if (role != RN_ROLE_W_CONTROLLER && e->ctl_client != NULL) {
		rn_secc_cfg_free(e->ctl_client);
		free(e->ctl_client);
		e->ctl_client = NULL;
	}
	for (i = 0; i < RN_CONFIG_MAX_LISTENERS; i++) {
		bool ctl = i < env->cfg->n_listeners &&
		    rn_config_is_controller_listener(env->cfg,
		    env->cfg->listeners[i].name);

		/* each keeps the listeners it serves */
		if ((role == RN_ROLE_W_NETWORK && !ctl) ||
		    (role == RN_ROLE_W_CONTROLLER && ctl))
			continue;
		if (e->sec[i].ssl_ctx != NULL)
			SSL_CTX_free(e->sec[i].ssl_ctx);
		e->sec[i].ssl_ctx = NULL;
		if (e->sec[i].sasl != NULL) {
			rn_sasl_cfg_free(e->sec[i].sasl);
			free(e->sec[i].sasl);
		}
		e->sec[i].sasl = NULL;
		rn_pmap_free(e->sec[i].pmap);
		e->sec[i].pmap = NULL;
	}
	if (role != RN_ROLE_W_NETWORK)
		rn_config_forget_secrets((struct rn_config *)env->cfg);
}

/*
 * A worker holds a few descriptors per partition it serves (directory,
 * log, indexes) besides its connections: take all the descriptors the
 * hard limit allows (systemd's LimitNOFILE, the unit's 1048576), as a
 * node with tens of thousands of partitions needs them.
 */
static void
worker_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			log_warn("cannot raise the open files limit to %llu",
			    (unsigned long long)rl.rlim_max);
	}
}

void
rn_worker_run(const struct rn_worker_env *env, enum rn_worker_role role,
    unsigned index, rn_worker_main_fn main_fn, uid_t uid, gid_t gid,
    bool drop)
{
	struct rn_worker w;
	pid_t parent = getppid();
	int rc;

	/* a worker never outlives its supervisor */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(RN_WORKER_EXIT_FATAL);
	worker_signals();

	memset(&w, 0, sizeof(w));
	w.env = env;
	w.role = role;
	w.index = index;
	w.slot = rn_worker_slot_of(env, role, index);
	w.ws = rn_shm_worker(env->shm, w.slot);
	/* the supervisor stores it too, but only after fork() returns there */
	atomic_store(&w.ws->pid, (int32_t)getpid());
	rn_worker_name(role, index, w.name, sizeof(w.name));
	setproctitle("-runneld: %s", w.name);
	rn_log_init(rn_worker_role_name(role), w.name, env->cfg->log_verbose);
	worker_close_listeners(env, role);
	worker_forget_secrets(env, role);
	worker_raise_nofile();
	if (drop)
		worker_drop_privileges(uid, gid);

	if (env->cfg->fault_worker_exit_on_start[0] != '\0' &&
	    strcmp(env->cfg->fault_worker_exit_on_start, w.name) == 0) {
		log_warnx("fault.worker.exit.on.start names this worker: "
		    "exiting");
		exit(RN_WORKER_EXIT_RESTART);
	}

	rc = main_fn != NULL ? main_fn(&w) : RN_WORKER_EXIT_FATAL;
	log_debug("exiting with status %d", rc);
	exit(rc);
}

void
rn_worker_heartbeat(struct rn_worker *w)
{
	int64_t now = rn_now_ms();
	uint32_t starting = RN_WS_STARTING;

	atomic_store_explicit(&w->ws->heartbeat_ms, now, memory_order_release);
	atomic_fetch_add_explicit(&w->ws->heartbeats, 1, memory_order_relaxed);
	/* the first heartbeat tells the supervisor this worker is up */
	atomic_compare_exchange_strong(&w->ws->state, &starting,
	    RN_WS_RUNNING);
	w->next_heartbeat_ms = now + RN_WORKER_HEARTBEAT_MS;
}

void
rn_worker_wait(struct rn_worker *w, int timeout_ms)
{
	rn_worker_wait_fds(w, timeout_ms, NULL, 0);
}

void
rn_worker_wait_fds(struct rn_worker *w, int timeout_ms, const int *fds,
    int n_fds)
{
	struct pollfd pfd[1 + RN_WORKER_WAIT_FDS];
	int64_t now = rn_now_ms();
	int64_t until_hb = w->next_heartbeat_ms - now;
	uint64_t v;
	int i, n = 1;

	if (until_hb <= 0) {
		rn_worker_heartbeat(w);
		until_hb = RN_WORKER_HEARTBEAT_MS;
	}
	if (timeout_ms < 0 || timeout_ms > until_hb)
		timeout_ms = (int)until_hb;
	/* the controller wakes us as it drains; poll too, to be sure */
	if (rn_worker_pump_ctl(w) && timeout_ms > 10)
		timeout_ms = 10;
	pfd[0].fd = w->env->efd[w->slot];
	pfd[0].events = POLLIN;
	for (i = 0; i < n_fds && i < RN_WORKER_WAIT_FDS; i++) {
		pfd[n].fd = fds[i];
		pfd[n++].events = POLLIN;
	}
	if (poll(pfd, (nfds_t)n, timeout_ms) > 0 && (pfd[0].revents & POLLIN))
		(void)read(pfd[0].fd, &v, sizeof(v));
	if (rn_now_ms() >= w->next_heartbeat_ms)
		rn_worker_heartbeat(w);
}

int
rn_worker_send_ctl(struct rn_worker *w, uint16_t type, const void *buf,
    size_t len)
{
	struct rn_ring *r = rn_shm_ring_to_ctl(w->env->shm, w->slot);
	int rc;

	if ((rc = rn_ringq_send(&w->to_ctl, r, type, buf, len, 0)) != 0)
		return rc;
	rc = rn_ring_notify(r, w->env->efd[0]);
	return rc < 0 ? rc : 0;
}

bool
rn_worker_pump_ctl(struct rn_worker *w)
{
	struct rn_ring *r = rn_shm_ring_to_ctl(w->env->shm, w->slot);

	if (!rn_ringq_pending(&w->to_ctl))
		return false;
	if (rn_ringq_pump(&w->to_ctl, r, 0) == 1)
		(void)rn_ring_notify(r, w->env->efd[0]);
	return rn_ringq_pending(&w->to_ctl);
}

int
rn_worker_send_hello(struct rn_worker *w)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int rc;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "role");
	rn_mp_pack_str(&pk, rn_worker_role_name(w->role));
	rn_mp_pack_str(&pk, "index");
	msgpack_pack_unsigned_int(&pk, w->index);
	rn_mp_pack_str(&pk, "pid");
	msgpack_pack_int(&pk, getpid());
	rc = rn_worker_send_ctl(w, RN_IPC_HELLO, sb.data, (uint32_t)sb.size);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

/*
 * A piece of a message larger than a ring frame: bounded by d->max_len;
 * the sender is woken to push the next. The whole message is handled once
 * its last piece arrived; a piece that does not fit is dropped with what
 * came before it.
 */
static int
drain_fragment(const struct rn_drain *d, pid_t sender, const void *payload,
    size_t len, msgpack_unpacked *up)
{
	struct rn_ringq_in *in = d->in;
	uint64_t one = 1;
	int rc = rn_ringq_take(in, sender, payload, len, d->max_len);

	(void)!write(d->wake_fd, &one, sizeof(one));
	if (rc == 0)
		return 0;
	if (rc < 0) {
		log_warnx("%s: dropped a fragmented message: %s", d->from,
		    strerror(-rc));
		return 0;
	}
	if (msgpack_unpack_next(up, (const char *)in->buf, in->len, NULL) !=
	    MSGPACK_UNPACK_SUCCESS) {
		log_warnx("%s: malformed IPC message type %u", d->from,
		    in->type);
		rc = -EBADMSG;
	} else
		rc = d->handle(d->arg, sender, in->type, &up->data);
	rn_ringq_in_done(in);
	return rc;
}

int
rn_worker_drain(const struct rn_drain *d)
{
	pid_t expect = (pid_t)atomic_load(d->sender_pid);
	msgpack_unpacked up;
	const void *payload;
	uint16_t type;
	ssize_t len;
	int rc = 0;

	/* a sender that died half-way through a large message */
	if (d->in != NULL && d->in->buf != NULL && d->in->sender != expect)
		rn_ringq_in_done(d->in);
	msgpack_unpacked_init(&up);
	while ((len = rn_ring_peek(d->ring, &type, &payload)) >= 0) {
		pid_t sender = rn_ring_peek_sender(d->ring);

		if (sender != expect) {
			log_debug("%s: dropping message from old pid %d",
			    d->from, (int)sender);
			rn_ring_release(d->ring);
			continue;
		}
		if (type == RN_IPC_FRAGMENT && d->in != NULL)
			rc = drain_fragment(d, sender, payload, (size_t)len,
			    &up);
		else if (msgpack_unpack_next(&up, payload, (size_t)len,
		    NULL) != MSGPACK_UNPACK_SUCCESS) {
			log_warnx("%s: malformed IPC message type %u",
			    d->from, type);
			rc = -EBADMSG;
		} else
			rc = d->handle(d->arg, sender, type, &up.data);
		rn_ring_release(d->ring);
		if (rc == -EBADMSG || rc == -EPROTO)
			break;
		rc = 0;
	}
	msgpack_unpacked_destroy(&up);
	return len == -EBADMSG ? -EBADMSG : rc;
}
