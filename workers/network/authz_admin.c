/*
 * ACLs on the admin requests the controller answers (CreateTopics,
 * DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs),
 * checked here, where the principal is known. A request whose items are
 * all allowed is forwarded as it came; one whose items are all refused is
 * answered here; a mixed one goes on with its allowed items only, and the
 * controller's answer gets the refused ones back in their places, as Kafka
 * answers item by item. The cluster-wide ones (ElectLeaders,
 * reassignments, DescribeQuorum) need their operation on the cluster.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include "common/acl.h"
#include "common/log.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"

#define RES_TOPIC 2
#define RES_BROKER 4

static size_t
klen(struct rn_kstr s)
{
	return s.len > 0 ? (size_t)s.len : 0;
}

static bool
topic_ok(struct net *n, struct conn *c, int8_t op, struct rn_kstr name)
{
	return net_authorized(n, c, op, RN_ACL_RES_TOPIC, name.ptr, klen(name));
}

/* Configs of a topic: on the topic; of a broker: on the cluster. */
static bool
config_ok(struct net *n, struct conn *c, int8_t type, struct rn_kstr name)
{
	if (type == RES_TOPIC)
		return topic_ok(n, c, RN_ACL_OP_ALTER_CONFIGS, name);
	return net_authorized_cluster(n, c, RN_ACL_OP_ALTER_CONFIGS);
}

static int16_t
config_denied(int8_t type)
{
	return type == RES_TOPIC ? RN_KERR_TOPIC_AUTHORIZATION_FAILED :
	    RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
}

/* Forward req (the allowed items) in place of the request as it came. */
static int
forward_filtered(struct net *n, struct conn *c, const void *req)
{
	const struct rn_kapi *api = rn_kapi_find(c->hdr.api_key);
	struct rn_kwriter w;
	int rc;

	rn_kwriter_init(&w);
	if (api->encode_request(&w, c->hdr.api_version, req) < 0 || w.err) {
		rn_kwriter_free(&w);
		return -ENOMEM;
	}
	rc = net_admin_forward_body(n, c, w.buf, w.len);
	rn_kwriter_free(&w);
	return rc;
}

/*
 * Room for the verdict on n_items items, all allowed to begin with; the
 * callers forward the request as it came (none refused), answer it here
 * (all refused) or forward the allowed items only.
 */
static bool *
verdicts(struct conn *c, int32_t n_items)
{
	bool *d = net_array(c, n_items, sizeof(*d));

	if (d != NULL)
		memset(d, 0, sizeof(*d) * (size_t)(n_items > 0 ? n_items : 1));
	return d;
}

/* ---- CreateTopics --------------------------------------------------- */

static int
ct_answer(struct net *n, struct conn *c,
    const struct rn_CreateTopicsResponse *from)
{
	const struct rn_CreateTopicsRequest *req = c->req;
	struct rn_CreateTopicsResponse r;
	int32_t i, k = 0;

	rn_CreateTopicsResponse_init(&r);
	if (from != NULL)
		r = *from;
	r.topics_count = req->topics_count;
	if ((r.topics = net_array(c, req->topics_count, sizeof(*r.topics))) ==
	    NULL)
		return -ENOMEM;
	for (i = 0; i < req->topics_count; i++) {
		struct rn_CreateTopicsResponse_CreatableTopicResult *o =
		    &r.topics[i];

		if (!c->authz_denied[i] && from != NULL &&
		    k < from->topics_count) {
			*o = from->topics[k++];
			continue;
		}
		rn_CreateTopicsResponse_CreatableTopicResult_init(o);
		o->name = req->topics[i].name;
		o->error_code = RN_KERR_TOPIC_AUTHORIZATION_FAILED;
		o->error_message = rn_kstr_c("Authorization failed.");
	}
	return net_respond(n, c, &r);
}

static int
ct_check(struct net *n, struct conn *c)
{
	const struct rn_CreateTopicsRequest *req = c->req;
	struct rn_CreateTopicsRequest f = *req;
	/* CREATE on the cluster allows every topic */
	bool all = net_authorized_cluster_quiet(n, c, RN_ACL_OP_CREATE);
	int32_t i, k = 0;

	if (all)
		return net_admin_forward(n, c);
	if ((c->authz_denied = verdicts(c, req->topics_count)) == NULL ||
	    (f.topics = net_array(c, req->topics_count,
	    sizeof(*f.topics))) == NULL)
		return -ENOMEM;
	for (i = 0; i < req->topics_count; i++) {
		c->authz_denied[i] = !topic_ok(n, c, RN_ACL_OP_CREATE,
		    req->topics[i].name);
		if (!c->authz_denied[i])
			f.topics[k++] = req->topics[i];
	}
	f.topics_count = k;
	if (k == req->topics_count) {
		c->authz_denied = NULL;
		return net_admin_forward(n, c);
	}
	return k == 0 ? ct_answer(n, c, NULL) : forward_filtered(n, c, &f);
}

