/*
 * Log directories in the metadata (KIP-858). Every Partition record
 * carries one directory id per replica. The controller places a new
 * replica on the least loaded directory its broker registered
 * (assign.c); here:
 *
 *  - a registration that no longer lists a directory holding replicas
 *    of that broker (removed from log.dirs) sets them to Uuid.ZERO,
 *    "the broker chooses";
 *  - AssignReplicasToDirs records where a broker says a replica is;
 *  - the broker side: the replicas whose recorded directory is not where
 *    this node keeps them (ZERO or a directory it does not have; it keeps
 *    those in its first log dir, see ctl_state_local_placement), counted
 *    as Kafka's NumMismatchingReplicaToLogDirAssignments and reported.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/controller/offline_dirs.h"
#include "workers/controller/op.h"
#include "workers/partition/dirfail.h"
#include "workers/partition/partition.h"

/* Kafka's DirectoryId.UNASSIGNED (ZERO) */
static const uint8_t dir_zero[16];

static bool
dir_listed(const uint8_t (*dirs)[16], int n, const uint8_t d[16])
{
	int i;

	for (i = 0; i < n; i++)
		if (memcmp(dirs[i], d, 16) == 0)
			return true;
	return false;
}

/* A Partition record like pp but with broker's replica in dir. */
static void
rec_dir(struct ctl_batch *b, const struct ctl_topic *t, int32_t p,
    int32_t r, const uint8_t dir[16])
{
	const struct ctl_partition *pp = &t->parts[p];
	struct ctl_partition np = *pp;
	uint8_t dirs[CTL_MAX_RF][16];

	if (pp->n_replicas > CTL_MAX_RF)
		return;
	memcpy(dirs, pp->dirs, 16 * (size_t)pp->n_replicas);
	memcpy(dirs[r], dir, 16);
	np.dirs = dirs;
	/* directories are not part of the ISR protocol: the partition
	 * epoch stays, so no AlterPartition in flight is refused for it */
	ctl_rec_partition(b, t->id, p, &np, false);
}

int
ctl_dirs_unassign_missing(struct ctl_batch *b, const struct ctl_state *st,
    const struct ctl_broker *nb)
{
	int i, n = 0;
	int32_t p, r;

	for (i = 0; i < st->n_topics; i++) {
		const struct ctl_topic *t = st->topics[i];

		for (p = 0; p < t->n_parts; p++) {
			const struct ctl_partition *pp = &t->parts[p];

			if ((r = ctl_replica_index(pp, nb->id)) < 0 ||
			    memcmp(pp->dirs[r], dir_zero, 16) == 0 ||
			    dir_listed((const uint8_t (*)[16])nb->log_dirs,
			    nb->n_log_dirs, pp->dirs[r]))
				continue;
			rec_dir(b, t, p, r, dir_zero);
			n++;
		}
	}
	if (n > 0)
		rn_log_about(LOG_INFO, rn_subj_broker(nb->id), "broker %d no "
		    "longer registers the log dir of %d of its replicas: they "
		    "are unassigned (Uuid.ZERO) until it reports where it "
		    "keeps them", nb->id, n);
	return n;
}

/* ---- AssignReplicasToDirs (controller) --------------------------- */

static int16_t
assign_one(struct ctl_op *op, const struct ctl_broker *b,
    const uint8_t dir[16], const struct ctl_topic *t, int32_t p)
{
	const struct ctl_partition *pp;
	int32_t r;

	if (t == NULL)
		return RN_KERR_UNKNOWN_TOPIC_ID;
	if (p < 0 || p >= t->n_parts)
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	pp = &t->parts[p];
	if ((r = ctl_replica_index(pp, b->id)) < 0)
		return RN_KERR_NOT_LEADER_OR_FOLLOWER;
	if (memcmp(dir, dir_zero, 16) != 0 && !dir_listed(
	    (const uint8_t (*)[16])b->log_dirs, b->n_log_dirs, dir))
		return RN_KERR_INVALID_REQUEST;
	if (memcmp(pp->dirs[r], dir, 16) != 0)
		rec_dir(&op->batch, t, p, r, dir);
	return 0;
}

/* The response mirrors the request, with one error per partition. */
static int
assign_dir(struct ctl_op *op, const struct ctl_broker *b,
    const struct rn_AssignReplicasToDirsRequest_DirectoryData *dd,
    struct rn_AssignReplicasToDirsResponse_DirectoryData *od)
{
	int32_t i, k;

