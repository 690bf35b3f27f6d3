/*
 * From a frame to a handler: decode the request header, check the API and
 * version against what this broker serves, decode the body into the
 * connection's capped arena, call the handler. Responses are framed here.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "protocol/kerrors.h"
#include "protocol/kframe.h"
#include "storage/errors.h"
#include "workers/network/net_int.h"

/* The APIs a broker serves to clients, with the versions we answer. */
static const struct {
	int16_t key, min, max;
	int (*fn)(struct net *, struct conn *);
} served[] = {
	{ RN_KAPI_PRODUCE, 3, 9, net_produce },
	{ RN_KAPI_FETCH, 4, 13, net_fetch },
	{ RN_KAPI_LIST_OFFSETS, 1, 7, net_list_offsets },
	{ RN_KAPI_METADATA, 0, 12, net_metadata },
	{ RN_KAPI_API_VERSIONS, 0, 3, net_api_versions },
	{ RN_KAPI_CREATE_TOPICS, 0, 7, net_admin_checked },
	{ RN_KAPI_DELETE_TOPICS, 0, 6, net_admin_checked },
	{ RN_KAPI_DELETE_RECORDS, 0, 2, net_delete_records },
	{ RN_KAPI_OFFSET_FOR_LEADER_EPOCH, 0, 4, net_offset_for_leader_epoch },
	{ RN_KAPI_DESCRIBE_CONFIGS, 0, 4, net_describe_configs },
	{ RN_KAPI_ALTER_CONFIGS, 0, 2, net_admin_checked },
	{ RN_KAPI_CREATE_PARTITIONS, 0, 3, net_admin_checked },
	{ RN_KAPI_INCREMENTAL_ALTER_CONFIGS, 0, 1, net_admin_checked },
	{ RN_KAPI_UNREGISTER_BROKER, 0, 0, net_admin_forward },
	{ RN_KAPI_DESCRIBE_CLUSTER, 0, 1, net_describe_cluster },
	{ RN_KAPI_INIT_PRODUCER_ID, 0, 4, net_init_producer_id },
	{ RN_KAPI_WRITE_TXN_MARKERS, 0, 1, net_write_txn_markers },
	{ RN_KAPI_DESCRIBE_PRODUCERS, 0, 0, net_describe_producers },
	{ RN_KAPI_ELECT_LEADERS, 0, 2, net_admin_checked },
	{ RN_KAPI_DESCRIBE_QUORUM, 0, 2, net_admin_checked },
	{ RN_KAPI_ALTER_PARTITION_REASSIGNMENTS, 0, 0, net_admin_checked },
	{ RN_KAPI_LIST_PARTITION_REASSIGNMENTS, 0, 0, net_admin_checked },
	{ RN_KAPI_FIND_COORDINATOR, 0, 4, net_find_coordinator },
	{ RN_KAPI_OFFSET_COMMIT, 0, 8, net_group_forward },
	{ RN_KAPI_OFFSET_FETCH, 0, 8, net_group_forward },
	{ RN_KAPI_JOIN_GROUP, 0, 9, net_group_forward },
	{ RN_KAPI_SYNC_GROUP, 0, 5, net_group_forward },
	{ RN_KAPI_HEARTBEAT, 0, 4, net_group_forward },
	{ RN_KAPI_LEAVE_GROUP, 0, 5, net_group_forward },
	{ RN_KAPI_LIST_GROUPS, 0, 4, net_group_forward },
	{ RN_KAPI_DESCRIBE_GROUPS, 0, 5, net_group_forward },
	{ RN_KAPI_DELETE_GROUPS, 0, 2, net_group_forward },
	{ RN_KAPI_OFFSET_DELETE, 0, 0, net_group_forward },
	/* transactions: the coordinator worker holds them beside the groups */
	{ RN_KAPI_ADD_PARTITIONS_TO_TXN, 0, 4, net_group_forward },
	{ RN_KAPI_ADD_OFFSETS_TO_TXN, 0, 3, net_group_forward },
	{ RN_KAPI_END_TXN, 0, 3, net_group_forward },
	{ RN_KAPI_TXN_OFFSET_COMMIT, 0, 3, net_group_forward },
	{ RN_KAPI_DESCRIBE_TRANSACTIONS, 0, 0, net_group_forward },
	{ RN_KAPI_LIST_TRANSACTIONS, 0, 1, net_group_forward },
	{ RN_KAPI_DESCRIBE_LOG_DIRS, 0, 4, net_describe_log_dirs },
	{ RN_KAPI_ALTER_REPLICA_LOG_DIRS, 0, 2, net_alter_replica_log_dirs },
	{ RN_KAPI_DESCRIBE_ACLS, 0, 3, net_describe_acls },
	{ RN_KAPI_CREATE_ACLS, 0, 3, net_create_acls },
	{ RN_KAPI_DELETE_ACLS, 0, 3, net_delete_acls },
	{ RN_KAPI_DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, net_describe_scram },
	{ RN_KAPI_ALTER_USER_SCRAM_CREDENTIALS, 0, 0, net_alter_scram },
	{ RN_KAPI_DESCRIBE_CLIENT_QUOTAS, 0, 1, net_admin_checked },
	{ RN_KAPI_ALTER_CLIENT_QUOTAS, 0, 1, net_admin_checked },
	/* last: advertised and taken on SASL listeners only */
	{ RN_KAPI_SASL_HANDSHAKE, 0, 1, net_sasl_handshake },
	{ RN_KAPI_SASL_AUTHENTICATE, 0, 2, net_sasl_authenticate },
};
#define N_SASL_APIS 2

