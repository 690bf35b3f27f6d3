/*
 * DescribeProducers: the active producers of each asked partition, from
 * this broker's replica of it (leader or follower, as Kafka answers from
 * whichever local log it has; the admin client asks the leader unless
 * told a broker id). A consumer's right, READ on the topic, is what
 * Kafka asks for.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include "common/acl.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"
#include "workers/partition/idempotence.h"

static bool
local_replica(const struct net *n, const struct rn_mdv_partition *mp)
{
	if (mp->slot < 0)
		return false;
	for (int i = 0; i < mp->n_replicas; i++)
		if (mp->replicas[i] == n->cfg->node_id)
			return true;
	return false;
}

static int16_t
describe_partition(struct net *n, struct conn *c, const struct rn_mdv_topic *t,
    int32_t index,
    struct rn_DescribeProducersResponse_PartitionResponse *pr)
{
	struct rn_part_producer few[RN_IDEM_PRODUCERS], *got = few;
	const struct rn_mdv_partition *mp;
	struct rn_part *p;
	int16_t kerr = RN_KERR_NONE;
	int k;

	if (t == NULL || (mp = rn_mdview_partition(t, index)) == NULL)
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (rn_part_offline(&n->parts, t, mp))
		return RN_KERR_KAFKA_STORAGE_ERROR;
	if (!local_replica(n, mp))
		return RN_KERR_NOT_LEADER_OR_FOLLOWER;
	/* a replica that never had a log has no producers: none created */
	if (!net_part_exists(n, t, mp))
		return RN_KERR_NONE;
	if ((p = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) == NULL)
		return kerr;
	if ((k = rn_part_producers(p, got, RN_IDEM_PRODUCERS)) < 0)
		return RN_KERR_KAFKA_STORAGE_ERROR;
	/* more than a slot keeps inline (the node's pool bounds them):
	 * copied again into the request's arena, with room for newcomers */
	for (int cap = RN_IDEM_PRODUCERS; k > cap;) {
		cap = k + 64;
		if ((got = net_array(c, cap, sizeof(*got))) == NULL)
			return RN_KERR_UNKNOWN_SERVER_ERROR;
		if ((k = rn_part_producers(p, got, cap)) < 0)
			return RN_KERR_KAFKA_STORAGE_ERROR;
	}
	pr->active_producers = net_array(c, k, sizeof(*pr->active_producers));
	if (pr->active_producers == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	pr->active_producers_count = k;
	for (int i = 0; i < k; i++) {
		struct rn_DescribeProducersResponse_ProducerState *o =
		    &pr->active_producers[i];

		rn_DescribeProducersResponse_ProducerState_init(o);
		o->producer_id = got[i].producer_id;
		o->producer_epoch = got[i].epoch;
		o->last_sequence = got[i].last_sequence;
		o->last_timestamp = got[i].last_timestamp;
		o->coordinator_epoch = got[i].coordinator_epoch;
		o->current_txn_start_offset = got[i].txn_start_offset;
	}
	return RN_KERR_NONE;
}

int
net_describe_producers(struct net *n, struct conn *c)
{
	const struct rn_DescribeProducersRequest *req = c->req;
	struct rn_DescribeProducersResponse *r;

	r = rn_arena_alloc(&c->arena, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	rn_DescribeProducersResponse_init(r);
	r->topics_count = req->topics_count;
	r->topics = net_array(c, req->topics_count, sizeof(*r->topics));
	if (r->topics == NULL)
		return -ENOMEM;
	for (int i = 0; i < req->topics_count; i++) {
		const struct rn_DescribeProducersRequest_TopicRequest *rt =
		    &req->topics[i];
		struct rn_DescribeProducersResponse_TopicResponse *tr =
		    &r->topics[i];
		const struct rn_mdv_topic *t = net_topic(n, rt->name);
		bool allowed = !n->cfg->authorizer_on ||
		    net_authorized(n, c, RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
		    rt->name.ptr, rt->name.len > 0 ? (size_t)rt->name.len : 0);

		rn_DescribeProducersResponse_TopicResponse_init(tr);
		tr->name = rt->name;
		tr->partitions_count = rt->partition_indexes_count;
		tr->partitions = net_array(c, rt->partition_indexes_count,
		    sizeof(*tr->partitions));
		if (tr->partitions == NULL)
			return -ENOMEM;
		for (int j = 0; j < rt->partition_indexes_count; j++) {
			struct rn_DescribeProducersResponse_PartitionResponse
			    *pr = &tr->partitions[j];

			rn_DescribeProducersResponse_PartitionResponse_init(pr);
			pr->partition_index = rt->partition_indexes[j];
			pr->error_code = allowed ? describe_partition(n, c, t,
			    pr->partition_index, pr) :
			    RN_KERR_TOPIC_AUTHORIZATION_FAILED;
		}
	}
	return net_respond(n, c, r);
}
