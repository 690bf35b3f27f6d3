/*
 * The controller worker's core: a libuv loop running libraft over the
 * metadata log in <metadata.log.dir>/__cluster_metadata-0/, the metadata
 * state the committed records build, and the image it publishes.
 *
 * Every voter of controller.quorum.voters bootstraps the same static
 * configuration on first start (no format step, KIP-1262). Once this node
 * leads and has applied everything before its term (a barrier), it writes
 * what the cluster still lacks: the ClusterId and metadata.version
 * records, and its own broker's registration. Only then ("ready") does it
 * run operations (op.h), one at a time, each answered once its
 * records are committed, applied and published. Every node also runs a
 * broker agent (agent.c) and, on voters, a Kafka-protocol server on
 * the controller listener (server.c).
 */
#ifndef RN_CTL_RAFT_H
#define RN_CTL_RAFT_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "common/config.h"
#include "ipc/shm.h"
#include "workers/controller/journal.h"
#include "workers/controller/records.h"
#include "workers/controller/state.h"
#include "ipc/ringq.h"
#include "workers/worker.h"

#define CTL_RAFT_DIR "__cluster_metadata-0"
#define CTL_SNAPSHOT_THRESHOLD 1024
#define CTL_SNAPSHOT_TRAILING 128
#define CTL_TICK_MS RN_WORKER_HEARTBEAT_MS

struct ctl_op;        /* an operation: op.h */
struct ctl_deletion;  /* a local partition dir to remove after publishing */
struct ctl_server;    /* Kafka protocol on the controller listener */
struct ctl_agent;     /* this node's broker agent */
struct ctl;
struct ctl_op_hooks;  /* what the operation engine calls: op.h */

/*
 * What the raft layer reports to the rest of the controller. controller.c
 * wires them, so raft.c calls nothing above it.
 */
struct ctl_raft_hooks {
	/* the transport is set up: the Kafka side of the listener hooks in */
	void (*transport_ready)(struct ctl *c);
	/* an image is about to be published: what it must no longer name
	 * (removed topics' slots and dirs) goes first */
	void (*before_publish)(struct ctl *c);
	/* a publish was attempted: the image may have moved */
	void (*published)(struct ctl *c);
	/* this node became the active controller, everything before its
	 * term applied */
	void (*became_active)(struct ctl *c);
	/* this node no longer leads: what is queued goes elsewhere */
	void (*lost_leadership)(struct ctl *c);
};

/* What the active controller knows of a broker's liveness (not state:
 * it is clock-based and starts over with every new active controller). */
struct ctl_live {
	int32_t id;
	int64_t last_hb_ms;       /* monotonic */
	int64_t last_hb_wall_ms;
	int64_t offset;           /* metadata offset of its last heartbeat */
};

struct ctl {
	struct rn_worker *w;
	const struct rn_config *cfg;
	struct rn_shm *shm;
	uv_loop_t loop;
	uv_timer_t tick;          /* heartbeat, stop request, ring drain */
	uv_poll_t wake;           /* the controller's eventfd */
	uv_check_t after;         /* after each loop turn: leadership, publish */
	int exit_code;
	bool stopping;

	/* per worker slot: replies waiting for ring room, and a request
	 * arriving in fragments (ipc/ringq.h) */
	struct rn_ringq to_slot[RN_SHM_MAX_WORKERS];
	struct rn_ringq_in from_slot[RN_SHM_MAX_WORKERS];

	/* what only this node knows */
	char known_cluster_id[23]; /* meta.properties at start ("" if none) */
	uint8_t dir_ids[RN_CONFIG_MAX_LOGDIRS][16];
	int n_dirs;

	/* raft */
	struct ctl_raft_hooks hooks;
	struct raft raft;
	struct raft_io io;
	struct raft_fsm fsm;
	struct raft_uv_transport transport;
	bool io_inited, raft_inited, raft_closed;
	void (*close_done)(struct ctl *c);
	/* raft_io's own close, wrapped so that raft hears of it once */
	void (*io_close)(struct raft_io *io, raft_io_close_cb cb);
	raft_io_close_cb io_close_cb;
	bool io_close_fired;
	char raft_dir[1100];

	/* metadata */
	struct ctl_state st;
	struct ctl_journal journal; /* entries for broker-only nodes */
	bool dirty;               /* applied but not yet published */
	size_t image_unfit;       /* size of an image that did not fit, or 0 */
	bool fatal;               /* refuse to go on (cluster id conflict) */

	/* proposals in flight and when they were made (us), for the
	 * commit latency; few: one operation and the bootstrap at most */
	struct {
		struct raft_apply *req;
		int64_t us;
	} proposed[4];

	/* leadership */
	uint64_t leader_term;     /* term this node leads in; 0: not leader */
	uint64_t last_leader;     /* leader id last published (raft_id) */
	bool ready;
	bool barrier_inflight;
	struct raft_barrier barrier;
	struct raft_apply boot_apply;
	bool boot_inflight;

	/* admin operations: a queue, one in flight */
	const struct ctl_op_hooks *op_hooks;
	struct ctl_op *ops_head, *ops_tail;
	struct ctl_op *op_inflight;
	unsigned n_ops;

	struct ctl_deletion *deletions;

	/* broker lifecycle on the active controller (lifecycle.c) */
	struct ctl_live *live;
	int n_live;
	bool reconcile;           /* records applied since the last pass */
	int64_t rebalance_due_ms; /* next leader balancing pass; 0: unset */
	int64_t voter_caught_up_ms[RN_CONFIG_MAX_VOTERS]; /* wall clock */
	int64_t voter_fetch_ms[RN_CONFIG_MAX_VOTERS];     /* wall clock */

	/* this node as a broker, and the controller listener */
	uint8_t incarnation[16];
	struct ctl_server *server;
	struct ctl_agent *agent;
	uv_timer_t agent_timer;
	bool image_loaded;        /* broker-only: an image was fetched */
	int32_t image_controller; /* broker-only: its controller id */
	uint64_t image_epoch;
};

/* raft.c: -EUCLEAN when the metadata log's files are damaged (logged,
 * naming the file), -ENOSPC or -EIO when its disk failed */
int ctl_raft_start(struct ctl *c);
/* raftfiles.c: the files libraft would load, checked first; -EBADMSG
 * with err naming the damaged file */
int ctl_raft_check_files(const char *dir, char *err, size_t errlen);
void ctl_raft_close(struct ctl *c, void (*done)(struct ctl *c));
/* after the loop has run dry */
void ctl_raft_free(struct ctl *c);
/* Propose a finished batch; cb fires once applied (status 0) or failed. */
int ctl_raft_propose(struct ctl *c, const struct ctl_batch *b,
    struct raft_apply *req, raft_apply_cb cb);
/* A proposal's callback came (status 0: committed and applied): its
 * commit latency counted. Every raft_apply_cb of ctl_raft_propose calls it. */
void ctl_raft_settled(struct ctl *c, struct raft_apply *req, int status);
bool ctl_raft_is_leader(struct ctl *c);
/* Leadership changes, bootstrap records; call after each loop turn. */
void ctl_raft_watch(struct ctl *c);
/* Publish the image if the applied state changed; then run deletions. */
void ctl_publish(struct ctl *c);
/* The applied cluster id changed from before: persist it (or go fatal). */
void ctl_cluster_id_applied(struct ctl *c, const char *before);
/* Node-local facts for the image. */
void ctl_local(struct ctl *c, struct ctl_local *loc);

#endif /* RN_CTL_RAFT_H */
