/*
 * What the Kafka-protocol tools share: messages on stderr, client
 * properties (-X, --command-config), librdkafka handles that fail fast
 * when nothing answers, waiting for admin results, and the cluster
 * metadata in one neutral shape whatever produced it.
 */
#ifndef RN_TOOL_COMMON_H
#define RN_TOOL_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <librdkafka/rdkafka.h>

/* Exit codes shared by every tool. */
#define TOOL_EXIT_OK 0
#define TOOL_EXIT_FAIL 1
#define TOOL_EXIT_USAGE 2

#define TOOL_DEFAULT_TIMEOUT_MS 30000

void tool_init(const char *prog);
const char *tool_prog(void);
/* "prog: message" on stderr. */
void tool_errx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tool_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Client properties in the order given; later ones win in librdkafka. */
struct tool_props {
	char **kv; /* "key=value" */
	int n, cap;
};
int tool_props_add(struct tool_props *p, const char *kv);
/* A Java-style properties file (key=value or key: value, # comments). */
int tool_props_load_file(struct tool_props *p, const char *path);
void tool_props_free(struct tool_props *p);

/* Checks "host:port[,host:port...]"; 0 or -1 after printing why. */
int tool_check_bootstrap(const char *bootstrap);

/*
 * A client for bootstrap with the given properties applied. librdkafka's
 * own log lines are kept back unless RUNNEL_TOOLS_DEBUG is set; the last
 * one is kept to explain a failure.
 */
rd_kafka_t *tool_client_new(rd_kafka_type_t type, const char *bootstrap,
    const struct tool_props *props, rd_kafka_conf_t *conf);
/* True once librdkafka said every broker is down (nothing listening). */
bool tool_all_brokers_down(void);
/* librdkafka's last log or error line, "" if none. */
const char *tool_last_client_error(void);

/* Kafka's name for an error code (librdkafka's differs for a few). */
const char *tool_err_name(rd_kafka_resp_err_t err);
/* A short description of our own for an error code. */
const char *tool_err_desc(rd_kafka_resp_err_t err);
/* "prog: what: description (ERROR_NAME): broker's message" */
void tool_report_err(const char *what, rd_kafka_resp_err_t err,
    const char *broker_msg);

/*
 * Wait on q for an event of type want, serving rk's error callbacks in
 * between; NULL after printing why on timeout or when no broker answers.
 */
rd_kafka_event_t *tool_admin_wait(rd_kafka_t *rk, rd_kafka_queue_t *q,
    rd_kafka_event_type_t want, int timeout_ms, const char *what);
rd_kafka_AdminOptions_t *tool_admin_options(rd_kafka_t *rk,
    rd_kafka_admin_op_t op, int timeout_ms);

/* Strict integer parse within [min, max]; 0 or -1. */
int tool_parse_long(const char *s, long min, long max, long *out);
/* The same for the value of option flag; -1 after saying why. */
int tool_opt_long(const char *flag, const char *s, long min,
    long max, long *out);

/*
 * Options every Kafka tool reads the same way, with codes above the
 * tools' own: -X key=value and --command-config FILE into the client
 * properties, --timeout-ms (where the tool takes it).
 */
#define TOOL_O_CMD_CONFIG 1000
#define TOOL_O_TIMEOUT 1001
#define TOOL_LOPT_CLIENT \
	{ "command-config", required_argument, NULL, TOOL_O_CMD_CONFIG }, \
	{ "help", no_argument, NULL, 'h' }
#define TOOL_LOPT_TIMEOUT \
	{ "timeout-ms", required_argument, NULL, TOOL_O_TIMEOUT }

/* A tool's command line. */
struct tool_cli {
	const struct option *lopts;     /* ends with TOOL_LOPT_CLIENT */
	/* one of the tool's own options into o: 0, or -1 after saying why
	 * its value is bad */
	int (*opt)(int ch, const char *arg, void *o);
	/* the options together, after the last: 0, or -1 after saying why */
	int (*check)(void *o);
	void (*usage)(FILE *f);
	struct tool_props *client;
	int *timeout_ms;                /* NULL: the tool reads it itself */
};

/*
 * getopt_long from optind over cli: -h prints the usage, the client
 * options go to cli->client, the others to cli->opt; then no argument may
 * be left over and cli->check must pass. -1 to go on, else the exit code.
 */
int tool_parse_args(int argc, char **argv, const struct tool_cli *cli,
    void *o);

/* Cluster metadata, whichever way it was fetched. */
struct tool_part {
	int32_t id;
	int16_t err;
	int32_t leader; /* -1: none */
	int32_t *replicas, *isr, *offline;
	int n_replicas, n_isr, n_offline;
};

struct tool_topic {
	char *name;
	char id[23]; /* "" when the broker did not say */
	bool internal;
	int16_t err;
	struct tool_part *parts; /* sorted by id */
	int n_parts;
};

struct tool_md {
	struct tool_topic *topics; /* sorted by name */
	int n_topics;
	int32_t *brokers;
	int n_brokers;
	int32_t controller;
	char *cluster_id;
	int version; /* Metadata version decoded by us, 0 via librdkafka */
};

/*
 * All topics' metadata. Asks the first bootstrap server directly with
 * Metadata v10-v12 (topic ids, offline replicas, internal flag) when it
 * speaks plain text and supports them, else uses rd_kafka_metadata().
 * 0, or -1 after printing why.
 */
int tool_md_fetch(rd_kafka_t *rk, const char *bootstrap,
    const struct tool_props *props, int timeout_ms, struct tool_md *md);
void tool_md_free(struct tool_md *md);
const struct tool_topic *tool_md_topic(const struct tool_md *md,
    const char *name);

/* Implemented in tool_kmeta.c: the direct Metadata v10+ request. */
int tool_kmeta_fetch(const char *bootstrap, int timeout_ms,
    struct tool_md *md, char *err, size_t errlen);

/*
 * Ask the first bootstrap server which requests it takes (ApiVersions v0,
 * plain text), so a request it cannot serve fails at once with a clear
 * message instead of at the timeout. Best effort: without an answer,
 * tool_api_unsupported() is always false.
 */
void tool_api_probe(const char *bootstrap, int timeout_ms);
bool tool_api_unsupported(int key);

/*
 * Whether our own plain-text requests may go to the bootstrap server (not
 * a TLS or SASL listener, not a broker older than ApiVersions).
 */
bool tool_plaintext_only(const struct tool_props *props);

/* 0, or -1 after saying the broker cannot serve request (a name). */
int tool_require_api(const char *bootstrap, const struct tool_props *props,
    int key, const char *request, const char *what, int timeout_ms);

#define TOOL_API_CREATE_TOPICS 19
#define TOOL_API_DELETE_TOPICS 20
#define TOOL_API_DESCRIBE_CONFIGS 32
#define TOOL_API_ALTER_CONFIGS 33
#define TOOL_API_CREATE_PARTITIONS 37

#endif /* RN_TOOL_COMMON_H */
