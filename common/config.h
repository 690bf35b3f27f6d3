/*
 * server.properties: Kafka's key names where Kafka has them, runnel's own
 * keys for the supervisor. Parsing is all-or-nothing: an invalid value or
 * a missing required key fails with one message naming key, value and
 * line. Every other key of Kafka's catalogue (common/kconfig_catalogue.h)
 * is validated by its type and kept for DescribeConfigs; a key neither
 * runnel nor Kafka knows is only a warning.
 */
#ifndef RN_CONFIG_H
#define RN_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RN_CONFIG_MAX_LISTENERS 8
#define RN_CONFIG_MAX_VOTERS 16
#define RN_CONFIG_MAX_LOGDIRS 16
#define RN_CONFIG_HOST_MAX 256
#define RN_CONFIG_NAME_MAX 64

#define RN_ROLE_BROKER 0x1
#define RN_ROLE_CONTROLLER 0x2

/* Kafka's SecurityProtocol ids, as BrokerRegistration carries them. */
enum rn_secproto {
	RN_SEC_PLAINTEXT = 0,
	RN_SEC_SSL = 1,
	RN_SEC_SASL_PLAINTEXT = 2,
	RN_SEC_SASL_SSL = 3,
};
#define RN_SEC_TLS(p) ((p) == RN_SEC_SSL || (p) == RN_SEC_SASL_SSL)
#define RN_SEC_SASL(p) ((p) == RN_SEC_SASL_PLAINTEXT || (p) == RN_SEC_SASL_SSL)

struct rn_listener {
	char name[RN_CONFIG_NAME_MAX];
	char host[RN_CONFIG_HOST_MAX]; /* "" binds every address */
	uint16_t port;
	enum rn_secproto proto;        /* listener.security.protocol.map */
};

struct rn_secmap {
	char name[RN_CONFIG_NAME_MAX];
	enum rn_secproto proto;
};

struct rn_voter {
	int32_t id;
	char host[RN_CONFIG_HOST_MAX];
	uint16_t port;
};

/* A Kafka key as server.properties (or --override) gave it. */
struct rn_config_kv {
	char *key, *value;
};

struct rn_config {
	int32_t node_id;
	unsigned roles; /* RN_ROLE_* */
	struct rn_listener listeners[RN_CONFIG_MAX_LISTENERS];
	int n_listeners;
	struct rn_listener advertised[RN_CONFIG_MAX_LISTENERS];
	int n_advertised;
	char controller_listener_names[RN_CONFIG_MAX_LISTENERS][RN_CONFIG_NAME_MAX];
	int n_controller_listener_names;
	char inter_broker_listener_name[RN_CONFIG_NAME_MAX];
	struct rn_secmap sec_map[2 * RN_CONFIG_MAX_LISTENERS];
	int n_sec_map;                 /* 0: Kafka's default map */
	struct rn_voter voters[RN_CONFIG_MAX_VOTERS];
	int n_voters;
	char log_dirs[RN_CONFIG_MAX_LOGDIRS][1024];
	int n_log_dirs;
	char metadata_log_dir[1024];
	char broker_rack[RN_CONFIG_NAME_MAX];

	int num_network_threads;
	int fetch_session_slots;   /* max.incremental.fetch.session.cache.slots */
	int num_replica_fetchers;
	int log_cleaner_workers; /* log.cleaner.enable and .threads: 0 or 1 */
	int64_t socket_request_max_bytes;
	int64_t message_max_bytes;

	int num_partitions;
	int default_replication_factor;
	int min_insync_replicas;
	bool auto_create_topics_enable;
	bool unclean_leader_election_enable;
	bool auto_leader_rebalance_enable;
	int64_t leader_imbalance_check_interval_s;
	int leader_imbalance_per_broker_pct;
	int64_t log_segment_bytes;
	int64_t log_roll_ms;
	int64_t log_retention_ms;
	int64_t log_retention_bytes;
	int64_t log_retention_check_interval_ms;
	int64_t log_flush_interval_messages;
	int64_t log_flush_interval_ms;
	int64_t log_flush_offset_checkpoint_interval_ms;
	int64_t replica_lag_time_max_ms;
	int64_t broker_heartbeat_interval_ms;
	int64_t broker_session_timeout_ms;
	int64_t log_dir_failure_timeout_ms;

