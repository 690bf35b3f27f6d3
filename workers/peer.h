#ifndef RN_PEER_H
#define RN_PEER_H

#include "workers/worker.h"

/* Consume the controller's messages to this worker; -EBADMSG on garbage. */
int rn_peer_drain(struct rn_worker *w);

#endif /* RN_PEER_H */
