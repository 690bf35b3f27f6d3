/*
 * runnel-log-dirs: the log directories of brokers and the replicas in
 * each, as kafka-log-dirs.sh shows them: DescribeLogDirs to every broker
 * (or those of --broker-list), printed as Kafka's JSON.
 *
 *   runnel-log-dirs --bootstrap-server H:P --describe
 *       [--broker-list 1,2] [--topic-list a,b]
 */
#include "autoconf.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/util.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "tools/tool_kclient.h"
#include "tools/tool_logdirs.h"

#define TIMEOUT_MS 30000

static const char *prog = "runnel-log-dirs";

struct args {
	const char *bootstrap;
	const char *brokers;     /* comma list, NULL: all */
	const char *topics;      /* comma list, NULL: all */
	bool describe;
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: %s --bootstrap-server HOST:PORT --describe "
	    "[--broker-list ID,...] [--topic-list TOPIC,...]\n", prog);
}

static int
parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "bootstrap-server", required_argument, NULL, 'b' },
		{ "describe", no_argument, NULL, 'd' },
		{ "broker-list", required_argument, NULL, 'B' },
		{ "topic-list", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'b': a->bootstrap = optarg; break;
		case 'd': a->describe = true; break;
		case 'B': a->brokers = optarg; break;
		case 't': a->topics = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (a->bootstrap == NULL || !a->describe || optind != argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* Is name (len bytes) one of the comma list's items? NULL list: yes. */
static bool
in_list(const char *list, const char *name, size_t len)
{
	const char *p = list, *e;

	if (list == NULL || *list == '\0')
		return true;
	while (*p != '\0') {
		e = strchr(p, ',');
		if (e == NULL)
			e = p + strlen(p);
		if ((size_t)(e - p) == len && memcmp(p, name, len) == 0)
			return true;
		p = *e == ',' ? e + 1 : e;
	}
	return false;
}

/* Kafka names the error by its exception class. */
static json_t *
error_json(int16_t e)
{
	char buf[128];

	if (e == 0)
		return json_null();
	if (e == RN_KERR_KAFKA_STORAGE_ERROR)
		return json_string("org.apache.kafka.common.errors."
		    "KafkaStorageException");
	snprintf(buf, sizeof(buf), "%s", rn_kerr_name(e));
	return json_string(buf);
}

/* --broker-list ids the cluster does not have; 0 if none. */
static int
unknown_brokers(const struct args *a, const struct rn_MetadataResponse *md)
{
	const char *p = a->brokers, *e;
	char id[16], bad[1024] = "", all[1024] = "";
	int32_t i;

	for (i = 0; i < md->brokers_count; i++)
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%d",
		    i ? "," : "", md->brokers[i].node_id);
	while (p != NULL && *p != '\0') {
		e = p + strcspn(p, ",");
		for (i = 0; i < md->brokers_count; i++) {
			snprintf(id, sizeof(id), "%d", md->brokers[i].node_id);
			if ((size_t)(e - p) == strlen(id) &&
			    memcmp(p, id, strlen(id)) == 0)
				break;
		}
		if (i == md->brokers_count && e > p)
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad),
			    "%s%.*s", bad[0] ? "," : "", (int)(e - p), p);
		p = *e == ',' ? e + 1 : e;
	}
	if (bad[0] == '\0')
		return 0;
	fprintf(stderr, "ERROR: The given brokers do not exist from "
	    "--broker-list: %s. Current existent brokers: %s\n", bad, all);
	return 1;
}

static json_t *
dir_json(const struct args *a,
    const struct rn_DescribeLogDirsResponse_DescribeLogDirsResult *d)
{
	json_t *o = json_object(), *ps = json_array();
	int32_t i, k;

	for (i = 0; i < d->topics_count; i++) {
		const struct rn_DescribeLogDirsResponse_DescribeLogDirsTopic
		    *t = &d->topics[i];

		if (!in_list(a->topics, t->name.ptr, (size_t)t->name.len))
			continue;
		for (k = 0; k < t->partitions_count; k++) {
			const struct
			    rn_DescribeLogDirsResponse_DescribeLogDirsPartition
			    *p = &t->partitions[k];
			json_t *po = json_object();
			char name[512];

			snprintf(name, sizeof(name), "%.*s-%d",
			    (int)t->name.len, t->name.ptr, p->partition_index);
			json_object_set_new(po, "partition", json_string(name));
			json_object_set_new(po, "size",
			    json_integer(p->partition_size));
			json_object_set_new(po, "offsetLag",
			    json_integer(p->offset_lag));
			json_object_set_new(po, "isFuture",
			    json_boolean(p->is_future_key));
			json_array_append_new(ps, po);
		}
	}
	json_object_set_new(o, "logDir", json_stringn(d->log_dir.ptr,
	    (size_t)d->log_dir.len));
	json_object_set_new(o, "error", error_json(d->error_code));
	json_object_set_new(o, "partitions", ps);
	return o;
}

/* One broker's answer as Kafka's {"broker":id,"logDirs":[...]}. */
static json_t *
broker_json(const struct args *a,
    const struct rn_MetadataResponse_MetadataResponseBroker *b)
{
	struct rn_DescribeLogDirsResponse resp;
	struct rn_arena ar;
	json_t *o = NULL, *dirs;
	char err[256];
	int32_t i;

	rn_arena_init(&ar, 64u << 20);
	if (tld_describe(b, TIMEOUT_MS, &ar, &resp, err, sizeof(err)) != 0)
		fprintf(stderr, "%s: broker %d: DescribeLogDirs: %s\n", prog,
		    b->node_id, err);
	else {
		o = json_object();
		dirs = json_array();
		json_object_set_new(o, "broker", json_integer(b->node_id));
		for (i = 0; i < resp.results_count; i++)
			json_array_append_new(dirs, dir_json(a,
			    &resp.results[i]));
		json_object_set_new(o, "logDirs", dirs);
	}
	rn_arena_free(&ar);
	return o;
}

static int
describe(const struct args *a)
{
	struct rn_MetadataResponse md;
	struct rn_arena ar;
	json_t *root, *brokers, *bj;
	char ids[1024] = "", id[16], err[256], *s;
	int32_t i;
	int rc = 0;

	rn_arena_init(&ar, 4u << 20);
	if (tld_brokers(a->bootstrap, TIMEOUT_MS, &ar, &md, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "%s: Metadata: %s\n", prog, err);
		rn_arena_free(&ar);
		return 1;
	}
	if (unknown_brokers(a, &md) != 0) {
		rn_arena_free(&ar);
		return 1;
	}
	printf("Querying brokers for log directories information\n");
	root = json_object();
	brokers = json_array();
	json_object_set_new(root, "version", json_integer(1));
	for (i = 0; i < md.brokers_count; i++) {
		snprintf(id, sizeof(id), "%d", md.brokers[i].node_id);
		if (!in_list(a->brokers, id, strlen(id)))
			continue;
		if ((bj = broker_json(a, &md.brokers[i])) == NULL) {
			rc = 1;
			continue;
		}
		json_array_append_new(brokers, bj);
		snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s",
		    ids[0] ? "," : "", id);
	}
	json_object_set_new(root, "brokers", brokers);
	printf("Received log directory information from brokers %s\n", ids);
	s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	printf("%s\n", s != NULL ? s : "{}");
	free(s);
	json_decref(root);
	rn_arena_free(&ar);
	return rc;
}

int
main(int argc, char **argv)
{
	struct args a;
	int rc;

	memset(&a, 0, sizeof(a));
	if ((rc = parse_args(argc, argv, &a)) >= 0)
		return rc;
	return describe(&a);
}
