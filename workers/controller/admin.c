/*
 * The admin APIs the controller answers (forwarded by the network workers
 * as RN_IPC_ADMIN_REQUEST, or from another node's connection) and topic
 * auto-creation: CreateTopics, DeleteTopics, CreatePartitions,
 * AlterConfigs and IncrementalAlterConfigs, with the replica placement
 * and effective topic configs they need. Each validates against the
 * applied state and builds records; op.c queues them, runs one at a time
 * and answers once the records are committed, applied and published.
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




/* ---- small helpers -------------------------------------------------- */

/* A record about one topic, with TOPIC= for journalctl. */
static void
log_topic(int prio, struct rn_kstr name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
log_topic(int prio, struct rn_kstr name, const char *fmt, ...)
{
	char topic[CTL_TOPIC_NAME_MAX + 1], msg[1024];
	va_list ap;

	/* a name too long to be a topic's is cut (CreateTopics refuses it) */
	snprintf(topic, sizeof(topic), "%.*s",
	    (int)(name.len > 0 ? name.len : 0), name.len > 0 ? name.ptr : "");
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rn_log_about(prio, rn_subj_topic(topic), "%s", msg);
}

#define MSG_MAX CTL_OP_MSG_MAX
#define op_msg ctl_op_msg
#define op_str ctl_op_str
#define kstr_copy ctl_kstr_copy

/* Kafka's topic name rules; message in Kafka's words. */
static bool
topic_name_valid(struct rn_kstr name, char *why, size_t len)
{
	int32_t i;

	if (name.len <= 0) {
		snprintf(why, len, "Topic name is invalid: the empty string is "
		    "not allowed");
		return false;
	}
	if (name.len == 1 && name.ptr[0] == '.') {
		snprintf(why, len, "Topic name is invalid: '.' is not allowed");
		return false;
	}
	if (name.len == 2 && name.ptr[0] == '.' && name.ptr[1] == '.') {
		snprintf(why, len, "Topic name is invalid: '..' is not "
		    "allowed");
		return false;
	}
	if (name.len > CTL_TOPIC_NAME_MAX) {
		snprintf(why, len, "Topic name is invalid: the length of "
		    "'%.*s' is longer than the max allowed length %d",
		    (int)name.len, name.ptr, CTL_TOPIC_NAME_MAX);
		return false;
	}
	for (i = 0; i < name.len; i++) {
		char ch = name.ptr[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		    ch == '-')) {
			snprintf(why, len, "Topic name is invalid: '%.*s' "
			    "contains one or more characters other than ASCII "
			    "alphanumerics, '.', '_' and '-'", (int)name.len,
			    name.ptr);
			return false;
		}
	}
	return true;
}

static bool
names_collide(struct rn_kstr a, struct rn_kstr b)
{
	int32_t i;

	if (a.len != b.len)
		return false;
	for (i = 0; i < a.len; i++) {
		char x = a.ptr[i] == '.' ? '_' : a.ptr[i];
		char y = b.ptr[i] == '.' ? '_' : b.ptr[i];

		if (x != y)
			return false;
	}
	return true;
}

/*
 * The names of one request, hashed so that a request naming thousands of
 * topics checks duplicates and collisions in O(1) each: entries are
 * indexes into names (+1), chained by ctl_topic_name_hash.
 */
struct nameidx {
	const struct rn_kstr *names;
	int32_t *slots;
	uint32_t mask;
};

static int
nameidx_init(struct ctl_op *op, struct nameidx *x,
    const struct rn_kstr *names, int32_t count)
{
	uint32_t cap = 16;

	while (cap < 2 * (uint32_t)(count > 0 ? count : 1))
		cap *= 2;
	x->names = names;
	x->mask = cap - 1;
	x->slots = rn_arena_alloc(&op->arena, sizeof(*x->slots) * cap);
	if (x->slots == NULL)
		return -ENOMEM;
	memset(x->slots, 0, sizeof(*x->slots) * cap);
	return 0;
}

static uint32_t
nameidx_hash(struct rn_kstr n)
{
	return ctl_topic_name_hash(n.ptr, (size_t)(n.len > 0 ? n.len : 0));
}

static void
nameidx_add(struct nameidx *x, int32_t i)
{
	uint32_t k;

	for (k = nameidx_hash(x->names[i]) & x->mask; x->slots[k] != 0;
	    k = (k + 1) & x->mask)
		;
	x->slots[k] = i + 1;
}

