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

#include "common/acl.h"
#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"
#include "workers/partition/idempotence.h"

int32_t
net_min_isr(struct net *n, const struct rn_mdv_topic *t)
{
	return (int32_t)rn_part_config_int(&n->view, t, n->cfg,
	    "min.insync.replicas", n->cfg->min_insync_replicas);
}

static int16_t
produce_partition(struct net *n, const struct rn_mdv_topic *t,
    struct rn_ProduceRequest_PartitionProduceData *pd, int16_t acks,
    struct rn_ProduceResponse_PartitionProduceResponse *out, int64_t *need,
    int64_t guard)
{
	const struct rn_mdv_partition *mp;
	struct rn_append_info info;
	struct rn_batch_header h;
	struct rn_part *p;
	int16_t kerr = RN_KERR_NONE;
	int64_t dup;
	int rc;

	out->index = pd->index;
	out->base_offset = -1;
	if (t == NULL || (mp = rn_mdview_partition(t, pd->index)) == NULL)
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (rn_part_offline(&n->parts, t, mp))
		return RN_KERR_KAFKA_STORAGE_ERROR;
	if (!net_leads(n, mp))
		return RN_KERR_NOT_LEADER_OR_FOLLOWER;
	if (pd->records.len <= 0)
		return RN_KERR_CORRUPT_MESSAGE;
	if (acks == -1 && mp->n_isr < net_min_isr(n, t))
		return RN_KERR_NOT_ENOUGH_REPLICAS;
	if ((p = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) == NULL)
		return kerr;

	if (pd->records.len < RN_BATCH_HEADER_SIZE)
		return RN_KERR_CORRUPT_MESSAGE;
	if (net_policy_compact(n, t) && (rc = net_keyless_record(
	    (const uint8_t *)pd->records.ptr, (size_t)pd->records.len)) != 0) {
		if (rc < 0)
			return RN_KERR_CORRUPT_MESSAGE;
		out->error_message = rn_kstr_c("a compacted topic takes only "
		    "records with a key");
		return RN_KERR_INVALID_RECORD;
	}
	rn_batch_parse_header(pd->records.ptr, &h);
	/* the records slice points into our own read buffer: writable */
	kerr = rn_part_append_verified(p, (void *)pd->records.ptr,
	    (size_t)pd->records.len, &h, mp->leader_epoch, &info, &dup, guard);
	if (kerr == RN_KERR_KAFKA_STORAGE_ERROR && rn_part_stale(p) &&
	    (p = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) != NULL)
		/* the log moved to another dir under it: once more there */
		kerr = rn_part_append_verified(p, (void *)pd->records.ptr,
		    (size_t)pd->records.len, &h, mp->leader_epoch, &info,
		    &dup, guard);
	if (kerr == RN_KERR_INVALID_TXN_STATE && guard != RN_PART_NO_GUARD)
		out->error_message = rn_kstr_c("the transaction ended while "
		    "the write was being verified");
	if (kerr != RN_KERR_NONE)
		return kerr;
	if (dup >= 0) {
		/* a retry of what is already written: answer as the first time */
		out->base_offset = dup;
		out->log_start_offset = rn_log_start_offset(p->log);
		*need = dup + h.last_offset_delta + 1;
		return RN_KERR_NONE;
	}
	net_count_in(n, p, info.record_count, pd->records.len);
	/* with the leader alone in the ISR this commits at once */
	rn_part_advance_hw(p, mp, n->cfg->node_id);
	/* followers and consumers parked on this partition look again */
	rn_part_wake_parked(p, n->net_efds, n->w->index);
	*need = info.last_offset + 1;
	out->base_offset = info.base_offset;
	out->log_append_time_ms = info.log_append_time;
	out->log_start_offset = rn_log_start_offset(p->log);
	return RN_KERR_NONE;
}

static int
produce_respond(struct net *n, struct conn *c)
{

	return net_respond(n, c, c->resp);
}

/*
 * acks=all: each appended partition is settled when the high watermark
 * passes it (success), when the ISR falls below min.insync.replicas
 * (NOT_ENOUGH_REPLICAS_AFTER_APPEND), when leadership moves away, or when
 * the request's timeout ends (REQUEST_TIMED_OUT). Never a success early.
 */
