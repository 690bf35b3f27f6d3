/*
 * The new supervisor's side of an upgrade (sv_upgrade.c is the old's).
 * Started with RUNNEL_UPGRADE naming the fds it inherits, it first
 * checks, touching nothing: the segment's magic and layout version (a
 * binary of another layout exits SV_UPGRADE_EXIT_LAYOUT), its geometry
 * against this configuration, the listeners against the configured
 * ports. Then it says "adopted", waits for the old one's "handsoff", and
 * replaces the old one's workers one at a time in the order of a rolling
 * restart: SIGTERM through a pidfd (they are not our children, so
 * waitpid cannot see them; the pidfd turns readable when one exits), then
 * our own incarnation in its slot, healthy before the next. Once READY=1
 * and MAINPID= are sent it says "ready" and the old one leaves.
 *
 * Anything wrong before "ready" ends this process: the old supervisor
 * then keeps, or takes back, the node.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "supervisor/sv.h"
#include "supervisor/sv_http.h"

/*
 * The layout this binary reads. A test-only build (tests/Makefile.inc,
 * runneld-newlayout) sets RN_TEST_LAYOUT_VERSION to claim the next one,
 * as a binary from a later layout would.
 */
#ifdef RN_TEST_LAYOUT_VERSION
#define SV_LAYOUT RN_TEST_LAYOUT_VERSION
#else
#define SV_LAYOUT RN_SHM_LAYOUT_VERSION
#endif

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

enum step { ST_ASK, ST_WAIT, ST_START, ST_HEALTHY };

struct sv_takeover {
	int chan;
	int shm, ctl, http;
	int lock[RN_CONFIG_MAX_LOGDIRS + 1], n_lock;
	int listen[RN_CONFIG_MAX_LISTENERS], n_listen;
	int efd[RN_SHM_MAX_WORKERS], n_efd;
	unsigned order[RN_SHM_MAX_WORKERS], n, k;
	pid_t old_pid[RN_SHM_MAX_WORKERS];
	enum step step;
	int pidfd;
	bool killed;
	int64_t asked_ms;
	int64_t step_limit_ms;
};

static struct sv_takeover to;

/* Say it to the old supervisor, and leave. */
static void __attribute__((noreturn, format(printf, 2, 3)))
give_up(int code, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_errx("upgrade: %s", msg);
	if (to.chan >= 0)
		dprintf(to.chan, "%s %s\n", code == SV_UPGRADE_EXIT_LAYOUT ?
		    "refused" : "error", msg);
	_exit(code);
}

/* "3,4,5" into fds, each an open fd; the count, or -1. */
static int
parse_fds(const char *s, int *out, int max)
{
	int n = 0;
	long v;
	char *end;

	if (*s == '\0')
		return 0;
	for (;;) {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno != 0 || end == s || v < 0 || v > 1 << 20 ||
		    n == max || fcntl((int)v, F_GETFD) == -1)
			return -1;
		/* ours now; a worker inherits it by fork, never by exec */
		(void)fcntl((int)v, F_SETFD, FD_CLOEXEC);
		out[n++] = (int)v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

static int
parse_one(const char *s, int *out)
{
	if (strcmp(s, "-1") == 0) {
		*out = -1;
		return 0;
	}
	return parse_fds(s, out, 1) == 1 ? 0 : -1;
}

static int
parse_env(const char *env)
{
	char buf[8192], *tok, *save, *val;
	int rc = 0;

	if (strlcpy(buf, env, sizeof(buf)) >= sizeof(buf))
		return -1;
	for (tok = strtok_r(buf, " ", &save); tok != NULL && rc == 0;
	    tok = strtok_r(NULL, " ", &save)) {
		if ((val = strchr(tok, '=')) == NULL)
			return -1;
		*val++ = '\0';
		if (strcmp(tok, "chan") == 0)
			rc = parse_one(val, &to.chan);
		else if (strcmp(tok, "shm") == 0)
			rc = parse_one(val, &to.shm);
		else if (strcmp(tok, "ctl") == 0)
			rc = parse_one(val, &to.ctl);
		else if (strcmp(tok, "http") == 0)
			rc = parse_one(val, &to.http);
		else if (strcmp(tok, "lock") == 0)
			rc = (to.n_lock = parse_fds(val, to.lock,
			    (int)RN_ARRAY_SIZE(to.lock))) < 0 ? -1 : 0;
		else if (strcmp(tok, "listen") == 0)
			rc = (to.n_listen = parse_fds(val, to.listen,
			    (int)RN_ARRAY_SIZE(to.listen))) < 0 ? -1 : 0;
		else if (strcmp(tok, "efd") == 0)
			rc = (to.n_efd = parse_fds(val, to.efd,
			    (int)RN_ARRAY_SIZE(to.efd))) < 0 ? -1 : 0;
		/* an unknown key is a later binary's: ignored */
	}
	return rc;
}

static unsigned
sock_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int on = 0;
	socklen_t olen = sizeof(on);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen) == -1 ||
	    !on)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/*
 * 0: not an upgrade. 1: the fds are ours, the segment mapped and checked.
 * Exits on anything else.
 */
