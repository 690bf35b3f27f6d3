/*
 * runnel-topics: create, list, describe, alter and delete topics over the
 * Kafka protocol, with kafka-topics' flag names and output shape.
 *
 *   runnel-topics --bootstrap-server H:P --create --topic T [--partitions N]
 *       [--replication-factor R] [--replica-assignment 1:2,2:3,...]
 *       [--config k=v]... [--if-not-exists]
 *   runnel-topics --bootstrap-server H:P --list [--topic T] [--exclude-internal]
 *   runnel-topics --bootstrap-server H:P --describe [--topic T] [--exclude-internal]
 *   runnel-topics --bootstrap-server H:P --alter --topic T --partitions N
 *       [--replica-assignment ...] [--if-exists]
 *   runnel-topics --bootstrap-server H:P --delete --topic T [--if-exists]
 *
 * --topic is an exact name, or an anchored POSIX extended regex when it
 * holds regex characters other than '.' (a '.' is legal in topic names,
 * so "a.b" only ever means the topic a.b).
 */
#include "autoconf.h"

#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tool_common.h"
#include "tools/tool_logdirs.h"

enum action { A_NONE, A_CREATE, A_LIST, A_DESCRIBE, A_ALTER, A_DELETE };

struct opts {
	enum action action;
	const char *bootstrap;
	const char *topic;
	long partitions;       /* -1: not given */
	long replication;      /* -1: not given */
	const char *assignment;
	struct tool_props configs; /* --config k=v */
	struct tool_props client;  /* --command-config, -X */
	bool if_exists, if_not_exists, exclude_internal;
	int timeout_ms;
};

/* A parsed --replica-assignment: n_parts lists of n_rf broker ids. */
struct assignment {
	int32_t *ids;
	int n_parts, n_rf;
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: runnel-topics --bootstrap-server HOST:PORT ACTION [options]\n"
	    "actions (exactly one):\n"
	    "  --create --topic T [--partitions N] [--replication-factor R]\n"
	    "           [--replica-assignment B1:B2,B3:B4,...] [--config k=v]...\n"
	    "           [--if-not-exists]\n"
	    "  --list [--topic T] [--exclude-internal]\n"
	    "  --describe [--topic T] [--exclude-internal]\n"
	    "  --alter --topic T --partitions N [--replica-assignment ...] [--if-exists]\n"
	    "  --delete --topic T [--if-exists]\n"
	    "client options:\n"
	    "  --command-config FILE   librdkafka properties, key=value lines\n"
	    "  -X key=value            one librdkafka property (repeatable)\n"
	    "  --timeout-ms MS         give up after MS (default %d)\n"
	    "--topic is an exact name, or an anchored regex if it holds any of\n"
	    "*+?[](){}|^$\\. Replica assignments list partitions separated by ','\n"
	    "and each partition's brokers separated by ':'.\n",
	    TOOL_DEFAULT_TIMEOUT_MS);
}

/* ---- topic selection ---- */

static bool
is_regex(const char *s)
{
	return strpbrk(s, "*+?[](){}|^$\\") != NULL;
}

struct matcher {
	const char *name;
	regex_t re;
	bool use_re;
};

static int
matcher_init(struct matcher *m, const char *topic)
{
	char *anchored;
	int rc;

	memset(m, 0, sizeof(*m));
	m->name = topic;
	if (topic == NULL || !is_regex(topic))
		return 0;
	if (asprintf(&anchored, "^(%s)$", topic) < 0)
		return -1;
	rc = regcomp(&m->re, anchored, REG_EXTENDED | REG_NOSUB);
	free(anchored);
	if (rc != 0) {
		char buf[256];
		regerror(rc, &m->re, buf, sizeof(buf));
		tool_errx("--topic '%s' is not a valid regex: %s", topic, buf);
		return -1;
	}
	m->use_re = true;
	return 0;
}

static bool
matcher_match(const struct matcher *m, const char *name)
{
	if (m->name == NULL)
		return true;
	if (m->use_re)
		return regexec(&m->re, name, 0, NULL, 0) == 0;
	return strcmp(m->name, name) == 0;
}

