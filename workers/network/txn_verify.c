/*
 * KIP-890 part 1 at the partition leader: a transactional batch for a
 * partition where its producer has no transaction open is verified with
 * the transactional id's coordinator before it is appended, so a late or
 * stray write cannot open a transaction nobody will end (a hanging one).
 * The produce is parked while this node's coordinator worker answers over
 * the ring (itself, or from the coordinating node with AddPartitionsToTxn
 * v4 VerifyOnly); then it is handled again with each partition's verdict.
 * Once the first batch is appended the producer table shows the open
 * transaction, and later batches of it need no round trip.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"

/* Produces parked for a verification, a worker: past it they are told to
 * retry (NOT_ENOUGH_REPLICAS) rather than queue without bound. */
#define VERIFY_MAX_PARKED 1024
/* The longest a verification may take (Kafka's inter-broker request
 * timeout); a produce's own shorter timeout ends it sooner. */
#define VERIFY_TIMEOUT_MS 30000

static bool
verification_enabled(struct net *n)
{
	enum rn_config_source src;
	const char *value = NULL;
	char buf[16];

	if (rn_mdview_broker_config(&n->view, n->cfg,
	    "transaction.partition.verification.enable", &value, &src, buf,
	    sizeof(buf)) != 0 || value == NULL)
		return true;
	return strcasecmp(value, "false") != 0;
}

static int
parked_verifications(const struct net *n)
{
	const struct conn *c;
	int k = 0;

	for (c = n->parked; c != NULL; c = c->next_parked)
		if (c->wait == CONN_WAIT_VERIFY)
			k++;
	return k;
}

/*
 * The verdict as the producer gets it (Produce v3-9 are all "old"
 * versions to Kafka): a retriable coordinator trouble becomes
 * NOT_ENOUGH_REPLICAS, which clients retry without a metadata refresh.
 */
int16_t
net_verify_produce_error(int16_t err, struct rn_kstr *msg)
{
	switch (err) {
	case RN_KERR_NONE:
		return err;
	case RN_KERR_INVALID_TXN_STATE:
	case RN_KERR_TRANSACTION_ABORTABLE:
	case RN_KERR_CLUSTER_AUTHORIZATION_FAILED:
		*msg = rn_kstr_c("the partition was not added to the "
		    "transaction");
		return RN_KERR_INVALID_TXN_STATE;
	case RN_KERR_PRODUCER_FENCED:
		return RN_KERR_INVALID_PRODUCER_EPOCH;
	case RN_KERR_NETWORK_EXCEPTION:
	case RN_KERR_COORDINATOR_LOAD_IN_PROGRESS:
	case RN_KERR_COORDINATOR_NOT_AVAILABLE:
	case RN_KERR_NOT_COORDINATOR:
	case RN_KERR_CONCURRENT_TRANSACTIONS:
	case RN_KERR_REQUEST_TIMED_OUT:
		*msg = rn_kstr_c("cannot verify with the transaction "
		    "coordinator that the partition is in the transaction yet");
		return RN_KERR_NOT_ENOUGH_REPLICAS;
	default:
		return err;
	}
}

static void
verify_fail_all(struct conn *c, int16_t err)
{
	int k;

	for (k = 0; k < c->n_verify; k++)
		if (c->vguard[k] != RN_PART_NO_GUARD)
			c->verr[k] = err;
}

/*
 * Which partitions of c's Produce need verifying: their guards in
 * c->vguard (RN_PART_NO_GUARD: none needed), by flat partition index.
 * The number that do.
 */
static int
verify_scan(struct net *n, struct conn *c)
{
	struct rn_ProduceRequest *req = c->req;
	int i, j, k = 0, need = 0;

	for (i = 0; i < req->topic_data_count; i++) {
		struct rn_ProduceRequest_TopicProduceData *td =
		    &req->topic_data[i];
		const struct rn_mdv_topic *t = net_topic(n, td->name);

		for (j = 0; j < td->partition_data_count; j++, k++) {
			struct rn_ProduceRequest_PartitionProduceData *pd =
			    &td->partition_data[j];
			const struct rn_mdv_partition *mp;
			struct rn_batch_header h;
			struct rn_part *p;
			int16_t kerr;

			c->vguard[k] = RN_PART_NO_GUARD;
			c->verr[k] = RN_KERR_NONE;
			if (t == NULL || pd->records.len < RN_BATCH_HEADER_SIZE ||
			    (mp = rn_mdview_partition(t, pd->index)) == NULL ||
			    !net_leads(n, mp))
				continue;
			rn_batch_parse_header(pd->records.ptr, &h);
			if (!(h.attributes & RN_BATCH_ATTR_TRANSACTIONAL) ||
			    (h.attributes & RN_BATCH_ATTR_CONTROL) ||
			    h.producer_id < 0)
				continue;
			/* what fails here fails again in the append */
			if ((p = rn_part_get(&n->parts, &n->view, t, mp,
			    &kerr)) == NULL || rn_part_txn_open(p,
			    h.producer_id, h.producer_epoch, &c->vguard[k]) != 0) {
				c->vguard[k] = RN_PART_NO_GUARD;
				continue;
			}
			if (c->vpid < 0) {
				c->vpid = h.producer_id;
				c->vepoch = h.producer_epoch;
			} else if (h.producer_id != c->vpid ||
			    h.producer_epoch != c->vepoch) {
				/* one producer a transactional request */
				c->verr[k] = RN_KERR_INVALID_PRODUCER_EPOCH;
				c->vguard[k] = RN_PART_NO_GUARD;
				continue;
			}
			need++;
		}
	}
	return need;
}

