/*
 * The child table: fork, reap, back off and restart workers. Restarting
 * one worker touches no other: its rings are repaired and, for the
 * controller, the metadata image is rebuilt if it died mid-publish.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/connlimit.h"
#include "supervisor/sv.h"
#include "supervisor/sv_http.h"

static void
child_publish(struct sv *sv, struct sv_child *c)
{
	struct rn_worker_slot *ws = rn_shm_worker(&sv->shm, c->slot);

	atomic_store(&ws->pid, (int32_t)c->pid);
	atomic_store(&ws->restarts, c->restarts);
	atomic_store(&ws->started_ms, c->started_ms);
	/* RUNNING is the worker's to set, on its first heartbeat */
	if (c->state != RN_WS_STARTING ||
	    atomic_load(&ws->state) != RN_WS_RUNNING)
		atomic_store(&ws->state, c->state);
}

void
sv_children_init(struct sv *sv)
{
	const struct rn_worker_env *env = &sv->env;
	const struct sv_role *roles;
	size_t r, n_roles;
	unsigned i, k, n = 0;

	memset(sv->children, 0, sizeof(sv->children));
	roles = sv_roles(&n_roles);
	for (r = 0; r < n_roles; r++) {
		k = sv_role_count(&roles[r], env->cfg);
		log_debug("%u %s worker(s)%s%s", k, roles[r].name,
		    roles[r].count_key != NULL ? ", from " : "",
		    roles[r].count_key != NULL ? roles[r].count_key : "");
		for (i = 0; i < k && n < RN_SHM_MAX_WORKERS; i++, n++) {
			sv->children[n].role = roles[r].role;
			sv->children[n].index = i;
		}
	}
	for (i = 0; i < n; i++) {
		struct sv_child *c = &sv->children[i];
		struct rn_worker_slot *ws;

		c->slot = rn_worker_slot_of(env, c->role, c->index);
		rn_worker_name(c->role, c->index, c->name, sizeof(c->name));
		c->state = RN_WS_EMPTY;
		ws = rn_shm_worker(&sv->shm, c->slot);
		ws->role = c->role;
		ws->index = c->index;
		ws->duties = c->index == 0 ? sv_role_of(c->role)->first_duties :
		    0;
	}
	sv->n_children = n;
}

/* Bytes a repair cut off, for runnel_ring_dropped_bytes_total. */
static void
count_dropped(struct sv *sv, size_t bytes)
{
	atomic_fetch_add_explicit(&sv->shm.hdr->ring_dropped_bytes, bytes,
	    memory_order_relaxed);
}

/* The group coordinator's rings, repaired as the controller's are. */
static void
child_repair_coord_rings(struct sv *sv, struct sv_child *c)
{
	struct rn_ring *r;
	unsigned s;

	if (c->role == RN_ROLE_W_COORDINATOR) {
		for (s = 0; s < sv->env.n_workers; s++) {
			r = rn_shm_ring_to_coord(&sv->shm, s);
			if (!rn_ring_valid(r))
				rn_ring_discard(r);
			r = rn_shm_ring_from_coord(&sv->shm, s);
			if (!rn_ring_valid(r))
				count_dropped(sv, rn_ring_repair(r));
		}
		return;
	}
	r = rn_shm_ring_to_coord(&sv->shm, c->slot);
	if (!rn_ring_valid(r))
		count_dropped(sv, rn_ring_repair(r));
	rn_ring_discard(rn_shm_ring_from_coord(&sv->shm, c->slot));
}

/*
 * Before a new incarnation attaches: make what the old one left usable.
 * A ring whose producer died may hold a torn frame: repair() cuts it off.
 * A ring whose consumer died holds only messages for the old incarnation,
 * and its producer may still be pushing: discard() is the safe reset.
 */
static void
child_repair_ipc(struct sv *sv, struct sv_child *c)
{
	struct rn_ring *r;
	size_t dropped;
	unsigned s;

	if (c->role == RN_ROLE_W_CONTROLLER) {
		struct rn_meta_image *mi = rn_shm_meta(&sv->shm);

		if (rn_seq_writer_died(&mi->lock)) {
			log_warnx("controller died while publishing metadata: "
			    "rebuilding the image");
			rn_shm_meta_rebuild(&sv->shm);
		}
		/*
		 * It consumed every ring to the controller. Valid ones keep
		 * their messages: the live workers' requests still count.
		 */
		for (s = 1; s < sv->env.n_workers; s++) {
			r = rn_shm_ring_to_ctl(&sv->shm, s);
			if (!rn_ring_valid(r)) {
				log_warnx("ring to the controller from slot %u "
				    "was left inconsistent: emptied", s);
				rn_ring_discard(r);
			}
			r = rn_shm_ring_from_ctl(&sv->shm, s);
			if (!rn_ring_valid(r) && (dropped = rn_ring_repair(r)) > 0) {
				log_warnx("ring from the controller to slot %u: "
				    "dropped a torn tail of %zu bytes", s, dropped);
				count_dropped(sv, dropped);
			}
		}
		return;
	}
	r = rn_shm_ring_to_ctl(&sv->shm, c->slot);
	if (!rn_ring_valid(r) && (dropped = rn_ring_repair(r)) > 0) {
		log_warnx("%s: dropped a torn tail of %zu bytes from its ring "
		    "to the controller", c->name, dropped);
		count_dropped(sv, dropped);
	}
	rn_ring_discard(rn_shm_ring_from_ctl(&sv->shm, c->slot));
}

