/*
 * The group coordinator's internals. One process per node holds the
 * consumer groups whose __consumer_offsets partition this node leads:
 * their members and state machine (group.c), their committed offsets
 * (offsets.c), and the log of both in __consumer_offsets (log.c, in the
 * record schemas of records.c). Requests come from the network workers
 * over one ring each (coordinator.c); a reply may be held back until a
 * rebalance completes or a commit is replicated.
 */
#ifndef RN_COORD_INT_H
#define RN_COORD_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/acl.h"
#include "ipc/mdimage.h"
#include "protocol/kcodec.h"
#include "protocol/kframe.h"
#include "protocol/kmsg_gen.h"
#include "storage/batch.h"
#include "protocol/group_records.h"
#include "protocol/txn_records.h"
#include "workers/partition/partition.h"
#include "workers/worker.h"
#include "workers/secure_client.h"

#define CO_BUCKETS 4096
#define CO_MAX_PARTS 1000       /* offsets.topic.num.partitions' maximum */
/* Member ids handed out and not yet used, a group: a client looping on
 * JoinGroup without its id cannot grow a group without bound. */
#define CO_MAX_PENDING 10000
/* Members a group, whatever group.max.size says (Kafka's default is
 * unbounded): each holds the metadata its JoinGroup brought. */
#define CO_MAX_MEMBERS 65536

/* Who is waiting for a reply: a network worker's request. */
struct co_pending {
	unsigned slot;           /* the network worker's slot */
	uint64_t req;            /* its id for the request */
	int16_t key, ver;
	bool active;
};

struct co_proto {
	char *name;
	uint8_t *meta;
	int32_t len;
};

struct co_member {
	char *id;
	char *instance_id;       /* NULL: dynamic member */
	char *client_id, *client_host;
	int32_t session_ms, rebalance_ms;
	struct co_proto *protos;
	int n_protos;
	uint8_t *assignment;
	int32_t assignment_len;
	int64_t expire_ms;       /* session deadline */
	struct co_pending join;  /* a JoinGroup held for the rebalance */
	struct co_pending sync;  /* a SyncGroup held for the leader's plan */
	bool skip_assignment;    /* static leader rejoined: JoinGroup v9 says so */
};

enum co_gstate {
	GS_EMPTY = 0,
	GS_PREPARING,            /* PreparingRebalance */
	GS_COMPLETING,           /* CompletingRebalance */
	GS_STABLE,
	GS_DEAD,
};

struct co_offset {
	char *topic;
	int32_t partition;
	int64_t offset;
	int32_t epoch;
	char *metadata;
	int64_t commit_ts;
};

/* An offset a transaction committed, visible once its commit marker is. */
struct co_txn_offset {
	int64_t pid;
	char *topic;
	int32_t partition;
	int64_t offset;
	int32_t epoch;
	char *metadata;
	int64_t commit_ts;
};

/* A member id handed out with MEMBER_ID_REQUIRED, not yet joined. */
struct co_pending_id {
	char *id;
	int64_t expire_ms;
};

struct co_group {
	struct co_group *next;   /* hash chain */
	char *id;
	int32_t partition;       /* of __consumer_offsets */
	enum co_gstate state;
	int64_t state_ts;        /* wall clock of the last state change */
	int32_t generation;
	char *protocol_type, *protocol, *leader;
	struct co_member **members;
	int n_members, cap_members;
	struct co_pending_id *pending;
	int n_pending, cap_pending;
	int64_t join_deadline;   /* PreparingRebalance: complete by then */
	bool initial_delay;      /* the first join waits for others */
	int64_t delay_left_ms;   /* how much longer it may wait for more */
	int delay_members;       /* members when the current delay began */
	struct co_offset *offsets;
	int n_offsets, cap_offsets;
	/* (topic, partition) -> offsets[] index + 1; 0 is free; a power of
	 * two over twice the offsets, rebuilt when one is removed */
	uint32_t *index;
	uint32_t index_cap;
	/* TxnOffsetCommit's offsets, by producer, until the marker */
	struct co_txn_offset *txn_offs;
	int n_txn_offs, cap_txn_offs;
};

enum co_pstate {
	CP_NONE = 0,             /* not led here */
	CP_LOADING,
	CP_LOADED,
};

struct co_part {
	enum co_pstate state;
	int32_t leader_epoch;    /* the epoch it was loaded at */
	int64_t load_next;       /* loading: next offset to read */
};

