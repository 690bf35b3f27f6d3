/*
 * The node's one shared-memory segment. The supervisor creates it (memfd,
 * MAP_SHARED) before forking, so every worker inherits the mapping. It holds
 * only offsets, never pointers. Its regions are the rows of
 * RN_SHM_REGIONS below, laid out in that order.
 */
#ifndef RN_SHM_H
#define RN_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/rlock.h"
#include "ipc/ring.h"
#include "ipc/seqlock.h"

struct rn_prodpool;

#define RN_SHM_MAGIC 0x524e4e4c53484d31ULL /* "RNNLSHM1" */
#define RN_SHM_LAYOUT_VERSION 11
/* controller, 64 network, 64 fetchers, log cleaner, group coordinator */
#define RN_SHM_MAX_WORKERS 131

enum rn_worker_role {
	RN_ROLE_W_CONTROLLER = 0,
	RN_ROLE_W_NETWORK = 1,
	RN_ROLE_W_FETCHER = 2,
	RN_ROLE_W_CLEANER = 3,
	RN_ROLE_W_COORDINATOR = 4,
};

/*
 * Node-wide jobs one worker does besides its role's, named so that
 * `runnelctl status` shows who does them.
 */
#define RN_DUTY_STORAGE 0x1 /* retention, time flush, ISR lag check, hw checkpoint */

enum rn_worker_state {
	RN_WS_EMPTY = 0,
	RN_WS_STARTING,  /* forked, not yet in its loop */
	RN_WS_RUNNING,   /* heartbeating */
	RN_WS_BACKOFF,   /* died, waiting to be restarted */
	RN_WS_FAILED,    /* crash-looped; given up */
	RN_WS_STOPPING,
	RN_WS_STOPPED,
};

struct rn_shm_params {
	uint32_t n_workers;
	uint32_t ring_bytes;     /* power of two */
	uint32_t max_partitions;
	uint32_t producer_pool;  /* pool entries (shm.max.producers), 0: none */
};

/*
 * The segment's regions in layout order, one row each:
 *   R(id, name, size, init)
 * size(params) is the bytes the region needs (shm.c rounds each region
 * to whole pages and sums them); init(base, size, params) formats it in a
 * new segment and returns 0 or -errno, NULL when zero bytes are its empty
 * state. The module that owns a region exports its two functions; adding
 * a region is one row here and an accessor for its base.
 *
 *   header      magic, layout version, size, generation, creator pid,
 *               the offsets of the regions (formatted by shm.c itself)
 *   workers     one slot per worker: pid, state, restarts, heartbeat
 *   metadata    the metadata image (one writer: the controller worker),
 *               guarded by a seqlock (ipc/mdimage.c)
 *   partitions  one 8 KiB slot per partition (workers/partition/ shapes
 *               it; its robust lock is formatted on first use)
 *   rings       per worker: a ring to the controller and one from it
 *   slotmap     one bit per partition slot: set once the slot was used,
 *               so a pass over every slot reads a bitmap instead of
 *               touching (and so backing) a page per slot
 *   coordrings  per worker: a ring to the group coordinator and one from
 *               it (the same shape as the controller's)
 *   metrics     counters: one slot per worker, then one per partition
 *               slot (ipc/metrics.c)
 *   connlimit   connection counts per worker slot (total, per listener,
 *               per address) and the creation-rate clocks, for the
 *               network workers' connection limits (ipc/connlimit.c)
 *   cquota      the client quotas' sampled byte counts per entity, any
 *               network worker adds by CAS (ipc/cquota.c)
 *   wakesets    per network worker, the partition slots that changed
 *               since it last looked (ipc/wakeset.c)
 *   prodpool    idempotent-producer entries beyond a partition slot's
 *               inline ones, chained per slot (ipc/prodpool.c)
 */
#define RN_SHM_REGIONS(R) \
	R(HEADER, "header", rn_shm_header_size, NULL) \
	R(WORKERS, "workers", rn_shm_workers_size, NULL) \
	R(METADATA, "metadata", rn_mdimage_shm_size, rn_mdimage_shm_init) \
	R(PARTITIONS, "partitions", rn_shm_partitions_size, NULL) \
	R(RINGS, "rings", rn_shm_rings_size, rn_shm_rings_init) \
	R(SLOTMAP, "slot map", rn_shm_slotmap_size, NULL) \
	R(COORD_RINGS, "coordinator rings", rn_shm_rings_size, \
	    rn_shm_rings_init) \
	R(METRICS, "metrics", rn_metrics_shm_size, NULL) \
	R(CONNLIMIT, "connection limits", rn_connlim_shm_size, NULL) \
	R(CQUOTA, "client quotas", rn_cquota_shm_size, NULL) \
	R(WAKESETS, "wake sets", rn_wakeset_shm_size, NULL) \
	R(PRODPOOL, "producer pool", rn_prodpool_shm_size, \
	    rn_prodpool_shm_init)