	rn_AssignReplicasToDirsResponse_DirectoryData_init(od);
	od->id = dd->id;
	od->topics_count = dd->topics_count;
	if (dd->topics_count > 0 && (od->topics = rn_arena_alloc(&op->arena,
	    sizeof(*od->topics) * (size_t)dd->topics_count)) == NULL)
		return -ENOMEM;
	for (i = 0; i < dd->topics_count; i++) {
		const struct rn_AssignReplicasToDirsRequest_TopicData *td =
		    &dd->topics[i];
		struct rn_AssignReplicasToDirsResponse_TopicData *ot =
		    &od->topics[i];
		const struct ctl_topic *t = ctl_state_topic_by_id(&op->c->st,
		    td->topic_id.b);

		rn_AssignReplicasToDirsResponse_TopicData_init(ot);
		ot->topic_id = td->topic_id;
		ot->partitions_count = td->partitions_count;
		if (td->partitions_count > 0 && (ot->partitions =
		    rn_arena_alloc(&op->arena, sizeof(*ot->partitions) *
		    (size_t)td->partitions_count)) == NULL)
			return -ENOMEM;
		for (k = 0; k < td->partitions_count; k++) {
			rn_AssignReplicasToDirsResponse_PartitionData_init(
			    &ot->partitions[k]);
			ot->partitions[k].partition_index =
			    td->partitions[k].partition_index;
			ot->partitions[k].error_code = assign_one(op, b,
			    dd->id.b, t, td->partitions[k].partition_index);
		}
	}
	return 0;
}

int
ctl_op_assign_replicas_to_dirs(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_AssignReplicasToDirsRequest req;
	struct rn_AssignReplicasToDirsResponse *resp = &op->resp.ard;
	const struct ctl_broker *b;
	int32_t i;
	int rc;

	if ((rc = rn_AssignReplicasToDirsRequest_decode(r, op->ver,
	    &op->arena, &req)) != 0)
		return rc;
	rn_AssignReplicasToDirsResponse_init(resp);
	op->broker = req.broker_id;
	if ((b = ctl_state_broker(&op->c->st, req.broker_id)) == NULL) {
		resp->error_code = RN_KERR_BROKER_ID_NOT_REGISTERED;
		return 0;
	}
	if (req.broker_epoch != b->epoch) {
		resp->error_code = RN_KERR_STALE_BROKER_EPOCH;
		return 0;
	}
	resp->directories_count = req.directories_count;
	if (req.directories_count > 0 && (resp->directories = rn_arena_alloc(
	    &op->arena, sizeof(*resp->directories) *
	    (size_t)req.directories_count)) == NULL)
		return -ENOMEM;
	for (i = 0; i < req.directories_count; i++)
		if ((rc = assign_dir(op, b, &req.directories[i],
		    &resp->directories[i])) != 0)
			return rc;
	return 0;
}

/* ---- the broker side ---------------------------------------------- */

/*
 * Is this node's replica r of pp one to report where it is kept? Not
 * when its directory is known here, and not when it is LOST while a dir
 * of this incarnation is offline: that replica stays down until the
 * broker restarts with the dir healthy (reporting it would put an empty
 * log in its place, served as if it were the partition).
 */
static bool
dir_mismatched(const struct ctl *c, const struct ctl_partition *pp,
    int32_t r)
{
	if (dir_listed((const uint8_t (*)[16])c->dir_ids, c->n_dirs,
	    pp->dirs[r]))
		return false;
	return !(ctl_dir_is_lost(pp->dirs[r]) &&
	    rn_dirfail_mask(c->shm) != 0);
}

int
ctl_dirs_mismatches(const struct ctl *c)
{
	const struct ctl_state *st = &c->st;
	int i, n = 0;
	int32_t p, r;

	for (i = 0; i < st->n_topics; i++) {
		const struct ctl_topic *t = st->topics[i];

		for (p = 0; p < t->n_parts; p++)
			if ((r = ctl_replica_index(&t->parts[p],
			    c->cfg->node_id)) >= 0 &&
			    dir_mismatched(c, &t->parts[p], r))
				n++;
	}
	return n;
}

/*
 * The dir to report for this node's replica r of (t, p): the one its slot
 * wants recorded (a move between dirs, a log found elsewhere than the
 * metadata has it: workers/partition/move.c), else this node's first log
 * dir for a mismatching one (where the image places a replica whose
 * directory is unknown here), else none (-1).
 */
