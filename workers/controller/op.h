/*
 * One controller operation, whatever asked for it: a network worker of
 * this node (over its ring), another node over the controller listener
 * (a broker's registration, heartbeat or AlterPartition, or an admin
 * request a non-active controller forwarded), or the controller itself
 * (fencing and elections, "internal"). Operations run one at a time on
 * the active controller (op.c); a node that is not the active
 * controller forwards its own ones (agent.c).
 */
#ifndef RN_CTL_OP_H
#define RN_CTL_OP_H

#include "protocol/kcodec.h"
#include "protocol/kmsg_gen.h"
#include "workers/controller/elect.h"
#include "workers/controller/raft.h"

/* runnel-private API keys on the controller listener (request header v1,
 * response header v0); see server.c for their bodies. */
#define CTL_API_FORWARD 32101
#define CTL_API_IMAGE 32102

enum ctl_op_origin {
	CTL_ORIGIN_RING = 0,
	CTL_ORIGIN_CONN,
	CTL_ORIGIN_INTERNAL,
};

struct ctl_op {
	struct ctl_op *next;
	struct ctl *c;
	enum ctl_op_origin origin;
	/* ring */
	unsigned slot;
	pid_t sender;
	uint16_t type;
	uint64_t req;
	/* conn */
	uint64_t conn_id;
	int32_t corr;
	bool fwd;                /* CTL_API_FORWARD: answer err + raw body */
	int16_t key, ver;
	uint8_t *body;
	size_t len;
	int64_t deadline_ms;     /* forwarded by this node: give up after */
	struct raft_apply apply;
	struct ctl_batch batch;
	struct rn_arena arena;   /* decoded request, response arrays, messages */
	bool validate_only;
	int local_added;         /* replicas this operation puts on this node */
	int local_used;          /* replicas here before it; -1: not counted */
	int32_t broker;          /* registration / heartbeat: whose */
	bool want_shut_down;
	int64_t hb_offset;
	union {
		struct rn_CreateTopicsResponse ct;
		struct rn_DeleteTopicsResponse dt;
		struct rn_CreatePartitionsResponse cp;
		struct rn_UnregisterBrokerResponse ub;
		struct rn_AlterConfigsResponse ac;
		struct rn_IncrementalAlterConfigsResponse iac;
		struct rn_BrokerRegistrationResponse br;
		struct rn_BrokerHeartbeatResponse bh;
		struct rn_AlterPartitionResponse ap;
		struct rn_ElectLeadersResponse el;
		struct rn_DescribeQuorumResponse dq;
		struct rn_AlterPartitionReassignmentsResponse apr;
		struct rn_ListPartitionReassignmentsResponse lpr;
		struct rn_AssignReplicasToDirsResponse ard;
		struct rn_CreateAclsResponse cacl;
		struct rn_DeleteAclsResponse dacl;
		struct rn_AlterUserScramCredentialsResponse ausc;
		struct rn_AlterClientQuotasResponse acq;
		struct rn_DescribeClientQuotasResponse dcq;
	} resp;
};

/*
 * The APIs the controller answers, one row each (apis.c): run validates
 * the request, fills op->resp and builds op->batch; encode writes the
 * response; fail turns its successes into an error when the records do
 * not commit (NULL: nothing to turn). direct: a broker API, taken only
 * from another node's own connection (not forwarded, not from a ring).
 */
struct ctl_op_api {
	int16_t key;
	int (*run)(struct ctl_op *op, struct rn_kreader *r);
	int (*encode)(struct ctl_op *op, struct rn_kwriter *w);
	void (*fail)(struct ctl_op *op, int16_t e);
	bool direct;
};
extern const struct ctl_op_api ctl_op_apis[];
extern const size_t ctl_op_n_apis;

/*
 * What the operation engine (op.c) needs from the rest of the
 * controller; controller.c wires them, so op.c calls nothing above it.
 */
