/*
 * The controller worker: the metadata quorum, the only writer of the metadata
 * image, the admin APIs.
 * The entry point the supervisor hands to rn_worker_run(); the rest
 * of the role is private to workers/controller/.
 */
#ifndef RN_CONTROLLER_H
#define RN_CONTROLLER_H

struct rn_worker;

/* Runs the role until asked to stop; returns the exit status. */
int rn_controller_main(struct rn_worker *w);

#endif /* RN_CONTROLLER_H */
