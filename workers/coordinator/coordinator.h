/* The group coordinator role's entry point, handed to the supervisor. */
#ifndef RN_COORDINATOR_H
#define RN_COORDINATOR_H

struct rn_worker;

int rn_coordinator_main(struct rn_worker *w);

#endif /* RN_COORDINATOR_H */
