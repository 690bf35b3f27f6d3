/*
 * Log directory layout (Kafka's): one "<topic>-<partition>" directory per
 * partition under the log dir root, checkpoint files at the root, and a
 * clean-shutdown marker written after every log was shut down cleanly.
 */
#ifndef RN_STORAGE_LOGDIR_H
#define RN_STORAGE_LOGDIR_H

#include <stddef.h>
#include <stdint.h>

#include "common/log.h"
#include "storage/checkpoint.h"

#define RN_CLEAN_SHUTDOWN_FILE ".kafka_cleanshutdown"

/* Kafka's legal topic names: [a-zA-Z0-9._-]{1,249}, not "." or "..". */
int rn_topic_name_valid(const char *topic);

/* "<topic>-<partition>"; -ENAMETOOLONG if it does not fit, -EINVAL if bad. */
int rn_partition_dir_name(char *buf, size_t size, const char *topic,
    int32_t partition);

/* Split a directory name at its last '-'; -EINVAL if it is not one. */
int rn_partition_dir_parse(const char *name, char topic[RN_TOPIC_MAX + 1],
    int32_t *partition);

/*
 * The partition a partition directory's path names ("/data/orders-3") as
 * a log line's subject, its topic kept in topic; no subject if the last
 * component is not "<topic>-<partition>" (a future or deleted copy).
 */
struct rn_log_subject rn_logdir_subject(const char *path,
    char topic[RN_TOPIC_MAX + 1]);

/* Call fn for every partition directory under root; stops on fn < 0. */
int rn_logdir_list(const char *root,
    int (*fn)(void *arg, const char *topic, int32_t partition), void *arg);

/* Clean shutdown marker: mark after shutting logs down; take at startup
 * (returns 1 if it was present, and removes it so a crash is noticed). */
int rn_logdir_mark_clean(const char *root);
int rn_logdir_take_clean(const char *root);

/*
 * Take a partition directory out of service the way Kafka deletes one:
 * rename root/name to "<name>.<32 hex>-delete" (the topic part shortened
 * to fit 255 bytes), then remove that tree. 0, or -errno of the rename.
 */
int rn_logdir_discard(const char *root, const char *name);
/* Its first half: the rename, made durable; the new path in to (for
 * rn_logdir_remove_tree). 0, or -errno of the rename. */
int rn_logdir_retire(const char *root, const char *name, char *to,
    size_t tolen);
/* Remove a directory tree; what cannot be removed is left: 0, or the
 * -errno of the first entry that could not be removed. */
int rn_logdir_remove_tree(const char *path);

#endif /* RN_STORAGE_LOGDIR_H */