int
sv_child_start(struct sv *sv, struct sv_child *c)
{
	pid_t pid;

	child_repair_ipc(sv, c);
	child_repair_coord_rings(sv, c);
	c->state = RN_WS_STARTING;
	atomic_store(&rn_shm_worker(&sv->shm, c->slot)->state, RN_WS_STARTING);
	atomic_store(&rn_shm_worker(&sv->shm, c->slot)->heartbeat_ms, 0);
	if ((pid = fork()) == -1) {
		log_warn("fork %s", c->name);
		return -errno;
	}
	if (pid == 0) {
		if (sv->ctl_fd >= 0)
			close(sv->ctl_fd);
		sv_http_close();
		sv_upgrade_child_close(sv);
		sv_takeover_child_close(sv);
		rn_worker_run(&sv->env, c->role, c->index,
		    sv_role_of(c->role)->main, sv->service_uid,
		    sv->service_gid, sv->drop_privileges);
	}
	c->pid = pid;
	c->started_ms = rn_now_ms();
	c->kill_at_ms = 0;
	child_publish(sv, c);
	log_info("started %s, pid %d", c->name, (int)pid);
	return 0;
}

struct sv_child *
sv_child_find(struct sv *sv, const char *name)
{
	unsigned i;

	for (i = 0; i < sv->n_children; i++)
		if (strcmp(sv->children[i].name, name) == 0)
			return &sv->children[i];
	return NULL;
}

static struct sv_child *
child_by_pid(struct sv *sv, pid_t pid)
{
	unsigned i;

	for (i = 0; i < sv->n_children; i++)
		if (sv->children[i].pid == pid)
			return &sv->children[i];
	return NULL;
}

static void
child_describe_exit(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d",
		    WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)",
		    WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "stopped with wait status 0x%x", status);
}

static void
child_exited(struct sv *sv, struct sv_child *c, int status, int64_t now)
{
	char how[96];
	int64_t delay;

	child_describe_exit(status, how, sizeof(how));
	c->pid = 0;
	c->last_status = status;
	if (sv_upgrade_handsoff(sv)) {
		/* the new supervisor stopped it and starts its own: the slot
		 * is no longer ours to write */
		log_info("%s %s; handed to the new supervisor", c->name, how);
		c->given_away = true;
		return;
	}
	/* its connections died with it: so do their counts, whether or
	 * not it is ever started again */
	rn_connlim_slice_reset(&sv->shm, c->slot);
	if (sv->stopping) {
		log_info("%s %s", c->name, how);
		c->state = RN_WS_STOPPED;
		child_publish(sv, c);
		return;
	}
	if (c->restart_requested) {
		/* operator restart: not a failure, no backoff */
		c->restart_requested = false;
		c->restarts++;
		c->requested_restarts++;
		log_notice("%s %s; restarting as asked", c->name, how);
		sv_child_start(sv, c);
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == RN_WORKER_EXIT_FATAL) {
		log_errx("%s %s: it asked not to be restarted", c->name, how);
		c->state = RN_WS_FAILED;
	} else if ((delay = sv_backoff_failure(&c->history, &sv->policy,
	    now)) < 0) {
		log_errx("%s %s: %d failures within %lld ms, giving up on it",
		    c->name, how, sv->policy.max_failures + 1,
		    (long long)sv->policy.window_ms);
		c->state = RN_WS_FAILED;
	} else {
		log_warnx("%s %s; restarting in %lld ms", c->name, how,
		    (long long)delay);
		c->state = RN_WS_BACKOFF;
		c->restart_at_ms = now + delay;
	}
	child_publish(sv, c);
	if (c->state == RN_WS_FAILED) {
		sv_notify_status(sv, "worker %s failed", c->name);
		if (sv_role_of(c->role)->on_failure == SV_FAILED_STOPS_NODE) {
			/* without it the node is useless: let systemd
			 * restart it whole */
			log_errx("the %s failed: stopping the node", c->name);
			sv->exit_code = 1;
			sv_got_sigterm = 1;
		}
	}
}

