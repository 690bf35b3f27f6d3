/*
 * The control socket: AF_UNIX stream, mode 0660, one length-prefixed
 * msgpack request per frame. Callers are identified with SO_PEERCRED;
 * verbs that change anything are refused to anyone but root and the
 * service user. A malformed or oversized request gets an error reply and
 * its connection closed; nothing else is affected.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "supervisor/sv.h"
#include "supervisor/sv_control.h"
#include "supervisor/sv_metrics.h"
#include "supervisor/sv_request.h"

static struct sv_conn conns[SV_CONTROL_MAX_CONNS];
static uint64_t conn_gen;  /* tells a slot's connections apart */

int
sv_control_open(struct sv *sv)
{
	struct sockaddr_un sun;
	char dir[sizeof(sun.sun_path)];
	int fd, rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, sv->cfg.control_socket_path,
	    sizeof(sun.sun_path)) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strlcpy(dir, sun.sun_path, sizeof(dir));
	if ((rc = rn_mkdir_p(dirname(dir), 0755)) != 0)
		return rc;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		return -errno;
	/* a socket left by a killed runneld: the dir lock proves it is stale */
	unlink(sun.sun_path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(sun.sun_path, 0660) == -1 || listen(fd, 16) == -1) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (sv->drop_privileges &&
	    chown(sun.sun_path, 0, sv->service_gid) == -1)
		log_warn("chown %s", sun.sun_path);
	for (int i = 0; i < SV_CONTROL_MAX_CONNS; i++)
		conns[i].fd = -1;
	sv->ctl_fd = fd;
	return 0;
}

void
sv_control_adopt(struct sv *sv, int fd)
{
	for (int i = 0; i < SV_CONTROL_MAX_CONNS; i++)
		conns[i].fd = -1;
	sv->ctl_fd = fd;
}

void
sv_control_release(struct sv *sv)
{
	for (int i = 0; i < SV_CONTROL_MAX_CONNS; i++)
		if (conns[i].fd >= 0) {
			close(conns[i].fd);
			free(conns[i].buf);
			conns[i].fd = -1;
		}
	if (sv->ctl_fd >= 0)
		close(sv->ctl_fd);
	sv->ctl_fd = -1;
}

void
sv_control_close(struct sv *sv)
{
	for (int i = 0; i < SV_CONTROL_MAX_CONNS; i++)
		if (conns[i].fd >= 0) {
			close(conns[i].fd);
			free(conns[i].buf);
			conns[i].fd = -1;
		}
	if (sv->ctl_fd >= 0) {
		close(sv->ctl_fd);
		unlink(sv->cfg.control_socket_path);
		sv->ctl_fd = -1;
	}
}

static void
conn_close(struct sv_conn *c)
{
	close(c->fd);
	free(c->buf);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void
sv_control_accept(struct sv *sv)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd, i;

	while ((fd = accept4(sv->ctl_fd, NULL, NULL,
	    SOCK_CLOEXEC | SOCK_NONBLOCK)) != -1) {
		for (i = 0; i < SV_CONTROL_MAX_CONNS; i++)
			if (conns[i].fd == -1)
				break;
		if (i == SV_CONTROL_MAX_CONNS ||
		    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
			log_warnx("control: refusing a connection (%s)",
			    i == SV_CONTROL_MAX_CONNS ? "too many" :
			    strerror(errno));
			close(fd);
			continue;
		}
		memset(&conns[i], 0, sizeof(conns[i]));
		conns[i].fd = fd;
		conns[i].uid = cred.uid;
		conns[i].pid = cred.pid;
		conns[i].opened_ms = rn_now_ms();
		conns[i].gen = ++conn_gen;
	}
}

int
sv_control_pollfds(struct pollfd *pfd, int max)
{
	int i, n = 0;

	for (i = 0; i < SV_CONTROL_MAX_CONNS && n < max; i++)
		if (conns[i].fd >= 0) {
			pfd[n].fd = conns[i].fd;
			pfd[n].events = conns[i].out != NULL ? POLLOUT : POLLIN;
			pfd[n].revents = 0;
			n++;
		}
	return n;
}

