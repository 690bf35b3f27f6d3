/*
 * Partition reassignment: the rules (reassign.h) and the two APIs behind
 * them, AlterPartitionReassignments and ListPartitionReassignments, and
 * the completion the reconcile pass records once the adding replicas are
 * in the ISR. Kafka's KRaft controller is the reference for the rules
 * and the error codes.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/controller/op.h"
#include "workers/controller/reassign.h"

/* ---- the rules ------------------------------------------------------- */

/* out = the members of a (n) not in b (nb); returns the count. */
static int32_t
minus(const int32_t *a, int32_t n, const int32_t *b, int32_t nb,
    int32_t *out)
{
	int32_t i, k = 0;

	for (i = 0; i < n && k < CTL_MAX_RF; i++)
		if (!ctl_ids_has(b, nb, a[i]))
			out[k++] = a[i];
	return k;
}

/*
 * The ISR is p's within out's replicas; the leader stays if it is in it,
 * else the first up replica of the ISR leads (a new leader epoch). False
 * when no in-sync replica or no up leader would remain.
 */
static bool
settle(const struct ctl_partition *p, ctl_bstate_fn fn, void *arg,
    struct ctl_reassign *out)
{
	int32_t i, k = 0;

	for (i = 0; i < p->n_isr && k < CTL_MAX_RF; i++)
		if (ctl_ids_has(out->replicas, out->n_replicas, p->isr[i]))
			out->isr[k++] = p->isr[i];
	out->n_isr = k;
	out->leader = -1;
	if (p->leader >= 0 && ctl_ids_has(out->isr, k, p->leader))
		out->leader = p->leader;
	for (i = 0; out->leader < 0 && i < out->n_replicas; i++)
		if (ctl_ids_has(out->isr, k, out->replicas[i]) &&
		    fn(arg, out->replicas[i]) == CTL_B_UP)
			out->leader = out->replicas[i];
	out->leader_epoch = p->leader_epoch + (out->leader != p->leader);
	out->partition_epoch = p->partition_epoch + 1;
	return k > 0 && out->leader >= 0;
}

/* The replicas p had before its reassignment began. */
static int32_t
original(const struct ctl_partition *p, int32_t *out)
{
	return minus(p->replicas, p->n_replicas, p->adding, p->n_adding, out);
}

