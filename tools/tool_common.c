/*
 * Helpers shared by runnel-topics, runnel-configs and runnel-perf.
 */
#include "autoconf.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tools/tool_common.h"

static const char *progname = "runnel-tool";
static char last_client_error[512];
static volatile int brokers_down;

void
tool_init(const char *prog)
{
	const char *s = strrchr(prog, '/');

	progname = s ? s + 1 : prog;
}

const char *
tool_prog(void)
{
	return progname;
}

static void
vmsg(const char *kind, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s", progname, kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void
tool_errx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void
tool_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

int
tool_props_add(struct tool_props *p, const char *kv)
{
	const char *eq = strchr(kv, '=');

	if (eq == NULL || eq == kv) {
		tool_errx("'%s' is not a key=value property", kv);
		return -1;
	}
	if (p->n == p->cap) {
		int cap = p->cap ? p->cap * 2 : 8;
		char **n = realloc(p->kv, (size_t)cap * sizeof(*n));
		if (n == NULL)
			return -1;
		p->kv = n;
		p->cap = cap;
	}
	if ((p->kv[p->n] = strdup(kv)) == NULL)
		return -1;
	p->n++;
	return 0;
}

int
tool_props_load_file(struct tool_props *p, const char *path)
{
	char *line = NULL, *kv;
	size_t cap = 0;
	FILE *f;
	int lineno = 0, rc = 0;

	if ((f = fopen(path, "r")) == NULL) {
		tool_errx("%s: %s", path, strerror(errno));
		return -1;
	}
	/* lines of any length: a long list value stays one property */
	while (rc == 0 && getline(&line, &cap, f) != -1) {
		char *s = rn_trim(line), *sep;

		lineno++;
		if (*s == '\0' || *s == '#' || *s == '!')
			continue;
		/* Java properties: the first '=' or ':' separates */
		sep = s + strcspn(s, "=:");
		if (*sep == '\0' || sep == s) {
			tool_errx("%s:%d: expected key=value", path, lineno);
			rc = -1;
			break;
		}
		*sep = '\0';
		if (asprintf(&kv, "%s=%s", rn_trim(s), rn_trim(sep + 1)) < 0) {
			rc = -1;
			break;
		}
		rc = tool_props_add(p, kv);
		free(kv);
	}
	free(line);
	fclose(f);
	return rc;
}

void
tool_props_free(struct tool_props *p)
{
	int i;

	for (i = 0; i < p->n; i++)
		free(p->kv[i]);
	free(p->kv);
	memset(p, 0, sizeof(*p));
}

int
tool_check_bootstrap(const char *bootstrap)
{
	char *copy, *tok, *save = NULL;
	int rc = 0;

	if (bootstrap == NULL || *bootstrap == '\0') {
		tool_errx("--bootstrap-server HOST:PORT is required");
		return -1;
	}
	if ((copy = strdup(bootstrap)) == NULL)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok != NULL && rc == 0;
	    tok = strtok_r(NULL, ",", &save)) {
		const char *colon = strrchr(tok, ':');
		long port;

		if (colon == NULL || colon == tok ||
		    tool_parse_long(colon + 1, 1, 65535, &port) != 0) {
			tool_errx("--bootstrap-server: '%s' is not HOST:PORT",
			    tok);
			rc = -1;
		}
	}
	free(copy);
	return rc;
}

static void
log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	strlcpy(last_client_error, buf, sizeof(last_client_error));
	if (getenv("RUNNEL_TOOLS_DEBUG") != NULL)
		fprintf(stderr, "%s: librdkafka %d %s: %s\n", progname, level,
		    fac, buf);
}

static void
error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
	    err == RD_KAFKA_RESP_ERR__RESOLVE)
		brokers_down = 1;
	else
		strlcpy(last_client_error, reason, sizeof(last_client_error));
	if (getenv("RUNNEL_TOOLS_DEBUG") != NULL)
		fprintf(stderr, "%s: librdkafka error %s: %s\n", progname,
		    rd_kafka_err2name(err), reason);
}

bool
tool_all_brokers_down(void)
{
	return brokers_down != 0;
}