static void
matcher_free(struct matcher *m)
{
	if (m->use_re)
		regfree(&m->re);
}

/* Names of the topics that match, in name order; count in *np. */
static const struct tool_topic **
select_topics(const struct tool_md *md, const struct matcher *m,
    bool exclude_internal, int *np)
{
	const struct tool_topic **v = calloc((size_t)md->n_topics + 1,
	    sizeof(*v));
	int i;

	*np = 0;
	if (v == NULL)
		return NULL;
	for (i = 0; i < md->n_topics; i++) {
		const struct tool_topic *t = &md->topics[i];
		if (exclude_internal && t->internal)
			continue;
		if (t->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
			continue;
		if (matcher_match(m, t->name))
			v[(*np)++] = t;
	}
	return v;
}

/* ---- replica assignment ---- */

static int
parse_assignment(const char *s, struct assignment *a)
{
	char *copy = strdup(s), *part, *save = NULL;
	int cap = 16, n = 0, rf = -1;

	memset(a, 0, sizeof(*a));
	a->ids = malloc((size_t)cap * sizeof(int32_t));
	if (copy == NULL || a->ids == NULL)
		goto fail;
	for (part = strtok_r(copy, ",", &save); part != NULL;
	    part = strtok_r(NULL, ",", &save)) {
		char *b, *save2 = NULL;
		int cnt = 0, i;

		for (b = strtok_r(part, ":", &save2); b != NULL;
		    b = strtok_r(NULL, ":", &save2)) {
			long id;

			if (tool_parse_long(b, 0, INT32_MAX, &id) != 0) {
				tool_errx("--replica-assignment: '%s' is not "
				    "a broker id", b);
				goto fail;
			}
			if (n == cap) {
				int32_t *ni = realloc(a->ids,
				    (size_t)(cap *= 2) * sizeof(int32_t));
				if (ni == NULL)
					goto fail;
				a->ids = ni;
			}
			/* a broker twice in one partition makes no replica */
			for (i = n - cnt; i < n; i++)
				if (a->ids[i] == (int32_t)id) {
					tool_errx("--replica-assignment: "
					    "partition %d lists broker %ld "
					    "twice", a->n_parts, id);
					goto fail;
				}
			a->ids[n++] = (int32_t)id;
			cnt++;
		}
		if (cnt == 0)
			continue;
		if (rf != -1 && cnt != rf) {
			tool_errx("--replica-assignment: partition %d has %d "
			    "replicas, partition 0 has %d; every partition "
			    "needs the same number", a->n_parts, cnt, rf);
			goto fail;
		}
		rf = cnt;
		a->n_parts++;
	}
	if (a->n_parts == 0) {
		tool_errx("--replica-assignment: no partitions given");
		goto fail;
	}
	a->n_rf = rf;
	free(copy);
	return 0;
fail:
	free(copy);
	free(a->ids);
	a->ids = NULL;
	return -1;
}

/* ---- actions ---- */

static int
do_create(rd_kafka_t *rk, const struct opts *o)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = tool_admin_options(rk,
	    RD_KAFKA_ADMIN_OP_CREATETOPICS, o->timeout_ms);
	rd_kafka_NewTopic_t *nt = NULL;
	rd_kafka_event_t *ev = NULL;
	const rd_kafka_topic_result_t **res;
	struct assignment a = { 0 };
	char errstr[512], what[512];
	size_t n;
	int i, rc = TOOL_EXIT_FAIL;

	snprintf(what, sizeof(what), "cannot create topic '%s'", o->topic);
	if (tool_require_api(o->bootstrap, &o->client, TOOL_API_CREATE_TOPICS,
	    "CreateTopics", what, o->timeout_ms) != 0)
		goto out;
	if (o->assignment != NULL && parse_assignment(o->assignment, &a) != 0)
		goto out;
	nt = rd_kafka_NewTopic_new(o->topic,
	    o->assignment ? a.n_parts : (int)o->partitions,
	    o->assignment ? -1 : (int)o->replication, errstr, sizeof(errstr));
	if (nt == NULL) {
		tool_errx("%s: %s", what, errstr);
		goto out;
	}
	for (i = 0; i < a.n_parts; i++)
		if (rd_kafka_NewTopic_set_replica_assignment(nt, i,
		    &a.ids[i * a.n_rf], (size_t)a.n_rf, errstr,
		    sizeof(errstr)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
			tool_errx("%s: %s", what, errstr);
			goto out;
		}
	for (i = 0; i < o->configs.n; i++) {
		char *kv = o->configs.kv[i], *eq = strchr(kv, '=');

		*eq = '\0';
		rd_kafka_NewTopic_set_config(nt, kv, eq + 1);
		*eq = '=';
	}
	rd_kafka_CreateTopics(rk, &nt, 1, ao, q);
	if ((ev = tool_admin_wait(rk, q, RD_KAFKA_EVENT_CREATETOPICS_RESULT,
	    o->timeout_ms + 5000, what)) == NULL)
		goto out;
	if (rd_kafka_event_error(ev)) {
		tool_report_err(what, rd_kafka_event_error(ev),
		    rd_kafka_event_error_string(ev));
		goto out;
	}
	res = rd_kafka_CreateTopics_result_topics(
	    rd_kafka_event_CreateTopics_result(ev), &n);
	if (n == 1 && rd_kafka_topic_result_error(res[0])) {
		rd_kafka_resp_err_t err = rd_kafka_topic_result_error(res[0]);

		if (err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS &&
		    o->if_not_exists) {
			rc = TOOL_EXIT_OK;
			goto out;
		}
		tool_report_err(what, err,
		    rd_kafka_topic_result_error_string(res[0]));
		goto out;
	}
	printf("Created topic %s.\n", o->topic);
	rc = TOOL_EXIT_OK;
out:
	if (ev)
		rd_kafka_event_destroy(ev);
	if (nt)
		rd_kafka_NewTopic_destroy(nt);
	free(a.ids);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return rc;
}

/* Metadata, then the topics --topic selects; 0 or exit code. */
static int
load_selection(rd_kafka_t *rk, const struct opts *o, struct tool_md *md,
    struct matcher *m, const struct tool_topic ***sel, int *n)
{
	if (matcher_init(m, o->topic) != 0)
		return TOOL_EXIT_USAGE;
	if (tool_md_fetch(rk, o->bootstrap, &o->client, o->timeout_ms, md) != 0)
		return TOOL_EXIT_FAIL;
	if ((*sel = select_topics(md, m, o->exclude_internal, n)) == NULL) {
		tool_errx("out of memory");
		return TOOL_EXIT_FAIL;
	}
	if (*n == 0 && o->topic != NULL && !o->if_exists &&
	    o->action != A_LIST) {
		tool_errx("topic '%s' does not exist (UNKNOWN_TOPIC_OR_PARTITION)",
		    o->topic);
		return TOOL_EXIT_FAIL;
	}
	return 0;
}

static int
do_list(const struct tool_topic **sel, int n)
{
	int i;

	for (i = 0; i < n; i++)
		printf("%s\n", sel[i]->name);
	return TOOL_EXIT_OK;
}

static void
print_ids(const char *label, const int32_t *v, int n)
{
	int i;

	printf("\t%s: ", label);
	for (i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", v[i]);
}

static int
cmp_entry(const void *a, const void *b)
{
	return strcmp(
	    rd_kafka_ConfigEntry_name(*(const rd_kafka_ConfigEntry_t *const *)a),
	    rd_kafka_ConfigEntry_name(*(const rd_kafka_ConfigEntry_t *const *)b));
}

/* "k=v,k2=v2" of the topic's non-default configs, from a DescribeConfigs
 * result; NULL when the broker gave none for it. */
static char *
overrides_string(const rd_kafka_ConfigResource_t *res)
{
	const rd_kafka_ConfigEntry_t **ents, **sorted;
	size_t n, i;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (res == NULL || rd_kafka_ConfigResource_error(res))
		return NULL;
	ents = rd_kafka_ConfigResource_configs(res, &n);
	if ((sorted = calloc(n + 1, sizeof(*sorted))) == NULL)
		return NULL;
	memcpy(sorted, ents, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_entry);
	if ((f = open_memstream(&buf, &len)) == NULL) {
		free(sorted);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		const rd_kafka_ConfigEntry_t *e = sorted[i];
		const char *v;

		if (rd_kafka_ConfigEntry_is_default(e) ||
		    rd_kafka_ConfigEntry_source(e) ==
		    RD_KAFKA_CONFIG_SOURCE_DEFAULT_CONFIG)
			continue;
		v = rd_kafka_ConfigEntry_value(e);
		fprintf(f, "%s%s=%s", ftell(f) ? "," : "",
		    rd_kafka_ConfigEntry_name(e), v ? v : "null");
	}
	fclose(f);
	free(sorted);
	return buf;
}

/* DescribeConfigs for every selected topic in one request; NULL event if
 * the broker cannot (the Configs column stays empty, with a warning). */
static rd_kafka_event_t *
describe_configs(rd_kafka_t *rk, const struct opts *o,
    const struct tool_topic **sel, int n)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = tool_admin_options(rk,
	    RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, o->timeout_ms);
	rd_kafka_ConfigResource_t **rs = calloc((size_t)n + 1, sizeof(*rs));
	rd_kafka_event_t *ev = NULL;
	int i;

	if (rs == NULL || n == 0)
		goto out;
	if (tool_api_unsupported(TOOL_API_DESCRIBE_CONFIGS)) {
		tool_warnx("the broker does not support DescribeConfigs; the "
		    "Configs column is left empty");
		goto out;
	}
	for (i = 0; i < n; i++)
		rs[i] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC,
		    sel[i]->name);
	rd_kafka_DescribeConfigs(rk, rs, (size_t)n, ao, q);
	ev = tool_admin_wait(rk, q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT,
	    o->timeout_ms, "cannot read the topics' configs");
	if (ev != NULL && rd_kafka_event_error(ev)) {
		tool_warnx("cannot read the topics' configs: %s (%s); the "
		    "Configs column is left empty",
		    tool_err_desc(rd_kafka_event_error(ev)),
		    tool_err_name(rd_kafka_event_error(ev)));
		rd_kafka_event_destroy(ev);
		ev = NULL;
	}
	rd_kafka_ConfigResource_destroy_array(rs, (size_t)n);
out:
	free(rs);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return ev;
}

