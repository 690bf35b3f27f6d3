/*
 * The metrics region: counters the workers add to and the supervisor sums
 * when scraped. Each worker slot has one writer (the worker in that slot,
 * or the supervisor for its own fields), so a relaxed load and store is
 * enough; a partition slot's counters are added to by whichever network
 * worker serves it, with relaxed atomic adds. Nothing here is reset when
 * a worker restarts: the segment outlives the process.
 */
#ifndef RN_METRICS_H
#define RN_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct rn_shm;
struct rn_shm_params;

#define RN_MET_MAX_API 80	/* above RN_KAPI_MAX_KEY */

/*
 * Where a network worker's time goes, as latency histograms: the stages
 * of a Produce request, and the turns of its event loop. Stage names for
 * /metrics are in sv_metrics.c, in this order.
 */
enum rn_met_stage {
	RN_STAGE_QUEUED,	/* the read that completed the frame -> handled */
	RN_STAGE_DECODE,	/* header and body decoded */
	RN_STAGE_APPEND,	/* the handler: lock wait, append, response queued */
	RN_STAGE_ACKS,		/* acks=all: parked until the high watermark */
	RN_STAGE_SEND,		/* response queued -> its last byte written */
	RN_STAGE_TOTAL,		/* the read that completed the frame -> written */
	RN_STAGE_LOOP_WAIT,	/* epoll_wait */
	RN_STAGE_LOOP_TURN,	/* a turn's work between two waits */
	RN_STAGE_LOOP_DUTY,	/* of it, the storage duty (its worker only) */
	RN_STAGE_METADATA,	/* a new image taken in (network and fetcher
				 * workers): deltas applied or the body
				 * parsed, and what follows it */
	RN_STAGE_COUNT
};

/*
 * Kafka's RequestMetrics stages, timed for the APIs clients use most:
 * queue (frame complete -> handled), local (handled -> response queued,
 * or parked), remote (parked for acks=all, a long-polled fetch or a
 * forwarded request), responsesend (queued -> last byte written), total.
 */
enum rn_met_rq {
	RN_RQ_TOTAL,
	RN_RQ_QUEUE,
	RN_RQ_LOCAL,
	RN_RQ_REMOTE,
	RN_RQ_SEND,
	RN_RQ_COUNT
};

/* The API keys timed, in histogram order (Produce first: see below). */
#define RN_MET_APIS(X) \
	X(0) X(1) X(2) X(3) X(8) X(9) X(10) X(11) X(12) X(14) X(18) X(22)
#define RN_MET_API_ONE(k) + 1
#define RN_MET_N_API (0 RN_MET_APIS(RN_MET_API_ONE))
#define RN_MET_API_PRODUCE 0	/* index of key 0 */

/* log2 buckets of microseconds: le 1 us, 2 us, ... 2^24 us (16.8 s), +Inf */
#define RN_MET_BUCKETS 26

/* One histogram; not cumulative here (the supervisor sums as it renders). */
struct rn_met_hist {
	_Atomic uint64_t bucket[RN_MET_BUCKETS];
	_Atomic uint64_t sum_us;
	uint64_t pad[5];
};
_Static_assert(sizeof(struct rn_met_hist) == 256, "metrics histogram");