const char *
tool_last_client_error(void)
{
	return last_client_error;
}

rd_kafka_t *
tool_client_new(rd_kafka_type_t type, const char *bootstrap,
    const struct tool_props *props, rd_kafka_conf_t *conf)
{
	char errstr[512];
	rd_kafka_t *rk;
	int i;

	if (conf == NULL)
		conf = rd_kafka_conf_new();
	rd_kafka_conf_set_log_cb(conf, log_cb);
	rd_kafka_conf_set_error_cb(conf, error_cb);
	if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr,
	    sizeof(errstr)) != RD_KAFKA_CONF_OK ||
	    rd_kafka_conf_set(conf, "client.id", progname, errstr,
	    sizeof(errstr)) != RD_KAFKA_CONF_OK) {
		tool_errx("%s", errstr);
		rd_kafka_conf_destroy(conf);
		return NULL;
	}
	for (i = 0; props != NULL && i < props->n; i++) {
		char key[256];
		const char *eq = strchr(props->kv[i], '=');
		size_t kl = (size_t)(eq - props->kv[i]);

		if (kl >= sizeof(key))
			kl = sizeof(key) - 1;
		memcpy(key, props->kv[i], kl);
		key[kl] = '\0';
		if (rd_kafka_conf_set(conf, key, eq + 1, errstr,
		    sizeof(errstr)) != RD_KAFKA_CONF_OK) {
			tool_errx("client property %s: %s", props->kv[i],
			    errstr);
			rd_kafka_conf_destroy(conf);
			return NULL;
		}
	}
	if ((rk = rd_kafka_new(type, conf, errstr, sizeof(errstr))) == NULL) {
		tool_errx("cannot create the Kafka client: %s", errstr);
		return NULL; /* rd_kafka_new frees conf only on success */
	}
	return rk;
}

static const struct {
	rd_kafka_resp_err_t err;
	const char *desc;
} err_descs[] = {
	{ RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS, "the topic already exists" },
	{ RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "no such topic" },
	{ RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, "invalid topic name" },
	{ RD_KAFKA_RESP_ERR_INVALID_PARTITIONS,
	    "invalid number of partitions" },
	{ RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR,
	    "invalid replication factor" },
	{ RD_KAFKA_RESP_ERR_INVALID_REPLICA_ASSIGNMENT,
	    "invalid replica assignment" },
	{ RD_KAFKA_RESP_ERR_INVALID_CONFIG, "invalid configuration" },
	{ RD_KAFKA_RESP_ERR_INVALID_REQUEST, "the broker refused the request" },
	{ RD_KAFKA_RESP_ERR_POLICY_VIOLATION, "refused by the cluster's policy" },
	{ RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, "not authorized" },
	{ RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, "not authorized" },
	{ RD_KAFKA_RESP_ERR_SECURITY_DISABLED,
	    "the cluster has no authorizer configured" },
	{ RD_KAFKA_RESP_ERR_NOT_CONTROLLER,
	    "the broker asked is not the controller" },
	{ RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
	    "the cluster did not finish in time" },
	{ RD_KAFKA_RESP_ERR_TOPIC_DELETION_DISABLED,
	    "topic deletion is disabled on the cluster" },
	{ RD_KAFKA_RESP_ERR_UNSUPPORTED_VERSION,
	    "the broker does not support this request" },
	{ RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE,
	    "the broker does not support this request" },
	{ RD_KAFKA_RESP_ERR__TIMED_OUT, "no answer from the cluster in time" },
	{ RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "no broker is reachable" },
	{ RD_KAFKA_RESP_ERR__TRANSPORT, "the connection to the broker failed" },
	{ RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, "not enough in-sync replicas" },
	{ RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
	    "not enough in-sync replicas after the append" },
	{ RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, "the record is too large" },
	{ RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
	    "the broker is not the partition's leader" },
	{ RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
	    "the partition has no leader" },
};

const char *
tool_err_desc(rd_kafka_resp_err_t err)
{
	size_t i;

	for (i = 0; i < RN_ARRAY_SIZE(err_descs); i++)
		if (err_descs[i].err == err)
			return err_descs[i].desc;
	return rd_kafka_err2str(err);
}

