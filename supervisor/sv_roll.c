/*
 * runnelctl restart --role ROLE [--rolling]: restart every worker of a
 * role (or of all roles), each the way `restart WORKER` does (SIGTERM,
 * the worker finishes what it can, the supervisor forks the next
 * incarnation as soon as it is reaped, with no backoff), and answer the
 * asker once every new worker is healthy.
 *
 * Without --rolling the workers are asked at once. With it they go one
 * at a time, the next only when the one before has a new pid and is
 * RUNNING (it has heartbeaten: what `runnelctl status` shows), in the
 * order that disturbs clients least: the log cleaner, the group
 * coordinator, the replica fetchers, the network workers one by one
 * (the listening sockets are the supervisor's and shared with
 * EPOLLEXCLUSIVE, so the others keep accepting while one is replaced,
 * and a connection that arrives while none is accepting waits in the
 * backlog: never refused), the controller last.
 *
 * One such restart runs at a time. It is given up, and the asker told,
 * when a worker is not healthy again within shutdown.timeout.ms plus
 * worker.heartbeat.timeout.ms plus 10 s, when a worker fails for good,
 * or when the node stops.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "supervisor/sv.h"

struct sv_roll {
	char what[32];                          /* the role asked, or "all" */
	bool rolling;
	int conn;                               /* who waits for the answer */
	uint64_t conn_gen;
	unsigned order[RN_SHM_MAX_WORKERS];     /* children, in restart order */
	pid_t old_pid[RN_SHM_MAX_WORKERS];
	int64_t asked_ms[RN_SHM_MAX_WORKERS];
	int64_t done_ms[RN_SHM_MAX_WORKERS];
	unsigned n, next;                       /* next: first not yet asked */
	int64_t started_ms;
	int64_t step_limit_ms;                  /* per worker */
};

/* The restart order of --role all, rolling or not. */
static const enum rn_worker_role roll_order[] = {
	RN_ROLE_W_CLEANER, RN_ROLE_W_COORDINATOR, RN_ROLE_W_FETCHER,
	RN_ROLE_W_NETWORK, RN_ROLE_W_CONTROLLER,
};

const enum rn_worker_role *
sv_roll_order(size_t *n)
{
	*n = RN_ARRAY_SIZE(roll_order);
	return roll_order;
}

static bool
roll_healthy(struct sv *sv, struct sv_roll *r, unsigned k)
{
	struct sv_child *c = &sv->children[r->order[k]];

	return c->pid != 0 && c->pid != r->old_pid[k] &&
	    !c->restart_requested &&
	    atomic_load(&rn_shm_worker(&sv->shm, c->slot)->state) ==
	    RN_WS_RUNNING;
}

static void
roll_finish(struct sv *sv, const char *error)
{
	struct sv_roll *r = sv->roll;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int64_t now = rn_now_ms();
	unsigned k, done = 0;

	for (k = 0; k < r->n; k++)
		if (r->done_ms[k] != 0)
			done++;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, error != NULL ? 6 : 5);
	rn_mp_pack_str(&pk, "ok");
	if (error != NULL)
		msgpack_pack_false(&pk);
	else
		msgpack_pack_true(&pk);
	if (error != NULL) {
		rn_mp_pack_str(&pk, "error");
		rn_mp_pack_str(&pk, error);
	}
	rn_mp_pack_str(&pk, "role");
	rn_mp_pack_str(&pk, r->what);
	rn_mp_pack_str(&pk, "rolling");
	if (r->rolling)
		msgpack_pack_true(&pk);
	else
		msgpack_pack_false(&pk);
	rn_mp_pack_str(&pk, "duration_ms");
	msgpack_pack_int64(&pk, now - r->started_ms);
	rn_mp_pack_str(&pk, "workers");
	msgpack_pack_array(&pk, r->n);
	for (k = 0; k < r->n; k++) {
		struct sv_child *c = &sv->children[r->order[k]];

		msgpack_pack_map(&pk, 5);
		rn_mp_pack_str(&pk, "name");
		rn_mp_pack_str(&pk, c->name);
		rn_mp_pack_str(&pk, "old_pid");
		msgpack_pack_int64(&pk, r->old_pid[k]);
		rn_mp_pack_str(&pk, "pid");
		msgpack_pack_int64(&pk, r->done_ms[k] != 0 ? c->pid : 0);
		rn_mp_pack_str(&pk, "ms");
		msgpack_pack_int64(&pk, r->done_ms[k] != 0 ?
		    r->done_ms[k] - r->asked_ms[k] : -1);
		rn_mp_pack_str(&pk, "restarts");
		msgpack_pack_unsigned_int(&pk, c->restarts);
	}
	if (error != NULL)
		log_warnx("restart of %s: %s (%u of %u workers restarted)",
		    r->what, error, done, r->n);
	else
		log_notice("%s restart of %s done: %u workers in %lld ms",
		    r->rolling ? "rolling" : "", r->what, r->n,
		    (long long)(now - r->started_ms));
	if (!sv_control_reply_to(r->conn, r->conn_gen, sb.data, sb.size))
		log_info("restart of %s: the asker has gone", r->what);
	msgpack_sbuffer_destroy(&sb);
	free(r);
	sv->roll = NULL;
}

