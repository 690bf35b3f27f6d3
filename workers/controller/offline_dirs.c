/*
 * A broker's offline log dirs in the metadata (see offline_dirs.h).
 */
#include "autoconf.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "workers/controller/offline_dirs.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"

const uint8_t ctl_dir_lost[16] = { [15] = 1 };

bool
ctl_dir_is_lost(const uint8_t dir[16])
{
	return memcmp(dir, ctl_dir_lost, 16) == 0;
}

bool
ctl_replica_lost(const struct ctl_partition *pp, int32_t broker)
{
	int32_t r;

	for (r = 0; pp->dirs != NULL && r < pp->n_replicas; r++)
		if (pp->replicas[r] == broker)
			return ctl_dir_is_lost(pp->dirs[r]);
	return false;
}

/* The election's view: the broker that lost the dir is down for it. */
struct lost_view {
	const struct ctl_state *st;
	int32_t broker;
};

static enum ctl_bstate
lost_fn(void *arg, int32_t id)
{
	const struct lost_view *lv = arg;

	return id == lv->broker ? CTL_B_DOWN :
	    ctl_broker_state((void *)lv->st, id);
}

static bool
dir_listed(const uint8_t dir[16], const struct rn_uuid *dirs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (memcmp(dir, dirs[i].b, 16) == 0)
			return true;
	return false;
}

/* The replica of broker in pp when it sits in one of the dirs, or -1. */
static int32_t
replica_in(const struct ctl_partition *pp, int32_t broker,
    const struct rn_uuid *dirs, int n)
{
	int32_t r;

	for (r = 0; pp->dirs != NULL && r < pp->n_replicas; r++)
		if (pp->replicas[r] == broker)
			return dir_listed(pp->dirs[r], dirs, n) ? r : -1;
	return -1;
}

/* One partition's record: its replica r lost, out of the ISR. */
static int
mark_lost(struct ctl *c, struct ctl_batch *b, const struct ctl_topic *t,
    int32_t p, int32_t broker, int32_t r)
{
	const struct ctl_partition *pp = &t->parts[p];
	struct lost_view lv = { &c->st, broker };
	struct ctl_partition np = *pp;
	struct ctl_pchange ch;
	uint8_t (*dirs)[16];

	if ((dirs = calloc((size_t)pp->n_replicas, 16)) == NULL)
		return -1;
	memcpy(dirs, pp->dirs, (size_t)pp->n_replicas * 16);
	memcpy(dirs[r], ctl_dir_lost, 16);
	np.dirs = dirs;
	if (ctl_elect(pp, lost_fn, &lv, false, &ch)) {
		np.leader = ch.leader;
		np.leader_epoch = ch.leader_epoch;
		np.isr = ch.isr;
		np.n_isr = ch.n_isr;
	}
	/* the directories changed even when leader and ISR did not */
	np.partition_epoch = pp->partition_epoch + 1;
	ctl_rec_partition(b, t->id, p, &np, false);
	rn_log_about(LOG_WARNING, rn_subj_replica(t->name, p, broker), "%s-%d: "
	    "the replica on broker %d is offline (its log dir failed): leader "
	    "%d -> %d, leader epoch %d", t->name, p, broker, pp->leader,
	    np.leader, np.leader_epoch);
	free(dirs);
	return 0;
}

/*
 * The broker's registered dirs lose the offline ones, so no new replica
 * is placed there (its last dir stays: a broker with none left stops).
 */
static void
drop_dirs(struct ctl *c, struct ctl_batch *b, int32_t broker,
    const struct rn_uuid *dirs, int n)
{
	const struct ctl_broker *br = ctl_state_broker(&c->st, broker);
	uint8_t keep[RN_CONFIG_MAX_LOGDIRS][16];
	int i, k = 0;

	if (br == NULL)
		return;
	for (i = 0; i < br->n_log_dirs && k < RN_CONFIG_MAX_LOGDIRS; i++)
		if (!dir_listed(br->log_dirs[i], dirs, n))
			memcpy(keep[k++], br->log_dirs[i], 16);
	if (k > 0 && k < br->n_log_dirs)
		ctl_rec_broker_dirs(b, broker, (const uint8_t (*)[16])keep, k);
}

int
ctl_dirs_offline(struct ctl *c, struct ctl_batch *b, int32_t broker,
    const struct rn_uuid *dirs, int n)
{
	int i, marked = 0;
	int32_t p, r;

	drop_dirs(c, b, broker, dirs, n);
	for (i = 0; n > 0 && i < c->st.n_topics; i++) {
		const struct ctl_topic *t = c->st.topics[i];

		for (p = 0; p < t->n_parts; p++) {
			if ((r = replica_in(&t->parts[p], broker, dirs, n)) < 0)
				continue;
			if (mark_lost(c, b, t, p, broker, r) == 0)
				marked++;
		}
	}
	return marked;
}
