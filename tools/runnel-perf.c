/*
 * runnel-perf: producer and consumer load over the Kafka protocol, in the
 * manner of kafka-producer-perf-test and kafka-consumer-perf-test.
 *
 *   runnel-perf producer --bootstrap-server H:P --topic T --num-records N
 *       [--record-size B] [--acks 0|1|all] [--linger-ms MS] [--batch-size B]
 *       [--compression none|gzip|snappy|lz4|zstd] [--throughput R|-1]
 *       [--sync] [--print-json] [--latency-file F] [-X key=value]...
 *   runnel-perf consumer --bootstrap-server H:P --topic T --num-records N
 *       [--group G] [--timeout-ms MS] [--print-json] [-X key=value]...
 *   runnel-perf raw-producer | raw-consumer ...   (perf_raw.c: our own
 *       codec, pre-encoded requests, no client library)
 *
 * Producer latency is from the produce call to the delivery report. Each
 * record's send time lives in one preallocated array, indexed by the
 * record's number (passed as the message opaque), and is replaced by its
 * latency when the report arrives, so the hot path allocates nothing.
 * Consumer rates run from the first record received to the Nth.
 *
 * The --print-json line also carries the process's own CPU time (so a
 * benchmark can tell a client-bound run from a broker-bound one) and, for
 * the producer, the longest pause between two successful delivery reports
 * with its wall-clock end (a failover shows up there).
 */
#include "autoconf.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "tools/perf_raw.h"
#include "tools/perf_stats.h"
#include "tools/tool_common.h"

#define MB (1024.0 * 1024.0)
#define MAX_RECORDS 1000000000L

struct opts {
	bool producer;
	const char *bootstrap, *topic, *group;
	long num_records, record_size, throughput;
	const char *acks, *linger_ms, *batch_size, *compression;
	const char *latency_file;
	bool sync, print_json;
	long interval_ms, timeout_ms;
	struct tool_props client;
};

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
	interrupted = 1;
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: runnel-perf producer --bootstrap-server HOST:PORT --topic T "
	    "--num-records N\n"
	    "           [--record-size BYTES] [--acks 0|1|all] [--linger-ms MS]\n"
	    "           [--batch-size BYTES] [--compression "
	    "none|gzip|snappy|lz4|zstd]\n"
	    "           [--throughput RECORDS_PER_SEC|-1] [--sync] "
	    "[--print-json]\n"
	    "           [--latency-file FILE]\n"
	    "       runnel-perf consumer --bootstrap-server HOST:PORT --topic T "
	    "--num-records N\n"
	    "           [--group G] [--timeout-ms MS] [--print-json]\n"
	    "       runnel-perf raw-producer|raw-consumer ... (--help of "
	    "each)\n"
	    "both: -X key=value (any librdkafka property, e.g. "
	    "api.version.request=false),\n"
	    "      --command-config FILE, --reporting-interval MS (default "
	    "1000)\n"
	    "--sync sends one record at a time and waits for its delivery.\n"
	    "--latency-file writes the latencies' CDF (\"percentile ms\" "
	    "lines).\n"
	    "The consumer reads the topic's partitions from the start without "
	    "a group,\nor subscribes as --group G.\n");
}

/* ---- statistics ---- */

struct window {
	int64_t start_ns;
	long count;
	double bytes;
	double lat_sum_us;
	uint32_t lat_max_us;
};

static void
window_reset(struct window *w, int64_t now)
{
	memset(w, 0, sizeof(*w));
	w->start_ns = now;
}

static void
window_print(const struct window *w, int64_t now, bool latency)
{
	double secs = (double)(now - w->start_ns) / 1e9;

	if (secs <= 0)
		return;
	fprintf(stderr, "%ld records, %.1f records/s (%.2f MB/s)", w->count,
	    (double)w->count / secs, w->bytes / MB / secs);
	if (latency && w->count > 0)
		fprintf(stderr, ", %.2f ms avg latency, %.2f ms max latency",
		    w->lat_sum_us / (double)w->count / 1000.0,
		    (double)w->lat_max_us / 1000.0);
	fputc('\n', stderr);
}