/* {"ok": true} or {"ok": false, "error": msg}. */
static void
reply(struct sv_conn *c, const char *msg)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, msg != NULL ? 2 : 1);
	rn_mp_pack_str(&pk, "ok");
	if (msg != NULL) {
		msgpack_pack_false(&pk);
		rn_mp_pack_str(&pk, "error");
		rn_mp_pack_str(&pk, msg);
	} else
		msgpack_pack_true(&pk);
	/* replies are small; a peer that cannot take one loses it */
	(void)rn_ctl_send(c->fd, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
}

bool
sv_control_reply_to(int conn, uint64_t gen, const char *data, size_t len)
{
	if (conn < 0 || conn >= SV_CONTROL_MAX_CONNS || conns[conn].fd < 0 ||
	    conns[conn].gen != gen)
		return false;
	return rn_ctl_send(conns[conn].fd, data, len) == 0;
}

static void
reply_error(struct sv_conn *c, const char *msg)
{
	reply(c, msg);
}

/* What the socket takes of a pending reply; -1: the peer is gone. */
static int
conn_flush(struct sv_conn *c)
{
	ssize_t k;

	while (c->out_off < c->out_len) {
		k = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
		if (k == -1 && errno == EINTR)
			continue;
		if (k == -1 && errno == EAGAIN)
			return 0;
		if (k <= 0)
			return -1;
		c->out_off += (size_t)k;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return 0;
}

/*
 * A reply of any size (up to RN_CTL_MAX_REPLY): framed, and what the
 * socket does not take now is sent as the peer reads, never blocking.
 */
static void
reply_sbuf(struct sv_conn *c, msgpack_sbuffer *sb)
{
	uint32_t be = htonl((uint32_t)sb->size);

	if (c->out != NULL || (c->out = malloc(4 + sb->size)) == NULL)
		return;
	memcpy(c->out, &be, 4);
	memcpy(c->out + 4, sb->data, sb->size);
	c->out_len = 4 + sb->size;
	c->out_off = 0;
	c->out_ms = rn_now_ms();
	if (conn_flush(c) != 0) {
		free(c->out);
		c->out = NULL;
		c->out_len = 0;
	}
}

static bool
conn_privileged(const struct sv *sv, const struct sv_conn *c)
{
	return c->uid == 0 || c->uid == sv->service_uid;
}

static void
reply_ok(struct sv_conn *c)
{
	reply(c, NULL);
}

static void
reply_packed(struct sv *sv, struct sv_conn *c,
    void (*pack)(struct sv *, msgpack_packer *))
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack(sv, &pk);
	reply_sbuf(c, &sb);
	msgpack_sbuffer_destroy(&sb);
}

static void
verb_status(struct sv *sv, struct sv_conn *c, const struct sv_request *req)
{
	(void)req;
	reply_packed(sv, c, sv_control_pack_status);
}

/* The observed brokers as this node's metadata image has them. */
static void
verb_brokers(struct sv *sv, struct sv_conn *c, const struct sv_request *req)
{
	(void)req;
	reply_packed(sv, c, sv_control_pack_brokers);
}

/* The figures of /metrics, as text and as samples. */
static void
verb_metrics(struct sv *sv, struct sv_conn *c, const struct sv_request *req)
{
	(void)req;
	reply_packed(sv, c, sv_control_pack_metrics);
}

/* Test faults: named as faults, off unless an operator asks. */
static void
verb_fault(struct sv *sv, struct sv_conn *c, const struct sv_request *req)
{
	if (strcmp(req->fault, "stall-fetch") != 0 ||
	    (strcmp(req->state, "on") != 0 && strcmp(req->state, "off") != 0)) {
		reply_error(c, "usage: fault stall-fetch on|off");
		return;
	}
	atomic_store(&sv->shm.hdr->fault_stall_fetch,
	    strcmp(req->state, "on") == 0);
	log_warnx("control: test fault %s turned %s by uid %u", req->fault,
	    req->state, (unsigned)c->uid);
	reply_ok(c);
}