static const rd_kafka_ConfigResource_t *
find_config(rd_kafka_event_t *ev, const char *name)
{
	const rd_kafka_ConfigResource_t **rs;
	size_t n, i;

	if (ev == NULL)
		return NULL;
	rs = rd_kafka_DescribeConfigs_result_resources(
	    rd_kafka_event_DescribeConfigs_result(ev), &n);
	for (i = 0; i < n; i++)
		if (strcmp(rd_kafka_ConfigResource_name(rs[i]), name) == 0)
			return rs[i];
	return NULL;
}

/* Each replica's log dir (DescribeLogDirs), aligned with Replicas;
 * left out when no broker told. */
static void
print_dirs(const struct tld_map *m, const char *topic,
    const struct tool_part *p)
{
	const char *d;
	int i;

	if (m->n == 0)
		return;
	printf("\tLogDirs: ");
	for (i = 0; i < p->n_replicas; i++) {
		d = tld_map_dir(m, p->replicas[i], topic, p->id);
		printf("%s%s", i ? "," : "", d != NULL ? d : "-");
	}
}

static int
do_describe(rd_kafka_t *rk, const struct opts *o, const struct tool_md *md,
    const struct tool_topic **sel, int n)
{
	rd_kafka_event_t *ev = describe_configs(rk, o, sel, n);
	struct tld_map dirs = { NULL, 0, 0 };
	int i, j;

	if (n > 0)
		(void)tld_map_fetch(o->bootstrap, o->timeout_ms, &dirs);

	if (n > 0 && md->version == 0 && getenv("RUNNEL_TOOLS_DEBUG"))
		tool_warnx("the broker does not speak Metadata v10+: no topic "
		    "ids or offline replicas");
	for (i = 0; i < n; i++) {
		const struct tool_topic *t = sel[i];
		char *cfg = overrides_string(find_config(ev, t->name));

		printf("Topic: %s", t->name);
		if (t->id[0])
			printf("\tTopicId: %s", t->id);
		printf("\tPartitionCount: %d\tReplicationFactor: %d"
		    "\tConfigs: %s\n", t->n_parts,
		    t->n_parts ? t->parts[0].n_replicas : 0, cfg ? cfg : "");
		free(cfg);
		for (j = 0; j < t->n_parts; j++) {
			const struct tool_part *p = &t->parts[j];

			printf("\tTopic: %s\tPartition: %d\tLeader: ",
			    t->name, p->id);
			if (p->leader >= 0)
				printf("%d", p->leader);
			else
				printf("none");
			print_ids("Replicas", p->replicas, p->n_replicas);
			print_ids("Isr", p->isr, p->n_isr);
			if (p->n_offline > 0)
				print_ids("Offline", p->offline, p->n_offline);
			print_dirs(&dirs, t->name, p);
			if (p->err != 0 && p->err !=
			    RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE)
				printf("\tError: %s", tool_err_name(
				    (rd_kafka_resp_err_t)p->err));
			printf("\n");
		}
	}
	if (ev)
		rd_kafka_event_destroy(ev);
	tld_map_free(&dirs);
	return TOOL_EXIT_OK;
}

