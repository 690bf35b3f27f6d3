/*
 * The network worker: the Kafka protocol on the broker listeners.
 * The entry point the supervisor hands to rn_worker_run(); the rest
 * of the role is private to workers/network/.
 */
#ifndef RN_NETWORK_H
#define RN_NETWORK_H

struct rn_worker;

/* Runs the role until asked to stop; returns the exit status. */
int rn_network_main(struct rn_worker *w);

#endif /* RN_NETWORK_H */