static void
verb_stop(struct sv *sv, struct sv_conn *c, const struct sv_request *req)
{
	(void)sv;
	(void)req;
	log_notice("control: stop requested by uid %u pid %d",
	    (unsigned)c->uid, (int)c->pid);
	sv_got_sigterm = 1;
	reply_ok(c);
}

/*
 * restart WORKER: SIGTERM and a new incarnation, answered at once.
 * restart --role ROLE [--rolling]: every worker of the role (or all of
 * them), answered when the last new one is healthy (sv_roll.c).
 */
static void
verb_restart(struct sv *sv, struct sv_conn *c, const struct sv_request *req)
{
	struct sv_child *child = NULL;
	char err[160];

	if (sv->stopping) {
		reply_error(c, "the node is stopping");
		return;
	}
	if (sv_upgrade_busy(sv)) {
		/* the workers are changing hands */
		reply_error(c, "an upgrade is under way");
		return;
	}
	if (req->has_role) {
		log_notice("control: %srestart of role %s requested by uid %u",
		    req->rolling ? "rolling " : "", req->role,
		    (unsigned)c->uid);
		if (sv_roll_begin(sv, req->role, req->rolling, (int)(c - conns),
		    c->gen, err, sizeof(err)) != 0)
			reply_error(c, err);
		/* else the answer comes when the restarts are done */
		return;
	}
	if (!req->has_worker ||
	    (child = sv_child_find(sv, req->worker)) == NULL) {
		reply_error(c, "no such worker");
	} else {
		log_notice("control: restart of %s requested by uid %u",
		    req->worker, (unsigned)c->uid);
		if (sv_child_restart(sv, child) != 0)
			reply_error(c, strerror(errno));
		else
			reply_ok(c);
	}
}

/*
 * upgrade [binary]: re-execute the supervisor (sv_upgrade.c), answered
 * when the new one is ready and this one leaves, or when it failed.
 */
static void
verb_upgrade(struct sv *sv, struct sv_conn *c, const struct sv_request *req)
{
	char err[256];

	if (req->bad_binary) {
		reply_error(c, "binary: expected an absolute path");
		return;
	}
	log_notice("control: upgrade to %s requested by uid %u",
	    req->binary[0] ? req->binary : sv->exe, (unsigned)c->uid);
	if (sv_upgrade_begin(sv, req->binary, (int)(c - conns), c->gen, err,
	    sizeof(err)) != 0)
		reply_error(c, err);
}

/*
 * reload: the TLS listeners' key and trust files read and checked again
 * (sv_security.c); a bad one is refused and nothing changes. Then the
 * network workers are replaced one by one, as restart --role network
 * --rolling, each new one forked with the new contexts; answered when
 * the last is healthy.
 */
static void
verb_reload(struct sv *sv, struct sv_conn *c, const struct sv_request *req)
{
	char err[640];

	(void)req;
	if (sv->stopping) {
		reply_error(c, "the node is stopping");
		return;
	}
	if (sv_upgrade_busy(sv) || sv->roll != NULL) {
		/* checked before the contexts change, so a refusal changes
		 * nothing */
		reply_error(c, sv->roll != NULL ? "a restart is under way" :
		    "an upgrade is under way");
		return;
	}
	log_notice("control: reload of the TLS certificates requested by "
	    "uid %u", (unsigned)c->uid);
	if (sv_security_reload(sv, err, sizeof(err)) < 0) {
		log_warnx("reload refused: %s", err);
		reply_error(c, err);
		return;
	}
	if (sv_roll_begin(sv, "network", true, (int)(c - conns), c->gen, err,
	    sizeof(err)) != 0)
		reply_error(c, err);
	/* else the answer comes when the network workers are replaced */
}

_Static_assert(SV_REQUEST_PATH_MAX == sizeof(((struct sv *)0)->exe),
    "an upgrade's binary fits where the supervisor keeps its own");