/* Report each topic result; exit code. */
static int
topic_results(const rd_kafka_topic_result_t **res, size_t n,
    const char *verb, const char *done_fmt, const struct opts *o)
{
	int rc = TOOL_EXIT_OK;
	size_t i;

	for (i = 0; i < n; i++) {
		const char *name = rd_kafka_topic_result_name(res[i]);
		rd_kafka_resp_err_t err = rd_kafka_topic_result_error(res[i]);
		char what[512];

		if (err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART &&
		    o->if_exists)
			continue;
		if (err) {
			snprintf(what, sizeof(what), "cannot %s topic '%s'",
			    verb, name);
			tool_report_err(what, err,
			    rd_kafka_topic_result_error_string(res[i]));
			rc = TOOL_EXIT_FAIL;
		} else {
			printf(done_fmt, name);
		}
	}
	return rc;
}

static int
do_delete(rd_kafka_t *rk, const struct opts *o,
    const struct tool_topic **sel, int n)
{
	rd_kafka_queue_t *q;
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_DeleteTopic_t **dt;
	rd_kafka_event_t *ev;
	const rd_kafka_topic_result_t **res;
	size_t nres;
	int i, rc = TOOL_EXIT_FAIL;

	if (n == 0)
		return TOOL_EXIT_OK; /* --if-exists and nothing matched */
	if (tool_require_api(o->bootstrap, &o->client, TOOL_API_DELETE_TOPICS,
	    "DeleteTopics", "cannot delete topics", o->timeout_ms) != 0)
		return TOOL_EXIT_FAIL;
	q = rd_kafka_queue_new(rk);
	ao = tool_admin_options(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS,
	    o->timeout_ms);
	if ((dt = calloc((size_t)n, sizeof(*dt))) == NULL)
		goto out;
	for (i = 0; i < n; i++)
		dt[i] = rd_kafka_DeleteTopic_new(sel[i]->name);
	rd_kafka_DeleteTopics(rk, dt, (size_t)n, ao, q);
	rd_kafka_DeleteTopic_destroy_array(dt, (size_t)n);
	free(dt);
	if ((ev = tool_admin_wait(rk, q, RD_KAFKA_EVENT_DELETETOPICS_RESULT,
	    o->timeout_ms + 5000, "cannot delete topics")) == NULL)
		goto out;
	if (rd_kafka_event_error(ev)) {
		tool_report_err("cannot delete topics", rd_kafka_event_error(ev),
		    rd_kafka_event_error_string(ev));
	} else {
		res = rd_kafka_DeleteTopics_result_topics(
		    rd_kafka_event_DeleteTopics_result(ev), &nres);
		rc = topic_results(res, nres, "delete", "Deleted topic %s.\n",
		    o);
	}
	rd_kafka_event_destroy(ev);
out:
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return rc;
}

