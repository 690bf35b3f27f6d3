/*
 * The replicas a reassignment plan gives a log dir ("log_dirs" other than
 * "any"): AlterReplicaLogDirs to their brokers for --execute, and
 * DescribeLogDirs for --verify, as kafka-reassign-partitions.sh does.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "protocol/kerrors.h"
#include "tools/reassign.h"
#include "tools/tool_logdirs.h"

#define TIMEOUT_MS 10000

/* One replica to move: broker, topic-partition, target dir. */
struct mv {
	int32_t broker, partition;
	const char *topic, *dir;
	int state;               /* 0 pending, 1 started, -1 failed */
};

bool
ra_plan_has_moves(const struct ra_plan *pl)
{
	int i, k;

	for (i = 0; i < pl->n; i++)
		for (k = 0; pl->v[i].dirs != NULL && k < pl->v[i].n; k++)
			if (pl->v[i].dirs[k] != NULL)
				return true;
	return false;
}

/* Kafka's order of TopicPartitionReplicas: broker, topic, partition. */
static int
mv_cmp(const void *a, const void *b)
{
	const struct mv *x = a, *y = b;
	int c;

	if (x->broker != y->broker)
		return x->broker < y->broker ? -1 : 1;
	if ((c = strcmp(x->topic, y->topic)) != 0)
		return c;
	return (x->partition > y->partition) - (x->partition < y->partition);
}

static struct mv *
moves_of(const struct ra_plan *pl, int *n)
{
	struct mv *v;
	int i, k, m = 0;

	for (i = 0; i < pl->n; i++)
		m += pl->v[i].n;
	if ((v = calloc((size_t)(m > 0 ? m : 1), sizeof(*v))) == NULL)
		return NULL;
	m = 0;
	for (i = 0; i < pl->n; i++)
		for (k = 0; pl->v[i].dirs != NULL && k < pl->v[i].n; k++)
			if (pl->v[i].dirs[k] != NULL)
				v[m++] = (struct mv){ pl->v[i].replicas[k],
				    pl->v[i].partition, pl->v[i].topic,
				    pl->v[i].dirs[k], 0 };
	qsort(v, (size_t)m, sizeof(*v), mv_cmp);
	*n = m;
	return v;
}

/* "topic-partition-broker", Kafka's TopicPartitionReplica. */
static void
print_list(const char *what, const struct mv *v, int n, int state)
{
	int i, k = 0;

	for (i = 0; i < n; i++)
		k += v[i].state == state;
	if (k == 0)
		return;
	printf("%s%s for: ", what, k == 1 ? "" : "s");
	for (i = 0, k = 0; i < n; i++)
		if (v[i].state == state)
			printf("%s%s-%d-%d", k++ ? "," : "", v[i].topic,
			    v[i].partition, v[i].broker);
	printf("\n");
}

typedef struct rn_AlterReplicaLogDirsRequest_AlterReplicaLogDir ard_dir;
typedef struct rn_AlterReplicaLogDirsRequest_AlterReplicaLogDirTopic ard_topic;
typedef struct rn_AlterReplicaLogDirsResponse_AlterReplicaLogDirPartitionResult
    ard_result;

/*
 * The broker's answer for one of its replicas (topic tn): started (1),
 * failed (-1, said), or asked again (a replica it does not have yet).
 * 0, or -1 when it failed.
 */
static int
answered(struct mv *m, struct rn_kstr tn, const ard_result *pr)
{
	if (m->partition != pr->partition_index ||
	    strlen(m->topic) != (size_t)tn.len ||
	    memcmp(m->topic, tn.ptr, (size_t)tn.len) != 0)
		return 0;
	if (pr->error_code == 0)
		m->state = 1;
	else if (pr->error_code != RN_KERR_REPLICA_NOT_AVAILABLE) {
		fprintf(stderr, "Failed to alter dir for %s-%d-%d: %s\n",
		    m->topic, m->partition, m->broker,
		    rn_kerr_name(pr->error_code));
		m->state = -1;
		return -1;
	}
	return 0;
}

/*
 * One AlterReplicaLogDirs to broker b for its pending replicas: a dir
 * entry per replica (a request names each dir once per replica; the
 * broker answers by topic). Started ones are marked 1, failed ones -1.
 */
static int
alter_broker(const struct rn_MetadataResponse_MetadataResponseBroker *b,
    struct mv *v, int n)
{
	struct rn_AlterReplicaLogDirsRequest req;
	struct rn_AlterReplicaLogDirsResponse resp;
	struct rn_arena ar;
	char err[256];
	int32_t *part;
	int i, j, k, m = 0, rc;

