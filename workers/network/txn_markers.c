/*
 * WriteTxnMarkers: the transaction coordinator (workers/coordinator/
 * txn_markers.c of whichever node coordinates the transactional id, or
 * any client with CLUSTER_ACTION) asks a partition leader to end a
 * producer's transaction. Each partition gets a control batch
 * (commit or abort) through the partition runtime, and the answer waits,
 * as an acks=all produce does, until the ISR holds the marker.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include "common/acl.h"
#include "common/log.h"
#include "common/util.h"
#include "protocol/group_records.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"

static int16_t
marker_partition(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_WriteTxnMarkersRequest_WritableTxnMarker *m,
    int32_t index, int64_t *need)
{
	const struct rn_mdv_partition *mp;
	struct rn_part *p;
	int16_t kerr = RN_KERR_NONE;
	int64_t offset = -1;

	if (t == NULL || (mp = rn_mdview_partition(t, index)) == NULL)
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (rn_part_offline(&n->parts, t, mp))
		return RN_KERR_KAFKA_STORAGE_ERROR;
	if (!net_leads(n, mp))
		return RN_KERR_NOT_LEADER_OR_FOLLOWER;
	if (mp->n_isr < net_min_isr(n, t))
		return RN_KERR_NOT_ENOUGH_REPLICAS;
	if ((p = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) == NULL)
		return kerr;
	kerr = rn_part_write_marker(p, m->producer_id, m->producer_epoch,
	    m->transaction_result, m->coordinator_epoch, mp->leader_epoch,
	    &offset);
	if (kerr == RN_KERR_KAFKA_STORAGE_ERROR && rn_part_stale(p) &&
	    (p = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) != NULL)
		kerr = rn_part_write_marker(p, m->producer_id,
		    m->producer_epoch, m->transaction_result,
		    m->coordinator_epoch, mp->leader_epoch, &offset);
	if (kerr != RN_KERR_NONE)
		return kerr;
	rn_part_advance_hw(p, mp, n->cfg->node_id);
	rn_part_wake_parked(p, n->net_efds, n->w->index);
	if (t->name_len == strlen(RN_OFFSETS_TOPIC) &&
	    memcmp(t->name, RN_OFFSETS_TOPIC, t->name_len) == 0)
		/* the group coordinator applies or drops the pending offsets */
		net_coord_txn_marker(n, index, m->producer_id,
		    m->transaction_result);
	*need = offset + 1;
	return RN_KERR_NONE;
}

int
net_write_txn_markers(struct net *n, struct conn *c)
{
	const struct rn_WriteTxnMarkersRequest *req = c->req;
	struct rn_WriteTxnMarkersResponse *r;
	bool allowed = !n->cfg->authorizer_on ||
	    net_authorized_cluster(n, c, RN_ACL_OP_CLUSTER_ACTION);
	int i, j, k, total = 0;

	for (i = 0; i < req->markers_count; i++)
		for (j = 0; j < req->markers[i].topics_count; j++)
			total += req->markers[i].topics[j].partition_indexes_count;
	c->pw = rn_arena_alloc(&c->arena, sizeof(*c->pw) *
	    (size_t)(total ? total : 1));
	c->n_pw = 0;
	r = rn_arena_alloc(&c->arena, sizeof(*r));
	if (c->pw == NULL || r == NULL)
		return -ENOMEM;
	rn_WriteTxnMarkersResponse_init(r);
	r->markers_count = req->markers_count;
	r->markers = net_array(c, req->markers_count, sizeof(*r->markers));
	if (r->markers == NULL)
		return -ENOMEM;
	for (i = 0; i < req->markers_count; i++) {
		const struct rn_WriteTxnMarkersRequest_WritableTxnMarker *m =
		    &req->markers[i];
		struct rn_WriteTxnMarkersResponse_WritableTxnMarkerResult *mr =
		    &r->markers[i];

		rn_WriteTxnMarkersResponse_WritableTxnMarkerResult_init(mr);
		mr->producer_id = m->producer_id;
		mr->topics_count = m->topics_count;
		mr->topics = net_array(c, m->topics_count, sizeof(*mr->topics));
		if (mr->topics == NULL)
			return -ENOMEM;
		for (j = 0; j < m->topics_count; j++) {
			const struct rn_WriteTxnMarkersRequest_WritableTxnMarkerTopic
			    *mt = &m->topics[j];
			struct rn_WriteTxnMarkersResponse_WritableTxnMarkerTopicResult
			    *tr = &mr->topics[j];
			const struct rn_mdv_topic *t = net_topic(n, mt->name);

			rn_WriteTxnMarkersResponse_WritableTxnMarkerTopicResult_init(tr);
			tr->name = mt->name;
			tr->partitions_count = mt->partition_indexes_count;
			tr->partitions = net_array(c, mt->partition_indexes_count,
			    sizeof(*tr->partitions));
			if (tr->partitions == NULL)
				return -ENOMEM;
			for (k = 0; k < mt->partition_indexes_count; k++) {
				struct rn_WriteTxnMarkersResponse_WritableTxnMarkerPartitionResult
				    *pr = &tr->partitions[k];
				int64_t need = -1;

				pr->partition_index = mt->partition_indexes[k];
				if (!allowed) {
					pr->error_code =
					    RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
					continue;
				}
				pr->error_code = marker_partition(n, t, m,
				    pr->partition_index, &need);
				if (pr->error_code == RN_KERR_NONE) {
					struct produce_wait *w =
					    &c->pw[c->n_pw++];

					w->error_code = &pr->error_code;
					w->partition = pr->partition_index;
					w->topic = &mt->name;
					memcpy(w->topic_id, t->id, 16);
					w->need = need;
					w->done = false;
				}
			}
		}
	}
	c->resp = r;
	if (c->n_pw > 0 && !net_acks_settled(n, c, false)) {
		/* Kafka's coordinator waits request.timeout.ms for them */
		net_conn_park(n, c, CONN_WAIT_ACKS, rn_now_ms() + 30000);
		return 0;
	}
	return net_respond(n, c, r);
}