/* Records appended and waiting for the high watermark. */
enum co_write_kind {
	CW_COMMIT = 0,           /* an OffsetCommit's offsets */
	CW_SYNC,                 /* a generation's assignments (SyncGroup) */
	CW_TXN_COMMIT,           /* a TxnOffsetCommit's offsets (pending) */
	CW_TXN_STATE,            /* a transaction's state (__transaction_state) */
};

struct co_write {
	struct co_write *next;
	enum co_write_kind kind;
	int32_t generation;      /* CW_SYNC: the generation stored */
	int32_t partition;
	int32_t leader_epoch;
	int64_t need;            /* high watermark that commits them */
	int64_t deadline_ms;
	/* an OffsetCommit: its request, answered once settled */
	struct co_pending pend;
	uint8_t *body;           /* the request body the decoded one points into */
	size_t body_len;
	struct rn_arena arena;
	struct rn_OffsetCommitRequest req;
	int16_t *errs;           /* per partition, in request order */
	char *group;             /* the group it is for */
	bool txn_log;            /* partition is of __transaction_state */
	struct rn_TxnOffsetCommitRequest treq;  /* CW_TXN_COMMIT */
	struct co_txn *txn;      /* CW_TXN_STATE: whose state */
};

/* ---- transactions (txn_coord.c) ------------------------------------- */

/* Transactional ids held, a node; partitions a transaction. */
#define CO_MAX_TXNS 100000
#define CO_MAX_TXN_PARTS 10000

struct co_txn_tp {
	char *topic;
	int32_t partition;
	bool acked;              /* its marker is written */
	bool inflight;           /* in a WriteTxnMarkers being answered */
};

/* What a transaction's state record says. */
struct co_txn_meta {
	int64_t pid;
	int16_t epoch;
	int32_t timeout_ms;
	enum rn_txn_status state;
	int64_t start_ms;        /* wall clock; -1 when none is open */
	int64_t update_ms;
};

struct co_txn {
	struct co_txn *next;     /* hash chain */
	struct co_txn *next_marking; /* on co->marking while markers go out */
	char *id;
	int32_t partition;       /* of __transaction_state */
	struct co_txn_meta cur;  /* as stored */
	struct co_txn_meta nxt;  /* being stored (writing) */
	struct co_txn_tp *tps;
	int n_tps, cap_tps;
	int n_tps_stored;        /* tps[] as cur has them; more: being added */
	bool writing;            /* a state record waits for the HW */
	bool marking;            /* on co->marking */
	bool fencing;            /* the abort is an epoch fence (PrepareEpochFence) */
};

/* A connection to a partition leader for WriteTxnMarkers (txn_markers.c). */
struct co_mitem {
	struct co_txn *txn;      /* NULL: the transaction went away */
	int tp;                  /* index into txn->tps */
};

struct co_mconn {
	int32_t broker;
	int fd;                  /* -1: not connected */
	struct rn_secc *sec;
	bool in_flight;
	int32_t corr;
	int64_t sent_ms, retry_ms;
	struct rn_kframebuf in;
	struct co_mitem *items;
	int n_items, cap_items;
};

#define CO_MAX_MCONNS 64

struct co {
	struct rn_worker *w;
	const struct rn_config *cfg;
	struct rn_group_settings gs;
	struct rn_mdview view;
	struct rn_part_table parts;
	int net_efds[64];
	unsigned coord_slot;
	/* __consumer_offsets as this node sees it */
	uint8_t topic_id[16];
	int32_t n_parts;
	struct co_part part[CO_MAX_PARTS];
	struct co_group *buckets[CO_BUCKETS];
	unsigned n_groups;
	struct co_write *writes, **writes_tail;
	/* __transaction_state as this node sees it */
	struct rn_txn_settings ts;
	uint8_t txn_topic_id[16];
	int32_t txn_n_parts;
	struct co_part txn_part[CO_MAX_PARTS];
	struct co_txn *txn_buckets[CO_BUCKETS];
	unsigned n_txns;
	unsigned txn_full_logged;
	struct co_txn *marking;  /* transactions whose markers go out */
	struct co_mconn mconns[CO_MAX_MCONNS];
	int n_mconns;
	int32_t next_corr;
	int64_t next_txn_abort_ms, next_txn_expire_ms;
	/* replies, per network worker slot */
	struct rn_ringq out[RN_SHM_MAX_WORKERS];
	struct rn_ringq_in in[RN_SHM_MAX_WORKERS];
	struct rn_arena arena;   /* one request's decode and response */
	struct rn_authz authz;
	int64_t authz_logged_ms; /* last denial logged (one per 10 s) */
	unsigned authz_unlogged; /* denials since */
	int64_t now;             /* monotonic ms, once per turn */
	int64_t next_tick_ms;    /* group timers looked at again then */
	int64_t next_expiry_ms;
};