/* ---- DeleteTopics --------------------------------------------------- */

/* Item i's name: from v6 on a topic may be named by its id only. */
static struct rn_kstr
dt_name(struct net *n, struct conn *c, int32_t i)
{
	const struct rn_DeleteTopicsRequest *req = c->req;
	const struct rn_mdv_topic *t;

	if (c->hdr.api_version < 6)
		return req->topic_names[i];
	if (req->topics[i].name.len >= 0)
		return req->topics[i].name;
	t = rn_mdview_topic_by_id(&n->view, req->topics[i].topic_id.b);
	/* an unknown id: judged by the empty name, answered unknown */
	return t != NULL ? rn_kstr_c(t->name) : rn_kstr_c("");
}

static int32_t
dt_count(const struct conn *c)
{
	const struct rn_DeleteTopicsRequest *req = c->req;

	return c->hdr.api_version < 6 ? req->topic_names_count :
	    req->topics_count;
}

static int
dt_answer(struct net *n, struct conn *c,
    const struct rn_DeleteTopicsResponse *from)
{
	const struct rn_DeleteTopicsRequest *req = c->req;
	struct rn_DeleteTopicsResponse r;
	int32_t i, k = 0, cnt = dt_count(c);

	rn_DeleteTopicsResponse_init(&r);
	if (from != NULL)
		r = *from;
	r.responses_count = cnt;
	if ((r.responses = net_array(c, cnt, sizeof(*r.responses))) == NULL)
		return -ENOMEM;
	for (i = 0; i < cnt; i++) {
		struct rn_DeleteTopicsResponse_DeletableTopicResult *o =
		    &r.responses[i];

		if (!c->authz_denied[i] && from != NULL &&
		    k < from->responses_count) {
			*o = from->responses[k++];
			continue;
		}
		rn_DeleteTopicsResponse_DeletableTopicResult_init(o);
		o->name = dt_name(n, c, i);
		if (c->hdr.api_version >= 6)
			o->topic_id = req->topics[i].topic_id;
		o->error_code = RN_KERR_TOPIC_AUTHORIZATION_FAILED;
	}
	return net_respond(n, c, &r);
}

static int
dt_check(struct net *n, struct conn *c)
{
	const struct rn_DeleteTopicsRequest *req = c->req;
	struct rn_DeleteTopicsRequest f = *req;
	int32_t i, k = 0, cnt = dt_count(c);

	if ((c->authz_denied = verdicts(c, cnt)) == NULL ||
	    (f.topics = net_array(c, cnt, sizeof(*f.topics))) == NULL ||
	    (f.topic_names = net_array(c, cnt, sizeof(*f.topic_names))) ==
	    NULL)
		return -ENOMEM;
	for (i = 0; i < cnt; i++) {
		c->authz_denied[i] = !topic_ok(n, c, RN_ACL_OP_DELETE,
		    dt_name(n, c, i));
		if (c->authz_denied[i])
			continue;
		if (c->hdr.api_version < 6)
			f.topic_names[k++] = req->topic_names[i];
		else
			f.topics[k++] = req->topics[i];
	}
	f.topics_count = c->hdr.api_version < 6 ? 0 : k;
	f.topic_names_count = c->hdr.api_version < 6 ? k : 0;
	if (k == cnt) {
		c->authz_denied = NULL;
		return net_admin_forward(n, c);
	}
	return k == 0 ? dt_answer(n, c, NULL) : forward_filtered(n, c, &f);
}

/* ---- CreatePartitions ----------------------------------------------- */

static int
cp_answer(struct net *n, struct conn *c,
    const struct rn_CreatePartitionsResponse *from)
{
	const struct rn_CreatePartitionsRequest *req = c->req;
	struct rn_CreatePartitionsResponse r;
	int32_t i, k = 0;

	rn_CreatePartitionsResponse_init(&r);
	if (from != NULL)
		r = *from;
	r.results_count = req->topics_count;
	if ((r.results = net_array(c, req->topics_count,
	    sizeof(*r.results))) == NULL)
		return -ENOMEM;
	for (i = 0; i < req->topics_count; i++) {
		struct rn_CreatePartitionsResponse_CreatePartitionsTopicResult
		    *o = &r.results[i];

		if (!c->authz_denied[i] && from != NULL &&
		    k < from->results_count) {
			*o = from->results[k++];
			continue;
		}
		rn_CreatePartitionsResponse_CreatePartitionsTopicResult_init(o);
		o->name = req->topics[i].name;
		o->error_code = RN_KERR_TOPIC_AUTHORIZATION_FAILED;
	}
	return net_respond(n, c, &r);
}

