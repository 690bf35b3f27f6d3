/*
 * Metadata, DescribeCluster and DescribeConfigs: answered from this
 * worker's copy of the controller's metadata image, no controller round
 * trip.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/acl.h"
#include "common/log.h"
#include "protocol/kerrors.h"
#include "storage/logdir.h"
#include "workers/network/net_int.h"

#define AUTH_OPS_UNSET ((int32_t)0x80000000)

/* Kafka's topic name rules, on a name that is not NUL-terminated. */
static bool
topic_name_valid(struct rn_kstr name)
{
	char buf[RN_TOPIC_MAX + 1];

	if (name.len <= 0 || name.len > RN_TOPIC_MAX)
		return false;
	memcpy(buf, name.ptr, (size_t)name.len);
	buf[name.len] = '\0';
	return rn_topic_name_valid(buf) != 0;
}

/*
 * The controller id clients are told. As in Kafka's KRaft mode, clients
 * send admin requests to a broker, which forwards them: when the active
 * controller is not a live broker, name this broker instead.
 */
static int32_t
client_controller_id(struct net *n)
{
	const struct rn_mdview *v = &n->view;
	const struct rn_mdv_broker *b = rn_mdview_broker(v, v->controller_id);
	int i;

	if (b != NULL && !b->fenced)
		return v->controller_id;
	/* this broker if it is listed, else any live one: never a broker
	 * the response does not list, which a client could not reach */
	b = rn_mdview_broker(v, n->cfg->node_id);
	if (b == NULL || !b->fenced)
		return n->cfg->node_id;
	for (i = 0; i < v->n_brokers; i++)
		if (!v->brokers[i].fenced)
			return v->brokers[i].id;
	return n->cfg->node_id;
}

static struct rn_kstr
kstr(const char *s)
{
	return rn_kstr_c(s);
}

void
net_broker_endpoint(const struct net *n, const struct conn *c,
    const struct rn_mdv_broker *b, const char **host, uint16_t *port)
{
	const char *name = n->cfg->listeners[c->listener].name;
	int i;

	for (i = 0; i < b->n_listeners; i++)
		if (strcmp(b->listeners[i].name, name) == 0) {
			*host = b->listeners[i].host;
			*port = b->listeners[i].port;
			return;
		}
	*host = b->host;
	*port = b->port;
}

/* This node's advertised listener c came in on, else its first one. */
static const struct rn_listener *
self_advertised(const struct net *n, const struct conn *c)
{
	const char *name = n->cfg->listeners[c->listener].name;
	int i;

	for (i = 0; i < n->cfg->n_advertised; i++)
		if (strcmp(n->cfg->advertised[i].name, name) == 0)
			return &n->cfg->advertised[i];
	return &n->cfg->advertised[0];
}

static int
fill_brokers(struct net *n, struct conn *c,
    struct rn_MetadataResponse_MetadataResponseBroker **out, int32_t *count)
{
	const struct rn_mdview *v = &n->view;
	int i, k = 0;

	*out = rn_arena_alloc(&c->arena, sizeof(**out) * (size_t)(v->n_brokers + 1));
	if (*out == NULL)
		return -ENOMEM;
	for (i = 0; i < v->n_brokers; i++) {
		const struct rn_mdv_broker *b = &v->brokers[i];
		const char *host;
		uint16_t port;

		if (b->fenced)
			continue;
		rn_MetadataResponse_MetadataResponseBroker_init(&(*out)[k]);
		(*out)[k].node_id = b->id;
		net_broker_endpoint(n, c, b, &host, &port);
		(*out)[k].host = kstr(host);
		(*out)[k].port = port;
		(*out)[k].rack = b->rack ? kstr(b->rack) : rn_kstr_c(NULL);
		k++;
	}
	/*
	 * This node answers, so it serves: list it before its registration
	 * is in the image (a fenced registration stays unlisted), since it
	 * may be named as controller and a client must reach that broker.
	 */
	if (rn_mdview_broker(v, n->cfg->node_id) == NULL &&
	    n->cfg->n_advertised > 0) {
		rn_MetadataResponse_MetadataResponseBroker_init(&(*out)[k]);
		(*out)[k].node_id = n->cfg->node_id;
		(*out)[k].host = kstr(self_advertised(n, c)->host);
		(*out)[k].port = self_advertised(n, c)->port;
		(*out)[k].rack = n->cfg->broker_rack[0] ?
		    kstr(n->cfg->broker_rack) : rn_kstr_c(NULL);
		k++;
	}
	*count = k;
	return 0;
}