/* --partitions grows every selected topic, and an assignment lists all. */
static int
check_growth(const struct opts *o, const struct assignment *a,
    const struct tool_topic **sel, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (o->partitions <= sel[i]->n_parts) {
			tool_errx("cannot alter topic '%s': it has %d "
			    "partitions; --partitions must be larger (the "
			    "count can only grow)", sel[i]->name,
			    sel[i]->n_parts);
			return -1;
		}
		if (o->assignment != NULL && a->n_parts != o->partitions) {
			tool_errx("--replica-assignment lists %d partitions, "
			    "--partitions says %ld", a->n_parts, o->partitions);
			return -1;
		}
	}
	return 0;
}

/*
 * The CreatePartitions entries; like kafka-topics, an assignment lists
 * every partition, old and new, and only the new ones' lists are sent.
 * NULL after saying why.
 */
static rd_kafka_NewPartitions_t **
new_partitions(const struct opts *o, const struct assignment *a,
    const struct tool_topic **sel, int n)
{
	rd_kafka_NewPartitions_t **np = calloc((size_t)n, sizeof(*np));
	char errstr[512];
	int i, j;

	for (i = 0; np != NULL && i < n; i++) {
		np[i] = rd_kafka_NewPartitions_new(sel[i]->name,
		    (size_t)o->partitions, errstr, sizeof(errstr));
		for (j = sel[i]->n_parts; np[i] && j < a->n_parts; j++)
			if (rd_kafka_NewPartitions_set_replica_assignment(np[i],
			    j - sel[i]->n_parts, &a->ids[j * a->n_rf],
			    (size_t)a->n_rf, errstr, sizeof(errstr)) != 0) {
				rd_kafka_NewPartitions_destroy(np[i]);
				np[i] = NULL;
			}
		if (np[i] == NULL) {
			tool_errx("cannot alter topic '%s': %s", sel[i]->name,
			    errstr);
			rd_kafka_NewPartitions_destroy_array(np, (size_t)i);
			free(np);
			return NULL;
		}
	}
	return np;
}

