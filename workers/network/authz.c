/*
 * Authorization in the network worker, when authorizer.class.name names
 * the built-in authorizer: a connection's principal and peer address
 * against super.users and the ACL bindings of the metadata image
 * (common/acl.h), and DescribeAcls, answered from that image as a Kafka
 * broker answers it from its authorizer's cache.
 *
 * A connection's principal is what it authenticated as (SASL, or a
 * client certificate on mTLS), else User:ANONYMOUS. The APIs listed in
 * authz_aware[] check their resources; any other API is served to super
 * users only while the authorizer is on, so turning it on never leaves
 * an API open that checks nothing.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/acl.h"
#include "common/log.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"

#define ANONYMOUS "User:ANONYMOUS"

/* The APIs whose handlers check their resources themselves. */
static const int16_t authz_aware[] = {
	/* no resource: served to anyone (SASL ones before the login) */
	RN_KAPI_API_VERSIONS,
	RN_KAPI_SASL_HANDSHAKE,
	RN_KAPI_SASL_AUTHENTICATE,
	RN_KAPI_METADATA,
	RN_KAPI_PRODUCE,
	RN_KAPI_FETCH,
	RN_KAPI_LIST_OFFSETS,
	RN_KAPI_OFFSET_FOR_LEADER_EPOCH,
	RN_KAPI_INIT_PRODUCER_ID,
	RN_KAPI_WRITE_TXN_MARKERS,
	RN_KAPI_DESCRIBE_PRODUCERS,
	RN_KAPI_DESCRIBE_ACLS,
	RN_KAPI_CREATE_ACLS,
	RN_KAPI_DELETE_ACLS,
	RN_KAPI_DESCRIBE_USER_SCRAM_CREDENTIALS,
	RN_KAPI_ALTER_USER_SCRAM_CREDENTIALS,
	RN_KAPI_FIND_COORDINATOR,
	RN_KAPI_DESCRIBE_CONFIGS,
	/* checked in authz_admin.c, then answered by the controller */
	RN_KAPI_CREATE_TOPICS,
	RN_KAPI_DELETE_TOPICS,
	RN_KAPI_CREATE_PARTITIONS,
	RN_KAPI_ALTER_CONFIGS,
	RN_KAPI_INCREMENTAL_ALTER_CONFIGS,
	RN_KAPI_ELECT_LEADERS,
	RN_KAPI_ALTER_PARTITION_REASSIGNMENTS,
	RN_KAPI_LIST_PARTITION_REASSIGNMENTS,
	RN_KAPI_DESCRIBE_QUORUM,
	RN_KAPI_DESCRIBE_CLIENT_QUOTAS,
	RN_KAPI_ALTER_CLIENT_QUOTAS,
	RN_KAPI_DESCRIBE_CLUSTER,
	RN_KAPI_DELETE_RECORDS,
	RN_KAPI_DESCRIBE_LOG_DIRS,
	RN_KAPI_ALTER_REPLICA_LOG_DIRS,
	/* the group coordinator checks these with the forwarded principal */
	RN_KAPI_JOIN_GROUP,
	RN_KAPI_SYNC_GROUP,
	RN_KAPI_HEARTBEAT,
	RN_KAPI_LEAVE_GROUP,
	RN_KAPI_OFFSET_COMMIT,
	RN_KAPI_OFFSET_FETCH,
	RN_KAPI_LIST_GROUPS,
	RN_KAPI_DESCRIBE_GROUPS,
	RN_KAPI_DELETE_GROUPS,
	RN_KAPI_OFFSET_DELETE,
};

int
net_authz_init(struct net *n)
{
	return rn_authz_init(&n->authz, n->cfg->authorizer_on,
	    n->cfg->super_users, n->cfg->allow_everyone_if_no_acl_found);
}

const char *
net_principal(const struct conn *c)
{
	return c->principal[0] != '\0' ? c->principal : ANONYMOUS;
}

void
net_peer_addr(const struct conn *c, char *out, size_t len)
{
	const char *colon = strrchr(c->peer, ':');
	size_t n = colon != NULL ? (size_t)(colon - c->peer) : strlen(c->peer);

	if (n >= len)
		n = len - 1;
	memcpy(out, c->peer, n);
	out[n] = '\0';
}

static void
log_denied(struct conn *c, const char *principal, const char *host,
    int8_t op, int8_t res, const char *name, size_t len)
{
	char what[256];

	/* once per connection: a client retrying must not flood the log */
	if (c->authz_logged)
		return;
	c->authz_logged = true;
	if (len >= sizeof(what))
		len = sizeof(what) - 1;
	memcpy(what, name, len);
	what[len] = '\0';
	rn_log_about(LOG_NOTICE, res == RN_ACL_RES_TOPIC ? rn_subj_topic(what) :
	    res == RN_ACL_RES_GROUP ? rn_subj_group(what) : rn_subj_topic(NULL),
	    "authorization: %s from %s denied %s on %s %s (API %d; later "
	    "denials on this connection are not logged)", principal, host,
	    rn_acl_op_name(op), rn_acl_resource_name(res), what,
	    c->hdr.api_key);
}