static int
fill_topic(struct conn *c, const struct rn_mdv_topic *t,
    struct rn_MetadataResponse_MetadataResponseTopic *rt)
{
	int i;

	rt->name = (struct rn_kstr){ t->name, (int32_t)strlen(t->name) };
	memcpy(rt->topic_id.b, t->id, sizeof(rt->topic_id.b));
	rt->is_internal = t->internal;
	rt->partitions_count = t->n_parts;
	rt->partitions = rn_arena_alloc(&c->arena,
	    sizeof(*rt->partitions) * (size_t)(t->n_parts ? t->n_parts : 1));
	if (rt->partitions == NULL)
		return -ENOMEM;
	for (i = 0; i < t->n_parts; i++) {
		const struct rn_mdv_partition *p = &t->parts[i];
		struct rn_MetadataResponse_MetadataResponsePartition *rp =
		    &rt->partitions[i];

		rn_MetadataResponse_MetadataResponsePartition_init(rp);
		rp->partition_index = p->p;
		rp->leader_id = p->leader;
		rp->leader_epoch = p->leader_epoch;
		rp->replica_nodes = (int32_t *)p->replicas;
		rp->replica_nodes_count = p->n_replicas;
		rp->isr_nodes = (int32_t *)p->isr;
		rp->isr_nodes_count = p->n_isr;
		rp->offline_replicas = (int32_t *)p->offline;
		rp->offline_replicas_count = p->n_offline;
		rp->error_code = p->leader < 0 ? RN_KERR_LEADER_NOT_AVAILABLE :
		    RN_KERR_NONE;
	}
	return 0;
}

/* DESCRIBE on a named topic; a topic id is judged by the name it has. */
static bool
topic_described(struct net *n, struct conn *c,
    const struct rn_MetadataRequest_MetadataRequestTopic *q,
    const struct rn_mdv_topic *t)
{
	if (q->name.len >= 0)
		return net_authorized(n, c, RN_ACL_OP_DESCRIBE,
		    RN_ACL_RES_TOPIC, q->name.ptr, (size_t)q->name.len);
	return t == NULL || net_authorized(n, c, RN_ACL_OP_DESCRIBE,
	    RN_ACL_RES_TOPIC, t->name, t->name_len);
}

/* Auto-creation needs CREATE on the cluster or on the topic. */
static bool
may_create(struct net *n, struct conn *c, struct rn_kstr name)
{
	return !n->cfg->authorizer_on ||
	    net_authorized_cluster_quiet(n, c, RN_ACL_OP_CREATE) ||
	    net_authorized(n, c, RN_ACL_OP_CREATE, RN_ACL_RES_TOPIC,
	    name.ptr, (size_t)name.len);
}

