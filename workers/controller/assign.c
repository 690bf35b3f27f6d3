#include "autoconf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "common/placement.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"
#include "workers/controller/raft.h"

#define op_msg ctl_op_msg

/* ---- placing the replicas of an operation's new partitions ---------- */

/*
 * The ids of the registered brokers (only the unfenced, staying ones when
 * live), by id, in the op's arena (however many the cluster has). NULL:
 * no memory.
 */
static int32_t *
place_brokers(struct ctl_op *op, bool live, int *n)
{
	const struct ctl_state *st = &op->c->st;
	int32_t *ids;
	int i;

	*n = 0;
	if ((ids = rn_arena_alloc(&op->arena, sizeof(*ids) *
	    (size_t)(st->n_brokers > 0 ? st->n_brokers : 1))) == NULL)
		return NULL;
	for (i = 0; i < st->n_brokers; i++)
		if (!live || (!st->brokers[i].fenced &&
		    !st->brokers[i].in_controlled_shutdown))
			ids[(*n)++] = st->brokers[i].id;
	return ids;
}

/* Brokers that may take new replicas: registered, unfenced, staying. */
int32_t *
ctl_place_live_brokers(struct ctl_op *op, int *n)
{
	return place_brokers(op, true, n);
}

static int
rand_below(int n)
{
	uint8_t raw[16];
	uint32_t v;

	if (n <= 1 || ctl_uuid_random(raw) != 0)
		return 0;
	memcpy(&v, raw, sizeof(v));
	return (int)(v % (uint32_t)n);
}

/*
 * Log dir per new replica: the broker's registered dir holding the fewest
 * replicas, counting the ones this operation already placed.
 */
struct ctl_dirload {
	int32_t broker;
	int n;
	int count[RN_CONFIG_MAX_LOGDIRS];
};

void
ctl_place_dir(struct ctl_placer *pl, int32_t broker, uint8_t out[16])
{
	const struct ctl_broker *b = ctl_state_broker(pl->st, broker);
	struct ctl_dirload *dl = NULL;
	int i, best = 0;

	memset(out, 0, 16);
	if (b == NULL || b->n_log_dirs == 0)
		return; /* unknown: the broker chooses (Uuid zero) */
	for (i = 0; i < pl->n; i++)
		if (pl->loads[i].broker == broker)
			dl = &pl->loads[i];
	if (dl == NULL && pl->n == pl->cap) {
		int cap = pl->cap ? 2 * pl->cap : 16;
		struct ctl_dirload *nl = rn_arena_alloc(pl->arena,
		    sizeof(*nl) * (size_t)cap);

		if (nl == NULL) {
			memcpy(out, b->log_dirs[0], 16);
			return;
		}
		if (pl->n > 0)
			memcpy(nl, pl->loads, sizeof(*nl) * (size_t)pl->n);
		pl->loads = nl;
		pl->cap = cap;
	}
	if (dl == NULL) {
		dl = &pl->loads[pl->n++];
		dl->broker = broker;
		dl->n = b->n_log_dirs < RN_CONFIG_MAX_LOGDIRS ? b->n_log_dirs :
		    RN_CONFIG_MAX_LOGDIRS;
		for (i = 0; i < dl->n; i++)
			dl->count[i] = ctl_state_dir_load(pl->st, broker,
			    b->log_dirs[i]);
	}
	for (i = 1; i < dl->n; i++)
		if (dl->count[i] < dl->count[best])
			best = i;
	dl->count[best]++;
	memcpy(out, b->log_dirs[best], 16);
}

/*
 * One new partition's record: leader = first live replica, ISR = the
 * live replicas (callers made sure there is one). Its line is the first
 * of the partition's history in the log, as Kafka's "Created partition".
 */