#define RN_SHM_REGION_ID(id, name, size, init) RN_REGION_##id,
enum rn_region {
	RN_SHM_REGIONS(RN_SHM_REGION_ID)
	RN_REGION_COUNT
};
#undef RN_SHM_REGION_ID

struct rn_shm_region {
	uint64_t off;
	uint64_t size;
};

struct rn_shm_hdr {
	uint64_t magic;
	uint32_t layout_version;
	uint32_t n_workers;
	uint64_t size;
	_Atomic uint64_t generation; /* bumped when a region is rebuilt */
	int32_t creator_pid;
	uint32_t ring_bytes;
	uint32_t max_partitions;
	uint32_t producer_pool;
	uint32_t pad6;
	/*
	 * Controlled shutdown handshake: the supervisor sets 1 on SIGTERM,
	 * the controller worker sets 2 once the active controller has moved
	 * this broker's leaderships away (or it gave up); then workers stop.
	 */
	_Atomic uint32_t controlled_shutdown;
	/* Test faults set through the control socket; 0 = off (default). */
	_Atomic uint32_t fault_stall_fetch;   /* replica fetchers stop fetching */
	/*
	 * This node's replicas whose recorded log dir is not where it keeps
	 * them (Kafka's NumMismatchingReplicaToLogDirAssignments; the broker
	 * agent writes it, runnelctl status shows it).
	 */
	_Atomic uint32_t dir_mismatches;
	_Atomic int64_t producer_id_counter;  /* InitProducerId, node-wide */
	/*
	 * This incarnation's broker epoch once the active controller took
	 * its registration (the broker agent writes it; 0 before). The
	 * network workers lead nothing until the image shows it.
	 */
	_Atomic int64_t registered_epoch;
	/*
	 * The leader replication quota the network workers share
	 * (workers/replquota.c): the time, in CLOCK_MONOTONIC µs, by which
	 * the throttled bytes sent so far are paid for.
	 */
	_Atomic int64_t leader_quota_tat_us;
	/*
	 * Log dirs taken offline by an I/O error (bit = index in log.dirs),
	 * set by whichever worker hit it (workers/partition/dirfail.c),
	 * never cleared: a restart brings a dir back.
	 */
	_Atomic uint32_t offline_dirs;
	/*
	 * Moves between log dirs asked for (AlterReplicaLogDirs): bumped by
	 * the network worker that records one in a partition slot, so the
	 * replica fetchers look at their slots at once.
	 */
	_Atomic uint32_t moves_requested;
	/* bumped when a partition slot wants its log dir recorded (a move
	 * between dirs): the broker agent reports it at once */
	_Atomic uint32_t dir_reports;
	/* log dirs (bit = index) whose .kafka_cleanshutdown the supervisor
	 * found and took at start: their logs' first opens scan nothing */
	_Atomic uint32_t clean_dirs;
	/* the node is stopping: the controller worker, stopped last, shuts
	 * every log down and marks the dirs clean (not at its own restart) */
	_Atomic uint32_t node_stopping;
	uint32_t pad5;
	/* bytes of torn ring tails the supervisor cut off after a worker
	 * died (rn_ring_repair), for the metrics */
	_Atomic uint64_t ring_dropped_bytes;
	struct rn_shm_region regions[RN_REGION_COUNT];
};

/* One per worker; the supervisor owns pid/state/restarts, the worker its heartbeat. */
struct rn_worker_slot {
	_Atomic int32_t pid;
	_Atomic uint32_t state;
	uint32_t role;
	uint32_t index;
	_Atomic uint32_t restarts;
	uint32_t pad;
	_Atomic int64_t started_ms;   /* CLOCK_MONOTONIC */
	_Atomic int64_t heartbeat_ms; /* CLOCK_MONOTONIC, written by the worker */
	_Atomic uint64_t heartbeats;
	_Atomic uint64_t hellos;      /* controller: hello messages received from this slot */
	uint32_t duties;              /* RN_DUTY_*, set by the supervisor before fork */
	uint32_t pad3;
};
_Static_assert(sizeof(struct rn_worker_slot) == 64, "worker slot is one cache line");

/*
 * The metadata image as the controller publishes it. The fixed part is
 * what every reader needs first; then the delta ring (partition changes
 * since the body, ipc/mdimage.c), then the body (brokers, topics,
 * partitions), sized from shm.max.partitions.
 */