/* ---- producer ---- */

struct prod {
	const struct opts *o;
	int64_t start_ns, last_dr_ns;
	uint32_t *t_us; /* send offset from start, then latency, per record */
	long delivered, failed;
	rd_kafka_resp_err_t first_err;
	char first_errstr[256];
	struct window win;
	double lat_sum_us;
	uint32_t lat_max_us;
	int64_t last_ok_ns, max_gap_ns, gap_end_ns;
};

/* Monotonic ns to Unix ms, to line events up with other processes. */
static double
mono_to_unix_ms(int64_t mono_ns)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return ((double)rt.tv_sec * 1e9 + (double)rt.tv_nsec -
	    (double)(rn_now_ns() - mono_ns)) / 1e6;
}

static void
cpu_seconds(double *user, double *sys)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	*user = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	*sys = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void
dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct prod *p = opaque;
	long i = (long)(intptr_t)m->_private;
	int64_t now = rn_now_ns();
	uint32_t sent = p->t_us[i], lat;
	int64_t lat64 = (now - p->start_ns) / 1000 - sent;

	p->last_dr_ns = now;
	if (m->err) {
		if (p->failed++ == 0) {
			p->first_err = m->err;
			strlcpy(p->first_errstr, rd_kafka_err2str(m->err),
			    sizeof(p->first_errstr));
		}
		p->t_us[i] = UINT32_MAX; /* sorted last, left out below */
		return;
	}
	lat = lat64 < 0 ? 0 : lat64 > UINT32_MAX - 1 ? UINT32_MAX - 1 :
	    (uint32_t)lat64;
	p->t_us[i] = lat;
	if (p->last_ok_ns && now - p->last_ok_ns > p->max_gap_ns) {
		p->max_gap_ns = now - p->last_ok_ns;
		p->gap_end_ns = now;
	}
	p->last_ok_ns = now;
	p->delivered++;
	p->lat_sum_us += lat;
	if (lat > p->lat_max_us)
		p->lat_max_us = lat;
	p->win.count++;
	p->win.bytes += (double)m->len;
	p->win.lat_sum_us += lat;
	if (lat > p->win.lat_max_us)
		p->win.lat_max_us = lat;
}

static void
maybe_report(struct prod *p)
{
	int64_t now = rn_now_ns();

	if (now - p->win.start_ns >= p->o->interval_ms * 1000000L) {
		window_print(&p->win, now, true);
		window_reset(&p->win, now);
	}
}

static int
set_conf(rd_kafka_conf_t *c, const char *k, const char *v)
{
	char errstr[256];

	if (v == NULL)
		return 0;
	if (rd_kafka_conf_set(c, k, v, errstr, sizeof(errstr)) !=
	    RD_KAFKA_CONF_OK) {
		tool_errx("%s=%s: %s", k, v, errstr);
		return -1;
	}
	return 0;
}

