/*
 * runnelctl upgrade (or SIGUSR2), the old supervisor's side: nginx's
 * USR2 habit with fork+exec. The new supervisor is our child, so its
 * failure is a SIGCHLD here and the node simply stays ours.
 *
 * We fork, and the child execs the binary (the one this supervisor was
 * started from, or the one asked for) with our argv and the fds in
 * RUNNEL_UPGRADE: the listeners, the segment's memfd, the wake-up
 * eventfds, the log dir locks, the control and metrics listeners, and
 * one end of a socketpair, the channel. Over it the new supervisor says,
 * one line each:
 *   adopted          it checked the segment (layout version, geometry)
 *                    and the fds; we answer "handsoff" and from then on
 *                    neither restart, publish nor accept anything
 *   worker NAME OLD NEW MS   it replaced one of our workers
 *   ready PID        every worker is its own and it told systemd
 *                    READY=1 and MAINPID=: we answer the asker and leave
 *   refused MSG / error MSG  why it is about to exit
 *
 * Workers die with their parent (PR_SET_PDEATHSIG), and we are a child
 * subreaper, so a new supervisor that dies halfway leaves its workers to
 * us as dying children: we restart each of them ourselves (rollback).
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "supervisor/sv.h"
#include "supervisor/sv_http.h"

#define HANDSHAKE_MS 10000     /* exec to "adopted" */

struct sv_upgrade {
	pid_t pid;                     /* the new supervisor */
	int chan;
	int conn;                      /* who waits for the answer, or -1 */
	uint64_t conn_gen;
	char binary[4096];
	bool handsoff;                 /* the new one replaces our workers */
	bool killed;
	pid_t new_pid;                 /* from "ready" */
	int64_t started_ms;
	int64_t adopt_deadline_ms, ready_deadline_ms;
	char why[256];                 /* the new one's last word */
	char in[512];
	size_t have;
	struct {
		char name[32];
		long old_pid, pid, ms;
	} w[RN_SHM_MAX_WORKERS];
	unsigned n_w;
};

bool
sv_upgrade_busy(const struct sv *sv)
{
	return sv->upgrade != NULL || sv->takeover != NULL;
}

bool
sv_upgrade_handsoff(const struct sv *sv)
{
	return sv->upgrade != NULL && sv->upgrade->handsoff;
}

int
sv_upgrade_pollfd(const struct sv *sv)
{
	return sv->upgrade != NULL ? sv->upgrade->chan : -1;
}

/* A forked worker has no use for the channel. */
void
sv_upgrade_child_close(struct sv *sv)
{
	if (sv->upgrade != NULL && sv->upgrade->chan >= 0)
		close(sv->upgrade->chan);
}

static void
answer(struct sv *sv, const char *error)
{
	struct sv_upgrade *u = sv->upgrade;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	unsigned k;

	if (u->conn < 0)
		return; /* SIGUSR2: the log says it */
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, error != NULL ? 7 : 6);
	rn_mp_pack_str(&pk, "ok");
	if (error != NULL) {
		msgpack_pack_false(&pk);
		rn_mp_pack_str(&pk, "error");
		rn_mp_pack_str(&pk, error);
	} else
		msgpack_pack_true(&pk);
	rn_mp_pack_str(&pk, "binary");
	rn_mp_pack_str(&pk, u->binary);
	rn_mp_pack_str(&pk, "old_pid");
	msgpack_pack_int64(&pk, getpid());
	rn_mp_pack_str(&pk, "pid");
	msgpack_pack_int64(&pk, error != NULL ? getpid() : u->new_pid);
	rn_mp_pack_str(&pk, "duration_ms");
	msgpack_pack_int64(&pk, rn_now_ms() - u->started_ms);
	rn_mp_pack_str(&pk, "workers");
	msgpack_pack_array(&pk, u->n_w);
	for (k = 0; k < u->n_w; k++) {
		msgpack_pack_map(&pk, 4);
		rn_mp_pack_str(&pk, "name");
		rn_mp_pack_str(&pk, u->w[k].name);
		rn_mp_pack_str(&pk, "old_pid");
		msgpack_pack_int64(&pk, u->w[k].old_pid);
		rn_mp_pack_str(&pk, "pid");
		msgpack_pack_int64(&pk, u->w[k].pid);
		rn_mp_pack_str(&pk, "ms");
		msgpack_pack_int64(&pk, u->w[k].ms);
	}
	if (!sv_control_reply_to(u->conn, u->conn_gen, sb.data, sb.size))
		log_info("upgrade: the asker has gone");
	msgpack_sbuffer_destroy(&sb);
}

