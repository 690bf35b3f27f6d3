/*
 * Client quotas in the metadata log: applying ClientQuota records, their
 * part of snapshots and of the image, and the AlterClientQuotas and
 * DescribeClientQuotas operations. The network workers enforce the byte
 * rates from the image (workers/network/quota.c).
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cquota.h"
#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage_write.h"
#include "protocol/kerrors.h"
#include "workers/controller/op.h"
#include "workers/controller/records.h"
#include "workers/controller/state.h"

#define CQ_NAME_MAX 256

/* An entity as the requests and records spell it. */
struct cq_entity {
	int8_t ukind, ckind;
	char user[CQ_NAME_MAX + 1], client[CQ_NAME_MAX + 1];
};

static void
quota_free(struct rn_cquota *q)
{
	free((char *)q->user);
	free((char *)q->client);
}

void
ctl_quotas_free(struct ctl_quotas *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		quota_free(&s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static bool
same_entity(const struct rn_cquota *q, const struct cq_entity *e)
{
	return q->ukind == e->ukind && q->ckind == e->ckind &&
	    strcmp(q->user, e->user) == 0 && strcmp(q->client, e->client) == 0;
}

static int
find(const struct ctl_quotas *s, const struct cq_entity *e, int key)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->v[i].key == key && same_entity(&s->v[i], e))
			return i;
	return -1;
}

/* One [type, name|nil] pair into e; false if it is not one. */
static bool
entity_part(struct cq_entity *e, const char *type, size_t tlen,
    const char *name, int nlen)
{
	int8_t *kind;
	char *out;

	if (tlen == 4 && memcmp(type, "user", 4) == 0) {
		kind = &e->ukind;
		out = e->user;
	} else if (tlen == 9 && memcmp(type, "client-id", 9) == 0) {
		kind = &e->ckind;
		out = e->client;
	} else
		return false;
	if (*kind != RN_CQ_NONE || nlen > CQ_NAME_MAX ||
	    (nlen > 0 && memchr(name, '\0', (size_t)nlen) != NULL))
		return false;
	if (nlen < 0) {
		*kind = RN_CQ_DEFAULT;
		return true;
	}
	*kind = RN_CQ_NAME;
	memcpy(out, name, (size_t)nlen);
	out[nlen] = '\0';
	return true;
}

