/* ACL bindings, filters and the authorization rule (common/acl.h). */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/acl.h"
#include "common/util.h"

static const char *const resource_names[] = {
	"Unknown", "Any", "Topic", "Group", "Cluster", "TransactionalId",
	"DelegationToken", "User",
};
static const char *const pattern_names[] = {
	"Unknown", "Any", "Match", "Literal", "Prefixed",
};
static const char *const op_names[] = {
	"Unknown", "Any", "All", "Read", "Write", "Create", "Delete", "Alter",
	"Describe", "ClusterAction", "DescribeConfigs", "AlterConfigs",
	"IdempotentWrite", "CreateTokens", "DescribeTokens",
};
static const char *const perm_names[] = {
	"Unknown", "Any", "Deny", "Allow",
};

#define NAME_OF(tab, v) ((v) >= 0 && (size_t)(v) < RN_ARRAY_SIZE(tab) ? \
	(tab)[(v)] : "Unknown")

const char *
rn_acl_resource_name(int8_t r)
{
	return NAME_OF(resource_names, r);
}

const char *
rn_acl_pattern_name(int8_t p)
{
	return NAME_OF(pattern_names, p);
}

const char *
rn_acl_op_name(int8_t op)
{
	return NAME_OF(op_names, op);
}

const char *
rn_acl_perm_name(int8_t p)
{
	return NAME_OF(perm_names, p);
}

/* Equal but for case, '-' and '_'. */
static bool
loose_eq(const char *a, const char *b)
{
	for (;;) {
		while (*a == '-' || *a == '_')
			a++;
		while (*b == '-' || *b == '_')
			b++;
		if (*a == '\0' || *b == '\0')
			return *a == *b;
		if ((*a | 0x20) != (*b | 0x20))
			return false;
		a++;
		b++;
	}
}

static int
parse_in(const char *const *tab, size_t n, const char *s)
{
	size_t i;

	for (i = 2; i < n; i++) /* never Unknown or Any */
		if (loose_eq(tab[i], s))
			return (int)i;
	return -1;
}

int
rn_acl_op_parse(const char *s)
{
	return parse_in(op_names, RN_ARRAY_SIZE(op_names), s);
}

int
rn_acl_pattern_parse(const char *s)
{
	if (loose_eq(s, "Any"))
		return RN_ACL_PAT_ANY;
	return parse_in(pattern_names, RN_ARRAY_SIZE(pattern_names), s);
}

/* "Type:name" with both parts present, as Kafka parses a principal. */
static bool
principal_ok(const char *p)
{
	const char *colon = p != NULL ? strchr(p, ':') : NULL;

	return colon != NULL && colon != p && colon[1] != '\0';
}

const char *
rn_acl_invalid(const struct rn_acl *a)
{
	if (a->resource <= RN_ACL_RES_ANY ||
	    a->resource > RN_ACL_RES_USER)
		return "Invalid resourceType";
	if (a->pattern != RN_ACL_PAT_LITERAL &&
	    a->pattern != RN_ACL_PAT_PREFIXED)
		return "Invalid patternType";
	if (a->op <= RN_ACL_OP_ANY || a->op > RN_ACL_OP_DESCRIBE_TOKENS)
		return "Invalid operation";
	if (a->perm != RN_ACL_PERM_DENY && a->perm != RN_ACL_PERM_ALLOW)
		return "Invalid permissionType";
	if (a->name == NULL || a->name[0] == '\0')
		return "Resource name should not be empty";
	if (a->resource == RN_ACL_RES_CLUSTER &&
	    strcmp(a->name, RN_ACL_CLUSTER_NAME) != 0)
		return "The only valid name for the CLUSTER resource is "
		    RN_ACL_CLUSTER_NAME;
	if (!principal_ok(a->principal))
		return "Invalid principal: expected Type:name";
	if (a->host == NULL || a->host[0] == '\0')
		return "Invalid host: empty";
	return NULL;
}

