/*
 * meta.properties in every log dir, Kafka's keys and file format, without
 * a format step (KIP-1262): a dir without the file gets one naming this
 * node and a fresh directory.id but no cluster.id; the cluster id is
 * learned from the metadata log later and written into every dir before
 * anything in memory uses it.
 *
 * Library code (runneld, the controller, runnel-storage): returns 0 or
 * -errno, never exits.
 */
#ifndef RN_STORAGE_METAPROPS_H
#define RN_STORAGE_METAPROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

#define RN_METAPROPS_FILE "meta.properties"
/* KIP-1262's version: node.id and directory.id, cluster.id optional. */
#define RN_METAPROPS_VERSION 2

struct rn_metaprops {
	int version;
	int32_t node_id;       /* -1 when absent */
	char cluster_id[23];   /* "" when absent */
	bool has_dir_id;
	uint8_t dir_id[16];
};

/* Parse dir/meta.properties: 0, -ENOENT when missing, -EINVAL with a
 * reason in err when it does not parse. */
int rn_metaprops_read(const char *dir, struct rn_metaprops *mp, char *err,
    size_t errlen);
/* Write dir/meta.properties atomically (tmp, fsync, rename, fsync dir). */
int rn_metaprops_write(const char *dir, const struct rn_metaprops *mp);

/*
 * Supervisor, once the log dirs are locked: for every log dir and the
 * metadata log dir, create a missing meta.properties, or check the one
 * there: another node.id, or two dirs naming different cluster ids, stops
 * startup. Fills cluster_id (known cluster id or "") and the directory.id
 * of each cfg->log_dirs entry. Returns 0, or -1 after logging one message
 * naming the dir.
 */
int rn_metaprops_ensure(const struct rn_config *cfg, char cluster_id[23],
    uint8_t dir_ids[][16]);

/*
 * Read every dir's meta.properties (the controller at start): the cluster
 * id they name ("" if none) and each log dir's directory.id. -EINVAL with
 * a reason in err if they disagree or one is unreadable.
 */
int rn_metaprops_load(const struct rn_config *cfg, char cluster_id[23],
    uint8_t dir_ids[][16], char *err, size_t errlen);

/*
 * Persist a cluster id learned from the metadata log into every dir.
 * -EEXIST with a reason in err when a dir already names another cluster
 * id (nothing is written then); other -errno on I/O failure.
 */
int rn_metaprops_set_cluster_id(const struct rn_config *cfg,
    const char *cluster_id, char *err, size_t errlen);

#endif /* RN_STORAGE_METAPROPS_H */