/* Kafka's names where librdkafka spells a code differently. */
static const struct {
	rd_kafka_resp_err_t err;
	const char *name;
} kafka_names[] = {
	{ RD_KAFKA_RESP_ERR_INVALID_MSG, "CORRUPT_MESSAGE" },
	{ RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
	    "UNKNOWN_TOPIC_OR_PARTITION" },
	{ RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE, "INVALID_FETCH_SIZE" },
	{ RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
	    "NOT_LEADER_OR_FOLLOWER" },
	{ RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, "MESSAGE_TOO_LARGE" },
	{ RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION, "INVALID_TOPIC_EXCEPTION" },
	{ RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE, "RECORD_LIST_TOO_LARGE" },
	{ RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS, "INVALID_REQUIRED_ACKS" },
};

const char *
tool_err_name(rd_kafka_resp_err_t err)
{
	const char *name = rd_kafka_err2name(err);
	size_t i;

	for (i = 0; i < RN_ARRAY_SIZE(kafka_names); i++)
		if (kafka_names[i].err == err)
			return kafka_names[i].name;
	/* librdkafka names its local errors with a leading '_' */
	while (*name == '_')
		name++;
	return name;
}

void
tool_report_err(const char *what, rd_kafka_resp_err_t err,
    const char *broker_msg)
{
	const char *name = tool_err_name(err);

	if (broker_msg != NULL && *broker_msg != '\0' &&
	    strcmp(broker_msg, rd_kafka_err2str(err)) != 0)
		tool_errx("%s: %s (%s): %s", what, tool_err_desc(err), name,
		    broker_msg);
	else
		tool_errx("%s: %s (%s)", what, tool_err_desc(err), name);
}

rd_kafka_AdminOptions_t *
tool_admin_options(rd_kafka_t *rk, rd_kafka_admin_op_t op, int timeout_ms)
{
	rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, op);
	char errstr[256];

	rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, errstr,
	    sizeof(errstr));
	/* wait for the cluster to finish, not only to accept */
	if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS ||
	    op == RD_KAFKA_ADMIN_OP_DELETETOPICS ||
	    op == RD_KAFKA_ADMIN_OP_CREATEPARTITIONS)
		rd_kafka_AdminOptions_set_operation_timeout(o, timeout_ms,
		    errstr, sizeof(errstr));
	return o;
}

static void
report_unreachable(const char *what)
{
	const char *last = tool_last_client_error();

	tool_errx("%s: no broker is reachable%s%s", what,
	    *last ? ": " : "", last);
}

rd_kafka_event_t *
tool_admin_wait(rd_kafka_t *rk, rd_kafka_queue_t *q,
    rd_kafka_event_type_t want, int timeout_ms, const char *what)
{
	int64_t deadline = rn_now_ms() + timeout_ms;
	rd_kafka_event_t *ev;

	while (rn_now_ms() < deadline) {
		if ((ev = rd_kafka_queue_poll(q, 100)) != NULL) {
			if (rd_kafka_event_type(ev) == want)
				return ev;
			rd_kafka_event_destroy(ev);
		}
		rd_kafka_poll(rk, 0);
		if (tool_all_brokers_down()) {
			report_unreachable(what);
			return NULL;
		}
	}
	tool_report_err(what, RD_KAFKA_RESP_ERR__TIMED_OUT, NULL);
	return NULL;
}

int
tool_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int
tool_opt_long(const char *flag, const char *s, long min, long max,
    long *out)
{
	if (tool_parse_long(s, min, max, out) == 0)
		return 0;
	tool_errx("%s: '%s' is not a number in [%ld, %ld]", flag, s, min, max);
	return -1;
}

/* -X, --command-config, --timeout-ms: 1 when ch is one (*bad set), 0 if
 * not. */