/* coordinator.c */
int co_reply(struct co *co, const struct co_pending *p, const void *resp);
const struct rn_mdv_topic *co_offsets_topic(struct co *co);
const struct rn_mdv_topic *co_txn_topic(struct co *co);
/* 0, or the error a group request for partition p gets now. */
int16_t co_part_error(struct co *co, int32_t p);
int32_t co_partition_of(struct co *co, struct rn_kstr group);
char *co_strdup(struct rn_kstr s);

/* A request being handled: where to answer, and its decoded body. */
struct co_req {
	struct co_pending pend;
	struct rn_kstr client, host;
	struct rn_acl_who who;   /* its principal and address (NUL-terminated) */
	const uint8_t *body;
	size_t len;
	void *req;
};

/* May r's principal do op on the resource? Logs denials, rate-limited. */
bool co_authorized(struct co *co, struct co_req *r, int8_t op, int8_t res,
    struct rn_kstr name);
/* The same on the cluster, without logging a denial (ListGroups asks
 * it first and then looks at each group). */
bool co_authorized_cluster(struct co *co, struct co_req *r, int8_t op);

static inline struct rn_kstr
co_ks(const char *s)
{
	return rn_kstr_c(s);
}

/* members.c */
struct co_group *co_group_find(struct co *co, struct rn_kstr id);
struct co_group *co_group_create(struct co *co, struct rn_kstr id,
    int32_t partition);
void co_group_remove(struct co *co, struct co_group *g);
const char *co_state_name(enum co_gstate s);
void co_set_state(struct co_group *g, enum co_gstate s);
void co_set_str(char **dst, const char *src);
bool co_kstr_is(struct rn_kstr k, const char *s);
struct co_member *co_member_find(struct co_group *g, struct rn_kstr id);
struct co_member *co_member_by_instance(struct co_group *g,
    struct rn_kstr inst);
void co_member_add(struct co_group *g, struct co_member *m);
void co_member_free(struct co_member *m);
/* "<prefix>-<uuid>", as Kafka names members. */
char *co_member_id_new(struct rn_kstr prefix);
int co_pending_find(struct co_group *g, struct rn_kstr id);
void co_pending_drop(struct co_group *g, int i);
void co_pending_add(struct co_group *g, const char *id, int64_t expire);
const struct co_proto *co_member_proto(const struct co_member *m,
    const char *name);
void co_member_set_protos(struct co_member *m,
    const struct rn_JoinGroupRequest *req);
bool co_member_same_protos(const struct co_member *m,
    const struct rn_JoinGroupRequest *req);
const char *co_select_protocol(const struct co_group *g);
bool co_protocols_fit(const struct co_group *g,
    const struct rn_JoinGroupRequest *req);

/* group.c */
int co_join_group(struct co *co, struct co_req *r);
int co_sync_group(struct co *co, struct co_req *r);
int co_heartbeat(struct co *co, struct co_req *r);
/* A generation's assignments are replicated, or could not be: answer. */
void co_sync_settled(struct co *co, struct co_write *wr, int16_t kerr);
int co_leave_group(struct co *co, struct co_req *r);
/* Timers: sessions, rebalance deadlines; the next one due. */
int64_t co_groups_tick(struct co *co);
/* A partition led elsewhere now: its groups go, their waiters are told. */
void co_groups_unload(struct co *co, int32_t partition);

/* group_admin.c */
int co_list_groups(struct co *co, struct co_req *r);
int co_describe_groups(struct co *co, struct co_req *r);
int co_delete_groups(struct co *co, struct co_req *r);

/* group_store.c */
/* Load: a group metadata record (NULL value: the group was deleted). */
void co_group_load(struct co *co, int32_t partition, struct rn_kstr id,
    const struct rn_grec_group *v);
/*
 * Persist a group's metadata (members and assignments): 0 with the offset
 * after the record in *end, or the error an OffsetCommit would get.
 */
