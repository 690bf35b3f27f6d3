/*
 * The broker APIs of the active controller (BrokerRegistration,
 * BrokerHeartbeat, AlterPartition), ElectLeaders and DescribeQuorum, and
 * the reconcile pass that fences brokers whose session expired and moves
 * or elects partition leaders whenever the applied state calls for it
 * (a fenced or shutting-down leader, a leaderless partition that can
 * elect again, unclean election switched on). Kafka's KRaft controller
 * is the reference for the rules and error codes.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/controller/offline_dirs.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"

#define METADATA_TOPIC "__cluster_metadata"

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- liveness ------------------------------------------------------- */

static struct ctl_live *
live_get(struct ctl *c, int32_t id)
{
	struct ctl_live *l;
	int i;

	for (i = 0; i < c->n_live; i++)
		if (c->live[i].id == id)
			return &c->live[i];
	l = realloc(c->live, sizeof(*l) * (size_t)(c->n_live + 1));
	if (l == NULL)
		return NULL;
	c->live = l;
	l = &c->live[c->n_live++];
	l->id = id;
	/* a broker first seen now gets a whole session from now */
	l->last_hb_ms = rn_now_ms();
	l->last_hb_wall_ms = -1;
	l->offset = -1;
	return l;
}

void
ctl_live_reset(struct ctl *c)
{
	int i;

	free(c->live);
	c->live = NULL;
	c->n_live = 0;
	c->rebalance_due_ms = 0; /* the first balancing pass an interval on */
	for (i = 0; i < c->st.n_brokers; i++)
		live_get(c, c->st.brokers[i].id);
}

static void
live_touch(struct ctl *c, int32_t id, int64_t offset)
{
	struct ctl_live *l = live_get(c, id);

	if (l == NULL)
		return;
	l->last_hb_ms = rn_now_ms();
	l->last_hb_wall_ms = wall_ms();
	if (offset >= 0)
		l->offset = offset;
}

/* ---- broker states with pending changes ------------------------------ */

struct bstates {
	const struct ctl_state *st;
	int32_t down[256];
	int n_down;
};

static enum ctl_bstate
bstates_fn(void *arg, int32_t id)
{
	struct bstates *bs = arg;
	int i;

	for (i = 0; i < bs->n_down; i++)
		if (bs->down[i] == id)
			return CTL_B_DOWN;
	return ctl_broker_state((void *)bs->st, id);
}

static void
log_change(const struct ctl_topic *t, int32_t p, const struct ctl_partition
    *old, const struct ctl_pchange *ch, const char *why)
{
	char isr[256];

	ctl_ids_str(ch->isr, ch->n_isr, isr, sizeof(isr));
	if (ch->unclean)
		rn_log_about(LOG_WARNING, rn_subj_replica(t->name, p,
		    ch->leader), "%s-%d: unclean leader election: out-of-sync "
		    "replica %d leads (leader epoch %d); records it never had "
		    "are lost", t->name, p, ch->leader, ch->leader_epoch);
	else
		rn_log_about(LOG_INFO, rn_subj_part(t->name, p), "%s-%d: "
		    "leader %d -> %d, leader epoch %d, ISR [%s] (%s)", t->name,
		    p, old->leader, ch->leader, ch->leader_epoch, isr, why);
}

static void
rec_change(struct ctl_batch *b, const struct ctl_topic *t, int32_t p,
    const struct ctl_pchange *ch)
{
	ctl_rec_partition_change(b, t->id, p, ch->leader, ch->isr, ch->n_isr,
	    ch->leader_epoch, ch->partition_epoch);
}

/* ---- reconcile ------------------------------------------------------ */