static void
print_final_producer(const struct opts *o, struct prod *p, long sent,
    double secs)
{
	uint32_t *lat = p->t_us;
	long n = p->delivered;
	double rps = secs > 0 ? (double)n / secs : 0;
	double mbps = secs > 0 ? (double)n * (double)o->record_size / MB /
	    secs : 0;
	double avg = n ? p->lat_sum_us / (double)n / 1000.0 : 0;
	double p50, p95, p99, p999, max = (double)p->lat_max_us / 1000.0;
	double cu, cs;

	/* failed records hold UINT32_MAX and sort past the n good ones */
	perf_sort_us(lat, (size_t)sent);
	p50 = perf_pct_ms(lat, (size_t)n, 50);
	p95 = perf_pct_ms(lat, (size_t)n, 95);
	p99 = perf_pct_ms(lat, (size_t)n, 99);
	p999 = perf_pct_ms(lat, (size_t)n, 99.9);
	printf("%ld records sent, %.1f records/s (%.2f MB/s), %.3f ms avg "
	    "latency, %.3f ms max latency, %.3f ms 50th, %.3f ms 95th, "
	    "%.3f ms 99th, %.3f ms 99.9th.\n", n, rps, mbps, avg, max, p50,
	    p95, p99, p999);
	if (p->failed)
		printf("%ld records failed; the first: %s (%s)\n", p->failed,
		    p->first_errstr, tool_err_name(p->first_err));
	cpu_seconds(&cu, &cs);
	if (o->print_json)
		printf("{\"mode\":\"producer\",\"records\":%ld,\"failed\":%ld,"
		    "\"record_size\":%ld,\"acks\":\"%s\",\"sync\":%s,"
		    "\"elapsed_s\":%.3f,\"records_per_sec\":%.1f,"
		    "\"mb_per_sec\":%.3f,\"avg_ms\":%.3f,\"p50_ms\":%.3f,"
		    "\"p95_ms\":%.3f,\"p99_ms\":%.3f,\"p999_ms\":%.3f,"
		    "\"max_ms\":%.3f,\"cpu_user_s\":%.3f,\"cpu_sys_s\":%.3f,"
		    "\"max_gap_ms\":%.3f,\"max_gap_end_unix_ms\":%.0f,"
		    "\"last_ack_unix_ms\":%.0f}\n", n, p->failed, o->record_size,
		    o->acks ? o->acks : "default", o->sync ? "true" : "false",
		    secs, rps, mbps, avg, p50, p95, p99, p999, max, cu, cs,
		    (double)p->max_gap_ns / 1e6,
		    p->gap_end_ns ? mono_to_unix_ms(p->gap_end_ns) : 0.0,
		    p->last_ok_ns ? mono_to_unix_ms(p->last_ok_ns) : 0.0);
	fflush(stdout);
	if (o->latency_file != NULL)
		(void)perf_write_cdf(o->latency_file, lat, (size_t)n);
}

/* The producer's settings: a large in-flight window, then the options. */
static rd_kafka_conf_t *
producer_conf(const struct opts *o, struct prod *p)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();

	rd_kafka_conf_set_opaque(conf, p);
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	/* room for a large in-flight window; -X can still override */
	if (set_conf(conf, "queue.buffering.max.messages", "1000000") ||
	    set_conf(conf, "queue.buffering.max.kbytes", "1048576") ||
	    set_conf(conf, "acks", o->acks) ||
	    /* --sync measures one round trip per record: no batching wait */
	    set_conf(conf, "linger.ms", o->linger_ms ? o->linger_ms :
	    o->sync ? "0" : NULL) ||
	    set_conf(conf, "batch.size", o->batch_size) ||
	    set_conf(conf, "compression.type", o->compression)) {
		rd_kafka_conf_destroy(conf);
		return NULL;
	}
	return conf;
}

/* Throttle: stay at or below the asked rate; the time record i goes. */
static int64_t
wait_turn(rd_kafka_t *rk, const struct prod *p, long i)
{
	int64_t now = rn_now_ns(), due;

	if (p->o->throughput <= 0)
		return now;
	due = p->start_ns + (int64_t)((double)i * 1e9 /
	    (double)p->o->throughput);
	while (now < due && !interrupted) {
		int ms = (int)((due - now) / 1000000);

		rd_kafka_poll(rk, ms > 0 ? ms : 0);
		now = rn_now_ns();
	}
	return now;
}

/* Hand record i to librdkafka, waiting while its queue is full. */
static bool
produce_one(rd_kafka_t *rk, rd_kafka_topic_t *rkt, struct prod *p,
    char *payload, long i)
{
	while (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, 0, payload,
	    (size_t)p->o->record_size, NULL, 0, (void *)(intptr_t)i) == -1) {
		rd_kafka_resp_err_t err = rd_kafka_last_error();

		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
			tool_report_err("cannot produce", err, NULL);
			interrupted = 1;
			return false;
		}
		rd_kafka_poll(rk, 1);
		maybe_report(p);
	}
	return true;
}

