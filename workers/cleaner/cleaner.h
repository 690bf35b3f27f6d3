/*
 * The log cleaner role: one process per node (log.cleaner.enable) that
 * compacts the local replicas of topics with cleanup.policy=compact.
 */
#ifndef RN_CLEANER_H
#define RN_CLEANER_H

#include "workers/worker.h"

int rn_cleaner_main(struct rn_worker *w);

#endif /* RN_CLEANER_H */
