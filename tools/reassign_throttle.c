/*
 * The replication throttles of a reassignment, as kafka-reassign-partitions
 * sets them: on each topic, leader.replication.throttled.replicas names
 * the current replicas of the moving partitions and
 * follower.replication.throttled.replicas the ones being added; on each
 * broker taking part, leader/follower.replication.throttled.rate. All
 * through IncrementalAlterConfigs.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "tools/reassign.h"
#include "tools/tool_kclient.h"

#define IAC_SET 0
#define IAC_DELETE 1
#define RES_TOPIC 2
#define RES_BROKER 4

typedef struct rn_IncrementalAlterConfigsRequest_AlterConfigsResource iac_res;
typedef struct rn_IncrementalAlterConfigsRequest_AlterableConfig iac_cfg;

static const char *const rate_keys[] = {
	"leader.replication.throttled.rate",
	"follower.replication.throttled.rate",
	/* moves between a broker's log dirs (set alone, cleared with them) */
	"replica.alter.log.dirs.io.max.bytes.per.second",
};
static const char *const replica_keys[] = {
	"leader.replication.throttled.replicas",
	"follower.replication.throttled.replicas",
};

static bool
has(const int32_t *v, int n, int32_t id)
{
	int i;

	for (i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/* Is entry i the first of its topic in the plan? */
static bool
first_of_topic(const struct ra_plan *plan, int i)
{
	int k;

	for (k = 0; k < i; k++)
		if (strcmp(plan->v[k].topic, plan->v[i].topic) == 0)
			return false;
	return true;
}

/* Append "p:b" (comma-separated) to the string in arena *s. */
static void
pair_add(struct rn_arena *a, char **s, int32_t p, int32_t b)
{
	size_t len = *s != NULL ? strlen(*s) : 0;
	char *ns = rn_arena_alloc(a, len + 32);

	if (ns == NULL)
		return;
	snprintf(ns, len + 32, "%s%s%d:%d", len ? *s : "", len ? "," : "",
	    p, b);
	*s = ns;
}

/* Room for a resource per topic and per broker, in a new arena a. */
static iac_res *
res_alloc(struct rn_arena *a, const struct ra_plan *plan, char *err,
    size_t errlen)
{
	iac_res *res;

	rn_arena_init(a, 64u << 20);
	res = rn_arena_alloc(a, sizeof(*res) * (size_t)(plan->n + 1024));
	if (res == NULL) {
		rn_arena_free(a);
		snprintf(err, errlen, "out of memory");
	}
	return res;
}

/* Send the resources; 0, or -1 with err (the first refusal). */
static int
iac_send(int fd, iac_res *res, int n, struct rn_arena *a, char *err,
    size_t errlen)
{
	struct rn_IncrementalAlterConfigsRequest req;
	struct rn_IncrementalAlterConfigsResponse resp;
	int32_t i;

	rn_IncrementalAlterConfigsRequest_init(&req);
	req.resources = res;
	req.resources_count = n;
	if (tkc_call_api(fd, RN_KAPI_INCREMENTAL_ALTER_CONFIGS, 0, &req, a,
	    &resp, RA_TIMEOUT_MS, err, errlen) != 0)
		return -1;
	for (i = 0; i < resp.responses_count; i++)
		if (resp.responses[i].error_code != 0) {
			snprintf(err, errlen, "%.*s: %s",
			    (int)resp.responses[i].resource_name.len,
			    resp.responses[i].resource_name.ptr,
			    rn_kerr_name(resp.responses[i].error_code));
			return -1;
		}
	return 0;
}

/* A resource with the keys set to values (NULL values: deleted). */
static void
res_fill(struct rn_arena *a, iac_res *r, int8_t type, const char *name,
    const char *const *keys, char *const *values, int n)
{
	iac_cfg *c = rn_arena_alloc(a, sizeof(*c) * (size_t)n);
	int i, k = 0;

	rn_IncrementalAlterConfigsRequest_AlterConfigsResource_init(r);
	r->resource_type = type;
	r->resource_name = rn_kstr_c(name);
	for (i = 0; c != NULL && i < n; i++) {
		rn_IncrementalAlterConfigsRequest_AlterableConfig_init(&c[k]);
		c[k].name = rn_kstr_c(keys[i]);
		c[k].config_operation = values != NULL ? IAC_SET : IAC_DELETE;
		c[k].value = values != NULL ? rn_kstr_c(values[i]) :
		    (struct rn_kstr){ NULL, -1 };
		if (values == NULL || values[i] != NULL)
			k++;
	}
	r->configs = c;
	r->configs_count = k;
}

/* The topic throttles of topic: current replicas lead, added ones follow. */
static void
topic_lists(struct rn_arena *a, const struct ra_plan *plan,
    const struct ra_plan *cur, const char *topic, char *lists[2],
    int32_t *brokers, int *nb)
{
	int i, k;

	lists[0] = lists[1] = NULL;
	for (i = 0; i < plan->n; i++) {
		const struct ra_part *t = &plan->v[i];
		const struct ra_part *c = ra_plan_find(cur, t->topic,
		    t->partition);

		if (strcmp(t->topic, topic) != 0 || c == NULL)
			continue;
		for (k = 0; k < c->n; k++) {
			pair_add(a, &lists[0], c->partition, c->replicas[k]);
			if (!has(brokers, *nb, c->replicas[k]) && *nb < 1024)
				brokers[(*nb)++] = c->replicas[k];
		}
		for (k = 0; k < t->n; k++) {
			if (!has(c->replicas, c->n, t->replicas[k]))
				pair_add(a, &lists[1], t->partition,
				    t->replicas[k]);
			if (!has(brokers, *nb, t->replicas[k]) && *nb < 1024)
				brokers[(*nb)++] = t->replicas[k];
		}
	}
}

int
ra_throttle_set(int fd, const struct ra_plan *plan, const struct ra_plan *cur,
    long long rate, char *err, size_t errlen)
{
	struct rn_arena a;
	int32_t brokers[1024];
	iac_res *res;
	char rbuf[32], *rates[2] = { rbuf, rbuf }, names[1024][16];
	int i, n = 0, nb = 0, rc;

	if ((res = res_alloc(&a, plan, err, errlen)) == NULL)
		return -1;
	for (i = 0; i < plan->n; i++) {
		char *lists[2];

		if (!first_of_topic(plan, i))
			continue;
		topic_lists(&a, plan, cur, plan->v[i].topic, lists, brokers,
		    &nb);
		res_fill(&a, &res[n++], RES_TOPIC, plan->v[i].topic,
		    replica_keys, lists, 2);
	}
	snprintf(rbuf, sizeof(rbuf), "%lld", rate);
	for (i = 0; i < nb; i++) {
		snprintf(names[i], sizeof(names[i]), "%d", brokers[i]);
		res_fill(&a, &res[n++], RES_BROKER, names[i], rate_keys,
		    rates, 2);
	}
	rc = iac_send(fd, res, n, &a, err, errlen);
	rn_arena_free(&a);
	return rc;
}

int
ra_throttle_clear(int fd, const struct ra_plan *plan,
    const struct ra_brokers *br, char *err, size_t errlen)
{
	struct rn_arena a;
	iac_res *res;
	char names[1024][16];
	int i, n = 0, rc;

	if ((res = res_alloc(&a, plan, err, errlen)) == NULL)
		return -1;
	for (i = 0; i < br->n && i < 1024; i++) {
		snprintf(names[i], sizeof(names[i]), "%d", br->ids[i]);
		res_fill(&a, &res[n++], RES_BROKER, names[i], rate_keys,
		    NULL, 3);
	}
	for (i = 0; i < plan->n; i++)
		if (first_of_topic(plan, i))
			res_fill(&a, &res[n++], RES_TOPIC, plan->v[i].topic,
			    replica_keys, NULL, 2);
	rc = iac_send(fd, res, n, &a, err, errlen);
	rn_arena_free(&a);
	return rc;
}

int
ra_throttle_logdirs(int fd, const struct ra_plan *plan, long long rate,
    char *err, size_t errlen)
{
	struct rn_arena a;
	int32_t brokers[1024];
	iac_res *res;
	char rbuf[32], *rates[1] = { rbuf }, names[1024][16];
	int i, k, n = 0, nb = 0, rc;

	if ((res = res_alloc(&a, plan, err, errlen)) == NULL)
		return -1;
	/* the brokers with a replica the plan puts in a given dir */
	for (i = 0; i < plan->n; i++)
		for (k = 0; plan->v[i].dirs != NULL && k < plan->v[i].n; k++)
			if (plan->v[i].dirs[k] != NULL &&
			    !has(brokers, nb, plan->v[i].replicas[k]) &&
			    nb < 1024)
				brokers[nb++] = plan->v[i].replicas[k];
	snprintf(rbuf, sizeof(rbuf), "%lld", rate);
	for (i = 0; i < nb; i++) {
		snprintf(names[i], sizeof(names[i]), "%d", brokers[i]);
		res_fill(&a, &res[n++], RES_BROKER, names[i], rate_keys + 2,
		    rates, 1);
	}
	rc = iac_send(fd, res, n, &a, err, errlen);
	rn_arena_free(&a);
	return rc;
}