static void
sort_ids(int32_t *v, int32_t n)
{
	int32_t i, j, x;

	for (i = 1; i < n; i++)
		for (j = i, x = v[i]; j > 0 && v[j - 1] > x; j--) {
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
}

void
ctl_reassign_as_partition(const struct ctl_reassign *ra,
    struct ctl_partition *p)
{
	memset(p, 0, sizeof(*p));
	p->n_replicas = ra->n_replicas;
	p->replicas = (int32_t *)ra->replicas;
	p->n_isr = ra->n_isr;
	p->isr = (int32_t *)ra->isr;
	p->n_adding = ra->n_adding;
	p->adding = (int32_t *)ra->adding;
	p->n_removing = ra->n_removing;
	p->removing = (int32_t *)ra->removing;
	p->leader = ra->leader;
	p->leader_epoch = ra->leader_epoch;
	p->partition_epoch = ra->partition_epoch;
}

/* Done once every replica of the target is in the ISR. */
bool
ctl_reassign_complete(const struct ctl_partition *p, ctl_bstate_fn fn,
    void *arg, struct ctl_reassign *out)
{
	int32_t i;

	if (!ctl_reassigning(p))
		return false;
	memset(out, 0, sizeof(*out));
	out->n_replicas = minus(p->replicas, p->n_replicas, p->removing,
	    p->n_removing, out->replicas);
	for (i = 0; i < out->n_replicas; i++)
		if (!ctl_ids_has(p->isr, p->n_isr, out->replicas[i]))
			return false;
	return out->n_replicas > 0 && settle(p, fn, arg, out);
}

/*
 * As KRaft: the current replicas (the widened set when a reassignment
 * is replaced) against the target; adding and removing sorted.
 */
int16_t
ctl_reassign_start(const struct ctl_partition *p, const int32_t *target,
    int32_t n, ctl_bstate_fn fn, void *arg, struct ctl_reassign *out)
{
	struct ctl_reassign tmp;
	struct ctl_partition wide;
	int32_t i;

	memset(out, 0, sizeof(*out));
	out->n_removing = minus(p->replicas, p->n_replicas, target, n,
	    out->removing);
	out->n_adding = minus(target, n, p->replicas, p->n_replicas,
	    out->adding);
	sort_ids(out->removing, out->n_removing);
	sort_ids(out->adding, out->n_adding);
	if (n + out->n_removing > CTL_MAX_RF)
		return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
	for (i = 0; i < n; i++)
		out->replicas[i] = target[i];
	memcpy(out->replicas + n, out->removing, sizeof(int32_t) *
	    (size_t)out->n_removing);
	out->n_replicas = n + out->n_removing;
	if (!settle(p, fn, arg, out))
		return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
	/* nothing to catch up: the move completes in the same record */
	tmp = *out;
	ctl_reassign_as_partition(&tmp, &wide);
	wide.partition_epoch = p->partition_epoch;
	if (!ctl_reassign_complete(&wide, fn, arg, out))
		*out = tmp;
	return 0;
}

int16_t
ctl_reassign_cancel(const struct ctl_partition *p, ctl_bstate_fn fn,
    void *arg, struct ctl_reassign *out)
{
	if (!ctl_reassigning(p))
		return RN_KERR_NO_REASSIGNMENT_IN_PROGRESS;
	memset(out, 0, sizeof(*out));
	out->n_replicas = original(p, out->replicas);
	if (!settle(p, fn, arg, out))
		return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
	return 0;
}

/* ---- records --------------------------------------------------------- */

/*
 * The Partition record of p after a step: a replica that stays keeps its
 * log dir, a new one gets its broker's least loaded one.
 */
static void
reassign_record(struct ctl_batch *b, struct ctl_placer *pl,
    const struct ctl_topic *t, int32_t p, const struct ctl_reassign *ra)
{
	const struct ctl_partition *old = &t->parts[p];
	struct ctl_partition np;
	uint8_t dirs[CTL_MAX_RF][16];
	int32_t i, j;

	ctl_reassign_as_partition(ra, &np);
	for (i = 0; i < ra->n_replicas; i++) {
		for (j = 0; j < old->n_replicas; j++)
			if (old->replicas[j] == ra->replicas[i])
				break;
		if (j < old->n_replicas)
			memcpy(dirs[i], old->dirs[j], 16);
		else if (pl != NULL)
			ctl_place_dir(pl, ra->replicas[i], dirs[i]);
		else
			memset(dirs[i], 0, 16);
	}
	np.dirs = dirs;
	ctl_rec_partition(b, t->id, p, &np, false);
}

static void
log_step(const struct ctl_topic *t, int32_t p, const struct ctl_reassign *ra,
    const char *what)
{
	char rs[256], as[256];

	ctl_ids_str(ra->replicas, ra->n_replicas, rs, sizeof(rs));
	ctl_ids_str(ra->adding, ra->n_adding, as, sizeof(as));
	rn_log_about(LOG_INFO, rn_subj_part(t->name, p), "%s-%d: reassignment "
	    "%s: replicas [%s], adding [%s], leader %d (leader epoch %d)",
	    t->name, p, what, rs, as, ra->leader, ra->leader_epoch);
}

bool
ctl_reassign_reconcile(struct ctl_batch *b, const struct ctl_topic *t,
    int32_t p, ctl_bstate_fn fn, void *arg)
{
	struct ctl_reassign ra;

	if (!ctl_reassign_complete(&t->parts[p], fn, arg, &ra))
		return false;
	log_step(t, p, &ra, "completed");
	reassign_record(b, NULL, t, p, &ra);
	return true;
}

/* ---- AlterPartitionReassignments ------------------------------------- */

static int16_t
alter_one(struct ctl_op *op, struct ctl_placer *pl, const struct ctl_topic *t,
    const struct rn_AlterPartitionReassignmentsRequest_ReassignablePartition
    *rp, struct rn_kstr *msg)
{
	struct ctl_state *st = &op->c->st;
	const struct ctl_partition *pp;
	struct ctl_reassign ra;
	int16_t e;

	if (t == NULL || rp->partition_index < 0 ||
	    rp->partition_index >= t->n_parts) {
		*msg = ctl_op_msg(op, "The partition does not exist.");
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	pp = &t->parts[rp->partition_index];
	if (rp->replicas_count < 0) {
		if ((e = ctl_reassign_cancel(pp, ctl_broker_state, st,
		    &ra)) == RN_KERR_INVALID_REPLICA_ASSIGNMENT)
			*msg = ctl_op_msg(op, "Unable to revert the partition "
			    "assignment: only adding replicas are in sync.");
		if (e != 0)
			return e;
	} else {
		if ((e = ctl_place_check_manual(op, st, rp->replicas,
		    rp->replicas_count, 0, msg)) != 0)
			return e;
		if ((e = ctl_reassign_start(pp, rp->replicas,
		    rp->replicas_count, ctl_broker_state, st, &ra)) != 0) {
			*msg = ctl_op_msg(op, "No in-sync replica of the "
			    "partition would remain, or too many replicas.");
			return e;
		}
		if ((e = ctl_place_check_slots(op, ra.adding, ra.n_adding,
		    msg)) != 0)
			return e;
		/* already there, in that order: no record */
		if (!ctl_reassigning(pp) && ra.n_replicas == pp->n_replicas &&
		    memcmp(ra.replicas, pp->replicas, sizeof(int32_t) *
		    (size_t)ra.n_replicas) == 0)
			return 0;
	}
	log_step(t, rp->partition_index, &ra, rp->replicas_count < 0 ?
	    "cancelled" : ra.n_adding + ra.n_removing > 0 ? "started" :
	    "done at once");
	reassign_record(&op->batch, pl, t, rp->partition_index, &ra);
	return 0;
}

int
ctl_op_alter_reassignments(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_AlterPartitionReassignmentsRequest req;
	struct rn_AlterPartitionReassignmentsResponse *resp = &op->resp.apr;
	struct ctl_placer pl;
	int32_t i, k;
	int rc;

	if ((rc = rn_AlterPartitionReassignmentsRequest_decode(r, op->ver,
	    &op->arena, &req)) != 0)
		return rc;
	memset(&pl, 0, sizeof(pl));
	pl.st = &op->c->st;
	pl.arena = &op->arena;
	rn_AlterPartitionReassignmentsResponse_init(resp);
	if (req.topics_count > 0 && (resp->responses = rn_arena_alloc(
	    &op->arena, sizeof(*resp->responses) *
	    (size_t)req.topics_count)) == NULL)
		return -ENOMEM;
	resp->responses_count = req.topics_count > 0 ? req.topics_count : 0;
	for (i = 0; i < resp->responses_count; i++) {
		const struct rn_AlterPartitionReassignmentsRequest_ReassignableTopic
		    *rt = &req.topics[i];
		struct rn_AlterPartitionReassignmentsResponse_ReassignableTopicResponse
		    *o = &resp->responses[i];
		const struct ctl_topic *t = rt->name.len > 0 ?
		    ctl_state_topic(&op->c->st, rt->name.ptr,
		    (size_t)rt->name.len) : NULL;

		rn_AlterPartitionReassignmentsResponse_ReassignableTopicResponse_init(o);
		o->name = rt->name;
		if (rt->partitions_count > 0 && (o->partitions =
		    rn_arena_alloc(&op->arena, sizeof(*o->partitions) *
		    (size_t)rt->partitions_count)) == NULL)
			return -ENOMEM;
		o->partitions_count = rt->partitions_count > 0 ?
		    rt->partitions_count : 0;
		for (k = 0; k < o->partitions_count; k++) {
			struct rn_AlterPartitionReassignmentsResponse_ReassignablePartitionResponse
			    *po = &o->partitions[k];
			struct rn_kstr msg = { NULL, -1 };

			rn_AlterPartitionReassignmentsResponse_ReassignablePartitionResponse_init(po);
			po->partition_index = rt->partitions[k].partition_index;
			po->error_code = alter_one(op, &pl, t,
			    &rt->partitions[k], &msg);
			po->error_message = msg;
		}
	}
	return 0;
}

/* ---- ListPartitionReassignments -------------------------------------- */

typedef struct rn_ListPartitionReassignmentsResponse_OngoingTopicReassignment
    ongoing_topic;
typedef struct rn_ListPartitionReassignmentsResponse_OngoingPartitionReassignment
    ongoing_part;

/* p of t into o's list if it is being reassigned. */
static int
list_one(struct ctl_op *op, const struct ctl_topic *t, int32_t p,
    ongoing_topic *o, int32_t cap)
{
	const struct ctl_partition *pp = &t->parts[p];
	ongoing_part *po;

	if (!ctl_reassigning(pp))
		return 0;
	if (o->partitions == NULL && (o->partitions = rn_arena_alloc(
	    &op->arena, sizeof(*o->partitions) * (size_t)cap)) == NULL)
		return -ENOMEM;
	po = &o->partitions[o->partitions_count++];
	rn_ListPartitionReassignmentsResponse_OngoingPartitionReassignment_init(
	    po);
	po->partition_index = p;
	po->replicas = pp->replicas;
	po->replicas_count = pp->n_replicas;
	po->adding_replicas = pp->adding;
	po->adding_replicas_count = pp->n_adding;
	po->removing_replicas = pp->removing;
	po->removing_replicas_count = pp->n_removing;
	return 0;
}

/* The reassigning partitions of t (all, or the n of idx) into o. */
static int
list_topic(struct ctl_op *op, const struct ctl_topic *t, const int32_t *idx,
    int32_t n, ongoing_topic *o)
{
	int32_t k, cap = idx != NULL ? n : t->n_parts;
	int rc;

	rn_ListPartitionReassignmentsResponse_OngoingTopicReassignment_init(o);
	o->name = ctl_op_str(op, t->name);
	for (k = 0; k < cap; k++) {
		int32_t p = idx != NULL ? idx[k] : k;

		if (p < 0 || p >= t->n_parts)
			continue;
		if ((rc = list_one(op, t, p, o, cap)) != 0)
			return rc;
	}
	return 0;
}

int
ctl_op_list_reassignments(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_ListPartitionReassignmentsRequest req;
	struct rn_ListPartitionReassignmentsResponse *resp = &op->resp.lpr;
	const struct ctl_state *st = &op->c->st;
	int32_t i, n;
	int rc;

	if ((rc = rn_ListPartitionReassignmentsRequest_decode(r, op->ver,
	    &op->arena, &req)) != 0)
		return rc;
	rn_ListPartitionReassignmentsResponse_init(resp);
	n = req.topics_count >= 0 ? req.topics_count : st->n_topics;
	if (n > 0 && (resp->topics = rn_arena_alloc(&op->arena,
	    sizeof(*resp->topics) * (size_t)n)) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct ctl_topic *t = req.topics_count < 0 ?
		    st->topics[i] : NULL;
		ongoing_topic *o = &resp->topics[resp->topics_count];

		if (req.topics_count >= 0) {
			t = req.topics[i].name.len > 0 ? ctl_state_topic(st,
			    req.topics[i].name.ptr,
			    (size_t)req.topics[i].name.len) : NULL;
			if (t == NULL) {
				resp->error_code =
				    RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
				resp->error_message = ctl_op_msg(op, "Topic "
				    "%.*s does not exist.",
				    (int)req.topics[i].name.len,
				    req.topics[i].name.ptr);
				resp->topics_count = 0;
				return 0;
			}
		}
		if ((rc = list_topic(op, t, req.topics_count >= 0 ?
		    req.topics[i].partition_indexes : NULL,
		    req.topics_count >= 0 ?
		    req.topics[i].partition_indexes_count : 0, o)) != 0)
			return rc;
		if (o->partitions_count > 0)
			resp->topics_count++;
	}
	return 0;
}
