/*
 * Groups and their members as data: the registry of groups (a hash by
 * group id), members and the ids handed out to them, their protocols and
 * the protocol a group agrees on. group.c moves them through the states.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/coordinator/coord_int.h"

static unsigned
bucket_of(const char *s, size_t n)
{
	return rn_hash32(s, n) % CO_BUCKETS;
}

bool
co_kstr_is(struct rn_kstr k, const char *s)
{
	size_t n = k.len > 0 ? (size_t)k.len : 0;

	return k.len >= 0 && s != NULL && strlen(s) == n &&
	    (n == 0 || memcmp(k.ptr, s, n) == 0);
}

const char *
co_state_name(enum co_gstate s)
{
	static const char *const names[] = { "Empty", "PreparingRebalance",
	    "CompletingRebalance", "Stable", "Dead" };

	return names[s];
}

struct co_group *
co_group_find(struct co *co, struct rn_kstr id)
{
	struct co_group *g;

	for (g = co->buckets[bucket_of(id.ptr, (size_t)(id.len > 0 ?
	    id.len : 0))]; g != NULL; g = g->next)
		if (co_kstr_is(id, g->id))
			return g;
	return NULL;
}

struct co_group *
co_group_create(struct co *co, struct rn_kstr id, int32_t partition)
{
	struct co_group *g = calloc(1, sizeof(*g));
	unsigned b = bucket_of(id.ptr, (size_t)(id.len > 0 ? id.len : 0));

	if (g == NULL)
		fatalx("group coordinator: out of memory");
	g->id = co_strdup(id);
	g->partition = partition;
	g->state = GS_EMPTY;
	g->state_ts = rn_wallclock_ms();
	g->next = co->buckets[b];
	co->buckets[b] = g;
	co->n_groups++;
	return g;
}

void
co_member_free(struct co_member *m)
{
	int i;

	for (i = 0; i < m->n_protos; i++) {
		free(m->protos[i].name);
		free(m->protos[i].meta);
	}
	free(m->protos);
	free(m->id);
	free(m->instance_id);
	free(m->client_id);
	free(m->client_host);
	free(m->assignment);
	free(m);
}

void
co_group_remove(struct co *co, struct co_group *g)
{
	struct co_group **pp = &co->buckets[bucket_of(g->id, strlen(g->id))];
	int i;

	while (*pp != NULL && *pp != g)
		pp = &(*pp)->next;
	if (*pp == g)
		*pp = g->next;
	for (i = 0; i < g->n_members; i++)
		co_member_free(g->members[i]);
	for (i = 0; i < g->n_pending; i++)
		free(g->pending[i].id);
	free(g->members);
	free(g->pending);
	co_offsets_free(g);
	free(g->id);
	free(g->protocol_type);
	free(g->protocol);
	free(g->leader);
	free(g);
	co->n_groups--;
}

void
co_set_state(struct co_group *g, enum co_gstate s)
{
	g->state = s;
	g->state_ts = rn_wallclock_ms();
}

void
co_set_str(char **dst, const char *src)
{
	free(*dst);
	*dst = src != NULL ? co_strdup(co_ks(src)) : NULL;
}

struct co_member *
co_member_find(struct co_group *g, struct rn_kstr id)
{
	int i;

	for (i = 0; i < g->n_members; i++)
		if (co_kstr_is(id, g->members[i]->id))
			return g->members[i];
	return NULL;
}

struct co_member *
co_member_by_instance(struct co_group *g, struct rn_kstr inst)
{
	int i;

	if (inst.len < 0)
		return NULL;
	for (i = 0; i < g->n_members; i++)
		if (g->members[i]->instance_id != NULL &&
		    co_kstr_is(inst, g->members[i]->instance_id))
			return g->members[i];
	return NULL;
}

int
co_pending_find(struct co_group *g, struct rn_kstr id)
{
	int i;

	for (i = 0; i < g->n_pending; i++)
		if (co_kstr_is(id, g->pending[i].id))
			return i;
	return -1;
}

void
co_pending_drop(struct co_group *g, int i)
{
	free(g->pending[i].id);
	g->pending[i] = g->pending[--g->n_pending];
}

void
co_pending_add(struct co_group *g, const char *id, int64_t expire)
{
	if (g->n_pending == g->cap_pending) {
		int cap = g->cap_pending ? 2 * g->cap_pending : 4;
		void *p = realloc(g->pending, sizeof(*g->pending) *
		    (size_t)cap);

		if (p == NULL)
			fatalx("group coordinator: out of memory");
		g->pending = p;
		g->cap_pending = cap;
	}
	g->pending[g->n_pending].id = co_strdup(co_ks(id));
	g->pending[g->n_pending++].expire_ms = expire;
}

void
co_member_add(struct co_group *g, struct co_member *m)
{
	if (g->n_members == g->cap_members) {
		int cap = g->cap_members ? 2 * g->cap_members : 4;
		void *p = realloc(g->members, sizeof(*g->members) *
		    (size_t)cap);

		if (p == NULL)
			fatalx("group coordinator: out of memory");
		g->members = p;
		g->cap_members = cap;
	}
	g->members[g->n_members++] = m;
	if (g->leader == NULL)
		co_set_str(&g->leader, m->id);
}

/* "<prefix>-<uuid>", as Kafka names members. */
char *
co_member_id_new(struct rn_kstr prefix)
{
	struct rn_uuid u;
	const uint8_t *b;
	char *s;
	size_t n = prefix.len > 0 ? (size_t)prefix.len : 0, o;
	int i;

	rn_uuid_random(&u);
	b = (const uint8_t *)&u;
	if (n > 255)
		n = 255;
	if ((s = malloc(n + 38)) == NULL)
		fatalx("group coordinator: out of memory");
	if (n > 0)
		memcpy(s, prefix.ptr, n);
	o = n;
	s[o++] = '-';
	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			s[o++] = '-';
		o += (size_t)snprintf(s + o, 3, "%02x", b[i]);
	}
	s[o] = '\0';
	return s;
}

