/*
 * Offline log dirs in the metadata, as KRaft handles a broker's failed
 * dirs: a heartbeat naming them makes the active controller mark that
 * broker's replicas in them with Kafka's DirectoryId.LOST (the Partition
 * record's directories), take them out of the ISR and move leadership
 * to another ISR member. Such a replica counts as offline in the image
 * and cannot join the ISR again; it comes back when it is placed again.
 */
#ifndef RN_CTL_OFFLINE_DIRS_H
#define RN_CTL_OFFLINE_DIRS_H

#include <stdbool.h>
#include <stdint.h>

#include "workers/controller/state.h"

struct ctl;
struct ctl_batch;
struct rn_uuid;

/* Kafka's DirectoryId.LOST: Uuid(0, 1). */
extern const uint8_t ctl_dir_lost[16];

bool ctl_dir_is_lost(const uint8_t dir[16]);

/* Is broker's replica of pp in a lost dir? */
bool ctl_replica_lost(const struct ctl_partition *pp, int32_t broker);

/*
 * The records that take broker's replicas in the n dirs offline (those
 * not lost already) into b. Returns how many replicas it marked.
 */
int ctl_dirs_offline(struct ctl *c, struct ctl_batch *b, int32_t broker,
    const struct rn_uuid *dirs, int n);

#endif /* RN_CTL_OFFLINE_DIRS_H */