/* --sync: one in flight, wait for this record's report. */
static void
wait_sync(rd_kafka_t *rk, struct prod *p, long sent)
{
	while (p->delivered + p->failed < sent && !interrupted) {
		rd_kafka_poll(rk, 100);
		if (tool_all_brokers_down()) {
			tool_errx("no broker is reachable: %s",
			    tool_last_client_error());
			interrupted = 1;
		}
	}
}

/* Send the records; how many librdkafka took. */
static long
send_records(rd_kafka_t *rk, rd_kafka_topic_t *rkt, struct prod *p,
    char *payload)
{
	long i, sent = 0;

	p->start_ns = rn_now_ns();
	window_reset(&p->win, p->start_ns);
	for (i = 0; i < p->o->num_records && !interrupted; i++) {
		int64_t now = wait_turn(rk, p, i);

		p->t_us[i] = (uint32_t)((now - p->start_ns) / 1000);
		if (!produce_one(rk, rkt, p, payload, i) || interrupted)
			break;
		sent++;
		if (p->o->sync)
			wait_sync(rk, p, sent);
		else if ((i & 1023) == 0)
			rd_kafka_poll(rk, 0);
		maybe_report(p);
	}
	return sent;
}

/* Wait for every report, still printing progress. */
static void
drain(rd_kafka_t *rk, struct prod *p, long sent)
{
	while (p->delivered + p->failed < sent && !interrupted) {
		rd_kafka_poll(rk, 100);
		maybe_report(p);
		if (tool_all_brokers_down() && p->delivered == 0 &&
		    rn_now_ns() - p->start_ns >
		    (int64_t)p->o->timeout_ms * 1000000) {
			tool_errx("no broker is reachable: %s",
			    tool_last_client_error());
			break;
		}
	}
	if (interrupted)
		rd_kafka_purge(rk, RD_KAFKA_PURGE_F_QUEUE |
		    RD_KAFKA_PURGE_F_INFLIGHT);
	rd_kafka_flush(rk, 1000);
}

static int
run_producer(const struct opts *o)
{
	rd_kafka_conf_t *conf;
	rd_kafka_topic_t *rkt;
	rd_kafka_t *rk;
	struct prod p;
	char *payload;
	long i, sent;
	double secs;
	int rc = TOOL_EXIT_FAIL;

	memset(&p, 0, sizeof(p));
	p.o = o;
	p.t_us = malloc((size_t)o->num_records * sizeof(*p.t_us));
	payload = malloc((size_t)o->record_size + 1);
	if (p.t_us == NULL || payload == NULL) {
		tool_errx("cannot allocate %ld records' timestamps",
		    o->num_records);
		goto out_free;
	}
	/* random capitals, like Kafka's tool, so compression has work */
	for (i = 0; i < o->record_size; i++)
		payload[i] = (char)('A' + random() % 26);
	if ((conf = producer_conf(o, &p)) == NULL ||
	    (rk = tool_client_new(RD_KAFKA_PRODUCER, o->bootstrap, &o->client,
	    conf)) == NULL)
		goto out_free;
	rkt = rd_kafka_topic_new(rk, o->topic, NULL);
	sent = send_records(rk, rkt, &p, payload);
	drain(rk, &p, sent);
	window_print(&p.win, rn_now_ns(), true);
	secs = (double)((p.last_dr_ns ? p.last_dr_ns : rn_now_ns()) -
	    p.start_ns) / 1e9;
	print_final_producer(o, &p, sent, secs);
	rc = (p.failed == 0 && p.delivered == o->num_records) ?
	    TOOL_EXIT_OK : TOOL_EXIT_FAIL;
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(rk);
out_free:
	free(p.t_us);
	free(payload);
	return rc;
}

/* ---- consumer ---- */