bool
net_acks_settled(struct net *n, struct conn *c, bool timed_out)
{
	bool all = true;
	int i;

	for (i = 0; i < c->n_pw; i++) {
		struct produce_wait *w = &c->pw[i];
		const struct rn_mdv_topic *t;
		const struct rn_mdv_partition *mp;
		struct rn_part *p;
		int16_t kerr;

		if (w->done)
			continue;
		t = rn_mdview_topic(&n->view, w->topic->ptr,
		    (size_t)w->topic->len);
		/* a topic of the same name created since is another one */
		if (t != NULL && memcmp(t->id, w->topic_id, 16) != 0)
			t = NULL;
		mp = t ? rn_mdview_partition(t, w->partition) : NULL;
		/* the slot answers: no log is reopened on each wake-up */
		if (mp == NULL || !net_leads(n, mp) ||
		    (p = rn_part_led(&n->parts, &n->view, t, mp, &kerr)) == NULL) {
			*w->error_code = RN_KERR_NOT_LEADER_OR_FOLLOWER;
			w->done = true;
			continue;
		}
		/*
		 * The ISR may have shrunk since: what does it allow now? Like
		 * Kafka, a write the high watermark passed while the ISR is
		 * below min.insync.replicas is NOT_ENOUGH_REPLICAS_AFTER_APPEND.
		 */
		/* consumers parked on it are told (their slot marked) */
		if (rn_part_advance_hw(p, mp, n->cfg->node_id))
			rn_part_wake_parked(p, n->net_efds, n->w->index);
		if (rn_part_hw(p) >= w->need) {
			if (mp->n_isr < net_min_isr(n, t))
				*w->error_code =
				    RN_KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND;
			w->done = true;
			continue;
		}
		if (timed_out) {
			*w->error_code = RN_KERR_REQUEST_TIMED_OUT;
			w->done = true;
			continue;
		}
		/* be woken when the high watermark moves */
		rn_part_park(p, n->w->index);
		if (rn_part_hw(p) >= w->need) {
			i--; /* it moved meanwhile: settle this one now */
			continue;
		}
		all = false;
	}
	return all;
}

/* One partition's data; an acks=all success waits for the ISR. */
static void
produce_one(struct net *n, struct conn *c,
    struct rn_ProduceRequest_TopicProduceData *td,
    const struct rn_mdv_topic *t,
    struct rn_ProduceRequest_PartitionProduceData *pd,
    struct rn_ProduceResponse_PartitionProduceResponse *pr, bool allowed,
    int k)
{
	const struct rn_ProduceRequest *req = c->req;
	int64_t need = -1;
	bool verify = k < c->n_verify;

	rn_ProduceResponse_PartitionProduceResponse_init(pr);
	if (!allowed) {
		pr->index = pd->index;
		pr->error_code = RN_KERR_TOPIC_AUTHORIZATION_FAILED;
	} else if (req->transactional_id.len >= 0 && !net_authorized(n, c,
	    RN_ACL_OP_WRITE, RN_ACL_RES_TRANSACTIONAL_ID,
	    req->transactional_id.ptr, (size_t)req->transactional_id.len))
		pr->error_code = RN_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	else if (req->acks != 0 && req->acks != 1 && req->acks != -1)
		pr->error_code = RN_KERR_INVALID_REQUIRED_ACKS;
	else if (verify && c->verr[k] != RN_KERR_NONE) {
		/* its coordinator did not vouch for it (txn_verify.c) */
		pr->base_offset = -1;
		pr->error_code = net_verify_produce_error(c->verr[k],
		    &pr->error_message);
	} else {
		pr->error_code = produce_partition(n, t, pd, req->acks, pr,
		    &need, verify ? c->vguard[k] : RN_PART_NO_GUARD);
		if (pr->error_code == RN_KERR_NONE && req->acks == -1) {
			struct produce_wait *w = &c->pw[c->n_pw++];

			w->error_code = &pr->error_code;
			w->partition = pd->index;
			w->topic = &td->name;
			memcpy(w->topic_id, t->id, 16);
			w->need = need;
			w->done = false;
		}
	}
	pr->index = pd->index;
}