int
ctl_quotas_apply(struct ctl_state *st, const msgpack_object *rec)
{
	struct ctl_quotas *s = &st->quotas;
	const msgpack_object *ent = rn_mp_get(rec, "entity");
	const msgpack_object *key = rn_mp_get(rec, "key");
	const msgpack_object *val = rn_mp_get(rec, "value");
	struct cq_entity e;
	struct rn_cquota q;
	uint32_t i;
	int k, at;

	memset(&e, 0, sizeof(e));
	if (ent == NULL || ent->type != MSGPACK_OBJECT_ARRAY ||
	    ent->via.array.size == 0 || key == NULL ||
	    key->type != MSGPACK_OBJECT_STR || val == NULL)
		goto bad;
	for (i = 0; i < ent->via.array.size; i++) {
		const msgpack_object *p = &ent->via.array.ptr[i];

		if (p->type != MSGPACK_OBJECT_ARRAY || p->via.array.size != 2 ||
		    p->via.array.ptr[0].type != MSGPACK_OBJECT_STR ||
		    (p->via.array.ptr[1].type != MSGPACK_OBJECT_STR &&
		    p->via.array.ptr[1].type != MSGPACK_OBJECT_NIL))
			goto bad;
		if (!entity_part(&e, p->via.array.ptr[0].via.str.ptr,
		    p->via.array.ptr[0].via.str.size,
		    p->via.array.ptr[1].via.str.ptr,
		    p->via.array.ptr[1].type == MSGPACK_OBJECT_NIL ? -1 :
		    (int)p->via.array.ptr[1].via.str.size))
			goto bad;
	}
	if ((k = rn_cq_key_find(key->via.str.ptr, key->via.str.size)) < 0)
		goto bad;
	at = find(s, &e, k);
	if (val->type == MSGPACK_OBJECT_NIL) {
		if (at >= 0) {
			quota_free(&s->v[at]);
			memmove(&s->v[at], &s->v[at + 1],
			    sizeof(*s->v) * (size_t)(s->n - at - 1));
			s->n--;
		}
		return 0;
	}
	if (val->type != MSGPACK_OBJECT_FLOAT64 &&
	    val->type != MSGPACK_OBJECT_FLOAT32 &&
	    val->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		goto bad;
	if (at >= 0) {
		s->v[at].value = val->type == MSGPACK_OBJECT_POSITIVE_INTEGER ?
		    (double)val->via.u64 : val->via.f64;
		return 0;
	}
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 16;
		struct rn_cquota *v = realloc(s->v, sizeof(*v) * (size_t)cap);

		if (v == NULL)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	q.ukind = e.ukind;
	q.ckind = e.ckind;
	q.key = (int8_t)k;
	q.value = val->type == MSGPACK_OBJECT_POSITIVE_INTEGER ?
	    (double)val->via.u64 : val->via.f64;
	q.user = strdup(e.user);
	q.client = strdup(e.client);
	if (q.user == NULL || q.client == NULL) {
		quota_free(&q);
		return -ENOMEM;
	}
	s->v[s->n++] = q;
	return 0;
bad:
	log_warnx("ClientQuota record at index %llu: malformed",
	    (unsigned long long)st->applying_index);
	return -EINVAL;
}

void
ctl_quotas_snapshot(const struct ctl_state *st, struct ctl_batch *b)
{
	int i;

	for (i = 0; i < st->quotas.n; i++)
		ctl_rec_client_quota(b, &st->quotas.v[i], true);
}

void
ctl_quotas_encode(const struct ctl_state *st, struct rn_mdimage_enc *e)
{
	int i;

	rn_mdimage_enc_quotas(e, st->quotas.n);
	for (i = 0; i < st->quotas.n; i++)
		rn_mdimage_enc_quota(e, &st->quotas.v[i]);
}

/* ---- AlterClientQuotas and DescribeClientQuotas ---------------------- */

static const char *
alter_entity(const struct rn_AlterClientQuotasRequest_EntryData *ed,
    struct cq_entity *e)
{
	int32_t i;

	memset(e, 0, sizeof(*e));
	if (ed->entity_count == 0)
		return "The entity is empty";
	for (i = 0; i < ed->entity_count; i++) {
		const struct rn_AlterClientQuotasRequest_EntityData *p =
		    &ed->entity[i];

		if (p->entity_type.len < 0 || !entity_part(e, p->entity_type.ptr,
		    (size_t)p->entity_type.len, p->entity_name.ptr,
		    p->entity_name.len))
			return "Unknown or repeated entity type, or a bad name";
	}
	return NULL;
}

int
ctl_op_alter_client_quotas(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_AlterClientQuotasRequest req;
	struct rn_AlterClientQuotasResponse *resp = &op->resp.acq;
	int32_t i, j;
	int rc;

	if ((rc = rn_AlterClientQuotasRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	op->validate_only = req.validate_only;
	rn_AlterClientQuotasResponse_init(resp);
	resp->entries_count = req.entries_count;
	resp->entries = rn_arena_alloc(&op->arena, sizeof(*resp->entries) *
	    (size_t)(req.entries_count > 0 ? req.entries_count : 1));
	if (resp->entries == NULL)
		return -ENOMEM;
	for (i = 0; i < req.entries_count; i++) {
		const struct rn_AlterClientQuotasRequest_EntryData *ed =
		    &req.entries[i];
		struct rn_AlterClientQuotasResponse_EntryData *o =
		    &resp->entries[i];
		struct cq_entity e;
		const char *why;

		rn_AlterClientQuotasResponse_EntryData_init(o);
		/* the entity back as it was asked */
		o->entity_count = ed->entity_count;
		o->entity = rn_arena_alloc(&op->arena, sizeof(*o->entity) *
		    (size_t)(ed->entity_count > 0 ? ed->entity_count : 1));
		if (o->entity == NULL)
			return -ENOMEM;
		for (j = 0; j < ed->entity_count; j++) {
			o->entity[j].entity_type = ed->entity[j].entity_type;
			o->entity[j].entity_name = ed->entity[j].entity_name;
		}
		why = alter_entity(ed, &e);
		for (j = 0; why == NULL && j < ed->ops_count; j++) {
			const struct rn_AlterClientQuotasRequest_OpData *od =
			    &ed->ops[j];

			if (od->key.len < 0 ||
			    rn_cq_key_find(od->key.ptr, (size_t)od->key.len) < 0)
				why = "Unknown quota key";
			else if (!od->remove && (!isfinite(od->value) ||
			    od->value <= 0))
				why = "A quota value must be positive";
		}
		if (why != NULL) {
			o->error_code = RN_KERR_INVALID_REQUEST;
			o->error_message = rn_kstr_c(why);
			continue;
		}
		if (op->validate_only)
			continue;
		for (j = 0; j < ed->ops_count; j++) {
			const struct rn_AlterClientQuotasRequest_OpData *od =
			    &ed->ops[j];
			struct rn_cquota q;

			q.ukind = e.ukind;
			q.ckind = e.ckind;
			q.user = e.user;
			q.client = e.client;
			q.key = (int8_t)rn_cq_key_find(od->key.ptr,
			    (size_t)od->key.len);
			q.value = od->value;
			ctl_rec_client_quota(&op->batch, &q, !od->remove);
			log_info("client quota %s %s=%g for user %s client-id %s",
			    od->remove ? "removed:" : "set:",
			    rn_cq_key_names[q.key], od->value,
			    e.ukind == RN_CQ_NONE ? "-" : e.ukind ==
			    RN_CQ_DEFAULT ? "<default>" : e.user,
			    e.ckind == RN_CQ_NONE ? "-" : e.ckind ==
			    RN_CQ_DEFAULT ? "<default>" : e.client);
		}
	}
	return 0;
}

/* Does component c (type, match type, name) accept the entity q? */
static bool
component_match(const struct rn_DescribeClientQuotasRequest_ComponentData *c,
    const struct rn_cquota *q)
{
	int8_t kind;
	const char *name;

	if (c->entity_type.len == 4 && memcmp(c->entity_type.ptr, "user", 4) ==
	    0) {
		kind = q->ukind;
		name = q->user;
	} else {
		kind = q->ckind;
		name = q->client;
	}
	if (kind == RN_CQ_NONE)
		return false;
	switch (c->match_type) {
	case 0:
		return kind == RN_CQ_NAME && strlen(name) ==
		    (size_t)c->match.len && memcmp(name, c->match.ptr,
		    (size_t)c->match.len) == 0;
	case 1:
		return kind == RN_CQ_DEFAULT;
	default:
		return true;
	}
}

static const char *
describe_invalid(const struct rn_DescribeClientQuotasRequest *req)
{
	bool user = false, client = false;
	int32_t i;

	for (i = 0; i < req->components_count; i++) {
		const struct rn_DescribeClientQuotasRequest_ComponentData *c =
		    &req->components[i];
		bool *seen;

		if (c->entity_type.len == 4 &&
		    memcmp(c->entity_type.ptr, "user", 4) == 0)
			seen = &user;
		else if (c->entity_type.len == 9 &&
		    memcmp(c->entity_type.ptr, "client-id", 9) == 0)
			seen = &client;
		else
			return "Unknown entity type";
		if (*seen)
			return "Duplicate entity type";
		*seen = true;
		if (c->match_type < 0 || c->match_type > 2)
			return "Unknown match type";
		if (c->match_type == 0 && c->match.len < 0)
			return "An exact match needs a name";
	}
	return NULL;
}

static bool
describe_match(const struct rn_DescribeClientQuotasRequest *req,
    const struct rn_cquota *q)
{
	int32_t i;
	int n = 0;

	for (i = 0; i < req->components_count; i++)
		if (!component_match(&req->components[i], q))
			return false;
	if (!req->strict)
		return true;
	n = (q->ukind != RN_CQ_NONE) + (q->ckind != RN_CQ_NONE);
	return n == req->components_count;
}

static struct rn_kstr
dup_kstr(struct ctl_op *op, const char *s)
{
	char *c = rn_arena_strndup(&op->arena, s, strlen(s));

	return c != NULL ? rn_kstr_c(c) : rn_kstr_c("");
}

static int
describe_entry(struct ctl_op *op,
    struct rn_DescribeClientQuotasResponse_EntryData *o,
    const struct rn_cquota *q)
{
	struct rn_DescribeClientQuotasResponse_EntityData *ed;
	const struct ctl_quotas *s = &op->c->st.quotas;
	int i, n = 0;

	rn_DescribeClientQuotasResponse_EntryData_init(o);
	if ((ed = rn_arena_alloc(&op->arena, sizeof(*ed) * 2)) == NULL)
		return -ENOMEM;
	o->entity = ed;
	if (q->ukind != RN_CQ_NONE) {
		rn_DescribeClientQuotasResponse_EntityData_init(&ed[n]);
		ed[n].entity_type = rn_kstr_c("user");
		ed[n++].entity_name = q->ukind == RN_CQ_NAME ?
		    dup_kstr(op, q->user) : (struct rn_kstr){ NULL, -1 };
	}
	if (q->ckind != RN_CQ_NONE) {
		rn_DescribeClientQuotasResponse_EntityData_init(&ed[n]);
		ed[n].entity_type = rn_kstr_c("client-id");
		ed[n++].entity_name = q->ckind == RN_CQ_NAME ?
		    dup_kstr(op, q->client) : (struct rn_kstr){ NULL, -1 };
	}
	o->entity_count = n;
	o->values = rn_arena_alloc(&op->arena, sizeof(*o->values) *
	    RN_CQ_NKEYS);
	if (o->values == NULL)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		const struct rn_cquota *v = &s->v[i];

		if (v->ukind != q->ukind || v->ckind != q->ckind ||
		    strcmp(v->user, q->user) != 0 ||
		    strcmp(v->client, q->client) != 0 ||
		    o->values_count >= RN_CQ_NKEYS)
			continue;
		rn_DescribeClientQuotasResponse_ValueData_init(
		    &o->values[o->values_count]);
		o->values[o->values_count].key =
		    rn_kstr_c(rn_cq_key_names[v->key]);
		o->values[o->values_count++].value = v->value;
	}
	return 0;
}

int
ctl_op_describe_client_quotas(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_DescribeClientQuotasRequest req;
	struct rn_DescribeClientQuotasResponse *resp = &op->resp.dcq;
	const struct ctl_quotas *s = &op->c->st.quotas;
	const char *why;
	int i, k, rc;

	if ((rc = rn_DescribeClientQuotasRequest_decode(r, op->ver,
	    &op->arena, &req)) != 0)
		return rc;
	rn_DescribeClientQuotasResponse_init(resp);
	if ((why = describe_invalid(&req)) != NULL) {
		resp->error_code = RN_KERR_INVALID_REQUEST;
		resp->error_message = rn_kstr_c(why);
		return 0;
	}
	resp->entries = rn_arena_alloc(&op->arena, sizeof(*resp->entries) *
	    (size_t)(s->n > 0 ? s->n : 1));
	if (resp->entries == NULL)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		bool first = true;

		if (!describe_match(&req, &s->v[i]))
			continue;
		/* one entry per entity: at its first value */
		for (k = 0; k < i; k++)
			if (s->v[k].ukind == s->v[i].ukind &&
			    s->v[k].ckind == s->v[i].ckind &&
			    strcmp(s->v[k].user, s->v[i].user) == 0 &&
			    strcmp(s->v[k].client, s->v[i].client) == 0)
				first = false;
		if (!first)
			continue;
		if ((rc = describe_entry(op,
		    &resp->entries[resp->entries_count], &s->v[i])) != 0)
			return rc;
		resp->entries_count++;
	}
	return 0;
}
