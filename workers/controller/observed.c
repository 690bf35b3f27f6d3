/*
 * The observed brokers (seed 000) on the active controller: every broker
 * that ever registered stays in the metadata state, fenced or not, until
 * UnregisterBroker removes it; and the automatic leader rebalance that
 * gives leadership back to preferred replicas once they return.
 *
 * Placement over the observed brokers is in assign.c (ctl_place_new).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"

/* Kafka's cap on the elections of one balancing pass. */
#define MAX_ELECTIONS_PER_PASS 1000

/* ---- UnregisterBroker ----------------------------------------------- */

/*
 * Kafka refuses only an id it does not know (BROKER_ID_NOT_REGISTERED);
 * a live broker is refused here too, since it would register again at
 * once and placement would count it again anyway.
 */
int
ctl_op_unregister_broker(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_UnregisterBrokerRequest req;
	struct rn_UnregisterBrokerResponse *resp = &op->resp.ub;
	const struct ctl_broker *b;
	int rc;

	if ((rc = rn_UnregisterBrokerRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	rn_UnregisterBrokerResponse_init(resp);
	resp->error_message.len = -1;
	if ((b = ctl_state_broker(&op->c->st, req.broker_id)) == NULL) {
		resp->error_code = RN_KERR_BROKER_ID_NOT_REGISTERED;
		resp->error_message = ctl_op_msg(op, "Broker ID %d is not "
		    "currently registered", req.broker_id);
		return 0;
	}
	if (!b->fenced) {
		resp->error_code = RN_KERR_INVALID_REQUEST;
		resp->error_message = ctl_op_msg(op, "Broker %d is live%s: "
		    "only a fenced or absent broker can be unregistered",
		    b->id, b->in_controlled_shutdown ?
		    " (in controlled shutdown)" : "");
		return 0;
	}
	rn_log_about(LOG_INFO, rn_subj_broker(b->id), "unregistering broker "
	    "%d: no new replica goes there", b->id);
	ctl_rec_unregister_broker(&op->batch, b->id);
	return 0;
}

/* ---- automatic leader rebalance ------------------------------------- */

struct pref_count {
	int32_t id;
	int total, moved;   /* partitions it prefers; led by someone else */
};

static struct pref_count *
pref_find(struct pref_count *v, int n, int32_t id)
{
	int lo = 0, hi = n - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (v[mid].id == id)
			return &v[mid];
		if (v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/* Per observed broker: the partitions it is the preferred leader of. */
static struct pref_count *
pref_counts(const struct ctl_state *st)
{
	struct pref_count *v, *pc;
	int i;
	int32_t p;

	if ((v = calloc((size_t)(st->n_brokers > 0 ? st->n_brokers : 1),
	    sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; i < st->n_brokers; i++)
		v[i].id = st->brokers[i].id; /* sorted by id, as the state */
	for (i = 0; i < st->n_topics; i++)
		for (p = 0; p < st->topics[i]->n_parts; p++) {
			const struct ctl_partition *pp =
			    &st->topics[i]->parts[p];

			if (pp->n_replicas == 0 || (pc = pref_find(v,
			    st->n_brokers, pp->replicas[0])) == NULL)
				continue;
			pc->total++;
			if (pp->leader != pc->id)
				pc->moved++;
		}
	return v;
}

/*
 * Kafka's rule (the ZooKeeper controller's; KRaft's ignores the
 * percentage): a broker whose share of preferred partitions led
 * elsewhere exceeds leader.imbalance.per.broker.percentage gets back
 * those of them where it is in the ISR and unfenced.
 */
static int
rebalance_pass(struct ctl *c, struct ctl_batch *b)
{
	const struct ctl_state *st = &c->st;
	struct pref_count *v, *pc;
	int i, n = 0, pct = c->cfg->leader_imbalance_per_broker_pct;
	int32_t p;

	if ((v = pref_counts(st)) == NULL)
		return -ENOMEM;
	for (i = 0; i < st->n_topics && n < MAX_ELECTIONS_PER_PASS; i++) {
		const struct ctl_topic *t = st->topics[i];

		for (p = 0; p < t->n_parts && n < MAX_ELECTIONS_PER_PASS;
		    p++) {
			const struct ctl_partition *pp = &t->parts[p];
			struct ctl_pchange ch;

			if (pp->n_replicas == 0 || (pc = pref_find(v,
			    st->n_brokers, pp->replicas[0])) == NULL ||
			    (int64_t)pc->moved * 100 <= (int64_t)pct *
			    pc->total)
				continue;
			if (ctl_elect_preferred(pp, ctl_broker_state,
			    (void *)st, &ch) != 0)
				continue;
			rn_log_about(LOG_INFO, rn_subj_part(t->name, p),
			    "%s-%d: leader %d -> %d, leader epoch %d "
			    "(automatic rebalance)", t->name, p, pp->leader,
			    ch.leader, ch.leader_epoch);
			ctl_rec_partition_change(b, t->id, p, ch.leader,
			    ch.isr, ch.n_isr, ch.leader_epoch,
			    ch.partition_epoch);
			n++;
		}
	}
	free(v);
	return n;
}

/*
 * Every leader.imbalance.check.interval.seconds on the active controller
 * (the first one an interval after this runs first): the records of one
 * balancing pass. False when there are none.
 */
bool
ctl_rebalance(struct ctl *c, struct ctl_batch *b)
{
	int64_t now = rn_now_ms();

	if (!c->cfg->auto_leader_rebalance_enable)
		return false;
	if (c->rebalance_due_ms == 0)
		c->rebalance_due_ms = now +
		    c->cfg->leader_imbalance_check_interval_s * 1000;
	if (now < c->rebalance_due_ms)
		return false;
	c->rebalance_due_ms = now +
	    c->cfg->leader_imbalance_check_interval_s * 1000;
	return rebalance_pass(c, b) > 0;
}

/* The reconcile hook: fencing and elections first, then balancing. */
bool
ctl_reconcile_all(struct ctl *c, struct ctl_batch *b)
{
	if (ctl_reconcile(c, b))
		return true;
	return ctl_rebalance(c, b);
}