struct ctl_op_hooks {
	const struct ctl_op_api *apis;
	size_t n_apis;
	/* a message of any size to the worker in slot (ctl_send) */
	int (*send)(struct ctl *c, unsigned slot, uint16_t type,
	    const void *buf, size_t len, pid_t dest);
	/* answer a request that came over a connection */
	void (*conn_reply)(struct ctl *c, uint64_t conn_id, int32_t corr,
	    int16_t key, int16_t ver, bool fwd, int16_t err, const void *body,
	    size_t len);
	/* take this node's own operation to the active controller */
	void (*forward)(struct ctl *c, struct ctl_op *op);
	/* an RN_IPC_AUTO_CREATE becomes records */
	int (*auto_create)(struct ctl_op *op);
	/* the operation's records are applied (or none were needed) */
	void (*committed)(struct ctl_op *op);
	/* records the cluster needs now (fencing, elections); false if none */
	bool (*reconcile)(struct ctl *c, struct ctl_batch *b);
};

/* controller.c */
/*
 * Send a message of any size to the worker in slot (pid dest): what the
 * ring cannot take now waits in c->to_slot[slot]. 0 or -errno.
 */
int ctl_send(struct ctl *c, unsigned slot, uint16_t type, const void *buf,
    size_t len, pid_t dest);

/* op.c: the operation queue */
/* An RN_IPC_ADMIN_REQUEST / RN_IPC_AUTO_CREATE from slot; the message is
 * copied. 0, or -EBADMSG when malformed. */
int ctl_admin_enqueue(struct ctl *c, unsigned slot, pid_t sender,
    uint16_t type, const msgpack_object *m);
/* Active controller: run queued operations one at a time, then fencing
 * and elections (ctl_reconcile). Otherwise route them elsewhere: this
 * node's own to the active controller (ctl_agent_forward), other nodes'
 * answered NOT_CONTROLLER. */
void ctl_admin_kick(struct ctl *c);
/* Stopping: answer everything queued with NOT_CONTROLLER. */
void ctl_admin_fail_all(struct ctl *c);

/* deletions.c: the local dirs of removed topics and moved replicas */
/* Remove the local dirs of a topic being removed (called by the FSM). */
void ctl_admin_topic_removed(struct ctl *c, const struct ctl_topic *t);
/* Remove broker's replica of t-p if it is this node's (the FSM: a
 * Partition record left it out). */
void ctl_admin_replica_removed(struct ctl *c, const struct ctl_topic *t,
    int32_t p, int32_t broker, int32_t slot, const uint8_t dir_id[16]);
/* A broker-only node's next state: its replicas next no longer has. */
void ctl_admin_replicas_moved(struct ctl *c, const struct ctl_state *next);
/* After a publish: rename and remove the dirs queued above. */
void ctl_admin_run_deletions(struct ctl *c);
/* At start: remove "-delete" dirs a crash left behind. */
void ctl_admin_cleanup_deleted(struct ctl *c);
/* Once caught up: remove replicas of topic ids the metadata log lacks. */
void ctl_admin_sweep_strays(struct ctl *c);

/* op.c: strings in the operation's arena (messages up to CTL_OP_MSG_MAX),
 * answering, freeing */