int
net_metadata(struct net *n, struct conn *c)
{
	const struct rn_MetadataRequest *req = c->req;
	const struct rn_mdview *v = &n->view;
	struct rn_MetadataResponse r;
	struct rn_kstr *missing;
	int i, k = 0, n_missing = 0;
	bool all = req->topics_count < 0 ||
	    (c->hdr.api_version == 0 && req->topics_count == 0);
	/* before v4 a request could not ask, and auto-creation applied */
	bool auto_create = n->cfg->auto_create_topics_enable &&
	    (c->hdr.api_version < 4 || req->allow_auto_topic_creation);

	rn_MetadataResponse_init(&r);
	if (fill_brokers(n, c, &r.brokers, &r.brokers_count) != 0)
		return -ENOMEM;
	r.cluster_id = v->cluster_id[0] ? kstr(v->cluster_id) : rn_kstr_c(NULL);
	r.controller_id = client_controller_id(n);
	r.cluster_authorized_operations = AUTH_OPS_UNSET;

	r.topics_count = all ? v->n_topics : req->topics_count;
	r.topics = rn_arena_alloc(&c->arena,
	    sizeof(*r.topics) * (size_t)(r.topics_count ? r.topics_count : 1));
	missing = net_array(c, req->topics_count, sizeof(*missing));
	if (r.topics == NULL || missing == NULL)
		return -ENOMEM;
	for (i = 0; i < r.topics_count; i++) {
		struct rn_MetadataResponse_MetadataResponseTopic *rt =
		    &r.topics[k];
		const struct rn_mdv_topic *t;

		rn_MetadataResponse_MetadataResponseTopic_init(rt);
		rt->topic_authorized_operations = AUTH_OPS_UNSET;
		if (all) {
			t = &v->topics[i];
			/* a topic the principal may not describe is left out */
			if (!net_authorized(n, c, RN_ACL_OP_DESCRIBE,
			    RN_ACL_RES_TOPIC, t->name, t->name_len))
				continue;
		} else {
			const struct rn_MetadataRequest_MetadataRequestTopic *q =
			    &req->topics[i];

			if (q->name.len >= 0)
				t = rn_mdview_topic(v, q->name.ptr,
				    (size_t)q->name.len);
			else
				t = rn_mdview_topic_by_id(v, q->topic_id.b);
			if (!topic_described(n, c, q, t)) {
				rt->name = q->name;
				rt->topic_id = q->topic_id;
				rt->error_code =
				    RN_KERR_TOPIC_AUTHORIZATION_FAILED;
				k++;
				continue;
			}
			if (t == NULL) {
				rt->name = q->name;
				rt->topic_id = q->topic_id;
				if (q->name.len < 0)
					rt->error_code = RN_KERR_UNKNOWN_TOPIC_ID;
				else if (auto_create &&
				    topic_name_valid(q->name) &&
				    !may_create(n, c, q->name))
					rt->error_code =
					    RN_KERR_TOPIC_AUTHORIZATION_FAILED;
				else if (auto_create &&
				    topic_name_valid(q->name)) {
					/* created by the controller; the
					 * client retries on this error */
					rt->error_code =
					    RN_KERR_LEADER_NOT_AVAILABLE;
					missing[n_missing++] = q->name;
				} else if (!topic_name_valid(q->name))
					rt->error_code =
					    RN_KERR_INVALID_TOPIC_EXCEPTION;
				else
					rt->error_code =
					    RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
				k++;
				continue;
			}
		}
		if (fill_topic(c, t, rt) != 0)
			return -ENOMEM;
		k++;
	}
	r.topics_count = k;
	if (n_missing > 0)
		net_auto_create(n, missing, n_missing);

	return net_respond(n, c, &r);
}

int
net_describe_cluster(struct net *n, struct conn *c)
{
	const struct rn_mdview *v = &n->view;
	struct rn_DescribeClusterResponse r;
	int i, k = 0;

	rn_DescribeClusterResponse_init(&r);
	if (!net_authorized_cluster(n, c, RN_ACL_OP_DESCRIBE)) {
		r.error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		r.cluster_id = kstr("");
		return net_respond(n, c, &r);
	}
	r.cluster_id = kstr(v->cluster_id);
	r.controller_id = client_controller_id(n);
	r.cluster_authorized_operations = AUTH_OPS_UNSET;
	r.brokers = rn_arena_alloc(&c->arena,
	    sizeof(*r.brokers) * (size_t)(v->n_brokers + 1));
	if (r.brokers == NULL)
		return -ENOMEM;
	for (i = 0; i < v->n_brokers; i++) {
		const struct rn_mdv_broker *b = &v->brokers[i];
		const char *host;
		uint16_t port;

		if (b->fenced)
			continue;
		rn_DescribeClusterResponse_DescribeClusterBroker_init(&r.brokers[k]);
		r.brokers[k].broker_id = b->id;
		net_broker_endpoint(n, c, b, &host, &port);
		r.brokers[k].host = kstr(host);
		r.brokers[k].port = port;
		r.brokers[k].rack = b->rack ? kstr(b->rack) : rn_kstr_c(NULL);
		k++;
	}
	r.brokers_count = k;
	return net_respond(n, c, &r);
}

