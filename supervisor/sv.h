/*
 * The supervisor: the one privileged process of a node. It owns the
 * listeners, the log dir locks, the shared memory and the control socket,
 * and forks, watches and restarts the workers.
 */
#ifndef SV_H
#define SV_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "common/config.h"
#include "ipc/shm.h"
#include "supervisor/sv_backoff.h"
#include "workers/worker.h"

/* What a role's failure means once its restarts gave up. */
enum sv_on_failure {
	SV_FAILED_STAYS_DOWN,   /* the node runs on without that worker */
	SV_FAILED_STOPS_NODE,   /* the node stops (systemd restarts it) */
};

/* One row of the role table (sv_roles.c). */
struct sv_role {
	enum rn_worker_role role;
	const char *name;
	rn_worker_main_fn main;        /* handed to rn_worker_run() */
	const char *count_key;         /* config key of how many; NULL: one */
	size_t count_off;              /* that int in struct rn_config */
	unsigned stop_stage;           /* shutdown order, lowest first */
	enum sv_on_failure on_failure;
	uint32_t first_duties;         /* RN_DUTY_* of the role's worker 0 */
};

struct sv_roll;
struct sv_upgrade;
struct sv_takeover;

struct sv_child {
	char name[32];                 /* "network-1" */
	enum rn_worker_role role;
	unsigned index;
	unsigned slot;                 /* worker slot in shared memory */
	pid_t pid;                     /* 0 when not running */
	enum rn_worker_state state;
	int64_t started_ms;
	int64_t restart_at_ms;         /* RN_WS_BACKOFF: when to start again */
	int64_t kill_at_ms;            /* asked to stop: SIGKILL after this */
	bool restart_requested;        /* operator restart: not a failure */
	unsigned restarts;             /* all restarts, failures or asked */
	unsigned requested_restarts;   /* of those, the operator's */
	struct sv_restart_state history;
	int last_status;               /* raw wait status of the last exit */
	bool given_away;               /* upgrade: the new supervisor's now */
};

struct sv {
	struct rn_config cfg;
	struct rn_shm shm;
	struct rn_worker_env env;      /* what every worker inherits */
	struct sv_child children[RN_SHM_MAX_WORKERS];
	unsigned n_children;
	struct sv_restart_policy policy;
	int ctl_fd;
	uid_t service_uid;
	gid_t service_gid;
	bool drop_privileges;
	bool ready_sent;
	bool stopping;
	bool draining;                 /* controlled shutdown in progress */
	int64_t drain_deadline_ms;
	int64_t stop_deadline_ms;
	int64_t started_ms;
	int64_t last_tick_ms;          /* to notice the supervisor was paused */
	int64_t hb_grace_until_ms;     /* no hung-worker kills before this */
	int exit_code;
	uint64_t watchdog_usec;
	int64_t next_watchdog_ms;
	char status_line[256];
	struct sv_roll *roll;          /* a restart --role under way, or NULL */
	/* what an upgrade re-executes: argv as started, the binary's path */
	char **argv;
	char exe[4096];
	int lock_fd[RN_CONFIG_MAX_LOGDIRS + 1];  /* log dir locks (flock) */
	int n_lock_fd;
	struct sv_upgrade *upgrade;    /* old side: a new supervisor starting */
	struct sv_takeover *takeover;  /* new side: replacing the old's workers */
	pid_t old_supervisor;          /* new side: our parent until it left */
};

/* sv_roles.c */
const struct sv_role *sv_roles(size_t *n);
const struct sv_role *sv_role_of(enum rn_worker_role role);
unsigned sv_role_count(const struct sv_role *r, const struct rn_config *cfg);

