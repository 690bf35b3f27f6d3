/*
 * runnel-perf raw-producer and raw-consumer: the options, the connections
 * and the figures they share (see perf_raw.h). The load itself is in
 * perf_raw_produce.c and perf_raw_fetch.c.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "protocol/kmsg_gen.h"
#include "tools/perf_raw.h"
#include "tools/tool_common.h"
#include "tools/tool_kclient.h"

#define MB (1024.0 * 1024.0)
#define MAX_RECORDS 1000000000L

volatile sig_atomic_t raw_interrupted;

static void
on_signal(int sig)
{
	(void)sig;
	raw_interrupted = 1;
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: runnel-perf raw-producer --bootstrap-server HOST:PORT "
	    "--topic T\n"
	    "           (--num-records N | --duration-s S) [--partition P]\n"
	    "           [--record-size BYTES] [--batch-records N | "
	    "--batch-bytes BYTES]\n"
	    "           [--request-batches N] [--acks 0|1|all] "
	    "[--idempotent]\n"
	    "           [--connections C] [--inflight N] "
	    "[--latency-file FILE]\n"
	    "       runnel-perf raw-consumer --bootstrap-server HOST:PORT "
	    "--topic T\n"
	    "           [--num-records N] [--partition P] [--from-offset O]\n"
	    "           [--fetch-max-bytes BYTES] [--connections C]\n"
	    "both: [--interval-ms MS] [--timeout-ms MS] [--print-json]\n"
	    "The raw verbs speak the Kafka protocol with pre-encoded requests, "
	    "no client\nlibrary: they measure the broker. The bootstrap server "
	    "must lead the partition.\n");
}

/* ---- options ---- */

enum {
	O_BOOTSTRAP = 256, O_TOPIC, O_PARTITION, O_NUM, O_DURATION, O_SIZE,
	O_BATCH_RECORDS, O_BATCH_BYTES, O_REQUEST_BATCHES, O_ACKS,
	O_IDEMPOTENT, O_CONNECTIONS, O_INFLIGHT, O_LATENCY_FILE, O_INTERVAL,
	O_FETCH_MAX, O_FROM, O_JSON,
};

static const struct option lopts[] = {
	{ "bootstrap-server", required_argument, NULL, O_BOOTSTRAP },
	{ "topic", required_argument, NULL, O_TOPIC },
	{ "partition", required_argument, NULL, O_PARTITION },
	{ "num-records", required_argument, NULL, O_NUM },
	{ "duration-s", required_argument, NULL, O_DURATION },
	{ "record-size", required_argument, NULL, O_SIZE },
	{ "batch-records", required_argument, NULL, O_BATCH_RECORDS },
	{ "batch-bytes", required_argument, NULL, O_BATCH_BYTES },
	{ "request-batches", required_argument, NULL, O_REQUEST_BATCHES },
	{ "acks", required_argument, NULL, O_ACKS },
	{ "idempotent", no_argument, NULL, O_IDEMPOTENT },
	{ "connections", required_argument, NULL, O_CONNECTIONS },
	{ "inflight", required_argument, NULL, O_INFLIGHT },
	{ "latency-file", required_argument, NULL, O_LATENCY_FILE },
	{ "interval-ms", required_argument, NULL, O_INTERVAL },
	{ "fetch-max-bytes", required_argument, NULL, O_FETCH_MAX },
	{ "from-offset", required_argument, NULL, O_FROM },
	{ "print-json", no_argument, NULL, O_JSON },
	TOOL_LOPT_TIMEOUT,
	TOOL_LOPT_CLIENT,
	{ NULL, 0, NULL, 0 },
};