const struct co_proto *
co_member_proto(const struct co_member *m, const char *name)
{
	int i;

	for (i = 0; name != NULL && i < m->n_protos; i++)
		if (strcmp(m->protos[i].name, name) == 0)
			return &m->protos[i];
	return NULL;
}

/* Replace a member's protocols with those of its JoinGroup. */
void
co_member_set_protos(struct co_member *m,
    const struct rn_JoinGroupRequest *req)
{
	int i;

	for (i = 0; i < m->n_protos; i++) {
		free(m->protos[i].name);
		free(m->protos[i].meta);
	}
	free(m->protos);
	m->protos = calloc((size_t)(req->protocols_count > 0 ?
	    req->protocols_count : 1), sizeof(*m->protos));
	if (m->protos == NULL)
		fatalx("group coordinator: out of memory");
	for (i = 0; i < req->protocols_count; i++) {
		const struct rn_kbytes *md = &req->protocols[i].metadata;
		int32_t len = md->len > 0 ? md->len : 0;

		m->protos[i].name = co_strdup(req->protocols[i].name);
		m->protos[i].meta = malloc((size_t)len + 1);
		if (m->protos[i].meta == NULL)
			fatalx("group coordinator: out of memory");
		if (len > 0)
			memcpy(m->protos[i].meta, md->ptr, (size_t)len);
		m->protos[i].len = len;
	}
	m->n_protos = req->protocols_count;
}

/* Whether the member's protocols are those of this JoinGroup. */
bool
co_member_same_protos(const struct co_member *m,
    const struct rn_JoinGroupRequest *req)
{
	int i;

	if (m->n_protos != req->protocols_count)
		return false;
	for (i = 0; i < m->n_protos; i++) {
		const struct rn_kbytes *md = &req->protocols[i].metadata;

		if (!co_kstr_is(req->protocols[i].name, m->protos[i].name) ||
		    (md->len > 0 ? md->len : 0) != m->protos[i].len ||
		    (m->protos[i].len > 0 && memcmp(md->ptr, m->protos[i].meta,
		    (size_t)m->protos[i].len) != 0))
			return false;
	}
	return true;
}

/*
 * Kafka's protocol choice: among the protocols every member supports,
 * each member votes for the first of its own list; most votes wins (ties
 * to the earliest candidate of the first member).
 */
const char *
co_select_protocol(const struct co_group *g)
{
	const struct co_member *m0 = g->members[0];
	int best = -1, best_votes = -1, i, j, k;

	for (i = 0; i < m0->n_protos; i++) {
		const char *cand = m0->protos[i].name;
		int votes = 0;
		bool all = true;

		for (j = 0; j < g->n_members && all; j++)
			all = co_member_proto(g->members[j], cand) != NULL;
		if (!all)
			continue;
		for (j = 0; j < g->n_members; j++) {
			const struct co_member *m = g->members[j];

			for (k = 0; k < m->n_protos; k++) {
				bool common = true;
				int x;

				for (x = 0; x < g->n_members && common; x++)
					common = co_member_proto(g->members[x],
					    m->protos[k].name) != NULL;
				if (common) {
					if (strcmp(m->protos[k].name, cand) == 0)
						votes++;
					break;
				}
			}
		}
		if (votes > best_votes) {
			best_votes = votes;
			best = i;
		}
	}
	return best >= 0 ? m0->protos[best].name : NULL;
}

/* Would a member with these protocols fit the group's? */
bool
co_protocols_fit(const struct co_group *g,
    const struct rn_JoinGroupRequest *req)
{
	int i, j;

	if (req->protocol_type.len <= 0 || req->protocols_count <= 0)
		return false;
	if (g->state == GS_EMPTY || g->n_members == 0)
		return true;
	if (g->protocol_type == NULL || !co_kstr_is(req->protocol_type,
	    g->protocol_type))
		return false;
	for (i = 0; i < req->protocols_count; i++) {
		char name[256];
		bool all = true;

		snprintf(name, sizeof(name), "%.*s",
		    (int)req->protocols[i].name.len, req->protocols[i].name.ptr);
		for (j = 0; j < g->n_members && all; j++)
			all = co_member_proto(g->members[j], name) != NULL;
		if (all)
			return true;
	}
	return false;
}
