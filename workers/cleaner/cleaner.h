/*
 * The log cleaner role: one process per node (log.cleaner.enable) that
 * compacts the local replicas of topics with cleanup.policy=compact.
 * The entry point the supervisor hands to rn_worker_run(); the rest
 * of the role is private to workers/cleaner/.
 */
#ifndef RN_CLEANER_H
#define RN_CLEANER_H

struct rn_worker;

/* Runs the role until asked to stop; returns the exit status. */
int rn_cleaner_main(struct rn_worker *w);

#endif /* RN_CLEANER_H */