static void
upgrade_free(struct sv *sv)
{
	if (sv->upgrade->chan >= 0)
		close(sv->upgrade->chan);
	free(sv->upgrade);
	sv->upgrade = NULL;
}

/* The fds the new supervisor adopts, as "key=fd,fd ..."; -1 if too long. */
static int
env_fds(struct sv *sv, int chan, char *buf, size_t len)
{
	size_t off;
	int i;

#define ADD(...) do { \
	off += (size_t)snprintf(buf + off, off < len ? len - off : 0, \
	    __VA_ARGS__); \
} while (0)
	off = 0;
	ADD("chan=%d shm=%d ctl=%d http=%d lock=", chan, sv->shm.fd,
	    sv->ctl_fd, sv_http_listener());
	for (i = 0; i < sv->n_lock_fd; i++)
		ADD("%s%d", i ? "," : "", sv->lock_fd[i]);
	ADD(" listen=");
	for (i = 0; i < sv->env.n_listen; i++)
		ADD("%s%d", i ? "," : "", sv->env.listen[i].fd);
	ADD(" efd=");
	for (i = 0; i < (int)sv->env.n_workers; i++)
		ADD("%s%d", i ? "," : "", sv->env.efd[i]);
#undef ADD
	return off < len ? 0 : -1;
}

static void
keep_fd(int fd)
{
	if (fd >= 0)
		(void)fcntl(fd, F_SETFD, 0);
}

/* In the child: make the fds survive exec, then become the new binary. */
static void __attribute__((noreturn))
child_exec(struct sv *sv, const char *binary, int chan, const char *fds)
{
	sigset_t none;
	char num[32];
	int i;

	keep_fd(chan);
	keep_fd(sv->shm.fd);
	keep_fd(sv->ctl_fd);
	keep_fd(sv_http_listener());
	for (i = 0; i < sv->n_lock_fd; i++)
		keep_fd(sv->lock_fd[i]);
	for (i = 0; i < sv->env.n_listen; i++)
		keep_fd(sv->env.listen[i].fd);
	for (i = 0; i < (int)sv->env.n_workers; i++)
		keep_fd(sv->env.efd[i]);
	setenv(SV_UPGRADE_ENV, fds, 1);
	/* systemd's watchdog follows the main pid the new one announces */
	if (sv->watchdog_usec != 0) {
		snprintf(num, sizeof(num), "%llu",
		    (unsigned long long)sv->watchdog_usec);
		setenv("WATCHDOG_USEC", num, 1);
		snprintf(num, sizeof(num), "%d", (int)getpid());
		setenv("WATCHDOG_PID", num, 1);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	sv->argv[0] = (char *)binary;
	execv(binary, sv->argv);
	dprintf(chan, "error cannot execute %s: %s\n", binary,
	    strerror(errno));
	_exit(127);
}

int
sv_upgrade_begin(struct sv *sv, const char *binary, int conn,
    uint64_t conn_gen, char *err, size_t errlen)
{
	struct sv_upgrade *u;
	char fds[4096];
	int sp[2];
	pid_t pid;

	if (binary == NULL || binary[0] == '\0')
		binary = sv->exe;
	if (sv->stopping || sv->draining) {
		snprintf(err, errlen, "the node is stopping");
		return -1;
	}
	if (sv_upgrade_busy(sv)) {
		snprintf(err, errlen, "an upgrade is under way");
		return -1;
	}
	if (sv->roll != NULL) {
		snprintf(err, errlen, "a restart of workers is under way");
		return -1;
	}
	if (!sv->ready_sent) {
		snprintf(err, errlen, "the node is not ready yet");
		return -1;
	}
	if (binary[0] != '/' || strlen(binary) >= sizeof(u->binary)) {
		snprintf(err, errlen, "binary: expected an absolute path");
		return -1;
	}
	if (access(binary, X_OK) != 0) {
		snprintf(err, errlen, "cannot execute %s: %s", binary,
		    strerror(errno));
		return -1;
	}
	if ((u = calloc(1, sizeof(*u))) == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		free(u);
		return -1;
	}
	if (env_fds(sv, sp[1], fds, sizeof(fds)) != 0) {
		snprintf(err, errlen, "too many fds to pass");
		goto fail;
	}
	/* the new one's workers, if it dies, come back to us */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1) {
		snprintf(err, errlen, "PR_SET_CHILD_SUBREAPER: %s",
		    strerror(errno));
		goto fail;
	}
	if ((pid = fork()) == -1) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		close(sp[0]);
		child_exec(sv, binary, sp[1], fds);
	}
	close(sp[1]);
	(void)fcntl(sp[0], F_SETFL, O_NONBLOCK);
	u->pid = pid;
	u->chan = sp[0];
	u->conn = conn;
	u->conn_gen = conn_gen;
	strlcpy(u->binary, binary, sizeof(u->binary));
	u->started_ms = rn_now_ms();
	u->adopt_deadline_ms = u->started_ms + HANDSHAKE_MS;
	u->ready_deadline_ms = u->started_ms + HANDSHAKE_MS +
	    (int64_t)sv->n_children * (sv->cfg.shutdown_timeout_ms +
	    sv->cfg.worker_heartbeat_timeout_ms + 10000);
	sv->upgrade = u;
	log_notice("upgrade: started %s as pid %d", binary, (int)pid);
	sv_notify_status(sv, "upgrading: new supervisor pid %d", (int)pid);
	return 0;
