/*
 * Topic and broker configs on the controller: the effective config of a
 * topic (for CreateTopics v5+ and unclean.leader.election.enable), and
 * AlterConfigs / IncrementalAlterConfigs, validated against the catalogue
 * and written as ConfigRecords.
 */
#include "autoconf.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "storage/checkpoint.h"
#include "storage/logdir.h"
#include "common/placement.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"
#include "workers/controller/raft.h"
#include "workers/partition/partition.h"

#define MSG_MAX CTL_OP_MSG_MAX
#define op_msg ctl_op_msg
#define op_str ctl_op_str
#define kstr_copy ctl_kstr_copy

/* ---- effective topic configs (CreateTopics v5+) --------------------- */

struct ctl_cfgsrc {
	struct ctl *c;
	char node[16];
};

/* The dynamic levels from the applied metadata, static from the file. */
static const char *
ctl_cfg_get(void *arg, enum rn_config_source level, const char *key)
{
	struct ctl_cfgsrc *s = arg;

	switch (level) {
	case RN_CFGSRC_DYNAMIC_BROKER_CONFIG:
		return ctl_configs_get(ctl_state_broker_configs(&s->c->st,
		    s->node), key);
	case RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG:
		return ctl_configs_get(ctl_state_broker_configs(&s->c->st, ""),
		    key);
	case RN_CFGSRC_STATIC_BROKER_CONFIG:
		return rn_config_static(s->c->cfg, key);
	default:
		return NULL;
	}
}

static const char *
effective_config(struct ctl *c, const struct rn_kcfg *d,
    const char *override, int8_t *source, char *buf, size_t len)
{
	struct ctl_cfgsrc src = { .c = c };
	struct rn_kcfg_value out;

	snprintf(src.node, sizeof(src.node), "%d", c->cfg->node_id);
	rn_kcfg_topic_value(d, override, ctl_cfg_get, &src, NULL, NULL, &out,
	    buf, len);
	*source = (int8_t)out.source;
	return out.value;
}

/* CreateTopics v5+: every topic config with its value and source. */
int16_t
ctl_created_configs(struct ctl_op *op,
    const struct rn_CreateTopicsRequest_CreatableTopic *t,
    struct rn_CreateTopicsResponse_CreatableTopicResult *res)
{
	char val[4096];
	size_t k;
	int32_t i, n = 0;