int
net_produce(struct net *n, struct conn *c)
{
	struct rn_ProduceRequest *req = c->req;
	struct rn_ProduceResponse r;
	bool failed = false;
	int i, j, k = 0, total = 0;

	/* transactional writes its coordinator must vouch for first */
	if (!c->verified && net_produce_verify_start(n, c))
		return 0;
	c->verified = false;
	rn_ProduceResponse_init(&r);
	r.throttle_time_ms = net_quota_record(n, c, RN_CQ_PRODUCE,
	    (int64_t)c->frame_len + 4);
	for (i = 0; i < req->topic_data_count; i++)
		total += req->topic_data[i].partition_data_count;
	c->pw = rn_arena_alloc(&c->arena, sizeof(*c->pw) *
	    (size_t)(total ? total : 1));
	c->n_pw = 0;
	if (c->pw == NULL)
		return -ENOMEM;
	r.responses_count = req->topic_data_count;
	r.responses = net_array(c, req->topic_data_count, sizeof(*r.responses));
	if (r.responses == NULL)
		return -ENOMEM;
	for (i = 0; i < req->topic_data_count; i++) {
		struct rn_ProduceRequest_TopicProduceData *td = &req->topic_data[i];
		struct rn_ProduceResponse_TopicProduceResponse *tr = &r.responses[i];
		const struct rn_mdv_topic *t = net_topic(n, td->name);
		/* before existence: an unauthorized name reveals nothing */
		bool allowed = net_authorized(n, c, RN_ACL_OP_WRITE,
		    RN_ACL_RES_TOPIC, td->name.ptr, td->name.len > 0 ?
		    (size_t)td->name.len : 0);

		rn_ProduceResponse_TopicProduceResponse_init(tr);
		tr->name = td->name;
		tr->partition_responses_count = td->partition_data_count;
		tr->partition_responses = net_array(c, td->partition_data_count, sizeof(*tr->partition_responses));
		if (tr->partition_responses == NULL)
			return -ENOMEM;
		for (j = 0; j < td->partition_data_count; j++) {
			struct rn_ProduceResponse_PartitionProduceResponse *pr =
			    &tr->partition_responses[j];

			produce_one(n, c, td, t, &td->partition_data[j], pr,
			    allowed, k++);
			if (pr->error_code != RN_KERR_NONE)
				failed = true;
		}
	}
	if (req->acks == 0) {
		/* no response; an error closes the connection instead */
		return failed ? -EPROTO : 0;
	}
	c->resp = rn_arena_alloc(&c->arena, sizeof(r));
	if (c->resp == NULL)
		return -ENOMEM;
	memcpy(c->resp, &r, sizeof(r));
	if (c->n_pw > 0 && !net_acks_settled(n, c, false)) {
		net_conn_park(n, c, CONN_WAIT_ACKS, rn_now_ms() +
		    (req->timeout_ms > 0 ? req->timeout_ms : 0));
		return 0;
	}
	return produce_respond(n, c);
}

void
net_produce_recheck(struct net *n, struct conn *c, bool timed_out)
{
	if (!net_acks_settled(n, c, timed_out))
		return;
	net_stage(n, RN_STAGE_ACKS, rn_now_us() - c->park_us);
	if (produce_respond(n, c) != 0) {
		log_warnx("Produce v%d from %s: cannot answer an acks=all "
		    "produce: closing", c->hdr.api_version, c->peer);
		c->closing = true;
	}
	net_conn_request_done(n, c);
}

/*
 * Producer ids for idempotent producers here; a transactional id's goes
 * to the transaction coordinator (the coordinator worker), which takes
 * its ids from the same counter.
 */
int
net_init_producer_id(struct net *n, struct conn *c)
{
	const struct rn_InitProducerIdRequest *req = c->req;
	struct rn_InitProducerIdResponse r;

	rn_InitProducerIdResponse_init(&r);
	if (req->transactional_id.len >= 0) {
		if (net_authorized(n, c, RN_ACL_OP_WRITE,
		    RN_ACL_RES_TRANSACTIONAL_ID, req->transactional_id.ptr,
		    (size_t)req->transactional_id.len))
			return net_group_forward(n, c);
		r.error_code = RN_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	} else if (!net_authorized_write_somewhere(n, c)) {
		r.error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
	} else if (req->producer_id >= 0) {
		/* a producer bumping its epoch after an error keeps its id */
		r.producer_id = req->producer_id;
		r.producer_epoch = (int16_t)(req->producer_epoch + 1);
	} else {
		r.producer_id = rn_idem_new_producer_id(
		    &n->w->env->shm->hdr->producer_id_counter, n->cfg->node_id);
		r.producer_epoch = 0;
	}
	return net_respond(n, c, &r);
}