static bool
check(struct net *n, struct conn *c, int8_t op, int8_t res,
    const char *name, size_t len, bool log)
{
	const char *principal = net_principal(c);
	struct rn_acl_who who;
	char host[64];

	if (!n->authz.on)
		return true;
	net_peer_addr(c, host, sizeof(host));
	who.principal = principal;
	who.host = host;
	if (rn_authz_allowed(&n->authz, n->view.acls, n->view.n_acls, &who,
	    op, res, name != NULL ? name : "", name != NULL ? len : 0))
		return true;
	if (log)
		log_denied(c, principal, host, op, res, name != NULL ? name :
		    "", name != NULL ? len : 0);
	return false;
}

bool
net_authorized(struct net *n, struct conn *c, int8_t op, int8_t res,
    const char *name, size_t len)
{
	return check(n, c, op, res, name, len, true);
}

bool
net_authorized_cluster(struct net *n, struct conn *c, int8_t op)
{
	return check(n, c, op, RN_ACL_RES_CLUSTER, RN_ACL_CLUSTER_NAME,
	    strlen(RN_ACL_CLUSTER_NAME), true);
}

bool
net_authorized_cluster_quiet(struct net *n, struct conn *c, int8_t op)
{
	return check(n, c, op, RN_ACL_RES_CLUSTER, RN_ACL_CLUSTER_NAME,
	    strlen(RN_ACL_CLUSTER_NAME), false);
}

/*
 * Kafka lets an idempotent producer in with IDEMPOTENT_WRITE on the
 * cluster or with WRITE on any topic: a binding that could allow this
 * principal to write somewhere.
 */
bool
net_authorized_write_somewhere(struct net *n, struct conn *c)
{
	const char *principal = net_principal(c);
	char host[64];
	size_t i;

	if (!n->cfg->authorizer_on || rn_authz_is_super(&n->authz, principal))
		return true;
	if (net_authorized_cluster_quiet(n, c, RN_ACL_OP_IDEMPOTENT_WRITE))
		return true;
	net_peer_addr(c, host, sizeof(host));
	for (i = 0; i < n->view.n_acls; i++) {
		const struct rn_acl *a = &n->view.acls[i];

		if (a->resource == RN_ACL_RES_TOPIC &&
		    a->perm == RN_ACL_PERM_ALLOW &&
		    (a->op == RN_ACL_OP_WRITE || a->op == RN_ACL_OP_ALL) &&
		    (strcmp(a->principal, principal) == 0 ||
		    strcmp(a->principal, RN_ACL_WILDCARD_PRINCIPAL) == 0) &&
		    (strcmp(a->host, RN_ACL_WILDCARD) == 0 ||
		    strcmp(a->host, host) == 0))
			return true;
	}
	log_denied(c, principal, host, RN_ACL_OP_IDEMPOTENT_WRITE,
	    RN_ACL_RES_CLUSTER, RN_ACL_CLUSTER_NAME,
	    strlen(RN_ACL_CLUSTER_NAME));
	return false;
}

bool
net_authz_gate(struct net *n, struct conn *c)
{
	size_t i;

	if (!n->cfg->authorizer_on || rn_authz_is_super(&n->authz, net_principal(c)))
		return true;
	for (i = 0; i < sizeof(authz_aware) / sizeof(authz_aware[0]); i++)
		if (authz_aware[i] == c->hdr.api_key)
			return true;
	log_warnx("connection from %s (%s): API %d does not check ACLs yet "
	    "and is served to super.users only: closing", c->peer,
	    net_principal(c), c->hdr.api_key);
	return false;
}

/* ---- DescribeAcls --------------------------------------------------- */

static struct rn_kstr
kstr(const char *s)
{
	return rn_kstr_c(s);
}

/* A request string as a NUL-terminated copy (NULL for a null one). */
static const char *
cstr(struct conn *c, struct rn_kstr s)
{
	char *out;

	if (s.len < 0)
		return NULL;
	if ((out = rn_arena_alloc(&c->arena, (size_t)s.len + 1)) == NULL)
		return "";
	if (s.len > 0) /* an empty string may have no bytes behind it */
		memcpy(out, s.ptr, (size_t)s.len);
	out[s.len] = '\0';
	return out;
}

/* The bindings of one resource pattern that f matches, as one entry. */
static int
describe_pattern(struct conn *c, struct rn_DescribeAclsResponse *r,
    const struct rn_acl_filter *f, const struct rn_acl *acls, size_t n,
    int8_t pattern)
{
	struct rn_DescribeAclsResponse_DescribeAclsResource *res;
	int32_t m = 0;
	size_t j;

	for (j = 0; j < n; j++)
		if (acls[j].pattern == pattern &&
		    rn_acl_filter_match(f, &acls[j]))
			m++;
	if (m == 0)
		return 0;
	res = &r->resources[r->resources_count++];
	rn_DescribeAclsResponse_DescribeAclsResource_init(res);
	res->resource_type = acls[0].resource;
	res->resource_name = kstr(acls[0].name);
	res->pattern_type = pattern;
	if ((res->acls = net_array(c, m, sizeof(*res->acls))) == NULL)
		return -ENOMEM;
	for (j = 0; j < n; j++) {
		struct rn_DescribeAclsResponse_AclDescription *d;

		if (acls[j].pattern != pattern ||
		    !rn_acl_filter_match(f, &acls[j]))
			continue;
		d = &res->acls[res->acls_count++];
		rn_DescribeAclsResponse_AclDescription_init(d);
		d->principal = kstr(acls[j].principal);
		d->host = kstr(acls[j].host);
		d->operation = acls[j].op;
		d->permission_type = acls[j].perm;
	}
	return 0;
}

