/*
 * DescribeLogDirs: this broker's log directories (capacity from statvfs)
 * and the local replicas in each (the dir its slot says the log is in,
 * else the image's), with their size and offset lag, and the future
 * replicas of moves under way. Replicas of the request's topics only, or
 * all. AlterReplicaLogDirs: moves recorded in the partitions' slots for
 * the replica fetchers to carry out (workers/partition/move.c).
 */
#include "autoconf.h"

#include <sys/statvfs.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "protocol/kerrors.h"
#include "storage/log.h"
#include "workers/network/net_int.h"
#include "workers/partition/dirfail.h"

struct replica_size {
	int64_t size, leo;
};

static int
replica_size(struct rn_log *log, void *arg)
{
	struct replica_size *rs = arg;

	rs->size = rn_log_size_bytes(log);
	rs->leo = rn_log_end_offset(log);
	return 0;
}

static bool
wanted(const struct rn_DescribeLogDirsRequest *req,
    const struct rn_mdv_topic *t, int32_t p)
{
	int32_t i, k;

	if (req->topics_count < 0)
		return true;
	for (i = 0; i < req->topics_count; i++) {
		const struct rn_DescribeLogDirsRequest_DescribableLogDirTopic
		    *dt = &req->topics[i];

		if ((size_t)dt->topic.len != t->name_len ||
		    memcmp(dt->topic.ptr, t->name, t->name_len) != 0)
			continue;
		for (k = 0; k < dt->partitions_count; k++)
			if (dt->partitions[k] == p)
				return true;
	}
	return false;
}

/* One local replica: size, and (as Kafka) the high watermark less the
 * log end offset, never below zero. */
static void
fill_partition(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp,
    struct rn_DescribeLogDirsResponse_DescribeLogDirsPartition *o)
{
	struct replica_size rs = { 0, 0 };
	struct rn_part *pt;
	int16_t kerr;
	int64_t hw;

	rn_DescribeLogDirsResponse_DescribeLogDirsPartition_init(o);
	o->partition_index = mp->p;
	/* a replica nobody used has no log yet: asking must not create one */
	if (!net_part_exists(n, t, mp) || (pt = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) == NULL ||
	    rn_part_locked(pt, replica_size, &rs) != 0)
		return;
	hw = rn_part_hw(pt);
	o->partition_size = rs.size > 0 ? rs.size : 0;
	o->offset_lag = hw > rs.leo ? hw - rs.leo : 0;
}

/* A future replica: its bytes so far, and (as Kafka) how far behind the
 * current replica's log end it is. */
static void
fill_future(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp, const struct rn_part_move_info *mi,
    struct rn_DescribeLogDirsResponse_DescribeLogDirsPartition *o)
{
	struct rn_part *pt;
	int16_t kerr;
	int64_t leo;

	rn_DescribeLogDirsResponse_DescribeLogDirsPartition_init(o);
	o->partition_index = mp->p;
	o->is_future_key = true;
	o->partition_size = mi->size;
	if ((pt = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) != NULL &&
	    (leo = rn_log_end_offset(pt->log)) > mi->end)
		o->offset_lag = leo - mi->end;
}

static int
fill_topic(struct net *n, struct conn *c,
    const struct rn_DescribeLogDirsRequest *req, int dir,
    const struct rn_mdv_topic *t,
    struct rn_DescribeLogDirsResponse_DescribeLogDirsTopic *o)
{
	const struct rn_shm *shm = n->w->env->shm;
	int32_t i, cur;

	rn_DescribeLogDirsResponse_DescribeLogDirsTopic_init(o);
	o->name = (struct rn_kstr){ t->name, (int32_t)t->name_len };
	/* a replica and its future one */
	if ((o->partitions = net_array(c, 2 * t->n_parts,
	    sizeof(*o->partitions))) == NULL)
		return -ENOMEM;
	for (i = 0; i < t->n_parts; i++) {
		const struct rn_mdv_partition *mp = &t->parts[i];
		struct rn_part_move_info mi;

		if (mp->slot < 0 || !wanted(req, t, mp->p))
			continue;
		if ((cur = rn_part_slot_dir(shm, mp->slot, t->id, mp->p)) < 0)
			cur = mp->dir;
		if (cur == dir)
			fill_partition(n, t, mp,
			    &o->partitions[o->partitions_count++]);
		if (rn_part_slot_move(shm, mp->slot, t->id, mp->p, &mi) &&
		    mi.dest == dir)
			fill_future(n, t, mp, &mi,
			    &o->partitions[o->partitions_count++]);
	}
	return 0;
}