void
ctl_place_record(struct ctl_batch *b, struct ctl_placer *pl,
    const char *topic, const uint8_t tid[16], int32_t p,
    const int32_t *replicas, int32_t rf)
{
	struct ctl_partition part;
	uint8_t dirs[64][16];
	int32_t i, isr[64], n_isr = 0;
	char rs[256], is[256];

	for (i = 0; i < rf && i < 64; i++)
		if (ctl_broker_state((void *)pl->st, replicas[i]) == CTL_B_UP)
			isr[n_isr++] = replicas[i];
	memset(&part, 0, sizeof(part));
	part.n_replicas = rf;
	part.replicas = (int32_t *)replicas;
	part.n_isr = n_isr;
	part.isr = isr;
	part.leader = n_isr > 0 ? isr[0] : -1;
	part.leader_epoch = 0;
	part.partition_epoch = 0;
	for (i = 0; i < rf && i < 64; i++)
		ctl_place_dir(pl, replicas[i], dirs[i]);
	part.dirs = dirs;
	ctl_rec_partition(b, tid, p, &part, false);
	ctl_ids_str(replicas, rf, rs, sizeof(rs));
	ctl_ids_str(isr, n_isr, is, sizeof(is));
	rn_log_about(LOG_INFO, rn_subj_part(topic, p), "%s-%d: created: "
	    "replicas [%s], leader %d, ISR [%s]", topic, p, rs, part.leader,
	    is);
}

