#include "autoconf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/kconfig_catalogue.h"
#include "common/util.h"

const char rn_config_embedded_default[] =
    "# runnel single-node defaults (broker and controller in one process tree)\n"
    "node.id=1\n"
    "process.roles=broker,controller\n"
    "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
    "advertised.listeners=PLAINTEXT://127.0.0.1:9092\n"
    "controller.listener.names=CONTROLLER\n"
    "controller.quorum.voters=1@127.0.0.1:9093\n"
    "log.dirs=/tmp/runnel-logs\n"
    "num.network.threads=3\n"
    "num.replica.fetchers=1\n"
    "# one node: __consumer_offsets with one replica, no join delay\n"
    "offsets.topic.replication.factor=1\n"
    "transaction.state.log.replication.factor=1\n"
    "transaction.state.log.min.isr=1\n"
    "group.initial.rebalance.delay.ms=0\n";

enum cfg_type { T_INT, T_LONG, T_BOOL, T_STR, T_FN };

struct cfg_key;
typedef int (*cfg_fn)(struct rn_config *, const char *value, char *why,
    size_t whylen);

struct cfg_key {
	const char *name;
	enum cfg_type type;
	size_t off;
	size_t size; /* T_STR: buffer size */
	int64_t min, max;
	cfg_fn fn;
};

#define F(field) offsetof(struct rn_config, field)
#define SZ(field) sizeof(((struct rn_config *)0)->field)

static int parse_roles(struct rn_config *, const char *, char *, size_t);
static int parse_listeners(struct rn_config *, const char *, char *, size_t);
static int parse_advertised(struct rn_config *, const char *, char *, size_t);
static int parse_ctl_names(struct rn_config *, const char *, char *, size_t);
static int parse_voters(struct rn_config *, const char *, char *, size_t);
static int parse_log_dirs(struct rn_config *, const char *, char *, size_t);
static int parse_ret_hours(struct rn_config *, const char *, char *, size_t);
static int parse_ret_minutes(struct rn_config *, const char *, char *, size_t);
static int parse_roll_hours(struct rn_config *, const char *, char *, size_t);
static int parse_sec_map(struct rn_config *, const char *, char *, size_t);