static int
report_dir(const struct ctl *c, const struct ctl_topic *t, int32_t p,
    int32_t r)
{
	const struct ctl_partition *pp = &t->parts[p];
	int32_t w = rn_part_slot_dir_wanted(c->shm, pp->slots[r], t->id, p);

	if (w >= 0 && w < c->n_dirs)
		return memcmp(pp->dirs[r], c->dir_ids[w], 16) != 0 ? w : -1;
	return dir_mismatched(c, pp, r) ? 0 : -1;
}

int
ctl_dirs_wanted(const struct ctl *c)
{
	const struct ctl_state *st = &c->st;
	int i, n = 0;
	int32_t p, r, w;

	for (i = 0; i < st->n_topics; i++) {
		const struct ctl_topic *t = st->topics[i];

		for (p = 0; p < t->n_parts; p++) {
			const struct ctl_partition *pp = &t->parts[p];

			if ((r = ctl_replica_index(pp, c->cfg->node_id)) < 0 ||
			    (w = rn_part_slot_dir_wanted(c->shm, pp->slots[r],
			    t->id, p)) < 0 || w >= c->n_dirs)
				continue;
			if (memcmp(pp->dirs[r], c->dir_ids[w], 16) == 0)
				/* recorded: nothing more to say */
				rn_part_slot_dir_recorded(c->shm, pp->slots[r],
				    t->id, p, w);
			else
				n++;
		}
	}
	return n;
}

/*
 * The report of up to max replicas: each under the dir it is to be
 * recorded in (one DirectoryData per dir of this node that has some).
 */
int
ctl_dirs_report(const struct ctl *c, int64_t epoch, struct rn_arena *ar,
    int max, struct rn_AssignReplicasToDirsRequest *req)
{
	const struct ctl_state *st = &c->st;
	struct rn_AssignReplicasToDirsRequest_DirectoryData *dd;
	int i, d, k, n = 0;
	int32_t p, r;

	rn_AssignReplicasToDirsRequest_init(req);
	req->broker_id = c->cfg->node_id;
	req->broker_epoch = epoch;
	if (c->n_dirs == 0 || (dd = rn_arena_alloc(ar, sizeof(*dd) *
	    (size_t)c->n_dirs)) == NULL)
		return 0;
	for (d = 0; d < c->n_dirs; d++) {
		rn_AssignReplicasToDirsRequest_DirectoryData_init(&dd[d]);
		memcpy(dd[d].id.b, c->dir_ids[d], 16);
	}
	/* out of arena: what is filled goes, the rest in the next report */
	for (i = 0; i < st->n_topics && n < max; i++) {
		const struct ctl_topic *t = st->topics[i];

		for (p = 0; p < t->n_parts && n < max; p++) {
			struct rn_AssignReplicasToDirsRequest_TopicData *td;

			if ((r = ctl_replica_index(&t->parts[p],
			    c->cfg->node_id)) < 0 ||
			    (d = report_dir(c, t, p, r)) < 0)
				continue;
			if (dd[d].topics == NULL && (dd[d].topics =
			    rn_arena_alloc(ar, sizeof(*dd[d].topics) *
			    (size_t)st->n_topics)) == NULL)
				goto out;
			td = &dd[d].topics[dd[d].topics_count > 0 ?
			    dd[d].topics_count - 1 : 0];
			if (dd[d].topics_count == 0 ||
			    memcmp(td->topic_id.b, t->id, 16) != 0) {
				td = &dd[d].topics[dd[d].topics_count++];
				rn_AssignReplicasToDirsRequest_TopicData_init(
				    td);
				memcpy(td->topic_id.b, t->id, 16);
				if ((td->partitions = rn_arena_alloc(ar,
				    sizeof(*td->partitions) *
				    (size_t)t->n_parts)) == NULL) {
					dd[d].topics_count--;
					goto out;
				}
			}
			rn_AssignReplicasToDirsRequest_PartitionData_init(
			    &td->partitions[td->partitions_count]);
			td->partitions[td->partitions_count++].partition_index =
			    p;
			n++;
		}
	}
out:
	/* only the dirs with something to say */
	for (d = 0, k = 0; d < c->n_dirs; d++)
		if (dd[d].topics_count > 0)
			dd[k++] = dd[d];
	req->directories = dd;
	req->directories_count = k;
	return n;
}