fail:
	close(sp[0]);
	close(sp[1]);
	free(u);
	return -1;
}

/* The new supervisor has every worker: answer, and leave it the node. */
static void __attribute__((noreturn))
leave(struct sv *sv)
{
	struct sv_upgrade *u = sv->upgrade;
	unsigned i;

	for (i = 0; i < sv->n_children; i++)
		if (sv->children[i].pid != 0)
			log_warnx("upgrade: %s (pid %d) is still ours as we "
			    "leave", sv->children[i].name,
			    (int)sv->children[i].pid);
	log_notice("upgrade: pid %d runs %s with every worker, after %lld "
	    "ms; this supervisor leaves", (int)u->new_pid, u->binary,
	    (long long)(rn_now_ms() - u->started_ms));
	answer(sv, NULL);
	/* the socket's path, the listeners and the segment stay: theirs */
	sv_control_release(sv);
	sv_http_close();
	exit(0);
}

static void
handle_line(struct sv *sv, char *line)
{
	struct sv_upgrade *u = sv->upgrade;
	char name[32];
	long o, p, ms;

	if (strcmp(line, "adopted") == 0 && !u->handsoff) {
		/* from now the workers are the new one's to replace */
		u->handsoff = true;
		sv_http_pause();
		if (write(u->chan, "handsoff\n", 9) != 9)
			log_warn("upgrade: channel");
		log_info("upgrade: pid %d adopted the node: it replaces the "
		    "workers now", (int)u->pid);
	} else if (sscanf(line, "worker %31s %ld %ld %ld", name, &o, &p,
	    &ms) == 4 && u->n_w < RN_ARRAY_SIZE(u->w)) {
		strlcpy(u->w[u->n_w].name, name, sizeof(u->w[0].name));
		u->w[u->n_w].old_pid = o;
		u->w[u->n_w].pid = p;
		u->w[u->n_w].ms = ms;
		u->n_w++;
		log_info("upgrade: %s is pid %ld's now (was %ld), healthy "
		    "after %ld ms", name, (long)u->pid, o, ms);
	} else if (sscanf(line, "ready %ld", &p) == 1 && u->handsoff &&
	    p == u->pid) {
		u->new_pid = (pid_t)p;
		leave(sv);
	} else if (strncmp(line, "refused ", 8) == 0 ||
	    strncmp(line, "error ", 6) == 0)
		strlcpy(u->why, strchr(line, ' ') + 1, sizeof(u->why));
	else
		log_warnx("upgrade: pid %d said something unexpected",
		    (int)u->pid);
}

