/*
 * What a worker process is given by the supervisor at fork time, and the
 * loop every worker shares: heartbeat into its slot, sleep on its eventfd,
 * stop on SIGTERM. Each role has one entry point, which the supervisor
 * hands to rn_worker_run() (from its role table); this runtime knows no
 * role.
 *
 * Exit status is a contract with the supervisor (as in nginx and
 * PostgreSQL background workers): 0 stopped on request, 1 restart me
 * (with backoff), 2 do not restart me.
 */
#ifndef RN_WORKER_H
#define RN_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include <msgpack.h>

#include "common/config.h"
#include "ipc/ringq.h"
#include "ipc/shm.h"

#define RN_WORKER_EXIT_OK 0
#define RN_WORKER_EXIT_RESTART 1
#define RN_WORKER_EXIT_FATAL 2

#define RN_WORKER_HEARTBEAT_MS 250

struct rn_listen_fd {
	int fd;
	int listener;       /* index into cfg.listeners */
	bool controller;    /* a controller listener */
};

struct ssl_ctx_st;
struct rn_sasl_cfg;
struct rn_pmap;
struct rn_secc_cfg;

/*
 * A client listener's TLS context and SASL users, built by the supervisor
 * from the config and the key files before the first fork; only network
 * workers keep them (rn_worker_run wipes them in the others).
 */
struct rn_listen_sec {
	struct ssl_ctx_st *ssl_ctx;   /* NULL: no TLS */
	struct rn_sasl_cfg *sasl;     /* NULL: no SASL */
	/* ssl.principal.mapping.rules: the name a client certificate
	 * gives on an SSL listener (NULL: not SSL) */
	struct rn_pmap *pmap;
};

/* Built by the supervisor before the first fork; identical in every worker. */
struct rn_worker_env {
	const struct rn_config *cfg;
	struct rn_shm *shm;
	struct rn_listen_fd listen[RN_CONFIG_MAX_LISTENERS];
	int n_listen;
	struct rn_listen_sec sec[RN_CONFIG_MAX_LISTENERS]; /* by cfg listener */
	/* how this node logs in to its peers' inter-broker listener (TLS,
	 * SASL); NULL when it is PLAINTEXT. Kept by the replica fetchers. */
	struct rn_secc_cfg *ib_client;
	/* how it logs in to the controllers' listener; NULL when it is
	 * PLAINTEXT. Kept by the controller worker (raft, broker agent). */
	struct rn_secc_cfg *ctl_client;
	int efd[RN_SHM_MAX_WORKERS]; /* wake-up eventfd of each worker slot */
	unsigned n_workers;
	unsigned n_network, n_fetchers, n_cleaners;
	/*
	 * From meta.properties when the supervisor started (rn_metaprops_ensure):
	 * the cluster id ("" until the metadata log names one; the controller
	 * re-reads the files, so this is only the starting value) and the
	 * directory.id of each cfg->log_dirs entry (Kafka Uuid bytes).
	 */
	char cluster_id[23];
	uint8_t dir_ids[RN_CONFIG_MAX_LOGDIRS][16];
};

struct rn_worker {
	const struct rn_worker_env *env;
	enum rn_worker_role role;
	unsigned index;
	unsigned slot;
	char name[32];
	struct rn_worker_slot *ws;
	int64_t next_heartbeat_ms;
	struct rn_ringq to_ctl;  /* not yet in the ring to the controller */
};

/* Slot numbering: controller first, then network, fetchers, coordinator. */
unsigned rn_worker_slot_of(const struct rn_worker_env *env,
    enum rn_worker_role role, unsigned index);
void rn_worker_name(enum rn_worker_role role, unsigned index, char *buf,
    size_t len);

/* A role's entry point: runs the role, returns the exit status. */
typedef int (*rn_worker_main_fn)(struct rn_worker *w);

/* Called in the child right after fork: sets up, runs main; never returns. */
void rn_worker_run(const struct rn_worker_env *env, enum rn_worker_role role,
    unsigned index, rn_worker_main_fn main_fn, uid_t uid, gid_t gid,
    bool drop) __attribute__((noreturn));

/* Shared loop helpers. */
bool rn_worker_should_stop(void);
void rn_worker_heartbeat(struct rn_worker *w);
/* Sleep until the eventfd fires or timeout_ms passes; also services heartbeats. */
void rn_worker_wait(struct rn_worker *w, int timeout_ms);
/* The same, waking too when one of fds (at most RN_WORKER_WAIT_FDS) is readable. */
#define RN_WORKER_WAIT_FDS 64
void rn_worker_wait_fds(struct rn_worker *w, int timeout_ms, const int *fds,
    int n_fds);
/*
 * Send a msgpack payload of any size to the controller and wake it; what
 * the ring cannot take now is queued and pushed by rn_worker_pump_ctl().
 */
int rn_worker_send_ctl(struct rn_worker *w, uint16_t type, const void *buf,
    size_t len);
/* Push what is queued for the controller; true if some is left. */
bool rn_worker_pump_ctl(struct rn_worker *w);
int rn_worker_send_hello(struct rn_worker *w);

/*
 * One ring drained by rn_worker_drain(). A message whose sender is not
 * *sender_pid is left over from an earlier incarnation and dropped. With
 * `in`, FRAGMENT pieces are reassembled (up to max_len, the sender woken
 * through wake_fd to push the next) and the whole message is handled.
 * The handler gets each message unpacked; it returns -EBADMSG or -EPROTO
 * when the sender misbehaves, which ends the drain; other errors do not.
 */
struct rn_drain {
	struct rn_ring *ring;
	_Atomic int32_t *sender_pid;
	struct rn_ringq_in *in;
	int wake_fd;
	size_t max_len;
	const char *from;           /* for logs: "slot 3", "the controller" */
	int (*handle)(void *arg, pid_t sender, uint16_t type,
	    const msgpack_object *m);
	void *arg;
};

/* 0, or the error that ended the drain: the sender needs a restart. */
int rn_worker_drain(const struct rn_drain *d);

#endif /* RN_WORKER_H */