static void
print_final_consumer(const struct opts *o, long n, double bytes, double secs)
{
	double rps = secs > 0 ? (double)n / secs : 0;
	double mbps = secs > 0 ? bytes / MB / secs : 0;
	double cu, cs;

	printf("%ld records received, %.2f MB, %.1f records/s (%.2f MB/s) "
	    "over %.3f s from the first record.\n", n, bytes / MB, rps, mbps,
	    secs);
	cpu_seconds(&cu, &cs);
	if (o->print_json)
		printf("{\"mode\":\"consumer\",\"records\":%ld,\"mb\":%.3f,"
		    "\"elapsed_s\":%.3f,\"records_per_sec\":%.1f,"
		    "\"mb_per_sec\":%.3f,\"cpu_user_s\":%.3f,"
		    "\"cpu_sys_s\":%.3f}\n", n, bytes / MB, secs, rps, mbps,
		    cu, cs);
	fflush(stdout);
}

/* Assign every partition of the topic from its start (no group needed). */
static int
assign_all(rd_kafka_t *rk, const struct opts *o)
{
	struct tool_md md;
	const struct tool_topic *t;
	rd_kafka_topic_partition_list_t *l;
	rd_kafka_resp_err_t err;
	int i;

	if (tool_md_fetch(rk, o->bootstrap, &o->client, (int)o->timeout_ms,
	    &md) != 0)
		return -1;
	if ((t = tool_md_topic(&md, o->topic)) == NULL || t->n_parts == 0) {
		tool_errx("topic '%s' does not exist (UNKNOWN_TOPIC_OR_PARTITION)",
		    o->topic);
		tool_md_free(&md);
		return -1;
	}
	l = rd_kafka_topic_partition_list_new(t->n_parts);
	for (i = 0; i < t->n_parts; i++)
		rd_kafka_topic_partition_list_add(l, o->topic,
		    t->parts[i].id)->offset = RD_KAFKA_OFFSET_BEGINNING;
	err = rd_kafka_assign(rk, l);
	rd_kafka_topic_partition_list_destroy(l);
	tool_md_free(&md);
	if (err) {
		tool_report_err("cannot assign the partitions", err, NULL);
		return -1;
	}
	return 0;
}

/* A consumer of --group, or of a group of our own; NULL after saying why. */
static rd_kafka_t *
consumer_new(const struct opts *o)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char group[64];

	snprintf(group, sizeof(group), "runnel-perf-%d", (int)getpid());
	if (set_conf(conf, "group.id", o->group ? o->group : group) ||
	    set_conf(conf, "auto.offset.reset", "earliest") ||
	    set_conf(conf, "enable.auto.commit", "false") ||
	    set_conf(conf, "enable.partition.eof", "false")) {
		rd_kafka_conf_destroy(conf);
		return NULL;
	}
	return tool_client_new(RD_KAFKA_CONSUMER, o->bootstrap, &o->client,
	    conf);
}

/* With --group, join it for the topic; else read every partition. */
static int
consumer_start(rd_kafka_t *rk, const struct opts *o)
{
	rd_kafka_topic_partition_list_t *l;
	rd_kafka_resp_err_t err;

	rd_kafka_poll_set_consumer(rk);
	if (o->group == NULL)
		return assign_all(rk, o);
	l = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(l, o->topic, RD_KAFKA_PARTITION_UA);
	err = rd_kafka_subscribe(rk, l);
	rd_kafka_topic_partition_list_destroy(l);
	if (err) {
		tool_report_err("cannot subscribe", err, NULL);
		return -1;
	}
	return 0;
}

/* What the consumer counted. */
struct cons {
	struct window win;
	long n;
	double bytes;
	int64_t first_ns, last_ns, idle_since;
};

static void
consumed(struct cons *k, const rd_kafka_message_t *m, int64_t now)
{
	if (m->err) {
		if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
			tool_warnx("%s", rd_kafka_message_errstr(m));
		return;
	}
	if (k->n == 0) {
		k->first_ns = now;
		window_reset(&k->win, now);
	}
	k->n++;
	k->bytes += (double)m->len;
	k->win.count++;
	k->win.bytes += (double)m->len;
	k->last_ns = now;
	k->idle_since = now;
}