static int
raw_opt(int ch, const char *arg, void *arg_o)
{
	struct raw_opts *o = arg_o;
	long v;

	switch (ch) {
	case O_BOOTSTRAP: o->bootstrap = arg; return 0;
	case O_TOPIC: o->topic = arg; return 0;
	case O_PARTITION:
		if (tool_opt_long("--partition", arg, 0, INT32_MAX, &v) != 0)
			return -1;
		o->partition = (int32_t)v;
		return 0;
	case O_NUM:
		return tool_opt_long("--num-records", arg, 1, MAX_RECORDS,
		    &o->num_records);
	case O_DURATION:
		return tool_opt_long("--duration-s", arg, 1, 86400,
		    &o->duration_s);
	case O_SIZE:
		return tool_opt_long("--record-size", arg, 0, 10 * 1024 * 1024,
		    &o->record_size);
	case O_BATCH_RECORDS:
		return tool_opt_long("--batch-records", arg, 1, 1000000,
		    &o->batch_records);
	case O_BATCH_BYTES:
		return tool_opt_long("--batch-bytes", arg, 1, 64 * 1024 * 1024,
		    &o->batch_bytes);
	case O_REQUEST_BATCHES:
		return tool_opt_long("--request-batches", arg, 1, 1024,
		    &o->request_batches);
	case O_ACKS:
		if (strcmp(arg, "all") == 0 || strcmp(arg, "-1") == 0)
			o->acks = -1;
		else if (strcmp(arg, "0") == 0 || strcmp(arg, "1") == 0)
			o->acks = (int16_t)(arg[0] - '0');
		else {
			tool_errx("--acks is 0, 1 or all, not '%s'", arg);
			return -1;
		}
		return 0;
	case O_IDEMPOTENT: o->idempotent = true; return 0;
	case O_CONNECTIONS:
		return tool_opt_long("--connections", arg, 1, 64,
		    &o->connections);
	case O_INFLIGHT:
		return tool_opt_long("--inflight", arg, 1, 64, &o->inflight);
	case O_LATENCY_FILE: o->latency_file = arg; return 0;
	case O_INTERVAL:
		return tool_opt_long("--interval-ms", arg, 10, 3600000,
		    &o->interval_ms);
	case O_FETCH_MAX:
		return tool_opt_long("--fetch-max-bytes", arg, 1024,
		    INT32_MAX - 4096, &o->fetch_max_bytes);
	case O_FROM:
		return tool_opt_long("--from-offset", arg, 0, INT64_MAX >> 1,
		    &o->from_offset);
	case O_JSON: o->print_json = true; return 0;
	}
	return -1;
}

static int
check_opts(void *arg_o)
{
	struct raw_opts *o = arg_o;

	if (tool_check_bootstrap(o->bootstrap) != 0)
		return -1;
	if (o->topic == NULL) {
		tool_errx("--topic is required");
		return -1;
	}
	if (o->producer && o->num_records == 0 && o->duration_s == 0) {
		tool_errx("--num-records or --duration-s is required");
		return -1;
	}
	if (o->batch_records && o->batch_bytes) {
		tool_errx("--batch-records and --batch-bytes do not mix");
		return -1;
	}
	/* Kafka keeps at most 5 batches of a producer in flight, and one
	 * sequence cannot be spread over connections */
	if (o->idempotent && (o->connections > 1 ||
	    o->inflight * o->request_batches > 5)) {
		tool_errx("--idempotent takes one connection and at most 5 "
		    "batches in flight (--inflight x --request-batches)");
		return -1;
	}
	return 0;
}

/* Fill o from the command line; -1 to go on, else the exit code. */
static int
parse_args(int argc, char **argv, struct raw_opts *o)
{
	struct tool_props client = { NULL, 0, 0 };
	int timeout_ms = 10000;
	struct tool_cli cli = { lopts, raw_opt, check_opts, usage, &client,
	    &timeout_ms };
	int rc;

	memset(o, 0, sizeof(*o));
	o->producer = strcmp(argv[1], "raw-producer") == 0;
	o->record_size = 100;
	o->request_batches = 1;
	o->acks = 1;
	o->connections = 1;
	o->inflight = 5;
	o->fetch_max_bytes = 64L * 1024 * 1024;
	optind = 2;
	rc = tool_parse_args(argc, argv, &cli, o);
	o->timeout_ms = timeout_ms;
	if (rc < 0 && client.n > 0) {
		tool_errx("-X and --command-config are for the librdkafka "
		    "verbs; the raw verbs have no client library");
		rc = TOOL_EXIT_USAGE;
	}
	tool_props_free(&client);
	return rc;
}

int
perf_raw_main(int argc, char **argv)
{
	struct raw_opts o;
	struct sigaction sa;
	int rc;

	if ((rc = parse_args(argc, argv, &o)) >= 0)
		return rc;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return o.producer ? raw_produce_run(&o) : raw_fetch_run(&o);
}

/* ---- connections ---- */

/* The highest version of key within [min, max] the broker takes; -1. */
static int
api_version(const struct raw_opts *o, struct raw_conn *c, int16_t key,
    int16_t min, int16_t max, int16_t *ver)
{
	struct rn_ApiVersionsRequest req;
	struct rn_ApiVersionsResponse resp;
	struct rn_arena arena;
	char err[256];
	int32_t i;
	int rc = -1;

	rn_arena_init(&arena, 0);
	rn_ApiVersionsRequest_init(&req);
	if (tkc_call_api(c->fd, RN_KAPI_API_VERSIONS, 0, &req, &arena, &resp,
	    (int)o->timeout_ms, err, sizeof(err)) != 0) {
		tool_errx("ApiVersions: %s", err);
		goto out;
	}
	for (i = 0; i < resp.api_keys_count; i++) {
		const struct rn_ApiVersionsResponse_ApiVersion *a =
		    &resp.api_keys[i];

		if (a->api_key != key)
			continue;
		if (a->max_version < min || a->min_version > max)
			break;
		*ver = a->max_version < max ? a->max_version : max;
		rc = 0;
		goto out;
	}
	tool_errx("the broker takes no version of API %d in [%d, %d]", key,
	    min, max);
out:
	rn_arena_free(&arena);
	return rc;
}

