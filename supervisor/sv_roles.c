/*
 * The role table: what the supervisor forks. A row is a role's entry
 * point (handed to rn_worker_run, so the worker runtime knows no role),
 * the configuration key that says how many of it run, where it stops in
 * a shutdown, and what it means when its restarts give up. The rows are
 * in slot order (rn_worker_slot_of): the controller, then the network
 * workers, then the replica fetchers, then the log cleaner, then the
 * group coordinator.
 */
#include "autoconf.h"

#include <stddef.h>

#include "common/util.h"
#include "supervisor/sv.h"
#include "workers/cleaner/cleaner.h"
#include "workers/controller/controller.h"
#include "workers/coordinator/coordinator.h"
#include "workers/fetcher/fetcher.h"
#include "workers/network/network.h"

#define SV_ONE ((size_t)-1)

static const struct sv_role roles[] = {
	/*
	 * Stopped last, after the others had their share of the deadline;
	 * without it the node is useless, so when it fails for good the
	 * node stops and systemd restarts it whole.
	 */
	{ RN_ROLE_W_CONTROLLER, "controller", rn_controller_main,
	    NULL, SV_ONE, 2, SV_FAILED_STOPS_NODE, 0 },
	/*
	 * Stopped first: no new client work. Worker 0 also runs the
	 * storage duty: it has every local partition's log at hand.
	 */
	{ RN_ROLE_W_NETWORK, "network", rn_network_main,
	    "num.network.threads", offsetof(struct rn_config,
	    num_network_threads), 0, SV_FAILED_STAYS_DOWN, RN_DUTY_STORAGE },
	{ RN_ROLE_W_FETCHER, "replica-fetcher", rn_fetcher_main,
	    "num.replica.fetchers", offsetof(struct rn_config,
	    num_replica_fetchers), 1, SV_FAILED_STAYS_DOWN, 0 },
	/*
	 * Compaction, in a process of its own so that a crash in it costs
	 * a cleaning redone; one per node, none when log.cleaner.enable is
	 * false (or log.cleaner.threads is 0). Stopped first: it serves no
	 * one and a cleaning cut short is simply redone.
	 */
	{ RN_ROLE_W_CLEANER, "log-cleaner", rn_cleaner_main,
	    "log.cleaner.enable", offsetof(struct rn_config,
	    log_cleaner_workers), 0, SV_FAILED_STAYS_DOWN, 0 },
	/*
	 * One per node: it holds the groups whose __consumer_offsets
	 * partitions this node leads and rebuilds them from the log after
	 * a restart. Stopped with the network workers (no new group work).
	 * When its restarts give up it stays down like a network worker:
	 * produce and fetch go on, and groups get COORDINATOR_NOT_AVAILABLE
	 * instead of the node stopping.
	 */
	{ RN_ROLE_W_COORDINATOR, "group-coordinator", rn_coordinator_main,
	    NULL, SV_ONE, 0, SV_FAILED_STAYS_DOWN, 0 },
};

const struct sv_role *
sv_roles(size_t *n)
{
	*n = RN_ARRAY_SIZE(roles);
	return roles;
}

const struct sv_role *
sv_role_of(enum rn_worker_role role)
{
	size_t i;

	for (i = 0; i < RN_ARRAY_SIZE(roles); i++)
		if (roles[i].role == role)
			return &roles[i];
	return NULL;
}

unsigned
sv_role_count(const struct sv_role *r, const struct rn_config *cfg)
{
	if (r->count_off == SV_ONE)
		return 1;
	return (unsigned)*(const int *)(const void *)
	    ((const char *)cfg + r->count_off);
}
