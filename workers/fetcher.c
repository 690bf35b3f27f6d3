/*
 * A replica-fetcher worker: one of num.replica.fetchers processes that
 * fetch from partition leaders for this node's follower replicas.
 */
#include "autoconf.h"

#include "common/log.h"
#include "workers/peer.h"

int
rn_fetcher_main(struct rn_worker *w)
{
	log_info("replica fetcher up");
	return rn_peer_loop(w);
}