#define N_SERVED (sizeof(served) / sizeof(served[0]))

int
net_apis_init(struct net *n)
{
	size_t i;

	n->apis = calloc(N_SERVED, sizeof(*n->apis));
	n->advertised = calloc(N_SERVED, sizeof(*n->advertised));
	if (n->apis == NULL || n->advertised == NULL)
		return -ENOMEM;
	for (i = 0; i < N_SERVED; i++) {
		const struct rn_kapi *k = rn_kapi_find(served[i].key);

		/* never advertise more than the codec decodes */
		if (k == NULL)
			fatalx("API %d is served but not in the codec",
			    served[i].key);
		n->apis[n->n_apis].api_key = served[i].key;
		n->apis[n->n_apis].min_version = served[i].min > k->min_version ?
		    served[i].min : k->min_version;
		n->apis[n->n_apis].max_version = served[i].max < k->max_version ?
		    served[i].max : k->max_version;
		/*
		 * Produce v0-v2 are refused, yet advertised from 0 as Kafka
		 * 4 does: librdkafka before 2.11.1 checks for a codec with a
		 * Produce range starting at 0 and otherwise sends gzip,
		 * snappy and lz4 batches uncompressed. Clients pick the
		 * highest common version, so none sends v0-v2.
		 */
		n->advertised[n->n_apis] = n->apis[n->n_apis];
		if (served[i].key == RN_KAPI_PRODUCE)
			n->advertised[n->n_apis].min_version = 0;
		n->n_apis++;
	}
	n->n_apis_plain = n->n_apis - N_SASL_APIS;
	return 0;
}

bool
net_api_served(const struct net *n, int16_t key, int16_t version)
{
	int i;

	for (i = 0; i < n->n_apis; i++)
		if (n->apis[i].api_key == key)
			return version >= n->apis[i].min_version &&
			    version <= n->apis[i].max_version;
	return false;
}

struct net_out *
net_out_begin(struct conn *c, size_t *mark)
{
	struct net_out *o = calloc(1, sizeof(*o));

	if (o == NULL)
		return NULL;
	rn_kwriter_init(&o->w);
	if (rn_kresponse_begin(&o->w, c->hdr.api_key, c->hdr.api_version,
	    c->hdr.correlation_id, mark) < 0) {
		rn_kwriter_free(&o->w);
		free(o);
		return NULL;
	}
	return o;
}