static int
run_consumer(const struct opts *o)
{
	struct cons k;
	rd_kafka_t *rk;
	int rc = TOOL_EXIT_FAIL;

	if ((rk = consumer_new(o)) == NULL)
		return TOOL_EXIT_FAIL;
	if (consumer_start(rk, o) != 0)
		goto out;
	memset(&k, 0, sizeof(k));
	window_reset(&k.win, rn_now_ns());
	k.idle_since = rn_now_ns();
	while (k.n < o->num_records && !interrupted) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
		int64_t now = rn_now_ns();

		if (m != NULL) {
			consumed(&k, m, now);
			rd_kafka_message_destroy(m);
		}
		if (now - k.win.start_ns >= o->interval_ms * 1000000L) {
			window_print(&k.win, now, false);
			window_reset(&k.win, now);
		}
		if (now - k.idle_since > o->timeout_ms * 1000000L) {
			tool_errx("no record for %ld ms; got %ld of %ld",
			    o->timeout_ms, k.n, o->num_records);
			break;
		}
	}
	print_final_consumer(o, k.n, k.bytes,
	    k.n > 1 ? (double)(k.last_ns - k.first_ns) / 1e9 : 0);
	rc = k.n >= o->num_records ? TOOL_EXIT_OK : TOOL_EXIT_FAIL;
out:
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	return rc;
}

/* ---- command line ---- */

static int
check_opts(struct opts *o)
{
	if (tool_check_bootstrap(o->bootstrap) != 0)
		return -1;
	if (o->topic == NULL || o->num_records <= 0) {
		tool_errx("--topic and --num-records are required");
		return -1;
	}
	if (o->producer) {
		if (o->acks && strcmp(o->acks, "0") && strcmp(o->acks, "1") &&
		    strcmp(o->acks, "all") && strcmp(o->acks, "-1")) {
			tool_errx("--acks is 0, 1 or all, not '%s'", o->acks);
			return -1;
		}
		if (o->compression && strcmp(o->compression, "none") &&
		    strcmp(o->compression, "gzip") &&
		    strcmp(o->compression, "snappy") &&
		    strcmp(o->compression, "lz4") &&
		    strcmp(o->compression, "zstd")) {
			tool_errx("--compression is none, gzip, snappy, lz4 or "
			    "zstd, not '%s'", o->compression);
			return -1;
		}
		if (o->sync && o->throughput > 0) {
			tool_errx("--sync and --throughput do not mix");
			return -1;
		}
	} else if (o->acks || o->linger_ms || o->batch_size ||
	    o->compression || o->sync || o->throughput != -1 ||
	    o->latency_file) {
		tool_errx("--acks, --linger-ms, --batch-size, --compression, "
		    "--throughput, --sync and --latency-file are producer "
		    "options");
		return -1;
	} else if (o->record_size != 100) {
		tool_errx("--record-size is a producer option");
		return -1;
	}
	return 0;
}

/* Option codes of producer and consumer. */
enum {
	O_BOOTSTRAP = 256, O_TOPIC, O_NUM, O_SIZE, O_ACKS, O_LINGER,
	O_BATCH, O_COMPRESSION, O_THROUGHPUT, O_SYNC, O_JSON, O_GROUP,
	O_TIMEOUT, O_INTERVAL, O_LATENCY_FILE,
};