const char *
rn_acl_filter_invalid(const struct rn_acl_filter *f)
{
	if (f->resource == RN_ACL_RES_UNKNOWN || f->resource > RN_ACL_RES_USER)
		return "Invalid resourceType filter";
	if (f->pattern == RN_ACL_PAT_UNKNOWN ||
	    f->pattern > RN_ACL_PAT_PREFIXED)
		return "Invalid patternType filter";
	if (f->op == RN_ACL_OP_UNKNOWN || f->op > RN_ACL_OP_DESCRIBE_TOKENS)
		return "Invalid operation filter";
	if (f->perm == RN_ACL_PERM_UNKNOWN || f->perm > RN_ACL_PERM_ALLOW)
		return "Invalid permissionType filter";
	return NULL;
}

static bool
starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return n <= len && memcmp(s, prefix, n) == 0;
}

bool
rn_acl_filter_match(const struct rn_acl_filter *f, const struct rn_acl *a)
{
	if (f->resource != RN_ACL_RES_ANY && f->resource != a->resource)
		return false;
	if (f->pattern != RN_ACL_PAT_ANY && f->pattern != RN_ACL_PAT_MATCH &&
	    f->pattern != a->pattern)
		return false;
	if (f->name != NULL) {
		if (f->pattern == RN_ACL_PAT_MATCH) {
			/* the bindings that would apply to that name */
			if (a->pattern == RN_ACL_PAT_LITERAL ?
			    strcmp(f->name, a->name) != 0 &&
			    strcmp(a->name, RN_ACL_WILDCARD) != 0 :
			    !starts_with(f->name, strlen(f->name), a->name))
				return false;
		} else if (strcmp(f->name, a->name) != 0)
			return false;
	}
	if (f->principal != NULL && strcmp(f->principal, a->principal) != 0)
		return false;
	if (f->host != NULL && strcmp(f->host, a->host) != 0)
		return false;
	if (f->op != RN_ACL_OP_ANY && f->op != a->op)
		return false;
	return f->perm == RN_ACL_PERM_ANY || f->perm == a->perm;
}

/* (resource, name bytes) against a binding, for the sorted search. */
static int
key_cmp(int8_t resource, const char *name, size_t len, const struct rn_acl *a)
{
	size_t alen;
	int c;

	if (resource != a->resource)
		return resource < a->resource ? -1 : 1;
	alen = strlen(a->name);
	c = memcmp(name, a->name, len < alen ? len : alen);
	if (c != 0)
		return c;
	return len < alen ? -1 : len > alen ? 1 : 0;
}

int
rn_acl_cmp(const struct rn_acl *a, const struct rn_acl *b)
{
	return key_cmp(a->resource, a->name, strlen(a->name), b);
}

static int
qsort_cmp(const void *x, const void *y)
{
	return rn_acl_cmp(x, y);
}

void
rn_acl_sort(struct rn_acl *acls, size_t n)
{
	if (n > 1)
		qsort(acls, n, sizeof(*acls), qsort_cmp);
}