void
net_out_finish(struct net *n, struct conn *c, struct net_out *o, size_t mark)
{
	struct rn_kchunk one[8];
	int k;

	rn_kw_frame_end(&o->w, mark);
	k = rn_kwriter_chunks(&o->w, one, 8);
	if (k < 0) {
		log_warnx("cannot encode a response to API %d v%d: %d",
		    c->hdr.api_key, c->hdr.api_version, k);
		net_out_free(n, o);
		c->closing = true;
		return;
	}
	o->chunks = malloc(sizeof(*o->chunks) * (size_t)(k ? k : 1));
	if (o->chunks == NULL) {
		log_warnx("connection from %s: no memory for a response to "
		    "API %d: closing", c->peer, c->hdr.api_key);
		net_out_free(n, o);
		c->closing = true;
		return;
	}
	if (k <= 8)
		memcpy(o->chunks, one, sizeof(*one) * (size_t)k);
	else
		rn_kwriter_chunks(&o->w, o->chunks, k);
	o->n_chunks = k;
	if (c->ready_us != 0) {
		o->ready_us = c->ready_us;
		o->start_us = c->start_us;
		o->park_us = c->park_us;
		o->queued_us = rn_now_us();
		o->met_api = c->met_api;
		/* one response per request is timed */
		c->ready_us = 0;
		c->met_queued = true;
	}
	net_conn_queue(n, c, o);
}

int
net_respond(struct net *n, struct conn *c, const void *resp)
{
	const struct rn_kapi *api = rn_kapi_find(c->hdr.api_key);
	struct net_out *o;
	size_t mark;

	if ((o = net_out_begin(c, &mark)) == NULL)
		return -ENOMEM;
	api->encode_response(&o->w, c->hdr.api_version, resp);
	net_out_finish(n, c, o, mark);
	return 0;
}

void *
net_array(struct conn *c, int32_t count, size_t size)
{
	return rn_arena_alloc(&c->arena, size * (size_t)(count > 0 ? count : 1));
}

const struct rn_mdv_topic *
net_topic(struct net *n, struct rn_kstr name)
{
	return rn_mdview_topic(&n->view, name.ptr,
	    (size_t)(name.len > 0 ? name.len : 0));
}

/*
 * ApiVersions answers even versions it does not serve: with
 * UNSUPPORTED_VERSION and the v0 body, so the client can pick a version.
 */
int
net_api_versions(struct net *n, struct conn *c)
{
	struct rn_ApiVersionsResponse r;

	rn_ApiVersionsResponse_init(&r);
	r.api_keys = n->advertised;
	r.api_keys_count = c->sasl != NULL ? n->n_apis : n->n_apis_plain;
	if (!net_api_served(n, RN_KAPI_API_VERSIONS, c->hdr.api_version)) {
		r.error_code = RN_KERR_UNSUPPORTED_VERSION;
		c->hdr.api_version = 0;
	}
	return net_respond(n, c, &r);
}

/*
 * When the frame being handled was complete: at the last read if its
 * bytes ended there, else (it waited in the buffer) at the one before.
 */
static int64_t
frame_ready_us(const struct conn *c)
{
	return c->frame_off + 4 + c->frame_len > c->rx_from ? c->rx_us :
	    c->prev_rx_us;
}

/*
 * A timed request's handler returned: parked (remote time begins now),
 * answered (timed when written), or answered with nothing (acks=0).
 */
static void
handled(struct net *n, struct conn *c, int64_t t_decoded)
{
	bool produce = c->met_api == RN_MET_API_PRODUCE;
	int64_t now;

	if (!produce && c->wait == CONN_IDLE && c->met_queued)
		return;
	now = rn_now_us();
	if (produce)
		net_stage(n, RN_STAGE_APPEND, now - t_decoded);
	if (c->wait != CONN_IDLE)
		c->park_us = now;
	else if (!c->met_queued)
		net_request_timed(n, c->met_api, c->ready_us, c->start_us, 0,
		    now, now);
}