int16_t co_group_store(struct co *co, struct co_group *g, int64_t *end);

/* offsets.c */
int co_offset_commit(struct co *co, struct co_req *r);
int co_offset_fetch(struct co *co, struct co_req *r);
int co_offset_delete(struct co *co, struct co_req *r);
void co_offset_load(struct co *co, int32_t partition,
    const struct rn_grec_key *k, const struct rn_grec_offset *v);
void co_offset_set(struct co_group *g, struct rn_kstr topic, int32_t p,
    const struct rn_grec_offset *v);
bool co_offset_remove(struct co_group *g, struct rn_kstr topic, int32_t p);
void co_offsets_free(struct co_group *g);
/* A commit's records are replicated (kerr 0) or failed: answer it. */
void co_commit_settled(struct co *co, struct co_write *wr, int16_t kerr);
/* A write of either kind settled: its owner answers and frees it. */
void co_write_settled(struct co *co, struct co_write *wr, int16_t kerr);
/* Queue wr, appended up to end on g's partition, until replicated. */
void co_write_queue(struct co *co, struct co_write *wr,
    const struct co_group *g, int64_t end);
/* Fail with NOT_COORDINATOR the writes queued on partition p of
 * __consumer_offsets, or of __transaction_state (txn_log). */
void co_writes_fail(struct co *co, bool txn_log, int32_t p);
/* offsets.retention.minutes: expire the offsets of empty groups. */
void co_offsets_expire(struct co *co);

/* log.c */
/*
 * Append records (keys and values, a value of len -1 is a tombstone) to
 * a partition led here. 0 with the offset after them in *end, or a
 * Kafka error code as an OffsetCommit gets it.
 */
int16_t co_log_append(struct co *co, int32_t partition,
    const struct rn_record_in *recs, int n, int64_t *end);
/* The same on __consumer_offsets (txn false) or __transaction_state,
 * with a producer's transactional batch when pid >= 0. */
/*
 * Offset records for one append to a group's partition (an OffsetCommit's
 * or a TxnOffsetCommit's): init for at most max, add each, then append
 * them (as producer pid/epoch, -1 for none), which frees them.
 */
struct co_offset_recs {
	struct rn_kwriter kw;
	struct rn_record_in *recs;
	size_t *ko, *vo;         /* each record's key and value in kw */
	int32_t n;
	int64_t now;
};
void co_offset_recs_init(struct co_offset_recs *o, int32_t max);
void co_offset_recs_add(struct co_offset_recs *o, const struct co_group *g,
    struct rn_kstr topic, int32_t partition, int64_t offset,
    int32_t leader_epoch, struct rn_kstr metadata);
int16_t co_offset_recs_append(struct co *co, struct co_offset_recs *o,
    const struct co_group *g, int64_t pid, int16_t epoch, int64_t *end);
int16_t co_log_append_to(struct co *co, bool txn, int32_t partition,
    const struct rn_record_in *recs, int n, int64_t pid, int16_t epoch,
    int64_t *end);
struct rn_part *co_led_part(struct co *co, bool txn, int32_t partition,
    const struct rn_mdv_partition **mpp, const struct rn_mdv_topic **tp,
    int16_t *kerr);
/* Settle writes the high watermark passed or that can no longer pass. */
int64_t co_log_settle(struct co *co);
/* Load a little more of a partition; true when it is done. */
bool co_log_load_step(struct co *co, int32_t partition);
/*
 * One bounded step of loading a partition this node leads, of
 * __consumer_offsets or of __transaction_state (txn_log): a read at its
 * next offset, whose batches go to batches(). True when it is done for
 * this turn (loaded, or try again later).
 */
typedef void co_batches_fn(struct co *co, int32_t partition,
    const uint8_t *buf, size_t len, int64_t *next);
bool co_load_step(struct co *co, bool txn_log, int32_t partition,
    co_batches_fn *batches);

/* txn_coord.c */
int co_init_producer_id(struct co *co, struct co_req *r);
int co_add_partitions_to_txn(struct co *co, struct co_req *r);
int co_add_offsets_to_txn(struct co *co, struct co_req *r);
int co_end_txn(struct co *co, struct co_req *r);
int co_list_transactions(struct co *co, struct co_req *r);
int co_describe_transactions(struct co *co, struct co_req *r);
void co_txn_state_settled(struct co *co, struct co_write *wr, int16_t kerr);
/* Every marker of txn is written: its transaction completes. */
void co_txn_markers_done(struct co *co, struct co_txn *txn);
/* Timers: expired transactions aborted, idle ids removed. */
void co_txn_tick(struct co *co);
/* Follow the image for __transaction_state: load and unload partitions. */
void co_txn_follow_image(struct co *co);
/* Which partitions of an internal topic lead here, after a new image. */
void co_follow_topic(struct co *co, const char *name, uint8_t id[16],
    int32_t *n_parts, struct co_part *part,
    void (*unload)(struct co *, int32_t));
