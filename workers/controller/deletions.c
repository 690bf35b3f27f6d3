/*
 * Deleting the local partition dirs of removed topics and of replicas a
 * reassignment moved away: queued as the state applies the removal,
 * renamed "-delete" and removed after the image no longer names them; a
 * crash's leftovers are removed at start, and replicas of topic ids the
 * metadata log lacks once caught up.
 */
#include "autoconf.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "storage/checkpoint.h"
#include "storage/logdir.h"
#include "common/placement.h"
#include "workers/controller/elect.h"
#include "workers/controller/op.h"
#include "workers/controller/raft.h"
#include "workers/partition/partition.h"


struct ctl_deletion {
	struct ctl_deletion *next;
	char path[1400];
	char name[300];          /* <topic>-<p>, for the renamed dir */
	char dir[1100];
	char topic[CTL_TOPIC_NAME_MAX + 1];
	int32_t partition;
	int32_t slot;            /* its shared-memory slot here, or -1 */
	uint8_t id[16];          /* the removed topic's id */
	bool replica_only;       /* the topic stays; this node's replica goes */
};

/* ---- deleting the dirs of removed topics ----------------------------- */

static void
queue_deletion(struct ctl *c, const struct ctl_topic *t, int32_t p,
    int32_t slot, int32_t dir, bool replica_only)
{
	struct ctl_deletion *d;

	if (dir < 0 || dir >= c->cfg->n_log_dirs ||
	    (d = calloc(1, sizeof(*d))) == NULL)
		return;
	strlcpy(d->dir, c->cfg->log_dirs[dir], sizeof(d->dir));
	strlcpy(d->topic, t->name, sizeof(d->topic));
	d->partition = p;
	d->slot = slot;
	d->replica_only = replica_only;
	memcpy(d->id, t->id, 16);
	snprintf(d->name, sizeof(d->name), "%s-%d", t->name, p);
	snprintf(d->path, sizeof(d->path), "%s/%s", d->dir, d->name);
	d->next = c->deletions;
	c->deletions = d;
}

void
ctl_admin_topic_removed(struct ctl *c, const struct ctl_topic *t)
{
	struct ctl_local loc;
	int32_t p, slot, dir;

	ctl_local(c, &loc);
	for (p = 0; p < t->n_parts; p++) {
		ctl_state_local_placement(&c->st, &loc, t, p, &slot, &dir);
		queue_deletion(c, t, p, slot, dir, false);
	}
}

void
ctl_admin_replica_removed(struct ctl *c, const struct ctl_topic *t,
    int32_t p, int32_t broker, int32_t slot, const uint8_t dir_id[16])
{
	struct ctl_local loc;
	int i, dir = 0;

	if (broker != c->cfg->node_id)
		return;
	ctl_local(c, &loc);
	if ((uint32_t)slot >= loc.max_partitions)
		slot = -1;
	for (i = 0; i < loc.n_dirs; i++)
		if (memcmp(loc.dir_ids[i], dir_id, 16) == 0)
			dir = i;
	queue_deletion(c, t, p, slot, dir, true);
}

void
ctl_admin_replicas_moved(struct ctl *c, const struct ctl_state *next)
{
	int32_t node = c->cfg->node_id, p, r;
	int i;

	for (i = 0; i < c->st.n_topics; i++) {
		const struct ctl_topic *t = c->st.topics[i], *nt;

		if ((nt = ctl_state_topic_by_id(next, t->id)) == NULL)
			continue;
		for (p = 0; p < t->n_parts && p < nt->n_parts; p++) {
			const struct ctl_partition *pp = &t->parts[p];

			if ((r = ctl_replica_index(pp, node)) >= 0 &&
			    ctl_replica_index(&nt->parts[p], node) < 0)
				ctl_admin_replica_removed(c, t, p, node,
				    pp->slots[r], pp->dirs[r]);
		}
	}
}

/* ---- future replicas (moves between log dirs, AlterReplicaLogDirs) -- */

static int
hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ?
	    ch - 'a' + 10 : -1;
}

