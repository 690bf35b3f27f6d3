/*
 * runnel-reassign-partitions' pieces: a plan (partitions and the replicas
 * each should have) read from and written as Kafka's reassignment JSON,
 * the cluster's current assignment from Metadata, and the replication
 * throttles --execute sets and --verify clears.
 */
#ifndef RN_TOOL_REASSIGN_H
#define RN_TOOL_REASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kcodec.h"

#define RA_TIMEOUT_MS 30000

struct ra_part {
	char *topic;
	int32_t partition;
	int32_t *replicas;
	int n;
	/* the plan's log_dirs, aligned with replicas: NULL for "any" (and
	 * when there are none) */
	char **dirs;
};

struct ra_plan {
	struct ra_part *v;
	int n, cap;
};

/* Brokers of the cluster, from Metadata. */
struct ra_brokers {
	int32_t *ids;
	int n;
};

/* reassign_json.c */
/* Add (topic, partition, replicas); 0 or -1 (no memory). */
int ra_plan_add(struct ra_plan *pl, const char *topic, int32_t partition,
    const int32_t *replicas, int n);
void ra_plan_free(struct ra_plan *pl);
const struct ra_part *ra_plan_find(const struct ra_plan *pl,
    const char *topic, int32_t partition);
/* {"version":1,"partitions":[...]} from path; 0 or -1 with err. */
int ra_plan_read(const char *path, struct ra_plan *pl, char *err,
    size_t errlen);
/* {"version":1,"topics":[{"topic":...}]}: the names, malloc'd. */
int ra_topics_read(const char *path, char ***names, int *n, char *err,
    size_t errlen);
/* The plan as Kafka writes it (malloc'd), NULL on no memory. */
char *ra_plan_json(const struct ra_plan *pl);

/* reassign_dirs.c: the replicas the plan gives a log dir (KIP-113) */
bool ra_plan_has_moves(const struct ra_plan *pl);
/*
 * --execute: AlterReplicaLogDirs to each replica's broker, asked again
 * every 100 ms while a broker does not have its replica yet
 * (REPLICA_NOT_AVAILABLE), for up to timeout_ms, as Kafka's executeMoves.
 * 0, or -1 (said on stderr).
 */
int ra_moves_execute(const char *bootstrap, const struct ra_plan *pl,
    int timeout_ms);
/* --verify: a line per replica, as Kafka's; how many are not done, or -1. */
int ra_moves_verify(const char *bootstrap, const struct ra_plan *pl);

/* reassign_throttle.c */
/* Set the throttles for moving cur to plan at rate bytes/s. */
int ra_throttle_set(int fd, const struct ra_plan *plan,
    const struct ra_plan *cur, long long rate, char *err, size_t errlen);
/* replica.alter.log.dirs.io.max.bytes.per.second on the brokers whose
 * replicas the plan moves between log dirs. */
int ra_throttle_logdirs(int fd, const struct ra_plan *plan, long long rate,
    char *err, size_t errlen);
/* Remove them (the log dir one too) from every broker and from the
 * plan's topics. */
int ra_throttle_clear(int fd, const struct ra_plan *plan,
    const struct ra_brokers *br, char *err, size_t errlen);

/* runnel-reassign-partitions.c */
/* The current replicas of every partition of the topics named (all the
 * partitions of each), and the brokers. 0 or -1 with err. */
int ra_current(int fd, char *const *topics, int n, struct ra_plan *cur,
    struct ra_brokers *br, char *err, size_t errlen);

#endif /* RN_TOOL_REASSIGN_H */
