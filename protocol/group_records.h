/*
 * The pure parts of consumer groups, shared by the group coordinator,
 * the network workers and the unit tests: where a group lives (its
 * __consumer_offsets partition, from Java's String.hashCode as Kafka
 * computes it), the records of __consumer_offsets in Kafka's own key and
 * value schemas (offset commit key v1 / value v3, group metadata key v2 /
 * value v4), and the group settings read from the configuration.
 */
#ifndef RN_GROUP_RECORDS_H
#define RN_GROUP_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "protocol/kcodec.h"

#define RN_OFFSETS_TOPIC "__consumer_offsets"

/* Java's String.hashCode of a UTF-8 string (over its UTF-16 units). */
int32_t rn_java_string_hash(const char *s, size_t len);
/* The __consumer_offsets partition of a group among n (Kafka's Utils.abs). */
int32_t rn_group_partition(const char *group, size_t len, int32_t n);

/* Record kinds by key version: 0 and 1 offset commits, 2 group metadata. */
enum rn_grec_kind {
	RN_GREC_OFFSET = 1,
	RN_GREC_GROUP = 2,
};

struct rn_grec_key {
	enum rn_grec_kind kind;
	struct rn_kstr group;
	struct rn_kstr topic;       /* offset commits only */
	int32_t partition;
};

struct rn_grec_offset {
	int64_t offset;
	int32_t leader_epoch;       /* -1: unknown */
	struct rn_kstr metadata;
	int64_t commit_ts;
	int64_t expire_ts;          /* value v1 only; -1 */
};

struct rn_grec_member {
	struct rn_kstr member_id;
	struct rn_kstr instance_id; /* nullable */
	struct rn_kstr client_id;
	struct rn_kstr client_host;
	int32_t rebalance_timeout;
	int32_t session_timeout;
	struct rn_kbytes subscription;
	struct rn_kbytes assignment;
};

struct rn_grec_group {
	struct rn_kstr protocol_type;
	int32_t generation;
	struct rn_kstr protocol;    /* nullable */
	struct rn_kstr leader;      /* nullable */
	int64_t state_ts;
	struct rn_grec_member *members;
	int32_t n_members;
};

void rn_grec_offset_key(struct rn_kwriter *w, struct rn_kstr group,
    struct rn_kstr topic, int32_t partition);
void rn_grec_offset_value(struct rn_kwriter *w, const struct rn_grec_offset *v);
void rn_grec_group_key(struct rn_kwriter *w, struct rn_kstr group);
void rn_grec_group_value(struct rn_kwriter *w, const struct rn_grec_group *v);

/* 0, or -EBADMSG for a key of no known version or a short one. */
int rn_grec_key_decode(const void *buf, size_t len, struct rn_grec_key *k);
/* Values of every version Kafka wrote: 0 or -EBADMSG. */
int rn_grec_offset_decode(const void *buf, size_t len,
    struct rn_grec_offset *v);
/* Members are allocated from a (capped) arena: 0, -EBADMSG or -ENOMEM. */
int rn_grec_group_decode(const void *buf, size_t len, struct rn_arena *a,
    struct rn_grec_group *v);

/* The group and offsets settings of the broker configuration. */
struct rn_group_settings {
	int32_t offsets_partitions;     /* offsets.topic.num.partitions */
	int16_t offsets_rf;             /* offsets.topic.replication.factor */
	int64_t offsets_segment_bytes;  /* offsets.topic.segment.bytes */
	int64_t retention_ms;           /* offsets.retention.minutes */
	int64_t retention_check_ms;     /* offsets.retention.check.interval.ms */
	int64_t commit_timeout_ms;      /* offsets.commit.timeout.ms */
	int64_t initial_delay_ms;       /* group.initial.rebalance.delay.ms */
	int64_t min_session_ms;         /* group.min.session.timeout.ms */
	int64_t max_session_ms;         /* group.max.session.timeout.ms */
	int32_t max_size;               /* group.max.size */
	int64_t max_metadata;           /* offset.metadata.max.bytes */
};

void rn_group_settings_load(const struct rn_config *cfg,
    struct rn_group_settings *s);

#endif /* RN_GROUP_RECORDS_H */