bool
ctl_reconcile(struct ctl *c, struct ctl_batch *b)
{
	struct bstates bs;
	int64_t now = rn_now_ms();
	int i;
	int32_t p;

	memset(&bs, 0, sizeof(bs));
	bs.st = &c->st;
	for (i = 0; i < c->st.n_brokers; i++) {
		const struct ctl_broker *br = &c->st.brokers[i];
		struct ctl_live *l;

		if (br->fenced || (l = live_get(c, br->id)) == NULL ||
		    now - l->last_hb_ms <= c->cfg->broker_session_timeout_ms)
			continue;
		rn_log_about(LOG_WARNING, rn_subj_broker(br->id), "fencing "
		    "broker %d: no heartbeat for %lld ms", br->id,
		    (long long)(now - l->last_hb_ms));
		ctl_rec_broker_absent(b, br->id, wall_ms());
		if (bs.n_down < (int)RN_ARRAY_SIZE(bs.down))
			bs.down[bs.n_down++] = br->id;
	}
	if (!c->reconcile && b->n == 0)
		return false;
	c->reconcile = false;
	for (i = 0; i < c->st.n_topics; i++) {
		const struct ctl_topic *t = c->st.topics[i];
		bool unclean = ctl_topic_unclean(c, t);

		for (p = 0; p < t->n_parts; p++) {
			struct ctl_pchange ch;

			if (!ctl_elect(&t->parts[p], bstates_fn, &bs, unclean,
			    &ch)) {
				(void)ctl_reassign_reconcile(b, t, p,
				    bstates_fn, &bs);
				continue;
			}
			log_change(t, p, &t->parts[p], &ch, "broker state");
			rec_change(b, t, p, &ch);
		}
	}
	return b->n > 0;
}

/* ---- BrokerRegistration --------------------------------------------- */

static bool
same_registration(const struct ctl_broker *b,
    const struct rn_BrokerRegistrationRequest *req)
{
	int32_t i;

	if (memcmp(b->incarnation, req->incarnation_id.b, 16) != 0 ||
	    b->n_listeners != req->listeners_count ||
	    b->n_log_dirs != req->log_dirs_count ||
	    !(req->rack.len > 0 ? rn_kstr_eq(req->rack, b->rack) :
	    b->rack[0] == '\0'))
		return false;
	for (i = 0; i < req->listeners_count; i++)
		if (!rn_kstr_eq(req->listeners[i].name, b->listeners[i].name) ||
		    !rn_kstr_eq(req->listeners[i].host, b->listeners[i].host) ||
		    req->listeners[i].port != b->listeners[i].port)
			return false;
	for (i = 0; i < req->log_dirs_count; i++)
		if (memcmp(req->log_dirs[i].b, b->log_dirs[i], 16) != 0)
			return false;
	return true;
}

static bool
kcopy(struct rn_kstr s, char *buf, size_t len)
{
	if (s.len < 0 || (size_t)s.len >= len)
		return false;
	memcpy(buf, s.ptr, (size_t)s.len);
	buf[s.len] = '\0';
	return true;
}

/*
 * A registration refused as it stands: another cluster's broker, a bad
 * request (KIP-858: from v2, no online log directory is one), or a new
 * incarnation while the old one's session is live.
 */
static int16_t
registration_refused(struct ctl_op *op,
    const struct rn_BrokerRegistrationRequest *req)
{
	struct ctl *c = op->c;
	const struct ctl_broker *old;
	struct ctl_live *l;

	if (req->cluster_id.len > 0 && c->st.cluster_id[0] != '\0' &&
	    !rn_kstr_eq(req->cluster_id, c->st.cluster_id)) {
		rn_log_about(LOG_WARNING, rn_subj_broker(req->broker_id),
		    "broker %d registers with cluster id %.*s, but this "
		    "cluster is %s: refused", req->broker_id,
		    (int)req->cluster_id.len, req->cluster_id.ptr,
		    c->st.cluster_id);
		return RN_KERR_INCONSISTENT_CLUSTER_ID;
	}
	if (req->broker_id < 0 || req->listeners_count >
	    RN_CONFIG_MAX_LISTENERS || req->log_dirs_count >
	    RN_CONFIG_MAX_LOGDIRS || (op->ver >= 2 &&
	    req->log_dirs_count == 0))
		return RN_KERR_INVALID_REQUEST;
	old = ctl_state_broker(&c->st, req->broker_id);
	/* an incarnation that went through a controlled shutdown is done:
	 * its restart registers at once, not after its session expires */
	if (old != NULL && memcmp(old->incarnation, req->incarnation_id.b,
	    16) != 0 && !old->fenced && !old->in_controlled_shutdown &&
	    (l = live_get(c, old->id)) != NULL &&
	    rn_now_ms() - l->last_hb_ms <= c->cfg->broker_session_timeout_ms) {
		rn_log_about(LOG_INFO, rn_subj_broker(req->broker_id), "broker "
		    "%d registers with a new incarnation while the old one's "
		    "session is live: refused for now", req->broker_id);
		return RN_KERR_DUPLICATE_BROKER_REGISTRATION;
	}
	return RN_KERR_NONE;
}