static int
do_alter(rd_kafka_t *rk, const struct opts *o,
    const struct tool_topic **sel, int n)
{
	rd_kafka_queue_t *q;
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_NewPartitions_t **np;
	rd_kafka_event_t *ev;
	const rd_kafka_topic_result_t **res;
	struct assignment a = { 0 };
	size_t nres;
	int rc = TOOL_EXIT_FAIL;

	if (n == 0)
		return TOOL_EXIT_OK;
	if (tool_require_api(o->bootstrap, &o->client,
	    TOOL_API_CREATE_PARTITIONS, "CreatePartitions",
	    "cannot add partitions", o->timeout_ms) != 0)
		return TOOL_EXIT_FAIL;
	if (o->assignment != NULL && parse_assignment(o->assignment, &a) != 0)
		return TOOL_EXIT_FAIL;
	if (check_growth(o, &a, sel, n) != 0) {
		free(a.ids);
		return TOOL_EXIT_FAIL;
	}
	q = rd_kafka_queue_new(rk);
	ao = tool_admin_options(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS,
	    o->timeout_ms);
	if ((np = new_partitions(o, &a, sel, n)) == NULL)
		goto out;
	rd_kafka_CreatePartitions(rk, np, (size_t)n, ao, q);
	rd_kafka_NewPartitions_destroy_array(np, (size_t)n);
	free(np);
	if ((ev = tool_admin_wait(rk, q,
	    RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT, o->timeout_ms + 5000,
	    "cannot add partitions")) == NULL)
		goto out;
	if (rd_kafka_event_error(ev)) {
		tool_report_err("cannot add partitions",
		    rd_kafka_event_error(ev), rd_kafka_event_error_string(ev));
	} else {
		char fmt[64];

		res = rd_kafka_CreatePartitions_result_topics(
		    rd_kafka_event_CreatePartitions_result(ev), &nres);
		snprintf(fmt, sizeof(fmt), "Topic %%s now has %ld partitions.\n",
		    o->partitions);
		rc = topic_results(res, nres, "alter", fmt, o);
	}
	rd_kafka_event_destroy(ev);
out:
	free(a.ids);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return rc;
}