/* Connect c to the bootstrap server, non-blocking; -1 after saying why. */
static int
conn_open(const struct raw_opts *o, struct raw_conn *c)
{
	char err[256];
	int one = 1, big = 4 << 20;

	c->fd = tkc_connect(o->bootstrap, (int)o->timeout_ms, err,
	    sizeof(err));
	if (c->fd < 0) {
		tool_errx("%s", err);
		return -1;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* room for whole requests in the kernel: fewer wake-ups */
	setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	c->next_corr = c->want_corr = 1;
	return 0;
}

struct raw_conn *
raw_conns_open(const struct raw_opts *o, int16_t key, int16_t min,
    int16_t max, int16_t *ver)
{
	struct raw_conn *conns;
	long i;

	if ((conns = calloc((size_t)o->connections, sizeof(*conns))) == NULL) {
		tool_errx("out of memory");
		return NULL;
	}
	for (i = 0; i < o->connections; i++)
		conns[i].fd = -1;
	for (i = 0; i < o->connections; i++)
		if (conn_open(o, &conns[i]) != 0)
			goto err;
	if (api_version(o, &conns[0], key, min, max, ver) == 0)
		return conns;
err:
	raw_conns_close(conns, o->connections);
	return NULL;
}

void
raw_conns_close(struct raw_conn *conns, long n)
{
	long i;

	for (i = 0; conns != NULL && i < n; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	free(conns);
}

ssize_t
raw_write(int fd, const uint8_t *buf, size_t len)
{
	ssize_t k = send(fd, buf, len, MSG_NOSIGNAL);

	if (k < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return k;
}

void
raw_set_corr(uint8_t *frame, int32_t corr)
{
	uint32_t be = htonl((uint32_t)corr);

	/* size i32, api key i16, api version i16, then the correlation id */
	memcpy(frame + 8, &be, sizeof(be));
}

/* ---- figures ---- */

void
raw_stats_start(struct raw_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->start_ns = s->win_start_ns = rn_now_ns();
}

void
raw_stats_add(struct raw_stats *s, const struct raw_opts *o, long records,
    double payload, double wire)
{
	int64_t now = rn_now_ns();

	s->records += records;
	s->payload_bytes += payload;
	s->wire_bytes += wire;
	s->end_ns = now;
	s->win_records += records;
	s->win_bytes += payload;
	if (o->interval_ms > 0 &&
	    now - s->win_start_ns >= o->interval_ms * 1000000L) {
		double secs = (double)(now - s->win_start_ns) / 1e9;

		/* columns for a plot: seconds since start, records/s, MB/s */
		printf("interval %.3f %.1f %.3f\n",
		    (double)(now - s->start_ns) / 1e9,
		    (double)s->win_records / secs, s->win_bytes / MB / secs);
		fflush(stdout);
		s->win_start_ns = now;
		s->win_records = 0;
		s->win_bytes = 0;
	}
}

void
raw_stats_error(struct raw_stats *s, int code)
{
	if (s->errors++ == 0)
		s->first_error = code;
}

void
raw_stats_print(const struct raw_stats *s, const struct raw_opts *o,
    const char *mode, const char *extra)
{
	double secs = s->end_ns > s->start_ns ?
	    (double)(s->end_ns - s->start_ns) / 1e9 : 0;
	double rps = secs > 0 ? (double)s->records / secs : 0;
	double mbps = secs > 0 ? s->payload_bytes / MB / secs : 0;
	double wire = secs > 0 ? s->wire_bytes / MB / secs : 0;
	struct rusage ru;

	printf("%ld records, %.1f records/s (%.2f MB/s of values, %.2f MB/s "
	    "of batches) over %.3f s; %ld errors\n", s->records, rps, mbps,
	    wire, secs, s->errors);
	if (s->errors)
		printf("the first error: %s (%d)\n",
		    tool_err_name((rd_kafka_resp_err_t)s->first_error),
		    s->first_error);
	getrusage(RUSAGE_SELF, &ru);
	if (o->print_json)
		printf("{\"mode\":\"%s\",\"records\":%ld,"
		    "\"errors\":%ld,\"first_error\":%d,\"connections\":%ld,"
		    "\"elapsed_s\":%.3f,\"records_per_sec\":%.1f,"
		    "\"mb_per_sec\":%.3f,\"wire_mb_per_sec\":%.3f,"
		    "\"bytes\":%.0f,\"cpu_user_s\":%.3f,"
		    "\"cpu_sys_s\":%.3f%s}\n",
		    mode, s->records, s->errors,
		    s->first_error, o->connections, secs, rps, mbps, wire,
		    s->wire_bytes, (double)ru.ru_utime.tv_sec +
		    ru.ru_utime.tv_usec / 1e6, (double)ru.ru_stime.tv_sec +
		    ru.ru_stime.tv_usec / 1e6, extra);
	fflush(stdout);
}