/* A name added earlier that equals name (exact) or collides with it. */
static const struct rn_kstr *
nameidx_find(const struct nameidx *x, struct rn_kstr name, bool exact)
{
	uint32_t k;
	int32_t e;

	for (k = nameidx_hash(name) & x->mask; (e = x->slots[k]) != 0;
	    k = (k + 1) & x->mask) {
		const struct rn_kstr *o = &x->names[e - 1];

		if (exact ? o->len == name.len && memcmp(o->ptr, name.ptr,
		    (size_t)(name.len > 0 ? name.len : 0)) == 0 :
		    names_collide(*o, name))
			return o;
	}
	return NULL;
}

/* ---- CreateTopics --------------------------------------------------- */

struct new_topic {
	struct rn_kstr name;
	const struct rn_CreateTopicsRequest_CreatableTopic *req;
	int32_t np, rf;
	int32_t *replicas;       /* np * rf */
};

/* The name: valid, new, and colliding with no topic nor earlier request. */
static int16_t
create_check_name(struct ctl_op *op,
    const struct rn_CreateTopicsRequest_CreatableTopic *t,
    const struct nameidx *earlier, struct rn_kstr *msg)
{
	const struct ctl_state *st = &op->c->st;
	const struct ctl_topic *other;
	const struct rn_kstr *prev;
	char why[MSG_MAX];

	if (!topic_name_valid(t->name, why, sizeof(why))) {
		*msg = op_msg(op, "%s", why);
		return RN_KERR_INVALID_TOPIC_EXCEPTION;
	}
	if (ctl_state_topic(st, t->name.ptr, (size_t)t->name.len) != NULL) {
		*msg = op_msg(op, "Topic '%.*s' already exists.",
		    (int)t->name.len, t->name.ptr);
		return RN_KERR_TOPIC_ALREADY_EXISTS;
	}
	if ((other = ctl_state_topic_collision(st, t->name.ptr,
	    (size_t)t->name.len)) != NULL) {
		*msg = op_msg(op, "Topic '%.*s' collides with existing topic: "
		    "%s", (int)t->name.len, t->name.ptr, other->name);
		return RN_KERR_INVALID_TOPIC_EXCEPTION;
	}
	if ((prev = nameidx_find(earlier, t->name, false)) != NULL) {
		*msg = op_msg(op, "Topic '%.*s' collides with existing topic: "
		    "%.*s", (int)t->name.len, t->name.ptr, (int)prev->len,
		    prev->ptr);
		return RN_KERR_INVALID_TOPIC_EXCEPTION;
	}
	return 0;
}

/* Every config named is a topic config, with a valid value. */
static int16_t
create_check_configs(struct ctl_op *op,
    const struct rn_CreateTopicsRequest_CreatableTopic *t,
    struct rn_kstr *msg)
{
	char why[MSG_MAX], key[256], val[4096];
	int32_t i;

	for (i = 0; i < t->configs_count; i++) {
		const struct rn_kcfg *d;

		if (!kstr_copy(t->configs[i].name, key, sizeof(key)) ||
		    (d = rn_kcfg_topic_find(key)) == NULL) {
			*msg = op_msg(op, "Unknown topic config name: %.*s",
			    (int)(t->configs[i].name.len > 0 ?
			    t->configs[i].name.len : 0),
			    t->configs[i].name.ptr);
			return RN_KERR_INVALID_CONFIG;
		}
		if (t->configs[i].value.len < 0) {
			*msg = op_msg(op, "Null value not supported for topic "
			    "configs: %s", key);
			return RN_KERR_INVALID_CONFIG;
		}
		if (!kstr_copy(t->configs[i].value, val, sizeof(val)) ||
		    rn_kcfg_validate(d, val, why, sizeof(why)) != 0) {
			*msg = op_msg(op, "%s", why);
			return RN_KERR_INVALID_CONFIG;
		}
	}
	return 0;
}