/* Kafka's ConfigResource.Type */
#define RESOURCE_TOPIC 2
#define RESOURCE_BROKER 4

static bool
key_wanted(const struct rn_DescribeConfigsRequest_DescribeConfigsResource *res,
    const char *key)
{
	int i;

	if (res->configuration_keys_count < 0)
		return true;
	for (i = 0; i < res->configuration_keys_count; i++)
		if (rn_kstr_eq(res->configuration_keys[i], key))
			return true;
	return false;
}

static struct rn_kstr
arena_str(struct conn *c, const char *v)
{
	size_t len;
	char *copy;

	if (v == NULL)
		return rn_kstr_c(NULL);
	len = strlen(v);
	if ((copy = rn_arena_alloc(&c->arena, len + 1)) == NULL)
		return rn_kstr_c(NULL);
	memcpy(copy, v, len + 1);
	return (struct rn_kstr){ copy, (int32_t)len };
}

/* Synonyms of one entry, gathered by rn_kcfg_*_value's callback. */
struct syn_acc {
	struct conn *c;
	struct rn_DescribeConfigsResponse_DescribeConfigsSynonym *v;
	int n, cap;
	bool nomem;
};

static void
syn_add(void *arg, const char *name, const char *value,
    enum rn_config_source source)
{
	struct syn_acc *a = arg;
	struct rn_DescribeConfigsResponse_DescribeConfigsSynonym *s;

	if (a->n == a->cap) {
		int cap = a->cap ? a->cap * 2 : 4;

		if ((s = rn_arena_alloc(&a->c->arena, sizeof(*s) *
		    (size_t)cap)) == NULL) {
			a->nomem = true;
			return;
		}
		if (a->n > 0)
			memcpy(s, a->v, sizeof(*s) * (size_t)a->n);
		a->v = s;
		a->cap = cap;
	}
	s = &a->v[a->n++];
	rn_DescribeConfigsResponse_DescribeConfigsSynonym_init(s);
	s->name = rn_kstr_c(name);
	s->value = arena_str(a->c, value);
	s->source = (int8_t)source;
}

/* One entry: the topic's config (t != NULL) or this broker's key. */
static int
describe_entry(struct net *n, struct conn *c, const struct rn_mdv_topic *t,
    bool cluster_default, const struct rn_kcfg *k, bool synonyms,
    struct rn_DescribeConfigsResponse_DescribeConfigsResourceResult *e)
{
	struct rn_mdv_cfgsrc src = { &n->view, n->cfg };
	struct syn_acc acc = { .c = c };
	struct rn_kcfg_value val;
	char buf[64];

	if (t != NULL)
		rn_kcfg_topic_value(k, rn_mdview_topic_override(t, k->name),
		    rn_mdview_cfg_get, &src, synonyms ? syn_add : NULL, &acc,
		    &val, buf, sizeof(buf));
	else
		rn_kcfg_broker_value(k, cluster_default, rn_mdview_cfg_get,
		    &src, synonyms ? syn_add : NULL, &acc, &val);
	if (acc.nomem)
		return -ENOMEM;
	rn_DescribeConfigsResponse_DescribeConfigsResourceResult_init(e);
	e->name = rn_kstr_c(k->name);
	e->value = rn_kcfg_sensitive(k) ? rn_kstr_c(NULL) :
	    arena_str(c, val.value);
	/* Kafka: topic configs are editable, broker ones if dynamic */
	e->read_only = t == NULL && !(k->flags & RN_KCFG_DYNAMIC);
	e->config_source = (int8_t)val.source;
	e->is_default = val.source == RN_CFGSRC_DEFAULT_CONFIG;
	e->is_sensitive = rn_kcfg_sensitive(k);
	e->config_type = (int8_t)k->type;
	e->synonyms = acc.v;
	e->synonyms_count = acc.n;
	return 0;
}