static int
cp_check(struct net *n, struct conn *c)
{
	const struct rn_CreatePartitionsRequest *req = c->req;
	struct rn_CreatePartitionsRequest f = *req;
	int32_t i, k = 0;

	if ((c->authz_denied = verdicts(c, req->topics_count)) == NULL ||
	    (f.topics = net_array(c, req->topics_count,
	    sizeof(*f.topics))) == NULL)
		return -ENOMEM;
	for (i = 0; i < req->topics_count; i++) {
		c->authz_denied[i] = !topic_ok(n, c, RN_ACL_OP_ALTER,
		    req->topics[i].name);
		if (!c->authz_denied[i])
			f.topics[k++] = req->topics[i];
	}
	f.topics_count = k;
	if (k == req->topics_count) {
		c->authz_denied = NULL;
		return net_admin_forward(n, c);
	}
	return k == 0 ? cp_answer(n, c, NULL) : forward_filtered(n, c, &f);
}

/* ---- AlterConfigs and IncrementalAlterConfigs ------------------------ */

/*
 * Both have the same resources and the same response entries; the
 * macro keeps the two from drifting apart.
 */
#define CONFIGS_AUTHZ(pfx, REQ, RESP, RESPENT)				\
static int								\
pfx##_answer(struct net *n, struct conn *c, const struct RESP *from)	\
{									\
	const struct REQ *req = c->req;					\
	struct RESP r;							\
	int32_t i, k = 0;						\
									\
	RESP##_init(&r);						\
	if (from != NULL)						\
		r = *from;						\
	r.responses_count = req->resources_count;			\
	if ((r.responses = net_array(c, req->resources_count,		\
	    sizeof(*r.responses))) == NULL)				\
		return -ENOMEM;						\
	for (i = 0; i < req->resources_count; i++) {			\
		struct RESPENT *o = &r.responses[i];			\
									\
		if (!c->authz_denied[i] && from != NULL &&		\
		    k < from->responses_count) {			\
			*o = from->responses[k++];			\
			continue;					\
		}							\
		RESPENT##_init(o);					\
		o->resource_type = req->resources[i].resource_type;	\
		o->resource_name = req->resources[i].resource_name;	\
		o->error_code =						\
		    config_denied(req->resources[i].resource_type);	\
	}								\
	return net_respond(n, c, &r);					\
}									\
									\
static int								\
pfx##_check(struct net *n, struct conn *c)				\
{									\
	const struct REQ *req = c->req;					\
	struct REQ f = *req;						\
	int32_t i, k = 0;						\
									\
	if ((c->authz_denied = verdicts(c, req->resources_count)) ==	\
	    NULL || (f.resources = net_array(c, req->resources_count,	\
	    sizeof(*f.resources))) == NULL)				\
		return -ENOMEM;						\
	for (i = 0; i < req->resources_count; i++) {			\
		c->authz_denied[i] = !config_ok(n, c,			\
		    req->resources[i].resource_type,			\
		    req->resources[i].resource_name);			\
		if (!c->authz_denied[i])				\
			f.resources[k++] = req->resources[i];		\
	}								\
	f.resources_count = k;						\
	if (k == req->resources_count) {				\
		c->authz_denied = NULL;					\
		return net_admin_forward(n, c);				\
	}								\
	return k == 0 ? pfx##_answer(n, c, NULL) :			\
	    forward_filtered(n, c, &f);					\
}

CONFIGS_AUTHZ(ac, rn_AlterConfigsRequest, rn_AlterConfigsResponse,
    rn_AlterConfigsResponse_AlterConfigsResourceResponse)
CONFIGS_AUTHZ(iac, rn_IncrementalAlterConfigsRequest,
    rn_IncrementalAlterConfigsResponse,
    rn_IncrementalAlterConfigsResponse_AlterConfigsResourceResponse)

/* ---- cluster-wide ---------------------------------------------------- */

/* Every entity refused, echoed back as Kafka does. */
static int
acq_refused(struct net *n, struct conn *c, void *r)
{
	const struct rn_AlterClientQuotasRequest *req = c->req;
	struct rn_AlterClientQuotasResponse *resp = r;
	int32_t i, j;

	rn_AlterClientQuotasResponse_init(resp);
	resp->entries_count = req->entries_count;
	if ((resp->entries = net_array(c, req->entries_count,
	    sizeof(*resp->entries))) == NULL)
		return -ENOMEM;
	for (i = 0; i < req->entries_count; i++) {
		struct rn_AlterClientQuotasResponse_EntryData *o =
		    &resp->entries[i];

		rn_AlterClientQuotasResponse_EntryData_init(o);
		o->error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		o->entity_count = req->entries[i].entity_count;
		if ((o->entity = net_array(c, o->entity_count,
		    sizeof(*o->entity))) == NULL)
			return -ENOMEM;
		for (j = 0; j < o->entity_count; j++) {
			o->entity[j].entity_type =
			    req->entries[i].entity[j].entity_type;
			o->entity[j].entity_name =
			    req->entries[i].entity[j].entity_name;
		}
	}
	return net_respond(n, c, resp);
}

