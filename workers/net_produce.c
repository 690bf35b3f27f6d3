/*
 * Produce: validate and append each partition's batches under the
 * partition's lock, straight from the request buffer (offsets are assigned
 * in place, nothing is copied before the one write). acks=0 gets no
 * response, as in Kafka; an error then closes the connection so the
 * producer notices.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/net.h"

static int16_t
produce_partition(struct net *n, const struct rn_mdv_topic *t,
    struct rn_ProduceRequest_PartitionProduceData *pd, int16_t acks,
    struct rn_ProduceResponse_PartitionProduceResponse *out)
{
	const struct rn_mdv_partition *mp;
	struct rn_append_info info;
	struct rn_part *p;
	int16_t kerr = RN_KERR_NONE;
	int rc;

	out->index = pd->index;
	out->base_offset = -1;
	if (t == NULL || (mp = rn_mdview_partition(t, pd->index)) == NULL)
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (mp->leader != n->cfg->node_id)
		return RN_KERR_NOT_LEADER_OR_FOLLOWER;
	if (pd->records.len <= 0)
		return RN_KERR_CORRUPT_MESSAGE;
	if (acks == -1 && mp->n_isr < rn_part_config_int(&n->view, t, n->cfg,
	    "min.insync.replicas", n->cfg->min_insync_replicas))
		return RN_KERR_NOT_ENOUGH_REPLICAS;
	if ((p = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) == NULL)
		return kerr;

	if ((rc = rn_part_lock(p)) != 0)
		return RN_KERR_KAFKA_STORAGE_ERROR;
	/* the records slice points into our own read buffer: writable */
	rc = rn_log_append(p->log, (void *)pd->records.ptr,
	    (size_t)pd->records.len, mp->leader_epoch, rn_wallclock_ms(), &info);
	if (rc == 0 && mp->n_isr == 1 && mp->isr[0] == n->cfg->node_id) {
		/* the only in-sync replica is this one: committed at once */
		atomic_store(&p->rt->high_watermark, rn_log_end_offset(p->log));
	}
	rn_part_unlock(p);
	if (rc != 0)
		return net_storage_kerr(rc);
	rn_part_wake_fetchers(p, n->fetch_efds, n->w->index);
	out->base_offset = info.base_offset;
	out->log_append_time_ms = info.log_append_time;
	out->log_start_offset = rn_log_start_offset(p->log);
	return RN_KERR_NONE;
}

int
net_produce(struct net *n, struct conn *c)
{
	struct rn_ProduceRequest *req = c->req;
	struct rn_ProduceResponse r;
	struct net_out *o;
	bool failed = false;
	size_t mark;
	int i, j;

	if (req->transactional_id.len >= 0) {
		/* no transactions: say so rather than append half-way */
		log_warnx("%s: transactional produce refused", c->peer);
	}
	rn_ProduceResponse_init(&r);
	r.responses_count = req->topic_data_count;
	r.responses = rn_arena_alloc(&c->arena, sizeof(*r.responses) *
	    (size_t)(req->topic_data_count > 0 ? req->topic_data_count : 1));
	if (r.responses == NULL)
		return -ENOMEM;
	for (i = 0; i < req->topic_data_count; i++) {
		struct rn_ProduceRequest_TopicProduceData *td = &req->topic_data[i];
		struct rn_ProduceResponse_TopicProduceResponse *tr = &r.responses[i];
		const struct rn_mdv_topic *t = rn_mdview_topic(&n->view,
		    td->name.ptr, (size_t)(td->name.len > 0 ? td->name.len : 0));

		rn_ProduceResponse_TopicProduceResponse_init(tr);
		tr->name = td->name;
		tr->partition_responses_count = td->partition_data_count;
		tr->partition_responses = rn_arena_alloc(&c->arena,
		    sizeof(*tr->partition_responses) *
		    (size_t)(td->partition_data_count > 0 ? td->partition_data_count : 1));
		if (tr->partition_responses == NULL)
			return -ENOMEM;
		for (j = 0; j < td->partition_data_count; j++) {
			struct rn_ProduceResponse_PartitionProduceResponse *pr =
			    &tr->partition_responses[j];

			rn_ProduceResponse_PartitionProduceResponse_init(pr);
			if (req->transactional_id.len >= 0)
				pr->error_code =
				    RN_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
			else if (req->acks != 0 && req->acks != 1 &&
			    req->acks != -1)
				pr->error_code = RN_KERR_INVALID_REQUIRED_ACKS;
			else
				pr->error_code = produce_partition(n, t,
				    &td->partition_data[j], req->acks, pr);
			pr->index = td->partition_data[j].index;
			if (pr->error_code != RN_KERR_NONE)
				failed = true;
		}
	}
	if (req->acks == 0) {
		/* no response; an error closes the connection instead */
		return failed ? -EPROTO : 0;
	}
	if ((o = net_out_begin(c, &mark)) == NULL)
		return -ENOMEM;
	rn_ProduceResponse_encode(&o->w, c->hdr.api_version, &r);
	net_out_finish(n, c, o, mark);
	return 0;
}
