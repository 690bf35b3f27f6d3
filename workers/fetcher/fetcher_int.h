/*
 * The replica fetcher's own structures, shared by its files (fetcher.c:
 * the loop and the requests; session.c: the incremental fetch session
 * with each leader). Nothing outside workers/fetcher includes this.
 */
#ifndef RN_FETCHER_INT_H
#define RN_FETCHER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/arena.h"
#include "ipc/mdimage.h"
#include "protocol/kframe.h"
#include "protocol/kmsg_gen.h"
#include "workers/fetcher/mover.h"
#include "workers/partition/partition.h"
#include "workers/replquota.h"

#define FETCH_MAX_BYTES (16 * 1024 * 1024)
#define PARTITION_MAX_BYTES (1024 * 1024)
/* a response's bytes per partition besides its records and topic name:
 * index, error, three offsets, aborted-transaction and records lengths,
 * preferred replica (42 in v11), with room to spare */
#define RESP_PART_BYTES 64

struct rn_secc;
struct rn_worker;

/* One partition a fetch session holds, as the leader was told of it. */
struct fsession_member {
	uint8_t id[16];
	int32_t partition;
	struct fpart *fp;
};

/*
 * A KIP-227 session with one leader: its id (0: none), the epoch the next
 * request carries, its generation (an fpart is in it when its sess_gen
 * matches), and its members.
 */
struct fsession {
	int32_t id;
	int32_t epoch;
	uint64_t gen;
	bool opening;           /* the request in flight asks for one */
	int64_t retry_ms;       /* the leader had no room: not before */
	int64_t check_ms;       /* next look at every member's log start */
	int64_t max_batch;      /* members' largest max.message.bytes */
	struct fsession_member *members;
	int n_members, cap_members;
	/* the replicas whose position moved since the last fetch (their
	 * dirty flag set): an incremental fetch looks at these alone while
	 * the list it was built from is the one last looked at whole */
	struct fpart **dirty;
	int n_dirty, cap_dirty;
	bool dirty_lost;        /* one could not be listed: look at all */
	uint64_t looked_gen;    /* the fetcher's mine_gen at the last whole look */
	bool whole;             /* this fetch looks at every replica */
	bool check_start;       /* and compares their log starts */
};

/* The replicas of one leader in the fetcher's sorted list. */
struct leader_run {
	int32_t leader;
	int start, count;
};

/* Process-local state of one follower replica this fetcher serves. */
struct fpart {
	const struct rn_mdv_topic *t;
	const struct rn_mdv_partition *mp;
	struct rn_part *p;
	int32_t synced_epoch;   /* leader epoch whose divergence was checked */
	uint8_t id[16];         /* topic id the state above is for */
	int32_t leader;         /* as of the last round (mp may be stale) */
	uint64_t round;         /* t and mp are valid only in this round */
	int64_t lag;            /* records below the leader's high watermark
	                         * after its last fetch response */
	bool throttled;         /* under the follower replication quota */
	bool listed;            /* seen while the list is rebuilt */
	/* its place in a leader's fetch session (session.c): the session
	 * generation it was last sent in, the log start and leader epoch
	 * sent, whether its log end moved since, and the request being
	 * built that lists it */
	uint64_t sess_gen;
	int64_t sent_start;
	int32_t sent_epoch;
	bool dirty;
	uint64_t kick;
};

struct leader {
	int32_t id;
	int fd;
	struct rn_secc *sec;    /* TLS and/or SASL session; NULL: PLAINTEXT */
	int64_t sec_logged_ms;  /* last login failure logged */
	bool in_flight;
	int16_t api_key;        /* of the request in flight */
	int32_t corr;
	int64_t sent_ms;
	struct rn_kframebuf in; /* the response being read */
	size_t resp_max;        /* largest answer the request in flight allows */
	struct rn_arena arena;
	struct fpart **parts;   /* in the request in flight (own allocation:
	                         * the arena is reset for the response) */
	int n_parts, cap_parts;
	struct fsession sess;   /* the incremental fetch session (session.c) */
	uint64_t epochs_ok_gen; /* epoch_gen at which no epoch needed a check */
	uint64_t thr_gen;       /* mine_gen at which n_throttled was counted */
	int n_throttled;
};

struct fetcher {
	struct rn_worker *w;
	const struct rn_config *cfg;
	struct rn_mdview view;
	struct rn_part_table parts;
	uint64_t view_version;
	struct fpart *fp;       /* indexed by slot */
	struct leader **leaders; /* one per broker we follow; as many as the
	                          * image has brokers */
	int n_leaders, cap_leaders;
	struct pollfd *pfd;     /* cap_leaders of each, for poll() */
	struct leader **polled;
	int32_t next_corr;
	uint64_t round;         /* bumped every time the image is read */
	int unopened;           /* followed replicas whose log could not be
	                         * opened since the last full collect */
	bool id_moved;          /* a slot changed topic id in this round */
	struct rn_replquota quota; /* follower.replication.throttled.rate */
	struct rn_mover mover;  /* moves between this node's log dirs */
	bool lag_moved;         /* a response came: the max lag is due */
	uint64_t sess_gens;     /* the last session generation handed out */
	uint64_t kicks;         /* the last request stamp handed out */
	/* bumped when the list of followed replicas or the image changes
	 * (mine_gen), and also when a replica's epoch must be checked again
	 * (epoch_gen): per-leader caches of a look over the list hold
	 * until then */
	uint64_t mine_gen, epoch_gen;
	int64_t lag_published_ms;
	/* the list's runs of one leader each, as of runs_gen */
	struct leader_run *runs;
	int n_runs, cap_runs;
	uint64_t runs_gen;
};

/* fetcher.c: by leader, then topic, then partition (qsort) */
int fpart_cmp(const void *x, const void *y);

/* session.c */
enum fsn_mode { FSN_NONE, FSN_OPEN, FSN_INCREMENTAL };
enum fsn_mode fsn_begin(struct fetcher *f, struct leader *l,
    struct rn_FetchRequest *req, bool throttled);
struct fpart **fsn_candidates(struct fetcher *f, struct leader *l,
    enum fsn_mode mode, struct fpart **mine, int *n);
bool fsn_wanted(struct fetcher *f, struct leader *l, struct fpart *fp);
void fsn_moved(struct leader *l, struct fpart *fp);
void fsn_kicked(struct leader *l);
int fsn_sent(struct fetcher *f, struct leader *l, enum fsn_mode mode,
    struct fpart *fp, const struct rn_FetchRequest_FetchPartition *pp);
int fsn_forget(struct fetcher *f, struct leader *l, struct rn_FetchRequest *req,
    struct rn_arena *a);
bool fsn_answered(struct leader *l, const struct rn_FetchResponse *resp);
struct fpart *fsn_member(struct fetcher *f, struct leader *l,
    const uint8_t *topic_id, int32_t partition);
size_t fsn_resp_bound(const struct leader *l);
void fsn_reset(struct leader *l);
void fsn_free(struct leader *l);

#endif