/* What each verb runs; those that change the node need privilege. */
static const struct verb {
	void (*fn)(struct sv *, struct sv_conn *, const struct sv_request *);
	bool privileged;
	bool log_refusal;
} verbs[SV_VERB_COUNT] = {
	[SV_VERB_STATUS] = { verb_status, false, false },
	[SV_VERB_BROKERS] = { verb_brokers, false, false },
	[SV_VERB_METRICS] = { verb_metrics, false, false },
	[SV_VERB_FAULT] = { verb_fault, true, false },
	[SV_VERB_RESTART] = { verb_restart, true, true },
	[SV_VERB_STOP] = { verb_stop, true, true },
	[SV_VERB_UPGRADE] = { verb_upgrade, true, true },
	[SV_VERB_RELOAD] = { verb_reload, true, true },
};

/* Answer one request; false when the connection should close. */
static bool
handle_request(struct sv *sv, struct sv_conn *c, const char *buf, size_t len)
{
	struct sv_request req;
	const struct verb *v;
	const char *err;
	int rc;

	if ((rc = sv_request_decode(buf, len, &req, &err)) != 0) {
		if (rc == -EBADMSG)
			log_warnx("control: malformed request from pid %d "
			    "uid %u", (int)c->pid, (unsigned)c->uid);
		reply_error(c, err);
		return rc == -ENOENT;	/* an unknown verb: the next one */
	}
	v = &verbs[req.verb];
	if (v->privileged && !conn_privileged(sv, c)) {
		if (v->log_refusal)
			log_warnx("control: %s refused to uid %u",
			    sv_verb_name(req.verb), (unsigned)c->uid);
		reply_error(c, "permission denied: only root and the "
		    "service user may change the node");
		return true;
	}
	v->fn(sv, c, &req);
	return true;
}

/* Read what is there; answer each complete frame. */
static void
conn_read(struct sv *sv, struct sv_conn *c)
{
	for (;;) {
		size_t want = c->have < 4 ? 4 - c->have : c->need - c->have;
		ssize_t n;

		if (c->have >= 4 && c->buf == NULL) {
			uint32_t be;

			memcpy(&be, c->hdr, 4);
			c->need = 4 + (size_t)ntohl(be);
			if (c->need - 4 > RN_CTL_MAX_REQUEST) {
				log_warnx("control: %zu-byte request from pid "
				    "%d refused", c->need - 4, (int)c->pid);
				reply_error(c, "request too large");
				conn_close(c);
				return;
			}
			if ((c->buf = malloc(c->need - 4 + 1)) == NULL) {
				conn_close(c);
				return;
			}
			want = c->need - c->have;
		}
		if (c->have < 4)
			n = read(c->fd, c->hdr + c->have, want);
		else
			n = read(c->fd, c->buf + (c->have - 4), want);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
			conn_close(c);
			return;
		}
		if (n == -1)
			return;
		if (c->have == 0)
			c->opened_ms = rn_now_ms(); /* a request starts: its clock */
		c->have += (size_t)n;
		if (c->buf != NULL && c->have == c->need) {
			bool keep = handle_request(sv, c, c->buf, c->need - 4);

			free(c->buf);
			c->buf = NULL;
			c->have = c->need = 0;
			if (!keep) {
				conn_close(c);
				return;
			}
			if (c->out != NULL)
				return;	/* the next request after this reply */
		}
	}
}

void
sv_control_handle(struct sv *sv, const struct pollfd *pfd, int n)
{
	int i, j;

	for (i = 0; i < n; i++) {
		if (pfd[i].revents == 0)
			continue;
		for (j = 0; j < SV_CONTROL_MAX_CONNS; j++)
			if (conns[j].fd == pfd[i].fd) {
				if (conns[j].out == NULL)
					conn_read(sv, &conns[j]);
				else if (conn_flush(&conns[j]) != 0 ||
				    (pfd[i].revents & (POLLERR | POLLHUP)))
					conn_close(&conns[j]);
				break;
			}
	}
	/* a peer that sends part of a request and sits on it is dropped */
	int64_t now = rn_now_ms();
	for (j = 0; j < SV_CONTROL_MAX_CONNS; j++)
		if (conns[j].fd >= 0 && ((conns[j].have > 0 &&
		    now - conns[j].opened_ms > 10000) || (conns[j].out != NULL &&
		    now - conns[j].out_ms > 10000)))
			conn_close(&conns[j]);
}