	/* authorization: authorizer.class.name selects the built-in one */
	bool authorizer_on;
	char authorizer_class_name[128];
	char super_users[4096];       /* "User:a;User:b" as written */
	bool allow_everyone_if_no_acl_found;

	/* runnel's own keys */
	char control_socket_path[108];
	char supervisor_user[64];
	int64_t restart_backoff_initial_ms;
	int64_t restart_backoff_max_ms;
	int restart_max_failures;
	int64_t restart_failure_window_ms;
	int64_t worker_heartbeat_timeout_ms;
	int64_t shutdown_timeout_ms;
	int shm_max_partitions;
	/* idempotent-producer entries beyond the partition slots' own */
	int shm_max_producers;
	/* seed 000: create below the replication factor, over the observed
	 * brokers, while live ones cover min.insync.replicas */
	bool under_replicated_creation;
	char metrics_listener[128];   /* http://host:port; "" = off */
	int64_t shm_ring_bytes;
	bool log_verbose;
	/* Test faults, off by default: named so nobody mistakes them for tuning. */
	char fault_worker_exit_on_start[32];

	/* Kafka's hours/minutes/ms trio for retention and roll: ms wins. */
	int64_t retention_hours, retention_minutes, roll_hours;

	/* Every Kafka key the file set, as written (STATIC_BROKER_CONFIG);
	 * allocated, lives as long as the process. */
	struct rn_config_kv *kafka_keys;
	int n_kafka_keys, cap_kafka_keys;
};

/* Kafka's name for the authorizer that runnel has built in. */
#define RN_CONFIG_STANDARD_AUTHORIZER \
	"org.apache.kafka.metadata.authorizer.StandardAuthorizer"

/* The configuration used when runneld is started without --config. */
extern const char rn_config_embedded_default[];

/*
 * Parse text (a properties file's contents) into cfg, defaults first.
 * Returns 0, or -1 with a one-line reason in err. Warnings (unknown keys)
 * are reported through warn(arg, message) when warn is not NULL.
 */
typedef void (*rn_config_warn_fn)(void *arg, const char *msg);
int rn_config_parse(struct rn_config *cfg, const char *text,
    const char *origin, char *err, size_t errlen, rn_config_warn_fn warn,
    void *arg);

/* Apply one "key=value" override (command line), line number 0. */
int rn_config_override(struct rn_config *cfg, const char *kv, char *err,
    size_t errlen);

/* Cross-key checks and derived values; call after all input is applied. */
int rn_config_finish(struct rn_config *cfg, char *err, size_t errlen);

/* Read a file and parse it. */
int rn_config_load(struct rn_config *cfg, const char *path, char *err,
    size_t errlen, rn_config_warn_fn warn, void *arg);

/* The value server.properties gave Kafka key key, NULL if it did not. */
const char *rn_config_static(const struct rn_config *cfg, const char *key);
/* Wipe the values of the Kafka keys that are passwords (keys, JAAS). */
void rn_config_forget_secrets(struct rn_config *cfg);
/* What parsing allocated (the Kafka keys kept for DescribeConfigs). */
void rn_config_free(struct rn_config *cfg);

const struct rn_listener *rn_config_listener(const struct rn_config *cfg,
    const char *name);
/* The protocol of a listener by name: from listeners, else from
 * listener.security.protocol.map (a broker-only node's controller
 * listener), else PLAINTEXT. */
enum rn_secproto rn_config_listener_proto(const struct rn_config *cfg,
    const char *name);
bool rn_config_is_controller_listener(const struct rn_config *cfg,
    const char *name);
/* "SSL" for RN_SEC_SSL etc. */
const char *rn_secproto_name(enum rn_secproto p);
/* A protocol by its name (any case); -1 if none. */
int rn_secproto_parse(const char *name);
/* "broker,controller" etc. */
const char *rn_config_roles_str(unsigned roles);

#endif /* RN_CONFIG_H */
