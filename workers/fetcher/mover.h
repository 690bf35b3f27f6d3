/*
 * The replica fetcher's other duty: moving replicas between this node's
 * log dirs (AlterReplicaLogDirs), as Kafka's ReplicaAlterLogDirsThread
 * does. Private to workers/fetcher/.
 */
#ifndef RN_FETCHER_MOVER_H
#define RN_FETCHER_MOVER_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/logcopy.h"
#include "workers/replquota.h"

struct rn_worker;
struct rn_mdview;
struct rn_part_table;

struct rn_mover {
	struct rn_worker *w;
	bool active;             /* one move at a time, as Kafka's thread */
	int32_t slot, partition, dest;
	uint8_t id[16];
	uint32_t seq;
	bool asked;              /* caught up: its destination asked for */
	struct rn_logcopy lc;
	int64_t started_ms, caught_ms;
	int64_t next_scan_ms, probe_until_ms, next_probe_ms;
	uint64_t probed_version;
	uint32_t moves_seen;     /* the segment header's request count */
	/* replica.alter.log.dirs.io.max.bytes.per.second, this fetcher's
	 * share */
	struct rn_replquota quota;
};

void rn_mover_init(struct rn_mover *m, struct rn_worker *w);
void rn_mover_free(struct rn_mover *m);

/*
 * One turn of the fetcher's loop: a bounded step of the move under way
 * (or a look for one). True while a move is under way: the loop then
 * does not sleep.
 */
bool rn_mover_turn(struct rn_mover *m, struct rn_part_table *parts,
    const struct rn_mdview *v);

/* Does this fetcher own the partition (its follower replica, its moves)? */
bool rn_fetcher_owns(const struct rn_worker *w, const uint8_t id[16],
    int32_t partition);

#endif /* RN_FETCHER_MOVER_H */
