/*
 * runnel-acls: add, list and remove ACL bindings over the Kafka protocol,
 * with kafka-acls' flag names, defaults and output shape.
 *
 *   runnel-acls --bootstrap-server H:P --add --allow-principal User:alice
 *       --operation Write --topic orders
 *   runnel-acls --bootstrap-server H:P --list [--topic T]
 *       [--resource-pattern-type match]
 *   runnel-acls --bootstrap-server H:P --remove --force --topic T
 *
 * librdkafka 2.0.2 knows the resource types TOPIC, GROUP and BROKER (the
 * wire code of CLUSTER) only: bindings on transactional ids, delegation
 * tokens and users cannot be written or named through it, so those flags
 * are refused with a message rather than half served. Its DescribeAcls
 * also drops the response's error code (an error reads as "no bindings"),
 * so an empty answer is checked with one DescribeAcls of our own codec.
 */
#include "autoconf.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/acl.h"
#include "common/arena.h"
#include "common/util.h"
#include "protocol/kmsg_gen.h"
#include "tools/tool_common.h"
#include "tools/tool_kclient.h"

/* Kafka's enum names, indexed by wire code. */
static const char *const res_names[] = {
	"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID",
	"DELEGATION_TOKEN", "USER",
};
static const char *const pat_names[] = {
	"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED",
};
static const char *const op_names[] = {
	"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER",
	"DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
	"IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS",
};
static const char *const perm_names[] = {
	"UNKNOWN", "ANY", "DENY", "ALLOW",
};

#define NAME_OF(tab, v) ((v) >= 0 && (size_t)(v) < RN_ARRAY_SIZE(tab) ? \
	(tab)[(v)] : "UNKNOWN")

/* The operations each resource type takes besides ALL (Kafka's AclEntry). */
static const struct {
	int8_t type;
	int8_t ops[9];
} supported_ops[] = {
	{ RN_ACL_RES_TOPIC, { RN_ACL_OP_READ, RN_ACL_OP_WRITE, RN_ACL_OP_CREATE,
	    RN_ACL_OP_DESCRIBE, RN_ACL_OP_DELETE, RN_ACL_OP_ALTER,
	    RN_ACL_OP_DESCRIBE_CONFIGS, RN_ACL_OP_ALTER_CONFIGS } },
	{ RN_ACL_RES_GROUP, { RN_ACL_OP_READ, RN_ACL_OP_DESCRIBE,
	    RN_ACL_OP_DELETE } },
	{ RN_ACL_RES_CLUSTER, { RN_ACL_OP_CREATE, RN_ACL_OP_CLUSTER_ACTION,
	    RN_ACL_OP_DESCRIBE_CONFIGS, RN_ACL_OP_ALTER_CONFIGS,
	    RN_ACL_OP_IDEMPOTENT_WRITE, RN_ACL_OP_ALTER, RN_ACL_OP_DESCRIBE } },
	{ RN_ACL_RES_TRANSACTIONAL_ID, { RN_ACL_OP_DESCRIBE, RN_ACL_OP_WRITE } },
	{ RN_ACL_RES_DELEGATION_TOKEN, { RN_ACL_OP_DESCRIBE } },
	{ RN_ACL_RES_USER, { RN_ACL_OP_CREATE_TOKENS,
	    RN_ACL_OP_DESCRIBE_TOKENS } },
};

/* A resource pattern, or a pattern filter when pattern is ANY or MATCH. */
struct res {
	int8_t type, pattern;
	const char *name;
};

/* An access control entry; in a filter, NULL and ANY match everything. */
struct ace {
	const char *principal, *host;
	int8_t op, perm;
};

/* One resource (filter) and the entries that go with it. */
struct res_aces {
	struct res res;
	struct ace *aces;
	int n, cap;
};

/* A list of option values in the order given. */
struct strs {
	const char **v;
	int n, cap;
};

struct opts {
	bool add, remove, list, cluster, producer, consumer, idempotent, force;
	const char *bootstrap;
	int8_t pattern;          /* RN_ACL_PAT_*; LITERAL by default */
	struct strs topics, groups, txn_ids, tokens, users;
	struct strs allow_p, deny_p, allow_h, deny_h, list_p;
	struct strs ops_s;
	int8_t ops[16];          /* --operation, parsed, each once */
	int n_ops;
	struct tool_props client;
	int timeout_ms;
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: runnel-acls --bootstrap-server HOST:PORT "
	    "--add | --remove | --list [options]\n"
	    "\n"
	    "Actions (exactly one):\n"
	    "  --add                 add the bindings the options describe\n"
	    "  --remove              remove them; without a principal, every "
	    "binding of\n"
	    "                        the resource (asks first unless --force)\n"
	    "  --list                list the bindings of the resources given, "
	    "or all\n"
	    "Resources (repeatable):\n"
	    "  --topic T             a topic; '*' is every topic\n"
	    "  --group G             a consumer group; '*' is every group\n"
	    "  --cluster             the cluster (kafka-cluster)\n"
	    "  --transactional-id T, --delegation-token T, --user-principal P\n"
	    "                        Kafka's; refused: librdkafka 2.0.2 cannot "
	    "name them\n"
	    "  --resource-pattern-type literal|prefixed|any|match\n"
	    "                        default literal; --add takes literal or "
	    "prefixed;\n"
	    "                        any: every pattern type with that exact "
	    "name;\n"
	    "                        match: every binding that applies to the "
	    "name\n"
	    "                        (with --remove, use with care)\n"
	    "Entries:\n"
	    "  --allow-principal P   Type:name, e.g. User:alice or User:* "
	    "(repeatable)\n"
	    "  --deny-principal P    the same, denied; DENY wins over ALLOW\n"
	    "  --allow-host H        hosts of the allowed principals "
	    "(default *)\n"
	    "  --deny-host H         hosts of the denied principals "
	    "(default *)\n"
	    "  --operation OP        repeatable, default All: Read, Write, "
	    "Create, Delete,\n"
	    "                        Alter, Describe, ClusterAction, "
	    "DescribeConfigs,\n"
	    "                        AlterConfigs, IdempotentWrite, "
	    "CreateTokens,\n"
	    "                        DescribeTokens, All (any case)\n"
	    "  --principal P         with --list: only this principal's "
	    "bindings\n"
	    "                        (repeatable)\n"
	    "Conveniences (with --allow-principal):\n"
	    "  --producer            WRITE, DESCRIBE, CREATE on the --topic "
	    "resources\n"
	    "  --idempotent          with --producer: IDEMPOTENT_WRITE on the "
	    "cluster\n"
	    "  --consumer            READ, DESCRIBE on the --topic resources, "
	    "READ on\n"
	    "                        the --group resources (both required)\n"
	    "Other:\n"
	    "  --force               do not ask before removing\n"
	    "  --command-config FILE, -X key=value   client properties\n"
	    "  --timeout-ms MS       how long to wait for the cluster "
	    "(default 30000)\n"
	    "  -h, --help            this text\n"
	    "\n"
	    "Exit status: 0 done, 1 the cluster refused or did not answer, "
	    "2 bad usage.\n");
}

