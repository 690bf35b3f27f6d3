/*
 * The metrics region: a worker array, then a partition array. Zero bytes
 * are its empty state, so it needs no init and unused partition slots
 * back no memory.
 */
#include "autoconf.h"

#include "ipc/metrics.h"
#include "ipc/shm.h"

size_t
rn_metrics_shm_size(const struct rn_shm_params *p)
{
	return (size_t)p->n_workers * sizeof(struct rn_met_worker) +
	    (size_t)p->max_partitions * sizeof(struct rn_met_part);
}

struct rn_met_worker *
rn_metrics_worker(const struct rn_shm *shm, unsigned slot)
{
	return (struct rn_met_worker *)rn_shm_metrics(shm) + slot;
}

struct rn_met_part *
rn_metrics_part(const struct rn_shm *shm, unsigned slot)
{
	struct rn_met_worker *w = rn_shm_metrics(shm);

	return (struct rn_met_part *)(w + shm->hdr->n_workers) + slot;
}