static int
client_opt(int ch, const char *arg, struct tool_props *client,
    int *timeout_ms, int *bad)
{
	long v;

	switch (ch) {
	case TOOL_O_CMD_CONFIG:
		*bad = tool_props_load_file(client, arg);
		return 1;
	case 'X':
		*bad = tool_props_add(client, arg);
		return 1;
	case TOOL_O_TIMEOUT:
		if (timeout_ms == NULL)
			return 0;
		if ((*bad = tool_parse_long(arg, 1, 3600000, &v)) == 0)
			*timeout_ms = (int)v;
		else
			tool_errx("--timeout-ms: bad value '%s'", arg);
		return 1;
	default:
		return 0;
	}
}

int
tool_parse_args(int argc, char **argv, const struct tool_cli *cli, void *o)
{
	int ch, bad;

	while ((ch = getopt_long(argc, argv, "hX:", cli->lopts, NULL)) != -1) {
		if (ch == 'h') {
			cli->usage(stdout);
			return TOOL_EXIT_OK;
		}
		if (ch == '?' || ch == ':') {
			cli->usage(stderr);
			return TOOL_EXIT_USAGE;
		}
		bad = 0;
		if (!client_opt(ch, optarg, cli->client, cli->timeout_ms, &bad))
			bad = cli->opt(ch, optarg, o);
		if (bad)
			return TOOL_EXIT_USAGE;
	}
	if (optind != argc) {
		tool_errx("unexpected argument '%s'", argv[optind]);
		return TOOL_EXIT_USAGE;
	}
	if (cli->check(o) != 0) {
		fprintf(stderr, "(%s --help for usage)\n", progname);
		return TOOL_EXIT_USAGE;
	}
	return -1;
}

/* ---- metadata ---- */

static int
cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

static int
cmp_part(const void *a, const void *b)
{
	return cmp_i32(&((const struct tool_part *)a)->id,
	    &((const struct tool_part *)b)->id);
}

static int
cmp_topic(const void *a, const void *b)
{
	return strcmp(((const struct tool_topic *)a)->name,
	    ((const struct tool_topic *)b)->name);
}

static int32_t *
dup_i32(const int32_t *src, int n)
{
	int32_t *d = calloc((size_t)(n > 0 ? n : 1), sizeof(*d));

	if (d != NULL && n > 0)
		memcpy(d, src, (size_t)n * sizeof(*d));
	return d;
}

static int
md_from_rdkafka(const rd_kafka_metadata_t *m, struct tool_md *md)
{
	int i, j;

	memset(md, 0, sizeof(*md));
	md->controller = -1;
	md->topics = calloc((size_t)m->topic_cnt + 1, sizeof(*md->topics));
	md->brokers = calloc((size_t)m->broker_cnt + 1, sizeof(*md->brokers));
	if (md->topics == NULL || md->brokers == NULL)
		return -1;
	for (i = 0; i < m->broker_cnt; i++)
		md->brokers[md->n_brokers++] = m->brokers[i].id;
	for (i = 0; i < m->topic_cnt; i++) {
		const rd_kafka_metadata_topic_t *mt = &m->topics[i];
		struct tool_topic *t = &md->topics[md->n_topics++];

		t->name = strdup(mt->topic);
		t->err = (int16_t)mt->err;
		/* librdkafka does not pass the internal flag on */
		t->internal = strncmp(mt->topic, "__", 2) == 0;
		t->parts = calloc((size_t)mt->partition_cnt + 1,
		    sizeof(*t->parts));
		if (t->name == NULL || t->parts == NULL)
			return -1;
		for (j = 0; j < mt->partition_cnt; j++) {
			const rd_kafka_metadata_partition_t *mp =
			    &mt->partitions[j];
			struct tool_part *p = &t->parts[t->n_parts++];

			p->id = mp->id;
			p->err = (int16_t)mp->err;
			p->leader = mp->leader;
			p->replicas = dup_i32(mp->replicas, mp->replica_cnt);
			p->n_replicas = mp->replica_cnt;
			p->isr = dup_i32(mp->isrs, mp->isr_cnt);
			p->n_isr = mp->isr_cnt;
			p->offline = dup_i32(NULL, 0);
			if (!p->replicas || !p->isr || !p->offline)
				return -1;
		}
	}
	return 0;
}

