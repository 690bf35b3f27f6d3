/*
 * The authorization rule of common/acl.c against the cases Kafka's
 * StandardAuthorizer documents: DENY over ALLOW, implied DESCRIBE,
 * literal, prefixed and wildcard resources, wildcard principals, hosts,
 * and the rule for resources no binding names.
 */
#include "autoconf.h"

#include <string.h>

#include "tests/lib/tap.h"
#include "common/acl.h"

static struct rn_acl set[16];
static size_t n_set;

static void
add(int8_t res, const char *name, int8_t pat, const char *principal,
    const char *host, int8_t op, int8_t perm)
{
	struct rn_acl a = { res, pat, op, perm, name, principal, host };

	set[n_set++] = a;
	rn_acl_sort(set, n_set);
}

static bool
can(const char *principal, const char *host, int8_t op, int8_t res,
    const char *name)
{
	struct rn_acl_who who = { principal, host };

	return rn_acl_allowed(set, n_set, &who, op, res, name, strlen(name),
	    false);
}

static void
test_rules(void)
{
	struct rn_acl_who anon = { "User:ANONYMOUS", "127.0.0.1" };

	ok(!can("User:alice", "1.2.3.4", RN_ACL_OP_READ, RN_ACL_RES_TOPIC, "t"),
	    "no bindings, allow.everyone.if.no.acl.found=false: denied");
	ok(rn_acl_allowed(set, 0, &anon, RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
	    "t", 1, true), "no bindings, allow.everyone.if.no.acl.found=true: "
	    "allowed");

	add(RN_ACL_RES_TOPIC, "orders", RN_ACL_PAT_LITERAL, "User:alice", "*",
	    RN_ACL_OP_WRITE, RN_ACL_PERM_ALLOW);
	ok(can("User:alice", "1.2.3.4", RN_ACL_OP_WRITE, RN_ACL_RES_TOPIC,
	    "orders"), "a literal ALLOW of WRITE allows it");
	ok(can("User:alice", "1.2.3.4", RN_ACL_OP_DESCRIBE, RN_ACL_RES_TOPIC,
	    "orders"), "and implies DESCRIBE");
	ok(!can("User:alice", "1.2.3.4", RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
	    "orders"), "but not READ");
	ok(!can("User:bob", "1.2.3.4", RN_ACL_OP_WRITE, RN_ACL_RES_TOPIC,
	    "orders"), "nor anyone else");
	ok(!can("User:alice", "1.2.3.4", RN_ACL_OP_WRITE, RN_ACL_RES_TOPIC,
	    "orders2"), "a literal binding is not a prefix");
	ok(!can("User:alice", "1.2.3.4", RN_ACL_OP_WRITE, RN_ACL_RES_GROUP,
	    "orders"), "nor another resource type of that name");
	{
		struct rn_acl_who bob = { "User:bob", "1.2.3.4" };

		ok(rn_acl_allowed(set, n_set, &bob, RN_ACL_OP_READ,
		    RN_ACL_RES_TOPIC, "other", 5, true),
		    "a topic no binding names follows allow.everyone.if.no.acl."
		    "found");
		ok(!rn_acl_allowed(set, n_set, &bob, RN_ACL_OP_READ,
		    RN_ACL_RES_TOPIC, "orders", 6, true), "one that a binding "
		    "names is denied to others even then");
	}

	add(RN_ACL_RES_TOPIC, "ord", RN_ACL_PAT_PREFIXED, "User:*", "*",
	    RN_ACL_OP_READ, RN_ACL_PERM_ALLOW);
	ok(can("User:bob", "1.2.3.4", RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
	    "orders"), "a prefixed ALLOW for User:* covers orders");
	ok(can("User:bob", "1.2.3.4", RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
	    "ord"), "and the prefix itself");
	ok(!can("User:bob", "1.2.3.4", RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
	    "or"), "not a shorter name");

	add(RN_ACL_RES_TOPIC, "orders", RN_ACL_PAT_LITERAL, "User:bob",
	    "10.0.0.9", RN_ACL_OP_READ, RN_ACL_PERM_DENY);
	ok(!can("User:bob", "10.0.0.9", RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
	    "orders"), "a DENY from that host wins over the ALLOW");
	ok(can("User:bob", "10.0.0.8", RN_ACL_OP_READ, RN_ACL_RES_TOPIC,
	    "orders"), "another host is still allowed");
	ok(can("User:bob", "10.0.0.9", RN_ACL_OP_DESCRIBE, RN_ACL_RES_TOPIC,
	    "orders"), "a DENY of READ does not deny DESCRIBE");

	add(RN_ACL_RES_TOPIC, "*", RN_ACL_PAT_LITERAL, "User:carol", "*",
	    RN_ACL_OP_ALL, RN_ACL_PERM_ALLOW);
	ok(can("User:carol", "1.1.1.1", RN_ACL_OP_DELETE, RN_ACL_RES_TOPIC,
	    "anything"), "ALL on the wildcard topic allows DELETE anywhere");
	ok(!can("User:carol", "1.1.1.1", RN_ACL_OP_DELETE, RN_ACL_RES_GROUP,
	    "anything"), "but not on groups");

	add(RN_ACL_RES_TOPIC, "order", RN_ACL_PAT_PREFIXED, "User:*", "*",
	    RN_ACL_OP_ALL, RN_ACL_PERM_DENY);
	ok(!can("User:carol", "1.1.1.1", RN_ACL_OP_WRITE, RN_ACL_RES_TOPIC,
	    "orders"), "a prefixed DENY of ALL beats a wildcard ALLOW");
	ok(can("User:carol", "1.1.1.1", RN_ACL_OP_WRITE, RN_ACL_RES_TOPIC,
	    "ordbook"), "a name outside that prefix stays allowed");

	add(RN_ACL_RES_CLUSTER, RN_ACL_CLUSTER_NAME, RN_ACL_PAT_LITERAL,
	    "User:ops", "*", RN_ACL_OP_ALTER_CONFIGS, RN_ACL_PERM_ALLOW);
	ok(can("User:ops", "1.1.1.1", RN_ACL_OP_DESCRIBE_CONFIGS,
	    RN_ACL_RES_CLUSTER, RN_ACL_CLUSTER_NAME),
	    "ALTER_CONFIGS implies DESCRIBE_CONFIGS");
	ok(!can("User:ops", "1.1.1.1", RN_ACL_OP_DESCRIBE, RN_ACL_RES_CLUSTER,
	    RN_ACL_CLUSTER_NAME), "but not DESCRIBE");
}