static int
strs_add(struct strs *s, const char *v)
{
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 4;
		const char **n = realloc(s->v, (size_t)cap * sizeof(*n));

		if (n == NULL) {
			tool_errx("out of memory");
			return -1;
		}
		s->v = n;
		s->cap = cap;
	}
	s->v[s->n++] = v;
	return 0;
}

static void
strs_free(struct strs *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)" */
static void
print_res(FILE *f, const struct res *r)
{
	fprintf(f, "ResourcePattern(resourceType=%s, name=%s, patternType=%s)",
	    NAME_OF(res_names, r->type), r->name ? r->name : "<any>",
	    NAME_OF(pat_names, r->pattern));
}

/* "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" */
static void
print_ace(FILE *f, const struct ace *a)
{
	fprintf(f, "(principal=%s, host=%s, operation=%s, permissionType=%s)",
	    a->principal, a->host, NAME_OF(op_names, a->op),
	    NAME_OF(perm_names, a->perm));
}

/* Kafka's list of entries: the first line after " \t", the others "\t". */
static void
print_aces(const struct ace *aces, int n, bool lead)
{
	int i;

	for (i = 0; i < n; i++) {
		fputs(i == 0 && lead ? " \t" : "\t", stdout);
		print_ace(stdout, &aces[i]);
		putchar('\n');
	}
}

static bool
ace_eq(const struct ace *a, const struct ace *b)
{
	return a->op == b->op && a->perm == b->perm &&
	    strcmp(a->principal, b->principal) == 0 &&
	    strcmp(a->host, b->host) == 0;
}

static bool
res_eq(const struct res *a, const struct res *b)
{
	return a->type == b->type && a->pattern == b->pattern &&
	    strcmp(a->name, b->name) == 0;
}

/* Adds a to ra unless it is there already (entries form a set). */
static int
ra_add(struct res_aces *ra, const struct ace *a)
{
	int i;

	for (i = 0; i < ra->n; i++)
		if (ace_eq(&ra->aces[i], a))
			return 0;
	if (ra->n == ra->cap) {
		int cap = ra->cap ? ra->cap * 2 : 8;
		struct ace *n = realloc(ra->aces, (size_t)cap * sizeof(*n));

		if (n == NULL) {
			tool_errx("out of memory");
			return -1;
		}
		ra->aces = n;
		ra->cap = cap;
	}
	ra->aces[ra->n++] = *a;
	return 0;
}

struct plan {
	struct res_aces *v;
	int n, cap;
};

/* The entry of plan for r, added empty if new; NULL when out of memory. */
static struct res_aces *
plan_res(struct plan *p, const struct res *r)
{
	int i;

	for (i = 0; i < p->n; i++)
		if (res_eq(&p->v[i].res, r))
			return &p->v[i];
	if (p->n == p->cap) {
		int cap = p->cap ? p->cap * 2 : 8;
		struct res_aces *n = realloc(p->v, (size_t)cap * sizeof(*n));

		if (n == NULL) {
			tool_errx("out of memory");
			return NULL;
		}
		p->v = n;
		p->cap = cap;
	}
	memset(&p->v[p->n], 0, sizeof(p->v[p->n]));
	p->v[p->n].res = *r;
	return &p->v[p->n++];
}