/* One per worker slot; only that worker writes it. */
struct rn_met_worker {
	_Atomic uint64_t msgs_in;
	_Atomic uint64_t bytes_in;
	_Atomic uint64_t bytes_out;	/* to consumers, not to followers */
	/* ISR changes committed for partitions led here */
	_Atomic uint64_t isr_shrinks;
	_Atomic uint64_t isr_expands;
	_Atomic uint64_t requests[RN_MET_MAX_API];
	/* the controller's: images published whole and as deltas */
	_Atomic uint64_t md_bodies, md_body_bytes;
	_Atomic uint64_t md_deltas, md_delta_bytes;
	/* a replica fetcher's: the largest lag, in records, among the
	 * replicas it follows, as of their last fetch responses */
	_Atomic uint64_t fetch_max_lag;
	/* the controller's: the metadata quorum as its raft sees it
	 * (leader -1: none known) */
	_Atomic int64_t raft_leader, raft_epoch, raft_hw;
	/* a network worker's: client connections open now, and its
	 * incremental fetch sessions and the partitions they hold */
	_Atomic int64_t connections;
	_Atomic uint64_t fetch_sessions, fetch_session_parts;
	struct rn_met_hist stages[RN_STAGE_COUNT];
	/* the controller's: raft_apply -> its entry applied */
	struct rn_met_hist raft_commit;
	/* a network worker's: request stages per timed API */
	struct rn_met_hist req[RN_MET_N_API][RN_RQ_COUNT];
};
_Static_assert(sizeof(struct rn_met_worker) % 64 == 0, "metrics slot");

/*
 * One per partition slot, summed by topic through the metadata image. A
 * slot is reused once its topic is deleted, so the counters carry the tag
 * of the partition they count (rn_met_tag): the first writer for a new
 * partition zeroes them, and the reader skips a slot whose tag is not
 * the image's partition.
 */
struct rn_met_part {
	_Atomic uint64_t tag;
	_Atomic uint64_t msgs_in;
	_Atomic uint64_t bytes_in;
	_Atomic uint64_t bytes_out;
	/* the ISR last seen led here, to tell shrinks from expands
	 * (the storage-duty worker's alone): its tag, leader epoch + 1, size */
	uint64_t seen_tag;
	int32_t seen_epoch1;
	int32_t seen_isr;
	uint64_t pad[2];
};
_Static_assert(sizeof(struct rn_met_part) == 64, "metrics partition slot");

#define RN_MET_TAG_BUSY UINT64_MAX	/* being zeroed for a new partition */

/* A partition's tag: never 0 (an unused slot) nor RN_MET_TAG_BUSY. */
uint64_t rn_met_tag(const uint8_t topic_id[16], int32_t partition);
/* The slot's counters for this partition, zeroed if they were another's;
 * NULL if another writer is stuck zeroing them (count nothing then). */
struct rn_met_part *rn_metrics_part_for(const struct rn_shm *shm,
    unsigned slot, uint64_t tag);
size_t rn_metrics_shm_size(const struct rn_shm_params *p);
struct rn_met_worker *rn_metrics_worker(const struct rn_shm *shm,
    unsigned slot);
struct rn_met_part *rn_metrics_part(const struct rn_shm *shm, unsigned slot);

/* The API keys timed, by index; a key's index, or -1 when not timed. */
extern const int16_t rn_met_api_keys[RN_MET_N_API];
extern const int8_t rn_met_api_index1[RN_MET_MAX_API];

static inline int
rn_met_api_index(int key)
{
	return key >= 0 && key < RN_MET_MAX_API ?
	    rn_met_api_index1[key] - 1 : -1;
}

/* Single writer: no read-modify-write needed. */
static inline void
rn_met_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c,
	    memory_order_relaxed) + v, memory_order_relaxed);
}

/* Several writers (a partition served by more than one worker). */
static inline void
rn_met_add_shared(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Single writer: one sample of us microseconds into h. */
static inline void
rn_met_observe(struct rn_met_hist *h, int64_t us)
{
	unsigned i = 0;

	if (us < 0)
		us = 0;
	if (us > 1)
		i = 64 - (unsigned)__builtin_clzll((uint64_t)us - 1);
	if (i >= RN_MET_BUCKETS)
		i = RN_MET_BUCKETS - 1;
	rn_met_add(&h->bucket[i], 1);
	rn_met_add(&h->sum_us, (uint64_t)us);
}

static inline uint64_t
rn_met_get(const _Atomic uint64_t *c)
{
	return atomic_load_explicit((_Atomic uint64_t *)c,
	    memory_order_relaxed);
}

#endif /* RN_METRICS_H */
