/*
 * The network worker's counters (ipc/metrics.h): its own slot for the
 * totals and requests, the partition's slot for the per-topic figures.
 */
#include "autoconf.h"

#include "common/util.h"
#include "ipc/metrics.h"
#include "workers/network/net_int.h"

static struct rn_met_worker *
self(struct net *n)
{
	return rn_metrics_worker(n->w->env->shm, n->w->slot);
}

/* The partition slot's counters, once they count this partition. */
static struct rn_met_part *
part(struct net *n, const struct rn_part *p)
{
	return rn_metrics_part_for(n->w->env->shm, (unsigned)p->slot,
	    rn_met_tag(p->topic_id, p->partition));
}

void
net_count_in(struct net *n, const struct rn_part *p, int64_t records,
    int64_t bytes)
{
	struct rn_met_worker *m = self(n);
	struct rn_met_part *mp = part(n, p);

	rn_met_add(&m->msgs_in, (uint64_t)records);
	rn_met_add(&m->bytes_in, (uint64_t)bytes);
	if (mp == NULL)
		return;
	rn_met_add_shared(&mp->msgs_in, (uint64_t)records);
	rn_met_add_shared(&mp->bytes_in, (uint64_t)bytes);
}

void
net_count_out(struct net *n, const struct rn_part *p, size_t bytes)
{
	struct rn_met_part *mp = part(n, p);

	rn_met_add(&self(n)->bytes_out, bytes);
	if (mp != NULL)
		rn_met_add_shared(&mp->bytes_out, bytes);
}

void
net_count_request(struct net *n, int16_t api_key)
{
	if (api_key >= 0 && api_key < RN_MET_MAX_API)
		rn_met_add(&self(n)->requests[api_key], 1);
}

void
net_stage(struct net *n, enum rn_met_stage stage, int64_t us)
{
	rn_met_observe(&self(n)->stages[stage], us);
}

void
net_request_timed(struct net *n, int api, int64_t ready, int64_t start,
    int64_t park, int64_t queued, int64_t sent)
{
	struct rn_met_hist *h;

	if (api < 0 || api >= RN_MET_N_API)
		return;
	h = self(n)->req[api];
	rn_met_observe(&h[RN_RQ_QUEUE], start - ready);
	rn_met_observe(&h[RN_RQ_LOCAL], (park != 0 ? park : queued) - start);
	/* like Kafka's, 0 for a request answered where it was handled */
	rn_met_observe(&h[RN_RQ_REMOTE], park != 0 ? queued - park : 0);
	rn_met_observe(&h[RN_RQ_SEND], sent - queued);
	rn_met_observe(&h[RN_RQ_TOTAL], sent - ready);
}

/*
 * ISR shrinks and expands as the image commits them, counted like Kafka's
 * leader counts the changes the controller accepted: a led partition
 * whose ISR size moved within one leader epoch. One worker (the storage
 * duty) compares, so the remembered sizes have a single writer.
 */
static void
count_isr_of(struct net *n, const struct rn_mdv_topic *t, int32_t j)
{
	const struct rn_mdv_partition *p = &t->parts[j];
	struct rn_met_worker *m = self(n);
	struct rn_met_part *mp;
	uint64_t tag;
	bool same;

	if (p->leader != n->cfg->node_id || p->slot < 0)
		return;
	mp = rn_metrics_part(n->w->env->shm, (unsigned)p->slot);
	tag = rn_met_tag(t->id, p->p);
	same = mp->seen_tag == tag && mp->seen_epoch1 == p->leader_epoch + 1;
	if (same && p->n_isr < mp->seen_isr)
		rn_met_add(&m->isr_shrinks, 1);
	else if (same && p->n_isr > mp->seen_isr)
		rn_met_add(&m->isr_expands, 1);
	mp->seen_tag = tag;
	mp->seen_epoch1 = p->leader_epoch + 1;
	mp->seen_isr = p->n_isr;
}

void
net_count_isr(struct net *n)
{
	const struct rn_mdview *v = &n->view;
	int i, j, k;

	if (!v->changes_all) {
		/* a delta: only its partitions can have moved */
		for (k = 0; k < v->n_changes; k++)
			count_isr_of(n, &v->topics[v->changes[k].topic],
			    v->changes[k].p);
		return;
	}
	for (i = 0; i < v->n_topics; i++)
		for (j = 0; j < v->topics[i].n_parts; j++)
			count_isr_of(n, &v->topics[i], j);
}

_Static_assert(RN_KAPI_MAX_KEY < RN_MET_MAX_API, "a counter per API key");

/* Kafka's FetchSessionCache gauges, this worker's share. */
void
net_count_fsess(struct net *n)
{
	atomic_store_explicit(&self(n)->fetch_sessions, n->n_fsess,
	    memory_order_relaxed);
	atomic_store_explicit(&self(n)->fetch_session_parts, n->fsess_parts,
	    memory_order_relaxed);
}

/* The connections this worker has open, for runnelctl status and top. */
void
net_count_conns(struct net *n)
{
	atomic_store_explicit(&self(n)->connections, (int64_t)n->n_conns,
	    memory_order_relaxed);
}