static int
fill_dir(struct net *n, struct conn *c,
    const struct rn_DescribeLogDirsRequest *req, int dir,
    struct rn_DescribeLogDirsResponse_DescribeLogDirsResult *o)
{
	const struct rn_mdview *v = &n->view;
	const char *path = n->cfg->log_dirs[dir];
	struct statvfs sv;
	int i, rc;

	rn_DescribeLogDirsResponse_DescribeLogDirsResult_init(o);
	o->log_dir = rn_kstr_c(path);
	if (statvfs(path, &sv) == 0) {
		o->total_bytes = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
		o->usable_bytes = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	} else
		o->error_code = RN_KERR_KAFKA_STORAGE_ERROR;
	if ((o->topics = net_array(c, v->n_topics, sizeof(*o->topics))) ==
	    NULL)
		return -ENOMEM;
	for (i = 0; i < v->n_topics; i++) {
		struct rn_DescribeLogDirsResponse_DescribeLogDirsTopic *ot =
		    &o->topics[o->topics_count];

		if ((rc = fill_topic(n, c, req, dir, &v->topics[i], ot)) != 0)
			return rc;
		if (ot->partitions_count > 0)
			o->topics_count++;
	}
	return 0;
}

int
net_describe_log_dirs(struct net *n, struct conn *c)
{
	const struct rn_DescribeLogDirsRequest *req = c->req;
	struct rn_DescribeLogDirsResponse r;
	int i, rc;

	rn_DescribeLogDirsResponse_init(&r);
	/* DESCRIBE on the cluster; before v3 a refusal is an empty answer */
	if (!net_authorized_cluster(n, c, RN_ACL_OP_DESCRIBE)) {
		r.error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		return net_respond(n, c, &r);
	}
	if ((r.results = net_array(c, n->cfg->n_log_dirs,
	    sizeof(*r.results))) == NULL)
		return -ENOMEM;
	for (i = 0; i < n->cfg->n_log_dirs; i++)
		if ((rc = fill_dir(n, c, req, i, &r.results[i])) != 0)
			return rc;
	r.results_count = n->cfg->n_log_dirs;
	return net_respond(n, c, &r);
}

/* ---- AlterReplicaLogDirs ------------------------------------------- */

/* The index in log.dirs of a path, as given or with trailing slashes. */
static int
dir_index(const struct net *n, struct rn_kstr path)
{
	size_t len = path.len > 0 ? (size_t)path.len : 0;
	int i;

	while (len > 1 && path.ptr[len - 1] == '/')
		len--;
	for (i = 0; i < n->cfg->n_log_dirs; i++) {
		const char *d = n->cfg->log_dirs[i];
		size_t dl = strlen(d);

		while (dl > 1 && d[dl - 1] == '/')
			dl--;
		if (dl == len && memcmp(d, path.ptr, len) == 0)
			return i;
	}
	return -1;
}

/* One partition to dir d; Kafka's errors (ReplicaManager.alterReplicaLogDirs). */
static int16_t
alter_one(struct net *n, struct rn_kstr topic, int32_t partition, int d)
{
	const struct rn_mdv_topic *t = net_topic(n, topic);
	const struct rn_mdv_partition *mp;
	char fut[RN_PART_DIRNAME_MAX + 64];
	struct rn_part *pt;
	int16_t kerr;

	if (t == NULL || (mp = rn_mdview_partition(t, partition)) == NULL)
		return RN_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (rn_part_future_name(fut, sizeof(fut), t->name, partition,
	    t->id) != 0)
		return RN_KERR_INVALID_TOPIC_EXCEPTION;	/* "too long" */
	if (mp->slot < 0)
		return RN_KERR_REPLICA_NOT_AVAILABLE;	/* not a replica here */
	if (mp->dir == RN_MDV_DIR_LOST)
		return RN_KERR_KAFKA_STORAGE_ERROR;
	if ((pt = rn_part_get(&n->parts, &n->view, t, mp, &kerr)) == NULL)
		return kerr == RN_KERR_NOT_LEADER_OR_FOLLOWER ?
		    RN_KERR_REPLICA_NOT_AVAILABLE : kerr;
	return rn_part_move_request(pt, d);
}

