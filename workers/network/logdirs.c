/*
 * DescribeLogDirs: this broker's log directories (capacity from statvfs)
 * and the local replicas in each, as the image places them, with their
 * size and offset lag. Replicas of the request's topics only, or all.
 */
#include "autoconf.h"

#include <sys/statvfs.h>

#include <errno.h>
#include <string.h>

#include "protocol/kerrors.h"
#include "storage/log.h"
#include "workers/network/net_int.h"

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

static int
fill_topic(struct net *n, struct conn *c,
    const struct rn_DescribeLogDirsRequest *req, int dir,
    const struct rn_mdv_topic *t,
    struct rn_DescribeLogDirsResponse_DescribeLogDirsTopic *o)
{
	int32_t i;

	rn_DescribeLogDirsResponse_DescribeLogDirsTopic_init(o);
	o->name = (struct rn_kstr){ t->name, (int32_t)t->name_len };
	if ((o->partitions = net_array(c, t->n_parts,
	    sizeof(*o->partitions))) == NULL)
		return -ENOMEM;
	for (i = 0; i < t->n_parts; i++) {
		const struct rn_mdv_partition *mp = &t->parts[i];

		if (mp->slot < 0 || mp->dir != dir || !wanted(req, t, mp->p))
			continue;
		fill_partition(n, t, mp, &o->partitions[o->partitions_count++]);
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
	if ((r.results = net_array(c, n->cfg->n_log_dirs,
	    sizeof(*r.results))) == NULL)
		return -ENOMEM;
	for (i = 0; i < n->cfg->n_log_dirs; i++)
		if ((rc = fill_dir(n, c, req, i, &r.results[i])) != 0)
			return rc;
	r.results_count = n->cfg->n_log_dirs;
	return net_respond(n, c, &r);
}
