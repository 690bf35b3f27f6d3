/*
 * ACLs with the semantics of Kafka's StandardAuthorizer: what a binding
 * is, which bindings a filter selects, and whether a set of bindings lets
 * a principal at a host do an operation on a resource. The numbers are
 * Kafka's wire codes (ResourceType, PatternType, AclOperation,
 * AclPermissionType), so requests and records carry them unchanged.
 */
#ifndef RN_ACL_H
#define RN_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rn_acl_resource {
	RN_ACL_RES_UNKNOWN = 0,
	RN_ACL_RES_ANY = 1,
	RN_ACL_RES_TOPIC = 2,
	RN_ACL_RES_GROUP = 3,
	RN_ACL_RES_CLUSTER = 4,
	RN_ACL_RES_TRANSACTIONAL_ID = 5,
	RN_ACL_RES_DELEGATION_TOKEN = 6,
	RN_ACL_RES_USER = 7,
};

enum rn_acl_pattern {
	RN_ACL_PAT_UNKNOWN = 0,
	RN_ACL_PAT_ANY = 1,
	RN_ACL_PAT_MATCH = 2,
	RN_ACL_PAT_LITERAL = 3,
	RN_ACL_PAT_PREFIXED = 4,
};

enum rn_acl_op {
	RN_ACL_OP_UNKNOWN = 0,
	RN_ACL_OP_ANY = 1,
	RN_ACL_OP_ALL = 2,
	RN_ACL_OP_READ = 3,
	RN_ACL_OP_WRITE = 4,
	RN_ACL_OP_CREATE = 5,
	RN_ACL_OP_DELETE = 6,
	RN_ACL_OP_ALTER = 7,
	RN_ACL_OP_DESCRIBE = 8,
	RN_ACL_OP_CLUSTER_ACTION = 9,
	RN_ACL_OP_DESCRIBE_CONFIGS = 10,
	RN_ACL_OP_ALTER_CONFIGS = 11,
	RN_ACL_OP_IDEMPOTENT_WRITE = 12,
	RN_ACL_OP_CREATE_TOKENS = 13,
	RN_ACL_OP_DESCRIBE_TOKENS = 14,
};

enum rn_acl_perm {
	RN_ACL_PERM_UNKNOWN = 0,
	RN_ACL_PERM_ANY = 1,
	RN_ACL_PERM_DENY = 2,
	RN_ACL_PERM_ALLOW = 3,
};

/* The one name a CLUSTER resource has. */
#define RN_ACL_CLUSTER_NAME "kafka-cluster"
#define RN_ACL_WILDCARD "*"
#define RN_ACL_WILDCARD_PRINCIPAL "User:*"

struct rn_acl {
	int8_t resource, pattern, op, perm;
	const char *name;        /* NUL-terminated */
	const char *principal;   /* "User:alice" */
	const char *host;        /* an address, or "*" */
};

/* NULL strings and the ANY codes match everything. */
struct rn_acl_filter {
	int8_t resource, pattern, op, perm;
	const char *name, *principal, *host;
};

/* Who asks: the connection's principal and its peer address. */
struct rn_acl_who {
	const char *principal;
	const char *host;
};

/* NULL if a new binding is acceptable, else why not (Kafka's wording of
 * INVALID_REQUEST reasons). */
const char *rn_acl_invalid(const struct rn_acl *a);
/* NULL if a filter is acceptable for DescribeAcls/DeleteAcls. */
const char *rn_acl_filter_invalid(const struct rn_acl_filter *f);
bool rn_acl_filter_match(const struct rn_acl_filter *f,
    const struct rn_acl *a);

/* Order for rn_acl_allowed: by resource type, then name. */
void rn_acl_sort(struct rn_acl *acls, size_t n);
int rn_acl_cmp(const struct rn_acl *a, const struct rn_acl *b);

/*
 * Whether acls (sorted) let who do op on the resource: any matching DENY
 * denies, else any matching ALLOW allows (an ALLOW of READ, WRITE, DELETE
 * or ALTER implies DESCRIBE, of ALTER_CONFIGS implies DESCRIBE_CONFIGS),
 * else allow_if_none when no binding names the resource at all, else
 * denied. Super users are the caller's business.
 */
bool rn_acl_allowed(const struct rn_acl *acls, size_t n,
    const struct rn_acl_who *who, int8_t op, int8_t resource,
    const char *name, size_t len, bool allow_if_none);

/*
 * The authorizer every worker that answers clients holds: whether it is
 * on (authorizer.class.name), super.users, allow.everyone.if.no.acl.found.
 */
#define RN_AUTHZ_MAX_SUPER 64

struct rn_authz {
	bool on;
	bool allow_if_none;
	int n_super;
	char *super[RN_AUTHZ_MAX_SUPER];
};

/* super_users as Kafka writes it: "User:a;User:b". 0 or -ENOMEM. */
int rn_authz_init(struct rn_authz *z, bool on, const char *super_users,
    bool allow_if_none);
void rn_authz_free(struct rn_authz *z);
bool rn_authz_is_super(const struct rn_authz *z, const char *principal);
/* Allowed with the authorizer off, to a super user, or by the ACLs. */
bool rn_authz_allowed(const struct rn_authz *z, const struct rn_acl *acls,
    size_t n, const struct rn_acl_who *who, int8_t op, int8_t resource,
    const char *name, size_t len);

/* Kafka's names: "Topic", "Read", "Allow", "Literal", ... ("Unknown"). */
const char *rn_acl_resource_name(int8_t r);
const char *rn_acl_pattern_name(int8_t p);
const char *rn_acl_op_name(int8_t op);
const char *rn_acl_perm_name(int8_t p);
/* Case-insensitive, '-' and '_' ignored ("describe-configs",
 * "DescribeConfigs"); -1 if unknown. */
int rn_acl_op_parse(const char *s);
int rn_acl_pattern_parse(const char *s);

#endif /* RN_ACL_H */