int
sv_takeover_adopt(struct sv *sv)
{
	const char *env = getenv(SV_UPGRADE_ENV);
	struct rn_shm_hdr hdr;
	struct stat st;
	void *base;
	int i;

	if (env == NULL)
		return 0;
	memset(&to, 0, sizeof(to));
	to.chan = to.shm = to.ctl = to.http = to.pidfd = -1;
	if (parse_env(env) != 0)
		give_up(1, "%s does not name open fds: started by hand?",
		    SV_UPGRADE_ENV);
	unsetenv(SV_UPGRADE_ENV);
	if (to.chan < 0 || to.shm < 0 || to.ctl < 0)
		give_up(1, "%s lacks the channel, the segment or the control "
		    "socket", SV_UPGRADE_ENV);
	/* the header alone first: a segment of another layout is not read */
	if (fstat(to.shm, &st) == -1 || (size_t)st.st_size < sizeof(hdr) ||
	    pread(to.shm, &hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr))
		give_up(1, "the segment cannot be read: %s", strerror(errno));
	if (hdr.magic != RN_SHM_MAGIC)
		give_up(1, "the segment passed is not runnel's");
	if (hdr.layout_version != SV_LAYOUT)
		give_up(SV_UPGRADE_EXIT_LAYOUT, "this binary reads "
		    "shared-memory layout version %u, the running node has "
		    "version %u: restart the node to run it (an upgrade "
		    "cannot carry the segment over)", (unsigned)SV_LAYOUT,
		    (unsigned)hdr.layout_version);
	if (hdr.size != (uint64_t)st.st_size)
		give_up(1, "the segment is %lld bytes, its header says %llu",
		    (long long)st.st_size, (unsigned long long)hdr.size);
	base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE,
	    MAP_SHARED, to.shm, 0);
	if (base == MAP_FAILED)
		give_up(1, "mmap of the segment: %s", strerror(errno));
	sv->shm.base = base;
	sv->shm.hdr = base;
	sv->shm.size = (size_t)st.st_size;
	sv->shm.fd = to.shm;
	if (rn_shm_check(&sv->shm) != 0)
		give_up(1, "the segment's header does not check out");
	/* the listeners must be the configured ones, in order */
	if (to.n_listen != sv->cfg.n_listeners)
		give_up(1, "%d listeners passed, %d configured: restart the "
		    "node to change listeners", to.n_listen,
		    sv->cfg.n_listeners);
	for (i = 0; i < to.n_listen; i++) {
		const struct rn_listener *l = &sv->cfg.listeners[i];

		if (sock_port(to.listen[i]) != l->port)
			give_up(1, "listener %s: the socket passed is not a "
			    "listener on port %u: restart the node to change "
			    "listeners", l->name, l->port);
		sv->env.listen[i].fd = to.listen[i];
		sv->env.listen[i].listener = i;
		sv->env.listen[i].controller =
		    rn_config_is_controller_listener(&sv->cfg, l->name);
	}
	sv->env.n_listen = to.n_listen;
	if ((to.http >= 0) != (sv->cfg.metrics_listener[0] != '\0'))
		give_up(1, "metrics.listener changed: restart the node to "
		    "change it");
	if (to.http >= 0)
		sv_http_adopt(to.http);
	memcpy(sv->lock_fd, to.lock, sizeof(int) * (size_t)to.n_lock);
	sv->n_lock_fd = to.n_lock;
	sv_control_adopt(sv, to.ctl);
	log_info("upgrade: adopted the segment (%zu bytes, layout %u), %d "
	    "listeners, %d log dir locks", sv->shm.size,
	    (unsigned)hdr.layout_version, to.n_listen, to.n_lock);
	return 1;
}

/* The segment's geometry must be the one this configuration asks. */
int
sv_takeover_adopt_shm(struct sv *sv, const struct rn_shm_params *p)
{
	const struct rn_shm_hdr *h = sv->shm.hdr;
	unsigned i;

	if (h->n_workers != p->n_workers || h->ring_bytes != p->ring_bytes ||
	    h->max_partitions != p->max_partitions ||
	    h->producer_pool != p->producer_pool)
		give_up(1, "the segment has %u workers, %u-byte rings, %u "
		    "partition slots and %u producer entries, this "
		    "configuration %u, %u, %u and %u: restart the node to "
		    "change them", h->n_workers, h->ring_bytes,
		    h->max_partitions, h->producer_pool, p->n_workers,
		    p->ring_bytes, p->max_partitions, p->producer_pool);
	if (to.n_efd != (int)p->n_workers)
		give_up(1, "%d wake-up eventfds passed for %u workers",
		    to.n_efd, p->n_workers);
	for (i = 0; i < p->n_workers; i++)
		sv->env.efd[i] = to.efd[i];
	return 0;
}