int
net_describe_acls(struct net *n, struct conn *c)
{
	struct rn_DescribeAclsRequest *req = c->req;
	struct rn_DescribeAclsResponse r;
	struct rn_acl_filter f;
	const struct rn_acl *acls = n->view.acls;
	const char *why;
	size_t i, k, matched = 0;

	rn_DescribeAclsResponse_init(&r);
	if (!n->cfg->authorizer_on) {
		r.error_code = RN_KERR_SECURITY_DISABLED;
		r.error_message = kstr("No Authorizer is configured.");
		return net_respond(n, c, &r);
	}
	if (!net_authorized_cluster(n, c, RN_ACL_OP_DESCRIBE)) {
		r.error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		return net_respond(n, c, &r);
	}
	f.resource = req->resource_type_filter;
	f.pattern = req->pattern_type_filter;
	f.op = req->operation;
	f.perm = req->permission_type;
	f.name = cstr(c, req->resource_name_filter);
	f.principal = cstr(c, req->principal_filter);
	f.host = cstr(c, req->host_filter);
	if ((why = rn_acl_filter_invalid(&f)) != NULL) {
		r.error_code = RN_KERR_INVALID_REQUEST;
		r.error_message = kstr(why);
		return net_respond(n, c, &r);
	}
	for (i = 0; i < n->view.n_acls; i++)
		if (rn_acl_filter_match(&f, &acls[i]))
			matched++;
	/* at most one resource entry per binding */
	r.resources = net_array(c, (int32_t)matched, sizeof(*r.resources));
	if (r.resources == NULL)
		return -ENOMEM;
	for (i = 0; i < n->view.n_acls; i = k) {
		int8_t p;

		/* sorted on (resource, name): [i, k) share both */
		for (k = i + 1; k < n->view.n_acls &&
		    rn_acl_cmp(&acls[i], &acls[k]) == 0; k++)
			;
		for (p = RN_ACL_PAT_LITERAL; p <= RN_ACL_PAT_PREFIXED; p++)
			if (describe_pattern(c, &r, &f, acls + i, k - i, p) != 0)
				return -ENOMEM;
	}
	return net_respond(n, c, &r);
}

/* ---- CreateAcls and DeleteAcls: checked here, run by the controller -- */

/* 0: forward to the controller; else what each item is answered. */
static int16_t
acl_change_refused(struct net *n, struct conn *c)
{
	if (!n->cfg->authorizer_on)
		return RN_KERR_SECURITY_DISABLED;
	return net_authorized_cluster(n, c, RN_ACL_OP_ALTER) ? 0 :
	    RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
}

static struct rn_kstr
refusal_message(int16_t err)
{
	return rn_kstr_c(err == RN_KERR_SECURITY_DISABLED ?
	    "No Authorizer is configured." : NULL);
}

int
net_create_acls(struct net *n, struct conn *c)
{
	struct rn_CreateAclsRequest *req = c->req;
	struct rn_CreateAclsResponse r;
	int16_t err = acl_change_refused(n, c);
	int32_t i;

	if (err == 0)
		return net_admin_forward(n, c);
	rn_CreateAclsResponse_init(&r);
	r.results_count = req->creations_count;
	if ((r.results = net_array(c, req->creations_count,
	    sizeof(*r.results))) == NULL)
		return -ENOMEM;
	for (i = 0; i < req->creations_count; i++) {
		rn_CreateAclsResponse_AclCreationResult_init(&r.results[i]);
		r.results[i].error_code = err;
		r.results[i].error_message = refusal_message(err);
	}
	return net_respond(n, c, &r);
}

int
net_delete_acls(struct net *n, struct conn *c)
{
	struct rn_DeleteAclsRequest *req = c->req;
	struct rn_DeleteAclsResponse r;
	int16_t err = acl_change_refused(n, c);
	int32_t i;

	if (err == 0)
		return net_admin_forward(n, c);
	rn_DeleteAclsResponse_init(&r);
	r.filter_results_count = req->filters_count;
	if ((r.filter_results = net_array(c, req->filters_count,
	    sizeof(*r.filter_results))) == NULL)
		return -ENOMEM;
	for (i = 0; i < req->filters_count; i++) {
		rn_DeleteAclsResponse_DeleteAclsFilterResult_init(
		    &r.filter_results[i]);
		r.filter_results[i].error_code = err;
		r.filter_results[i].error_message = refusal_message(err);
	}
	return net_respond(n, c, &r);
}