	res->configs = rn_arena_alloc(&op->arena, sizeof(*res->configs) *
	    rn_kcfg_topic_n);
	if (res->configs == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	for (k = 0; k < rn_kcfg_topic_n; k++) {
		const struct rn_kcfg *d = &rn_kcfg_topic[k];
		struct rn_CreateTopicsResponse_CreatableTopicConfigs *o =
		    &res->configs[n];
		const char *ov = NULL;
		char buf[64];
		int8_t src;

		if (d->flags & RN_KCFG_INTERNAL)
			continue;
		for (i = 0; i < t->configs_count; i++)
			if (rn_kstr_eq(t->configs[i].name, d->name) &&
			    kstr_copy(t->configs[i].value, val, sizeof(val)))
				ov = val;
		rn_CreateTopicsResponse_CreatableTopicConfigs_init(o);
		o->name = rn_kstr_c(d->name);
		o->value = op_str(op, effective_config(op->c, d, ov, &src,
		    buf, sizeof(buf)));
		o->config_source = src;
		o->read_only = false;
		o->is_sensitive = rn_kcfg_sensitive(d);
		n++;
	}
	res->configs_count = n;
	return 0;
}

/* ---- AlterConfigs / IncrementalAlterConfigs -------------------------- */

#define OP_SET 0
#define OP_DELETE 1
#define OP_APPEND 2
#define OP_SUBTRACT 3

struct cfg_change {
	const char *key;          /* topic key, or broker key for brokers */
	const struct rn_kcfg *def;
	int op;
	char value[4096];
};

/*
 * Resolve a resource: the topic, or a broker resource name ("" or a node
 * id). 0, or an error code with msg.
 */
static int16_t
resolve_resource(struct ctl_op *op, int8_t type, struct rn_kstr name,
    const struct ctl_topic **t, char *bname, size_t blen,
    struct rn_kstr *msg)
{
	*t = NULL;
	if (type == CTL_RES_TOPIC) {
		if (name.len <= 0 || (*t = ctl_state_topic(&op->c->st,
		    name.ptr, (size_t)name.len)) == NULL) {
			*msg = op_msg(op, "Topic %.*s does not exist.",
			    (int)(name.len > 0 ? name.len : 0), name.ptr);
			return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
		}
		return 0;
	}
	if (type == CTL_RES_BROKER) {
		char *end;
		long id;

		if (!kstr_copy(name, bname, blen))
			bname[0] = '\0';
		if (bname[0] != '\0') {
			id = strtol(bname, &end, 10);
			if (*end != '\0' || id < 0 || id > INT32_MAX) {
				*msg = op_msg(op, "Invalid broker name %s",
				    bname);
				return RN_KERR_INVALID_REQUEST;
			}
		}
		return 0;
	}
	*msg = op_msg(op, "Unsupported resource type %d", type);
	return RN_KERR_INVALID_REQUEST;
}

/* Is item (n bytes) in the comma list? */
static bool
list_has(const char *list, const char *item, size_t n)
{
	const char *p = list, *e;

	for (; *p != '\0'; p = *e ? e + 1 : e) {
		e = strchr(p, ',');
		if (e == NULL)
			e = p + strlen(p);
		if ((size_t)(e - p) == n && strncmp(p, item, n) == 0)
			return true;
	}
	return false;
}

/*
 * APPEND/SUBTRACT on a list config, as Kafka's controller does it: from
 * the current value (or the default) add the items not yet there, or
 * drop the given ones. The result goes to out.
 */
static bool
list_apply(const char *base, const char *items, bool add, char *out,
    size_t outlen)
{
	const char *src, *p, *e;
	size_t len = 0;
	int pass;

	out[0] = '\0';
	for (pass = 0; pass < 2; pass++) {
		if (pass == 1 && !add)
			break;
		src = pass == 0 ? base : items;
		for (p = src; *p != '\0'; p = *e ? e + 1 : e) {
			size_t n;

			e = strchr(p, ',');
			if (e == NULL)
				e = p + strlen(p);
			n = (size_t)(e - p);
			if (n == 0 || list_has(out, p, n) || (!add &&
			    list_has(items, p, n)))
				continue;
			if (len + n + 2 > outlen)
				return false;
			if (len > 0)
				out[len++] = ',';
			memcpy(out + len, p, n);
			len += n;
			out[len] = '\0';
		}
	}
	return true;
}

/* What Kafka says for a broker key that cannot change at run time. */
static int16_t
check_broker_mode(struct ctl_op *op, const struct cfg_change *ch,
    bool listener, bool cluster_default, struct rn_kstr *msg)
{
	const struct rn_kcfg *d = ch->def;

	if (listener)
		return cluster_default ? (*msg = op_msg(op, "Cannot update "
		    "these configs at default cluster level, broker id must "
		    "be specified: Set(%s)", ch->key),
		    RN_KERR_INVALID_REQUEST) : 0;
	if (!(d->flags & RN_KCFG_DYNAMIC)) {
		*msg = op_msg(op, "Cannot update these configs dynamically: "
		    "Set(%s)", ch->key);
		return RN_KERR_INVALID_REQUEST;
	}
	if (d->flags & RN_KCFG_LISTENER_ONLY) {
		*msg = op_msg(op, "These security configs can be dynamically "
		    "updated only per-listener using the listener prefix: "
		    "Set(%s)", ch->key);
		return RN_KERR_INVALID_REQUEST;
	}
	if (cluster_default && (d->flags & RN_KCFG_PER_BROKER)) {
		*msg = op_msg(op, "Cannot update these configs at default "
		    "cluster level, broker id must be specified: Set(%s)",
		    ch->key);
		return RN_KERR_INVALID_REQUEST;
	}
	return 0;
}

/* Check one change against Kafka's catalogue; list edits become sets. */
static int16_t
check_change(struct ctl_op *op, int8_t type, struct cfg_change *ch,
    const struct ctl_configs *cur, bool cluster_default, struct rn_kstr *msg)
{
	char why[MSG_MAX], merged[sizeof(ch->value)];
	const char *base;
	bool listener = false;
	int16_t e;

	if (type == CTL_RES_TOPIC)
		ch->def = rn_kcfg_topic_find(ch->key);
	else if ((ch->def = rn_kcfg_broker_find(ch->key)) == NULL)
		listener = (ch->def = rn_kcfg_listener_find(ch->key)) != NULL;
	if (ch->def == NULL) {
		*msg = op_msg(op, "Unknown %s config name: %s", type ==
		    CTL_RES_TOPIC ? "topic" : "broker", ch->key);
		return RN_KERR_INVALID_CONFIG;
	}
	if (type != CTL_RES_TOPIC && ch->op != OP_DELETE && (e =
	    check_broker_mode(op, ch, listener, cluster_default, msg)) != 0)
		return e;
	if (ch->op == OP_DELETE)
		return 0;
	if ((ch->op == OP_APPEND || ch->op == OP_SUBTRACT) &&
	    ch->def->type != RN_KCFG_LIST) {
		*msg = op_msg(op, "Config value %s is not allowed for config "
		    "key: %s", ch->op == OP_APPEND ? "append" : "subtract",
		    ch->key);
		return RN_KERR_INVALID_CONFIG;
	}
	if (ch->op == OP_APPEND || ch->op == OP_SUBTRACT) {
		if ((base = ctl_configs_get(cur, ch->key)) == NULL)
			base = ch->def->dflt != NULL ? ch->def->dflt : "";
		if (!list_apply(base, ch->value, ch->op == OP_APPEND, merged,
		    sizeof(merged))) {
			*msg = op_msg(op, "Value of %s is too long", ch->key);
			return RN_KERR_INVALID_CONFIG;
		}
		strlcpy(ch->value, merged, sizeof(ch->value));
		ch->op = OP_SET;
	}
	if (rn_kcfg_validate(ch->def, ch->value, why, sizeof(why)) != 0) {
		*msg = op_msg(op, "%s", why);
		return RN_KERR_INVALID_CONFIG;
	}
	return 0;
}

/* Records for the resource's new config set. */
static void
emit_changes(struct ctl_op *op, int8_t type, const char *rname,
    const struct ctl_configs *cur, struct cfg_change *ch, int n,
    bool replace)
{
	int i, k;

	if (replace && cur != NULL)
		for (k = 0; k < cur->n; k++) {
			for (i = 0; i < n; i++)
				if (strcmp(ch[i].key, cur->v[k].key) == 0)
					break;
			if (i == n)
				ctl_rec_config(&op->batch, type, rname,
				    strlen(rname), cur->v[k].key, NULL);
		}
	for (i = 0; i < n; i++) {
		const char *old = ctl_configs_get(cur, ch[i].key);

		switch (ch[i].op) {
		case OP_DELETE:
			if (old != NULL)
				ctl_rec_config(&op->batch, type, rname,
				    strlen(rname), ch[i].key, NULL);
			break;
		default:
			if (old == NULL || strcmp(old, ch[i].value) != 0)
				ctl_rec_config(&op->batch, type, rname,
				    strlen(rname), ch[i].key, ch[i].value);
		}
	}
}

/* Shared by both APIs; results go in the (identically shaped) arrays. */
static int16_t
alter_resource(struct ctl_op *op, int8_t type, struct rn_kstr name,
    int32_t n, const struct rn_kstr *keys, const struct rn_kstr *values,
    const int8_t *ops, bool replace, struct rn_kstr *msg)
{
	const struct ctl_topic *t;
	const struct ctl_configs *cur;
	struct cfg_change *ch;
	char bname[32], rname[CTL_TOPIC_NAME_MAX + 1];
	int32_t i, j;
	int16_t e;

	if ((e = resolve_resource(op, type, name, &t, bname, sizeof(bname),
	    msg)) != 0)
		return e;
	if (type == CTL_RES_TOPIC) {
		strlcpy(rname, t->name, sizeof(rname));
		cur = &t->configs;
	} else {
		strlcpy(rname, bname, sizeof(rname));
		cur = ctl_state_broker_configs(&op->c->st, bname);
	}
	if ((ch = rn_arena_alloc(&op->arena, sizeof(*ch) *
	    (size_t)(n > 0 ? n : 1))) == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	for (i = 0; i < n; i++) {
		char *key = rn_arena_alloc(&op->arena, 256);

		if (key == NULL || !kstr_copy(keys[i], key, 256)) {
			*msg = op_msg(op, "Invalid config name");
			return RN_KERR_INVALID_REQUEST;
		}
		for (j = 0; j < i; j++)
			if (strcmp(ch[j].key, key) == 0) {
				*msg = op_msg(op, "Error due to duplicate config "
				    "keys");
				return RN_KERR_INVALID_REQUEST;
			}
		ch[i].key = key;
		ch[i].op = ops != NULL ? ops[i] : OP_SET;
		if (ch[i].op < OP_SET || ch[i].op > OP_SUBTRACT) {
			*msg = op_msg(op, "Unknown config operation %d",
			    ch[i].op);
			return RN_KERR_INVALID_REQUEST;
		}
		ch[i].value[0] = '\0';
		if (ch[i].op != OP_DELETE) {
			if (values[i].len < 0) {
				*msg = op_msg(op, "Null value not supported for "
				    "%s configs: %s", type == CTL_RES_TOPIC ?
				    "topic" : "broker", key);
				return RN_KERR_INVALID_CONFIG;
			}
			if (!kstr_copy(values[i], ch[i].value,
			    sizeof(ch[i].value))) {
				*msg = op_msg(op, "Value of %s is too long",
				    key);
				return RN_KERR_INVALID_CONFIG;
			}
		}
		if ((e = check_change(op, type, &ch[i], cur, type !=
		    CTL_RES_TOPIC && bname[0] == '\0', msg)) != 0)
			return e;
	}
	if (!op->validate_only)
		emit_changes(op, type, rname, cur, ch, n, replace);
	/* a broker's resource name is its id; "" the cluster default */
	rn_log_about(LOG_INFO, type == CTL_RES_TOPIC ? rn_subj_topic(rname) :
	    rn_subj_broker(rname[0] ? atoi(rname) : -1), "%s %s %s: %d "
	    "change(s)%s", replace ? "AlterConfigs" :
	    "IncrementalAlterConfigs", type == CTL_RES_TOPIC ? "topic" :
	    "broker", rname[0] ? rname : "(default)", n,
	    op->validate_only ? " (validate only)" : "");
	return 0;
}

int
ctl_op_alter_configs(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_AlterConfigsRequest req;
	struct rn_AlterConfigsResponse *resp = &op->resp.ac;
	int32_t i, k;
	int rc;

	if ((rc = rn_AlterConfigsRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	op->validate_only = req.validate_only;
	rn_AlterConfigsResponse_init(resp);
	resp->responses_count = req.resources_count;
	resp->responses = rn_arena_alloc(&op->arena, sizeof(*resp->responses) *
	    (size_t)(req.resources_count > 0 ? req.resources_count : 1));
	if (resp->responses == NULL)
		return -ENOMEM;
	for (i = 0; i < req.resources_count; i++) {
		const struct rn_AlterConfigsRequest_AlterConfigsResource *res =
		    &req.resources[i];
		struct rn_AlterConfigsResponse_AlterConfigsResourceResponse *o =
		    &resp->responses[i];
		struct rn_kstr msg = { NULL, -1 }, *keys, *vals;
		int32_t n = res->configs_count;

		rn_AlterConfigsResponse_AlterConfigsResourceResponse_init(o);
		o->resource_type = res->resource_type;
		o->resource_name = res->resource_name;
		keys = rn_arena_alloc(&op->arena, sizeof(*keys) *
		    (size_t)(n > 0 ? n : 1));
		vals = rn_arena_alloc(&op->arena, sizeof(*vals) *
		    (size_t)(n > 0 ? n : 1));
		if (keys == NULL || vals == NULL)
			return -ENOMEM;
		for (k = 0; k < n; k++) {
			keys[k] = res->configs[k].name;
			vals[k] = res->configs[k].value;
		}
		o->error_code = alter_resource(op, res->resource_type,
		    res->resource_name, n, keys, vals, NULL, true, &msg);
		o->error_message = msg;
	}
	return 0;
}

int
ctl_op_incremental_alter_configs(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_IncrementalAlterConfigsRequest req;
	struct rn_IncrementalAlterConfigsResponse *resp = &op->resp.iac;
	int32_t i, k;
	int rc;

	if ((rc = rn_IncrementalAlterConfigsRequest_decode(r, op->ver,
	    &op->arena, &req)) != 0)
		return rc;
	op->validate_only = req.validate_only;
	rn_IncrementalAlterConfigsResponse_init(resp);
	resp->responses_count = req.resources_count;
	resp->responses = rn_arena_alloc(&op->arena, sizeof(*resp->responses) *
	    (size_t)(req.resources_count > 0 ? req.resources_count : 1));
	if (resp->responses == NULL)
		return -ENOMEM;
	for (i = 0; i < req.resources_count; i++) {
		const struct rn_IncrementalAlterConfigsRequest_AlterConfigsResource
		    *res = &req.resources[i];
		struct rn_IncrementalAlterConfigsResponse_AlterConfigsResourceResponse
		    *o = &resp->responses[i];
		struct rn_kstr msg = { NULL, -1 }, *keys, *vals;
		int32_t n = res->configs_count;
		int8_t *ops;

		rn_IncrementalAlterConfigsResponse_AlterConfigsResourceResponse_init(o);
		o->resource_type = res->resource_type;
		o->resource_name = res->resource_name;
		keys = rn_arena_alloc(&op->arena, sizeof(*keys) *
		    (size_t)(n > 0 ? n : 1));
		vals = rn_arena_alloc(&op->arena, sizeof(*vals) *
		    (size_t)(n > 0 ? n : 1));
		ops = rn_arena_alloc(&op->arena, (size_t)(n > 0 ? n : 1));
		if (keys == NULL || vals == NULL || ops == NULL)
			return -ENOMEM;
		for (k = 0; k < n; k++) {
			keys[k] = res->configs[k].name;
			vals[k] = res->configs[k].value;
			ops[k] = res->configs[k].config_operation;
		}
		o->error_code = alter_resource(op, res->resource_type,
		    res->resource_name, n, keys, vals, ops, false, &msg);
		o->error_message = msg;
	}
	return 0;
}

/* A topic config's effective value: override, dynamic, static, default. */
static const char *
topic_value(struct ctl *c, const char *key, const char *override, char *buf,
    size_t len)
{
	const struct rn_kcfg *d = rn_kcfg_topic_find(key);
	int8_t src;

	if (d == NULL)
		return NULL;
	return effective_config(c, d, override, &src, buf, len);
}

bool
ctl_topic_unclean(struct ctl *c, const struct ctl_topic *t)
{
	const char *key = "unclean.leader.election.enable", *v;
	char buf[64];

	if (rn_kcfg_topic_find(key) == NULL)
		return c->cfg->unclean_leader_election_enable;
	v = topic_value(c, key, t != NULL ? ctl_configs_get(&t->configs, key) :
	    NULL, buf, sizeof(buf));
	return v != NULL && strcasecmp(v, "true") == 0;
}

int
ctl_topic_min_isr(struct ctl *c, const char *override)
{
	const char *v;
	char buf[64];
	long n;

	v = topic_value(c, "min.insync.replicas", override, buf, sizeof(buf));
	if (v == NULL || (n = strtol(v, NULL, 10)) < 1)
		return c->cfg->min_insync_replicas;
	return n > INT32_MAX ? INT32_MAX : (int)n;
}
