/*
 * DescribeLogDirs over tool_kclient: the brokers from Metadata, one
 * broker's log dirs, and where each replica is (runnel-log-dirs,
 * runnel-topics --describe).
 */
#ifndef RN_TOOL_LOGDIRS_H
#define RN_TOOL_LOGDIRS_H

#include <stdbool.h>

#include "protocol/kmsg_gen.h"

/* The brokers Metadata v1 lists (in arena). 0, or -1 with err filled. */
int tld_brokers(const char *bootstrap, int timeout_ms, struct rn_arena *ar,
    struct rn_MetadataResponse *md, char *err, size_t errlen);
/* DescribeLogDirs v4 of every replica on broker b (in ar). 0, or -1. */
int tld_describe(const struct rn_MetadataResponse_MetadataResponseBroker *b,
    int timeout_ms, struct rn_arena *ar, struct rn_DescribeLogDirsResponse *r,
    char *err, size_t errlen);

/* Where each replica is, from every broker that answered. */
struct tld_replica {
	int32_t broker, partition;
	char *topic, *dir;
	bool future;             /* a future replica (a move between dirs) */
};
struct tld_map {
	struct tld_replica *v;
	int n, cap;
};
int tld_map_fetch(const char *bootstrap, int timeout_ms, struct tld_map *m);
/* The log dir of broker's replica of topic-p; NULL if unknown. */
const char *tld_map_dir(const struct tld_map *m, int32_t broker,
    const char *topic, int32_t p);
/* The log dir of its future replica (a move under way); NULL if none. */
const char *tld_map_future(const struct tld_map *m, int32_t broker,
    const char *topic, int32_t p);
/*
 * AlterReplicaLogDirs to broker b (v1): req's replicas to its dirs; resp's
 * strings in ar. 0, or -1 with err filled.
 */
int tld_alter(const struct rn_MetadataResponse_MetadataResponseBroker *b,
    int timeout_ms, struct rn_arena *ar,
    const struct rn_AlterReplicaLogDirsRequest *req,
    struct rn_AlterReplicaLogDirsResponse *resp, char *err, size_t errlen);
void tld_map_free(struct tld_map *m);

#endif /* RN_TOOL_LOGDIRS_H */
