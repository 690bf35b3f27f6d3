/*
 * runnel-configs: describe and change topic and broker configs, and users'
 * SCRAM credentials, over the Kafka protocol, with kafka-configs' flag
 * names and output shape.
 *
 *   runnel-configs --bootstrap-server H:P --describe --entity-type topics|brokers
 *       [--entity-name N] [--all]
 *   runnel-configs --bootstrap-server H:P --alter --entity-type topics|brokers
 *       --entity-name N [--add-config k=v[,k2=v2]]
 *       [--delete-config k[,k2]]
 *   runnel-configs --bootstrap-server H:P --alter --entity-type users
 *       --entity-name U [--add-config 'SCRAM-SHA-256=[iterations=N,password=P]']
 *       [--delete-config SCRAM-SHA-256]
 *   runnel-configs --bootstrap-server H:P --describe --entity-type users
 *       [--entity-name U]
 *
 * Users go on runnel's own codec, not librdkafka: see configs_users.c.
 *
 * librdkafka 2.0 has only the legacy AlterConfigs, which replaces every
 * override of the resource. So --alter reads the current overrides with
 * DescribeConfigs, applies the additions and deletions, and sends the
 * whole set, as kafka-configs did against brokers without
 * IncrementalAlterConfigs. A change made by someone else between the two
 * requests is lost; the tool cannot prevent that with this API.
 */
#include "autoconf.h"

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/configs_quotas.h"
#include "tools/configs_users.h"
#include "tools/tool_common.h"

struct opts {
	bool describe, alter, all, entity_default;
	const char *bootstrap;
	const char *type;   /* "topics", "brokers" or "users" */
	const char *name;
	struct tool_props add;     /* k=v */
	struct tool_props del;     /* k= (value unused) */
	struct tool_props client;
	int timeout_ms;
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: runnel-configs --bootstrap-server HOST:PORT --describe\n"
	    "           --entity-type topics|brokers|users|clients [--entity-name NAME] "
	    "[--all]\n"
	    "       runnel-configs --bootstrap-server HOST:PORT --alter\n"
	    "           --entity-type topics|brokers --entity-name NAME\n"
	    "           [--add-config k=v[,k2=v2,k3=[a,b]]] "
	    "[--delete-config k[,k2]]\n"
	    "       runnel-configs --bootstrap-server HOST:PORT --alter\n"
	    "           --entity-type users --entity-name USER\n"
	    "           [--add-config 'SCRAM-SHA-256=[iterations=N,"
	    "password=P]'] [--delete-config SCRAM-SHA-256]\n"
	    "       runnel-configs --bootstrap-server HOST:PORT --describe\n"
	    "           --entity-type users [--entity-name USER]\n"
	    "shortcuts: --topic T = --entity-type topics --entity-name T;\n"
	    "           --broker N = --entity-type brokers --entity-name N\n"
	    "client options: --command-config FILE, -X key=value, "
	    "--timeout-ms MS\n"
	    "--describe shows the dynamic overrides; --all shows every config "
	    "with its source.\n");
}

static bool
is_topics(const struct opts *o)
{
	return strcmp(o->type, "topics") == 0;
}

static const char *
entity_label(const struct opts *o, const char *name, char *buf, size_t len)
{
	if (!is_topics(o) && *name == '\0')
		snprintf(buf, len, "the brokers' cluster-wide defaults");
	else
		snprintf(buf, len, "%s %s", is_topics(o) ? "topic" : "broker",
		    name);
	return buf;
}

/* The source that counts as "dynamic" for this entity. */
static rd_kafka_ConfigSource_t
dynamic_source(const struct opts *o, const char *name)
{
	if (is_topics(o))
		return RD_KAFKA_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG;
	return *name ? RD_KAFKA_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG :
	    RD_KAFKA_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG;
}

static bool
valid_key(const char *k, size_t n)
{
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)k[i]) && k[i] != '.' &&
		    k[i] != '_' && k[i] != '-')
			return false;
	return true;
}

/*
 * "k=v,k2=[a,b],k3=v3": commas inside [] belong to the value and the
 * brackets are dropped, as kafka-configs does.
 */