static const struct cfg_key cfg_keys[] = {
	{ "node.id", T_INT, F(node_id), 0, 0, INT32_MAX, NULL },
	{ "broker.id", T_INT, F(node_id), 0, 0, INT32_MAX, NULL },
	{ "process.roles", T_FN, 0, 0, 0, 0, parse_roles },
	{ "listeners", T_FN, 0, 0, 0, 0, parse_listeners },
	{ "advertised.listeners", T_FN, 0, 0, 0, 0, parse_advertised },
	{ "controller.listener.names", T_FN, 0, 0, 0, 0, parse_ctl_names },
	{ "controller.quorum.voters", T_FN, 0, 0, 0, 0, parse_voters },
	{ "inter.broker.listener.name", T_STR, F(inter_broker_listener_name),
	    SZ(inter_broker_listener_name), 0, 0, NULL },
	{ "listener.security.protocol.map", T_FN, 0, 0, 0, 0, parse_sec_map },
	{ "log.dirs", T_FN, 0, 0, 0, 0, parse_log_dirs },
	{ "log.dir", T_FN, 0, 0, 0, 0, parse_log_dirs },
	{ "metadata.log.dir", T_STR, F(metadata_log_dir),
	    SZ(metadata_log_dir), 0, 0, NULL },
	{ "broker.rack", T_STR, F(broker_rack), SZ(broker_rack), 0, 0, NULL },
	{ "num.network.threads", T_INT, F(num_network_threads), 0, 1, 64,
	    NULL },
	{ "num.replica.fetchers", T_INT, F(num_replica_fetchers), 0, 1, 64,
	    NULL },
	{ "max.incremental.fetch.session.cache.slots", T_INT,
	    F(fetch_session_slots), 0, 0, INT32_MAX, NULL },
	{ "socket.request.max.bytes", T_LONG, F(socket_request_max_bytes), 0,
	    1024, INT32_MAX, NULL },
	{ "message.max.bytes", T_LONG, F(message_max_bytes), 0, 0, INT32_MAX,
	    NULL },
	{ "num.partitions", T_INT, F(num_partitions), 0, 1, 1000000, NULL },
	{ "default.replication.factor", T_INT, F(default_replication_factor),
	    0, 1, 32767, NULL },
	{ "min.insync.replicas", T_INT, F(min_insync_replicas), 0, 1, 32767,
	    NULL },
	{ "auto.create.topics.enable", T_BOOL, F(auto_create_topics_enable), 0,
	    0, 0, NULL },
	{ "unclean.leader.election.enable", T_BOOL,
	    F(unclean_leader_election_enable), 0, 0, 0, NULL },
	{ "auto.leader.rebalance.enable", T_BOOL,
	    F(auto_leader_rebalance_enable), 0, 0, 0, NULL },
	{ "leader.imbalance.check.interval.seconds", T_LONG,
	    F(leader_imbalance_check_interval_s), 0, 1, INT32_MAX, NULL },
	{ "leader.imbalance.per.broker.percentage", T_INT,
	    F(leader_imbalance_per_broker_pct), 0, 0, INT32_MAX, NULL },
	{ "log.segment.bytes", T_LONG, F(log_segment_bytes), 0, 14,
	    INT32_MAX, NULL },
	{ "log.roll.ms", T_LONG, F(log_roll_ms), 0, 1, INT64_MAX, NULL },
	{ "log.roll.hours", T_FN, 0, 0, 0, 0, parse_roll_hours },
	{ "log.retention.ms", T_LONG, F(log_retention_ms), 0, -1, INT64_MAX,
	    NULL },
	{ "log.retention.minutes", T_FN, 0, 0, 0, 0, parse_ret_minutes },
	{ "log.retention.hours", T_FN, 0, 0, 0, 0, parse_ret_hours },
	{ "log.retention.bytes", T_LONG, F(log_retention_bytes), 0, -1,
	    INT64_MAX, NULL },
	{ "log.retention.check.interval.ms", T_LONG,
	    F(log_retention_check_interval_ms), 0, 1, INT64_MAX, NULL },
	{ "log.flush.interval.messages", T_LONG,
	    F(log_flush_interval_messages), 0, 1, INT64_MAX, NULL },
	{ "log.flush.interval.ms", T_LONG, F(log_flush_interval_ms), 0, 0,
	    INT64_MAX, NULL },
	{ "log.flush.offset.checkpoint.interval.ms", T_LONG,
	    F(log_flush_offset_checkpoint_interval_ms), 0, 0, INT32_MAX,
	    NULL },
	{ "replica.lag.time.max.ms", T_LONG, F(replica_lag_time_max_ms), 0, 1,
	    INT64_MAX, NULL },
	{ "broker.heartbeat.interval.ms", T_LONG,
	    F(broker_heartbeat_interval_ms), 0, 1, INT32_MAX, NULL },
	{ "broker.session.timeout.ms", T_LONG, F(broker_session_timeout_ms), 0,
	    1, INT32_MAX, NULL },
	{ "log.dir.failure.timeout.ms", T_LONG,
	    F(log_dir_failure_timeout_ms), 0, 1, INT32_MAX, NULL },
	{ "authorizer.class.name", T_STR, F(authorizer_class_name),
	    SZ(authorizer_class_name), 0, 0, NULL },
	{ "super.users", T_STR, F(super_users), SZ(super_users), 0, 0, NULL },
	{ "allow.everyone.if.no.acl.found", T_BOOL,
	    F(allow_everyone_if_no_acl_found), 0, 0, 0, NULL },

	{ "control.socket.path", T_STR, F(control_socket_path),
	    SZ(control_socket_path), 0, 0, NULL },
	{ "supervisor.user", T_STR, F(supervisor_user), SZ(supervisor_user),
	    0, 0, NULL },
	{ "worker.restart.backoff.initial.ms", T_LONG,
	    F(restart_backoff_initial_ms), 0, 0, 3600000, NULL },
	{ "worker.restart.backoff.max.ms", T_LONG, F(restart_backoff_max_ms),
	    0, 0, 3600000, NULL },
	{ "worker.restart.max.failures", T_INT, F(restart_max_failures), 0, 1,
	    1000000, NULL },
	{ "worker.restart.failure.window.ms", T_LONG,
	    F(restart_failure_window_ms), 0, 1, INT32_MAX, NULL },
	{ "worker.heartbeat.timeout.ms", T_LONG,
	    F(worker_heartbeat_timeout_ms), 0, 100, INT32_MAX, NULL },
	{ "shutdown.timeout.ms", T_LONG, F(shutdown_timeout_ms), 0, 100,
	    INT32_MAX, NULL },
	{ "shm.max.partitions", T_INT, F(shm_max_partitions), 0, 1, 1 << 24,
	    NULL },
	{ "shm.max.producers", T_INT, F(shm_max_producers), 0, 0, 1 << 24,
	    NULL },
	{ "enable.under.replicated.topic.creation", T_BOOL,
	    F(under_replicated_creation), 0, 0, 0, NULL },
	{ "shm.ring.bytes", T_LONG, F(shm_ring_bytes), 0, 262144, 1 << 30,
	    NULL },
	{ "log.verbose", T_BOOL, F(log_verbose), 0, 0, 0, NULL },
	/* runnel's own: the Prometheus endpoint (off when unset) */
	{ "metrics.listener", T_STR, F(metrics_listener),
	    SZ(metrics_listener), 0, 0, NULL },
	{ "fault.worker.exit.on.start", T_STR, F(fault_worker_exit_on_start),
	    SZ(fault_worker_exit_on_start), 0, 0, NULL },
};

