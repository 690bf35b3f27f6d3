/* Replication quotas: see replquota.h. */
#include "autoconf.h"

#include <stdlib.h>
#include <string.h>

#include "common/kconfig_catalogue.h"
#include "common/util.h"
#include "workers/replquota.h"

#define BURST_US 1000000

static int64_t
now_us(void)
{
	return rn_now_ns() / 1000;
}

void
rn_replquota_init(struct rn_replquota *q, bool leader,
    _Atomic int64_t *shared_tat)
{
	memset(q, 0, sizeof(*q));
	q->leader = leader;
	atomic_store(&q->own_tat, now_us());
	q->tat = shared_tat != NULL ? shared_tat : &q->own_tat;
	q->key = leader ? "leader.replication.throttled.rate" :
	    "follower.replication.throttled.rate";
}

void
rn_replquota_init_key(struct rn_replquota *q, const char *key)
{
	rn_replquota_init(q, false, NULL);
	q->key = key;
}

void
rn_replquota_update(struct rn_replquota *q, const struct rn_mdview *v,
    const struct rn_config *cfg, int n_sharing)
{
	const char *key = q->key;
	enum rn_config_source src;
	const char *val = NULL;
	char buf[64];
	double rate = 0;

	/* a broker config: only a whole image changes it */
	if (v->body_version == q->version && q->version != 0)
		return;
	q->version = v->body_version;
	if (rn_mdview_broker_config(v, cfg, key, &val, &src, buf,
	    sizeof(buf)) == 0 && val != NULL)
		rate = strtod(val, NULL);
	/* Long.MAX_VALUE, Kafka's default, means none */
	if (rate <= 0 || rate >= 9e18)
		rate = 0;
	else if (n_sharing > 1)
		rate /= n_sharing;
	/* a new rate starts with nothing banked */
	if (rate != q->rate)
		atomic_store(q->tat, now_us());
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
	int64_t now = now_us(), tat = atomic_load(q->tat);
	double avail;

	if (q->rate <= 0)
		return cap;
	if (tat < now - BURST_US)
		tat = now - BURST_US;
	avail = (double)(now - tat) * q->rate / 1e6;
	if (avail < 1)
		return 0;
	return avail < (double)cap ? (int32_t)avail : cap;
}

void
rn_replquota_charge(struct rn_replquota *q, size_t bytes)
{
	int64_t now = now_us(), tat, base;

	if (q->rate <= 0 || bytes == 0)
		return;
	tat = atomic_load(q->tat);
	do {
		base = tat < now - BURST_US ? now - BURST_US : tat;
	} while (!atomic_compare_exchange_weak(q->tat, &tat, base +
	    (int64_t)((double)bytes * 1e6 / q->rate)));
}
