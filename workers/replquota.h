/*
 * Kafka's replication quotas: leader.replication.throttled.rate and
 * follower.replication.throttled.rate (broker configs, bytes/s, dynamic)
 * cap the bytes of the replicas a topic's *.replication.throttled.replicas
 * names, and only while the replica being fed is out of the ISR (a
 * reassignment's new replica catching up), as in Kafka. The follower's
 * fetcher keeps its own account (split among num.replica.fetchers); the
 * leader's network workers share one in the segment's header.
 *
 * The account is a theoretical arrival time (GCRA): sending b bytes
 * pushes it b / rate later; bytes may go while it is not ahead of now,
 * and at most one second's worth is banked.
 */
#ifndef RN_REPLQUOTA_H
#define RN_REPLQUOTA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "ipc/mdimage.h"

struct rn_replquota {
	bool leader;            /* which side's keys */
	const char *key;        /* the broker config giving the rate */
	double rate;            /* bytes/s; 0: unlimited */
	_Atomic int64_t *tat;   /* µs, CLOCK_MONOTONIC: own or shared */
	_Atomic int64_t own_tat;
	uint64_t version;       /* the view's, when the rate was read */
};

/* shared_tat NULL: a private account. */
void rn_replquota_init(struct rn_replquota *q, bool leader,
    _Atomic int64_t *shared_tat);
/* A private account for another rate: the broker config key (bytes/s,
 * dynamic), such as replica.alter.log.dirs.io.max.bytes.per.second. */
void rn_replquota_init_key(struct rn_replquota *q, const char *key);
/* Read the side's rate from the view (dynamic, else server.properties)
 * and keep 1/n_sharing of it; cheap when the view did not change. */
void rn_replquota_update(struct rn_replquota *q, const struct rn_mdview *v,
    const struct rn_config *cfg, int n_sharing);
/*
 * Does the quota cover the bytes of t's partition mp sent to replica?
 * listed is the broker the topic config must name with the partition:
 * the leader (leader side) or the follower itself (follower side).
 */
bool rn_replquota_applies(const struct rn_replquota *q,
    const struct rn_mdv_topic *t, const struct rn_mdv_partition *mp,
    int32_t listed, int32_t replica);
/* The throttled bytes one fetch may carry now: 0 when over the quota,
 * else at most cap. */
int32_t rn_replquota_allowance(struct rn_replquota *q, int32_t cap);
void rn_replquota_charge(struct rn_replquota *q, size_t bytes);

#endif /* RN_REPLQUOTA_H */
