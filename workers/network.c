/*
 * A network worker: one of num.network.threads processes serving the
 * Kafka protocol on the broker listeners, which it inherits from the
 * supervisor already bound.
 */
#include "autoconf.h"

#include "common/log.h"
#include "workers/peer.h"

int
rn_network_main(struct rn_worker *w)
{
	log_info("network worker up");
	return rn_peer_loop(w);
}