bool
net_dispatch(struct net *n, struct conn *c)
{
	const struct rn_kapi *api;
	struct rn_kreader r;
	int64_t t_start = 0, t_decoded = 0;
	size_t i;
	int rc;

	/* the APIs clients use most are timed by stage, Produce finer */
	c->ready_us = c->park_us = 0;
	c->met_api = -1;
	c->met_queued = false;
	if (!c->authed && c->sasl != NULL && c->sasl_state == CONN_SASL_RAW)
		return net_sasl_raw_token(n, c);
	if (c->frame_len >= 2 && (c->met_api = rn_met_api_index(
	    c->rbuf[c->frame_off + 4] << 8 | c->rbuf[c->frame_off + 5])) >= 0) {
		c->start_us = t_start = rn_now_us();
		c->ready_us = frame_ready_us(c);
		if (c->met_api == RN_MET_API_PRODUCE)
			net_stage(n, RN_STAGE_QUEUED, t_start - c->ready_us);
	}
	rn_kreader_init(&r, c->rbuf + c->frame_off + 4, c->frame_len);
	rc = rn_krequest_header_decode(&r, &c->hdr);
	if (rc < 0 && !(rc == RN_KE_VERSION &&
	    c->hdr.api_key == RN_KAPI_API_VERSIONS)) {
		/* Kafka closes the connection on an API it does not know */
		log_warnx("connection from %s: %s request header (API key %d "
		    "v%d): closing", c->peer, rc == RN_KE_VERSION ? "unknown" :
		    "malformed", c->hdr.api_key, c->hdr.api_version);
		return false;
	}
	if (c->hdr.api_key == RN_KAPI_API_VERSIONS &&
	    !net_api_served(n, c->hdr.api_key, c->hdr.api_version)) {
		c->req = NULL;
		return net_api_versions(n, c) == 0;
	}
	if (!net_sasl_session_ok(n, c, c->hdr.api_key))
		return false;
	if (!net_sasl_preauth_ok(c, c->hdr.api_key)) {
		/* as Kafka: anything else before a login ends the connection */
		log_warnx("connection from %s on listener %s: API %d before "
		    "authentication: closing", c->peer,
		    n->cfg->listeners[c->listener].name, c->hdr.api_key);
		return false;
	}
	if (!net_api_served(n, c->hdr.api_key, c->hdr.api_version) ||
	    (c->sasl == NULL && (c->hdr.api_key == RN_KAPI_SASL_HANDSHAKE ||
	    c->hdr.api_key == RN_KAPI_SASL_AUTHENTICATE))) {
		log_warnx("connection from %s (client %.*s): API %d version %d "
		    "is not served (UNSUPPORTED_VERSION): closing", c->peer,
		    c->hdr.client_id.len > 0 ? (int)c->hdr.client_id.len : 0,
		    c->hdr.client_id.ptr ? c->hdr.client_id.ptr : "",
		    c->hdr.api_key, c->hdr.api_version);
		return false;
	}
	if (!net_authz_gate(n, c))
		return false;
	api = rn_kapi_find(c->hdr.api_key);
	net_count_request(n, c->hdr.api_key);
	rn_arena_reset(&c->arena);
	/* decoded arrays can never outgrow a small multiple of the frame */
	rn_arena_set_limit(&c->arena, 4 * c->frame_len + 4096);
	c->req = rn_arena_alloc(&c->arena, api->request_size);
	c->authz_denied = NULL;
	if (c->req == NULL)
		return false;
	rc = api->decode_request(&r, c->hdr.api_version, &c->arena, c->req);
	if (rc < 0) {
		log_warnx("connection from %s: malformed %s v%d request (%d): "
		    "closing", c->peer, api->name, c->hdr.api_version, rc);
		return false;
	}
	/*
	 * The response is built in the same arena, after the request. Its
	 * size follows the data it describes (every topic of the image, the
	 * configs of each resource), not the request's, so it gets its own
	 * budget; a parked request rewinds to this mark before rebuilding.
	 */
	rn_arena_mark(&c->arena, &c->req_mark);
	rn_arena_set_limit(&c->arena, rn_arena_used(&c->arena) +
	    (size_t)n->cfg->socket_request_max_bytes);
	if (c->met_api == RN_MET_API_PRODUCE) {
		t_decoded = rn_now_us();
		net_stage(n, RN_STAGE_DECODE, t_decoded - t_start);
	}
	for (i = 0; i < N_SERVED; i++)
		if (served[i].key == c->hdr.api_key) {
			rc = served[i].fn(n, c);
			if (c->met_api >= 0 && rc == 0)
				handled(n, c, t_decoded);
			if (rc < 0)
				log_warnx("%s v%d from %s failed: %s", api->name,
				    c->hdr.api_version, c->peer, strerror(-rc));
			return rc == 0;
		}
	return false;
}

int16_t
net_storage_kerr(int rc)
{
	return (int16_t)rn_storage_kafka_error(rc);
}
