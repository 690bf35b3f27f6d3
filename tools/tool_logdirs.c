/*
 * DescribeLogDirs over tool_kclient (see tool_logdirs.h).
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/tool_kclient.h"
#include "tools/tool_logdirs.h"

#define DLD_VERSION 4

int
tld_brokers(const char *bootstrap, int timeout_ms, struct rn_arena *ar,
    struct rn_MetadataResponse *md, char *err, size_t errlen)
{
	struct rn_MetadataRequest req;
	int fd, rc;

	if ((fd = tkc_connect(bootstrap, timeout_ms, err, errlen)) < 0)
		return -1;
	rn_MetadataRequest_init(&req);
	req.topics_count = 0; /* no topic: the brokers only */
	rc = tkc_call_api(fd, RN_KAPI_METADATA, 1, &req, ar, md, timeout_ms,
	    err, errlen);
	close(fd);
	return rc;
}

/* A connection to one broker of a Metadata answer; < 0 (err says why) if none. */
static int
connect_broker(const struct rn_MetadataResponse_MetadataResponseBroker *b,
    int timeout_ms, char *err, size_t errlen)
{
	char addr[300];

	snprintf(addr, sizeof(addr), "%.*s:%d", (int)b->host.len, b->host.ptr,
	    b->port);
	return tkc_connect(addr, timeout_ms, err, errlen);
}

int
tld_describe(const struct rn_MetadataResponse_MetadataResponseBroker *b,
    int timeout_ms, struct rn_arena *ar, struct rn_DescribeLogDirsResponse *r,
    char *err, size_t errlen)
{
	struct rn_DescribeLogDirsRequest req;
	int fd, rc;

	if ((fd = connect_broker(b, timeout_ms, err, errlen)) < 0)
		return -1;
	rn_DescribeLogDirsRequest_init(&req);
	req.topics_count = -1; /* all */
	rc = tkc_call_api(fd, RN_KAPI_DESCRIBE_LOG_DIRS, DLD_VERSION, &req, ar,
	    r, timeout_ms, err, errlen);
	close(fd);
	return rc;
}

static char *
kdup(struct rn_kstr s)
{
	char *p = malloc((size_t)(s.len > 0 ? s.len : 0) + 1);

	if (p != NULL) {
		if (s.len > 0)
			memcpy(p, s.ptr, (size_t)s.len);
		p[s.len > 0 ? s.len : 0] = '\0';
	}
	return p;
}

static int
map_add(struct tld_map *m, int32_t broker, struct rn_kstr topic, int32_t p,
    struct rn_kstr dir, bool future)
{
	struct tld_replica *e;

	if (m->n == m->cap) {
		int cap = m->cap ? 2 * m->cap : 64;
		struct tld_replica *nv = realloc(m->v, sizeof(*nv) *
		    (size_t)cap);

		if (nv == NULL)
			return -1;
		m->v = nv;
		m->cap = cap;
	}
	e = &m->v[m->n];
	e->broker = broker;
	e->partition = p;
	e->topic = kdup(topic);
	e->dir = kdup(dir);
	e->future = future;
	if (e->topic == NULL || e->dir == NULL) {
		free(e->topic);
		free(e->dir);
		return -1;
	}
	m->n++;
	return 0;
}

static void
map_broker(struct tld_map *m, int32_t broker,
    const struct rn_DescribeLogDirsResponse *r)
{
	int32_t i, j, k;

	for (i = 0; i < r->results_count; i++)
		for (j = 0; j < r->results[i].topics_count; j++) {
			const struct rn_DescribeLogDirsResponse_DescribeLogDirsTopic
			    *t = &r->results[i].topics[j];

			for (k = 0; k < t->partitions_count; k++)
				(void)map_add(m, broker, t->name,
				    t->partitions[k].partition_index,
				    r->results[i].log_dir,
				    t->partitions[k].is_future_key);
		}
}

static int
cmp_replica(const void *a, const void *b)
{
	const struct tld_replica *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);

	if (c != 0)
		return c;
	if (x->partition != y->partition)
		return x->partition < y->partition ? -1 : 1;
	if (x->broker != y->broker)
		return x->broker < y->broker ? -1 : 1;
	return (int)x->future - (int)y->future;
}

/* Best effort: brokers that do not answer are left out. */
int
tld_map_fetch(const char *bootstrap, int timeout_ms, struct tld_map *m)
{
	struct rn_MetadataResponse md;
	struct rn_DescribeLogDirsResponse r;
	struct rn_arena ar, br;
	char err[256];
	int32_t i;

	memset(m, 0, sizeof(*m));
	rn_arena_init(&ar, 4u << 20);
	if (tld_brokers(bootstrap, timeout_ms, &ar, &md, err,
	    sizeof(err)) != 0) {
		rn_arena_free(&ar);
		return -1;
	}
	for (i = 0; i < md.brokers_count; i++) {
		rn_arena_init(&br, 64u << 20);
		if (tld_describe(&md.brokers[i], timeout_ms, &br, &r, err,
		    sizeof(err)) == 0)
			map_broker(m, md.brokers[i].node_id, &r);
		rn_arena_free(&br);
	}
	rn_arena_free(&ar);
	if (m->n > 0)
		qsort(m->v, (size_t)m->n, sizeof(*m->v), cmp_replica);
	return 0;
}

/* The dir of the replica (future: of its future replica), or NULL. */
static const char *
map_find(const struct tld_map *m, int32_t broker, const char *topic,
    int32_t p, bool future)
{
	struct tld_replica key = { broker, p, (char *)topic, NULL, future }, *e;

	if (m->n == 0)
		return NULL;
	e = bsearch(&key, m->v, (size_t)m->n, sizeof(*m->v), cmp_replica);
	return e != NULL ? e->dir : NULL;
}

const char *
tld_map_dir(const struct tld_map *m, int32_t broker, const char *topic,
    int32_t p)
{
	return map_find(m, broker, topic, p, false);
}

const char *
tld_map_future(const struct tld_map *m, int32_t broker, const char *topic,
    int32_t p)
{
	return map_find(m, broker, topic, p, true);
}

int
tld_alter(const struct rn_MetadataResponse_MetadataResponseBroker *b,
    int timeout_ms, struct rn_arena *ar,
    const struct rn_AlterReplicaLogDirsRequest *req,
    struct rn_AlterReplicaLogDirsResponse *resp, char *err, size_t errlen)
{
	int fd, rc;

	if ((fd = connect_broker(b, timeout_ms, err, errlen)) < 0)
		return -1;
	rc = tkc_call_api(fd, RN_KAPI_ALTER_REPLICA_LOG_DIRS, 1, req, ar, resp,
	    timeout_ms, err, errlen);
	close(fd);
	return rc;
}

void
tld_map_free(struct tld_map *m)
{
	int i;

	for (i = 0; i < m->n; i++) {
		free(m->v[i].topic);
		free(m->v[i].dir);
	}
	free(m->v);
	memset(m, 0, sizeof(*m));
}
