/*
 * A direct Metadata v10-v12 request to the first bootstrap server.
 *
 * librdkafka 2.0.2 asks for Metadata v4 at most through rd_kafka_metadata(),
 * which carries neither topic ids (v10) nor offline replicas and the
 * internal flag in its public structs. One blocking request/response on a
 * plain-text socket (tools/tool_kclient.c, the generated codec) gets them;
 * any failure (TLS/SASL listener, an older broker, a parse error) makes
 * the caller fall back to librdkafka.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "protocol/kmsg_gen.h"
#include "tools/tool_common.h"
#include "tools/tool_kclient.h"

#define MAX_API_KEY 128

/* What ApiVersions said: -2 not asked (or no answer), -1 not supported,
 * else the highest version. */
static int api_max[MAX_API_KEY];
static bool api_known;

/* Highest Metadata version the broker takes, from ApiVersions v0. */
static int
metadata_max_version(int fd, int timeout_ms, char *err, size_t errlen)
{
	struct rn_ApiVersionsRequest req;
	struct rn_ApiVersionsResponse resp;
	struct rn_arena arena;
	int32_t i;
	int max = -1;

	rn_arena_init(&arena, 0);
	rn_ApiVersionsRequest_init(&req);
	resp.error_code = 0;
	if (tkc_call_api(fd, RN_KAPI_API_VERSIONS, 0, &req, &arena, &resp,
	    timeout_ms, err, errlen) != 0 || resp.error_code != 0) {
		if (resp.error_code != 0)
			snprintf(err, errlen, "ApiVersions failed (error %d)",
			    resp.error_code);
		rn_arena_free(&arena);
		return -1;
	}
	for (i = 0; i < MAX_API_KEY; i++)
		api_max[i] = -1;
	for (i = 0; i < resp.api_keys_count; i++) {
		const struct rn_ApiVersionsResponse_ApiVersion *a =
		    &resp.api_keys[i];

		if (a->api_key >= 0 && a->api_key < MAX_API_KEY)
			api_max[a->api_key] = a->max_version;
		if (a->api_key == RN_KAPI_METADATA && a->min_version <= 12)
			max = a->max_version;
	}
	rn_arena_free(&arena);
	api_known = true;
	return max;
}

/* A malloc'd copy of n ids (never NULL on success). */
static int32_t *
ids_dup(const int32_t *ids, int32_t n, int *np)
{
	int32_t *a = calloc((size_t)n + 1, sizeof(*a));

	*np = 0;
	if (a != NULL && n > 0) {
		memcpy(a, ids, sizeof(*a) * (size_t)n);
		*np = n;
	}
	return a;
}

static char *
kstr_dup(struct rn_kstr s)
{
	char *d;

	if (s.len < 0 || (d = malloc((size_t)s.len + 1)) == NULL)
		return NULL;
	memcpy(d, s.ptr, (size_t)s.len);
	d[s.len] = '\0';
	return d;
}

static int
topic_from(const struct rn_MetadataResponse_MetadataResponseTopic *mt,
    struct tool_topic *t)
{
	int32_t j;

	t->err = mt->error_code;
	if (!rn_uuid_is_zero(&mt->topic_id))
		rn_uuid_str(&mt->topic_id, t->id);
	t->internal = mt->is_internal;
	if ((t->name = kstr_dup(mt->name)) == NULL ||
	    (t->parts = calloc((size_t)mt->partitions_count + 1,
	    sizeof(*t->parts))) == NULL)
		return -1;
	for (j = 0; j < mt->partitions_count; j++) {
		const struct rn_MetadataResponse_MetadataResponsePartition *mp =
		    &mt->partitions[j];
		struct tool_part *p = &t->parts[t->n_parts++];

		p->err = mp->error_code;
		p->id = mp->partition_index;
		p->leader = mp->leader_id;
		if ((p->replicas = ids_dup(mp->replica_nodes,
		    mp->replica_nodes_count, &p->n_replicas)) == NULL ||
		    (p->isr = ids_dup(mp->isr_nodes, mp->isr_nodes_count,
		    &p->n_isr)) == NULL ||
		    (p->offline = ids_dup(mp->offline_replicas,
		    mp->offline_replicas_count, &p->n_offline)) == NULL)
			return -1;
	}
	return 0;
}

static int
md_from(const struct rn_MetadataResponse *m, struct tool_md *md)
{
	int32_t i;

	if ((md->brokers = calloc((size_t)m->brokers_count + 1,
	    sizeof(int32_t))) == NULL ||
	    (md->topics = calloc((size_t)m->topics_count + 1,
	    sizeof(*md->topics))) == NULL)
		return -1;
	for (i = 0; i < m->brokers_count; i++)
		md->brokers[md->n_brokers++] = m->brokers[i].node_id;
	md->cluster_id = kstr_dup(m->cluster_id);
	md->controller = m->controller_id;
	for (i = 0; i < m->topics_count; i++)
		if (topic_from(&m->topics[i], &md->topics[md->n_topics++]) != 0)
			return -1;
	return 0;
}

bool
tool_api_unsupported(int key)
{
	return api_known && key >= 0 && key < MAX_API_KEY && api_max[key] < 0;
}

void
tool_api_probe(const char *bootstrap, int timeout_ms)
{
	char err[256];
	int fd;

	if (api_known)
		return;
	if ((fd = tkc_connect(bootstrap, timeout_ms, err, sizeof(err))) == -1)
		return;
	(void)metadata_max_version(fd, timeout_ms, err, sizeof(err));
	close(fd);
}

int
tool_kmeta_fetch(const char *bootstrap, int timeout_ms, struct tool_md *md,
    char *err, size_t errlen)
{
	struct rn_MetadataRequest req;
	struct rn_MetadataResponse resp;
	struct rn_arena arena;
	int fd, ver, rc = -1;

	memset(md, 0, sizeof(*md));
	md->controller = -1;
	err[0] = '\0';
	if ((fd = tkc_connect(bootstrap, timeout_ms, err, errlen)) == -1)
		return -1;
	rn_arena_init(&arena, 0);
	if ((ver = metadata_max_version(fd, timeout_ms, err, errlen)) < 0)
		goto out;
	if (ver < 10) {
		snprintf(err, errlen, "broker speaks Metadata v%d at most", ver);
		goto out;
	}
	if (ver > 12)
		ver = 12;
	rn_MetadataRequest_init(&req);
	req.topics_count = -1; /* null: all of them */
	req.allow_auto_topic_creation = false;
	if (tkc_call_api(fd, RN_KAPI_METADATA, (int16_t)ver, &req, &arena,
	    &resp, timeout_ms, err, errlen) != 0)
		goto out;
	if (md_from(&resp, md) != 0) {
		snprintf(err, errlen, "malformed Metadata v%d response", ver);
		goto out;
	}
	md->version = ver;
	rc = 0;
out:
	rn_arena_free(&arena);
	close(fd);
	return rc;
}