void
sv_children_reap(struct sv *sv, int64_t now)
{
	struct sv_child *c;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if ((c = child_by_pid(sv, pid)) != NULL)
			child_exited(sv, c, status, now);
		else
			(void)sv_upgrade_reaped(sv, pid, status, now);
	}
}

void
sv_children_tick(struct sv *sv, int64_t now)
{
	unsigned i;

	/*
	 * The supervisor itself did not run for a while (the node was
	 * SIGSTOPped, or the machine stalled): its workers did not either,
	 * so give them a full timeout to heartbeat before calling them hung.
	 */
	if (sv_upgrade_handsoff(sv))
		return; /* the new supervisor watches the workers */
	if (sv->last_tick_ms != 0 && now - sv->last_tick_ms > 1000)
		sv->hb_grace_until_ms = now + sv->cfg.worker_heartbeat_timeout_ms;
	sv->last_tick_ms = now;

	for (i = 0; i < sv->n_children; i++) {
		struct sv_child *c = &sv->children[i];
		struct rn_worker_slot *ws = rn_shm_worker(&sv->shm, c->slot);

		if (c->state == RN_WS_BACKOFF && now >= c->restart_at_ms &&
		    !sv->stopping) {
			c->restarts++;
			sv_child_start(sv, c);
			continue;
		}
		if (c->pid == 0)
			continue;
		if (c->kill_at_ms != 0 && now >= c->kill_at_ms) {
			log_warnx("%s did not stop in time: SIGKILL", c->name);
			kill(c->pid, SIGKILL);
			c->kill_at_ms = 0;
			continue;
		}
		c->state = atomic_load(&ws->state);
		/* a hung worker (no heartbeat) is killed and restarted */
		if (c->state == RN_WS_RUNNING && !sv->stopping &&
		    c->kill_at_ms == 0 && now >= sv->hb_grace_until_ms &&
		    now - atomic_load(&ws->heartbeat_ms) >
		    sv->cfg.worker_heartbeat_timeout_ms) {
			log_errx("%s has not heartbeaten for %lld ms: killing "
			    "it", c->name,
			    (long long)(now - atomic_load(&ws->heartbeat_ms)));
			kill(c->pid, SIGKILL);
		}
	}
}

int
sv_child_restart(struct sv *sv, struct sv_child *c)
{
	int64_t now = rn_now_ms();

	if (c->pid == 0) {
		/* failed or backing off: start it now, history forgotten */
		sv_backoff_reset(&c->history);
		c->restarts++;
		c->requested_restarts++;
		return sv_child_start(sv, c);
	}
	c->restart_requested = true;
	c->kill_at_ms = now + sv->cfg.shutdown_timeout_ms;
	if (kill(c->pid, SIGTERM) == -1)
		return -errno;
	return 0;
}

/*
 * Stop in the role table's stages: network workers first (no new client
 * work), then the replica fetchers, the controller last. Each stage gets
 * a share of the deadline; what is left at the deadline is killed.
 */
void
sv_children_stop(struct sv *sv, int64_t now)
{
	const struct sv_role *roles;
	size_t n_roles, k;
	unsigned i, stage, last = 0;

	roles = sv_roles(&n_roles);
	for (k = 0; k < n_roles; k++)
		if (roles[k].stop_stage > last)
			last = roles[k].stop_stage;
	for (stage = 0; stage <= last; stage++) {
		bool alive = false;

		for (i = 0; i < sv->n_children; i++) {
			struct sv_child *c = &sv->children[i];

			if (sv_role_of(c->role)->stop_stage != stage)
				continue;
			if (c->state == RN_WS_BACKOFF) {
				c->state = RN_WS_STOPPED;
				child_publish(sv, c);
			}
			if (c->pid == 0)
				continue;
			alive = true;
			if (c->state != RN_WS_STOPPING) {
				c->state = RN_WS_STOPPING;
				child_publish(sv, c);
				kill(c->pid, SIGTERM);
				c->kill_at_ms = sv->stop_deadline_ms;
			}
		}
		if (alive)
			return; /* the next stage waits for this one */
	}
	(void)now;
}

bool
sv_children_all_running(const struct sv *sv)
{
	unsigned i;

	for (i = 0; i < sv->n_children; i++)
		if (atomic_load(&rn_shm_worker(&sv->shm,
		    sv->children[i].slot)->state) != RN_WS_RUNNING)
			return false;
	return true;
}

bool
sv_children_all_exited(const struct sv *sv)
{
	unsigned i;

	for (i = 0; i < sv->n_children; i++)
		if (sv->children[i].pid != 0)
			return false;
	return true;
}

unsigned
sv_children_count_state(const struct sv *sv, enum rn_worker_state s)
{
	unsigned i, n = 0;

	for (i = 0; i < sv->n_children; i++)
		if (sv->children[i].state == s)
			n++;
	return n;
}