/* sv_child.c */
void sv_children_init(struct sv *sv);
int sv_child_start(struct sv *sv, struct sv_child *c);
void sv_children_reap(struct sv *sv, int64_t now);
void sv_children_tick(struct sv *sv, int64_t now);
struct sv_child *sv_child_find(struct sv *sv, const char *name);
int sv_child_restart(struct sv *sv, struct sv_child *c);
void sv_children_stop(struct sv *sv, int64_t now);
bool sv_children_all_running(const struct sv *sv);
bool sv_children_all_exited(const struct sv *sv);
unsigned sv_children_count_state(const struct sv *sv, enum rn_worker_state s);

/* sv_roll.c: runnelctl restart --role ROLE [--rolling] */
int sv_roll_begin(struct sv *sv, const char *role, bool rolling, int conn,
    uint64_t conn_gen, char *err, size_t errlen);
void sv_roll_tick(struct sv *sv, int64_t now);
void sv_roll_abort(struct sv *sv, const char *why);

/* sv_roll.c: the order workers are restarted in, rolling or not */
const enum rn_worker_role *sv_roll_order(size_t *n);

/*
 * sv_upgrade.c, the old supervisor's side of runnelctl upgrade: fork and
 * exec the new binary with the fds, watch it, leave when it is ready or
 * take the node back when it fails.
 */
#define SV_UPGRADE_ENV "RUNNEL_UPGRADE"
#define SV_UPGRADE_EXIT_LAYOUT 3       /* the new binary refused the layout */
int sv_upgrade_begin(struct sv *sv, const char *binary, int conn,
    uint64_t conn_gen, char *err, size_t errlen);
bool sv_upgrade_busy(const struct sv *sv);
bool sv_upgrade_handsoff(const struct sv *sv);
int sv_upgrade_pollfd(const struct sv *sv);
void sv_upgrade_tick(struct sv *sv, int64_t now);
bool sv_upgrade_reaped(struct sv *sv, pid_t pid, int status, int64_t now);
void sv_upgrade_child_close(struct sv *sv);

/*
 * sv_takeover.c, the new supervisor's side: adopt what the old one
 * passed (refusing a segment of another layout before touching
 * anything), then replace its workers one by one.
 */
int sv_takeover_adopt(struct sv *sv);
int sv_takeover_adopt_shm(struct sv *sv, const struct rn_shm_params *p);
void sv_takeover_begin(struct sv *sv);
void sv_takeover_tick(struct sv *sv, int64_t now);
bool sv_takeover_done(const struct sv *sv);
void sv_takeover_child_close(struct sv *sv);

/* sv_control.c */
int sv_control_open(struct sv *sv);
/* Serve a control socket an old supervisor bound (upgrade). */
void sv_control_adopt(struct sv *sv, int fd);
/* Close it all but leave the socket's path to the next supervisor. */
void sv_control_release(struct sv *sv);
void sv_control_accept(struct sv *sv);
void sv_control_close(struct sv *sv);
/* a reply to a request answered later; false if its asker has gone */
bool sv_control_reply_to(int conn, uint64_t gen, const char *data,
    size_t len);

/* sv_notify.c */
void sv_notify_init(struct sv *sv);
void sv_notify_status(struct sv *sv, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sv_notify_ready(struct sv *sv);
void sv_notify_stopping(struct sv *sv);
void sv_notify_tick(struct sv *sv, int64_t now, bool healthy);

/* sv_logdir.c */
int sv_logdirs_lock(struct sv *sv);
/* Take each log dir's clean-shutdown marker into the segment header. */
void sv_logdirs_take_clean(struct sv *sv);

/* sv_security.c: TLS contexts and SASL users of the client listeners */
int sv_security_load(struct sv *sv);
/* runnelctl reload: every TLS listener's files read and checked again,
 * the contexts replaced only if all are good. How many, or -1 with err. */
int sv_security_reload(struct sv *sv, char *err, size_t errlen);

/* sv_listen.c */
int sv_listeners_bind(struct sv *sv);

/* Signal flags, set by handlers only. */
extern volatile sig_atomic_t sv_got_sigchld, sv_got_sigterm, sv_got_sighup,
    sv_got_sigusr2;

#endif /* SV_H */