static int
parse_add(struct tool_props *p, const char *arg)
{
	const char *s = arg;

	while (*s) {
		const char *start = s, *eq;
		int depth = 0;
		char *kv, *o;
		size_t klen;

		while (*s && (depth > 0 || *s != ',')) {
			if (*s == '[')
				depth++;
			else if (*s == ']' && depth > 0)
				depth--;
			s++;
		}
		if ((kv = strndup(start, (size_t)(s - start))) == NULL)
			return -1;
		if (*s == ',')
			s++;
		eq = strchr(kv, '=');
		klen = eq ? (size_t)(eq - kv) : 0;
		while (klen > 0 && isspace((unsigned char)kv[klen - 1]))
			klen--;
		if (eq == NULL || !valid_key(kv, klen)) {
			tool_errx("--add-config: '%s' is not key=value (keys "
			    "are letters, digits, '.', '_', '-')", kv);
			free(kv);
			return -1;
		}
		/* drop the grouping brackets and the blanks around '=' */
		memmove(kv + klen, eq, strlen(eq) + 1);
		for (o = kv + klen + 1; isspace((unsigned char)*o);)
			memmove(o, o + 1, strlen(o));
		for (o = kv + klen + 1; *o;)
			if (*o == '[' || *o == ']')
				memmove(o, o + 1, strlen(o));
			else
				o++;
		if (tool_props_add(p, kv) != 0) {
			free(kv);
			return -1;
		}
		free(kv);
	}
	return 0;
}

static int
parse_del(struct tool_props *p, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL, kv[512];
	int rc = 0;

	if (copy == NULL)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok && rc == 0;
	    tok = strtok_r(NULL, ",", &save)) {
		while (isspace((unsigned char)*tok))
			tok++;
		if (!valid_key(tok, strlen(tok))) {
			tool_errx("--delete-config: '%s' is not a config name",
			    tok);
			rc = -1;
		} else {
			snprintf(kv, sizeof(kv), "%s=", tok);
			rc = tool_props_add(p, kv);
		}
	}
	free(copy);
	return rc;
}

/* One DescribeConfigs for the entity; the event, or NULL after saying why. */
static rd_kafka_event_t *
describe_one(rd_kafka_t *rk, const struct opts *o, const char *name,
    const rd_kafka_ConfigResource_t **resp)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = tool_admin_options(rk,
	    RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, o->timeout_ms);
	rd_kafka_ConfigResource_t *r = rd_kafka_ConfigResource_new(
	    is_topics(o) ? RD_KAFKA_RESOURCE_TOPIC : RD_KAFKA_RESOURCE_BROKER,
	    name);
	const rd_kafka_ConfigResource_t **rs;
	rd_kafka_event_t *ev;
	char what[512], label[300];
	size_t n;

	snprintf(what, sizeof(what), "cannot read the configs of %s",
	    entity_label(o, name, label, sizeof(label)));
	rd_kafka_DescribeConfigs(rk, &r, 1, ao, q);
	rd_kafka_ConfigResource_destroy(r);
	rd_kafka_AdminOptions_destroy(ao);
	ev = tool_admin_wait(rk, q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT,
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
	rs = rd_kafka_DescribeConfigs_result_resources(
	    rd_kafka_event_DescribeConfigs_result(ev), &n);
	if (n != 1 || rd_kafka_ConfigResource_error(rs[0])) {
		tool_report_err(what, n != 1 ? RD_KAFKA_RESP_ERR__BAD_MSG :
		    rd_kafka_ConfigResource_error(rs[0]),
		    n != 1 ? "no result for it" :
		    rd_kafka_ConfigResource_error_string(rs[0]));
		rd_kafka_event_destroy(ev);
		return NULL;
	}
	*resp = rs[0];
	return ev;
}

static int
cmp_entry(const void *a, const void *b)
{
	return strcmp(
	    rd_kafka_ConfigEntry_name(*(const rd_kafka_ConfigEntry_t *const *)a),
	    rd_kafka_ConfigEntry_name(*(const rd_kafka_ConfigEntry_t *const *)b));
}