static int
cluster_check(struct net *n, struct conn *c, int8_t op)
{
	const struct rn_kapi *api = rn_kapi_find(c->hdr.api_key);
	void *r;

	if (net_authorized_cluster(n, c, op))
		return net_admin_forward(n, c);
	/* each of these answers with a top-level error_code first after
	 * throttle_time_ms: set it on an empty response */
	if ((r = rn_arena_alloc(&c->arena, api->response_size)) == NULL)
		return -ENOMEM;
	memset(r, 0, api->response_size);
	switch (c->hdr.api_key) {
	case RN_KAPI_ELECT_LEADERS:
		rn_ElectLeadersResponse_init(r);
		((struct rn_ElectLeadersResponse *)r)->error_code =
		    RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		break;
	case RN_KAPI_ALTER_PARTITION_REASSIGNMENTS:
		rn_AlterPartitionReassignmentsResponse_init(r);
		((struct rn_AlterPartitionReassignmentsResponse *)r)->
		    error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		break;
	case RN_KAPI_LIST_PARTITION_REASSIGNMENTS:
		rn_ListPartitionReassignmentsResponse_init(r);
		((struct rn_ListPartitionReassignmentsResponse *)r)->
		    error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		break;
	case RN_KAPI_DESCRIBE_QUORUM:
		rn_DescribeQuorumResponse_init(r);
		((struct rn_DescribeQuorumResponse *)r)->error_code =
		    RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		break;
	case RN_KAPI_DESCRIBE_CLIENT_QUOTAS:
		rn_DescribeClientQuotasResponse_init(r);
		((struct rn_DescribeClientQuotasResponse *)r)->error_code =
		    RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		break;
	case RN_KAPI_ALTER_CLIENT_QUOTAS:
		return acq_refused(n, c, r);
	default:
		return -EPROTO;
	}
	return net_respond(n, c, r);
}

/* ---- the entry points ------------------------------------------------ */

int
net_admin_checked(struct net *n, struct conn *c)
{
	c->authz_denied = NULL;
	if (!n->authz.on)
		return net_admin_forward(n, c);
	switch (c->hdr.api_key) {
	case RN_KAPI_CREATE_TOPICS:
		return ct_check(n, c);
	case RN_KAPI_DELETE_TOPICS:
		return dt_check(n, c);
	case RN_KAPI_CREATE_PARTITIONS:
		return cp_check(n, c);
	case RN_KAPI_ALTER_CONFIGS:
		return ac_check(n, c);
	case RN_KAPI_INCREMENTAL_ALTER_CONFIGS:
		return iac_check(n, c);
	case RN_KAPI_ELECT_LEADERS:
	case RN_KAPI_ALTER_PARTITION_REASSIGNMENTS:
		return cluster_check(n, c, RN_ACL_OP_ALTER);
	case RN_KAPI_LIST_PARTITION_REASSIGNMENTS:
	case RN_KAPI_DESCRIBE_QUORUM:
		return cluster_check(n, c, RN_ACL_OP_DESCRIBE);
	case RN_KAPI_DESCRIBE_CLIENT_QUOTAS:
		return cluster_check(n, c, RN_ACL_OP_DESCRIBE_CONFIGS);
	case RN_KAPI_ALTER_CLIENT_QUOTAS:
		return cluster_check(n, c, RN_ACL_OP_ALTER_CONFIGS);
	default:
		return net_admin_forward(n, c);
	}
}

int
net_admin_merge(struct net *n, struct conn *c, const void *body, size_t len)
{
	const struct rn_kapi *api = rn_kapi_find(c->hdr.api_key);
	struct rn_kreader kr;
	void *resp;

	if ((resp = rn_arena_alloc(&c->arena, api->response_size)) == NULL)
		return -ENOMEM;
	rn_kreader_init(&kr, body, len);
	if (api->decode_response(&kr, c->hdr.api_version, &c->arena,
	    resp) < 0)
		return -EPROTO;
	switch (c->hdr.api_key) {
	case RN_KAPI_CREATE_TOPICS:
		return ct_answer(n, c, resp);
	case RN_KAPI_DELETE_TOPICS:
		return dt_answer(n, c, resp);
	case RN_KAPI_CREATE_PARTITIONS:
		return cp_answer(n, c, resp);
	case RN_KAPI_ALTER_CONFIGS:
		return ac_answer(n, c, resp);
	case RN_KAPI_INCREMENTAL_ALTER_CONFIGS:
		return iac_answer(n, c, resp);
	default:
		return -EPROTO;
	}
}
