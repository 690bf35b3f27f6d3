/* Replication quotas: see replquota.h. */
#include "autoconf.h"

#include <stdlib.h>
#include <string.h>

#include "common/kconfig_catalogue.h"
#include "common/util.h"
#include "workers/replquota.h"

void
rn_replquota_init(struct rn_replquota *q, bool leader)
{
	memset(q, 0, sizeof(*q));
	q->leader = leader;
	q->last_ms = rn_now_ms();
}

void
rn_replquota_update(struct rn_replquota *q, const struct rn_mdview *v,
    const struct rn_config *cfg, int n_sharing)
{
	const char *key = q->leader ? "leader.replication.throttled.rate" :
	    "follower.replication.throttled.rate";
	enum rn_config_source src;
	const char *val = NULL;
	char buf[64];
	double rate = 0;

	if (v->version == q->version && q->version != 0)
		return;
	q->version = v->version;
	if (rn_mdview_broker_config(v, cfg, key, &val, &src, buf,
	    sizeof(buf)) == 0 && val != NULL)
		rate = strtod(val, NULL);
	/* Long.MAX_VALUE, Kafka's default, means none */
	if (rate <= 0 || rate >= 9e18)
		rate = 0;
	else if (n_sharing > 1)
		rate /= n_sharing;
	if (rate != q->rate) {
		/* a new rate starts from an empty bucket: no banked burst */
		q->tokens = 0;
		q->last_ms = rn_now_ms();
	}
	q->rate = rate;
}

static bool
in_isr(const struct rn_mdv_partition *mp, int32_t id)
{
	int32_t i;

	for (i = 0; i < mp->n_isr; i++)
		if (mp->isr[i] == id)
			return true;
	return false;
}

bool
rn_replquota_applies(const struct rn_replquota *q,
    const struct rn_mdv_topic *t, const struct rn_mdv_partition *mp,
    int32_t listed, int32_t replica)
{
	const char *list;

	if (q->rate <= 0 || in_isr(mp, replica))
		return false;
	list = rn_mdview_topic_override(t, q->leader ?
	    "leader.replication.throttled.replicas" :
	    "follower.replication.throttled.replicas");
	return rn_kcfg_throttled_has(list, mp->p, listed);
}

int32_t
rn_replquota_allowance(struct rn_replquota *q, int32_t cap)
{
	int64_t now = rn_now_ms();

	if (q->rate <= 0)
		return cap;
	q->tokens += q->rate * (double)(now - q->last_ms) / 1000.0;
	q->last_ms = now;
	/* at most a second's worth banked */
	if (q->tokens > q->rate)
		q->tokens = q->rate;
	if (q->tokens < 1)
		return 0;
	return q->tokens < (double)cap ? (int32_t)q->tokens : cap;
}

void
rn_replquota_charge(struct rn_replquota *q, size_t bytes)
{
	if (q->rate > 0)
		q->tokens -= (double)bytes;
}
