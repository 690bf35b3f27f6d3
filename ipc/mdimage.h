/*
 * The metadata image in shared memory: the controller's applied metadata,
 * published as one msgpack map under the image seqlock, and the
 * process-local view every other worker reads it into.
 *
 * On every node, broker-only ones included, the controller worker
 * publishes it with this node's own "slot" and "dir" of each replica.
 *
 * The body region starts with the body's length (8 bytes, native order),
 * written under the seqlock with it. Body (one msgpack map):
 *   {"cluster_id": str, "controller_id": int, "epoch": int (raft term),
 *    "offset": int (last applied log index),
 *    "brokers": [{"id", "host", "port", "rack": str|nil, "fenced": bool,
 *                 "epoch": int, "listeners": [{"name","host","port"}]}],
 *    "topics": [{"name", "id": bin16, "internal": bool,
 *                "configs": {k: v} (topic overrides only),
 *                "partitions": [{"p", "leader", "epoch", "pepoch",
 *                                "replicas": [], "isr": [],
 *                                "offline": [] (replicas on fenced or
 *                                unregistered brokers),
 *                                "slot": int (-1: not local),
 *                                "dir": int (cfg.log_dirs index, -1: not
 *                                local), "dir_id": bin16}]}],
 *    "broker_configs": {k: v} (dynamic cluster-wide broker defaults),
 *    "node_configs": {k: v} (dynamic configs of this broker)}
 *
 * Readers: keep one struct rn_mdview per process, call rn_mdview_refresh()
 * before using it (cheap when nothing changed: one atomic load), then use
 * the lookups; nothing they return is valid after the next refresh.
 */
#ifndef RN_MDIMAGE_H
#define RN_MDIMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "ipc/shm.h"

/* ---- writer (the controller) ---------------------------------------- */

/* Copy body into the image, bump its version. -EMSGSIZE if it does not
 * fit (the image is left as it was). */
int rn_mdimage_publish(struct rn_shm *shm, int32_t node_id,
    const char *cluster_id, const void *body, size_t len);

/* ---- topic configs: names, broker keys, defaults, validation -------- */

/* Kafka's DescribeConfigs ConfigSource values. */
enum rn_config_source {
	RN_CFGSRC_UNKNOWN = 0,
	RN_CFGSRC_DYNAMIC_TOPIC_CONFIG = 1,
	RN_CFGSRC_DYNAMIC_BROKER_CONFIG = 2,
	RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG = 3,
	RN_CFGSRC_STATIC_BROKER_CONFIG = 4,
	RN_CFGSRC_DEFAULT_CONFIG = 5,
};

/* Kafka's DescribeConfigs ConfigType values. */
enum rn_config_type {
	RN_CFGTYPE_BOOLEAN = 1,
	RN_CFGTYPE_STRING = 2,
	RN_CFGTYPE_INT = 3,
	RN_CFGTYPE_LONG = 5,
	RN_CFGTYPE_LIST = 7,
};

struct rn_topic_config_def {
	const char *name;        /* topic key, e.g. "retention.ms" */
	const char *broker_key;  /* server.properties key, e.g. "log.retention.ms" */
	enum rn_config_type type;
	const char *dflt;        /* Kafka's built-in default */
	int64_t min, max;        /* numeric bounds */
	const char *const *choices; /* NULL-terminated, for enumerations */
};

/* The known topic configs, NULL-terminated by name. */
extern const struct rn_topic_config_def rn_topic_config_defs[];
const struct rn_topic_config_def *rn_topic_config_def(const char *name);
const struct rn_topic_config_def *rn_topic_config_def_by_broker_key(
    const char *broker_key);
/* 0, or -EINVAL with Kafka's style of message in err ("Invalid value x
 * for configuration retention.ms: Not a number of type LONG"). */
int rn_topic_config_validate(const struct rn_topic_config_def *d,
    const char *value, char *err, size_t errlen);
/*
 * The value server.properties gives a topic config's broker key, in buf;
 * true if it was set away from Kafka's default (STATIC_BROKER_CONFIG),
 * false if it is the built-in default (buf holds it too).
 */