static const char *
source_name(const rd_kafka_ConfigEntry_t *e)
{
	return rd_kafka_ConfigSource_name(rd_kafka_ConfigEntry_source(e));
}

static const char *
value_or_null(const rd_kafka_ConfigEntry_t *e)
{
	const char *v = rd_kafka_ConfigEntry_value(e);

	return v ? v : "null";
}

static int
describe_entity(rd_kafka_t *rk, const struct opts *o, const char *name)
{
	const rd_kafka_ConfigResource_t *res;
	const rd_kafka_ConfigEntry_t **ents, **sorted;
	rd_kafka_event_t *ev = describe_one(rk, o, name, &res);
	rd_kafka_ConfigSource_t dyn = dynamic_source(o, name);
	char label[300];
	size_t n, i, j;

	if (ev == NULL)
		return TOOL_EXIT_FAIL;
	ents = rd_kafka_ConfigResource_configs(res, &n);
	if ((sorted = calloc(n + 1, sizeof(*sorted))) == NULL) {
		rd_kafka_event_destroy(ev);
		return TOOL_EXIT_FAIL;
	}
	memcpy(sorted, ents, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_entry);
	printf("%s configs for %s are:\n", o->all ? "All" : "Dynamic",
	    entity_label(o, name, label, sizeof(label)));
	for (i = 0; i < n; i++) {
		const rd_kafka_ConfigEntry_t *e = sorted[i], **syn;
		size_t ns;

		if (!o->all && rd_kafka_ConfigEntry_source(e) != dyn)
			continue;
		printf("  %s=%s sensitive=%s source=%s synonyms={",
		    rd_kafka_ConfigEntry_name(e), value_or_null(e),
		    rd_kafka_ConfigEntry_is_sensitive(e) ? "true" : "false",
		    source_name(e));
		syn = rd_kafka_ConfigEntry_synonyms(e, &ns);
		for (j = 0; j < ns; j++)
			printf("%s%s:%s=%s", j ? ", " : "",
			    source_name(syn[j]),
			    rd_kafka_ConfigEntry_name(syn[j]),
			    value_or_null(syn[j]));
		printf("}\n");
	}
	free(sorted);
	rd_kafka_event_destroy(ev);
	return TOOL_EXIT_OK;
}

static int
do_describe(rd_kafka_t *rk, const struct opts *o)
{
	struct tool_md md;
	char id[16];
	int i, rc = TOOL_EXIT_OK;

	if (tool_require_api(o->bootstrap, &o->client,
	    TOOL_API_DESCRIBE_CONFIGS, "DescribeConfigs",
	    "cannot read configs", o->timeout_ms) != 0)
		return TOOL_EXIT_FAIL;
	if (o->name != NULL)
		return describe_entity(rk, o, o->name);
	/* no name: every topic, or every broker */
	if (tool_md_fetch(rk, o->bootstrap, &o->client, o->timeout_ms, &md) !=
	    0)
		return TOOL_EXIT_FAIL;
	if (is_topics(o)) {
		for (i = 0; i < md.n_topics && rc == TOOL_EXIT_OK; i++)
			rc = describe_entity(rk, o, md.topics[i].name);
	} else {
		for (i = 0; i < md.n_brokers && rc == TOOL_EXIT_OK; i++) {
			snprintf(id, sizeof(id), "%d", md.brokers[i]);
			rc = describe_entity(rk, o, id);
		}
	}
	tool_md_free(&md);
	return rc;
}

/* Index of key in p, or -1. */
static int
find_key(const struct tool_props *p, const char *key)
{
	size_t kl = strlen(key);
	int i;

	for (i = 0; i < p->n; i++)
		if (strncmp(p->kv[i], key, kl) == 0 && p->kv[i][kl] == '=')
			return i;
	return -1;
}

/* The current overrides that stay (not deleted, not given again). */
static int
keep_current(const struct opts *o, const rd_kafka_ConfigEntry_t **ents,
    size_t n, rd_kafka_ConfigSource_t dyn, const char *what,
    struct tool_props *merged)
{
	char *kv;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		const rd_kafka_ConfigEntry_t *e = ents[i];
		const char *k = rd_kafka_ConfigEntry_name(e);