/* The replica fetchers look at their partitions' slots now. */
static void
wake_fetchers(struct net *n)
{
	const struct rn_worker_env *env = n->w->env;
	uint64_t one = 1;
	unsigned i;

	atomic_fetch_add(&env->shm->hdr->moves_requested, 1);
	for (i = 0; i < env->n_fetchers; i++)
		(void)!write(env->efd[rn_worker_slot_of(env, RN_ROLE_W_FETCHER,
		    i)], &one, sizeof(one));
}

static struct rn_AlterReplicaLogDirsResponse_AlterReplicaLogDirTopicResult *
result_for(struct rn_AlterReplicaLogDirsResponse *r, struct rn_kstr name)
{
	int32_t i;

	for (i = 0; i < r->results_count; i++)
		if (r->results[i].topic_name.len == name.len &&
		    (name.len <= 0 || memcmp(r->results[i].topic_name.ptr,
		    name.ptr, (size_t)name.len) == 0))
			return &r->results[i];
	rn_AlterReplicaLogDirsResponse_AlterReplicaLogDirTopicResult_init(
	    &r->results[r->results_count]);
	r->results[r->results_count].topic_name = name;
	return &r->results[r->results_count++];
}

int
net_alter_replica_log_dirs(struct net *n, struct conn *c)
{
	const struct rn_AlterReplicaLogDirsRequest *req = c->req;
	struct rn_AlterReplicaLogDirsResponse r;
	int32_t i, j, k, n_topics = 0, n_parts;
	bool moved = false;
	bool allowed = net_authorized_cluster(n, c, RN_ACL_OP_ALTER);

	rn_AlterReplicaLogDirsResponse_init(&r);
	for (i = 0; i < req->dirs_count; i++)
		n_topics += req->dirs[i].topics_count;
	if ((r.results = net_array(c, n_topics, sizeof(*r.results))) == NULL)
		return -ENOMEM;
	for (i = 0; i < req->dirs_count; i++) {
		const struct rn_AlterReplicaLogDirsRequest_AlterReplicaLogDir *ad =
		    &req->dirs[i];
		int d = dir_index(n, ad->path);
		int16_t derr = !allowed ? RN_KERR_CLUSTER_AUTHORIZATION_FAILED :
		    d < 0 ? RN_KERR_LOG_DIR_NOT_FOUND :
		    rn_dirfail_offline(n->w->env->shm, d) ?
		    RN_KERR_KAFKA_STORAGE_ERROR : RN_KERR_NONE;

		for (j = 0; j < ad->topics_count; j++) {
			const struct
			    rn_AlterReplicaLogDirsRequest_AlterReplicaLogDirTopic
			    *at = &ad->topics[j];
			struct
			    rn_AlterReplicaLogDirsResponse_AlterReplicaLogDirTopicResult
			    *o = result_for(&r, at->name);
			struct
			    rn_AlterReplicaLogDirsResponse_AlterReplicaLogDirPartitionResult
			    *np;

			/* a topic named under several dirs gets one result */
			n_parts = o->partitions_count + at->partitions_count;
			if ((np = net_array(c, n_parts, sizeof(*np))) == NULL)
				return -ENOMEM;
			if (o->partitions_count > 0)
				memcpy(np, o->partitions, sizeof(*np) *
				    (size_t)o->partitions_count);
			o->partitions = np;
			for (k = 0; k < at->partitions_count; k++) {
				int16_t err = derr != RN_KERR_NONE ? derr :
				    alter_one(n, at->name, at->partitions[k], d);

				rn_AlterReplicaLogDirsResponse_AlterReplicaLogDirPartitionResult_init(
				    &np[o->partitions_count]);
				np[o->partitions_count].partition_index =
				    at->partitions[k];
				np[o->partitions_count++].error_code = err;
				moved |= err == RN_KERR_NONE;
			}
		}
	}
	if (moved)
		wake_fetchers(n);
	return net_respond(n, c, &r);
}