struct rn_meta_image {
	struct rn_seqlock lock;
	uint32_t pad;
	int32_t writer_pid;
	int32_t node_id;
	_Atomic uint64_t version; /* bumped on every publish, whole or delta */
	int64_t published_ms;
	char cluster_id[24];      /* Kafka Uuid as base64url; "" until known */
	uint64_t base_version;    /* the version the body describes */
	uint64_t delta_base;      /* ring position of the first delta after it */
	uint64_t delta_head;      /* ring position after the last delta */
	uint64_t delta_size;      /* bytes of the delta ring */
	uint64_t body_size;       /* bytes of the body, after the ring */
};

/*
 * Partition runtime entry; workers/partition/partition.h gives it its shape (the
 * log's shared state, high watermark, fetch waiters). Only the lock is
 * formatted here.
 */
#define RN_PART_SLOT_SIZE 8192
struct rn_part_slot {
	struct rn_rlock lock; /* serializes appends across network workers */
	char body[RN_PART_SLOT_SIZE - sizeof(struct rn_rlock)];
};
_Static_assert(sizeof(struct rn_part_slot) % 64 == 0, "partition slot size");

struct rn_shm {
	void *base;
	size_t size;
	int fd;
	struct rn_shm_hdr *hdr;
};

size_t rn_shm_size(const struct rn_shm_params *p);
/* A region's name and its bytes in this segment (for the start log). */
const char *rn_shm_region_name(enum rn_region id);
size_t rn_shm_region_size(const struct rn_shm *shm, enum rn_region id);
/* The regions shm.c owns (rows of RN_SHM_REGIONS). */
size_t rn_shm_header_size(const struct rn_shm_params *p);
size_t rn_shm_workers_size(const struct rn_shm_params *p);
size_t rn_shm_partitions_size(const struct rn_shm_params *p);
size_t rn_shm_rings_size(const struct rn_shm_params *p);
int rn_shm_rings_init(void *base, size_t size, const struct rn_shm_params *p);
size_t rn_shm_slotmap_size(const struct rn_shm_params *p);
/* Create, map and format; 0 or -errno. */
int rn_shm_create(const struct rn_shm_params *p, struct rn_shm *shm);
/* Check the header of an inherited mapping; 0 or -EPROTO. */
int rn_shm_check(const struct rn_shm *shm);
void rn_shm_destroy(struct rn_shm *shm);

struct rn_worker_slot *rn_shm_worker(const struct rn_shm *shm, unsigned slot);
struct rn_meta_image *rn_shm_meta(const struct rn_shm *shm);
/* The metrics region's base (ipc/metrics.h gives it its shape). */
void *rn_shm_metrics(const struct rn_shm *shm);
/* The connection-limits region's base (ipc/connlimit.h). */
void *rn_shm_connlimit(const struct rn_shm *shm);
/* The client-quota region's base (ipc/cquota.h). */
void *rn_shm_cquota(const struct rn_shm *shm);
void *rn_shm_wakesets(const struct rn_shm *shm);
/* The producer pool's base (ipc/prodpool.h). */
struct rn_prodpool *rn_shm_prodpool(const struct rn_shm *shm);
struct rn_part_slot *rn_shm_partition(const struct rn_shm *shm, unsigned i);
/* Note that slot i is in use (idempotent); whether it ever was. */
void rn_shm_slot_mark(const struct rn_shm *shm, unsigned i);
bool rn_shm_slot_used(const struct rn_shm *shm, unsigned i);
/* The first slot at or after from ever used, or max_partitions. */
unsigned rn_shm_slot_next_used(const struct rn_shm *shm, unsigned from);
/* The ring a worker writes to reach the controller, and the one it reads. */
struct rn_ring *rn_shm_ring_to_ctl(const struct rn_shm *shm, unsigned slot);
struct rn_ring *rn_shm_ring_from_ctl(const struct rn_shm *shm, unsigned slot);
/* The same pair between a worker and the group coordinator. */
struct rn_ring *rn_shm_ring_to_coord(const struct rn_shm *shm, unsigned slot);
struct rn_ring *rn_shm_ring_from_coord(const struct rn_shm *shm,
    unsigned slot);

/*
 * The controller died in the middle of a publish (odd seqlock): clear the
 * image and bump the segment generation so readers know to wait for a
 * fresh publish. Called by the supervisor before restarting it.
 */
void rn_shm_meta_rebuild(struct rn_shm *shm);

const char *rn_worker_role_name(enum rn_worker_role role);
const char *rn_worker_state_name(enum rn_worker_state state);

#endif /* RN_SHM_H */
