/*
 * The leader's side of replication: followers' fetches move their log
 * ends and the high watermark; a follower that catches up is proposed for
 * the ISR, one that lags more than replica.lag.time.max.ms is proposed out.
 * Only the controller changes an ISR (AlterPartition); the leader sees the
 * outcome in the next metadata image.
 */
#include "autoconf.h"

#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/network/net_int.h"


static bool
in_isr(const struct rn_mdv_partition *mp, int32_t id)
{
	int i;

	for (i = 0; i < mp->n_isr; i++)
		if (mp->isr[i] == id)
			return true;
	return false;
}

/*
 * Like Kafka's leader, propose only a replica the controller would take:
 * a registered, unfenced broker (a restarted node fetches before it is
 * unfenced; asking then is refused and delays the real ask).
 */
static bool
isr_eligible(struct net *n, int32_t replica)
{
	const struct rn_mdv_broker *b = rn_mdview_broker(&n->view, replica);

	return b != NULL && !b->fenced;
}

static void
isr_change_send(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp, struct rn_part *p, const int32_t *isr,
    int n_isr, int64_t now)
{
	/* several workers may notice at once: one of them sends */
	if (!rn_part_isr_change_claim(p, mp->partition_epoch, now))
		return;
	if (net_alter_partition(n, t, mp, isr, n_isr) != 0)
		rn_part_isr_change_unclaim(p);
}

void
net_replica_fetched(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp, struct rn_part *p, int32_t replica,
    int64_t fetch_offset, int64_t now)
{
	int32_t isr[RN_PART_MAX_REPLICAS + 1];
	int i;

	if (rn_part_follower_fetched(p, mp, replica, fetch_offset, now))
		rn_part_wake_parked(p, n->net_efds, n->w->index);
	/*
	 * Back in the ISR once it has everything committed; Kafka also wants
	 * it past the start of our leader epoch, so it cannot carry a tail
	 * from an older leader that we do not have.
	 */
	if (in_isr(mp, replica) || mp->n_isr >= RN_PART_MAX_REPLICAS ||
	    fetch_offset < rn_part_hw(p) || !isr_eligible(n, replica) ||
	    !rn_part_isr_change_allowed(p, mp->partition_epoch, now))
		return;
	for (i = 0; i < mp->n_isr; i++)
		isr[i] = mp->isr[i];
	isr[i++] = replica;
	rn_log_about(LOG_INFO, rn_subj_replica(t->name, mp->p, replica),
	    "%s-%d: replica %d caught up: asking to add it to the ISR",
	    t->name, mp->p, replica);
	isr_change_send(n, t, mp, p, isr, i, now);
}

/* One partition this node leads: its laggards proposed out of the ISR. */
static void
isr_check_one(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp, int64_t now)
{
	const struct rn_mdview *v = &n->view;
	int32_t isr[RN_PART_MAX_REPLICAS];
	struct rn_part *p;
	int16_t kerr;
	int k, kept = 0;

	/*
	 * A lone replica has no ISR to shrink and its high watermark moves
	 * at each append: never open (and create) thousands of idle logs
	 * here. Its test reads the image only, so it goes first.
	 */
	if (mp->n_replicas <= 1 || mp->slot < 0 || !net_leads(n, mp))
		return;
	if ((p = rn_part_led(&n->parts, v, t, mp, &kerr)) == NULL)
		return;
	for (k = 0; k < mp->n_isr && kept < RN_PART_MAX_REPLICAS; k++) {
		int64_t caught_up;

		if (mp->isr[k] != n->cfg->node_id &&
		    (caught_up = rn_part_follower_caught_up_ms(p,
		    mp->isr[k])) >= 0 &&
		    now - caught_up > n->cfg->replica_lag_time_max_ms) {
			rn_log_about(LOG_INFO, rn_subj_replica(t->name, mp->p,
			    mp->isr[k]), "%s-%d: replica %d has not caught up "
			    "for %lld ms: asking to remove it from the ISR",
			    t->name, mp->p, mp->isr[k],
			    (long long)(now - caught_up));
			continue;
		}
		isr[kept++] = mp->isr[k];
	}
	if (kept < mp->n_isr &&
	    rn_part_isr_change_allowed(p, mp->partition_epoch, now))
		isr_change_send(n, t, mp, p, isr, kept, now);
	/* a smaller ISR may let the high watermark move */
	if (rn_part_advance_hw(p, mp, n->cfg->node_id))
		rn_part_wake_parked(p, n->net_efds, n->w->index);
}

bool
net_isr_housekeeping(struct net *n, struct rn_part_pass *pass,
    int64_t deadline_us)
{
	const struct rn_mdview *v = &n->view;
	int64_t now = rn_wallclock_ms();
	unsigned k = 0;

	while (pass->topic < v->n_topics) {
		const struct rn_mdv_topic *t = &v->topics[pass->topic];

		if (pass->part >= t->n_parts) {
			pass->topic++;
			pass->part = 0;
			continue;
		}
		isr_check_one(n, t, &t->parts[pass->part++], now);
		if ((++k & 63) == 0 && rn_now_us() >= deadline_us)
			return true;
	}
	pass->topic = pass->part = 0;
	return false;
}