/* "<topic>-<p>.<32 hex topic id>-future": its parts, or false. */
static bool
future_parse(const char *name, char topic[RN_TOPIC_MAX + 1], int32_t *p,
    uint8_t id[16])
{
	char base[300];
	size_t n = strlen(name), k;
	int i;

	if (n < 1 + 32 + 7 + 3 || strcmp(name + n - 7, "-future") != 0 ||
	    name[n - 7 - 32 - 1] != '.' || n - 40 >= sizeof(base))
		return false;
	for (i = 0; i < 16; i++) {
		int hi = hexval(name[n - 39 + 2 * i]);
		int lo = hexval(name[n - 39 + 2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		id[i] = (uint8_t)(hi << 4 | lo);
	}
	k = n - 40;
	memcpy(base, name, k);
	base[k] = '\0';
	return rn_partition_dir_parse(base, topic, p) == 0;
}

/*
 * The other copies of a deleted replica: its future replica in any dir
 * (a move under way), and its directory in a dir other than the one the
 * metadata had (a move swapped before the image recorded it).
 */
static void
remove_other_copies(struct ctl *c, const struct ctl_deletion *d)
{
	char fut[400];
	int i;

	if (rn_part_future_name(fut, sizeof(fut), d->topic, d->partition,
	    d->id) != 0)
		return;
	for (i = 0; i < c->cfg->n_log_dirs; i++) {
		char path[1400];
		uint8_t id[16];

		snprintf(path, sizeof(path), "%s/%s", c->cfg->log_dirs[i], fut);
		if (access(path, F_OK) == 0) {
			rn_log_about(LOG_INFO, rn_subj_part(d->topic,
			    d->partition), "deleting %s, the future replica "
			    "of a deleted one", path);
			(void)rn_logdir_discard(c->cfg->log_dirs[i], fut);
		}
		snprintf(path, sizeof(path), "%s/%s", c->cfg->log_dirs[i],
		    d->name);
		if (strcmp(c->cfg->log_dirs[i], d->dir) != 0 &&
		    rn_partition_metadata_read(path, id) == 0 &&
		    memcmp(id, d->id, 16) == 0) {
			rn_log_about(LOG_INFO, rn_subj_part(d->topic,
			    d->partition), "deleting %s", path);
			(void)rn_logdir_discard(c->cfg->log_dirs[i], d->name);
		}
	}
}

/* Is name (in a log dir) a future replica no move here can be for? */
static bool
stray_future(struct ctl *c, const char *name, char *why, size_t whylen)
{
	char topic[RN_TOPIC_MAX + 1];
	const struct ctl_topic *t;
	uint8_t id[16];
	int32_t p;

	if (!future_parse(name, topic, &p, id))
		return false;
	t = ctl_state_topic_by_id(&c->st, id);
	if (t == NULL || strcmp(t->name, topic) != 0 || p >= t->n_parts)
		snprintf(why, whylen, "the future replica of a topic the "
		    "metadata log does not have");
	else if (ctl_replica_index(&t->parts[p], c->cfg->node_id) < 0)
		snprintf(why, whylen, "the future replica of %s-%d, "
		    "reassigned to other brokers", t->name, p);
	else
		return false;
	return true;
}

/* Remove a tree; what cannot be removed is left and said once. */
static void
rm_tree(const char *path)
{
	int rc;

	if ((rc = rn_logdir_remove_tree(path)) != 0)
		log_warnx("removing %s: %s", path, strerror(-rc));
}

void
ctl_admin_cleanup_deleted(struct ctl *c)
{
	char path[1400];
	struct dirent *de;
	DIR *dp;
	int i;

	for (i = 0; i < c->cfg->n_log_dirs; i++) {
		if ((dp = opendir(c->cfg->log_dirs[i])) == NULL)
			continue;
		while ((de = readdir(dp)) != NULL) {
			size_t n = strlen(de->d_name);

			/* <topic>-<p>.<32 hex>-delete, left by a crash */
			if (n < 41 || strcmp(de->d_name + n - 7, "-delete") != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s",
			    c->cfg->log_dirs[i], de->d_name);
			log_info("removing %s, left from a topic deletion",
			    path);
			rm_tree(path);
		}
		closedir(dp);
	}
}

/*
 * The directory still holds the removed topic id's replica. A replay of
 * the metadata log at start removes topics whose name a newer topic took:
 * that one's directory names its own id and stays. One without
 * partition.metadata (written before ids were kept) goes only if no live
 * topic has that name and partition here.
 */
static bool
deletion_is_ours(struct ctl *c, const struct ctl_deletion *d)
{
	const struct ctl_topic *t;
	struct ctl_local loc;
	int32_t slot, dir;
	uint8_t id[16];
	int rc = rn_partition_metadata_read(d->path, id);

	if (rc == 0)
		return memcmp(id, d->id, 16) == 0;
	if (rc != -ENOENT)
		return false;
	t = ctl_state_topic(&c->st, d->topic, strlen(d->topic));
	if (t == NULL || memcmp(t->id, d->id, 16) == 0 ||
	    d->partition >= t->n_parts)
		return true;
	ctl_local(c, &loc);
	ctl_state_local_placement(&c->st, &loc, t, d->partition, &slot, &dir);
	return dir < 0;
}

/* A reassignment put this node's replica of d's partition back. */
static bool
replica_here_again(struct ctl *c, const struct ctl_deletion *d)
{
	const struct ctl_topic *t = ctl_state_topic_by_id(&c->st, d->id);
	struct ctl_local loc;
	int32_t slot, dir;

	if (t == NULL || d->partition >= t->n_parts)
		return false;
	ctl_local(c, &loc);
	ctl_state_local_placement(&c->st, &loc, t, d->partition, &slot, &dir);
	return dir >= 0;
}

/* Is dir (of log dir root) a replica the metadata log does not know? */
static bool
stray_dir(struct ctl *c, const char *root, const char *name,
    char *why, size_t whylen)
{
	char topic[RN_TOPIC_MAX + 1], path[1400], enc[23];
	const struct ctl_topic *t;
	int32_t p;
	uint8_t id[16];

	if (rn_partition_dir_parse(name, topic, &p) != 0)
		return false;
	snprintf(path, sizeof(path), "%s/%s", root, name);
	if (rn_partition_metadata_read(path, id) != 0)
		return false; /* no id to go by */
	rn_uuid_to_base64url(id, enc);
	t = ctl_state_topic_by_id(&c->st, id);
	if (t == NULL)
		snprintf(why, whylen, "topic id %s is not in the metadata log",
		    enc);
	else if (strcmp(t->name, topic) != 0 || p >= t->n_parts)
		snprintf(why, whylen, "topic id %s is %s with %d partitions",
		    enc, t->name, t->n_parts);
	else if (ctl_replica_index(&t->parts[p], c->cfg->node_id) < 0)
		snprintf(why, whylen, "%s-%d was reassigned to other brokers",
		    t->name, p);
	else
		return false;
	return true;
}

/*
 * Once this node has caught up with the metadata log (its broker is
 * unfenced in this incarnation), replicas of topics deleted while it was
 * down, and replicas reassigned away meanwhile, are known to be stray:
 * remove them as Kafka does.
 */
void
ctl_admin_sweep_strays(struct ctl *c)
{
	static bool swept;
	const struct ctl_broker *b;
	char why[400], topic[RN_TOPIC_MAX + 1];
	struct dirent *de;
	DIR *dp;
	int i;

	b = ctl_state_broker(&c->st, c->cfg->node_id);
	if (swept || b == NULL || b->fenced ||
	    memcmp(b->incarnation, c->incarnation, 16) != 0)
		return;
	swept = true;
	for (i = 0; i < c->cfg->n_log_dirs; i++) {
		if ((dp = opendir(c->cfg->log_dirs[i])) == NULL)
			continue;
		while ((de = readdir(dp)) != NULL) {
			if (de->d_name[0] == '.' ||
			    (!stray_dir(c, c->cfg->log_dirs[i], de->d_name, why,
			    sizeof(why)) && !stray_future(c, de->d_name, why,
			    sizeof(why))))
				continue;
			rn_log_about(LOG_WARNING, rn_logdir_subject(de->d_name,
			    topic), "%s/%s: removing stray partition "
			    "directory: %s", c->cfg->log_dirs[i], de->d_name,
			    why);
			(void)rn_logdir_discard(c->cfg->log_dirs[i], de->d_name);
		}
		closedir(dp);
	}
}

void
ctl_admin_run_deletions(struct ctl *c)
{
	struct ctl_deletion *d;

	while ((d = c->deletions) != NULL) {
		char to[1600];
		int rc;

		c->deletions = d->next;
		/* moved away and back again before this ran: it stays */
		if (d->replica_only && replica_here_again(c, d)) {
			free(d);
			continue;
		}
		/* every worker lets go of the old id's fds and mappings */
		rn_part_release(c->shm, d->slot, d->id, d->partition,
		    (int64_t)c->st.last_index);
		if (!deletion_is_ours(c, d)) {
			free(d);
			continue;
		}
		if ((rc = rn_logdir_retire(d->dir, d->name, to,
		    sizeof(to))) == 0) {
			rn_log_about(LOG_INFO, rn_subj_part(d->topic,
			    d->partition), "deleting %s", to);
			rm_tree(to);
		} else if (rc != -ENOENT)
			rn_log_about(LOG_WARNING, rn_subj_part(d->topic,
			    d->partition), "renaming %s for deletion: %s",
			    d->path, strerror(-rc));
		remove_other_copies(c, d);
		free(d);
	}
}