/* A manual assignment: one entry per partition 0..n-1, each checked. */
static int16_t
create_manual(struct ctl_op *op,
    const struct rn_CreateTopicsRequest_CreatableTopic *t, int32_t *np,
    int32_t *rf, int32_t **replicas, struct rn_kstr *msg)
{
	int32_t i, j;
	int16_t e;

	if (*rf != -1) {
		*msg = op_msg(op, "A manual partition assignment was "
		    "specified, but replication factor was not set to -1.");
		return RN_KERR_INVALID_REQUEST;
	}
	if (*np != -1) {
		*msg = op_msg(op, "A manual partition assignment was "
		    "specified, but numPartitions was not set to -1.");
		return RN_KERR_INVALID_REQUEST;
	}
	*np = t->assignments_count;
	*rf = t->assignments[0].broker_ids_count;
	if (*rf > 64)
		*rf = 64;
	*replicas = rn_arena_alloc(&op->arena, sizeof(int32_t) *
	    (size_t)*np * (size_t)(*rf > 0 ? *rf : 1));
	if (*replicas == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	for (i = 0; i < *np; i++) {
		const struct rn_CreateTopicsRequest_CreatableReplicaAssignment
		    *a = NULL;

		for (j = 0; j < t->assignments_count; j++)
			if (t->assignments[j].partition_index == i) {
				if (a != NULL) {
					*msg = op_msg(op, "Found multiple manual "
					    "partition assignments for "
					    "partition %d", i);
					return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
				}
				a = &t->assignments[j];
			}
		if (a == NULL) {
			*msg = op_msg(op, "partitions should be a "
			    "consecutive 0-based integer sequence");
			return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
		}
		if ((e = ctl_place_check_manual(op, &op->c->st, a->broker_ids,
		    a->broker_ids_count, *rf, msg)) != 0)
			return e;
		memcpy(&(*replicas)[i * *rf], a->broker_ids,
		    sizeof(int32_t) * (size_t)*rf);
	}
	return 0;
}

/* The topic's own min.insync.replicas in the request, else the default. */
static int
create_min_isr(struct ctl_op *op,
    const struct rn_CreateTopicsRequest_CreatableTopic *t)
{
	char val[64];
	int32_t i;

	for (i = t->configs_count - 1; i >= 0; i--)
		if (rn_kstr_eq(t->configs[i].name, "min.insync.replicas") &&
		    kstr_copy(t->configs[i].value, val, sizeof(val)))
			return ctl_topic_min_isr(op->c, val);
	return ctl_topic_min_isr(op->c, NULL);
}

/* Counts from the request or the broker defaults, placed like Kafka. */
static int16_t
create_auto(struct ctl_op *op,
    const struct rn_CreateTopicsRequest_CreatableTopic *t, int32_t *np,
    int32_t *rf, int32_t **replicas, struct rn_kstr *msg)
{
	const struct rn_config *cfg = op->c->cfg;

	if (*rf < -1 || *rf == 0) {
		*msg = op_msg(op, "Replication factor must be larger "
		    "than 0, or -1 to use the default value.");
		return RN_KERR_INVALID_REPLICATION_FACTOR;
	}
	if (*np < -1 || *np == 0) {
		*msg = op_msg(op, "Number of partitions was set to an "
		    "invalid non-positive value.");
		return RN_KERR_INVALID_PARTITIONS;
	}
	if (*np == -1)
		*np = cfg->num_partitions;
	if (*rf == -1)
		*rf = cfg->default_replication_factor;
	*replicas = rn_arena_alloc(&op->arena, sizeof(int32_t) *
	    (size_t)*np * (size_t)*rf);
	if (*replicas == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	return ctl_place_new(op, *np, *rf, 0, create_min_isr(op, t),
	    *replicas, msg);
}

/* The topic's records: the topic, its configs, then its partitions. */
static void
create_records(struct ctl_op *op, struct ctl_placer *pl,
    const struct rn_CreateTopicsRequest_CreatableTopic *t,
    const uint8_t tid[16], int32_t np, int32_t rf, const int32_t *replicas)
{
	char key[256], val[4096], name[CTL_TOPIC_NAME_MAX + 1];
	int32_t i;

	kstr_copy(t->name, name, sizeof(name)); /* checked: it fits */
	ctl_rec_topic(&op->batch, t->name.ptr, (size_t)t->name.len, tid);
	/* configs go between the topic and its partitions, as in Kafka */
	for (i = 0; i < t->configs_count; i++) {
		kstr_copy(t->configs[i].name, key, sizeof(key));
		kstr_copy(t->configs[i].value, val, sizeof(val));
		ctl_rec_config(&op->batch, CTL_RES_TOPIC, t->name.ptr,
		    (size_t)t->name.len, key, val);
	}
	for (i = 0; i < np; i++)
		ctl_place_record(&op->batch, pl, name, tid, i,
		    &replicas[i * rf], rf);
}

static int16_t
create_one(struct ctl_op *op, struct ctl_placer *pl,
    const struct rn_CreateTopicsRequest_CreatableTopic *t,
    struct rn_CreateTopicsResponse_CreatableTopicResult *res,
    const struct nameidx *earlier, struct rn_kstr *msg)
{
	int32_t np = t->num_partitions, rf = t->replication_factor;
	int32_t *replicas = NULL;
	uint8_t tid[16];
	int16_t e;

	if ((e = create_check_name(op, t, earlier, msg)) != 0 ||
	    (e = create_check_configs(op, t, msg)) != 0)
		return e;
	if (t->assignments_count > 0)
		e = create_manual(op, t, &np, &rf, &replicas, msg);
	else
		e = create_auto(op, t, &np, &rf, &replicas, msg);
	if (e != 0 ||
	    (e = ctl_place_check_slots(op, replicas, np * rf, msg)) != 0)
		return e;
	if (ctl_uuid_random(tid) != 0)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	memcpy(res->topic_id.b, tid, 16);
	res->num_partitions = np;
	res->replication_factor = (int16_t)rf;
	if (op->ver >= 5 && (e = ctl_created_configs(op, t, res)) != 0)
		return e;
	if (op->validate_only)
		return 0;
	create_records(op, pl, t, tid, np, rf, replicas);
	return 0;
}

int
ctl_op_create_topics(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_CreateTopicsRequest req;
	struct rn_CreateTopicsResponse *resp = &op->resp.ct;
	struct rn_kstr *created, *names;
	struct nameidx made, seen;
	struct ctl_placer pl;
	int n_created = 0, rc;
	int32_t i;

	if ((rc = rn_CreateTopicsRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	op->validate_only = req.validate_only;
	memset(&pl, 0, sizeof(pl));
	pl.st = &op->c->st;
	pl.arena = &op->arena;
	rn_CreateTopicsResponse_init(resp);
	resp->topics_count = req.topics_count;
	resp->topics = rn_arena_alloc(&op->arena, sizeof(*resp->topics) *
	    (size_t)(req.topics_count > 0 ? req.topics_count : 1));
	created = rn_arena_alloc(&op->arena, sizeof(*created) *
	    (size_t)(req.topics_count > 0 ? req.topics_count : 1));
	names = rn_arena_alloc(&op->arena, sizeof(*names) *
	    (size_t)(req.topics_count > 0 ? req.topics_count : 1));
	if (resp->topics == NULL || created == NULL || names == NULL ||
	    nameidx_init(op, &made, created, req.topics_count) != 0 ||
	    nameidx_init(op, &seen, names, req.topics_count) != 0)
		return -ENOMEM;
	for (i = 0; i < req.topics_count; i++)
		names[i] = req.topics[i].name;
	for (i = 0; i < req.topics_count; i++) {
		struct rn_CreateTopicsResponse_CreatableTopicResult *res =
		    &resp->topics[i];
		struct rn_kstr msg = { NULL, -1 };
		int16_t e = 0;

		rn_CreateTopicsResponse_CreatableTopicResult_init(res);
		res->name = req.topics[i].name;
		res->error_message.len = -1;
		if (nameidx_find(&seen, names[i], true) != NULL) {
			e = RN_KERR_INVALID_REQUEST;
			msg = op_msg(op, "Duplicate topic name.");
		}
		nameidx_add(&seen, i);
		if (e == 0)
			e = create_one(op, &pl, &req.topics[i], res, &made,
			    &msg);
		res->error_code = e;
		res->error_message = msg;
		if (e != 0) {
			memset(&res->topic_id, 0, sizeof(res->topic_id));
			res->num_partitions = -1;
			res->replication_factor = -1;
			res->configs_count = 0;
			res->configs = NULL;
			log_topic(LOG_INFO, res->name, "CreateTopics %.*s: %s "
			    "(%.*s)", (int)res->name.len, res->name.ptr,
			    rn_kerr_name(e), (int)(msg.len > 0 ? msg.len : 0),
			    msg.ptr);
		} else {
			created[n_created] = req.topics[i].name;
			nameidx_add(&made, n_created++);
			log_topic(LOG_INFO, res->name, "CreateTopics %.*s: %d "
			    "partition(s), replication factor %d%s",
			    (int)res->name.len,
			    res->name.ptr, res->num_partitions,
			    res->replication_factor, op->validate_only ?
			    " (validate only)" : "");
		}
	}
	return 0;
}

/* ---- auto-creation (no reply) ---------------------------------------- */

bool
ctl_auto_create_entry(struct ctl_op *op, const msgpack_object *o,
    struct rn_CreateTopicsRequest_CreatableTopic *t)
{
	const msgpack_object *name, *cf;
	uint32_t i;

	memset(t, 0, sizeof(*t));
	t->num_partitions = -1;
	t->replication_factor = -1;
	if (o->type == MSGPACK_OBJECT_STR) {
		if (!op->c->cfg->auto_create_topics_enable)
			return false;
		t->name.ptr = o->via.str.ptr;
		t->name.len = (int32_t)o->via.str.size;
		return true;
	}
	/* an internal topic's own settings, whatever auto-creation says */
	if (o->type != MSGPACK_OBJECT_MAP ||
	    (name = rn_mp_get(o, "name")) == NULL ||
	    name->type != MSGPACK_OBJECT_STR)
		return false;
	t->name.ptr = name->via.str.ptr;
	t->name.len = (int32_t)name->via.str.size;
	t->num_partitions = (int32_t)rn_mp_get_int(o, "partitions", -1);
	t->replication_factor = (int16_t)rn_mp_get_int(o, "rf", -1);
	if ((cf = rn_mp_get(o, "configs")) == NULL ||
	    cf->type != MSGPACK_OBJECT_MAP || cf->via.map.size == 0)
		return true;
	t->configs = rn_arena_alloc(&op->arena, sizeof(*t->configs) *
	    cf->via.map.size);
	if (t->configs == NULL)
		return false;
	for (i = 0; i < cf->via.map.size; i++) {
		const msgpack_object_kv *kv = &cf->via.map.ptr[i];

		if (kv->key.type != MSGPACK_OBJECT_STR ||
		    kv->val.type != MSGPACK_OBJECT_STR)
			continue;
		t->configs[t->configs_count].name.ptr = kv->key.via.str.ptr;
		t->configs[t->configs_count].name.len =
		    (int32_t)kv->key.via.str.size;
		t->configs[t->configs_count].value.ptr = kv->val.via.str.ptr;
		t->configs[t->configs_count++].value.len =
		    (int32_t)kv->val.via.str.size;
	}
	return true;
}

int
ctl_op_auto_create(struct ctl_op *op)
{
	struct ctl *c = op->c;
	msgpack_unpacked up;
	const msgpack_object *a;
	struct rn_CreateTopicsRequest_CreatableTopic t;
	struct rn_CreateTopicsResponse_CreatableTopicResult res;
	struct rn_kstr *done;
	struct nameidx made;
	struct ctl_placer pl;
	uint32_t i;
	int n_done = 0;

	msgpack_unpacked_init(&up);
	if (msgpack_unpack_next(&up, (const char *)op->body, op->len, NULL) !=
	    MSGPACK_UNPACK_SUCCESS || (a = rn_mp_get(&up.data, "topics")) ==
	    NULL || a->type != MSGPACK_OBJECT_ARRAY) {
		msgpack_unpacked_destroy(&up);
		return 0;
	}
	memset(&pl, 0, sizeof(pl));
	pl.st = &c->st;
	pl.arena = &op->arena;
	done = rn_arena_alloc(&op->arena, sizeof(*done) *
	    (a->via.array.size + 1));
	if (done != NULL && nameidx_init(op, &made, done,
	    (int32_t)a->via.array.size) != 0)
		done = NULL;
	for (i = 0; done != NULL && i < a->via.array.size; i++) {
		const msgpack_object *o = &a->via.array.ptr[i];
		struct rn_kstr msg = { NULL, -1 };
		int16_t e;

		if (!ctl_auto_create_entry(op, o, &t))
			continue;
		if (nameidx_find(&made, t.name, true) != NULL)
			continue;
		rn_CreateTopicsResponse_CreatableTopicResult_init(&res);
		e = create_one(op, &pl, &t, &res, &made, &msg);
		if (e == RN_KERR_TOPIC_ALREADY_EXISTS)
			continue;
		if (e != 0) {
			log_topic(LOG_WARNING, t.name, "auto-creating topic "
			    "%.*s: %s (%.*s)", (int)t.name.len, t.name.ptr,
			    rn_kerr_name(e), (int)(msg.len > 0 ? msg.len : 0),
			    msg.ptr);
			continue;
		}
		/* the name must outlive the unpacked message */
		done[n_done] = op_msg(op, "%.*s", (int)t.name.len,
		    t.name.ptr);
		nameidx_add(&made, n_done++);
		log_topic(LOG_INFO, t.name, "auto-creating topic %.*s",
		    (int)t.name.len, t.name.ptr);
	}
	msgpack_unpacked_destroy(&up);
	return 0;
}

/* ---- DeleteTopics --------------------------------------------------- */

int
ctl_op_delete_topics(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_DeleteTopicsRequest req;
	struct rn_DeleteTopicsResponse *resp = &op->resp.dt;
	const struct ctl_state *st = &op->c->st;
	uint8_t (*removed)[16];
	int32_t i, n, n_removed = 0, k;
	int rc;

	if ((rc = rn_DeleteTopicsRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	n = op->ver >= 6 ? req.topics_count : req.topic_names_count;
	rn_DeleteTopicsResponse_init(resp);
	resp->responses_count = n;
	resp->responses = rn_arena_alloc(&op->arena,
	    sizeof(*resp->responses) * (size_t)(n > 0 ? n : 1));
	removed = rn_arena_alloc(&op->arena, 16 * (size_t)(n > 0 ? n : 1));
	if (resp->responses == NULL || removed == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct rn_DeleteTopicsResponse_DeletableTopicResult *res =
		    &resp->responses[i];
		struct rn_kstr name = op->ver >= 6 ? req.topics[i].name :
		    req.topic_names[i];
		const struct ctl_topic *t = NULL;
		bool by_id = op->ver >= 6 && name.len < 0;

		rn_DeleteTopicsResponse_DeletableTopicResult_init(res);
		res->name = name;
		res->error_message.len = -1;
		if (op->ver >= 6 && name.len >= 0 &&
		    !rn_uuid_is_zero(&req.topics[i].topic_id)) {
			res->error_code = RN_KERR_INVALID_REQUEST;
			res->error_message = op_msg(op, "You may not specify "
			    "both topic name and topic id.");
			continue;
		}
		if (by_id) {
			res->topic_id = req.topics[i].topic_id;
			t = ctl_state_topic_by_id(st, req.topics[i].topic_id.b);
			if (t == NULL) {
				res->error_code = RN_KERR_UNKNOWN_TOPIC_ID;
				continue;
			}
			res->name = op_str(op, t->name);
		} else {
			if (name.len > 0)
				t = ctl_state_topic(st, name.ptr,
				    (size_t)name.len);
			if (t == NULL) {
				res->error_code =
				    RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			memcpy(res->topic_id.b, t->id, 16);
		}
		for (k = 0; k < n_removed; k++)
			if (memcmp(removed[k], t->id, 16) == 0)
				break;
		if (k < n_removed)
			continue; /* named twice: one record */
		memcpy(removed[n_removed++], t->id, 16);
		ctl_rec_remove_topic(&op->batch, t->id);
		log_topic(LOG_INFO, rn_kstr_c(t->name), "DeleteTopics %s",
		    t->name);
	}
	return 0;
}

/* ---- CreatePartitions ----------------------------------------------- */

/* Replicas per partition of a topic grown: as its first partition's. */
static int32_t
grow_rf(const struct ctl_topic *t)
{
	int32_t rf = t->n_parts > 0 ? t->parts[0].n_replicas : 1;

	return rf > 64 ? 64 : rf;
}

/* Topic i of the request: named once, known, grown, assignments fit. */
static int16_t
grow_check(struct ctl_op *op, const struct rn_CreatePartitionsRequest *req,
    int32_t i, const struct ctl_topic **out, struct rn_kstr *msg)
{
	const struct rn_CreatePartitionsRequest_CreatePartitionsTopic *tp =
	    &req->topics[i];
	const struct ctl_topic *t;
	int32_t j, cur, add;
	int16_t e = 0;

	for (j = 0; j < i; j++)
		if (req->topics[j].name.len == tp->name.len &&
		    memcmp(req->topics[j].name.ptr, tp->name.ptr,
		    (size_t)tp->name.len) == 0) {
			e = RN_KERR_INVALID_REQUEST;
			*msg = op_msg(op, "Duplicate topic name.");
		}
	if (e != 0)
		return e;
	t = tp->name.len > 0 ? ctl_state_topic(&op->c->st, tp->name.ptr,
	    (size_t)tp->name.len) : NULL;
	if (t == NULL) {
		*msg = op_msg(op, "This server does not host this "
		    "topic-partition.");
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	cur = t->n_parts;
	if (tp->count == cur) {
		*msg = op_msg(op, "Topic already has %d partition(s).", cur);
		return RN_KERR_INVALID_PARTITIONS;
	} else if (tp->count < cur) {
		*msg = op_msg(op, "The topic %s currently has %d "
		    "partition(s); %d would not be an increase.",
		    t->name, cur, tp->count);
		return RN_KERR_INVALID_PARTITIONS;
	}
	add = tp->count - cur;
	if (tp->assignments_count >= 0 && tp->assignments != NULL &&
	    tp->assignments_count != add) {
		*msg = op_msg(op, "Attempted to add %d additional "
		    "partition(s), but only %d assignment(s) were "
		    "specified.", add, tp->assignments_count);
		return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	*out = t;
	return 0;
}

/* The new partitions' replicas: as assigned, or placed like Kafka. */
static int16_t
grow_place(struct ctl_op *op,
    const struct rn_CreatePartitionsRequest_CreatePartitionsTopic *tp,
    const struct ctl_topic *t, int32_t **out, struct rn_kstr *msg)
{
	const struct ctl_state *st = &op->c->st;
	int32_t cur = t->n_parts, add = tp->count - cur, rf = grow_rf(t), j;
	int32_t *replicas;
	int16_t e = 0;

	replicas = rn_arena_alloc(&op->arena,
	    sizeof(int32_t) * (size_t)add * (size_t)rf);
	if (replicas == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	if (tp->assignments != NULL && tp->assignments_count > 0) {
		for (j = 0; j < add && e == 0; j++) {
			e = ctl_place_check_manual(op, st,
			    tp->assignments[j].broker_ids,
			    tp->assignments[j].broker_ids_count, rf, msg);
			if (e == 0)
				memcpy(&replicas[j * rf],
				    tp->assignments[j].broker_ids,
				    sizeof(int32_t) * (size_t)rf);
		}
	} else
		e = ctl_place_new(op, add, rf, cur, ctl_topic_min_isr(op->c,
		    ctl_configs_get(&t->configs, "min.insync.replicas")),
		    replicas, msg);
	if (e == 0)
		e = ctl_place_check_slots(op, replicas, add * rf, msg);
	*out = replicas;
	return e;
}

int
ctl_op_create_partitions(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_CreatePartitionsRequest req;
	struct rn_CreatePartitionsResponse *resp = &op->resp.cp;
	struct ctl_placer pl;
	int32_t i, p;
	int rc;

	if ((rc = rn_CreatePartitionsRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	op->validate_only = req.validate_only;
	memset(&pl, 0, sizeof(pl));
	pl.st = &op->c->st;
	pl.arena = &op->arena;
	rn_CreatePartitionsResponse_init(resp);
	resp->results_count = req.topics_count;
	resp->results = rn_arena_alloc(&op->arena, sizeof(*resp->results) *
	    (size_t)(req.topics_count > 0 ? req.topics_count : 1));
	if (resp->results == NULL)
		return -ENOMEM;
	for (i = 0; i < req.topics_count; i++) {
		const struct rn_CreatePartitionsRequest_CreatePartitionsTopic
		    *tp = &req.topics[i];
		struct rn_CreatePartitionsResponse_CreatePartitionsTopicResult
		    *res = &resp->results[i];
		const struct ctl_topic *t = NULL;
		struct rn_kstr msg = { NULL, -1 };
		int32_t *replicas = NULL, cur, rf;
		int16_t e;

		rn_CreatePartitionsResponse_CreatePartitionsTopicResult_init(
		    res);
		res->name = tp->name;
		res->error_message.len = -1;
		if ((e = grow_check(op, &req, i, &t, &msg)) == 0)
			e = grow_place(op, tp, t, &replicas, &msg);
		res->error_code = e;
		res->error_message = msg;
		if (e != 0 || op->validate_only)
			continue;
		cur = t->n_parts;
		rf = grow_rf(t);
		for (p = 0; p < tp->count - cur; p++)
			ctl_place_record(&op->batch, &pl, t->name, t->id,
			    cur + p, &replicas[p * rf], rf);
		log_topic(LOG_INFO, tp->name, "CreatePartitions %s: %d -> %d",
		    t->name, cur, tp->count);
	}
	return 0;
}