/* One option of producer or consumer into o; 0, or -1 after saying why. */
static int
perf_opt(int ch, const char *arg, void *arg_o)
{
	struct opts *o = arg_o;
	long v;
	int bad = 0;

	switch (ch) {
	case O_BOOTSTRAP: o->bootstrap = arg; break;
	case O_TOPIC: o->topic = arg; break;
	case O_NUM:
		bad = tool_opt_long("--num-records", arg, 1, MAX_RECORDS,
		    &o->num_records);
		break;
	case O_SIZE:
		bad = tool_opt_long("--record-size", arg, 0, 100 * 1024 * 1024,
		    &o->record_size);
		break;
	case O_ACKS: o->acks = arg; break;
	case O_LINGER:
		bad = tool_opt_long("--linger-ms", arg, 0, 900000, &v);
		o->linger_ms = arg;
		break;
	case O_BATCH:
		bad = tool_opt_long("--batch-size", arg, 1, INT32_MAX, &v);
		o->batch_size = arg;
		break;
	case O_COMPRESSION: o->compression = arg; break;
	case O_THROUGHPUT:
		bad = tool_opt_long("--throughput", arg,
		    -1, INT32_MAX, &o->throughput);
		if (!bad && o->throughput == 0) {
			tool_errx("--throughput 0 would send nothing; -1 "
			    "means no limit");
			bad = 1;
		}
		break;
	case O_SYNC: o->sync = true; break;
	case O_JSON: o->print_json = true; break;
	case O_GROUP: o->group = arg; break;
	case O_TIMEOUT:
		bad = tool_opt_long("--timeout-ms", arg,
		    1, 3600000, &o->timeout_ms);
		break;
	case O_INTERVAL:
		bad = tool_opt_long("--reporting-interval", arg, 10, 3600000,
		    &o->interval_ms);
		break;
	case O_LATENCY_FILE: o->latency_file = arg; break;
	}
	return bad;
}

static const struct option lopts[] = {
	{ "bootstrap-server", required_argument, NULL, O_BOOTSTRAP },
	{ "topic", required_argument, NULL, O_TOPIC },
	{ "num-records", required_argument, NULL, O_NUM },
	{ "record-size", required_argument, NULL, O_SIZE },
	{ "acks", required_argument, NULL, O_ACKS },
	{ "linger-ms", required_argument, NULL, O_LINGER },
	{ "batch-size", required_argument, NULL, O_BATCH },
	{ "compression", required_argument, NULL, O_COMPRESSION },
	{ "throughput", required_argument, NULL, O_THROUGHPUT },
	{ "sync", no_argument, NULL, O_SYNC },
	{ "print-json", no_argument, NULL, O_JSON },
	{ "group", required_argument, NULL, O_GROUP },
	{ "timeout-ms", required_argument, NULL, O_TIMEOUT },
	{ "reporting-interval", required_argument, NULL, O_INTERVAL },
	{ "latency-file", required_argument, NULL, O_LATENCY_FILE },
	TOOL_LOPT_CLIENT,
	{ NULL, 0, NULL, 0 },
};

static int
check(void *o)
{
	return check_opts(o);
}

/* Fill o from the command line (the verb first); -1 to go on, else the
 * exit code. */
static int
parse_args(int argc, char **argv, struct opts *o)
{
	struct tool_cli cli = { lopts, perf_opt, check, usage, &o->client,
	    NULL };

	if (argc < 2 || (strcmp(argv[1], "producer") != 0 &&
	    strcmp(argv[1], "consumer") != 0)) {
		if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
		    strcmp(argv[1], "--help") == 0)) {
			usage(stdout);
			return TOOL_EXIT_OK;
		}
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	o->producer = strcmp(argv[1], "producer") == 0;
	optind = 2;
	return tool_parse_args(argc, argv, &cli, o);
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct sigaction sa;
	int rc;

	tool_init(argv[0]);
	if (argc >= 2 && (strcmp(argv[1], "raw-producer") == 0 ||
	    strcmp(argv[1], "raw-consumer") == 0))
		return perf_raw_main(argc, argv);
	memset(&o, 0, sizeof(o));
	o.record_size = 100;
	o.throughput = -1;
	o.interval_ms = 1000;
	o.timeout_ms = 10000;
	if ((rc = parse_args(argc, argv, &o)) >= 0)
		return rc;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	srandom((unsigned)time(NULL));
	rc = o.producer ? run_producer(&o) : run_consumer(&o);
	tool_props_free(&o.client);
	return rc;
}
