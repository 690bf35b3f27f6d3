/*
 * runnel-transactions' verbs that ask the transaction coordinators: list
 * (ListTransactions to every broker), describe (DescribeTransactions at a
 * transactional id's coordinator) and find-hanging's cross-check of the
 * open transactions DescribeProducers found.
 */
#ifndef RN_TXN_COORD_VERBS_H
#define RN_TXN_COORD_VERBS_H

#include <stdbool.h>
#include <stdint.h>

#include "protocol/kmsg_gen.h"

/* An open transaction a partition's producer table shows. */
struct txv_open {
	const char *topic;
	int32_t partition;
	struct rn_DescribeProducersResponse_ProducerState s;
	bool hanging;		/* set by txv_cross_check */
};

/* `list`: every broker's transactions (those running longer than
 * duration_ms if >= 0), Kafka's columns. The tool's exit status. */
int txv_list(const struct rn_MetadataResponse *md, int64_t duration_ms,
    struct rn_arena *ar);

/* `describe --transactional-id id`: its state at its coordinator, Kafka's
 * columns. The tool's exit status. */
int txv_describe(const char *bootstrap, const char *id, struct rn_arena *ar);

/*
 * find-hanging's second step, as Kafka's tool: the transactional ids of
 * the candidates' producers (ListTransactions filtered by producer id, to
 * every broker), each described at its coordinator; a candidate hangs
 * when no id is found for its producer, the coordinator does not know the
 * id, or the coordinator's transaction of that producer does not hold its
 * partition any more. 0, or -1 after saying why.
 */
int txv_cross_check(const char *bootstrap,
    const struct rn_MetadataResponse *md, struct txv_open *c, int n,
    struct rn_arena *ar);

#endif /* RN_TXN_COORD_VERBS_H */