static void
config_defaults(struct rn_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->node_id = -1;
	cfg->num_network_threads = 3;
	cfg->fetch_session_slots = 1000;
	cfg->num_replica_fetchers = 1;
	cfg->log_cleaner_workers = 1;
	cfg->socket_request_max_bytes = 104857600;
	cfg->message_max_bytes = 1048588;
	cfg->num_partitions = 1;
	cfg->default_replication_factor = 1;
	cfg->min_insync_replicas = 1;
	cfg->auto_create_topics_enable = true;
	cfg->auto_leader_rebalance_enable = true;
	cfg->leader_imbalance_check_interval_s = 300;
	cfg->leader_imbalance_per_broker_pct = 10;
	cfg->log_segment_bytes = 1073741824;
	cfg->log_roll_ms = -2; /* unset: log.roll.hours decides */
	cfg->log_retention_ms = -2;
	cfg->log_retention_bytes = -1;
	cfg->log_retention_check_interval_ms = 300000;
	cfg->log_flush_interval_messages = INT64_MAX;
	cfg->log_flush_interval_ms = -1;
	/* Kafka's: the recovery points checkpointed every minute */
	cfg->log_flush_offset_checkpoint_interval_ms = 60000;
	cfg->replica_lag_time_max_ms = 30000;
	cfg->broker_heartbeat_interval_ms = 2000;
	cfg->broker_session_timeout_ms = 9000;
	cfg->log_dir_failure_timeout_ms = 30000;
	strlcpy(cfg->control_socket_path, "/run/runnel/runneld.sock",
	    sizeof(cfg->control_socket_path));
	cfg->restart_backoff_initial_ms = 100;
	cfg->restart_backoff_max_ms = 10000;
	cfg->restart_max_failures = 5;
	cfg->restart_failure_window_ms = 60000;
	cfg->worker_heartbeat_timeout_ms = 10000;
	cfg->shutdown_timeout_ms = 10000;
	/*
	 * Address space only (9.1 GiB of it with the image and metrics
	 * regions): a slot costs memory once a replica uses it, so the
	 * partitions a node holds are bounded by memory and descriptors.
	 */
	cfg->shm_max_partitions = 1 << 20;
	/* 16 MiB of address space, backed as used: 1,000 producers on each
	 * of 134 partitions beyond the 24 a slot keeps itself */
	cfg->shm_max_producers = 1 << 17;
	cfg->shm_ring_bytes = 1 << 20;
	cfg->retention_hours = 168;
	cfg->retention_minutes = -1;
	cfg->roll_hours = 168;
}

static int
parse_int64(const char *v, int64_t min, int64_t max, int64_t *out,
    char *why, size_t whylen)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (*v == '\0' || *end != '\0' || errno == ERANGE) {
		snprintf(why, whylen, "not an integer");
		return -1;
	}
	if (n < min || n > max) {
		snprintf(why, whylen, "out of range [%lld, %lld]",
		    (long long)min, (long long)max);
		return -1;
	}
	*out = n;
	return 0;
}

/*
 * Copy a comma list into buf and split it there; an empty item or a value
 * longer than buf is an error.
 */
static int
split_list(const char *v, char *buf, size_t bufsize, char **items, int max,
    char *why, size_t whylen)
{
	int n = 0;
	char *p, *s = buf;

	if (strlcpy(buf, v, bufsize) >= bufsize) {
		snprintf(why, whylen, "value too long");
		return -1;
	}
	if (*rn_trim(s) == '\0')
		return 0;
	while ((p = strsep(&s, ",")) != NULL) {
		p = rn_trim(p);
		if (*p == '\0') {
			snprintf(why, whylen, "empty list element");
			return -1;
		}
		if (n == max) {
			snprintf(why, whylen, "more than %d elements", max);
			return -1;
		}
		items[n++] = p;
	}
	return n;
}

static int
parse_hostport(char *hp, char *host, size_t hostlen, uint16_t *port,
    char *why, size_t whylen)
{
	char *colon;
	int64_t p;

	/* [v6addr]:port or host:port; an empty host binds all addresses */
	if (hp[0] == '[') {
		char *rb = strchr(hp, ']');
		if (rb == NULL || rb[1] != ':') {
			snprintf(why, whylen, "bad address '%s'", hp);
			return -1;
		}
		*rb = '\0';
		colon = rb + 1;
		hp++;
	} else if ((colon = strrchr(hp, ':')) == NULL) {
		snprintf(why, whylen, "missing port in '%s'", hp);
		return -1;
	}
	*colon = '\0';
	if (parse_int64(colon + 1, 0, 65535, &p, why, whylen) == -1) {
		snprintf(why, whylen, "bad port '%s'", colon + 1);
		return -1;
	}
	if (strlcpy(host, hp, hostlen) >= hostlen) {
		snprintf(why, whylen, "host name too long");
		return -1;
	}
	*port = (uint16_t)p;
	return 0;
}

static int
parse_listener_list(const char *value, struct rn_listener *out, int *n,
    char *why, size_t whylen)
{
	char buf[4096], *items[RN_CONFIG_MAX_LISTENERS];
	int i, j, count;

	if ((count = split_list(value, buf, sizeof(buf), items,
	    RN_CONFIG_MAX_LISTENERS, why, whylen)) < 0)
		return -1;
	for (i = 0; i < count; i++) {
		char *sep = strstr(items[i], "://");
		if (sep == NULL || sep == items[i]) {
			snprintf(why, whylen,
			    "listener '%s' is not NAME://host:port", items[i]);
			return -1;
		}
		*sep = '\0';
		if (strlcpy(out[i].name, items[i], sizeof(out[i].name)) >=
		    sizeof(out[i].name)) {
			snprintf(why, whylen, "listener name too long");
			return -1;
		}
		for (char *c = out[i].name; *c; c++)
			*c = (char)toupper((unsigned char)*c);
		if (parse_hostport(sep + 3, out[i].host, sizeof(out[i].host),
		    &out[i].port, why, whylen) == -1)
			return -1;
		for (j = 0; j < i; j++)
			if (strcmp(out[j].name, out[i].name) == 0) {
				snprintf(why, whylen,
				    "listener name %s appears twice",
				    out[i].name);
				return -1;
			}
	}
	*n = count;
	return 0;
}

static int
parse_listeners(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	return parse_listener_list(v, cfg->listeners, &cfg->n_listeners, why,
	    wl);
}

static int
parse_advertised(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	return parse_listener_list(v, cfg->advertised, &cfg->n_advertised, why,
	    wl);
}

