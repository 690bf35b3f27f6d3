/*
 * runnel-reassign-partitions: moving partition replicas between brokers,
 * shaped like kafka-reassign-partitions.sh.
 *
 *   runnel-reassign-partitions --bootstrap-server H:P
 *       --generate --topics-to-move-json-file F --broker-list 1,2,3
 *     | --execute --reassignment-json-file F [--throttle BYTES_PER_SEC]
 *       [--replica-alter-log-dirs-throttle BYTES_PER_SEC] [--timeout MS]
 *     | --verify --reassignment-json-file F [--preserve-throttles]
 *     | --cancel --reassignment-json-file F [--preserve-throttles]
 *
 * AlterPartitionReassignments, ListPartitionReassignments, Metadata and
 * IncrementalAlterConfigs over tools/tool_kclient.c; for the replicas the
 * plan's log_dirs name a dir, AlterReplicaLogDirs to their brokers and
 * DescribeLogDirs (reassign_dirs.c).
 */
#include "autoconf.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "storage/checkpoint.h"
#include "tools/reassign.h"
#include "tools/tool_kclient.h"
#include "common/placement.h"

#define MD_VERSION 9

static const char *prog = "runnel-reassign-partitions";

enum verb { V_NONE, V_GENERATE, V_EXECUTE, V_VERIFY, V_CANCEL };

struct ra_opts {
	const char *bootstrap, *plan_file, *topics_file, *broker_list;
	enum verb verb;
	long long throttle;     /* -1: none */
	bool preserve;
	long long timeout_ms;   /* for log dir moves to start */
	long long dir_throttle; /* -1: none */
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: %s --bootstrap-server HOST:PORT\n"
	    "       --generate --topics-to-move-json-file FILE "
	    "--broker-list 1,2,3\n"
	    "     | --execute --reassignment-json-file FILE "
	    "[--throttle BYTES_PER_SEC]\n"
	    "       [--replica-alter-log-dirs-throttle BYTES_PER_SEC] "
	    "[--timeout MS]\n"
	    "     | --verify --reassignment-json-file FILE "
	    "[--preserve-throttles]\n"
	    "     | --cancel --reassignment-json-file FILE "
	    "[--preserve-throttles]\n", prog);
}

static int
set_verb(struct ra_opts *o, enum verb v)
{
	if (o->verb != V_NONE && o->verb != v) {
		fprintf(stderr, "%s: give one of --generate, --execute, "
		    "--verify, --cancel\n", prog);
		return -1;
	}
	o->verb = v;
	return 0;
}