	rn_arena_init(&ar, 16u << 20);
	rn_AlterReplicaLogDirsRequest_init(&req);
	req.dirs = rn_arena_alloc(&ar, sizeof(ard_dir) * (size_t)(n ? n : 1));
	for (i = 0; req.dirs != NULL && i < n; i++) {
		ard_dir *d;
		ard_topic *t;

		if (v[i].broker != b->node_id || v[i].state != 0)
			continue;
		d = &req.dirs[m++];
		rn_AlterReplicaLogDirsRequest_AlterReplicaLogDir_init(d);
		d->path = rn_kstr_c(v[i].dir);
		t = rn_arena_alloc(&ar, sizeof(*t));
		part = rn_arena_alloc(&ar, sizeof(*part));
		if (t == NULL || part == NULL)
			break;
		rn_AlterReplicaLogDirsRequest_AlterReplicaLogDirTopic_init(t);
		t->name = rn_kstr_c(v[i].topic);
		*part = v[i].partition;
		t->partitions = part;
		t->partitions_count = 1;
		d->topics = t;
		d->topics_count = 1;
	}
	req.dirs_count = m;
	if (m == 0) {
		rn_arena_free(&ar);
		return 0;
	}
	if (req.dirs == NULL || tld_alter(b, TIMEOUT_MS, &ar, &req, &resp, err,
	    sizeof(err)) != 0) {
		/* a broker that does not answer is asked again */
		rn_arena_free(&ar);
		return 0;
	}
	rc = 0;
	for (i = 0; i < resp.results_count; i++)
		for (j = 0; j < resp.results[i].partitions_count; j++)
			for (k = 0; k < n; k++)
				if (v[k].broker == b->node_id &&
				    v[k].state == 0 &&
				    answered(&v[k], resp.results[i].topic_name,
				    &resp.results[i].partitions[j]) < 0)
					rc = -1;
	rn_arena_free(&ar);
	return rc;
}

int
ra_moves_execute(const char *bootstrap, const struct ra_plan *pl,
    int timeout_ms)
{
	struct rn_MetadataResponse md;
	struct rn_arena ar;
	struct timespec ts = { 0, 100 * 1000000L };
	char err[256];
	struct mv *v;
	int n, i, left, rc = 0;
	int64_t until = rn_now_ms() + timeout_ms;

	if ((v = moves_of(pl, &n)) == NULL)
		return -1;
	for (;;) {
		rn_arena_init(&ar, 4u << 20);
		if (tld_brokers(bootstrap, TIMEOUT_MS, &ar, &md, err,
		    sizeof(err)) != 0) {
			fprintf(stderr, "Metadata: %s\n", err);
			rn_arena_free(&ar);
			free(v);
			return -1;
		}
		for (i = 0; i < md.brokers_count; i++)
			if (alter_broker(&md.brokers[i], v, n) != 0)
				rc = -1;
		rn_arena_free(&ar);
		for (i = 0, left = 0; i < n; i++)
			left += v[i].state == 0;
		if (rc != 0 || left == 0 || rn_now_ms() >= until)
			break;
		/* a replica a reassignment adds is asked again until its
		 * broker has it */
		nanosleep(&ts, NULL);
	}
	print_list("Successfully started log directory move", v, n, 1);
	if (rc == 0 && left > 0) {
		print_list("Timed out before log directory move", v, n, 0);
		rc = -1;
	}
	free(v);
	return rc;
}

int
ra_moves_verify(const char *bootstrap, const struct ra_plan *pl)
{
	struct tld_map m;
	struct mv *v;
	int n, i, left = 0;

	if ((v = moves_of(pl, &n)) == NULL)
		return -1;
	if (tld_map_fetch(bootstrap, TIMEOUT_MS, &m) != 0) {
		fprintf(stderr, "DescribeLogDirs: the brokers could not be "
		    "asked\n");
		free(v);
		return -1;
	}
	for (i = 0; i < n; i++) {
		const struct mv *x = &v[i];
		const char *cur = tld_map_dir(&m, x->broker, x->topic,
		    x->partition);
		const char *fut = tld_map_future(&m, x->broker, x->topic,
		    x->partition);

		/* Kafka's lines (ReassignPartitionsCommand) */
		if (cur == NULL && fut == NULL)
			printf("Partition %s-%d cannot be found in any live "
			    "log directory on broker %d.\n", x->topic,
			    x->partition, x->broker);
		else if (cur == NULL)
			printf("Partition %s-%d is not found in any live log "
			    "dir on broker %d. There is likely an offline log "
			    "directory on the broker.\n", x->topic,
			    x->partition, x->broker);
		else if (fut != NULL && strcmp(fut, x->dir) == 0)
			printf("Reassignment of replica %s-%d-%d is still in "
			    "progress.\n", x->topic, x->partition, x->broker);
		else if (fut != NULL)
			printf("Partition %s-%d on broker %d is being moved to "
			    "log dir %s instead of %s.\n", x->topic,
			    x->partition, x->broker, fut, x->dir);
		else if (strcmp(cur, x->dir) == 0)
			printf("Reassignment of replica %s-%d-%d completed "
			    "successfully.\n", x->topic, x->partition,
			    x->broker);
		else
			/* as Kafka: not under way, so done with */
			printf("Partition %s-%d on broker %d is not being "
			    "moved from log dir %s to %s.\n", x->topic,
			    x->partition, x->broker, cur, x->dir);
		/* the ones Kafka counts as not done */
		if (cur == NULL || fut != NULL)
			left++;
	}
	tld_map_free(&m);
	free(v);
	return left;
}