static int
verify_send(struct net *n, struct conn *c, int need)
{
	const struct rn_ProduceRequest *req = c->req;
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int i, j, k = 0, rc;

	c->admin_req = ++n->next_admin_id;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 7);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "req");
	msgpack_pack_uint64(&pk, c->admin_req);
	rn_mp_pack_str(&pk, "key");
	msgpack_pack_int16(&pk, RN_KAPI_ADD_PARTITIONS_TO_TXN);
	rn_mp_pack_str(&pk, "verify");
	msgpack_pack_str(&pk, (size_t)req->transactional_id.len);
	msgpack_pack_str_body(&pk, req->transactional_id.ptr,
	    (size_t)req->transactional_id.len);
	rn_mp_pack_str(&pk, "pid");
	msgpack_pack_int64(&pk, c->vpid);
	rn_mp_pack_str(&pk, "epoch");
	msgpack_pack_int16(&pk, c->vepoch);
	rn_mp_pack_str(&pk, "parts");
	msgpack_pack_array(&pk, (size_t)need * 2);
	for (i = 0; i < req->topic_data_count; i++) {
		const struct rn_ProduceRequest_TopicProduceData *td =
		    &req->topic_data[i];

		for (j = 0; j < td->partition_data_count; j++, k++) {
			if (c->vguard[k] == RN_PART_NO_GUARD)
				continue;
			msgpack_pack_str(&pk, (size_t)td->name.len);
			msgpack_pack_str_body(&pk, td->name.ptr,
			    (size_t)td->name.len);
			msgpack_pack_int32(&pk, td->partition_data[j].index);
		}
	}
	rc = net_coord_send(n, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

bool
net_produce_verify_start(struct net *n, struct conn *c)
{
	struct rn_ProduceRequest *req = c->req;
	int i, total = 0, need;
	int64_t deadline;

	c->n_verify = 0;
	if (req->transactional_id.len <= 0 || !verification_enabled(n))
		return false;
	for (i = 0; i < req->topic_data_count; i++)
		total += req->topic_data[i].partition_data_count;
	if (total <= 0)
		return false;
	c->vguard = rn_arena_alloc(&c->arena, sizeof(*c->vguard) *
	    (size_t)total);
	c->verr = rn_arena_alloc(&c->arena, sizeof(*c->verr) * (size_t)total);
	if (c->vguard == NULL || c->verr == NULL)
		return false;	/* net_produce fails the same way */
	c->n_verify = total;
	c->vpid = -1;
	c->vepoch = -1;
	if ((need = verify_scan(n, c)) == 0)
		return false;
	if (parked_verifications(n) >= VERIFY_MAX_PARKED) {
		verify_fail_all(c, RN_KERR_NETWORK_EXCEPTION);
		return false;
	}
	if (verify_send(n, c, need) != 0) {
		verify_fail_all(c, RN_KERR_COORDINATOR_NOT_AVAILABLE);
		return false;
	}
	deadline = req->timeout_ms > 0 && req->timeout_ms < VERIFY_TIMEOUT_MS ?
	    req->timeout_ms : VERIFY_TIMEOUT_MS;
	net_conn_park(n, c, CONN_WAIT_VERIFY, rn_now_ms() + deadline);
	return true;
}

/* The produce handled again, each partition with its verdict. */
static void
verify_resume(struct net *n, struct conn *c)
{
	c->verified = true;
	if (net_produce(n, c) != 0) {
		c->closing = true;
		net_conn_request_done(n, c);
		return;
	}
	if (c->wait == CONN_WAIT_VERIFY)
		net_conn_request_done(n, c);
	/* else parked again for acks=all: answered from there */
}

void
net_verify_timeout(struct net *n, struct conn *c)
{
	verify_fail_all(c, RN_KERR_NETWORK_EXCEPTION);
	verify_resume(n, c);
}

/* The coordinator's answer: {"req", "verify": [err, ...]} in the order
 * of the partitions asked. */
void
net_verify_reply(struct net *n, const msgpack_object *m)
{
	const msgpack_object *errs = rn_mp_get(m, "verify");
	uint64_t req = (uint64_t)rn_mp_get_int(m, "req", 0);
	struct conn *c;
	uint32_t e = 0;
	int k;

	for (c = n->parked; c != NULL; c = c->next_parked)
		if (c->wait == CONN_WAIT_VERIFY && c->admin_req == req)
			break;
	if (c == NULL)
		return;	/* timed out or gone */
	if (errs == NULL || errs->type != MSGPACK_OBJECT_ARRAY) {
		verify_fail_all(c, RN_KERR_COORDINATOR_NOT_AVAILABLE);
		verify_resume(n, c);
		return;
	}
	for (k = 0; k < c->n_verify; k++) {
		const msgpack_object *o;

		if (c->vguard[k] == RN_PART_NO_GUARD)
			continue;
		o = e < errs->via.array.size ? &errs->via.array.ptr[e++] : NULL;
		c->verr[k] = o != NULL && (o->type ==
		    MSGPACK_OBJECT_POSITIVE_INTEGER || o->type ==
		    MSGPACK_OBJECT_NEGATIVE_INTEGER) ? (int16_t)o->via.i64 :
		    RN_KERR_COORDINATOR_NOT_AVAILABLE;
	}
	verify_resume(n, c);
}