		if (rd_kafka_ConfigEntry_source(e) != dyn ||
		    find_key(&o->del, k) >= 0 || find_key(&o->add, k) >= 0)
			continue;
		if (rd_kafka_ConfigEntry_value(e) == NULL) {
			tool_errx("%s: %s is sensitive and the broker does not "
			    "show its value; give it again with --add-config "
			    "(INVALID_CONFIG)", what, k);
			return -1;
		}
		/* as long as the value is: never cut a config short */
		if (asprintf(&kv, "%s=%s", k,
		    rd_kafka_ConfigEntry_value(e)) < 0)
			return -1;
		rc = tool_props_add(merged, kv);
		free(kv);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* Every --delete-config names a current override; 0 or -1. */
static int
check_deletions(const struct opts *o, const rd_kafka_ConfigEntry_t **ents,
    size_t n, rd_kafka_ConfigSource_t dyn, const char *what)
{
	size_t i;
	int j;

	for (j = 0; j < o->del.n; j++) {
		char key[512];
		bool found = false;

		snprintf(key, sizeof(key), "%s", o->del.kv[j]);
		key[strlen(key) - 1] = '\0'; /* the '=' */
		for (i = 0; i < n; i++)
			if (rd_kafka_ConfigEntry_source(ents[i]) == dyn &&
			    strcmp(rd_kafka_ConfigEntry_name(ents[i]),
			    key) == 0)
				found = true;
		if (!found) {
			tool_errx("%s: %s is not overridden, nothing to delete "
			    "(INVALID_CONFIG)", what, key);
			return -1;
		}
	}
	return 0;
}

/* AlterConfigs with the whole set of overrides; an exit code. */
static int
send_alter(rd_kafka_t *rk, const struct opts *o, const char *name,
    const struct tool_props *merged, const char *what)
{
	const rd_kafka_ConfigResource_t **rs;
	rd_kafka_ConfigResource_t *r;
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_event_t *ev;
	size_t n;
	int j, rc = TOOL_EXIT_FAIL;

	r = rd_kafka_ConfigResource_new(is_topics(o) ? RD_KAFKA_RESOURCE_TOPIC :
	    RD_KAFKA_RESOURCE_BROKER, name);
	for (j = 0; j < merged->n; j++) {
		char *eq = strchr(merged->kv[j], '=');

		*eq = '\0';
		rd_kafka_ConfigResource_set_config(r, merged->kv[j], eq + 1);
		*eq = '=';
	}
	ao = tool_admin_options(rk, RD_KAFKA_ADMIN_OP_ALTERCONFIGS,
	    o->timeout_ms);
	rd_kafka_AlterConfigs(rk, &r, 1, ao, q);
	if ((ev = tool_admin_wait(rk, q, RD_KAFKA_EVENT_ALTERCONFIGS_RESULT,
	    o->timeout_ms + 5000, what)) == NULL)
		goto out;
	if (rd_kafka_event_error(ev)) {
		tool_report_err(what, rd_kafka_event_error(ev),
		    rd_kafka_event_error_string(ev));
		goto out_ev;
	}
	rs = rd_kafka_AlterConfigs_result_resources(
	    rd_kafka_event_AlterConfigs_result(ev), &n);
	if (n == 1 && rd_kafka_ConfigResource_error(rs[0]))
		tool_report_err(what, rd_kafka_ConfigResource_error(rs[0]),
		    rd_kafka_ConfigResource_error_string(rs[0]));
	else
		rc = TOOL_EXIT_OK;
out_ev:
	rd_kafka_event_destroy(ev);
out:
	rd_kafka_ConfigResource_destroy(r);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return rc;
}

static int
do_alter(rd_kafka_t *rk, const struct opts *o)
{
	const char *name = o->name ? o->name : "";
	const rd_kafka_ConfigResource_t *cur;
	const rd_kafka_ConfigEntry_t **ents;
	rd_kafka_ConfigSource_t dyn = dynamic_source(o, name);
	rd_kafka_event_t *ev;
	struct tool_props merged = { 0 };
	char what[512], label[300];
	size_t n;
	int j, rc = TOOL_EXIT_FAIL;

	snprintf(what, sizeof(what), "cannot change the configs of %s",
	    entity_label(o, name, label, sizeof(label)));
	if (tool_require_api(o->bootstrap, &o->client,
	    TOOL_API_ALTER_CONFIGS, "AlterConfigs", what, o->timeout_ms) != 0)
		return TOOL_EXIT_FAIL;
	if ((ev = describe_one(rk, o, name, &cur)) == NULL)
		return TOOL_EXIT_FAIL;
	/* the current overrides, minus deletions, plus additions */
	ents = rd_kafka_ConfigResource_configs(cur, &n);
	if (keep_current(o, ents, n, dyn, what, &merged) != 0 ||
	    check_deletions(o, ents, n, dyn, what) != 0) {
		rd_kafka_event_destroy(ev);
		goto out;
	}
	for (j = 0; j < o->add.n; j++)
		if (tool_props_add(&merged, o->add.kv[j]) != 0)
			break;
	rd_kafka_event_destroy(ev);
	if (j == o->add.n && send_alter(rk, o, name, &merged, what) ==
	    TOOL_EXIT_OK) {
		printf("Updated the configs of %s.\n", label);
		rc = TOOL_EXIT_OK;
	}
out:
	tool_props_free(&merged);
	return rc;
}

static int
check_opts(struct opts *o)
{
	long id;

	if (o->describe == o->alter) {
		tool_errx("give exactly one of --describe, --alter");
		return -1;
	}
	if (tool_check_bootstrap(o->bootstrap) != 0)
		return -1;
	if (o->type == NULL) {
		tool_errx("--entity-type topics|brokers is required");
		return -1;
	}
	if (strcmp(o->type, "users") == 0 || strcmp(o->type, "clients") == 0) {
		if (o->name != NULL && o->entity_default) {
			tool_errx("give --entity-name or --entity-default, "
			    "not both");
			return -1;
		}
		if (o->alter && o->name == NULL && !o->entity_default) {
			tool_errx("--alter needs --entity-name or "
			    "--entity-default");
			return -1;
		}
		if (o->alter && o->add.n == 0 && o->del.n == 0) {
			tool_errx("--alter needs --add-config and/or "
			    "--delete-config");
			return -1;
		}
		return 0;
	}
	if (strcmp(o->type, "topics") != 0 && strcmp(o->type, "brokers") != 0) {
		tool_errx("--entity-type '%s': runnel-configs knows topics, "
		    "brokers, users and clients", o->type);
		return -1;
	}
	if (o->entity_default) {
		/* librdkafka 2.0 addresses broker resources by id only */
		tool_errx("--entity-default is not supported: librdkafka 2.0 "
		    "cannot address the cluster-wide broker defaults");
		return -1;
	}
	if (o->name && strcmp(o->type, "brokers") == 0 &&
	    tool_parse_long(o->name, 0, INT32_MAX, &id) != 0) {
		tool_errx("--entity-name for brokers is a broker id, not '%s'",
		    o->name);
		return -1;
	}
	if (o->alter) {
		if (o->name == NULL) {
			tool_errx("--alter needs --entity-name");
			return -1;
		}
		if (o->add.n == 0 && o->del.n == 0) {
			tool_errx("--alter needs --add-config and/or "
			    "--delete-config");
			return -1;
		}
		if (o->all) {
			tool_errx("--all goes with --describe");
			return -1;
		}
	} else if (o->add.n || o->del.n) {
		tool_errx("--add-config and --delete-config go with --alter");
		return -1;
	}
	return 0;
}

enum {
	O_BOOTSTRAP = 256, O_DESCRIBE, O_ALTER, O_ALL, O_TYPE, O_NAME,
	O_DEFAULT, O_ADD, O_DEL, O_TOPIC, O_BROKER,
};

static const struct option lopts[] = {
	{ "bootstrap-server", required_argument, NULL, O_BOOTSTRAP },
	{ "describe", no_argument, NULL, O_DESCRIBE },
	{ "alter", no_argument, NULL, O_ALTER },
	{ "all", no_argument, NULL, O_ALL },
	{ "entity-type", required_argument, NULL, O_TYPE },
	{ "entity-name", required_argument, NULL, O_NAME },
	{ "entity-default", no_argument, NULL, O_DEFAULT },
	{ "add-config", required_argument, NULL, O_ADD },
	{ "delete-config", required_argument, NULL, O_DEL },
	{ "topic", required_argument, NULL, O_TOPIC },
	{ "broker", required_argument, NULL, O_BROKER },
	TOOL_LOPT_TIMEOUT,
	TOOL_LOPT_CLIENT,
	{ NULL, 0, NULL, 0 },
};

/* One option into o; 0, or -1 after saying why. */
static int
one_opt(int ch, const char *arg, void *arg_o)
{
	struct opts *o = arg_o;

	switch (ch) {
	case O_BOOTSTRAP: o->bootstrap = arg; break;
	case O_DESCRIBE: o->describe = true; break;
	case O_ALTER: o->alter = true; break;
	case O_ALL: o->all = true; break;
	case O_TYPE: o->type = arg; break;
	case O_NAME: o->name = arg; break;
	case O_DEFAULT: o->entity_default = true; break;
	case O_ADD: return parse_add(&o->add, arg);
	case O_DEL: return parse_del(&o->del, arg);
	case O_TOPIC: o->type = "topics"; o->name = arg; break;
	case O_BROKER: o->type = "brokers"; o->name = arg; break;
	}
	return 0;
}

static int
check(void *o)
{
	return check_opts(o);
}

/* 1 if every config given names a SCRAM mechanism, 0 if none, -1 mixed. */
static int
scram_keys(const struct opts *o)
{
	int i, scram = 0, other = 0;

	for (i = 0; i < o->add.n; i++)
		strncmp(o->add.kv[i], "SCRAM-", 6) == 0 ? scram++ : other++;
	for (i = 0; i < o->del.n; i++)
		strncmp(o->del.kv[i], "SCRAM-", 6) == 0 ? scram++ : other++;
	return scram > 0 && other > 0 ? -1 : scram > 0;
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
	o.timeout_ms = TOOL_DEFAULT_TIMEOUT_MS;
	cli.client = &o.client;
	cli.timeout_ms = &o.timeout_ms;
	if ((rc = tool_parse_args(argc, argv, &cli, &o)) >= 0)
		return rc;
	if (strcmp(o.type, "users") == 0 || strcmp(o.type, "clients") == 0) {
		int scram = scram_keys(&o);

		if (scram < 0 || (scram > 0 && (o.entity_default ||
		    strcmp(o.type, "users") != 0))) {
			tool_errx("SCRAM credentials are a named user's, set apart "
			    "from quotas");
			rc = TOOL_EXIT_USAGE;
		} else if (o.describe) {
			/* as kafka-configs: a user's quotas, then its SCRAM */
			rc = cq_run(o.bootstrap, true, o.type, o.name,
			    o.entity_default, &o.add, &o.del, o.timeout_ms);
			if (rc == TOOL_EXIT_OK && strcmp(o.type, "users") == 0 &&
			    !o.entity_default)
				rc = configs_users_describe(o.bootstrap,
				    &o.client, o.timeout_ms, o.name);
		} else if (scram > 0)
			rc = configs_users_alter(o.bootstrap, &o.client,
			    o.timeout_ms, o.name, &o.add, &o.del);
		else
			rc = cq_run(o.bootstrap, false, o.type, o.name,
			    o.entity_default, &o.add, &o.del, o.timeout_ms);
		tool_props_free(&o.add);
		tool_props_free(&o.del);
		tool_props_free(&o.client);
		return rc;
	}
	if ((rk = tool_client_new(RD_KAFKA_PRODUCER, o.bootstrap, &o.client,
	    NULL)) == NULL)
		return TOOL_EXIT_FAIL;
	rc = o.describe ? do_describe(rk, &o) : do_alter(rk, &o);
	rd_kafka_destroy(rk);
	tool_props_free(&o.add);
	tool_props_free(&o.del);
	tool_props_free(&o.client);
	return rc;
}
