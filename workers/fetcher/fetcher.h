/*
 * The replica-fetcher worker: follower replicas fetched from their leaders.
 * The entry point the supervisor hands to rn_worker_run(); the rest
 * of the role is private to workers/fetcher/.
 */
#ifndef RN_FETCHER_H
#define RN_FETCHER_H

struct rn_worker;

/* Runs the role until asked to stop; returns the exit status. */
int rn_fetcher_main(struct rn_worker *w);

#endif /* RN_FETCHER_H */