/* Kafka's checks of a manual assignment; 0 or an error code with msg. */
int16_t
ctl_place_check_manual(struct ctl_op *op, const struct ctl_state *st,
    const int32_t *ids, int32_t n, int32_t want_rf, struct rn_kstr *msg)
{
	int32_t i, j;

	if (n == 0) {
		*msg = op_msg(op, "The manual partition assignment includes an "
		    "empty replica list.");
		return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	for (i = 0; i < n; i++) {
		if (ctl_state_broker(st, ids[i]) == NULL) {
			*msg = op_msg(op, "The manual partition assignment "
			    "includes broker %d, but no such broker is "
			    "registered.", ids[i]);
			return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
		}
		for (j = 0; j < i; j++)
			if (ids[j] == ids[i]) {
				*msg = op_msg(op, "The manual partition "
				    "assignment includes the broker %d more "
				    "than once.", ids[i]);
				return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
			}
	}
	if (want_rf > 0 && n != want_rf) {
		*msg = op_msg(op, "The manual partition assignment includes a "
		    "partition with %d replica(s), but this is not consistent "
		    "with previous partitions, which have %d replica(s).", n,
		    want_rf);
		return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	for (i = 0; i < n; i++)
		if (ctl_broker_state((void *)st, ids[i]) == CTL_B_UP)
			return 0;
	*msg = op_msg(op, "All brokers specified in the manual partition "
	    "assignment are fenced or in controlled shutdown.");
	return RN_KERR_INVALID_REPLICA_ASSIGNMENT;
}

/*
 * This node holds its replicas in shared-memory slots (shm.max.partitions
 * of them): refuse what would not fit rather than create partitions it
 * cannot serve. Other brokers' limits are theirs to report.
 */
int16_t
ctl_place_check_slots(struct ctl_op *op, const int32_t *replicas, int32_t n,
    struct rn_kstr *msg)
{
	const struct ctl_state *st = &op->c->st;
	int32_t node = op->c->cfg->node_id, i, p, r;
	uint32_t max = op->c->shm->hdr->max_partitions;
	int used = 0, add = 0, k;

	for (i = 0; i < n; i++)
		if (replicas[i] == node)
			add++;
	if (add == 0)
		return 0;
	/* counted once per operation: it may create thousands of topics */
	if (op->local_used < 0) {
		op->local_used = 0;
		for (k = 0; k < st->n_topics; k++)
			for (p = 0; p < st->topics[k]->n_parts; p++)
				for (r = 0; r < st->topics[k]->parts[p].
				    n_replicas; r++)
					if (st->topics[k]->parts[p].
					    replicas[r] == node)
						op->local_used++;
	}
	used = op->local_used;
	if ((uint32_t)(used + op->local_added + add) > max) {
		*msg = op_msg(op, "Broker %d can hold %u partitions "
		    "(shm.max.partitions) and has %d: no room for %d more.",
		    node, max, used + op->local_added, add);
		return RN_KERR_POLICY_VIOLATION;
	}
	op->local_added += add;
	return 0;
}

int16_t
ctl_place_rf_unreachable(struct ctl_op *op, int32_t rf, int live,
    struct rn_kstr *msg)
{
	if (live == 0)
		*msg = op_msg(op, "Unable to replicate the partition %d time(s): "
		    "All brokers are currently fenced.", rf);
	else
		*msg = op_msg(op, "Unable to replicate the partition %d time(s): "
		    "The target replication factor of %d cannot be reached "
		    "because only %d broker(s) are registered.", rf, rf, live);
	return RN_KERR_INVALID_REPLICATION_FACTOR;
}

/*
 * Automatic placement over brokers: rack-aware when every one of them has
 * a rack (absent brokers keep the rack they registered with), else
 * rack-unaware; start index and shift as given.
 */
int
ctl_place_auto_at(const struct ctl_state *st, const int32_t *brokers, int n,
    int32_t np, int32_t rf, int32_t start_partition, int start_index,
    int shift, int32_t *out)
{
	const char **racks;
	int i, rc;

	if ((racks = calloc((size_t)(n > 0 ? n : 1), sizeof(*racks))) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct ctl_broker *b = ctl_state_broker(st, brokers[i]);

		if (b == NULL || b->rack[0] == '\0')
			break;
		racks[i] = b->rack;
	}
	if (i == n && n > 0)
		rc = rn_assign_rack_aware(brokers, racks, n, np, rf,
		    start_index, shift, start_partition, out);
	else
		rc = rn_assign_rack_unaware(brokers, n, np, rf, start_index,
		    shift, start_partition, out);
	free(racks);
	return rc;
}

/* The same with a random start index and shift, as Kafka draws them. */
int
ctl_place_auto(const struct ctl_state *st, const int32_t *brokers, int live,
    int32_t np, int32_t rf, int32_t start_partition, int32_t *out)
{
	return ctl_place_auto_at(st, brokers, live, np, rf, start_partition,
	    rand_below(live), rand_below(live), out);
}

/* ---- under-replicated creation over the observed brokers (seed 000) -- */

/* True when each of the np partitions in out has a live replica. */
static bool
each_has_live(const struct ctl_state *st, const int32_t *out, int32_t np,
    int32_t rf)
{
	int32_t i, j;

	for (i = 0; i < np; i++) {
		for (j = 0; j < rf; j++)
			if (ctl_broker_state((void *)st, out[i * rf + j]) ==
			    CTL_B_UP)
				break;
		if (j == rf)
			return false;
	}
	return true;
}

/*
 * Over the observed brokers: the random start index first, then the next
 * ones, until every partition has a live replica to lead it.
 */
static int16_t
place_observed(struct ctl_op *op, int32_t np, int32_t rf, int32_t start,
    int32_t *out, struct rn_kstr *msg)
{
	const struct ctl_state *st = &op->c->st;
	int32_t *ids;
	int n, first, shift, k;

	if ((ids = place_brokers(op, false, &n)) == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	first = rand_below(n);
	shift = rand_below(n);
	for (k = 0; k < n; k++) {
		if (ctl_place_auto_at(st, ids, n, np, rf, start,
		    (first + k) % n, shift, out) != 0)
			return RN_KERR_UNKNOWN_SERVER_ERROR;
		if (each_has_live(st, out, np, rf))
			return 0;
	}
	*msg = op_msg(op, "No placement of %d replicas over the %d observed "
	    "brokers gives every partition a live broker.", rf, n);
	return RN_KERR_INVALID_REPLICATION_FACTOR;
}

/*
 * Automatic placement of np new partitions from start with rf replicas
 * each: over the live brokers when there are rf of them (Kafka's rule);
 * else, with enable.under.replicated.topic.creation, over the observed
 * brokers, provided min_isr brokers are live. 0 or an error with msg.
 */
int16_t
ctl_place_new(struct ctl_op *op, int32_t np, int32_t rf, int32_t start,
    int min_isr, int32_t *out, struct rn_kstr *msg)
{
	int32_t *live_ids;
	int live, observed = op->c->st.n_brokers;

	if ((live_ids = ctl_place_live_brokers(op, &live)) == NULL)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	if (rf <= live) {
		if (ctl_place_auto(&op->c->st, live_ids, live, np, rf, start,
		    out) != 0)
			return RN_KERR_UNKNOWN_SERVER_ERROR;
		return 0;
	}
	if (!op->c->cfg->under_replicated_creation)
		return ctl_place_rf_unreachable(op, rf, live, msg);
	if (rf > observed)
		return ctl_place_rf_unreachable(op, rf, observed, msg);
	if (live < min_isr || live == 0) {
		*msg = op_msg(op, "%d replicas need at least %d live brokers "
		    "(min.insync.replicas=%d); %d live", rf, min_isr, min_isr,
		    live);
		return RN_KERR_INVALID_REPLICATION_FACTOR;
	}
	return place_observed(op, np, rf, start, out, msg);
}