static int
parse_roles(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	char buf[256], *items[4];
	int i, n;

	if ((n = split_list(v, buf, sizeof(buf), items, 4,
	    why, wl)) < 0)
		return -1;
	cfg->roles = 0;
	for (i = 0; i < n; i++) {
		if (strcmp(items[i], "broker") == 0)
			cfg->roles |= RN_ROLE_BROKER;
		else if (strcmp(items[i], "controller") == 0)
			cfg->roles |= RN_ROLE_CONTROLLER;
		else {
			snprintf(why, wl,
			    "unknown role '%s' (broker, controller)", items[i]);
			return -1;
		}
	}
	if (cfg->roles == 0) {
		snprintf(why, wl, "no role given");
		return -1;
	}
	return 0;
}

static int
parse_ctl_names(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	char buf[1024], *items[RN_CONFIG_MAX_LISTENERS];
	int i, n;

	if ((n = split_list(v, buf, sizeof(buf), items, RN_CONFIG_MAX_LISTENERS,
	    why, wl)) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		char *d = cfg->controller_listener_names[i];
		if (strlcpy(d, items[i], RN_CONFIG_NAME_MAX) >=
		    RN_CONFIG_NAME_MAX) {
			snprintf(why, wl, "listener name too long");
			return -1;
		}
		for (; *d; d++)
			*d = (char)toupper((unsigned char)*d);
	}
	cfg->n_controller_listener_names = n;
	return 0;
}

static int
parse_voters(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	char buf[4096], *items[RN_CONFIG_MAX_VOTERS];
	int i, j, n;

	if ((n = split_list(v, buf, sizeof(buf), items, RN_CONFIG_MAX_VOTERS,
	    why, wl)) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		char *at = strchr(items[i], '@');
		int64_t id;

		if (at == NULL) {
			snprintf(why, wl, "voter '%s' is not id@host:port",
			    items[i]);
			return -1;
		}
		*at = '\0';
		if (parse_int64(items[i], 0, INT32_MAX, &id, why, wl) == -1) {
			snprintf(why, wl, "bad voter id '%s'", items[i]);
			return -1;
		}
		cfg->voters[i].id = (int32_t)id;
		if (parse_hostport(at + 1, cfg->voters[i].host,
		    sizeof(cfg->voters[i].host), &cfg->voters[i].port, why,
		    wl) == -1)
			return -1;
		for (j = 0; j < i; j++)
			if (cfg->voters[j].id == cfg->voters[i].id) {
				snprintf(why, wl, "voter id %d appears twice",
				    cfg->voters[i].id);
				return -1;
			}
	}
	cfg->n_voters = n;
	return 0;
}

static int
parse_log_dirs(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	char buf[8192], *items[RN_CONFIG_MAX_LOGDIRS];
	int i, j, n;

	if ((n = split_list(v, buf, sizeof(buf), items, RN_CONFIG_MAX_LOGDIRS,
	    why, wl)) < 0)
		return -1;
	if (n == 0) {
		snprintf(why, wl, "no directory given");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (items[i][0] != '/') {
			snprintf(why, wl, "'%s' is not an absolute path",
			    items[i]);
			return -1;
		}
		if (strlcpy(cfg->log_dirs[i], items[i],
		    sizeof(cfg->log_dirs[i])) >= sizeof(cfg->log_dirs[i])) {
			snprintf(why, wl, "path too long");
			return -1;
		}
		for (j = 0; j < i; j++)
			if (strcmp(cfg->log_dirs[j], cfg->log_dirs[i]) == 0) {
				snprintf(why, wl, "'%s' appears twice",
				    items[i]);
				return -1;
			}
	}
	cfg->n_log_dirs = n;
	return 0;
}

static int
parse_ret_hours(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	return parse_int64(v, -1, INT32_MAX, &cfg->retention_hours, why, wl);
}

static int
parse_ret_minutes(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	return parse_int64(v, -1, INT32_MAX, &cfg->retention_minutes, why, wl);
}

static int
parse_roll_hours(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	return parse_int64(v, 1, INT32_MAX, &cfg->roll_hours, why, wl);
}

static const char *const secproto_names[] = {
	[RN_SEC_PLAINTEXT] = "PLAINTEXT", [RN_SEC_SSL] = "SSL",
	[RN_SEC_SASL_PLAINTEXT] = "SASL_PLAINTEXT",
	[RN_SEC_SASL_SSL] = "SASL_SSL",
};

const char *
rn_secproto_name(enum rn_secproto p)
{
	return (unsigned)p < 4 ? secproto_names[p] : "?";
}

int
rn_secproto_parse(const char *name)
{
	int i;

	for (i = 0; i < 4; i++)
		if (strcasecmp(name, secproto_names[i]) == 0)
			return i;
	return -1;
}

/* NAME:PROTOCOL pairs; which listener may use which is checked later. */
static int
parse_sec_map(struct rn_config *cfg, const char *v, char *why, size_t wl)
{
	char buf[2048], *items[2 * RN_CONFIG_MAX_LISTENERS];
	int i, n, p;

	if ((n = split_list(v, buf, sizeof(buf), items,
	    2 * RN_CONFIG_MAX_LISTENERS, why, wl)) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		struct rn_secmap *m = &cfg->sec_map[i];
		char *c = strchr(items[i], ':');

		if (c == NULL || c == items[i]) {
			snprintf(why, wl, "'%s' is not NAME:PROTOCOL",
			    items[i]);
			return -1;
		}
		*c = '\0';
		if ((p = rn_secproto_parse(c + 1)) < 0) {
			snprintf(why, wl, "unknown security protocol %s "
			    "(PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)",
			    c + 1);
			return -1;
		}
		if (strlcpy(m->name, items[i], sizeof(m->name)) >=
		    sizeof(m->name)) {
			snprintf(why, wl, "listener name too long");
			return -1;
		}
		for (char *d = m->name; *d; d++)
			*d = (char)toupper((unsigned char)*d);
		m->proto = (enum rn_secproto)p;
	}
	cfg->n_sec_map = n;
	return 0;
}

