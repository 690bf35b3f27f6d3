/*
 * Kafka's small text state files, written atomically (tmp + fsync + rename +
 * directory fsync):
 *   recovery-point-offset-checkpoint, log-start-offset-checkpoint (log dir
 *     root): "0\n<count>\n" then "<topic> <partition> <offset>\n" lines
 *   leader-epoch-checkpoint (partition dir): "0\n<count>\n" then
 *     "<epoch> <startOffset>\n" lines
 *   partition.metadata (partition dir): "version: 0\ntopic_id: <id>" where
 *     id is the topic UUID in unpadded base64url (22 characters)
 */
#ifndef RN_STORAGE_CHECKPOINT_H
#define RN_STORAGE_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/epoch.h"

#define RN_RECOVERY_POINT_CHECKPOINT "recovery-point-offset-checkpoint"
#define RN_LOG_START_CHECKPOINT "log-start-offset-checkpoint"
#define RN_REPLICATION_CHECKPOINT "replication-offset-checkpoint"
#define RN_LEADER_EPOCH_CHECKPOINT "leader-epoch-checkpoint"
#define RN_PARTITION_METADATA "partition.metadata"

#define RN_TOPIC_MAX 249	/* Kafka's limit on topic name length */

struct rn_tp_offset {
	char topic[RN_TOPIC_MAX + 1];
	int32_t partition;
	int64_t offset;
};

/* Write data to path atomically; 0 or -errno. */
int rn_ckpt_write_atomic(const char *path, const void *data, size_t len);

int rn_offset_checkpoint_write(const char *path, const struct rn_tp_offset *e,
    size_t n);
/* *out is malloc'd (free() it); -ENOENT if absent, -EBADMSG if malformed. */
int rn_offset_checkpoint_read(const char *path, struct rn_tp_offset **out,
    size_t *n);

/*
 * durable: synced with its directory before it returns; else only
 * replaced (a new partition's files, synced by its first flush).
 */
int rn_epoch_checkpoint_write(const char *path, const struct rn_epoch_entry *e,
    size_t n, bool durable);
/* Reads up to cap entries (more is -EOVERFLOW); -ENOENT if absent. */
int rn_epoch_checkpoint_read(const char *path, struct rn_epoch_entry *e,
    size_t cap, size_t *n);

/* Topic ids: 16 bytes <-> 22 characters of unpadded base64url. */
void rn_uuid_to_base64url(const uint8_t id[16], char out[23]);
int rn_uuid_from_base64url(const char *s, uint8_t id[16]);

int rn_partition_metadata_write(const char *partition_dir, const uint8_t id[16],
    bool durable);
int rn_partition_metadata_read(const char *partition_dir, uint8_t id[16]);

#endif /* RN_STORAGE_CHECKPOINT_H */
