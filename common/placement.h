/*
 * Replica placement without racks: partition leaders go round-robin over
 * the brokers from a start index, and followers sit at a distance from the
 * leader that grows by one every time the leaders wrap around the broker
 * list, so replicas spread instead of repeating the same pairs (the
 * placement Kafka's AdminUtils calls rack-unaware).
 */
#ifndef RN_PLACEMENT_H
#define RN_PLACEMENT_H

#include <stdint.h>

/*
 * Fill out[i * rf + j] with replica j of partition start_partition + i,
 * for i in [0, n_parts). brokers: the candidate ids in the order to use
 * (callers sort them). start_index and shift are in [0, n_brokers): the
 * caller draws them at random, tests fix them. Returns 0, or -EINVAL when
 * rf < 1, rf > n_brokers or n_parts < 0.
 */
int rn_assign_rack_unaware(const int32_t *brokers, int n_brokers,
    int n_parts, int rf, int start_index, int shift, int start_partition,
    int32_t *out);

/*
 * With racks (Kafka's rack-aware placement): the brokers are first
 * arranged by alternating racks (racks sorted by name, brokers in each
 * rack in the given order), leaders go round-robin over that list, and
 * each follower is the next candidate (from the same spreading formula,
 * the shift scaled by the number of racks) whose rack holds no replica
 * of the partition yet — unless every rack already does — and which is
 * not already a replica — unless every broker already is.
 * racks[i] is broker i's rack (non-empty). Same contract as above.
 */
int rn_assign_rack_aware(const int32_t *brokers, const char *const *racks,
    int n_brokers, int n_parts, int rf, int start_index, int shift,
    int start_partition, int32_t *out);

/* The rack-alternated broker order (out has n_brokers entries). */
int rn_assign_rack_order(const int32_t *brokers, const char *const *racks,
    int n_brokers, int32_t *out);

#endif /* RN_PLACEMENT_H */