static const struct cfg_key *
find_key(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(cfg_keys) / sizeof(cfg_keys[0]); i++)
		if (strcmp(cfg_keys[i].name, name) == 0)
			return &cfg_keys[i];
	return NULL;
}

/* Keep a Kafka key's text for DescribeConfigs; the last setting wins. */
static int
keep_kafka_key(struct rn_config *cfg, const char *key, const char *value)
{
	struct rn_config_kv *kv;
	char *v;
	int i;

	if ((v = strdup(value)) == NULL)
		return -1;
	for (i = 0; i < cfg->n_kafka_keys; i++)
		if (strcmp(cfg->kafka_keys[i].key, key) == 0) {
			free(cfg->kafka_keys[i].value);
			cfg->kafka_keys[i].value = v;
			return 0;
		}
	if (cfg->n_kafka_keys == cfg->cap_kafka_keys) {
		int cap = cfg->cap_kafka_keys ? cfg->cap_kafka_keys * 2 : 16;

		if ((kv = realloc(cfg->kafka_keys, sizeof(*kv) *
		    (size_t)cap)) == NULL) {
			free(v);
			return -1;
		}
		cfg->kafka_keys = kv;
		cfg->cap_kafka_keys = cap;
	}
	kv = &cfg->kafka_keys[cfg->n_kafka_keys];
	if ((kv->key = strdup(key)) == NULL) {
		free(v);
		return -1;
	}
	kv->value = v;
	cfg->n_kafka_keys++;
	return 0;
}

void
rn_config_free(struct rn_config *cfg)
{
	int i;

	for (i = 0; i < cfg->n_kafka_keys; i++) {
		free(cfg->kafka_keys[i].key);
		free(cfg->kafka_keys[i].value);
	}
	free(cfg->kafka_keys);
	cfg->kafka_keys = NULL;
	cfg->n_kafka_keys = cfg->cap_kafka_keys = 0;
}

void
rn_config_forget_secrets(struct rn_config *cfg)
{
	const struct rn_kcfg *k;
	int i;

	for (i = 0; i < cfg->n_kafka_keys; i++) {
		char *key = cfg->kafka_keys[i].key, *v = cfg->kafka_keys[i].value;

		if (((k = rn_kcfg_broker_find(key)) != NULL ||
		    (k = rn_kcfg_listener_find(key)) != NULL) &&
		    rn_kcfg_sensitive(k))
			explicit_bzero(v, strlen(v));
	}
}

const char *
rn_config_static(const struct rn_config *cfg, const char *key)
{
	int i;

	for (i = 0; cfg != NULL && i < cfg->n_kafka_keys; i++)
		if (strcmp(cfg->kafka_keys[i].key, key) == 0)
			return cfg->kafka_keys[i].value;
	return NULL;
}

/*
 * A key only Kafka's catalogue knows: checked by its type and range and
 * kept, so a Kafka server.properties works unchanged. 1 if the catalogue
 * knows it, 0 if not, -1 on a bad value (why set).
 */
static int
apply_kafka_key(struct rn_config *cfg, const char *key, const char *value,
    char *why, size_t whylen)
{
	const struct rn_kcfg *k = rn_kcfg_broker_find(key);
	char err[512];

	if (k == NULL && (k = rn_kcfg_listener_find(key)) == NULL)
		return 0;
	if (rn_kcfg_validate(k, value, err, sizeof(err)) != 0) {
		const char *c = strstr(err, ": ");

		strlcpy(why, c != NULL ? c + 2 : err, whylen);
		return -1;
	}
	if (keep_kafka_key(cfg, key, value) != 0) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	return 1;
}

static int
apply(struct rn_config *cfg, const char *key, const char *value,
    const char *origin, int line, char *err, size_t errlen,
    rn_config_warn_fn warn, void *arg)
{
	const struct cfg_key *k = find_key(key);
	char why[256] = "";
	char *base = (char *)cfg;
	int64_t n;
	int rc = 0;

	if (k == NULL) {
		if ((rc = apply_kafka_key(cfg, key, value, why,
		    sizeof(why))) == 1)
			return 0;
		if (rc == -1) {
			snprintf(err, errlen, "%s:%d: invalid value '%s' for %s: "
			    "%s", origin, line, value, key, why);
			return -1;
		}
		if (warn != NULL) {
			char msg[512];
			snprintf(msg, sizeof(msg),
			    "%s:%d: unknown configuration key '%s' ignored",
			    origin, line, key);
			warn(arg, msg);
		}
		return 0;
	}
	switch (k->type) {
	case T_INT:
		if ((rc = parse_int64(value, k->min, k->max, &n, why,
		    sizeof(why))) == 0)
			*(int *)(base + k->off) = (int)n;
		break;
	case T_LONG:
		if ((rc = parse_int64(value, k->min, k->max, &n, why,
		    sizeof(why))) == 0)
			*(int64_t *)(base + k->off) = n;
		break;
	case T_BOOL:
		if (strcasecmp(value, "true") == 0)
			*(bool *)(base + k->off) = true;
		else if (strcasecmp(value, "false") == 0)
			*(bool *)(base + k->off) = false;
		else {
			snprintf(why, sizeof(why), "not true or false");
			rc = -1;
		}
		break;
	case T_STR:
		if (strlcpy(base + k->off, value, k->size) >= k->size) {
			snprintf(why, sizeof(why), "longer than %zu bytes",
			    k->size - 1);
			rc = -1;
		}
		break;
	case T_FN:
		rc = k->fn(cfg, value, why, sizeof(why));
		break;
	}
	if (rc == -1)
		snprintf(err, errlen, "%s:%d: invalid value '%s' for %s: %s",
		    origin, line, value, key, why);
	else if (rn_kcfg_broker_find(key) != NULL &&
	    keep_kafka_key(cfg, key, value) != 0) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	}
	return rc;
}

