/*
 * meta.properties in a log dir, Kafka's keys: version, cluster.id, node.id
 * (broker.id in version 0), directory.id. Version 2 (KIP-1262) is what
 * runnel writes: cluster.id may be absent until the node learns it.
 * A stand-in until supervisor/sv_metaprops.c exists; then the tools call
 * that one instead.
 */
#ifndef RN_TOOL_METAPROPS_H
#define RN_TOOL_METAPROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"

#define TOOL_META_FILE "meta.properties"
#define TOOL_META_VERSION 2

struct tool_metaprops {
	int version;
	bool has_cluster_id, has_node_id, has_directory_id;
	char cluster_id[256];
	int32_t node_id;
	struct rn_uuid directory_id;
};

/* 0 read, 1 no meta.properties in dir, -1 unreadable/invalid (err says). */
int tool_metaprops_read(const char *dir, struct tool_metaprops *mp,
    char *err, size_t errlen);
/* Atomic write (tmp, fsync, rename); 0 or -1 with err. */
int tool_metaprops_write(const char *dir, const struct tool_metaprops *mp,
    char *err, size_t errlen);

#endif /* RN_TOOL_METAPROPS_H */
