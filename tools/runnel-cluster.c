/*
 * runnel-cluster: the cluster's identity and its observed brokers, shaped
 * like kafka-cluster.sh.
 *
 *   runnel-cluster cluster-id --bootstrap-server H:P
 *   runnel-cluster unregister --id N (--bootstrap-server H:P |
 *       --bootstrap-controller H:P[,H:P...])
 *   runnel-cluster list [--control-socket PATH]
 *
 * cluster-id asks DescribeCluster; unregister sends UnregisterBroker to a
 * broker (which forwards it to the active controller) or to the
 * controllers in turn until the active one answers. list reads the
 * observed brokers (every broker that registered and was not
 * unregistered, with its state) from the local runneld's control socket:
 * every node's metadata image holds them, and no Kafka API reports a
 * broker in controlled shutdown or since when one is absent.
 */
#include "autoconf.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "tools/tool_kclient.h"

#define TIMEOUT_MS 30000
#define DEFAULT_SOCKET "/run/runnel/runneld.sock"

static const char *prog = "runnel-cluster";

struct args {
	const char *verb;
	const char *bootstrap;   /* --bootstrap-server */
	const char *controllers; /* --bootstrap-controller */
	const char *socket;
	int32_t id;
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: %s cluster-id --bootstrap-server HOST:PORT\n"
	    "       %s unregister --id N (--bootstrap-server HOST:PORT | "
	    "--bootstrap-controller HOST:PORT[,...])\n"
	    "       %s list [--control-socket PATH]\n", prog, prog, prog);
}