/* Java properties escapes: \t \n \r \f \\ and \<any> -> <any>. */
static void
unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (*s != '\\' || s[1] == '\0') {
			*d++ = *s;
			continue;
		}
		s++;
		switch (*s) {
		case 't': *d++ = '\t'; break;
		case 'n': *d++ = '\n'; break;
		case 'r': *d++ = '\r'; break;
		case 'f': *d++ = '\f'; break;
		default: *d++ = *s; break;
		}
	}
	*d = '\0';
}

static int
parse_text(struct rn_config *cfg, const char *text, const char *origin,
    char *err, size_t errlen, rn_config_warn_fn warn, void *arg)
{
	char *copy, *cur, *line;
	char *logical = NULL;
	size_t loglen = 0;
	int lineno = 0, startline = 0, rc = 0;

	if ((copy = strdup(text)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	cur = copy;
	while (rc == 0 && (line = strsep(&cur, "\n")) != NULL) {
		size_t len;
		int cont;
		char *t;

		lineno++;
		t = rn_trim(line);
		if (logical == NULL && (*t == '#' || *t == '!' || *t == '\0'))
			continue;
		len = strlen(t);
		/* an odd number of trailing backslashes continues the line */
		cont = 0;
		for (size_t i = len; i > 0 && t[i - 1] == '\\'; i--)
			cont = !cont;
		if (cont)
			t[--len] = '\0';
		if (logical == NULL)
			startline = lineno;
		char *grown = realloc(logical, loglen + len + 1);
		if (grown == NULL) {
			snprintf(err, errlen, "out of memory");
			rc = -1;
			break;
		}
		logical = grown;
		memcpy(logical + loglen, t, len + 1);
		loglen += len;
		if (cont && cur != NULL)
			continue;

		/* key ends at the first unescaped '=', ':' or blank */
		char *p = logical, *key, *value;
		while (*p && *p != '=' && *p != ':' && !isspace((unsigned char)*p)) {
			if (*p == '\\' && p[1])
				p++;
			p++;
		}
		key = logical;
		value = p;
		if (*p) {
			char term = *p;

			*p++ = '\0';
			if (isspace((unsigned char)term)) {
				while (isspace((unsigned char)*p))
					p++;
				if (*p == '=' || *p == ':')
					p++;
			}
			value = rn_trim(p);
		}
		unescape(key);
		unescape(value);
		rc = apply(cfg, key, value, origin, startline, err, errlen,
		    warn, arg);
		free(logical);
		logical = NULL;
		loglen = 0;
	}
	free(logical);
	free(copy);
	return rc;
}

int
rn_config_parse(struct rn_config *cfg, const char *text, const char *origin,
    char *err, size_t errlen, rn_config_warn_fn warn, void *arg)
{
	config_defaults(cfg);
	return parse_text(cfg, text, origin, err, errlen, warn, arg);
}

int
rn_config_override(struct rn_config *cfg, const char *kv, char *err,
    size_t errlen)
{
	char buf[8192], *eq;

	if (strlcpy(buf, kv, sizeof(buf)) >= sizeof(buf)) {
		snprintf(err, errlen, "override too long");
		return -1;
	}
	if ((eq = strchr(buf, '=')) == NULL) {
		snprintf(err, errlen, "override '%s' is not key=value", kv);
		return -1;
	}
	*eq = '\0';
	if (find_key(rn_trim(buf)) == NULL &&
	    rn_kcfg_broker_find(rn_trim(buf)) == NULL &&
	    rn_kcfg_listener_find(rn_trim(buf)) == NULL) {
		snprintf(err, errlen, "override: unknown configuration key '%s'",
		    rn_trim(buf));
		return -1;
	}
	return apply(cfg, rn_trim(buf), rn_trim(eq + 1), "--override", 0, err,
	    errlen, NULL, NULL);
}

int
rn_config_load(struct rn_config *cfg, const char *path, char *err,
    size_t errlen, rn_config_warn_fn warn, void *arg)
{
	char *text;
	struct stat st;
	ssize_t n;
	int fd, rc;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || st.st_size > 16 * 1024 * 1024) {
		snprintf(err, errlen, "%s: not a readable file under 16 MiB",
		    path);
		close(fd);
		return -1;
	}
	if ((text = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	n = read(fd, text, (size_t)st.st_size);
	close(fd);
	if (n != st.st_size) {
		snprintf(err, errlen, "%s: short read", path);
		free(text);
		return -1;
	}
	text[n] = '\0';
	if (memchr(text, '\0', (size_t)n) != NULL) {
		snprintf(err, errlen, "%s: contains a NUL byte", path);
		free(text);
		return -1;
	}
	rc = rn_config_parse(cfg, text, path, err, errlen, warn, arg);
	free(text);
	return rc;
}

const struct rn_listener *
rn_config_listener(const struct rn_config *cfg, const char *name)
{
	int i;

	for (i = 0; i < cfg->n_listeners; i++)
		if (strcmp(cfg->listeners[i].name, name) == 0)
			return &cfg->listeners[i];
	return NULL;
}

bool
rn_config_is_controller_listener(const struct rn_config *cfg,
    const char *name)
{
	int i;

	for (i = 0; i < cfg->n_controller_listener_names; i++)
		if (strcmp(cfg->controller_listener_names[i], name) == 0)
			return true;
	return false;
}

const char *
rn_config_roles_str(unsigned roles)
{
	switch (roles & (RN_ROLE_BROKER | RN_ROLE_CONTROLLER)) {
	case RN_ROLE_BROKER: return "broker";
	case RN_ROLE_CONTROLLER: return "controller";
	case RN_ROLE_BROKER | RN_ROLE_CONTROLLER: return "broker,controller";
	default: return "none";
	}
}

/* One log cleaner on a broker, unless log.cleaner.enable or .threads say none. */
static void
config_cleaner(struct rn_config *cfg)
{
	const char *en = rn_config_static(cfg, "log.cleaner.enable");
	const char *th = rn_config_static(cfg, "log.cleaner.threads");

	cfg->log_cleaner_workers = (cfg->roles & RN_ROLE_BROKER) &&
	    (en == NULL || strcasecmp(en, "false") != 0) &&
	    (th == NULL || strcmp(th, "0") != 0) ? 1 : 0;
}

/* The keys without a default; 0, or -1 naming the first one missing. */
static int
check_required(const struct rn_config *cfg, char *err, size_t errlen)
{
	const char *missing = NULL;

	if (cfg->node_id < 0)
		missing = "node.id";
	else if (cfg->roles == 0)
		missing = "process.roles";
	else if (cfg->n_listeners == 0)
		missing = "listeners";
	else if (cfg->n_controller_listener_names == 0)
		missing = "controller.listener.names";
	else if (cfg->n_voters == 0)
		missing = "controller.quorum.voters";
	else if (cfg->n_log_dirs == 0)
		missing = "log.dirs";
	if (missing == NULL)
		return 0;
	snprintf(err, errlen, "required key %s is missing", missing);
	return -1;
}

/* A controller is a voter and has its listener. */
static int
check_controller(const struct rn_config *cfg, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < cfg->n_voters; i++)
		if (cfg->voters[i].id == cfg->node_id)
			break;
	if (i == cfg->n_voters) {
		snprintf(err, errlen,
		    "invalid value for controller.quorum.voters: "
		    "node.id %d has the controller role but is not a "
		    "voter", cfg->node_id);
		return -1;
	}
	if (rn_config_listener(cfg, cfg->controller_listener_names[0]) ==
	    NULL) {
		snprintf(err, errlen,
		    "invalid value '%s' for controller.listener.names: "
		    "no such entry in listeners",
		    cfg->controller_listener_names[0]);
		return -1;
	}
	return 0;
}

/*
 * A broker needs a listener that is not a controller listener; a node
 * without the broker role has none but controller listeners. Then the
 * advertised listeners (by default the broker ones) must be listeners.
 */
static int
check_listeners(struct rn_config *cfg, char *err, size_t errlen)
{
	bool broker = (cfg->roles & RN_ROLE_BROKER) != 0, found = false;
	int i;

	for (i = 0; i < cfg->n_listeners; i++) {
		if (rn_config_is_controller_listener(cfg,
		    cfg->listeners[i].name))
			continue;
		found = true;
		if (!broker) {
			snprintf(err, errlen,
			    "invalid value for listeners: %s is not a "
			    "controller listener and process.roles has "
			    "no broker", cfg->listeners[i].name);
			return -1;
		}
	}
	if (broker && !found) {
		snprintf(err, errlen,
		    "invalid value for listeners: the broker role "
		    "needs a listener that is not a controller "
		    "listener");
		return -1;
	}
	/* advertised.listeners defaults to the non-controller listeners */
	if (cfg->n_advertised == 0) {
		for (i = 0; i < cfg->n_listeners; i++)
			if (!rn_config_is_controller_listener(cfg,
			    cfg->listeners[i].name))
				cfg->advertised[cfg->n_advertised++] =
				    cfg->listeners[i];
	}
	for (i = 0; i < cfg->n_advertised; i++) {
		if (rn_config_listener(cfg, cfg->advertised[i].name) == NULL) {
			snprintf(err, errlen,
			    "invalid value for advertised.listeners: %s is not "
			    "in listeners", cfg->advertised[i].name);
			return -1;
		}
	}
	return 0;
}

enum rn_secproto
rn_config_listener_proto(const struct rn_config *cfg, const char *name)
{
	const struct rn_listener *l = rn_config_listener(cfg, name);
	int j, p;

	if (l != NULL)
		return l->proto;
	for (j = 0; j < cfg->n_sec_map; j++)
		if (strcmp(cfg->sec_map[j].name, name) == 0)
			return cfg->sec_map[j].proto;
	p = cfg->n_sec_map == 0 ? rn_secproto_parse(name) : -1;
	return p < 0 ? RN_SEC_PLAINTEXT : (enum rn_secproto)p;
}

/*
 * Each listener's protocol from listener.security.protocol.map. Without
 * the key, Kafka's default map names each protocol after itself, and a
 * listener of another name stays PLAINTEXT as it always was; with it,
 * a broker listener it leaves out is an error, as in Kafka (controller
 * listeners default to PLAINTEXT).
 */
static int
assign_protocols(struct rn_config *cfg, char *err, size_t errlen)
{
	int i, j, p;

	for (i = 0; i < cfg->n_listeners; i++) {
		struct rn_listener *l = &cfg->listeners[i];

		p = -1;
		for (j = 0; j < cfg->n_sec_map; j++)
			if (strcmp(cfg->sec_map[j].name, l->name) == 0)
				p = (int)cfg->sec_map[j].proto;
		if (p < 0 && cfg->n_sec_map == 0)
			p = rn_secproto_parse(l->name);
		if (p < 0 && cfg->n_sec_map > 0 &&
		    !rn_config_is_controller_listener(cfg, l->name)) {
			snprintf(err, errlen, "invalid value for "
			    "listener.security.protocol.map: no security "
			    "protocol for listener %s", l->name);
			return -1;
		}
		l->proto = p < 0 ? RN_SEC_PLAINTEXT : (enum rn_secproto)p;
	}
	for (i = 0; i < cfg->n_advertised; i++)
		cfg->advertised[i].proto =
		    rn_config_listener(cfg, cfg->advertised[i].name)->proto;
	return 0;
}

/*
 * security.inter.broker.protocol names the inter-broker listener by its
 * protocol; Kafka takes it or inter.broker.listener.name, not both.
 */
static int
check_inter_broker(struct rn_config *cfg, char *err, size_t errlen)
{
	const char *sp = rn_config_static(cfg, "security.inter.broker.protocol");

	if (sp == NULL)
		return 0;
	if (rn_secproto_parse(sp) < 0) {
		snprintf(err, errlen, "invalid value '%s' for "
		    "security.inter.broker.protocol: not PLAINTEXT, SSL, "
		    "SASL_PLAINTEXT or SASL_SSL", sp);
		return -1;
	}
	if (cfg->inter_broker_listener_name[0] != '\0') {
		snprintf(err, errlen, "only one of inter.broker.listener.name "
		    "and security.inter.broker.protocol may be set");
		return -1;
	}
	strlcpy(cfg->inter_broker_listener_name,
	    rn_secproto_name((enum rn_secproto)rn_secproto_parse(sp)),
	    sizeof(cfg->inter_broker_listener_name));
	return 0;
}

/* Values that default to other keys' values. */
static void
derive_defaults(struct rn_config *cfg)
{
	int i;

	/* the first advertised PLAINTEXT listener, else the first */
	for (i = 0; cfg->inter_broker_listener_name[0] == '\0' &&
	    i < cfg->n_advertised; i++)
		if (cfg->advertised[i].proto == RN_SEC_PLAINTEXT)
			strlcpy(cfg->inter_broker_listener_name,
			    cfg->advertised[i].name,
			    sizeof(cfg->inter_broker_listener_name));
	if (cfg->inter_broker_listener_name[0] == '\0' &&
	    cfg->n_advertised > 0)
		strlcpy(cfg->inter_broker_listener_name,
		    cfg->advertised[0].name,
		    sizeof(cfg->inter_broker_listener_name));
	if (cfg->metadata_log_dir[0] == '\0')
		strlcpy(cfg->metadata_log_dir, cfg->log_dirs[0],
		    sizeof(cfg->metadata_log_dir));
	if (cfg->log_retention_ms == -2)
		cfg->log_retention_ms = cfg->retention_minutes != -1 ?
		    (cfg->retention_minutes < 0 ? -1 :
		    cfg->retention_minutes * 60000) :
		    (cfg->retention_hours < 0 ? -1 :
		    cfg->retention_hours * 3600000);
	if (cfg->log_roll_ms == -2)
		cfg->log_roll_ms = cfg->roll_hours * 3600000;
}

int
rn_config_finish(struct rn_config *cfg, char *err, size_t errlen)
{
	if (check_required(cfg, err, errlen) != 0 ||
	    ((cfg->roles & RN_ROLE_CONTROLLER) &&
	    check_controller(cfg, err, errlen) != 0) ||
	    check_listeners(cfg, err, errlen) != 0 ||
	    assign_protocols(cfg, err, errlen) != 0)
		return -1;
	if (check_inter_broker(cfg, err, errlen) != 0)
		return -1;
	derive_defaults(cfg);
	if (cfg->restart_backoff_max_ms < cfg->restart_backoff_initial_ms) {
		snprintf(err, errlen,
		    "invalid value %lld for worker.restart.backoff.max.ms: "
		    "below worker.restart.backoff.initial.ms",
		    (long long)cfg->restart_backoff_max_ms);
		return -1;
	}
	if (cfg->shm_ring_bytes & (cfg->shm_ring_bytes - 1)) {
		snprintf(err, errlen,
		    "invalid value %lld for shm.ring.bytes: not a power of two",
		    (long long)cfg->shm_ring_bytes);
		return -1;
	}
	if (cfg->control_socket_path[0] != '/') {
		snprintf(err, errlen,
		    "invalid value '%s' for control.socket.path: not an "
		    "absolute path", cfg->control_socket_path);
		return -1;
	}
	if (cfg->authorizer_class_name[0] != '\0' &&
	    strcmp(cfg->authorizer_class_name,
	    RN_CONFIG_STANDARD_AUTHORIZER) != 0) {
		snprintf(err, errlen, "invalid value '%s' for "
		    "authorizer.class.name: the built-in authorizer is %s "
		    "(unset: no authorization)", cfg->authorizer_class_name,
		    RN_CONFIG_STANDARD_AUTHORIZER);
		return -1;
	}
	cfg->authorizer_on = cfg->authorizer_class_name[0] != '\0';
	config_cleaner(cfg);
	return 0;
}