#define CTL_OP_MSG_MAX 512
struct rn_kstr ctl_op_msg(struct ctl_op *op, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
struct rn_kstr ctl_op_str(struct ctl_op *op, const char *str);
/* NUL-terminated copy of a kstr into buf; false if null or too long. */
bool ctl_kstr_copy(struct rn_kstr s, char *buf, size_t len);
/* Broker ids as "1,2,3" for a log line, as many as fit buf. */
void ctl_ids_str(const int32_t *v, int32_t n, char *buf, size_t len);
/* Answer whoever asked with a raw response body (or err != 0 and no
 * body), then free the operation. */
void ctl_op_reply_raw(struct ctl_op *op, int16_t err, const void *body,
    size_t len);
void ctl_op_free(struct ctl_op *op);
/* A request from another node (conn origin); body is copied. */
int ctl_admin_enqueue_conn(struct ctl *c, uint64_t conn_id, int32_t corr,
    int16_t key, int16_t ver, bool fwd, const void *body, size_t len);

/* admin.c: the operations behind the admin APIs; each validates the
 * request, fills op->resp and builds op->batch */
int ctl_op_create_topics(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_delete_topics(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_create_partitions(struct ctl_op *op, struct rn_kreader *r);
/* An RN_IPC_AUTO_CREATE: create what the names lack, no answer. */
int ctl_op_auto_create(struct ctl_op *op);
/*
 * One entry of an AUTO_CREATE message as a CreateTopics topic: a name
 * (broker defaults; only with auto.create.topics.enable) or the map of an
 * internal topic's settings (always). false if it is not to be created.
 */
bool ctl_auto_create_entry(struct ctl_op *op, const msgpack_object *o,
    struct rn_CreateTopicsRequest_CreatableTopic *t);

/* configs.c: AlterConfigs, IncrementalAlterConfigs, effective configs */
int ctl_op_alter_configs(struct ctl_op *op, struct rn_kreader *r);

/* acls.c */
int ctl_op_create_acls(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_delete_acls(struct ctl_op *op, struct rn_kreader *r);
/* scram.c */
int ctl_op_alter_scram(struct ctl_op *op, struct rn_kreader *r);
/* quotas.c */
int ctl_op_alter_client_quotas(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_describe_client_quotas(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_incremental_alter_configs(struct ctl_op *op, struct rn_kreader *r);
/* Effective unclean.leader.election.enable of a topic. */
bool ctl_topic_unclean(struct ctl *c, const struct ctl_topic *t);
/* Effective min.insync.replicas of a topic whose own value is override
 * (NULL: none). */
int ctl_topic_min_isr(struct ctl *c, const char *override);
/* CreateTopics v5+: every topic config with value and source */
int16_t ctl_created_configs(struct ctl_op *op,
    const struct rn_CreateTopicsRequest_CreatableTopic *t,
    struct rn_CreateTopicsResponse_CreatableTopicResult *res);

/* assign.c: placing the replicas of an operation's new partitions */
struct ctl_dirload;
/* Log-dir loads of the brokers a request places on, grown in its arena. */
struct ctl_placer {
	const struct ctl_state *st;
	struct rn_arena *arena;
	struct ctl_dirload *loads;
	int n, cap;
};

/* Brokers that may take new replicas, in the op's arena; NULL: no memory. */
int32_t *ctl_place_live_brokers(struct ctl_op *op, int *n);
/* The log dir of a new replica on broker (the least loaded). */
void ctl_place_dir(struct ctl_placer *pl, int32_t broker, uint8_t out[16]);
/* One new partition's record into b, and its log line. */
void ctl_place_record(struct ctl_batch *b, struct ctl_placer *pl,
    const char *topic, const uint8_t tid[16], int32_t p,
    const int32_t *replicas, int32_t rf);
int16_t ctl_place_check_manual(struct ctl_op *op, const struct ctl_state *st,
    const int32_t *ids, int32_t n, int32_t want_rf, struct rn_kstr *msg);
int16_t ctl_place_check_slots(struct ctl_op *op, const int32_t *replicas,
    int32_t n, struct rn_kstr *msg);
int16_t ctl_place_rf_unreachable(struct ctl_op *op, int32_t rf, int live,
    struct rn_kstr *msg);
int ctl_place_auto_at(const struct ctl_state *st, const int32_t *brokers,
    int n, int32_t np, int32_t rf, int32_t start_partition, int start_index,
    int shift, int32_t *out);
/* New partitions placed automatically: over the live brokers, or (with
 * enable.under.replicated.topic.creation) over the observed ones. */
int16_t ctl_place_new(struct ctl_op *op, int32_t np, int32_t rf,
    int32_t start, int min_isr, int32_t *out, struct rn_kstr *msg);
int ctl_place_auto(const struct ctl_state *st, const int32_t *brokers,
    int live, int32_t np, int32_t rf, int32_t start_partition, int32_t *out);

/* reassign.c: partition reassignment */
int ctl_op_alter_reassignments(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_list_reassignments(struct ctl_op *op, struct rn_kreader *r);
/* Reconcile: record the completion of t-p's reassignment if its adding
 * replicas are all in the ISR. */
bool ctl_reassign_reconcile(struct ctl_batch *b, const struct ctl_topic *t,
    int32_t p, ctl_bstate_fn fn, void *arg);

/* lifecycle.c: the operations behind the broker APIs */
int ctl_op_broker_registration(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_broker_heartbeat(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_alter_partition(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_elect_leaders(struct ctl_op *op, struct rn_kreader *r);
int ctl_op_describe_quorum(struct ctl_op *op, struct rn_kreader *r);
/* dirs.c: log directories in the metadata (KIP-858) */
/* Replicas of nb in dirs its new registration lacks: Uuid.ZERO. */
int ctl_dirs_unassign_missing(struct ctl_batch *b, const struct ctl_state *st,
    const struct ctl_broker *nb);
int ctl_op_assign_replicas_to_dirs(struct ctl_op *op, struct rn_kreader *r);
/* This node's replicas whose recorded dir is not one of its dirs. */
int ctl_dirs_mismatches(const struct ctl *c);
/* This node's replicas whose slot wants another dir recorded (a move
 * between dirs); the ones recorded meanwhile are told so. */
int ctl_dirs_wanted(const struct ctl *c);
/* AssignReplicasToDirs for up to max of them and of the wanted ones
 * (each under its dir); returns how many. */
int ctl_dirs_report(const struct ctl *c, int64_t epoch, struct rn_arena *ar,
    int max, struct rn_AssignReplicasToDirsRequest *req);
/* Once the operation's records are applied (or none were needed). */
void ctl_op_committed(struct ctl_op *op);
/* Records the cluster needs now (fencing, elections); false if none. */
bool ctl_reconcile(struct ctl *c, struct ctl_batch *b);
/* Liveness bookkeeping of the active controller. */
void ctl_live_reset(struct ctl *c);
void ctl_quorum_track(struct ctl *c);

/* observed.c: UnregisterBroker and the automatic leader rebalance */
int ctl_op_unregister_broker(struct ctl_op *op, struct rn_kreader *r);
/* Records of a leader balancing pass when one is due; false if none. */
bool ctl_rebalance(struct ctl *c, struct ctl_batch *b);
/* ctl_reconcile, then ctl_rebalance: the engine's reconcile hook. */
bool ctl_reconcile_all(struct ctl *c, struct ctl_batch *b);

/* server.c: Kafka protocol on the controller listener */
void ctl_server_init(struct ctl *c);
void ctl_server_reply(struct ctl *c, uint64_t conn_id, int32_t corr,
    int16_t key, int16_t ver, bool fwd, int16_t err, const void *body,
    size_t len);
/* Held image requests: answer those the applied state now satisfies
 * (or all of them, expired or not, when flush). */
void ctl_server_image_poll(struct ctl *c, bool flush);
void ctl_server_close(struct ctl *c);

/* agent.c: this node's broker agent and forwarder */
int ctl_agent_start(struct ctl *c);
void ctl_agent_stop(struct ctl *c);
/* Take op (ring origin) to the active controller; the agent answers it. */
void ctl_agent_forward(struct ctl *c, struct ctl_op *op);
/* An RN_IPC_ALTER_PARTITION from a network worker. */
int ctl_agent_alter_partition(struct ctl *c, const msgpack_object *m);
/* This broker's registration epoch, -1 when not registered. */
int64_t ctl_agent_broker_epoch(struct ctl *c);

#endif /* RN_CTL_OP_H */
