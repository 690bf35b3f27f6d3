/*
 * runnel-transactions' requests over tool_kclient (plain text): the
 * cluster's metadata, DescribeProducers or ListTransactions to one broker,
 * an abort marker (WriteTxnMarkers) written by a partition's leader, and
 * DescribeTransactions at a transactional id's coordinator.
 */
#ifndef RN_TXN_CLIENT_H
#define RN_TXN_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kmsg_gen.h"

/* Metadata v1 of every topic (in ar). 0, or -1 with err filled. */
int txc_metadata(const char *bootstrap, int timeout_ms, struct rn_arena *ar,
    struct rn_MetadataResponse *md, char *err, size_t errlen);
const struct rn_MetadataResponse_MetadataResponseTopic *txc_topic(
    const struct rn_MetadataResponse *md, const char *name);
const struct rn_MetadataResponse_MetadataResponsePartition *txc_partition(
    const struct rn_MetadataResponse_MetadataResponseTopic *t, int32_t p);

/* Request (key, ver) to broker, its answer decoded into resp (in ar).
 * 0, or -1 with err filled. */
int txc_call_broker(const struct rn_MetadataResponse *md, int32_t broker,
    int16_t key, int16_t ver, const void *req, int timeout_ms,
    struct rn_arena *ar, void *resp, char *err, size_t errlen);

/* DescribeProducers v0 to broker (in ar). 0, or -1 with err filled. */
int txc_describe_producers(const struct rn_MetadataResponse *md,
    int32_t broker, const struct rn_DescribeProducersRequest *req,
    int timeout_ms, struct rn_arena *ar,
    struct rn_DescribeProducersResponse *resp, char *err, size_t errlen);

/* An abort marker for (pid, epoch) on topic-partition, written by its
 * leader: the partition's Kafka error code, or -1 with err filled. */
int16_t txc_abort(const struct rn_MetadataResponse *md, int32_t leader,
    const char *topic, int32_t partition, int64_t pid, int16_t epoch,
    int32_t coordinator_epoch, int timeout_ms, struct rn_arena *ar,
    char *err, size_t errlen);

/*
 * The transaction of id at its coordinator: FindCoordinator (key_type 1)
 * through bootstrap, then DescribeTransactions to the node it names
 * (*coordinator). 0 with resp holding the one state; a Kafka error code
 * (of either step) to retry or report; -1 with err filled.
 */
int txc_describe_txn(const char *bootstrap, const char *id, int timeout_ms,
    struct rn_arena *ar, int32_t *coordinator,
    struct rn_DescribeTransactionsResponse *resp, char *err, size_t errlen);

#endif /* RN_TXN_CLIENT_H */