static int
roll_ask(struct sv *sv, struct sv_roll *r, unsigned k, int64_t now)
{
	struct sv_child *c = &sv->children[r->order[k]];

	r->old_pid[k] = c->pid;
	r->asked_ms[k] = now;
	log_info("restart of %s: restarting %s (pid %d)", r->what, c->name,
	    (int)c->pid);
	return sv_child_restart(sv, c);
}

int
sv_roll_begin(struct sv *sv, const char *role, bool rolling, int conn,
    uint64_t conn_gen, char *err, size_t errlen)
{
	struct sv_roll *r;
	size_t i, j;
	unsigned k;
	bool all = strcmp(role, "all") == 0, known = all;

	if (sv->roll != NULL) {
		snprintf(err, errlen, "a restart of %s is under way",
		    sv->roll->what);
		return -1;
	}
	if (sv_upgrade_busy(sv)) {
		snprintf(err, errlen, "an upgrade is under way");
		return -1;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	strlcpy(r->what, role, sizeof(r->what));
	r->rolling = rolling;
	r->conn = conn;
	r->conn_gen = conn_gen;
	for (i = 0; i < RN_ARRAY_SIZE(roll_order); i++) {
		if (!all && strcmp(rn_worker_role_name(roll_order[i]),
		    role) != 0)
			continue;
		known = true;
		for (j = 0; j < sv->n_children; j++)
			if (sv->children[j].role == roll_order[i])
				r->order[r->n++] = (unsigned)j;
	}
	if (!known || r->n == 0) {
		snprintf(err, errlen, known ? "no %s worker runs on this node" :
		    "no such role (network, replica-fetcher, log-cleaner, "
		    "group-coordinator, controller or all)", role);
		free(r);
		return -1;
	}
	r->started_ms = rn_now_ms();
	r->step_limit_ms = sv->cfg.shutdown_timeout_ms +
	    sv->cfg.worker_heartbeat_timeout_ms + 10000;
	sv->roll = r;
	/* at once: all of them now; rolling: the first, then each in turn */
	for (k = 0; k < (rolling ? 1 : r->n); k++) {
		if (roll_ask(sv, r, k, r->started_ms) != 0) {
			char why[96];

			snprintf(why, sizeof(why), "cannot restart %s: %s",
			    sv->children[r->order[k]].name, strerror(errno));
			r->next = k;
			roll_finish(sv, why);
			return 0; /* answered */
		}
	}
	r->next = k;
	return 0;
}

void
sv_roll_tick(struct sv *sv, int64_t now)
{
	struct sv_roll *r = sv->roll;
	unsigned k;
	bool waiting = false;
	char why[160];

	if (r == NULL)
		return;
	if (sv->stopping || sv->draining) {
		roll_finish(sv, "the node is stopping");
		return;
	}
	for (k = 0; k < r->next; k++) {
		struct sv_child *c = &sv->children[r->order[k]];

		if (r->done_ms[k] != 0)
			continue;
		if (roll_healthy(sv, r, k)) {
			r->done_ms[k] = now;
			log_info("restart of %s: %s is back as pid %d after "
			    "%lld ms", r->what, c->name, (int)c->pid,
			    (long long)(now - r->asked_ms[k]));
			continue;
		}
		if (c->state == RN_WS_FAILED) {
			snprintf(why, sizeof(why), "%s failed after its "
			    "restart", c->name);
			roll_finish(sv, why);
			return;
		}
		if (now - r->asked_ms[k] > r->step_limit_ms) {
			snprintf(why, sizeof(why), "%s was not healthy again "
			    "within %lld ms", c->name,
			    (long long)r->step_limit_ms);
			roll_finish(sv, why);
			return;
		}
		waiting = true;
	}
	if (waiting)
		return;
	if (r->next == r->n) {
		roll_finish(sv, NULL);
		return;
	}
	if (roll_ask(sv, r, r->next, now) != 0) {
		snprintf(why, sizeof(why), "cannot restart %s: %s",
		    sv->children[r->order[r->next]].name, strerror(errno));
		roll_finish(sv, why);
		return;
	}
	r->next++;
}

void
sv_roll_abort(struct sv *sv, const char *why)
{
	if (sv->roll != NULL)
		roll_finish(sv, why);
}