static int
describe_resource(struct net *n, struct conn *c, bool synonyms,
    const struct rn_DescribeConfigsRequest_DescribeConfigsResource *res,
    struct rn_DescribeConfigsResponse_DescribeConfigsResult *out)
{
	const struct rn_mdview *v = &n->view;
	const struct rn_mdv_topic *t = NULL;
	const struct rn_kcfg *tab = rn_kcfg_topic;
	size_t count = rn_kcfg_topic_n, i;
	bool dflt = false;
	int k = 0;

	out->resource_type = res->resource_type;
	out->resource_name = res->resource_name;
	/* DESCRIBE_CONFIGS on the topic, or on the cluster for a broker */
	if (res->resource_type == RESOURCE_TOPIC ? !net_authorized(n, c,
	    RN_ACL_OP_DESCRIBE_CONFIGS, RN_ACL_RES_TOPIC,
	    res->resource_name.ptr, res->resource_name.len > 0 ?
	    (size_t)res->resource_name.len : 0) :
	    res->resource_type == RESOURCE_BROKER && !net_authorized_cluster(n,
	    c, RN_ACL_OP_DESCRIBE_CONFIGS)) {
		out->error_code = res->resource_type == RESOURCE_TOPIC ?
		    RN_KERR_TOPIC_AUTHORIZATION_FAILED :
		    RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		return 0;
	}
	if (res->resource_type == RESOURCE_TOPIC) {
		t = rn_mdview_topic(v, res->resource_name.ptr,
		    (size_t)(res->resource_name.len > 0 ? res->resource_name.len : 0));
		if (t == NULL) {
			out->error_code = RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
			out->error_message = rn_kstr_c("Topic does not exist");
			return 0;
		}
	} else if (res->resource_type == RESOURCE_BROKER) {
		char id[16];

		snprintf(id, sizeof(id), "%d", n->cfg->node_id);
		if (res->resource_name.len > 0 &&
		    !rn_kstr_eq(res->resource_name, id)) {
			out->error_code = RN_KERR_INVALID_REQUEST;
			out->error_message = rn_kstr_c(
			    "A broker describes only its own configs");
			return 0;
		}
		/* the empty name: the cluster-wide dynamic defaults set */
		dflt = res->resource_name.len <= 0;
		tab = rn_kcfg_broker;
		count = rn_kcfg_broker_n;
	} else {
		out->error_code = RN_KERR_INVALID_REQUEST;
		out->error_message = rn_kstr_c("Unsupported resource type");
		return 0;
	}
	out->configs = rn_arena_alloc(&c->arena,
	    sizeof(*out->configs) * count);
	if (out->configs == NULL)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		if ((tab[i].flags & RN_KCFG_INTERNAL) ||
		    !key_wanted(res, tab[i].name))
			continue;
		if (dflt && rn_mdview_cfg_get(&(struct rn_mdv_cfgsrc){ v,
		    n->cfg }, RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG,
		    tab[i].name) == NULL)
			continue;
		if (describe_entry(n, c, t, dflt, &tab[i], synonyms,
		    &out->configs[k]) != 0)
			return -ENOMEM;
		k++;
	}
	out->configs_count = k;
	return 0;
}

int
net_describe_configs(struct net *n, struct conn *c)
{
	const struct rn_DescribeConfigsRequest *req = c->req;
	struct rn_DescribeConfigsResponse r;
	int i;

	rn_DescribeConfigsResponse_init(&r);
	r.results_count = req->resources_count;
	r.results = net_array(c, req->resources_count, sizeof(*r.results));
	if (r.results == NULL)
		return -ENOMEM;
	for (i = 0; i < req->resources_count; i++) {
		rn_DescribeConfigsResponse_DescribeConfigsResult_init(&r.results[i]);
		if (describe_resource(n, c, c->hdr.api_version >= 1 &&
		    req->include_synonyms, &req->resources[i], &r.results[i]) != 0)
			return -ENOMEM;
	}
	return net_respond(n, c, &r);
}
