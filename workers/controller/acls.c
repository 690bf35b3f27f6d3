/*
 * ACL bindings in the metadata log: applying AccessControlEntry and
 * RemoveAccessControlEntry records, their part of snapshots and of the
 * image, and the CreateAcls and DeleteAcls operations that write them.
 * DescribeAcls is answered by the network workers from the image.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/acl.h"
#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage_write.h"
#include "protocol/kerrors.h"
#include "workers/controller/op.h"
#include "workers/controller/records.h"
#include "workers/controller/state.h"

/* Longest name, principal or host kept; Kafka bounds none, we must. */
#define ACL_STR_MAX 1024

static void
acl_free(struct ctl_acl *a)
{
	free((char *)a->b.name);
	free((char *)a->b.principal);
	free((char *)a->b.host);
}

void
ctl_acls_free(struct ctl_acls *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		acl_free(&s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int
find_id(const struct ctl_acls *s, const uint8_t id[16])
{
	int i;

	for (i = 0; i < s->n; i++)
		if (memcmp(s->v[i].id, id, 16) == 0)
			return i;
	return -1;
}

static char *
mp_strdup(const msgpack_object *map, const char *key)
{
	char buf[ACL_STR_MAX + 1];

	return ctl_mp_strcpy(map, key, buf, sizeof(buf)) ? strdup(buf) : NULL;
}

static int8_t
mp_i8(const msgpack_object *map, const char *key)
{
	int64_t v;

	return ctl_mp_int(rn_mp_get(map, key), &v) && v >= 0 && v <= 127 ?
	    (int8_t)v : 0;
}

int
ctl_acls_apply(struct ctl_state *st, const msgpack_object *rec)
{
	struct ctl_acls *s = &st->acls;
	struct ctl_acl a;
	const char *why;

	memset(&a, 0, sizeof(a));
	if (!ctl_mp_bin16_get(rec, "id", a.id))
		return -EINVAL;
	a.b.resource = mp_i8(rec, "resource_type");
	a.b.pattern = mp_i8(rec, "pattern_type");
	a.b.op = mp_i8(rec, "operation");
	a.b.perm = mp_i8(rec, "permission_type");
	a.b.name = mp_strdup(rec, "resource_name");
	a.b.principal = mp_strdup(rec, "principal");
	a.b.host = mp_strdup(rec, "host");
	if ((why = rn_acl_invalid(&a.b)) != NULL || find_id(s, a.id) >= 0) {
		log_warnx("AccessControlEntry record at index %llu: %s",
		    (unsigned long long)st->applying_index,
		    why != NULL ? why : "its id is taken");
		acl_free(&a);
		return -EINVAL;
	}
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 16;
		struct ctl_acl *v = realloc(s->v, sizeof(*v) * (size_t)cap);

		if (v == NULL) {
			acl_free(&a);
			return -ENOMEM;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = a;
	return 0;
}

int
ctl_acls_apply_remove(struct ctl_state *st, const msgpack_object *rec)
{
	struct ctl_acls *s = &st->acls;
	uint8_t id[16];
	int i;

	if (!ctl_mp_bin16_get(rec, "id", id) || (i = find_id(s, id)) < 0)
		return -EINVAL;
	acl_free(&s->v[i]);
	/* keep creation order: snapshots and answers list them so */
	memmove(&s->v[i], &s->v[i + 1], sizeof(*s->v) * (size_t)(s->n - i - 1));
	s->n--;
	return 0;
}

void
ctl_acls_snapshot(const struct ctl_state *st, struct ctl_batch *b)
{
	int i;

	for (i = 0; i < st->acls.n; i++)
		ctl_rec_acl(b, &st->acls.v[i]);
}

void
ctl_acls_encode(const struct ctl_state *st, struct rn_mdimage_enc *e)
{
	int i;

	rn_mdimage_enc_acls(e, st->acls.n);
	for (i = 0; i < st->acls.n; i++)
		rn_mdimage_enc_acl(e, &st->acls.v[i].b);
}

/* ---- CreateAcls and DeleteAcls -------------------------------------- */

/* A request string as a NUL-terminated copy in the op's arena; NULL for
 * a null string, *bad when it is too long or holds a NUL. */
static const char *
arena_cstr(struct ctl_op *op, struct rn_kstr s, bool *bad)
{
	char *out;

	if (s.len < 0)
		return NULL;
	if (s.len > ACL_STR_MAX || (s.len > 0 &&
	    memchr(s.ptr, '\0', (size_t)s.len) != NULL)) {
		*bad = true;
		return NULL;
	}
	if ((out = rn_arena_alloc(&op->arena, (size_t)s.len + 1)) == NULL) {
		*bad = true;
		return NULL;
	}
	if (s.len > 0) /* an empty string may have no bytes behind it */
		memcpy(out, s.ptr, (size_t)s.len);
	out[s.len] = '\0';
	return out;
}

/* The binding's topic or group, so journalctl TOPIC=/GROUP= finds it. */
static struct rn_log_subject
acl_subject(const struct rn_acl *a)
{
	if (a->resource == RN_ACL_RES_TOPIC && a->pattern == RN_ACL_PAT_LITERAL)
		return rn_subj_topic(a->name);
	if (a->resource == RN_ACL_RES_GROUP && a->pattern == RN_ACL_PAT_LITERAL)
		return rn_subj_group(a->name);
	return rn_subj_topic(NULL);
}

static void
log_binding(const char *what, const struct rn_acl *a)
{
	rn_log_about(LOG_INFO, acl_subject(a), "ACL %s: %s %s to %s from %s "
	    "on %s %s (%s)", what, rn_acl_perm_name(a->perm), a->principal,
	    rn_acl_op_name(a->op), a->host, rn_acl_resource_name(a->resource),
	    a->name, rn_acl_pattern_name(a->pattern));
}

/* A copy the response keeps after the binding is gone from the state. */
static struct rn_kstr
arena_kstr(struct ctl_op *op, const char *s)
{
	char *c = rn_arena_strndup(&op->arena, s, strlen(s));

	return c != NULL ? rn_kstr_c(c) : rn_kstr_c("");
}

static bool
same_binding(const struct rn_acl *x, const struct rn_acl *y)
{
	return x->resource == y->resource && x->pattern == y->pattern &&
	    x->op == y->op && x->perm == y->perm &&
	    strcmp(x->name, y->name) == 0 &&
	    strcmp(x->principal, y->principal) == 0 &&
	    strcmp(x->host, y->host) == 0;
}

/* In the state already, or earlier in this batch. */
static bool
exists(const struct ctl_state *st, const struct rn_acl *a,
    const struct rn_acl *batch, int n)
{
	int i;

	for (i = 0; i < st->acls.n; i++)
		if (same_binding(&st->acls.v[i].b, a))
			return true;
	for (i = 0; i < n; i++)
		if (same_binding(&batch[i], a))
			return true;
	return false;
}

int
ctl_op_create_acls(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_CreateAclsRequest req;
	struct rn_CreateAclsResponse *resp = &op->resp.cacl;
	const struct ctl_state *st = &op->c->st;
	struct rn_acl *added;
	int32_t i;
	int n_added = 0, rc;

	if ((rc = rn_CreateAclsRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	rn_CreateAclsResponse_init(resp);
	resp->results_count = req.creations_count;
	resp->results = rn_arena_alloc(&op->arena, sizeof(*resp->results) *
	    (size_t)(req.creations_count > 0 ? req.creations_count : 1));
	added = rn_arena_alloc(&op->arena, sizeof(*added) *
	    (size_t)(req.creations_count > 0 ? req.creations_count : 1));
	if (resp->results == NULL || added == NULL)
		return -ENOMEM;
	for (i = 0; i < req.creations_count; i++) {
		const struct rn_CreateAclsRequest_AclCreation *cr =
		    &req.creations[i];
		struct rn_CreateAclsResponse_AclCreationResult *o =
		    &resp->results[i];
		struct ctl_acl a;
		const char *why = NULL;
		bool bad = false;

		rn_CreateAclsResponse_AclCreationResult_init(o);
		memset(&a, 0, sizeof(a));
		a.b.resource = cr->resource_type;
		a.b.pattern = cr->resource_pattern_type;
		a.b.op = cr->operation;
		a.b.perm = cr->permission_type;
		a.b.name = arena_cstr(op, cr->resource_name, &bad);
		a.b.principal = arena_cstr(op, cr->principal, &bad);
		a.b.host = arena_cstr(op, cr->host, &bad);
		if (bad)
			why = "A string is too long or holds a NUL";
		else
			why = rn_acl_invalid(&a.b);
		if (why != NULL) {
			o->error_code = RN_KERR_INVALID_REQUEST;
			o->error_message = rn_kstr_c(why);
			continue;
		}
		/* an existing binding is created again as a no-op success */
		if (exists(st, &a.b, added, n_added))
			continue;
		if (ctl_uuid_random(a.id) != 0)
			return -EIO;
		added[n_added++] = a.b;
		ctl_rec_acl(&op->batch, &a);
		log_binding("added", &a.b);
	}
	return 0;
}

static int
delete_filter(struct ctl_op *op,
    const struct rn_DeleteAclsRequest_DeleteAclsFilter *df,
    struct rn_DeleteAclsResponse_DeleteAclsFilterResult *o, bool *gone)
{
	const struct ctl_acls *s = &op->c->st.acls;
	struct rn_acl_filter f;
	const char *why;
	bool bad = false;
	int i, n = 0;

	f.resource = df->resource_type_filter;
	f.pattern = df->pattern_type_filter;
	f.op = df->operation;
	f.perm = df->permission_type;
	f.name = arena_cstr(op, df->resource_name_filter, &bad);
	f.principal = arena_cstr(op, df->principal_filter, &bad);
	f.host = arena_cstr(op, df->host_filter, &bad);
	if ((why = bad ? "A string is too long or holds a NUL" :
	    rn_acl_filter_invalid(&f)) != NULL) {
		o->error_code = RN_KERR_INVALID_REQUEST;
		o->error_message = rn_kstr_c(why);
		return 0;
	}
	for (i = 0; i < s->n; i++)
		if (!gone[i] && rn_acl_filter_match(&f, &s->v[i].b))
			n++;
	o->matching_acls = rn_arena_alloc(&op->arena,
	    sizeof(*o->matching_acls) * (size_t)(n > 0 ? n : 1));
	if (o->matching_acls == NULL)
		return -ENOMEM;
	for (i = 0; i < s->n; i++) {
		const struct rn_acl *a = &s->v[i].b;
		struct rn_DeleteAclsResponse_DeleteAclsMatchingAcl *m;

		/* a binding two filters match goes once, under the first */
		if (gone[i] || !rn_acl_filter_match(&f, a))
			continue;
		gone[i] = true;
		m = &o->matching_acls[o->matching_acls_count++];
		rn_DeleteAclsResponse_DeleteAclsMatchingAcl_init(m);
		m->resource_type = a->resource;
		m->resource_name = arena_kstr(op, a->name);
		m->pattern_type = a->pattern;
		m->principal = arena_kstr(op, a->principal);
		m->host = arena_kstr(op, a->host);
		m->operation = a->op;
		m->permission_type = a->perm;
		ctl_rec_remove_acl(&op->batch, s->v[i].id);
		log_binding("removed", a);
	}
	return 0;
}

int
ctl_op_delete_acls(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_DeleteAclsRequest req;
	struct rn_DeleteAclsResponse *resp = &op->resp.dacl;
	bool *gone;
	int32_t i;
	int rc;

	if ((rc = rn_DeleteAclsRequest_decode(r, op->ver, &op->arena,
	    &req)) != 0)
		return rc;
	rn_DeleteAclsResponse_init(resp);
	resp->filter_results_count = req.filters_count;
	resp->filter_results = rn_arena_alloc(&op->arena,
	    sizeof(*resp->filter_results) *
	    (size_t)(req.filters_count > 0 ? req.filters_count : 1));
	gone = rn_arena_alloc(&op->arena, sizeof(*gone) *
	    (size_t)(op->c->st.acls.n > 0 ? op->c->st.acls.n : 1));
	if (resp->filter_results == NULL || gone == NULL)
		return -ENOMEM;
	memset(gone, 0, sizeof(*gone) * (size_t)op->c->st.acls.n);
	for (i = 0; i < req.filters_count; i++) {
		rn_DeleteAclsResponse_DeleteAclsFilterResult_init(
		    &resp->filter_results[i]);
		if ((rc = delete_filter(op, &req.filters[i],
		    &resp->filter_results[i], gone)) != 0)
			return rc;
	}
	return 0;
}
