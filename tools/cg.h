/*
 * runnel-consumer-groups: what its files share. The options, the group
 * lookups over librdkafka's admin API, and the partition offsets that
 * describe and reset both need (log start, log end, by time, committed).
 */
#ifndef RN_TOOL_CG_H
#define RN_TOOL_CG_H

#include "tools/tool_common.h"

enum cg_action { CG_NONE, CG_LIST, CG_DESCRIBE, CG_RESET, CG_DELETE,
    CG_DELETE_OFFSETS };
enum cg_view { CG_VIEW_OFFSETS, CG_VIEW_MEMBERS, CG_VIEW_STATE };
enum cg_reset { CG_TO_NONE, CG_TO_EARLIEST, CG_TO_LATEST, CG_TO_OFFSET,
    CG_SHIFT_BY, CG_TO_DATETIME, CG_BY_DURATION, CG_TO_CURRENT };

struct cg_opts {
	enum cg_action action;
	enum cg_view view;
	enum cg_reset reset;
	const char *bootstrap;
	const char **groups;
	int n_groups;
	const char **topics;     /* "t" or "t:0,1,2" */
	int n_topics;
	bool all_groups, all_topics, verbose, execute, dry_run, state_flag;
	const char *state_filter; /* --list --state [A,B] */
	int64_t reset_value;      /* offset, shift, or time in ms */
	struct tool_props client;
	int timeout_ms;
};

/* One partition's figures; -1 where unknown. */
struct cg_row {
	char *topic;
	int32_t partition;
	int64_t committed, log_start, log_end;
	const char *member, *host, *client; /* borrowed; NULL: none */
};

/* Group listing: ids (and states) of every group the cluster knows. */
struct cg_listing {
	char **ids;
	rd_kafka_consumer_group_state_t *states;
	int n;
};
int cg_list_groups(rd_kafka_t *rk, const struct cg_opts *o,
    struct cg_listing *out);
void cg_listing_free(struct cg_listing *l);

/*
 * The DescribeConsumerGroups event for one group (the description lives
 * as long as the event); NULL after printing why.
 */
rd_kafka_event_t *cg_describe_one(rd_kafka_t *rk, const struct cg_opts *o,
    const char *group, const rd_kafka_ConsumerGroupDescription_t **desc);

/* The group's committed offsets (a copy the caller destroys), or NULL. */
rd_kafka_topic_partition_list_t *cg_committed(rd_kafka_t *rk,
    const struct cg_opts *o, const char *group);

/*
 * Partition offsets by ListOffsets: ts -2 the log start, -1 the log end,
 * else the first offset at or after ts (ms), -1 when none. Fills each
 * element's offset; 0, or -1 after printing why.
 */
int cg_offsets_at(rd_kafka_t *rk, const struct cg_opts *o,
    rd_kafka_topic_partition_list_t *parts, int64_t ts);

/* The partitions the --topic options name ("t" or "t:0,2"), or NULL. */
rd_kafka_topic_partition_list_t *cg_topic_partitions(rd_kafka_t *rk,
    const struct cg_opts *o);

/* Kafka's names for group states ("Stable", "Empty", ...). */
const char *cg_state_name(rd_kafka_consumer_group_state_t s);

/* Sorts by topic, then partition. */
void cg_sort(rd_kafka_topic_partition_list_t *l);

int cg_describe(rd_kafka_t *rk, const struct cg_opts *o);
int cg_reset_offsets(rd_kafka_t *rk, const struct cg_opts *o);

/* "2026-12-01T06:00:00.000[Z|+hh:mm]" (local time without a zone). */
int cg_parse_datetime(const char *s, int64_t *ms);
/* ISO-8601 duration "PnDTnHnMnS" in ms. */
int cg_parse_duration(const char *s, int64_t *ms);

#endif /* RN_TOOL_CG_H */