static void
read_chan(struct sv *sv)
{
	struct sv_upgrade *u = sv->upgrade;
	char *nl;
	ssize_t n;

	while (u->chan >= 0) {
		n = read(u->chan, u->in + u->have, sizeof(u->in) - 1 - u->have);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
			/* it exited or closed: SIGCHLD tells the rest */
			close(u->chan);
			u->chan = -1;
			return;
		}
		if (n == -1)
			return;
		u->have += (size_t)n;
		u->in[u->have] = '\0';
		while ((nl = strchr(u->in, '\n')) != NULL) {
			*nl = '\0';
			handle_line(sv, u->in);
			u->have -= (size_t)(nl + 1 - u->in);
			memmove(u->in, nl + 1, u->have);
			u->in[u->have] = '\0';
		}
		if (u->have == sizeof(u->in) - 1)
			u->have = 0; /* a line too long: dropped */
	}
}

static void
kill_new(struct sv *sv, const char *why)
{
	struct sv_upgrade *u = sv->upgrade;

	if (u->killed)
		return;
	u->killed = true;
	if (u->why[0] == '\0')
		strlcpy(u->why, why, sizeof(u->why));
	log_warnx("upgrade: %s: killing pid %d", why, (int)u->pid);
	kill(u->pid, SIGKILL);
}

void
sv_upgrade_tick(struct sv *sv, int64_t now)
{
	struct sv_upgrade *u = sv->upgrade;

	if (u == NULL)
		return;
	read_chan(sv);
	if ((u = sv->upgrade) == NULL)
		return;
	if (sv_got_sigterm)
		kill_new(sv, "the node is asked to stop");
	else if (!u->handsoff && now > u->adopt_deadline_ms)
		kill_new(sv, "the new supervisor did not adopt the node "
		    "within 10 s");
	else if (now > u->ready_deadline_ms)
		kill_new(sv, "the new supervisor was not ready in time");
}

/*
 * The new supervisor is gone before it was ready: the node is ours
 * again. Each worker it had replaced is dying with it (PDEATHSIG) and,
 * as we are a subreaper, is reaped here: restarted as asked. One whose
 * process is already gone is started again now.
 */
static void
take_back(struct sv *sv, int64_t now)
{
	unsigned i;

	for (i = 0; i < sv->n_children; i++) {
		struct sv_child *c = &sv->children[i];
		struct rn_worker_slot *ws = rn_shm_worker(&sv->shm, c->slot);
		pid_t p = atomic_load(&ws->pid);

		if (!c->given_away)
			continue;
		c->given_away = false;
		if (p > 0 && p != c->pid && kill(p, 0) == 0) {
			c->pid = p;
			c->restart_requested = true;
			c->kill_at_ms = now + sv->cfg.shutdown_timeout_ms;
			kill(p, SIGTERM);
			log_info("upgrade: %s (pid %d) comes back to us",
			    c->name, (int)p);
		} else {
			c->state = RN_WS_BACKOFF;
			c->restart_at_ms = now;
		}
	}
}

bool
sv_upgrade_reaped(struct sv *sv, pid_t pid, int status, int64_t now)
{
	struct sv_upgrade *u = sv->upgrade;
	char why[384];

	if (u == NULL || pid != u->pid)
		return false;
	read_chan(sv);
	if (WIFEXITED(status) && WEXITSTATUS(status) == SV_UPGRADE_EXIT_LAYOUT)
		snprintf(why, sizeof(why), "refused: %s", u->why[0] ? u->why :
		    "the new binary cannot read this node's shared-memory "
		    "layout; restart the node instead");
	else if (WIFEXITED(status))
		snprintf(why, sizeof(why), "the new supervisor exited with "
		    "status %d%s%s", WEXITSTATUS(status), u->why[0] ? ": " : "",
		    u->why);
	else
		snprintf(why, sizeof(why), "the new supervisor was killed by "
		    "signal %d%s%s", WIFSIGNALED(status) ? WTERMSIG(status) : 0,
		    u->why[0] ? ": " : "", u->why);
	if (u->handsoff)
		take_back(sv, now);
	log_warnx("upgrade to %s failed, %s (%u workers replaced): this "
	    "supervisor, pid %d, keeps the node", u->binary, why, u->n_w,
	    (int)getpid());
	answer(sv, why);
	upgrade_free(sv);
	sv_notify_status(sv, "upgrade failed: %s", why);
	return true;
}