/* -1 to go on, else the exit code. */
static int
parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "bootstrap-server", required_argument, NULL, 'b' },
		{ "bootstrap-controller", required_argument, NULL, 'c' },
		{ "control-socket", required_argument, NULL, 's' },
		{ "id", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	long v;
	int ch;

	while ((ch = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'b': a->bootstrap = optarg; break;
		case 'c': a->controllers = optarg; break;
		case 's': a->socket = optarg; break;
		case 'i':
			v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 0 ||
			    v > INT32_MAX) {
				fprintf(stderr, "%s: bad --id %s\n", prog,
				    optarg);
				return 2;
			}
			a->id = (int32_t)v;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	a->verb = argv[optind];
	if ((strcmp(a->verb, "cluster-id") == 0 && a->bootstrap != NULL) ||
	    (strcmp(a->verb, "unregister") == 0 && a->id >= 0 &&
	    (a->bootstrap != NULL) != (a->controllers != NULL)) ||
	    strcmp(a->verb, "list") == 0)
		return -1;
	usage(stderr);
	return 2;
}

static int
cluster_id(const struct args *a)
{
	struct rn_DescribeClusterRequest req;
	struct rn_DescribeClusterResponse resp;
	struct rn_arena arena;
	char err[512];
	int fd, rc = 1;

	if ((fd = tkc_connect(a->bootstrap, 10000, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	rn_arena_init(&arena, 1u << 20);
	rn_DescribeClusterRequest_init(&req);
	if (tkc_call_api(fd, RN_KAPI_DESCRIBE_CLUSTER, 0, &req, &arena, &resp,
	    TIMEOUT_MS, err, sizeof(err)) != 0)
		fprintf(stderr, "%s: DescribeCluster: %s\n", prog, err);
	else if (resp.error_code != 0)
		fprintf(stderr, "%s: DescribeCluster: %s\n", prog,
		    rn_kerr_name(resp.error_code));
	else {
		printf("Cluster ID: %.*s\n", (int)resp.cluster_id.len,
		    resp.cluster_id.ptr);
		rc = 0;
	}
	rn_arena_free(&arena);
	close(fd);
	return rc;
}

/* One UnregisterBroker to addr: its error code, or -1 (no answer). */
static int
unregister_at(const char *addr, int32_t id, char *msg, size_t msglen)
{
	struct rn_UnregisterBrokerRequest req;
	struct rn_UnregisterBrokerResponse resp;
	struct rn_arena arena;
	int fd, rc = -1;

	if ((fd = tkc_connect(addr, 10000, msg, msglen)) < 0)
		return -1;
	rn_arena_init(&arena, 1u << 20);
	rn_UnregisterBrokerRequest_init(&req);
	req.broker_id = id;
	if (tkc_call_api(fd, RN_KAPI_UNREGISTER_BROKER, 0, &req, &arena,
	    &resp, TIMEOUT_MS, msg, msglen) == 0) {
		rc = resp.error_code;
		snprintf(msg, msglen, "%.*s", (int)(resp.error_message.len > 0 ?
		    resp.error_message.len : 0), resp.error_message.ptr);
	}
	rn_arena_free(&arena);
	close(fd);
	return rc;
}

/* A broker forwards; of the controllers, only the active one answers. */
static int
unregister(const struct args *a)
{
	char list[1024], msg[512] = "", *addr, *save = NULL;
	int e = -1;

	if (a->bootstrap != NULL)
		e = unregister_at(a->bootstrap, a->id, msg, sizeof(msg));
	else {
		strlcpy(list, a->controllers, sizeof(list));
		for (addr = strtok_r(list, ",", &save); addr != NULL &&
		    (e < 0 || e == RN_KERR_NOT_CONTROLLER);
		    addr = strtok_r(NULL, ",", &save))
			e = unregister_at(addr, a->id, msg, sizeof(msg));
	}
	if (e == 0) {
		printf("Broker %d unregistered.\n", a->id);
		return 0;
	}
	if (e < 0)
		fprintf(stderr, "%s: UnregisterBroker: %s\n", prog, msg);
	else
		fprintf(stderr, "%s: UnregisterBroker %d: %s%s%s\n", prog,
		    a->id, rn_kerr_name((int16_t)e), msg[0] ? ": " : "", msg);
	return 1;
}

/* The state runnel-cluster shows for an image's broker map. */
static const char *
broker_state(const msgpack_object *b, int64_t since)
{
	const msgpack_object *f = rn_mp_get(b, "fenced"),
	    *s = rn_mp_get(b, "shutdown");
	bool fenced = f != NULL && f->type == MSGPACK_OBJECT_BOOLEAN &&
	    f->via.boolean;

	if (fenced && since > 0)
		return "absent";
	if (s != NULL && s->type == MSGPACK_OBJECT_BOOLEAN && s->via.boolean)
		return "controlled-shutdown";
	return fenced ? "fenced" : "unfenced";
}

static void
print_broker(const msgpack_object *b)
{
	char host[256], hp[300], rack[256], when[64] = "";
	int64_t since = rn_mp_get_int(b, "absent_since", 0);
	const char *state = broker_state(b, since);

	if (rn_mp_get_str(b, "host", host, sizeof(host)) != 0)
		host[0] = '\0';
	if (rn_mp_get_str(b, "rack", rack, sizeof(rack)) != 0)
		strlcpy(rack, "-", sizeof(rack));
	if (strcmp(state, "absent") == 0) {
		time_t t = (time_t)(since / 1000);
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), " since %Y-%m-%dT%H:%M:%SZ", &tm);
	}
	snprintf(hp, sizeof(hp), "%s:%lld", host,
	    (long long)rn_mp_get_int(b, "port", 0));
	printf("%-8lld %-40s %-16s %s%s\n",
	    (long long)rn_mp_get_int(b, "id", -1), hp, rack, state, when);
}

static int
print_list(const char *reply, size_t n)
{
	msgpack_unpacked up;
	const msgpack_object *ok, *bs;
	char err[256];
	uint32_t i;
	int rc = 1;

	msgpack_unpacked_init(&up);
	if (msgpack_unpack_next(&up, reply, n, NULL) !=
	    MSGPACK_UNPACK_SUCCESS || up.data.type != MSGPACK_OBJECT_MAP)
		fprintf(stderr, "%s: malformed reply\n", prog);
	else if ((ok = rn_mp_get(&up.data, "ok")) == NULL ||
	    ok->type != MSGPACK_OBJECT_BOOLEAN || !ok->via.boolean) {
		if (rn_mp_get_str(&up.data, "error", err, sizeof(err)) != 0)
			strlcpy(err, "request failed", sizeof(err));
		fprintf(stderr, "%s: %s\n", prog, err);
	} else if ((bs = rn_mp_get(&up.data, "brokers")) != NULL &&
	    bs->type == MSGPACK_OBJECT_ARRAY) {
		printf("%-8s %-40s %-16s %s\n", "ID", "HOST:PORT", "RACK",
		    "STATE");
		for (i = 0; i < bs->via.array.size; i++)
			print_broker(&bs->via.array.ptr[i]);
		rc = 0;
	}
	msgpack_unpacked_destroy(&up);
	return rc;
}

static int
list(const struct args *a)
{
	char *reply = NULL;
	bool connected;
	ssize_t n;
	int rc = 1;

	n = rn_ctl_call_verb(a->socket, "brokers", &reply, &connected);
	if (!connected)
		fprintf(stderr, "%s: cannot connect to %s: %s\n", prog,
		    a->socket, strerror((int)-n));
	else if (n < 0)
		fprintf(stderr, "%s: %s: no reply from runneld\n", prog,
		    a->socket);
	else
		rc = print_list(reply, (size_t)n);
	free(reply);
	return rc;
}

int
main(int argc, char **argv)
{
	struct args a = { .id = -1 };
	int rc;

	if ((a.socket = getenv("RUNNEL_CONTROL_SOCKET")) == NULL)
		a.socket = DEFAULT_SOCKET;
	if ((rc = parse_args(argc, argv, &a)) >= 0)
		return rc;
	if (strcmp(a.verb, "cluster-id") == 0)
		return cluster_id(&a);
	if (strcmp(a.verb, "unregister") == 0)
		return unregister(&a);
	return list(&a);
}
