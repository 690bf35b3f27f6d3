/*
 * The byte counts behind the client quotas (producer_byte_rate,
 * consumer_byte_rate), shared by every network worker so that a tenant
 * whose connections land on different workers is measured once. A fixed
 * table of entities, each a quota type and the metric tags Kafka would
 * give its sensor (user, client id), hashed; each holds Kafka's sampled
 * window: RN_CQ_SAMPLES samples of one second, each a 64-bit word of
 * (second << 40 | bytes) that any worker moves by CAS. An entry idle for
 * a minute may be taken by another entity.
 */
#ifndef RN_IPC_CQUOTA_H
#define RN_IPC_CQUOTA_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct rn_shm;
struct rn_shm_params;

#define RN_CQ_ENTITIES 1024
#define RN_CQ_SAMPLES 11          /* quota.window.num */
#define RN_CQ_WINDOW_MS 1000      /* quota.window.size.seconds */

struct rn_cq_entity {
	_Atomic uint64_t key;      /* 0: free */
	_Atomic int64_t used_s;    /* the last second it counted bytes */
	_Atomic uint64_t sample[RN_CQ_SAMPLES];
	uint64_t pad[3];
};

size_t rn_cquota_shm_size(const struct rn_shm_params *p);
/* The entry of key (taking a free or idle one), or NULL: the table is
 * full. */
struct rn_cq_entity *rn_cq_entity_get(const struct rn_shm *shm, uint64_t key,
    int64_t now_ms);
/* Count bytes now; the throttle time (ms) Kafka would give the entity
 * at quota bytes/s, capped at the whole window; 0: within it. */
int64_t rn_cq_record(struct rn_cq_entity *e, int64_t bytes, double quota,
    int64_t now_ms);

#endif /* RN_IPC_CQUOTA_H */