static void
plan_free(struct plan *p)
{
	int i;

	for (i = 0; i < p->n; i++)
		free(p->v[i].aces);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

/*
 * The resources the options name, as Kafka's tool collects them: the
 * cluster only with the literal pattern type (it has one name).
 */
static int
collect_resources(const struct opts *o, struct plan *p)
{
	static const struct res cluster = { RN_ACL_RES_CLUSTER,
	    RN_ACL_PAT_LITERAL, RN_ACL_CLUSTER_NAME };
	const struct {
		const struct strs *s;
		int8_t type;
	} lists[] = {
		{ &o->topics, RN_ACL_RES_TOPIC },
		{ &o->groups, RN_ACL_RES_GROUP },
		{ &o->txn_ids, RN_ACL_RES_TRANSACTIONAL_ID },
		{ &o->tokens, RN_ACL_RES_DELEGATION_TOKEN },
		{ &o->users, RN_ACL_RES_USER },
	};
	size_t i;
	int j;

	for (i = 0; i < RN_ARRAY_SIZE(lists); i++) {
		for (j = 0; j < lists[i].s->n; j++) {
			struct res r = { lists[i].type, o->pattern,
			    lists[i].s->v[j] };

			if (plan_res(p, &r) == NULL)
				return -1;
		}
		if (i == 0 && o->pattern == RN_ACL_PAT_LITERAL &&
		    (o->cluster || o->idempotent) &&
		    plan_res(p, &cluster) == NULL)
			return -1;
	}
	return 0;
}

/* principals x ops x hosts, with hosts defaulting to "*". */
static int
add_entries(struct res_aces *ra, const struct strs *princ,
    const struct strs *hosts, const int8_t *ops, int n_ops, int8_t perm)
{
	int i, j, k;

	for (i = 0; i < princ->n; i++)
		for (j = 0; j < n_ops; j++)
			for (k = 0; k < (hosts->n ? hosts->n : 1); k++) {
				struct ace a = { princ->v[i], hosts->n ?
				    hosts->v[k] : RN_ACL_WILDCARD, ops[j],
				    perm };

				if (ra_add(ra, &a) != 0)
					return -1;
			}
	return 0;
}

static int
add_cli_entries(const struct opts *o, struct res_aces *ra,
    const int8_t *ops, int n_ops)
{
	if (add_entries(ra, &o->allow_p, &o->allow_h, ops, n_ops,
	    RN_ACL_PERM_ALLOW) != 0)
		return -1;
	return add_entries(ra, &o->deny_p, &o->deny_h, ops, n_ops,
	    RN_ACL_PERM_DENY);
}

/*
 * Each resource with its entries, as Kafka's tool derives them: from
 * --operation and the principals, or from --producer and --consumer.
 * An entry set left empty means "every binding" to --remove.
 */
static int
build_plan(const struct opts *o, struct plan *out)
{
	static const int8_t prod_topic[] = { RN_ACL_OP_WRITE,
	    RN_ACL_OP_DESCRIBE, RN_ACL_OP_CREATE };
	static const int8_t prod_txn[] = { RN_ACL_OP_WRITE,
	    RN_ACL_OP_DESCRIBE };
	static const int8_t idem[] = { RN_ACL_OP_IDEMPOTENT_WRITE };
	static const int8_t cons_topic[] = { RN_ACL_OP_READ,
	    RN_ACL_OP_DESCRIBE };
	static const int8_t cons_group[] = { RN_ACL_OP_READ };
	static const struct res cluster = { RN_ACL_RES_CLUSTER,
	    RN_ACL_PAT_LITERAL, RN_ACL_CLUSTER_NAME };
	struct plan all = { 0 };
	struct res_aces *ra;
	int i, rc = -1;

	if (collect_resources(o, &all) != 0)
		goto out;
	for (i = 0; i < all.n; i++) {
		const struct res *r = &all.v[i].res;

		if (!o->producer && !o->consumer) {
			if ((ra = plan_res(out, r)) == NULL ||
			    add_cli_entries(o, ra, o->ops, o->n_ops) != 0)
				goto out;
			continue;
		}
		if (o->producer && (r->type == RN_ACL_RES_TOPIC ||
		    r->type == RN_ACL_RES_TRANSACTIONAL_ID)) {
			bool topic = r->type == RN_ACL_RES_TOPIC;

			if ((ra = plan_res(out, r)) == NULL ||
			    add_cli_entries(o, ra, topic ? prod_topic :
			    prod_txn, topic ? 3 : 2) != 0)
				goto out;
		}
		if (o->consumer && (r->type == RN_ACL_RES_TOPIC ||
		    r->type == RN_ACL_RES_GROUP)) {
			bool topic = r->type == RN_ACL_RES_TOPIC;

			if ((ra = plan_res(out, r)) == NULL ||
			    add_cli_entries(o, ra, topic ? cons_topic :
			    cons_group, topic ? 2 : 1) != 0)
				goto out;
		}
	}
	if (o->producer && o->idempotent &&
	    ((ra = plan_res(out, &cluster)) == NULL ||
	    add_cli_entries(o, ra, idem, 1) != 0))
		goto out;
	rc = 0;
out:
	plan_free(&all);
	return rc;
}

static bool
op_supported(int8_t type, int8_t op)
{
	size_t i, j;

	if (op == RN_ACL_OP_ALL)
		return true;
	for (i = 0; i < RN_ARRAY_SIZE(supported_ops); i++)
		if (supported_ops[i].type == type)
			for (j = 0; j < RN_ARRAY_SIZE(supported_ops[i].ops);
			    j++)
				if (supported_ops[i].ops[j] == op)
					return true;
	return false;
}

/* Every entry's operation applies to its resource type; 0 or -1. */
static int
check_plan_ops(const struct plan *p)
{
	size_t i, j;
	int k, m;

	for (k = 0; k < p->n; k++) {
		int8_t type = p->v[k].res.type;

		for (m = 0; m < p->v[k].n; m++) {
			if (op_supported(type, p->v[k].aces[m].op))
				continue;
			fprintf(stderr, "%s: ResourceType %s only supports "
			    "operations [", tool_prog(),
			    NAME_OF(res_names, type));
			for (i = 0; i < RN_ARRAY_SIZE(supported_ops); i++) {
				if (supported_ops[i].type != type)
					continue;
				for (j = 0; j < RN_ARRAY_SIZE(
				    supported_ops[i].ops) &&
				    supported_ops[i].ops[j] != 0; j++)
					fprintf(stderr, "%s, ", NAME_OF(op_names,
					    supported_ops[i].ops[j]));
			}
			fprintf(stderr, "ALL]\n");
			return -1;
		}
	}
	return 0;
}

/* ---- librdkafka ---- */

/* The filter for r with entry a (NULL: any entry); NULL after saying why. */
static rd_kafka_AclBindingFilter_t *
filter_new(const struct res *r, const struct ace *a)
{
	rd_kafka_AclBindingFilter_t *f;
	char errstr[256];

	f = rd_kafka_AclBindingFilter_new(
	    (rd_kafka_ResourceType_t)(r ? r->type : RN_ACL_RES_ANY),
	    r ? r->name : NULL,
	    (rd_kafka_ResourcePatternType_t)(r ? r->pattern : RN_ACL_PAT_ANY),
	    a ? a->principal : NULL, a ? a->host : NULL,
	    (rd_kafka_AclOperation_t)(a ? a->op : RN_ACL_OP_ANY),
	    (rd_kafka_AclPermissionType_t)(a ? a->perm : RN_ACL_PERM_ANY),
	    errstr, sizeof(errstr));
	if (f == NULL)
		tool_errx("cannot build the ACL filter: %s", errstr);
	return f;
}

/* A binding's resource and entry as ours (strings owned by b). */
static void
from_binding(const rd_kafka_AclBinding_t *b, struct res *r, struct ace *a)
{
	r->type = (int8_t)rd_kafka_AclBinding_restype(b);
	r->name = rd_kafka_AclBinding_name(b);
	r->pattern = (int8_t)rd_kafka_AclBinding_resource_pattern_type(b);
	a->principal = rd_kafka_AclBinding_principal(b);
	a->host = rd_kafka_AclBinding_host(b);
	a->op = (int8_t)rd_kafka_AclBinding_operation(b);
	a->perm = (int8_t)rd_kafka_AclBinding_permission_type(b);
}

/*
 * The error librdkafka 2.0.2 leaves out of a DescribeAcls answer, asked
 * again of the first bootstrap server with our codec: 0 if none (or no
 * plain-text answer to tell), else -1 after reporting it.
 */
static int
describe_error(const struct opts *o, const struct res *r, const char *what)
{
	struct rn_DescribeAclsRequest req;
	struct rn_DescribeAclsResponse resp;
	struct rn_arena arena;
	char err[256], *msg;
	int fd, rc = 0;

	if (!tool_plaintext_only(&o->client) ||
	    (fd = tkc_connect(o->bootstrap, o->timeout_ms, err,
	    sizeof(err))) < 0)
		return 0;
	rn_DescribeAclsRequest_init(&req);
	req.resource_type_filter = r ? r->type : RN_ACL_RES_ANY;
	req.resource_name_filter = rn_kstr_c(r ? r->name : NULL);
	req.pattern_type_filter = r ? r->pattern : RN_ACL_PAT_ANY;
	req.principal_filter = rn_kstr_c(NULL);
	req.host_filter = rn_kstr_c(NULL);
	req.operation = RN_ACL_OP_ANY;
	req.permission_type = RN_ACL_PERM_ANY;
	rn_arena_init(&arena, 16u << 20);
	/* v1: pattern types; the version librdkafka 2.0.2 speaks */
	if (tkc_call_api(fd, RN_KAPI_DESCRIBE_ACLS, 1, &req, &arena, &resp,
	    o->timeout_ms, err, sizeof(err)) == 0 && resp.error_code != 0) {
		msg = resp.error_message.len > 0 ? strndup(
		    resp.error_message.ptr, (size_t)resp.error_message.len) :
		    NULL;
		tool_report_err(what, (rd_kafka_resp_err_t)resp.error_code,
		    msg);
		free(msg);
		rc = -1;
	}
	rn_arena_free(&arena);
	close(fd);
	return rc;
}

/*
 * DescribeAcls for r (NULL: everything); the result event, its bindings
 * in *bs, or NULL after saying why.
 */
static rd_kafka_event_t *
describe(rd_kafka_t *rk, const struct opts *o, const struct res *r,
    const rd_kafka_AclBinding_t ***bs, size_t *n, const char *what)
{
	rd_kafka_AclBindingFilter_t *f;
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_queue_t *q;
	rd_kafka_event_t *ev;

	if ((f = filter_new(r, NULL)) == NULL)
		return NULL;
	q = rd_kafka_queue_new(rk);
	ao = tool_admin_options(rk, RD_KAFKA_ADMIN_OP_DESCRIBEACLS,
	    o->timeout_ms);
	rd_kafka_DescribeAcls(rk, f, ao, q);
	rd_kafka_AclBinding_destroy(f);
	rd_kafka_AdminOptions_destroy(ao);
	ev = tool_admin_wait(rk, q, RD_KAFKA_EVENT_DESCRIBEACLS_RESULT,
	    o->timeout_ms + 5000, what);
	rd_kafka_queue_destroy(q);
	if (ev == NULL)
		return NULL;
	if (rd_kafka_event_error(ev)) {
		tool_report_err(what, rd_kafka_event_error(ev),
		    rd_kafka_event_error_string(ev));
		rd_kafka_event_destroy(ev);
		return NULL;
	}
	*bs = rd_kafka_DescribeAcls_result_acls(
	    rd_kafka_event_DescribeAcls_result(ev), n);
	if (*n == 0 && describe_error(o, r, what) != 0) {
		rd_kafka_event_destroy(ev);
		return NULL;
	}
	return ev;
}

static void
report_error_obj(const char *what, const rd_kafka_error_t *e)
{
	tool_report_err(what, rd_kafka_error_code(e), rd_kafka_error_string(e));
}

/* CreateAcls for the n entries of ra; an exit code. */
static int
create(rd_kafka_t *rk, const struct opts *o, const struct res_aces *ra,
    const struct ace *aces, int n)
{
	const rd_kafka_acl_result_t **res;
	rd_kafka_AclBinding_t **bs;
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_queue_t *q;
	rd_kafka_event_t *ev;
	const char *what = "cannot add the ACLs";
	char errstr[256];
	size_t nres, i;
	int k, rc = TOOL_EXIT_FAIL;

	if ((bs = calloc((size_t)n, sizeof(*bs))) == NULL) {
		tool_errx("out of memory");
		return TOOL_EXIT_FAIL;
	}
	for (k = 0; k < n; k++) {
		bs[k] = rd_kafka_AclBinding_new(
		    (rd_kafka_ResourceType_t)ra->res.type, ra->res.name,
		    (rd_kafka_ResourcePatternType_t)ra->res.pattern,
		    aces[k].principal, aces[k].host,
		    (rd_kafka_AclOperation_t)aces[k].op,
		    (rd_kafka_AclPermissionType_t)aces[k].perm, errstr,
		    sizeof(errstr));
		if (bs[k] == NULL) {
			tool_errx("%s: %s", what, errstr);
			rd_kafka_AclBinding_destroy_array(bs, (size_t)k);
			free(bs);
			return TOOL_EXIT_FAIL;
		}
	}
	q = rd_kafka_queue_new(rk);
	ao = tool_admin_options(rk, RD_KAFKA_ADMIN_OP_CREATEACLS,
	    o->timeout_ms);
	rd_kafka_CreateAcls(rk, bs, (size_t)n, ao, q);
	if ((ev = tool_admin_wait(rk, q, RD_KAFKA_EVENT_CREATEACLS_RESULT,
	    o->timeout_ms + 5000, what)) == NULL)
		goto out;
	if (rd_kafka_event_error(ev)) {
		tool_report_err(what, rd_kafka_event_error(ev),
		    rd_kafka_event_error_string(ev));
		goto out_ev;
	}
	res = rd_kafka_CreateAcls_result_acls(
	    rd_kafka_event_CreateAcls_result(ev), &nres);
	rc = TOOL_EXIT_OK;
	for (i = 0; i < nres; i++)
		if (rd_kafka_acl_result_error(res[i]) != NULL) {
			report_error_obj(what,
			    rd_kafka_acl_result_error(res[i]));
			rc = TOOL_EXIT_FAIL;
		}
out_ev:
	rd_kafka_event_destroy(ev);
out:
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	rd_kafka_AclBinding_destroy_array(bs, (size_t)n);
	free(bs);
	return rc;
}

static int
do_add(rd_kafka_t *rk, const struct opts *o, const struct plan *p)
{
	const rd_kafka_AclBinding_t **bs;
	rd_kafka_event_t *ev;
	struct ace *fresh;
	size_t nb, i;
	int k, m, nf, rc = TOOL_EXIT_OK;

	for (k = 0; k < p->n && rc == TOOL_EXIT_OK; k++) {
		const struct res_aces *ra = &p->v[k];

		/* what exists already is said, not sent again */
		if ((ev = describe(rk, o, &ra->res, &bs, &nb,
		    "cannot read the current ACLs")) == NULL)
			return TOOL_EXIT_FAIL;
		if ((fresh = calloc((size_t)ra->n + 1, sizeof(*fresh))) ==
		    NULL) {
			rd_kafka_event_destroy(ev);
			tool_errx("out of memory");
			return TOOL_EXIT_FAIL;
		}
		for (m = nf = 0; m < ra->n; m++) {
			bool found = false;

			for (i = 0; i < nb && !found; i++) {
				struct res r;
				struct ace a;

				from_binding(bs[i], &r, &a);
				found = res_eq(&r, &ra->res) &&
				    ace_eq(&a, &ra->aces[m]);
			}
			if (!found) {
				fresh[nf++] = ra->aces[m];
				continue;
			}
			printf("Acl (pattern=");
			print_res(stdout, &ra->res);
			printf(", entry=");
			print_ace(stdout, &ra->aces[m]);
			printf(") already exists.\n");
		}
		if (nf > 0) {
			printf("Adding ACLs for resource `");
			print_res(stdout, &ra->res);
			printf("`: \n");
			print_aces(fresh, nf, true);
			printf("\n");
			fflush(stdout);
			rc = create(rk, o, ra, fresh, nf);
		}
		free(fresh);
		rd_kafka_event_destroy(ev);
	}
	return rc;
}

/* Kafka's confirmation: a line on stdin, "y" (any case) is yes. */
static bool
confirm(const struct opts *o)
{
	char *line = NULL;
	size_t cap = 0;
	bool yes;

	if (o->force)
		return true;
	fflush(stdout);
	if (getline(&line, &cap, stdin) == -1) {
		free(line);
		return false;
	}
	yes = strcasecmp(rn_trim(line), "y") == 0;
	free(line);
	return yes;
}

/* DeleteAcls with the n filters; an exit code. */
static int
delete(rd_kafka_t *rk, const struct opts *o,
    rd_kafka_AclBindingFilter_t **fs, size_t n)
{
	const rd_kafka_DeleteAcls_result_response_t **rs;
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_event_t *ev;
	const char *what = "cannot remove the ACLs";
	size_t nr, i;
	int rc = TOOL_EXIT_FAIL;

	ao = tool_admin_options(rk, RD_KAFKA_ADMIN_OP_DELETEACLS,
	    o->timeout_ms);
	rd_kafka_DeleteAcls(rk, fs, n, ao, q);
	rd_kafka_AdminOptions_destroy(ao);
	ev = tool_admin_wait(rk, q, RD_KAFKA_EVENT_DELETEACLS_RESULT,
	    o->timeout_ms + 5000, what);
	rd_kafka_queue_destroy(q);
	if (ev == NULL)
		return TOOL_EXIT_FAIL;
	if (rd_kafka_event_error(ev)) {
		tool_report_err(what, rd_kafka_event_error(ev),
		    rd_kafka_event_error_string(ev));
		rd_kafka_event_destroy(ev);
		return TOOL_EXIT_FAIL;
	}
	rs = rd_kafka_DeleteAcls_result_responses(
	    rd_kafka_event_DeleteAcls_result(ev), &nr);
	rc = TOOL_EXIT_OK;
	for (i = 0; i < nr; i++)
		if (rd_kafka_DeleteAcls_result_response_error(rs[i]) != NULL) {
			report_error_obj(what,
			    rd_kafka_DeleteAcls_result_response_error(rs[i]));
			rc = TOOL_EXIT_FAIL;
		}
	rd_kafka_event_destroy(ev);
	return rc;
}

static int
do_remove(rd_kafka_t *rk, const struct opts *o, const struct plan *p)
{
	rd_kafka_AclBindingFilter_t **fs;
	int k, m, nf, rc = TOOL_EXIT_OK;

	for (k = 0; k < p->n && rc == TOOL_EXIT_OK; k++) {
		const struct res_aces *ra = &p->v[k];

		if (!o->force) {
			if (ra->n == 0) {
				printf("Are you sure you want to delete all "
				    "ACLs for resource filter `");
				print_res(stdout, &ra->res);
				printf("`? (y/n)\n");
			} else {
				printf("Are you sure you want to remove ACLs: "
				    "\n");
				print_aces(ra->aces, ra->n, true);
				printf(" from resource filter `");
				print_res(stdout, &ra->res);
				printf("`? (y/n)\n");
			}
		}
		if (!confirm(o))
			continue;
		/* no entries given: one filter for every entry */
		if ((fs = calloc((size_t)ra->n + 1, sizeof(*fs))) == NULL) {
			tool_errx("out of memory");
			return TOOL_EXIT_FAIL;
		}
		nf = ra->n ? ra->n : 1;
		for (m = 0; m < nf; m++)
			if ((fs[m] = filter_new(&ra->res, ra->n ?
			    &ra->aces[m] : NULL)) == NULL)
				break;
		rc = m == nf ? delete(rk, o, fs, (size_t)nf) : TOOL_EXIT_FAIL;
		rd_kafka_AclBinding_destroy_array(fs, (size_t)m);
		free(fs);
	}
	return rc;
}

/* Whether principal is one --principal asks for (all without any). */
static bool
wanted(const char *principal, const char *want)
{
	return want == NULL || strcmp(principal, want) == 0;
}

static void
print_listing(const struct plan *found, const char *want)
{
	int k, m;

	for (k = 0; k < found->n; k++) {
		const struct res_aces *ra = &found->v[k];
		bool any = false;

		for (m = 0; m < ra->n; m++)
			any = any || wanted(ra->aces[m].principal, want);
		if (!any)
			continue;
		printf("Current ACLs for resource `");
		print_res(stdout, &ra->res);
		printf("`:\n");
		for (m = 0; m < ra->n; m++)
			if (wanted(ra->aces[m].principal, want)) {
				putchar('\t');
				print_ace(stdout, &ra->aces[m]);
				putchar('\n');
			}
		printf("\n");
	}
}

static int
do_list(rd_kafka_t *rk, const struct opts *o, const struct plan *p)
{
	const rd_kafka_AclBinding_t **bs;
	rd_kafka_event_t **evs;
	struct plan found = { 0 };
	size_t nb, i;
	int k, nq = p->n ? p->n : 1, rc = TOOL_EXIT_FAIL;

	/* the events own the strings the listing points at */
	if ((evs = calloc((size_t)nq, sizeof(*evs))) == NULL) {
		tool_errx("out of memory");
		return TOOL_EXIT_FAIL;
	}
	for (k = 0; k < nq; k++) {
		if ((evs[k] = describe(rk, o, p->n ? &p->v[k].res : NULL, &bs,
		    &nb, "cannot list the ACLs")) == NULL)
			goto out;
		for (i = 0; i < nb; i++) {
			struct res_aces *ra;
			struct res r;
			struct ace a;

			from_binding(bs[i], &r, &a);
			if ((ra = plan_res(&found, &r)) == NULL ||
			    ra_add(ra, &a) != 0)
				goto out;
		}
	}
	for (k = 0, nb = 0; k < found.n; k++)
		if (found.v[k].res.type == RN_ACL_RES_UNKNOWN)
			nb += (size_t)found.v[k].n;
	if (nb > 0)
		tool_warnx("%zu binding(s) on resource types librdkafka 2.0.2 "
		    "does not know (transactional ids, delegation tokens, "
		    "users) are shown as UNKNOWN", nb);
	if (o->list_p.n == 0)
		print_listing(&found, NULL);
	for (k = 0; k < o->list_p.n; k++) {
		printf("ACLs for principal `%s`\n", o->list_p.v[k]);
		print_listing(&found, o->list_p.v[k]);
	}
	rc = TOOL_EXIT_OK;
out:
	for (k = 0; k < nq; k++)
		if (evs[k] != NULL)
			rd_kafka_event_destroy(evs[k]);
	free(evs);
	plan_free(&found);
	return rc;
}

/* ---- options ---- */

/* "Type:name", as Kafka's principal parser wants it; 0 or -1. */
static int
check_principals(const char *flag, const struct strs *s)
{
	int i;

	for (i = 0; i < s->n; i++) {
		const char *c = strchr(s->v[i], ':');

		if (c == NULL || c == s->v[i] || c[1] == '\0') {
			tool_errx("%s: expected a string in format "
			    "principalType:principalName but got '%s'", flag,
			    s->v[i]);
			return -1;
		}
	}
	return 0;
}

/* A misuse: "a cannot be used with b" when both are given. */
static int
exclusive(bool a, const char *an, bool b, const char *bn)
{
	if (a && b) {
		tool_errx("%s cannot be used with %s", an, bn);
		return -1;
	}
	return 0;
}

static int
check_opts(struct opts *o)
{
	bool has_res;
	int i, v;

	if (tool_check_bootstrap(o->bootstrap) != 0)
		return -1;
	if ((int)o->add + (int)o->remove + (int)o->list != 1) {
		tool_errx("Command must include exactly one action: --list, "
		    "--add, --remove.");
		return -1;
	}
	if (exclusive(o->list, "--list", o->producer, "--producer") ||
	    exclusive(o->list, "--list", o->consumer, "--consumer") ||
	    exclusive(o->list, "--list", o->allow_h.n, "--allow-host") ||
	    exclusive(o->list, "--list", o->allow_p.n, "--allow-principal") ||
	    exclusive(o->list, "--list", o->deny_h.n, "--deny-host") ||
	    exclusive(o->list, "--list", o->deny_p.n, "--deny-principal"))
		return -1;
	for (i = 0; i < 2; i++) {
		bool conv = i == 0 ? o->producer : o->consumer;
		const char *cn = i == 0 ? "--producer" : "--consumer";

		if (exclusive(conv, cn, o->ops_s.n, "--operation") ||
		    exclusive(conv, cn, o->deny_p.n, "--deny-principal") ||
		    exclusive(conv, cn, o->deny_h.n, "--deny-host"))
			return -1;
	}
	if (o->list_p.n && !o->list) {
		tool_errx("The --principal option is only available if --list "
		    "is set");
		return -1;
	}
	if (o->producer && o->topics.n == 0) {
		tool_errx("With --producer you must specify a --topic");
		return -1;
	}
	if (o->idempotent && !o->producer) {
		tool_errx("The --idempotent option is only available if "
		    "--producer is set");
		return -1;
	}
	if (o->consumer && (o->topics.n == 0 || o->groups.n == 0 ||
	    (!o->producer && (o->cluster || o->txn_ids.n)))) {
		tool_errx("With --consumer you must specify a --topic and a "
		    "--group and no --cluster or --transactional-id option "
		    "should be specified.");
		return -1;
	}
	if (o->add && o->pattern != RN_ACL_PAT_LITERAL &&
	    o->pattern != RN_ACL_PAT_PREFIXED) {
		tool_errx("A '--resource-pattern-type' value of '%s' is not "
		    "valid when adding acls.", NAME_OF(pat_names, o->pattern));
		return -1;
	}
	if (o->txn_ids.n || o->tokens.n || o->users.n) {
		tool_errx("--transactional-id, --delegation-token and "
		    "--user-principal are not supported: librdkafka 2.0.2 "
		    "cannot name those resource types");
		return -1;
	}
	if (check_principals("--allow-principal", &o->allow_p) ||
	    check_principals("--deny-principal", &o->deny_p) ||
	    check_principals("--principal", &o->list_p))
		return -1;
	for (i = 0; i < o->ops_s.n; i++) {
		if ((v = rn_acl_op_parse(o->ops_s.v[i])) < 0) {
			tool_errx("--operation '%s': not an operation (Read, "
			    "Write, Create, Delete, Alter, Describe, "
			    "ClusterAction, DescribeConfigs, AlterConfigs, "
			    "IdempotentWrite, CreateTokens, DescribeTokens, "
			    "All)", o->ops_s.v[i]);
			return -1;
		}
		/* a set: at most one of each of the 13 operations */
		if (memchr(o->ops, v, (size_t)o->n_ops) == NULL)
			o->ops[o->n_ops++] = (int8_t)v;
	}
	if (o->n_ops == 0)
		o->ops[o->n_ops++] = RN_ACL_OP_ALL;
	has_res = o->topics.n || o->groups.n ||
	    (o->pattern == RN_ACL_PAT_LITERAL && (o->cluster || o->idempotent));
	if (!o->list && !has_res) {
		tool_errx("You must provide at least one resource: --topic "
		    "<topic> or --cluster or --group <group> or "
		    "--delegation-token <Delegation Token ID>");
		return -1;
	}
	if (o->add && o->allow_p.n == 0 && o->deny_p.n == 0) {
		tool_errx("You must specify one of: --allow-principal, "
		    "--deny-principal when trying to add ACLs.");
		return -1;
	}
	return 0;
}

enum {
	O_BOOTSTRAP = 256, O_ADD, O_REMOVE, O_LIST, O_TOPIC, O_GROUP,
	O_CLUSTER, O_TXN, O_TOKEN, O_USER, O_PATTERN, O_ALLOW_P, O_DENY_P,
	O_ALLOW_H, O_DENY_H, O_OP, O_PRINCIPAL, O_PRODUCER, O_CONSUMER,
	O_IDEMPOTENT, O_FORCE,
};

static const struct option lopts[] = {
	{ "bootstrap-server", required_argument, NULL, O_BOOTSTRAP },
	{ "add", no_argument, NULL, O_ADD },
	{ "remove", no_argument, NULL, O_REMOVE },
	{ "list", no_argument, NULL, O_LIST },
	{ "topic", required_argument, NULL, O_TOPIC },
	{ "group", required_argument, NULL, O_GROUP },
	{ "cluster", no_argument, NULL, O_CLUSTER },
	{ "transactional-id", required_argument, NULL, O_TXN },
	{ "delegation-token", required_argument, NULL, O_TOKEN },
	{ "user-principal", required_argument, NULL, O_USER },
	{ "resource-pattern-type", required_argument, NULL, O_PATTERN },
	{ "allow-principal", required_argument, NULL, O_ALLOW_P },
	{ "deny-principal", required_argument, NULL, O_DENY_P },
	{ "allow-host", required_argument, NULL, O_ALLOW_H },
	{ "deny-host", required_argument, NULL, O_DENY_H },
	{ "operation", required_argument, NULL, O_OP },
	{ "principal", required_argument, NULL, O_PRINCIPAL },
	{ "producer", no_argument, NULL, O_PRODUCER },
	{ "consumer", no_argument, NULL, O_CONSUMER },
	{ "idempotent", no_argument, NULL, O_IDEMPOTENT },
	{ "force", no_argument, NULL, O_FORCE },
	TOOL_LOPT_TIMEOUT,
	TOOL_LOPT_CLIENT,
	{ NULL, 0, NULL, 0 },
};

/* Kafka trims the names and principals it is given. */
static const char *
trimmed(const char *arg)
{
	return rn_trim((char *)arg);
}

/* One option into o; 0, or -1 after saying why. */
static int
one_opt(int ch, const char *arg, void *arg_o)
{
	struct opts *o = arg_o;
	int v;

	switch (ch) {
	case O_BOOTSTRAP: o->bootstrap = arg; break;
	case O_ADD: o->add = true; break;
	case O_REMOVE: o->remove = true; break;
	case O_LIST: o->list = true; break;
	case O_CLUSTER: o->cluster = true; break;
	case O_PRODUCER: o->producer = true; break;
	case O_CONSUMER: o->consumer = true; break;
	case O_IDEMPOTENT: o->idempotent = true; break;
	case O_FORCE: o->force = true; break;
	case O_TOPIC: return strs_add(&o->topics, trimmed(arg));
	case O_GROUP: return strs_add(&o->groups, trimmed(arg));
	case O_TXN: return strs_add(&o->txn_ids, arg);
	case O_TOKEN: return strs_add(&o->tokens, trimmed(arg));
	case O_USER: return strs_add(&o->users, trimmed(arg));
	case O_ALLOW_P: return strs_add(&o->allow_p, trimmed(arg));
	case O_DENY_P: return strs_add(&o->deny_p, trimmed(arg));
	case O_ALLOW_H: return strs_add(&o->allow_h, trimmed(arg));
	case O_DENY_H: return strs_add(&o->deny_h, trimmed(arg));
	case O_PRINCIPAL: return strs_add(&o->list_p, trimmed(arg));
	case O_OP: return strs_add(&o->ops_s, trimmed(arg));
	case O_PATTERN:
		if ((v = rn_acl_pattern_parse(arg)) < 0) {
			tool_errx("Unknown resource-pattern-type: %s "
			    "(ANY|MATCH|LITERAL|PREFIXED)", arg);
			return -1;
		}
		o->pattern = (int8_t)v;
		break;
	}
	return 0;
}

static int
check(void *o)
{
	return check_opts(o);
}

static void
opts_free(struct opts *o)
{
	strs_free(&o->topics);
	strs_free(&o->groups);
	strs_free(&o->txn_ids);
	strs_free(&o->tokens);
	strs_free(&o->users);
	strs_free(&o->allow_p);
	strs_free(&o->deny_p);
	strs_free(&o->allow_h);
	strs_free(&o->deny_h);
	strs_free(&o->list_p);
	strs_free(&o->ops_s);
	tool_props_free(&o->client);
}

int
main(int argc, char **argv)
{
	struct tool_cli cli = { lopts, one_opt, check, usage, NULL, NULL };
	struct plan p = { 0 };
	struct opts o;
	rd_kafka_t *rk;
	int rc;

	tool_init(argv[0]);
	memset(&o, 0, sizeof(o));
	o.timeout_ms = TOOL_DEFAULT_TIMEOUT_MS;
	o.pattern = RN_ACL_PAT_LITERAL;
	cli.client = &o.client;
	cli.timeout_ms = &o.timeout_ms;
	if ((rc = tool_parse_args(argc, argv, &cli, &o)) >= 0)
		goto out;
	rc = TOOL_EXIT_USAGE;
	if (o.list) {
		if (collect_resources(&o, &p) != 0)
			goto out;
	} else if (build_plan(&o, &p) != 0)
		goto out;
	else if (check_plan_ops(&p) != 0) {
		fprintf(stderr, "(%s --help for usage)\n", tool_prog());
		goto out;
	}
	rc = TOOL_EXIT_FAIL;
	if ((rk = tool_client_new(RD_KAFKA_PRODUCER, o.bootstrap, &o.client,
	    NULL)) == NULL)
		goto out;
	if (o.add)
		rc = do_add(rk, &o, &p);
	else if (o.remove)
		rc = do_remove(rk, &o, &p);
	else
		rc = do_list(rk, &o, &p);
	rd_kafka_destroy(rk);
out:
	plan_free(&p);
	opts_free(&o);
	return rc;
}