/* ---- command line ---- */

static int
set_action(struct opts *o, enum action a)
{
	if (o->action != A_NONE && o->action != a) {
		tool_errx("give exactly one of --create, --list, --describe, "
		    "--alter, --delete");
		return -1;
	}
	o->action = a;
	return 0;
}

/* Cross-option checks, Kafka's rules; 0 or -1 after saying why. */
static int
check_opts(const struct opts *o)
{
	if (o->action == A_NONE) {
		tool_errx("give one of --create, --list, --describe, --alter, "
		    "--delete");
		return -1;
	}
	if (tool_check_bootstrap(o->bootstrap) != 0)
		return -1;
	if ((o->action == A_CREATE || o->action == A_ALTER ||
	    o->action == A_DELETE) && o->topic == NULL) {
		tool_errx("--topic is required for this action");
		return -1;
	}
	if (o->action == A_CREATE && is_regex(o->topic)) {
		tool_errx("--create needs a plain topic name, not a regex");
		return -1;
	}
	if (o->action == A_ALTER && o->partitions < 0) {
		tool_errx("--alter needs --partitions (the new, larger count)");
		return -1;
	}
	if (o->assignment && o->action != A_CREATE && o->action != A_ALTER) {
		tool_errx("--replica-assignment only goes with --create or "
		    "--alter");
		return -1;
	}
	if (o->action == A_CREATE && o->assignment &&
	    (o->partitions >= 0 || o->replication >= 0)) {
		tool_errx("--replica-assignment replaces --partitions and "
		    "--replication-factor; give one or the other");
		return -1;
	}
	if ((o->partitions >= 0 && o->action != A_CREATE &&
	    o->action != A_ALTER) ||
	    (o->replication >= 0 && o->action != A_CREATE) ||
	    (o->configs.n > 0 && o->action != A_CREATE)) {
		tool_errx("--partitions, --replication-factor and --config go "
		    "with --create (--partitions also with --alter); use "
		    "runnel-configs to change a topic's configs");
		return -1;
	}
	if (o->if_not_exists && o->action != A_CREATE) {
		tool_errx("--if-not-exists only goes with --create");
		return -1;
	}
	if (o->if_exists && o->action != A_ALTER && o->action != A_DELETE &&
	    o->action != A_DESCRIBE) {
		tool_errx("--if-exists goes with --alter, --delete or "
		    "--describe");
		return -1;
	}
	return 0;
}

enum {
	O_BOOTSTRAP = 256, O_CREATE, O_LIST, O_DESCRIBE, O_ALTER, O_DELETE,
	O_TOPIC, O_PARTITIONS, O_RF, O_ASSIGN, O_CONFIG, O_IF_EXISTS,
	O_IF_NOT_EXISTS, O_EXCL_INTERNAL,
};

static const struct option lopts[] = {
	{ "bootstrap-server", required_argument, NULL, O_BOOTSTRAP },
	{ "create", no_argument, NULL, O_CREATE },
	{ "list", no_argument, NULL, O_LIST },
	{ "describe", no_argument, NULL, O_DESCRIBE },
	{ "alter", no_argument, NULL, O_ALTER },
	{ "delete", no_argument, NULL, O_DELETE },
	{ "topic", required_argument, NULL, O_TOPIC },
	{ "partitions", required_argument, NULL, O_PARTITIONS },
	{ "replication-factor", required_argument, NULL, O_RF },
	{ "replica-assignment", required_argument, NULL, O_ASSIGN },
	{ "config", required_argument, NULL, O_CONFIG },
	{ "if-exists", no_argument, NULL, O_IF_EXISTS },
	{ "if-not-exists", no_argument, NULL, O_IF_NOT_EXISTS },
	{ "exclude-internal", no_argument, NULL, O_EXCL_INTERNAL },
	TOOL_LOPT_TIMEOUT,
	TOOL_LOPT_CLIENT,
	{ NULL, 0, NULL, 0 },
};