/* First binding whose key is (resource, name[0..len)), or n. */
static size_t
lower_bound(const struct rn_acl *acls, size_t n, int8_t resource,
    const char *name, size_t len)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (key_cmp(resource, name, len, &acls[mid]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

enum verdict { NO_MATCH, ALLOWS, DENIES };

/* One binding already known to name the resource: does it apply? */
static enum verdict
applies(const struct rn_acl *a, const struct rn_acl_who *who, int8_t op)
{
	if (strcmp(a->principal, who->principal) != 0 &&
	    strcmp(a->principal, RN_ACL_WILDCARD_PRINCIPAL) != 0)
		return NO_MATCH;
	if (strcmp(a->host, RN_ACL_WILDCARD) != 0 &&
	    strcmp(a->host, who->host) != 0)
		return NO_MATCH;
	if (a->op != RN_ACL_OP_ALL) {
		if (a->perm != RN_ACL_PERM_ALLOW)
			/* a DENY of READ does not deny DESCRIBE */
			return a->op == op ? DENIES : NO_MATCH;
		if (op == RN_ACL_OP_DESCRIBE) {
			if (a->op != RN_ACL_OP_DESCRIBE &&
			    a->op != RN_ACL_OP_READ &&
			    a->op != RN_ACL_OP_WRITE &&
			    a->op != RN_ACL_OP_DELETE &&
			    a->op != RN_ACL_OP_ALTER)
				return NO_MATCH;
		} else if (op == RN_ACL_OP_DESCRIBE_CONFIGS) {
			if (a->op != RN_ACL_OP_DESCRIBE_CONFIGS &&
			    a->op != RN_ACL_OP_ALTER_CONFIGS)
				return NO_MATCH;
		} else if (a->op != op)
			return NO_MATCH;
	}
	return a->perm == RN_ACL_PERM_ALLOW ? ALLOWS : DENIES;
}

/*
 * The bindings keyed (resource, key[0..klen)) that name the resource
 * name[0..len): literal ones only when the key is the whole name (or the
 * wildcard), prefixed ones always. Sets *named, *allowed; true on a DENY.
 */
static bool
scan_key(const struct rn_acl *acls, size_t n, const struct rn_acl_who *who,
    int8_t op, int8_t resource, const char *key, size_t klen, bool whole,
    bool wildcard, bool *named, bool *allowed)
{
	size_t i = lower_bound(acls, n, resource, key, klen);

	for (; i < n && key_cmp(resource, key, klen, &acls[i]) == 0; i++) {
		const struct rn_acl *a = &acls[i];

		if (a->pattern == RN_ACL_PAT_LITERAL ? !whole && !wildcard :
		    wildcard)
			continue;
		*named = true;
		switch (applies(a, who, op)) {
		case DENIES:
			return true;
		case ALLOWS:
			*allowed = true;
			break;
		case NO_MATCH:
			break;
		}
	}
	return false;
}

bool
rn_acl_allowed(const struct rn_acl *acls, size_t n,
    const struct rn_acl_who *who, int8_t op, int8_t resource,
    const char *name, size_t len, bool allow_if_none)
{
	bool named = false, allowed = false;
	size_t k;

	/* the name itself, then each shorter prefix, then the wildcard */
	for (k = len; k > 0; k--)
		if (scan_key(acls, n, who, op, resource, name, k, k == len,
		    false, &named, &allowed))
			return false;
	if (scan_key(acls, n, who, op, resource, RN_ACL_WILDCARD, 1, false,
	    true, &named, &allowed))
		return false;
	if (allowed)
		return true;
	return !named && allow_if_none;
}

/* ---- the authorizer's settings ---------------------------------------- */

int
rn_authz_init(struct rn_authz *z, bool on, const char *super_users,
    bool allow_if_none)
{
	char *copy, *tok, *save = NULL;

	memset(z, 0, sizeof(*z));
	z->on = on;
	z->allow_if_none = allow_if_none;
	if (!on || super_users == NULL)
		return 0;
	if ((copy = strdup(super_users)) == NULL)
		return -ENOMEM;
	for (tok = strtok_r(copy, ";", &save); tok != NULL &&
	    z->n_super < RN_AUTHZ_MAX_SUPER; tok = strtok_r(NULL, ";", &save)) {
		while (*tok == ' ')
			tok++;
		if (*tok == '\0')
			continue;
		if ((z->super[z->n_super] = strdup(tok)) == NULL) {
			free(copy);
			rn_authz_free(z);
			return -ENOMEM;
		}
		z->n_super++;
	}
	free(copy);
	return 0;
}

void
rn_authz_free(struct rn_authz *z)
{
	int i;

	for (i = 0; i < z->n_super; i++)
		free(z->super[i]);
	z->n_super = 0;
}

bool
rn_authz_is_super(const struct rn_authz *z, const char *principal)
{
	int i;

	for (i = 0; i < z->n_super; i++)
		if (strcmp(z->super[i], principal) == 0)
			return true;
	return false;
}

bool
rn_authz_allowed(const struct rn_authz *z, const struct rn_acl *acls,
    size_t n, const struct rn_acl_who *who, int8_t op, int8_t resource,
    const char *name, size_t len)
{
	if (!z->on || rn_authz_is_super(z, who->principal))
		return true;
	return rn_acl_allowed(acls, n, who, op, resource, name, len,
	    z->allow_if_none);
}
