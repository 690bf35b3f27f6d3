/*
 * The requests runnel-transactions sends, over tool_kclient: Metadata (the
 * brokers, and each partition's leader and replicas), DescribeProducers to
 * one broker, WriteTxnMarkers (an abort) to a partition's leader,
 * ListTransactions to one broker, and a transactional id's coordinator
 * (FindCoordinator key_type 1) asked for DescribeTransactions.
 */
#include "autoconf.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "protocol/kerrors.h"
#include "tools/tool_kclient.h"
#include "tools/txn_client.h"

int
txc_metadata(const char *bootstrap, int timeout_ms, struct rn_arena *ar,
    struct rn_MetadataResponse *md, char *err, size_t errlen)
{
	struct rn_MetadataRequest req;
	int fd, rc;

	if ((fd = tkc_connect(bootstrap, timeout_ms, err, errlen)) < 0)
		return -1;
	rn_MetadataRequest_init(&req);
	req.topics_count = -1;	/* all of them */
	rc = tkc_call_api(fd, RN_KAPI_METADATA, 1, &req, ar, md, timeout_ms,
	    err, errlen);
	close(fd);
	return rc;
}

const struct rn_MetadataResponse_MetadataResponseTopic *
txc_topic(const struct rn_MetadataResponse *md, const char *name)
{
	for (int i = 0; i < md->topics_count; i++)
		if ((size_t)md->topics[i].name.len == strlen(name) &&
		    memcmp(md->topics[i].name.ptr, name, strlen(name)) == 0)
			return &md->topics[i];
	return NULL;
}

const struct rn_MetadataResponse_MetadataResponsePartition *
txc_partition(const struct rn_MetadataResponse_MetadataResponseTopic *t,
    int32_t p)
{
	for (int i = 0; t != NULL && i < t->partitions_count; i++)
		if (t->partitions[i].partition_index == p)
			return &t->partitions[i];
	return NULL;
}

static int
connect_to(const struct rn_MetadataResponse *md, int32_t broker,
    int timeout_ms, char *err, size_t errlen)
{
	char addr[300];

	for (int i = 0; i < md->brokers_count; i++) {
		const struct rn_MetadataResponse_MetadataResponseBroker *b =
		    &md->brokers[i];

		if (b->node_id != broker)
			continue;
		snprintf(addr, sizeof(addr), "%.*s:%d", (int)b->host.len,
		    b->host.ptr, b->port);
		return tkc_connect(addr, timeout_ms, err, errlen);
	}
	snprintf(err, errlen, "broker %d is not in the cluster's metadata",
	    broker);
	return -1;
}

int
txc_call_broker(const struct rn_MetadataResponse *md, int32_t broker,
    int16_t key, int16_t ver, const void *req, int timeout_ms,
    struct rn_arena *ar, void *resp, char *err, size_t errlen)
{
	int fd, rc;

	if ((fd = connect_to(md, broker, timeout_ms, err, errlen)) < 0)
		return -1;
	rc = tkc_call_api(fd, key, ver, req, ar, resp, timeout_ms, err,
	    errlen);
	close(fd);
	return rc;
}

int
txc_describe_producers(const struct rn_MetadataResponse *md, int32_t broker,
    const struct rn_DescribeProducersRequest *req, int timeout_ms,
    struct rn_arena *ar, struct rn_DescribeProducersResponse *resp,
    char *err, size_t errlen)
{
	return txc_call_broker(md, broker, RN_KAPI_DESCRIBE_PRODUCERS, 0, req,
	    timeout_ms, ar, resp, err, errlen);
}

int
txc_describe_txn(const char *bootstrap, const char *id, int timeout_ms,
    struct rn_arena *ar, int32_t *coordinator,
    struct rn_DescribeTransactionsResponse *resp, char *err, size_t errlen)
{
	struct rn_FindCoordinatorRequest fc;
	struct rn_FindCoordinatorResponse fr;
	struct rn_DescribeTransactionsRequest dr;
	struct rn_kstr ids[1] = { { id, (int32_t)strlen(id) } };
	char addr[300];
	int fd, rc;

	if ((fd = tkc_connect(bootstrap, timeout_ms, err, errlen)) < 0)
		return -1;
	rn_FindCoordinatorRequest_init(&fc);
	fc.key = ids[0];
	fc.key_type = 1;	/* a transactional id */
	rc = tkc_call_api(fd, RN_KAPI_FIND_COORDINATOR, 1, &fc, ar, &fr,
	    timeout_ms, err, errlen);
	close(fd);
	if (rc != 0)
		return -1;
	if (fr.error_code != 0)
		return fr.error_code;
	*coordinator = fr.node_id;
	snprintf(addr, sizeof(addr), "%.*s:%d", (int)fr.host.len, fr.host.ptr,
	    fr.port);
	if ((fd = tkc_connect(addr, timeout_ms, err, errlen)) < 0)
		return -1;
	rn_DescribeTransactionsRequest_init(&dr);
	dr.transactional_ids = ids;
	dr.transactional_ids_count = 1;
	rc = tkc_call_api(fd, RN_KAPI_DESCRIBE_TRANSACTIONS, 0, &dr, ar, resp,
	    timeout_ms, err, errlen);
	close(fd);
	if (rc != 0)
		return -1;
	if (resp->transaction_states_count != 1) {
		snprintf(err, errlen, "DescribeTransactions: the coordinator's "
		    "answer does not name %s", id);
		return -1;
	}
	return resp->transaction_states[0].error_code;
}

int16_t
txc_abort(const struct rn_MetadataResponse *md, int32_t leader,
    const char *topic, int32_t partition, int64_t pid, int16_t epoch,
    int32_t coordinator_epoch, int timeout_ms, struct rn_arena *ar,
    char *err, size_t errlen)
{
	struct rn_WriteTxnMarkersRequest_WritableTxnMarkerTopic mt;
	struct rn_WriteTxnMarkersRequest_WritableTxnMarker m;
	struct rn_WriteTxnMarkersRequest req;
	struct rn_WriteTxnMarkersResponse resp;
	int32_t parts[1] = { partition };
	int fd, rc;

	if ((fd = connect_to(md, leader, timeout_ms, err, errlen)) < 0)
		return -1;
	rn_WriteTxnMarkersRequest_init(&req);
	rn_WriteTxnMarkersRequest_WritableTxnMarker_init(&m);
	rn_WriteTxnMarkersRequest_WritableTxnMarkerTopic_init(&mt);
	mt.name.ptr = topic;
	mt.name.len = (int32_t)strlen(topic);
	mt.partition_indexes = parts;
	mt.partition_indexes_count = 1;
	m.producer_id = pid;
	m.producer_epoch = epoch;
	m.transaction_result = false;	/* abort */
	m.coordinator_epoch = coordinator_epoch;
	m.topics = &mt;
	m.topics_count = 1;
	req.markers = &m;
	req.markers_count = 1;
	rc = tkc_call_api(fd, RN_KAPI_WRITE_TXN_MARKERS, 1, &req, ar, &resp,
	    timeout_ms, err, errlen);
	close(fd);
	if (rc != 0)
		return -1;
	if (resp.markers_count != 1 || resp.markers[0].topics_count != 1 ||
	    resp.markers[0].topics[0].partitions_count != 1) {
		snprintf(err, errlen, "WriteTxnMarkers: the broker's answer "
		    "does not name the partition");
		return -1;
	}
	return resp.markers[0].topics[0].partitions[0].error_code;
}