/* One option into o; 0, or -1 after saying why. */
static int
one_opt(int ch, const char *arg, void *arg_o)
{
	struct opts *o = arg_o;
	int bad = 0;

	switch (ch) {
	case O_BOOTSTRAP: o->bootstrap = arg; break;
	case O_CREATE: bad = set_action(o, A_CREATE); break;
	case O_LIST: bad = set_action(o, A_LIST); break;
	case O_DESCRIBE: bad = set_action(o, A_DESCRIBE); break;
	case O_ALTER: bad = set_action(o, A_ALTER); break;
	case O_DELETE: bad = set_action(o, A_DELETE); break;
	case O_TOPIC: o->topic = arg; break;
	case O_PARTITIONS:
		if ((bad = tool_parse_long(arg, 1, INT32_MAX,
		    &o->partitions)) != 0)
			tool_errx("--partitions must be a whole number of at "
			    "least 1, not '%s'", arg);
		break;
	case O_RF:
		if ((bad = tool_parse_long(arg, 1, INT16_MAX,
		    &o->replication)) != 0)
			tool_errx("--replication-factor must be between 1 "
			    "and %d, not '%s'", INT16_MAX, arg);
		break;
	case O_ASSIGN: o->assignment = arg; break;
	case O_CONFIG: bad = tool_props_add(&o->configs, arg); break;
	case O_IF_EXISTS: o->if_exists = true; break;
	case O_IF_NOT_EXISTS: o->if_not_exists = true; break;
	case O_EXCL_INTERNAL: o->exclude_internal = true; break;
	}
	return bad;
}

static int
check(void *o)
{
	return check_opts(o);
}

/* --create, or the action on the topics --topic selects. */
static int
run(rd_kafka_t *rk, const struct opts *o)
{
	struct tool_md md = { 0 };
	struct matcher m = { 0 };
	const struct tool_topic **sel = NULL;
	int n = 0, rc;

	if (o->action == A_CREATE)
		return do_create(rk, o);
	if ((rc = load_selection(rk, o, &md, &m, &sel, &n)) == 0) {
		switch (o->action) {
		case A_LIST: rc = do_list(sel, n); break;
		case A_DESCRIBE: rc = do_describe(rk, o, &md, sel, n); break;
		case A_DELETE: rc = do_delete(rk, o, sel, n); break;
		case A_ALTER: rc = do_alter(rk, o, sel, n); break;
		default: rc = TOOL_EXIT_USAGE;
		}
	}
	free(sel);
	tool_md_free(&md);
	matcher_free(&m);
	return rc;
}

int
main(int argc, char **argv)
{
	struct tool_cli cli = { lopts, one_opt, check, usage, NULL, NULL };
	struct opts o;
	rd_kafka_t *rk;
	int rc;

	tool_init(argv[0]);
	memset(&o, 0, sizeof(o));
	o.partitions = o.replication = -1;
	o.timeout_ms = TOOL_DEFAULT_TIMEOUT_MS;
	cli.client = &o.client;
	cli.timeout_ms = &o.timeout_ms;
	if ((rc = tool_parse_args(argc, argv, &cli, &o)) >= 0)
		return rc;
	if ((rk = tool_client_new(RD_KAFKA_PRODUCER, o.bootstrap, &o.client,
	    NULL)) == NULL)
		return TOOL_EXIT_FAIL;
	rc = run(rk, &o);
	rd_kafka_destroy(rk);
	tool_props_free(&o.configs);
	tool_props_free(&o.client);
	return rc;
}