bool co_txn_load(struct co *co, int64_t until);
struct co_txn *co_txn_find(struct co *co, struct rn_kstr id);

int32_t co_txn_partition_of(struct co *co, struct rn_kstr id);
/* 0, or the error a transactional id of partition p gets here now. */
int16_t co_txn_part_error(struct co *co, int32_t p);

/* txn_verify.c (KIP-890) */
/* The error all of a verification's partitions get, or 0 with *tp. */
int16_t co_txn_verify_txn(struct co *co, struct rn_kstr id, int64_t pid,
    int16_t epoch, struct co_txn **tp);
/* 0 if the partition is in t's stored partition set, else INVALID_TXN_STATE. */
int16_t co_txn_verify_part(const struct co_txn *t, struct rn_kstr topic,
    int32_t p);
struct msgpack_object;
/* A network worker's verification over the ring, answered there. */
void co_txn_verify_ring(struct co *co, unsigned slot,
    const struct msgpack_object *m);
/* The answer to a network worker's verification (one error a partition). */
void co_txn_verify_answer(struct co *co, unsigned slot, uint64_t req,
    const int16_t *errs, uint32_t n);
void co_txn_verify_answer_all(struct co *co, unsigned slot, uint64_t req,
    int32_t n, int16_t err);
/* One transaction of an AddPartitionsToTxn v4, answered as VerifyOnly. */
void co_txn_verify_v4(struct co *co,
    const struct rn_AddPartitionsToTxnRequest_AddPartitionsToTxnTransaction *tx,
    struct rn_AddPartitionsToTxnResponse_AddPartitionsToTxnResult *o,
    struct rn_arena *a);

/* txn_verify_remote.c: verifications asked of the coordinating node */
void co_txn_verify_remote(struct co *co, unsigned slot, uint64_t req,
    struct rn_kstr tid, int64_t pid, int16_t epoch, int32_t n,
    const struct rn_kstr *topics, const int32_t *parts);
/* Send, read and answer what is due; the next time to look again. */
int64_t co_txn_verify_tick(struct co *co);
/* Its sockets, for the loop's wait. */
int co_txn_verify_fds(int *fds, int max);
void co_txn_verify_close(struct co *co);

/* txn_log.c */
/* Append a transaction's nxt state; 0 with *end, or an error code. */
int16_t co_txn_log_write(struct co *co, struct co_txn *txn, int64_t *end);
int16_t co_txn_log_tombstone(struct co *co, struct co_txn *txn);
/* Load a little more of a __transaction_state partition; true when done. */
bool co_txn_log_load_step(struct co *co, int32_t partition);

/* txn_markers.c */
/* Send the markers due; the next time to look again. */
int64_t co_txn_markers_tick(struct co *co);
/* The sockets of marker requests in flight, for the loop's wait. */
int co_txn_markers_fds(const struct co *co, int *fds, int max);
/* A transaction going away: forget it in the requests in flight. */
void co_txn_markers_forget(struct co *co, struct co_txn *txn);
void co_txn_markers_close(struct co *co);

/* txn_offsets.c */
int co_txn_offset_commit(struct co *co, struct co_req *r);
void co_txn_commit_settled(struct co *co, struct co_write *wr, int16_t kerr);
/* A marker on partition (of __consumer_offsets) for pid: apply or drop. */
void co_txn_offsets_marker(struct co *co, int32_t partition, int64_t pid,
    bool commit);
void co_txn_offset_add(struct co_group *g, int64_t pid, struct rn_kstr topic,
    int32_t p, const struct rn_grec_offset *v);
/* With require_stable: pending partitions answer UNSTABLE_OFFSET_COMMIT. */
void co_txn_offsets_unstable(const struct co_group *g,
    struct rn_OffsetFetchResponse_OffsetFetchResponseGroup *o);
void co_txn_offsets_free(struct co_group *g);

#endif /* RN_COORD_INT_H */