bool rn_topic_config_static(const struct rn_config *cfg,
    const struct rn_topic_config_def *d, char *buf, size_t buflen);

/* ---- reader --------------------------------------------------------- */

struct rn_mdv_config {
	const char *key;
	const char *value;
};

struct rn_mdv_partition {
	int32_t p;
	int32_t leader, leader_epoch, partition_epoch;
	int32_t n_replicas, n_isr, n_offline;
	const int32_t *replicas, *isr, *offline;
	int32_t slot;            /* -1: no replica here */
	int32_t dir;             /* cfg.log_dirs index, -1: no replica here */
	uint8_t dir_id[16];
};

struct rn_mdv_topic {
	const char *name;
	size_t name_len;
	uint8_t id[16];
	bool internal;
	int32_t n_parts;
	const struct rn_mdv_partition *parts;
	int n_configs;           /* topic overrides, sorted by key */
	const struct rn_mdv_config *configs;
};

struct rn_mdv_listener {
	const char *name, *host;
	uint16_t port;
};

struct rn_mdv_broker {
	int32_t id;
	const char *host;
	uint16_t port;
	const char *rack;        /* NULL: none */
	bool fenced;
	int64_t epoch;
	int n_listeners;
	const struct rn_mdv_listener *listeners;
};

struct rn_mdview {
	uint64_t version;        /* image version this view was built from; 0: none */
	uint64_t generation;     /* shm generation at that time */
	char cluster_id[23];
	int32_t controller_id;
	int64_t epoch;
	int64_t offset;
	int n_topics, n_brokers;
	const struct rn_mdv_topic *topics;   /* image order (creation order) */
	const struct rn_mdv_broker *brokers; /* sorted by id */
	int n_broker_configs, n_node_configs;
	const struct rn_mdv_config *broker_configs, *node_configs;
	/* private */
	void *priv;
};

void rn_mdview_init(struct rn_mdview *v);
void rn_mdview_free(struct rn_mdview *v);
/*
 * Bring the view up to date: 1 if it changed, 0 if it was current,
 * -EAGAIN if the controller is mid-publish for too long or the image is
 * empty (rebuilt after a controller crash; the old view stays usable),
 * -EBADMSG if the body does not parse, -ENOMEM.
 */
int rn_mdview_refresh(struct rn_mdview *v, const struct rn_shm *shm);
/* Parse a body directly (tests; what refresh does after copying). */
int rn_mdview_load(struct rn_mdview *v, const void *body, size_t len);

const struct rn_mdv_topic *rn_mdview_topic(const struct rn_mdview *v,
    const char *name, size_t len);
const struct rn_mdv_topic *rn_mdview_topic_by_id(const struct rn_mdview *v,
    const uint8_t id[16]);
const struct rn_mdv_partition *rn_mdview_partition(
    const struct rn_mdv_topic *t, int32_t p);
const struct rn_mdv_broker *rn_mdview_broker(const struct rn_mdview *v,
    int32_t id);

/*
 * Effective value of a topic config and where it comes from: the topic's
 * override (DYNAMIC_TOPIC_CONFIG), this broker's dynamic config
 * (DYNAMIC_BROKER_CONFIG), the dynamic cluster default
 * (DYNAMIC_DEFAULT_BROKER_CONFIG), server.properties
 * (STATIC_BROKER_CONFIG) or the built-in default (DEFAULT_CONFIG).
 * *value points into the view or into buf. -ENOENT for an unknown key.
 */
int rn_mdview_topic_config(const struct rn_mdview *v,
    const struct rn_mdv_topic *t, const struct rn_config *cfg,
    const char *key, const char **value, enum rn_config_source *source,
    char *buf, size_t buflen);

/*
 * A broker config of this node by its server.properties key (those with a
 * topic counterpart: log.retention.ms, ...): DYNAMIC_BROKER_CONFIG,
 * DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG or DEFAULT_CONFIG.
 * -ENOENT for other keys.
 */
int rn_mdview_broker_config(const struct rn_mdview *v,
    const struct rn_config *cfg, const char *broker_key, const char **value,
    enum rn_config_source *source, char *buf, size_t buflen);

#endif /* RN_MDIMAGE_H */