/* Tell the old one we have adopted the node; wait for its hands off. */
void
sv_takeover_begin(struct sv *sv)
{
	const enum rn_worker_role *order;
	struct pollfd pfd;
	char buf[16];
	size_t n_order, r;
	unsigned j;
	ssize_t n;
	size_t have = 0;

	order = sv_roll_order(&n_order);
	for (r = 0; r < n_order; r++)
		for (j = 0; j < sv->n_children; j++)
			if (sv->children[j].role == order[r])
				to.order[to.n++] = j;
	for (j = 0; j < to.n; j++) {
		struct sv_child *c = &sv->children[to.order[j]];

		to.old_pid[j] = atomic_load(&rn_shm_worker(&sv->shm,
		    c->slot)->pid);
		c->state = RN_WS_EMPTY;
		c->restarts = atomic_load(&rn_shm_worker(&sv->shm,
		    c->slot)->restarts);
	}
	to.step_limit_ms = sv->cfg.shutdown_timeout_ms +
	    sv->cfg.worker_heartbeat_timeout_ms + 10000;
	if (write(to.chan, "adopted\n", 8) != 8)
		give_up(1, "the old supervisor is gone");
	pfd.fd = to.chan;
	pfd.events = POLLIN;
	while (have < 9) {
		if (poll(&pfd, 1, 10000) != 1 ||
		    (n = read(to.chan, buf + have, 9 - have)) <= 0)
			give_up(1, "no hands off from the old supervisor");
		have += (size_t)n;
	}
	if (memcmp(buf, "handsoff\n", 9) != 0)
		give_up(1, "the old supervisor said something unexpected");
	sv->takeover = &to;
	log_notice("upgrade: replacing the %u workers one by one", to.n);
	sv_notify_status(sv, "upgrading: replacing %u workers", to.n);
}

static int
pidfd_signal(int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, to.pidfd, sig, NULL, 0);
}

static void
step(struct sv *sv, int64_t now)
{
	struct sv_child *c = &sv->children[to.order[to.k]];
	struct pollfd pfd;

	switch (to.step) {
	case ST_ASK:
		to.asked_ms = now;
		to.killed = false;
		to.step = ST_START;
		if (to.old_pid[to.k] <= 0 || (to.pidfd = (int)syscall(
		    SYS_pidfd_open, to.old_pid[to.k], 0)) == -1)
			break; /* nothing there, or already gone */
		if (pidfd_signal(SIGTERM) == -1 && errno != ESRCH)
			give_up(1, "cannot stop %s (pid %d): %s", c->name,
			    (int)to.old_pid[to.k], strerror(errno));
		to.step = ST_WAIT;
		break;
	case ST_WAIT:
		pfd.fd = to.pidfd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 0) == 1) {
			close(to.pidfd);
			to.pidfd = -1;
			to.step = ST_START;
		} else if (!to.killed && now - to.asked_ms >
		    sv->cfg.shutdown_timeout_ms) {
			log_warnx("upgrade: %s did not stop in time: SIGKILL",
			    c->name);
			(void)pidfd_signal(SIGKILL);
			to.killed = true;
		}
		break;
	case ST_START:
		c->restarts++;
		c->requested_restarts++;
		if (sv_child_start(sv, c) != 0)
			give_up(1, "cannot start %s: %s", c->name,
			    strerror(errno));
		to.step = ST_HEALTHY;
		break;
	case ST_HEALTHY:
		if (c->pid != 0 && atomic_load(&rn_shm_worker(&sv->shm,
		    c->slot)->state) == RN_WS_RUNNING) {
			dprintf(to.chan, "worker %s %d %d %lld\n", c->name,
			    (int)to.old_pid[to.k], (int)c->pid,
			    (long long)(now - to.asked_ms));
			to.k++;
			to.step = ST_ASK;
		} else if (c->state == RN_WS_FAILED)
			give_up(1, "%s failed after its start", c->name);
		else if (now - to.asked_ms > to.step_limit_ms)
			give_up(1, "%s was not healthy within %lld ms",
			    c->name, (long long)to.step_limit_ms);
		break;
	}
}

/* One turn: a step or a few; "ready" once systemd was told. */
void
sv_takeover_tick(struct sv *sv, int64_t now)
{
	enum step before;

	if (sv->takeover == NULL)
		return;
	if (sv_got_sigterm)
		give_up(1, "asked to stop before it was ready: the old "
		    "supervisor keeps the node");
	while (to.k < to.n) {
		before = to.step;
		step(sv, now);
		if (to.step == before || to.step == ST_HEALTHY)
			return;
	}
	if (!sv->ready_sent)
		return; /* the main loop sends READY=1 and MAINPID= first */
	/*
	 * Its pid before it hears "ready": it may leave at once, and a
	 * getppid() after that would name init, so that sv_notify_tick never
	 * saw it leave nor handed systemd the main pid back.
	 */
	sv->old_supervisor = getppid();
	dprintf(to.chan, "ready %d\n", (int)getpid());
	close(to.chan);
	to.chan = -1;
	sv->takeover = NULL;
	log_notice("upgrade: every worker is ours; the old supervisor leaves");
}

bool
sv_takeover_done(const struct sv *sv)
{
	return sv->takeover == NULL || to.k == to.n;
}

/* A forked worker has no use for the channel. */
void
sv_takeover_child_close(struct sv *sv)
{
	if (sv->takeover != NULL && to.chan >= 0)
		close(to.chan);
}