static void
test_filters_and_validation(void)
{
	struct rn_acl a = { RN_ACL_RES_TOPIC, RN_ACL_PAT_PREFIXED,
	    RN_ACL_OP_READ, RN_ACL_PERM_ALLOW, "ord", "User:bob", "*" };
	struct rn_acl w = { RN_ACL_RES_TOPIC, RN_ACL_PAT_LITERAL,
	    RN_ACL_OP_READ, RN_ACL_PERM_ALLOW, "*", "User:bob", "*" };
	struct rn_acl_filter any = { RN_ACL_RES_ANY, RN_ACL_PAT_ANY,
	    RN_ACL_OP_ANY, RN_ACL_PERM_ANY, NULL, NULL, NULL };
	struct rn_acl_filter f = any;

	ok(rn_acl_filter_match(&any, &a), "the ANY filter matches");
	f.name = "orders";
	ok(!rn_acl_filter_match(&f, &a), "pattern ANY with a name: exact names");
	f.pattern = RN_ACL_PAT_MATCH;
	ok(rn_acl_filter_match(&f, &a) && rn_acl_filter_match(&f, &w),
	    "pattern MATCH: the prefixed and the wildcard bindings that apply");
	f.pattern = RN_ACL_PAT_LITERAL;
	ok(!rn_acl_filter_match(&f, &a), "pattern LITERAL: not the prefixed one");
	f = any;
	f.principal = "User:alice";
	ok(!rn_acl_filter_match(&f, &a), "another principal does not match");
	f = any;
	f.op = RN_ACL_OP_WRITE;
	ok(!rn_acl_filter_match(&f, &a), "another operation does not match");

	ok(rn_acl_invalid(&a) == NULL, "a full binding is valid");
	a.pattern = RN_ACL_PAT_MATCH;
	ok(rn_acl_invalid(&a) != NULL, "MATCH is no pattern for a binding");
	a.pattern = RN_ACL_PAT_LITERAL;
	a.principal = "bob";
	ok(rn_acl_invalid(&a) != NULL, "a principal without a type is refused");
	a.principal = "User:bob";
	a.resource = RN_ACL_RES_CLUSTER;
	ok(rn_acl_invalid(&a) != NULL, "a cluster is named kafka-cluster");
	f = any;
	f.op = RN_ACL_OP_UNKNOWN;
	ok(rn_acl_filter_invalid(&f) != NULL, "a filter of UNKNOWN is refused");
	is_int(rn_acl_op_parse("describe-configs"), RN_ACL_OP_DESCRIBE_CONFIGS,
	    "operations parse as kafka-acls writes them");
	is_int(rn_acl_op_parse("IdempotentWrite"), RN_ACL_OP_IDEMPOTENT_WRITE,
	    "and as Kafka names them");
	is_int(rn_acl_op_parse("Any"), -1, "Any is no operation to grant");
}

int
main(void)
{
	plan(36);
	test_rules();
	test_filters_and_validation();
	return done_testing();
}