/*
 * Whether our own plain-text requests may go to the bootstrap server: not
 * to a TLS/SASL listener, and not to a broker told to be older than
 * ApiVersions (api.version.request=false: Kafka 0.9 drops the connection
 * or stays silent on it).
 */
static bool
plaintext_only(const struct tool_props *props)
{
	int i;

	for (i = 0; props != NULL && i < props->n; i++) {
		if (strncmp(props->kv[i], "security.protocol=", 18) == 0 &&
		    strcasecmp(props->kv[i] + 18, "plaintext") != 0)
			return false;
		if (strcmp(props->kv[i], "api.version.request=false") == 0)
			return false;
	}
	return true;
}

bool
tool_plaintext_only(const struct tool_props *props)
{
	return plaintext_only(props);
}

int
tool_require_api(const char *bootstrap, const struct tool_props *props,
    int key, const char *request, const char *what, int timeout_ms)
{
	if (!plaintext_only(props))
		return 0;
	tool_api_probe(bootstrap, timeout_ms < 6000 ? timeout_ms / 3 : 2000);
	if (!tool_api_unsupported(key))
		return 0;
	tool_errx("%s: the broker at %s does not support %s requests "
	    "(UNSUPPORTED_VERSION)", what, bootstrap, request);
	return -1;
}

int
tool_md_fetch(rd_kafka_t *rk, const char *bootstrap,
    const struct tool_props *props, int timeout_ms, struct tool_md *md)
{
	const struct rd_kafka_metadata *m = NULL;
	rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
	int64_t deadline;
	char why[256];
	int i, rc;

	memset(md, 0, sizeof(*md));
	if (plaintext_only(props) &&
	    getenv("RUNNEL_TOOLS_NO_DIRECT_METADATA") == NULL) {
		/* a short try: librdkafka's way must keep most of the time */
		rc = tool_kmeta_fetch(bootstrap, timeout_ms < 6000 ?
		    timeout_ms / 3 : 2000, md, why, sizeof(why));
		if (rc == 0)
			goto sort;
		tool_md_free(md);
		if (getenv("RUNNEL_TOOLS_DEBUG") != NULL)
			tool_warnx("direct metadata: %s; using librdkafka's",
			    why);
	}
	/* short slices, so "nothing listens" ends the wait early */
	deadline = rn_now_ms() + timeout_ms;
	while (rn_now_ms() < deadline) {
		err = rd_kafka_metadata(rk, 1, NULL, &m, 1000);
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			break;
		rd_kafka_poll(rk, 0);
		if (tool_all_brokers_down()) {
			report_unreachable("cannot read the cluster metadata");
			return -1;
		}
	}
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		tool_report_err("cannot read the cluster metadata", err, NULL);
		return -1;
	}
	rc = md_from_rdkafka(m, md);
	rd_kafka_metadata_destroy(m);
	if (rc != 0) {
		tool_errx("out of memory");
		return -1;
	}
sort:
	qsort(md->topics, (size_t)md->n_topics, sizeof(*md->topics),
	    cmp_topic);
	for (i = 0; i < md->n_topics; i++)
		qsort(md->topics[i].parts, (size_t)md->topics[i].n_parts,
		    sizeof(struct tool_part), cmp_part);
	qsort(md->brokers, (size_t)md->n_brokers, sizeof(int32_t), cmp_i32);
	return 0;
}

void
tool_md_free(struct tool_md *md)
{
	int i, j;

	for (i = 0; md->topics != NULL && i < md->n_topics; i++) {
		struct tool_topic *t = &md->topics[i];

		for (j = 0; t->parts != NULL && j < t->n_parts; j++) {
			free(t->parts[j].replicas);
			free(t->parts[j].isr);
			free(t->parts[j].offline);
		}
		free(t->parts);
		free(t->name);
	}
	free(md->topics);
	free(md->brokers);
	free(md->cluster_id);
	memset(md, 0, sizeof(*md));
}

const struct tool_topic *
tool_md_topic(const struct tool_md *md, const char *name)
{
	struct tool_topic key = { .name = (char *)name };

	return bsearch(&key, md->topics, (size_t)md->n_topics,
	    sizeof(*md->topics), cmp_topic);
}