/* Fill o from the command line; -1 to go on, else the exit code. */
static int
parse_args(int argc, char **argv, struct ra_opts *o)
{
	static const struct option opts[] = {
		{ "bootstrap-server", required_argument, NULL, 'b' },
		{ "generate", no_argument, NULL, 'g' },
		{ "execute", no_argument, NULL, 'e' },
		{ "verify", no_argument, NULL, 'v' },
		{ "cancel", no_argument, NULL, 'c' },
		{ "reassignment-json-file", required_argument, NULL, 'r' },
		{ "topics-to-move-json-file", required_argument, NULL, 't' },
		{ "broker-list", required_argument, NULL, 'l' },
		{ "throttle", required_argument, NULL, 'T' },
		{ "preserve-throttles", no_argument, NULL, 'p' },
		{ "timeout", required_argument, NULL, 'W' },
		{ "replica-alter-log-dirs-throttle", required_argument, NULL,
		    'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int ch, rc = 0;

	while (rc == 0 && (ch = getopt_long(argc, argv, "h", opts,
	    NULL)) != -1) {
		switch (ch) {
		case 'b': o->bootstrap = optarg; break;
		case 'g': rc = set_verb(o, V_GENERATE); break;
		case 'e': rc = set_verb(o, V_EXECUTE); break;
		case 'v': rc = set_verb(o, V_VERIFY); break;
		case 'c': rc = set_verb(o, V_CANCEL); break;
		case 'r': o->plan_file = optarg; break;
		case 't': o->topics_file = optarg; break;
		case 'l': o->broker_list = optarg; break;
		case 'T':
			o->throttle = strtoll(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || o->throttle < 1)
				rc = -1;
			break;
		case 'p': o->preserve = true; break;
		case 'D':
			o->dir_throttle = strtoll(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' ||
			    o->dir_throttle < 1)
				rc = -1;
			break;
		case 'W':
			o->timeout_ms = strtoll(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' ||
			    o->timeout_ms < 0)
				rc = -1;
			break;
		case 'h': usage(stdout); return 0;
		default: rc = -1; break;
		}
	}
	if (rc != 0 || o->bootstrap == NULL || o->verb == V_NONE ||
	    optind != argc || (o->verb == V_GENERATE ? o->topics_file == NULL ||
	    o->broker_list == NULL : o->plan_file == NULL)) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* ---- the cluster's current assignment -------------------------------- */

static int
md_topic(const struct rn_MetadataResponse_MetadataResponseTopic *mt,
    struct ra_plan *cur, char *err, size_t errlen)
{
	char name[RN_TOPIC_MAX + 1];
	int32_t k;

	snprintf(name, sizeof(name), "%.*s", (int)(mt->name.len > 0 ?
	    mt->name.len : 0), mt->name.ptr);
	if (mt->error_code != 0) {
		snprintf(err, errlen, "topic %s: %s", name,
		    rn_kerr_name(mt->error_code));
		return -1;
	}
	for (k = 0; k < mt->partitions_count; k++) {
		const struct rn_MetadataResponse_MetadataResponsePartition *mp =
		    &mt->partitions[k];

		if (ra_plan_add(cur, name, mp->partition_index,
		    mp->replica_nodes, mp->replica_nodes_count) != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

int
ra_current(int fd, char *const *topics, int n, struct ra_plan *cur,
    struct ra_brokers *br, char *err, size_t errlen)
{
	struct rn_MetadataRequest req;
	struct rn_MetadataResponse resp;
	struct rn_MetadataRequest_MetadataRequestTopic *rt;
	struct rn_arena a;
	int32_t i;
	int rc = -1;

	rn_arena_init(&a, 256u << 20);
	rn_MetadataRequest_init(&req);
	req.allow_auto_topic_creation = false;
	if ((rt = rn_arena_alloc(&a, sizeof(*rt) * (size_t)(n + 1))) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		rn_MetadataRequest_MetadataRequestTopic_init(&rt[i]);
		rt[i].name = rn_kstr_c(topics[i]);
	}
	req.topics = rt;
	req.topics_count = n;
	if (tkc_call_api(fd, RN_KAPI_METADATA, MD_VERSION, &req, &a, &resp,
	    RA_TIMEOUT_MS, err, errlen) != 0)
		goto out;
	for (i = 0; i < resp.topics_count; i++)
		if (md_topic(&resp.topics[i], cur, err, errlen) != 0)
			goto out;
	br->n = 0;
	if ((br->ids = calloc((size_t)resp.brokers_count + 1,
	    sizeof(int32_t))) == NULL)
		goto out;
	for (i = 0; i < resp.brokers_count; i++)
		br->ids[br->n++] = resp.brokers[i].node_id;
	rc = 0;
out:
	rn_arena_free(&a);
	return rc;
}

/* The distinct topics of a plan (pointers into it), malloc'd. */
static char **
plan_topics(const struct ra_plan *pl, int *n)
{
	char **v = calloc((size_t)pl->n + 1, sizeof(char *));
	int i, k;

	*n = 0;
	for (i = 0; v != NULL && i < pl->n; i++) {
		for (k = 0; k < *n; k++)
			if (strcmp(v[k], pl->v[i].topic) == 0)
				break;
		if (k == *n)
			v[(*n)++] = pl->v[i].topic;
	}
	return v;
}

/* cur restricted to the partitions of plan, in plan order. */
static int
current_of(const struct ra_plan *plan, const struct ra_plan *all,
    struct ra_plan *out, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < plan->n; i++) {
		const struct ra_part *c = ra_plan_find(all, plan->v[i].topic,
		    plan->v[i].partition);

		if (c == NULL) {
			snprintf(err, errlen, "partition %s-%d does not exist",
			    plan->v[i].topic, plan->v[i].partition);
			return -1;
		}
		if (ra_plan_add(out, c->topic, c->partition, c->replicas,
		    c->n) != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

static void
print_plan(const char *title, const struct ra_plan *pl)
{
	char *s = ra_plan_json(pl);

	printf("%s\n%s\n", title, s != NULL ? s : "{}");
	free(s);
}

/* ---- --generate ------------------------------------------------------ */

/* "1,2,3" sorted into ids; the count, or -1. */
static int
parse_brokers(const char *s, int32_t *ids, int max)
{
	char *end;
	int n = 0, i, j;

	while (*s != '\0' && n < max) {
		long v = strtol(s, &end, 10);

		if (end == s || v < 0 || (*end != ',' && *end != '\0'))
			return -1;
		ids[n++] = (int32_t)v;
		s = *end == ',' ? end + 1 : end;
	}
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
			int32_t t = ids[j];

			ids[j] = ids[j - 1];
			ids[j - 1] = t;
		}
	return n > 0 ? n : -1;
}

/* Kafka's rack-unaware placement of cur's partitions over brokers. */
static int
propose(const struct ra_plan *cur, const int32_t *ids, int nb,
    struct ra_plan *out, char *err, size_t errlen)
{
	int32_t rep[64];
	int i;

	for (i = 0; i < cur->n; i++) {
		const struct ra_part *c = &cur->v[i];
		int rf = c->n;

		if (rf < 1 || rf > nb || rf > 64) {
			snprintf(err, errlen, "%s-%d has %d replicas, more "
			    "than the %d brokers given", c->topic,
			    c->partition, rf, nb);
			return -1;
		}
		if (rn_assign_rack_unaware(ids, nb, 1, rf, (int)((c->partition +
		    (int)random()) % nb), (int)(random() % nb), c->partition,
		    rep) != 0 || ra_plan_add(out, c->topic, c->partition, rep,
		    rf) != 0) {
			snprintf(err, errlen, "placement failed");
			return -1;
		}
	}
	return 0;
}

static int
do_generate(int fd, const struct ra_opts *o)
{
	struct ra_plan cur = { 0 }, prop = { 0 };
	struct ra_brokers br = { NULL, 0 };
	int32_t ids[1024];
	char **topics = NULL, err[512];
	int nt = 0, nb, i, rc = 1;

	srandom((unsigned)getpid() ^ (unsigned)time(NULL));
	if ((nb = parse_brokers(o->broker_list, ids, 1024)) < 0)
		snprintf(err, sizeof(err), "bad --broker-list %s",
		    o->broker_list);
	else if (ra_topics_read(o->topics_file, &topics, &nt, err,
	    sizeof(err)) == 0 && ra_current(fd, topics, nt, &cur, &br, err,
	    sizeof(err)) == 0 && propose(&cur, ids, nb, &prop, err,
	    sizeof(err)) == 0) {
		print_plan("Current partition replica assignment", &cur);
		printf("\n");
		print_plan("Proposed partition reassignment configuration",
		    &prop);
		rc = 0;
	}
	if (rc != 0)
		fprintf(stderr, "%s: %s\n", prog, err);
	for (i = 0; i < nt; i++)
		free(topics[i]);
	free(topics);
	free(br.ids);
	ra_plan_free(&cur);
	ra_plan_free(&prop);
	return rc;
}

/* ---- AlterPartitionReassignments ------------------------------------- */

typedef struct rn_AlterPartitionReassignmentsRequest_ReassignableTopic
    apr_topic;
typedef struct rn_AlterPartitionReassignmentsRequest_ReassignablePartition
    apr_part;

/* The plan's partitions by topic; cancel: null replicas. */
static int
apr_build(struct rn_arena *a, const struct ra_plan *pl, bool cancel,
    struct rn_AlterPartitionReassignmentsRequest *req)
{
	char **names;
	int nt, i, k;

	if ((names = plan_topics(pl, &nt)) == NULL)
		return -1;
	rn_AlterPartitionReassignmentsRequest_init(req);
	req->timeout_ms = RA_TIMEOUT_MS;
	req->topics = rn_arena_alloc(a, sizeof(apr_topic) * (size_t)nt);
	for (i = 0; req->topics != NULL && i < nt; i++) {
		apr_topic *t = &req->topics[i];

		rn_AlterPartitionReassignmentsRequest_ReassignableTopic_init(t);
		t->name = rn_kstr_c(names[i]);
		t->partitions = rn_arena_alloc(a, sizeof(apr_part) *
		    (size_t)pl->n);
		for (k = 0; t->partitions != NULL && k < pl->n; k++) {
			apr_part *p = &t->partitions[t->partitions_count];

			if (strcmp(pl->v[k].topic, names[i]) != 0)
				continue;
			rn_AlterPartitionReassignmentsRequest_ReassignablePartition_init(p);
			p->partition_index = pl->v[k].partition;
			p->replicas = cancel ? NULL : pl->v[k].replicas;
			p->replicas_count = cancel ? -1 : pl->v[k].n;
			t->partitions_count++;
		}
	}
	req->topics_count = req->topics != NULL ? nt : 0;
	free(names);
	return req->topics != NULL ? 0 : -1;
}

/* Send it; print each partition's outcome. 0 when all succeeded. */
static int
apr_call(int fd, const struct ra_plan *pl, bool cancel)
{
	struct rn_AlterPartitionReassignmentsRequest req;
	struct rn_AlterPartitionReassignmentsResponse resp;
	struct rn_arena a;
	char err[512], ok[4096];
	size_t n = 0;
	int32_t i, k;
	int bad = 0;

	rn_arena_init(&a, 64u << 20);
	ok[0] = '\0';
	if (apr_build(&a, pl, cancel, &req) != 0 ||
	    tkc_call_api(fd, RN_KAPI_ALTER_PARTITION_REASSIGNMENTS, 0, &req,
	    &a, &resp, RA_TIMEOUT_MS + 5000, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: AlterPartitionReassignments: %s\n", prog,
		    err);
		rn_arena_free(&a);
		return -1;
	}
	if (resp.error_code != 0)
		fprintf(stderr, "%s: AlterPartitionReassignments: %s\n", prog,
		    rn_kerr_name(resp.error_code));
	for (i = 0; i < resp.responses_count; i++) {
		const struct rn_AlterPartitionReassignmentsResponse_ReassignableTopicResponse
		    *t = &resp.responses[i];

		for (k = 0; k < t->partitions_count; k++) {
			const struct rn_AlterPartitionReassignmentsResponse_ReassignablePartitionResponse
			    *p = &t->partitions[k];

			if (p->error_code == 0) {
				if (n < sizeof(ok) - 300)
					n += (size_t)snprintf(ok + n,
					    sizeof(ok) - n, "%s%.*s-%d",
					    n ? "," : "", (int)t->name.len,
					    t->name.ptr, p->partition_index);
				continue;
			}
			bad++;
			printf("Error %s partition reassignment for %.*s-%d: "
			    "%s%s%.*s\n", cancel ? "cancelling" : "starting",
			    (int)t->name.len, t->name.ptr, p->partition_index,
			    rn_kerr_name(p->error_code),
			    p->error_message.len > 0 ? ": " : "",
			    (int)(p->error_message.len > 0 ?
			    p->error_message.len : 0), p->error_message.ptr);
		}
	}
	if (n > 0)
		printf(cancel ? "Successfully cancelled partition "
		    "reassignments for: %s\n" : "Successfully started "
		    "partition reassignments for %s\n", ok);
	rn_arena_free(&a);
	return bad > 0 || resp.error_code != 0 ? -1 : 0;
}

/* ---- --execute, --verify, --cancel ----------------------------------- */

/* The plan file, the current replicas of its partitions, the brokers. */
static int
load_plan(int fd, const struct ra_opts *o, struct ra_plan *plan,
    struct ra_plan *cur, struct ra_brokers *br)
{
	struct ra_plan all = { 0 };
	char **topics, err[512];
	int nt, rc = -1;

	if (ra_plan_read(o->plan_file, plan, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return -1;
	}
	if ((topics = plan_topics(plan, &nt)) != NULL &&
	    ra_current(fd, topics, nt, &all, br, err, sizeof(err)) == 0 &&
	    current_of(plan, &all, cur, err, sizeof(err)) == 0)
		rc = 0;
	else
		fprintf(stderr, "%s: %s\n", prog, err);
	free(topics);
	ra_plan_free(&all);
	return rc;
}

static int
do_execute(int fd, const struct ra_opts *o, const struct ra_plan *plan,
    const struct ra_plan *cur)
{
	char err[512];

	print_plan("Current partition replica assignment\n", cur);
	printf("\nSave this to use as the --reassignment-json-file option "
	    "during rollback\n");
	if (o->throttle > 0 || o->dir_throttle > 0)
		printf("Warning: You must run --verify periodically, until "
		    "the reassignment completes, to ensure the throttle is "
		    "removed.\n");
	if (o->throttle > 0) {
		if (ra_throttle_set(fd, plan, cur, o->throttle, err,
		    sizeof(err)) != 0) {
			fprintf(stderr, "%s: setting the throttle: %s\n", prog,
			    err);
			return 1;
		}
		printf("The inter-broker throttle limit was set to %lld "
		    "B/s\n", o->throttle);
	}
	if (o->dir_throttle > 0 && ra_plan_has_moves(plan)) {
		if (ra_throttle_logdirs(fd, plan, o->dir_throttle, err,
		    sizeof(err)) != 0) {
			fprintf(stderr, "%s: setting the throttle: %s\n", prog,
			    err);
			return 1;
		}
		printf("The replica-alter-dir throttle limit was set to %lld "
		    "B/s\n", o->dir_throttle);
	}
	if (apr_call(fd, plan, false) != 0)
		return 1;
	/* then the replicas the plan puts in a given log dir */
	if (ra_plan_has_moves(plan) && ra_moves_execute(o->bootstrap, plan,
	    (int)o->timeout_ms) != 0)
		return 1;
	return 0;
}

/* The reassignments in progress among the plan's partitions. */
static int
ongoing(int fd, const struct ra_plan *plan, struct ra_plan *out)
{
	struct rn_ListPartitionReassignmentsRequest req;
	struct rn_ListPartitionReassignmentsResponse resp;
	struct rn_arena a;
	char err[512];
	int32_t i, k;
	int rc = -1;

	rn_arena_init(&a, 64u << 20);
	rn_ListPartitionReassignmentsRequest_init(&req);
	req.timeout_ms = RA_TIMEOUT_MS;
	req.topics = NULL;
	req.topics_count = -1;
	if (tkc_call_api(fd, RN_KAPI_LIST_PARTITION_REASSIGNMENTS, 0, &req,
	    &a, &resp, RA_TIMEOUT_MS + 5000, err, sizeof(err)) != 0)
		fprintf(stderr, "%s: ListPartitionReassignments: %s\n", prog,
		    err);
	else if (resp.error_code != 0)
		fprintf(stderr, "%s: ListPartitionReassignments: %s\n", prog,
		    rn_kerr_name(resp.error_code));
	else
		rc = 0;
	for (i = 0; rc == 0 && i < resp.topics_count; i++) {
		char name[RN_TOPIC_MAX + 1];

		snprintf(name, sizeof(name), "%.*s",
		    (int)resp.topics[i].name.len, resp.topics[i].name.ptr);
		for (k = 0; k < resp.topics[i].partitions_count; k++) {
			const struct rn_ListPartitionReassignmentsResponse_OngoingPartitionReassignment
			    *p = &resp.topics[i].partitions[k];

			if (ra_plan_find(plan, name, p->partition_index) !=
			    NULL)
				(void)ra_plan_add(out, name,
				    p->partition_index, p->replicas,
				    p->replicas_count);
		}
	}
	rn_arena_free(&a);
	return rc;
}

static bool
same(const struct ra_part *a, const struct ra_part *b)
{
	return a->n == b->n && memcmp(a->replicas, b->replicas,
	    sizeof(int32_t) * (size_t)a->n) == 0;
}

static void
print_ids(const struct ra_part *p)
{
	int i;

	for (i = 0; i < p->n; i++)
		printf("%s%d", i ? "," : "", p->replicas[i]);
}

/* One line per partition; the number still moving. */
static int
report_status(const struct ra_plan *plan, const struct ra_plan *cur,
    const struct ra_plan *moving)
{
	int i, left = 0;

	printf("Status of partition reassignment:\n");
	for (i = 0; i < plan->n; i++) {
		const struct ra_part *t = &plan->v[i];
		const struct ra_part *c = &cur->v[i];

		if (ra_plan_find(moving, t->topic, t->partition) != NULL) {
			printf("Reassignment of partition %s-%d is still in "
			    "progress.\n", t->topic, t->partition);
			left++;
		} else if (same(t, c))
			printf("Reassignment of partition %s-%d is "
			    "completed.\n", t->topic, t->partition);
		else {
			printf("There is no active reassignment of partition "
			    "%s-%d, but replica set is ", t->topic,
			    t->partition);
			print_ids(c);
			printf(" rather than ");
			print_ids(t);
			printf(".\n");
			left++;
		}
	}
	return left;
}

static int
clear_throttles(int fd, const struct ra_plan *plan,
    const struct ra_brokers *br)
{
	char err[512];
	int i, nt;
	char **topics;

	if (ra_throttle_clear(fd, plan, br, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: clearing throttles: %s\n", prog, err);
		return 1;
	}
	printf("Clearing broker-level throttles on brokers ");
	for (i = 0; i < br->n; i++)
		printf("%s%d", i ? "," : "", br->ids[i]);
	printf("\n");
	if ((topics = plan_topics(plan, &nt)) != NULL)
		for (i = 0; i < nt; i++)
			printf("Clearing topic-level throttles on topic %s\n",
			    topics[i]);
	free(topics);
	return 0;
}

static int
do_verify(int fd, const struct ra_opts *o, const struct ra_plan *plan,
    const struct ra_plan *cur, const struct ra_brokers *br)
{
	struct ra_plan moving = { 0 };
	int left, rc = 0;

	if (ongoing(fd, plan, &moving) != 0)
		return 1;
	left = report_status(plan, cur, &moving);
	if (ra_plan_has_moves(plan)) {
		int moves = ra_moves_verify(o->bootstrap, plan);

		left += moves < 0 ? 1 : moves;
	}
	/* like Kafka: the throttles go once everything has moved */
	if (left == 0 && !o->preserve)
		rc = clear_throttles(fd, plan, br);
	ra_plan_free(&moving);
	return rc;
}

static int
do_cancel(int fd, const struct ra_opts *o, const struct ra_plan *plan,
    const struct ra_brokers *br)
{
	int rc = apr_call(fd, plan, true) == 0 ? 0 : 1;

	if (!o->preserve && clear_throttles(fd, plan, br) != 0)
		rc = 1;
	return rc;
}

int
main(int argc, char **argv)
{
	struct ra_opts o = { NULL, NULL, NULL, NULL, V_NONE, -1, false, 10000,
	    -1 };
	struct ra_plan plan = { 0 }, cur = { 0 };
	struct ra_brokers br = { NULL, 0 };
	char err[512];
	int fd, rc;

	if ((rc = parse_args(argc, argv, &o)) >= 0)
		return rc;
	if ((fd = tkc_connect(o.bootstrap, 10000, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	if (o.verb == V_GENERATE)
		rc = do_generate(fd, &o);
	else if (load_plan(fd, &o, &plan, &cur, &br) != 0)
		rc = 1;
	else if (o.verb == V_EXECUTE)
		rc = do_execute(fd, &o, &plan, &cur);
	else if (o.verb == V_VERIFY)
		rc = do_verify(fd, &o, &plan, &cur, &br);
	else
		rc = do_cancel(fd, &o, &plan, &br);
	ra_plan_free(&plan);
	ra_plan_free(&cur);
	free(br.ids);
	close(fd);
	return rc;
}