int
ctl_op_broker_registration(struct ctl_op *op, struct rn_kreader *r)
{
	struct ctl *c = op->c;
	struct rn_BrokerRegistrationRequest req;
	struct rn_BrokerRegistrationResponse *resp = &op->resp.br;
	const struct ctl_broker *old;
	struct ctl_broker br;
	struct ctl_listener ls[RN_CONFIG_MAX_LISTENERS];
	uint8_t dirs[RN_CONFIG_MAX_LOGDIRS][16];
	int32_t i;
	int rc;

	if ((rc = rn_BrokerRegistrationRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	rn_BrokerRegistrationResponse_init(resp);
	resp->broker_epoch = -1;
	op->broker = req.broker_id;
	if ((resp->error_code = registration_refused(op, &req)) != 0)
		return 0;
	old = ctl_state_broker(&c->st, req.broker_id);
	live_touch(c, req.broker_id, -1);
	if (old != NULL && same_registration(old, &req)) {
		resp->broker_epoch = old->epoch; /* a retry */
		return 0;
	}
	memset(&br, 0, sizeof(br));
	br.id = req.broker_id;
	memcpy(br.incarnation, req.incarnation_id.b, 16);
	for (i = 0; i < req.listeners_count; i++) {
		if (!kcopy(req.listeners[i].name, ls[i].name,
		    sizeof(ls[i].name)) || !kcopy(req.listeners[i].host,
		    ls[i].host, sizeof(ls[i].host))) {
			resp->error_code = RN_KERR_INVALID_REQUEST;
			return 0;
		}
		ls[i].port = req.listeners[i].port;
	}
	br.listeners = ls;
	br.n_listeners = req.listeners_count;
	if (req.rack.len > 0 && !kcopy(req.rack, br.rack, sizeof(br.rack))) {
		resp->error_code = RN_KERR_INVALID_REQUEST;
		return 0;
	}
	for (i = 0; i < req.log_dirs_count; i++)
		memcpy(dirs[i], req.log_dirs[i].b, 16);
	br.log_dirs = dirs;
	br.n_log_dirs = req.log_dirs_count;
	br.fenced = true; /* until its heartbeat shows it caught up */
	ctl_rec_register_broker(&op->batch, &br, false);
	ctl_dirs_unassign_missing(&op->batch, &c->st, &br);
	rn_log_about(LOG_INFO, rn_subj_broker(br.id), "registering broker "
	    "%d%s%s", br.id, br.rack[0] ? " in rack " : "", br.rack);
	return 0;
}

/* ---- BrokerHeartbeat ------------------------------------------------ */

int
ctl_op_broker_heartbeat(struct ctl_op *op, struct rn_kreader *r)
{
	struct ctl *c = op->c;
	struct rn_BrokerHeartbeatRequest req;
	struct rn_BrokerHeartbeatResponse *resp = &op->resp.bh;
	const struct ctl_broker *b;
	int rc;

	if ((rc = rn_BrokerHeartbeatRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	rn_BrokerHeartbeatResponse_init(resp);
	op->broker = req.broker_id;
	op->want_shut_down = req.want_shut_down;
	op->hb_offset = req.current_metadata_offset;
	if ((b = ctl_state_broker(&c->st, req.broker_id)) == NULL) {
		resp->error_code = RN_KERR_BROKER_ID_NOT_REGISTERED;
		return 0;
	}
	if (req.broker_epoch != b->epoch) {
		resp->error_code = RN_KERR_STALE_BROKER_EPOCH;
		return 0;
	}
	live_touch(c, b->id, req.current_metadata_offset);
	if (req.offline_log_dirs_count > 0 && ctl_dirs_offline(c, &op->batch,
	    b->id, req.offline_log_dirs, req.offline_log_dirs_count) > 0)
		rn_log_about(LOG_WARNING, rn_subj_broker(b->id), "broker %d "
		    "reports %d offline log dir(s): its replicas there are "
		    "offline", b->id, (int)req.offline_log_dirs_count);
	if (req.want_shut_down) {
		if (!b->fenced && !b->in_controlled_shutdown) {
			rn_log_about(LOG_INFO, rn_subj_broker(b->id), "broker "
			    "%d asks for a controlled shutdown", b->id);
			ctl_rec_broker_change(&op->batch, b->id, -1, 1);
		}
	} else if (b->fenced && !b->in_controlled_shutdown &&
	    !req.want_fence && req.current_metadata_offset >= b->epoch) {
		/* KIP-858: a broker with several dirs asks to stay fenced
		 * while replicas are assigned elsewhere than it keeps them */
		rn_log_about(LOG_INFO, rn_subj_broker(b->id), "unfencing "
		    "broker %d: caught up with the metadata log at offset %lld",
		    b->id, (long long)req.current_metadata_offset);
		ctl_rec_broker_change(&op->batch, b->id, 0, -1);
	}
	return 0;
}

/* ---- AlterPartition ------------------------------------------------- */

/*
 * Reads the proposed ISR into isr[] (CTL_MAX_RF long) and checks it: each
 * member a replica, once, the leader among them, each one eligible.
 */
static int16_t
alter_read_isr(struct ctl_op *op, const struct ctl_partition *pp,
    const struct rn_AlterPartitionRequest_PartitionData *pd, int32_t *isr,
    int32_t *np)
{
	int32_t n, i;

	n = op->ver >= 3 ? pd->new_isr_with_epochs_count : pd->new_isr_count;
	if (n <= 0 || n > CTL_MAX_RF)
		return RN_KERR_INVALID_REQUEST;
	for (i = 0; i < n; i++) {
		isr[i] = op->ver >= 3 ? pd->new_isr_with_epochs[i].broker_id :
		    pd->new_isr[i];
		/* members are replicas, each once */
		if (!ctl_ids_has(pp->replicas, pp->n_replicas, isr[i]) ||
		    ctl_ids_has(isr, i, isr[i]))
			return RN_KERR_INVALID_REQUEST;
	}
	if (!ctl_ids_has(isr, n, pp->leader))
		return RN_KERR_INVALID_REQUEST;
	for (i = 0; i < n; i++) {
		const struct ctl_broker *b = ctl_state_broker(&op->c->st,
		    isr[i]);

		/* a replica in a failed dir serves nothing */
		if (b == NULL || b->fenced || b->in_controlled_shutdown ||
		    ctl_replica_lost(pp, isr[i]) ||
		    (op->ver >= 3 && pd->new_isr_with_epochs[i].broker_epoch !=
		    -1 && pd->new_isr_with_epochs[i].broker_epoch != b->epoch))
			return op->ver > 1 ? RN_KERR_INELIGIBLE_REPLICA :
			    RN_KERR_OPERATION_NOT_ATTEMPTED;
	}
	*np = n;
	return 0;
}

static void
alter_log(const struct ctl_topic *t, const struct ctl_partition *pp,
    int32_t partition, const int32_t *isr, int32_t n, int32_t epoch)
{
	char s[256];

	ctl_ids_str(isr, n, s, sizeof(s));
	rn_log_about(LOG_INFO, rn_subj_part(t->name, partition), "%s-%d: ISR "
	    "%s to [%s] by leader %d (partition epoch %d)", t->name, partition,
	    n < pp->n_isr ? "shrinks" : "changes", s, pp->leader, epoch);
}

static int16_t
alter_one(struct ctl_op *op, const struct rn_AlterPartitionRequest *req,
    const struct ctl_topic *t,
    const struct rn_AlterPartitionRequest_PartitionData *pd,
    struct rn_AlterPartitionResponse_PartitionData *out)
{
	const struct ctl_partition *pp;
	int32_t isr[CTL_MAX_RF], n;
	int16_t err;

	if (pd->partition_index < 0 || pd->partition_index >= t->n_parts)
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	pp = &t->parts[pd->partition_index];
	/* ahead of us: this is probably no longer the active controller */
	if (pd->leader_epoch > pp->leader_epoch ||
	    pd->partition_epoch > pp->partition_epoch)
		return RN_KERR_NOT_CONTROLLER;
	if (pd->leader_epoch < pp->leader_epoch)
		return RN_KERR_FENCED_LEADER_EPOCH;
	if (req->broker_id != pp->leader)
		return RN_KERR_INVALID_REQUEST;
	if (pd->partition_epoch < pp->partition_epoch)
		return RN_KERR_INVALID_UPDATE_VERSION;
	if ((err = alter_read_isr(op, pp, pd, isr, &n)) != 0)
		return err;
	out->leader_id = pp->leader;
	out->leader_epoch = pp->leader_epoch;
	out->partition_epoch = pp->partition_epoch;
	if (n == pp->n_isr && memcmp(isr, pp->isr, sizeof(int32_t) *
	    (size_t)n) == 0) {
		out->isr = pp->isr;
		out->isr_count = pp->n_isr;
		return 0; /* nothing changes */
	}
	if ((out->isr = rn_arena_alloc(&op->arena, sizeof(int32_t) *
	    (size_t)n)) == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	memcpy(out->isr, isr, sizeof(int32_t) * (size_t)n);
	out->isr_count = n;
	out->partition_epoch = pp->partition_epoch + 1;
	ctl_rec_partition_change(&op->batch, t->id, pd->partition_index,
	    pp->leader, isr, n, pp->leader_epoch, out->partition_epoch);
	alter_log(t, pp, pd->partition_index, isr, n, out->partition_epoch);
	return 0;
}

int
ctl_op_alter_partition(struct ctl_op *op, struct rn_kreader *r)
{
	struct ctl *c = op->c;
	struct rn_AlterPartitionRequest req;
	struct rn_AlterPartitionResponse *resp = &op->resp.ap;
	const struct ctl_broker *b;
	int32_t i, k;
	int rc;

	if ((rc = rn_AlterPartitionRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	rn_AlterPartitionResponse_init(resp);
	b = ctl_state_broker(&c->st, req.broker_id);
	if (req.broker_epoch != -1 && (b == NULL || b->epoch !=
	    req.broker_epoch)) {
		resp->error_code = RN_KERR_STALE_BROKER_EPOCH;
		return 0;
	}
	resp->topics_count = req.topics_count;
	if (req.topics_count > 0 && (resp->topics = rn_arena_alloc(&op->arena,
	    sizeof(*resp->topics) * (size_t)req.topics_count)) == NULL)
		return -ENOMEM;
	for (i = 0; i < req.topics_count; i++) {
		const struct rn_AlterPartitionRequest_TopicData *td =
		    &req.topics[i];
		struct rn_AlterPartitionResponse_TopicData *to =
		    &resp->topics[i];
		const struct ctl_topic *t;

		rn_AlterPartitionResponse_TopicData_init(to);
		to->topic_name = td->topic_name;
		to->topic_id = td->topic_id;
		t = op->ver >= 2 ? ctl_state_topic_by_id(&c->st,
		    td->topic_id.b) : td->topic_name.len > 0 ?
		    ctl_state_topic(&c->st, td->topic_name.ptr,
		    (size_t)td->topic_name.len) : NULL;
		to->partitions_count = td->partitions_count;
		if (td->partitions_count > 0 && (to->partitions =
		    rn_arena_alloc(&op->arena, sizeof(*to->partitions) *
		    (size_t)td->partitions_count)) == NULL)
			return -ENOMEM;
		for (k = 0; k < td->partitions_count; k++) {
			struct rn_AlterPartitionResponse_PartitionData *po =
			    &to->partitions[k];

			rn_AlterPartitionResponse_PartitionData_init(po);
			po->partition_index = td->partitions[k].partition_index;
			po->leader_id = -1;
			po->leader_epoch = -1;
			po->partition_epoch = -1;
			if (t == NULL)
				po->error_code = op->ver >= 2 ?
				    RN_KERR_UNKNOWN_TOPIC_ID :
				    RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
			else
				po->error_code = alter_one(op, &req, t,
				    &td->partitions[k], po);
			if (po->error_code != 0)
				rn_log_about(LOG_INFO, rn_subj_replica(t !=
				    NULL ? t->name : NULL, po->partition_index,
				    req.broker_id), "AlterPartition from broker "
				    "%d for %s-%d refused: %s", req.broker_id,
				    t != NULL ? t->name : "?",
				    po->partition_index,
				    rn_kerr_name(po->error_code));
		}
	}
	return 0;
}

/* ---- ElectLeaders --------------------------------------------------- */

static int16_t
elect_one(struct ctl_op *op, int8_t type, const struct ctl_topic *t,
    int32_t p, struct rn_kstr *msg)
{
	struct ctl *c = op->c;
	struct ctl_pchange ch;
	int16_t e;

	if (t == NULL || p < 0 || p >= t->n_parts) {
		*msg = ctl_op_msg(op, "No such topic-partition");
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	e = type == 0 ? ctl_elect_preferred(&t->parts[p], ctl_broker_state,
	    &c->st, &ch) : ctl_elect_unclean(&t->parts[p], ctl_broker_state,
	    &c->st, &ch);
	if (e != 0)
		return e;
	log_change(t, p, &t->parts[p], &ch, type == 0 ? "preferred election"
	    : "ElectLeaders");
	rec_change(&op->batch, t, p, &ch);
	return 0;
}

int
ctl_op_elect_leaders(struct ctl_op *op, struct rn_kreader *r)
{
	struct ctl *c = op->c;
	struct rn_ElectLeadersRequest req;
	struct rn_ElectLeadersResponse *resp = &op->resp.el;
	int32_t i, k, n;
	int rc;

	if ((rc = rn_ElectLeadersRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	rn_ElectLeadersResponse_init(resp);
	if (op->ver == 0)
		req.election_type = 0;
	if (req.election_type != 0 && req.election_type != 1) {
		resp->error_code = RN_KERR_INVALID_REQUEST;
		return 0;
	}
	n = req.topic_partitions_count >= 0 ? req.topic_partitions_count :
	    c->st.n_topics;
	if (n > 0 && (resp->replica_election_results = rn_arena_alloc(
	    &op->arena, sizeof(*resp->replica_election_results) *
	    (size_t)n)) == NULL)
		return -ENOMEM;
	resp->replica_election_results_count = n;
	for (i = 0; i < n; i++) {
		struct rn_ElectLeadersResponse_ReplicaElectionResult *o =
		    &resp->replica_election_results[i];
		const struct ctl_topic *t;
		int32_t np;

		rn_ElectLeadersResponse_ReplicaElectionResult_init(o);
		if (req.topic_partitions_count >= 0) {
			const struct rn_ElectLeadersRequest_TopicPartitions
			    *tp = &req.topic_partitions[i];

			o->topic = tp->topic;
			t = tp->topic.len > 0 ? ctl_state_topic(&c->st,
			    tp->topic.ptr, (size_t)tp->topic.len) : NULL;
			np = tp->partitions_count;
		} else {
			t = c->st.topics[i];
			o->topic = ctl_op_msg(op, "%s", t->name);
			np = t->n_parts;
		}
		if (np > 0 && (o->partition_result = rn_arena_alloc(
		    &op->arena, sizeof(*o->partition_result) *
		    (size_t)np)) == NULL)
			return -ENOMEM;
		for (k = 0; k < np; k++) {
			struct rn_ElectLeadersResponse_PartitionResult *pr =
			    &o->partition_result[o->partition_result_count];
			int32_t p = req.topic_partitions_count >= 0 ?
			    req.topic_partitions[i].partitions[k] : k;
			struct rn_kstr msg = { NULL, -1 };
			int16_t e = elect_one(op, req.election_type, t, p,
			    &msg);

			/* all partitions: those needing nothing are left out */
			if (req.topic_partitions_count < 0 &&
			    e == RN_KERR_ELECTION_NOT_NEEDED)
				continue;
			rn_ElectLeadersResponse_PartitionResult_init(pr);
			pr->partition_id = p;
			pr->error_code = e;
			pr->error_message = msg;
			o->partition_result_count++;
		}
	}
	return 0;
}

/* ---- DescribeQuorum ------------------------------------------------- */

void
ctl_quorum_track(struct ctl *c)
{
	const struct raft *r = &c->raft;
	int64_t now = wall_ms();
	unsigned i;
	int v;

	if (!ctl_raft_is_leader(c))
		return;
	for (v = 0; v < c->cfg->n_voters; v++) {
		raft_id id = (raft_id)c->cfg->voters[v].id;

		if (id == r->id) {
			c->voter_fetch_ms[v] = now;
			c->voter_caught_up_ms[v] = now;
			continue;
		}
		for (i = 0; i < r->configuration.n; i++) {
			const struct raft_progress *pg;

			if (r->configuration.servers[i].id != id ||
			    r->leader_state.progress == NULL)
				continue;
			pg = &r->leader_state.progress[i];
			if (pg->recent_recv)
				c->voter_fetch_ms[v] = now;
			if (pg->match_index >= r->commit_index)
				c->voter_caught_up_ms[v] = now;
		}
	}
}

static uint64_t
voter_end(struct ctl *c, raft_id id)
{
	const struct raft *r = &c->raft;
	unsigned i;

	if (id == r->id)
		return raft_last_index(&c->raft);
	for (i = 0; i < r->configuration.n; i++)
		if (r->configuration.servers[i].id == id &&
		    r->leader_state.progress != NULL)
			return r->leader_state.progress[i].match_index;
	return 0;
}

/* The voters: how far each has the log, from raft's progress. */
static int
quorum_voters(struct ctl_op *op, struct rn_DescribeQuorumResponse_PartitionData
    *pd)
{
	struct ctl *c = op->c;
	int v;

	pd->current_voters = rn_arena_alloc(&op->arena,
	    sizeof(*pd->current_voters) * (size_t)c->cfg->n_voters);
	if (pd->current_voters == NULL)
		return -ENOMEM;
	for (v = 0; v < c->cfg->n_voters; v++) {
		struct rn_DescribeQuorumResponse_ReplicaState *rs =
		    &pd->current_voters[v];

		rn_DescribeQuorumResponse_ReplicaState_init(rs);
		rs->replica_id = c->cfg->voters[v].id;
		rs->log_end_offset = (int64_t)voter_end(c,
		    (raft_id)c->cfg->voters[v].id);
		rs->last_fetch_timestamp = c->voter_fetch_ms[v] > 0 ?
		    c->voter_fetch_ms[v] : -1;
		rs->last_caught_up_timestamp = c->voter_caught_up_ms[v] > 0 ?
		    c->voter_caught_up_ms[v] : -1;
	}
	pd->current_voters_count = c->cfg->n_voters;
	return 0;
}

/* Observers: registered brokers that are not voters, from heartbeats. */
static int
quorum_observers(struct ctl_op *op,
    struct rn_DescribeQuorumResponse_PartitionData *pd)
{
	struct ctl *c = op->c;
	int v, i, n_obs = 0;

	pd->observers = rn_arena_alloc(&op->arena, sizeof(*pd->observers) *
	    (size_t)(c->st.n_brokers > 0 ? c->st.n_brokers : 1));
	if (pd->observers == NULL)
		return -ENOMEM;
	for (i = 0; i < c->st.n_brokers; i++) {
		const struct ctl_broker *b = &c->st.brokers[i];
		struct rn_DescribeQuorumResponse_ReplicaState *rs;
		struct ctl_live *l;

		for (v = 0; v < c->cfg->n_voters; v++)
			if (c->cfg->voters[v].id == b->id)
				break;
		if (v < c->cfg->n_voters)
			continue;
		rs = &pd->observers[n_obs++];
		rn_DescribeQuorumResponse_ReplicaState_init(rs);
		rs->replica_id = b->id;
		l = live_get(c, b->id);
		rs->log_end_offset = l != NULL ? l->offset : -1;
		rs->last_fetch_timestamp = l != NULL ? l->last_hb_wall_ms : -1;
		rs->last_caught_up_timestamp = l != NULL && l->offset >=
		    (int64_t)c->st.last_index ? l->last_hb_wall_ms : -1;
	}
	pd->observers_count = n_obs;
	return 0;
}

/* v2: each voter's controller listener. */
static int
quorum_nodes(struct ctl_op *op, struct rn_DescribeQuorumResponse *resp)
{
	const struct rn_config *cfg = op->c->cfg;
	int v;

	resp->nodes = rn_arena_alloc(&op->arena, sizeof(*resp->nodes) *
	    (size_t)cfg->n_voters);
	if (resp->nodes == NULL)
		return -ENOMEM;
	for (v = 0; v < cfg->n_voters; v++) {
		struct rn_DescribeQuorumResponse_Node *nd = &resp->nodes[v];
		struct rn_DescribeQuorumResponse_Listener *li =
		    rn_arena_alloc(&op->arena, sizeof(*li));

		if (li == NULL)
			return -ENOMEM;
		rn_DescribeQuorumResponse_Node_init(nd);
		rn_DescribeQuorumResponse_Listener_init(li);
		li->name = rn_kstr_c(cfg->n_controller_listener_names > 0 ?
		    cfg->controller_listener_names[0] : "CONTROLLER");
		li->host = rn_kstr_c(cfg->voters[v].host);
		li->port = cfg->voters[v].port;
		nd->node_id = cfg->voters[v].id;
		nd->listeners = li;
		nd->listeners_count = 1;
	}
	resp->nodes_count = cfg->n_voters;
	return 0;
}

int
ctl_op_describe_quorum(struct ctl_op *op, struct rn_kreader *r)
{
	struct ctl *c = op->c;
	struct rn_DescribeQuorumRequest req;
	struct rn_DescribeQuorumResponse *resp = &op->resp.dq;
	struct rn_DescribeQuorumResponse_TopicData *td;
	struct rn_DescribeQuorumResponse_PartitionData *pd;
	int rc;

	if ((rc = rn_DescribeQuorumRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	rn_DescribeQuorumResponse_init(resp);
	if (req.topics_count != 1 || !rn_kstr_eq(req.topics[0].topic_name,
	    METADATA_TOPIC) || req.topics[0].partitions_count != 1 ||
	    req.topics[0].partitions[0].partition_index != 0) {
		resp->error_code = RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
		return 0;
	}
	ctl_quorum_track(c);
	td = rn_arena_alloc(&op->arena, sizeof(*td));
	pd = rn_arena_alloc(&op->arena, sizeof(*pd));
	if (td == NULL || pd == NULL)
		return -ENOMEM;
	rn_DescribeQuorumResponse_TopicData_init(td);
	rn_DescribeQuorumResponse_PartitionData_init(pd);
	td->topic_name = rn_kstr_c(METADATA_TOPIC);
	td->partitions = pd;
	td->partitions_count = 1;
	resp->topics = td;
	resp->topics_count = 1;
	pd->partition_index = 0;
	pd->leader_id = c->cfg->node_id;
	pd->leader_epoch = (int32_t)c->raft.current_term;
	pd->high_watermark = (int64_t)c->raft.commit_index;
	if ((rc = quorum_voters(op, pd)) != 0 ||
	    (rc = quorum_observers(op, pd)) != 0)
		return rc;
	if (op->ver >= 2 && (rc = quorum_nodes(op, resp)) != 0)
		return rc;
	return 0;
}

/* ---- after commit --------------------------------------------------- */

void
ctl_op_committed(struct ctl_op *op)
{
	struct ctl *c = op->c;
	const struct ctl_broker *b;

	if (op->origin != CTL_ORIGIN_CONN || op->fwd)
		return;
	b = op->broker >= 0 ? ctl_state_broker(&c->st, op->broker) : NULL;
	if (op->key == RN_KAPI_BROKER_REGISTRATION &&
	    op->resp.br.error_code == 0 && b != NULL) {
		if (op->resp.br.broker_epoch != b->epoch)
			rn_log_about(LOG_INFO, rn_subj_broker(b->id), "broker "
			    "%d registered, epoch %lld", b->id,
			    (long long)b->epoch);
		op->resp.br.broker_epoch = b->epoch;
	} else if (op->key == RN_KAPI_BROKER_HEARTBEAT &&
	    op->resp.bh.error_code == 0 && b != NULL) {
		struct rn_BrokerHeartbeatResponse *o = &op->resp.bh;

		o->is_caught_up = op->hb_offset >= b->epoch;
		o->is_fenced = b->fenced;
		o->should_shut_down = op->want_shut_down && (b->fenced ||
		    (b->in_controlled_shutdown && !ctl_leads_movable(&c->st,
		    b->id, ctl_broker_state, &c->st)));
	}
}
