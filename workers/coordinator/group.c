/*
 * Consumer groups: the classic group protocol's state machine as Kafka's
 * group coordinator runs it. A group is Empty, PreparingRebalance (members
 * rejoin; their JoinGroup is held), CompletingRebalance (the leader got
 * the members and computes the assignment; SyncGroups are held), Stable,
 * or Dead (deleted, or its partition is led elsewhere now).
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
	uint32_t h = 2166136261u;

	while (n-- > 0)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h % CO_BUCKETS;
}

static bool
kstr_is(struct rn_kstr k, const char *s)
{
	size_t n = k.len > 0 ? (size_t)k.len : 0;

	return k.len >= 0 && s != NULL && strlen(s) == n &&
	    memcmp(k.ptr, s, n) == 0;
}

static struct rn_kstr
ks(const char *s)
{
	return rn_kstr_c(s);
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
		if (kstr_is(id, g->id))
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

static void
member_free(struct co_member *m)
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
		member_free(g->members[i]);
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

static void
set_state(struct co_group *g, enum co_gstate s)
{
	g->state = s;
	g->state_ts = rn_wallclock_ms();
}

static void
set_str(char **dst, const char *src)
{
	free(*dst);
	*dst = src != NULL ? co_strdup(ks(src)) : NULL;
}

static struct co_member *
member_find(struct co_group *g, struct rn_kstr id)
{
	int i;

	for (i = 0; i < g->n_members; i++)
		if (kstr_is(id, g->members[i]->id))
			return g->members[i];
	return NULL;
}

static struct co_member *
member_by_instance(struct co_group *g, struct rn_kstr inst)
{
	int i;

	if (inst.len < 0)
		return NULL;
	for (i = 0; i < g->n_members; i++)
		if (g->members[i]->instance_id != NULL &&
		    kstr_is(inst, g->members[i]->instance_id))
			return g->members[i];
	return NULL;
}

static int
pending_find(struct co_group *g, struct rn_kstr id)
{
	int i;

	for (i = 0; i < g->n_pending; i++)
		if (kstr_is(id, g->pending[i].id))
			return i;
	return -1;
}

static void
pending_drop(struct co_group *g, int i)
{
	free(g->pending[i].id);
	g->pending[i] = g->pending[--g->n_pending];
}

static void
pending_add(struct co_group *g, const char *id, int64_t expire)
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
	g->pending[g->n_pending].id = co_strdup(ks(id));
	g->pending[g->n_pending++].expire_ms = expire;
}

static void
member_add(struct co_group *g, struct co_member *m)
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
		set_str(&g->leader, m->id);
}

/* "<prefix>-<uuid>", as Kafka names members. */
static char *
member_id_new(struct rn_kstr prefix)
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

static const struct co_proto *
member_proto(const struct co_member *m, const char *name)
{
	int i;

	for (i = 0; name != NULL && i < m->n_protos; i++)
		if (strcmp(m->protos[i].name, name) == 0)
			return &m->protos[i];
	return NULL;
}

/* Replace a member's protocols with those of its JoinGroup. */
static void
member_set_protos(struct co_member *m, const struct rn_JoinGroupRequest *req)
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
static bool
member_same_protos(const struct co_member *m,
    const struct rn_JoinGroupRequest *req)
{
	int i;

	if (m->n_protos != req->protocols_count)
		return false;
	for (i = 0; i < m->n_protos; i++) {
		const struct rn_kbytes *md = &req->protocols[i].metadata;

		if (!kstr_is(req->protocols[i].name, m->protos[i].name) ||
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
static const char *
select_protocol(const struct co_group *g)
{
	const struct co_member *m0 = g->members[0];
	int best = -1, best_votes = -1, i, j, k;

	for (i = 0; i < m0->n_protos; i++) {
		const char *cand = m0->protos[i].name;
		int votes = 0;
		bool all = true;

		for (j = 0; j < g->n_members && all; j++)
			all = member_proto(g->members[j], cand) != NULL;
		if (!all)
			continue;
		for (j = 0; j < g->n_members; j++) {
			const struct co_member *m = g->members[j];

			for (k = 0; k < m->n_protos; k++) {
				bool common = true;
				int x;

				for (x = 0; x < g->n_members && common; x++)
					common = member_proto(g->members[x],
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
static bool
protocols_fit(const struct co_group *g, const struct rn_JoinGroupRequest *req)
{
	int i, j;

	if (req->protocol_type.len <= 0 || req->protocols_count <= 0)
		return false;
	if (g->state == GS_EMPTY || g->n_members == 0)
		return true;
	if (g->protocol_type == NULL || !kstr_is(req->protocol_type,
	    g->protocol_type))
		return false;
	for (i = 0; i < req->protocols_count; i++) {
		char name[256];
		bool all = true;

		snprintf(name, sizeof(name), "%.*s",
		    (int)req->protocols[i].name.len, req->protocols[i].name.ptr);
		for (j = 0; j < g->n_members && all; j++)
			all = member_proto(g->members[j], name) != NULL;
		if (all)
			return true;
	}
	return false;
}

/* ---- replies -------------------------------------------------------- */

static void
join_error(struct co *co, struct co_pending *p, int16_t err,
    const char *member_id)
{
	struct rn_JoinGroupResponse r;

	rn_JoinGroupResponse_init(&r);
	r.error_code = err;
	r.generation_id = -1;
	r.protocol_name = ks(p->ver >= 7 ? NULL : "");
	r.leader = ks("");
	r.member_id = ks(member_id != NULL ? member_id : "");
	(void)co_reply(co, p, &r);
	p->active = false;
}

/* The JoinGroup answer of one member once its rebalance completed. */
static void
join_answer(struct co *co, struct co_group *g, struct co_member *m)
{
	struct rn_JoinGroupResponse r;
	struct rn_JoinGroupResponse_JoinGroupResponseMember *ms = NULL;
	bool leader = g->leader != NULL && strcmp(g->leader, m->id) == 0;
	int i, k = 0;

	if (!m->join.active)
		return;
	rn_JoinGroupResponse_init(&r);
	r.generation_id = g->generation;
	r.protocol_type = ks(g->protocol_type);
	r.protocol_name = ks(g->protocol != NULL ? g->protocol :
	    (m->join.ver >= 7 ? NULL : ""));
	r.leader = ks(g->leader != NULL ? g->leader : "");
	r.member_id = ks(m->id);
	r.skip_assignment = m->skip_assignment && m->join.ver >= 9;
	if (leader && (ms = calloc((size_t)g->n_members, sizeof(*ms))) ==
	    NULL)
		fatalx("group coordinator: out of memory");
	for (i = 0; leader && i < g->n_members; i++) {
		const struct co_member *o = g->members[i];
		const struct co_proto *pr = member_proto(o, g->protocol);

		ms[k].member_id = ks(o->id);
		ms[k].group_instance_id = ks(o->instance_id);
		ms[k].metadata.ptr = pr != NULL ? pr->meta : NULL;
		ms[k].metadata.len = pr != NULL ? pr->len : 0;
		k++;
	}
	r.members = ms;
	r.members_count = k;
	(void)co_reply(co, &m->join, &r);
	free(ms);
	m->join.active = false;
	m->skip_assignment = false;
}

static void
sync_answer(struct co *co, struct co_pending *p, int16_t err,
    const struct co_group *g, const struct co_member *m)
{
	struct rn_SyncGroupResponse r;

	rn_SyncGroupResponse_init(&r);
	r.error_code = err;
	if (err == 0 && g != NULL) {
		r.protocol_type = ks(g->protocol_type);
		r.protocol_name = ks(g->protocol);
	}
	r.assignment.ptr = err == 0 && m != NULL ? m->assignment : NULL;
	r.assignment.len = err == 0 && m != NULL ? m->assignment_len : 0;
	(void)co_reply(co, p, &r);
	p->active = false;
}

/* Tell a member's held requests, if any, and drop the member. */
static void
member_remove(struct co *co, struct co_group *g, struct co_member *m,
    int16_t err)
{
	int i;

	if (m->join.active)
		join_error(co, &m->join, err, m->id);
	if (m->sync.active)
		sync_answer(co, &m->sync, err, NULL, NULL);
	for (i = 0; i < g->n_members; i++)
		if (g->members[i] == m) {
			memmove(&g->members[i], &g->members[i + 1],
			    sizeof(*g->members) * (size_t)(g->n_members - i - 1));
			g->n_members--;
			break;
		}
	if (g->leader != NULL && strcmp(g->leader, m->id) == 0) {
		free(g->leader);
		g->leader = NULL;
		/* a member that is rejoining is the first choice */
		for (i = 0; i < g->n_members && g->leader == NULL; i++)
			if (g->members[i]->join.active)
				set_str(&g->leader, g->members[i]->id);
		if (g->leader == NULL && g->n_members > 0)
			set_str(&g->leader, g->members[0]->id);
	}
	member_free(m);
}

/* ---- rebalance ------------------------------------------------------ */

static void maybe_complete_join(struct co *, struct co_group *);

static int32_t
max_rebalance_ms(const struct co_group *g)
{
	int32_t t = 0;
	int i;

	for (i = 0; i < g->n_members; i++)
		if (g->members[i]->rebalance_ms > t)
			t = g->members[i]->rebalance_ms;
	return t;
}

static void
prepare_rebalance(struct co *co, struct co_group *g, const char *why)
{
	int i;

	/* held syncs of the generation that ends get REBALANCE_IN_PROGRESS */
	for (i = 0; i < g->n_members; i++)
		if (g->members[i]->sync.active)
			sync_answer(co, &g->members[i]->sync,
			    RN_KERR_REBALANCE_IN_PROGRESS, NULL, NULL);
	/*
	 * The first rebalance of an empty group waits
	 * group.initial.rebalance.delay.ms for more members, again each
	 * time some came meanwhile, up to the rebalance timeout (Kafka's
	 * initial delayed join).
	 */
	g->initial_delay = g->state == GS_EMPTY && co->gs.initial_delay_ms > 0;
	if (g->initial_delay) {
		int64_t d = co->gs.initial_delay_ms < max_rebalance_ms(g) ?
		    co->gs.initial_delay_ms : max_rebalance_ms(g);

		g->join_deadline = co->now + d;
		g->delay_left_ms = max_rebalance_ms(g) - d;
		g->delay_members = g->n_members;
	} else
		g->join_deadline = co->now + max_rebalance_ms(g);
	set_state(g, GS_PREPARING);
	log_info("group %s: preparing to rebalance generation %d (%s)",
	    g->id, g->generation, why);
	maybe_complete_join(co, g);
}

static bool
all_joined(const struct co_group *g)
{
	int i;

	if (g->n_pending > 0)
		return false;
	for (i = 0; i < g->n_members; i++)
		if (!g->members[i]->join.active)
			return false;
	return true;
}

/* Everyone who will rejoin did, or the time is up: a new generation. */
static void
complete_join(struct co *co, struct co_group *g)
{
	const char *proto;
	int i;

	for (i = 0; i < g->n_members;) {
		struct co_member *m = g->members[i];

		if (m->join.active) {
			i++;
			continue;
		}
		log_info("group %s: member %s did not rejoin in time", g->id,
		    m->id);
		member_remove(co, g, m, RN_KERR_UNKNOWN_MEMBER_ID);
	}
	g->generation++;
	if (g->n_members == 0) {
		set_str(&g->protocol, NULL);
		set_state(g, GS_EMPTY);
		co_group_store(co, g);
		log_info("group %s: generation %d is empty", g->id,
		    g->generation);
		return;
	}
	proto = select_protocol(g);
	set_str(&g->protocol, proto);
	set_state(g, GS_COMPLETING);
	log_info("group %s: generation %d with %d members, protocol %s, "
	    "leader %s", g->id, g->generation, g->n_members,
	    proto ? proto : "-", g->leader);
	for (i = 0; i < g->n_members; i++) {
		struct co_member *m = g->members[i];

		m->expire_ms = co->now + m->session_ms;
		join_answer(co, g, m);
	}
}

static void
maybe_complete_join(struct co *co, struct co_group *g)
{
	if (g->state == GS_PREPARING && !g->initial_delay && all_joined(g))
		complete_join(co, g);
}

/* A member leaves or expires: the group rebalances without it. */
static void
member_gone(struct co *co, struct co_group *g, struct co_member *m,
    const char *why)
{
	log_info("group %s: member %s %s", g->id, m->id, why);
	member_remove(co, g, m, RN_KERR_UNKNOWN_MEMBER_ID);
	if (g->state == GS_STABLE || g->state == GS_COMPLETING) {
		if (g->n_members == 0) {
			g->generation++;
			set_str(&g->protocol, NULL);
			set_state(g, GS_EMPTY);
			co_group_store(co, g);
		} else
			prepare_rebalance(co, g, why);
	} else if (g->state == GS_PREPARING) {
		if (g->n_members == 0 && g->n_pending == 0) {
			g->generation++;
			set_str(&g->protocol, NULL);
			set_state(g, GS_EMPTY);
			co_group_store(co, g);
		} else
			maybe_complete_join(co, g);
	}
}

/* ---- JoinGroup ------------------------------------------------------ */

static struct co_member *
member_new(struct co_req *r, const struct rn_JoinGroupRequest *req,
    char *id)
{
	struct co_member *m = calloc(1, sizeof(*m));

	if (m == NULL)
		fatalx("group coordinator: out of memory");
	m->id = id;
	m->instance_id = req->group_instance_id.len >= 0 ?
	    co_strdup(req->group_instance_id) : NULL;
	m->client_id = co_strdup(r->client);
	m->client_host = co_strdup(r->host);
	m->session_ms = req->session_timeout_ms;
	/* v0 has no rebalance timeout: Kafka uses the session timeout */
	m->rebalance_ms = req->rebalance_timeout_ms > 0 ?
	    req->rebalance_timeout_ms : req->session_timeout_ms;
	member_set_protos(m, req);
	return m;
}

/* Hold the member's JoinGroup for the rebalance. */
static void
join_hold(struct co *co, struct co_group *g, struct co_member *m,
    struct co_req *r)
{
	if (m->join.active)
		/* a retried join replaces the one held */
		join_error(co, &m->join, RN_KERR_UNKNOWN_MEMBER_ID, m->id);
	m->join = r->pend;
	m->join.active = true;
	if (g->protocol_type == NULL || g->n_members <= 1) {
		const struct rn_JoinGroupRequest *req = r->req;

		free(g->protocol_type);
		g->protocol_type = co_strdup(req->protocol_type);
	}
}

/*
 * A static member back under a new member id: it takes the old one's
 * place. In a Stable group with the same protocols it gets the current
 * generation back and nobody else rebalances.
 */
static int
join_static_rejoin(struct co *co, struct co_group *g, struct co_member *old,
    struct co_req *r)
{
	const struct rn_JoinGroupRequest *req = r->req;
	bool same = member_same_protos(old, req);
	bool was_leader = g->leader != NULL && strcmp(g->leader, old->id) == 0;
	char *id = member_id_new(req->group_instance_id);

	if (old->join.active)
		join_error(co, &old->join, RN_KERR_FENCED_INSTANCE_ID, old->id);
	if (old->sync.active)
		sync_answer(co, &old->sync, RN_KERR_FENCED_INSTANCE_ID, NULL,
		    NULL);
	log_info("group %s: static member %s rejoined as %s", g->id,
	    old->instance_id, id);
	free(old->id);
	old->id = id;
	if (was_leader)
		set_str(&g->leader, id);
	old->session_ms = req->session_timeout_ms;
	old->rebalance_ms = req->rebalance_timeout_ms > 0 ?
	    req->rebalance_timeout_ms : req->session_timeout_ms;
	old->expire_ms = co->now + old->session_ms;
	if (g->state == GS_STABLE && same) {
		old->join = r->pend;
		old->join.active = true;
		/* the leader's plan stands: JoinGroup v9 lets it skip one */
		old->skip_assignment = was_leader;
		join_answer(co, g, old);
		co_group_store(co, g);
		return 0;
	}
	member_set_protos(old, req);
	join_hold(co, g, old, r);
	if (g->state == GS_PREPARING)
		maybe_complete_join(co, g);
	else
		prepare_rebalance(co, g, "a static member rejoined with "
		    "other protocols");
	return 0;
}

static int
join_unknown(struct co *co, struct co_group *g, struct co_req *r)
{
	const struct rn_JoinGroupRequest *req = r->req;
	struct co_member *m;
	char *id;

	if ((m = member_by_instance(g, req->group_instance_id)) != NULL)
		return join_static_rejoin(co, g, m, r);
	if (g->n_members + g->n_pending >= co->gs.max_size ||
	    g->n_pending >= CO_MAX_PENDING) {
		join_error(co, &r->pend, RN_KERR_GROUP_MAX_SIZE_REACHED, NULL);
		return 0;
	}
	id = member_id_new(req->group_instance_id.len >= 0 ?
	    req->group_instance_id : r->client);
	if (r->pend.ver >= 4 && req->group_instance_id.len < 0) {
		/* KIP-394: the member comes back with the id it is given */
		pending_add(g, id, co->now + req->session_timeout_ms);
		join_error(co, &r->pend, RN_KERR_MEMBER_ID_REQUIRED, id);
		free(id);
		return 0;
	}
	m = member_new(r, req, id);
	m->expire_ms = co->now + m->session_ms;
	member_add(g, m);
	join_hold(co, g, m, r);
	if (g->state == GS_PREPARING)
		maybe_complete_join(co, g);
	else
		prepare_rebalance(co, g, "a new member joined");
	return 0;
}

static int
join_known(struct co *co, struct co_group *g, struct co_req *r)
{
	const struct rn_JoinGroupRequest *req = r->req;
	struct co_member *m;
	int pi;

	if ((pi = pending_find(g, req->member_id)) >= 0) {
		if (g->n_members >= co->gs.max_size) {
			pending_drop(g, pi);
			join_error(co, &r->pend, RN_KERR_GROUP_MAX_SIZE_REACHED,
			    NULL);
			return 0;
		}
		pending_drop(g, pi);
		m = member_new(r, req, co_strdup(req->member_id));
		m->expire_ms = co->now + m->session_ms;
		member_add(g, m);
		join_hold(co, g, m, r);
		if (g->state == GS_PREPARING)
			maybe_complete_join(co, g);
		else
			prepare_rebalance(co, g, "a new member joined");
		return 0;
	}
	if ((m = member_find(g, req->member_id)) == NULL) {
		struct co_member *s = member_by_instance(g,
		    req->group_instance_id);

		join_error(co, &r->pend, s != NULL ?
		    RN_KERR_FENCED_INSTANCE_ID : RN_KERR_UNKNOWN_MEMBER_ID,
		    NULL);
		return 0;
	}
	if (m->instance_id != NULL && req->group_instance_id.len >= 0 &&
	    !kstr_is(req->group_instance_id, m->instance_id)) {
		join_error(co, &r->pend, RN_KERR_FENCED_INSTANCE_ID, NULL);
		return 0;
	}
	m->expire_ms = co->now + m->session_ms;
	switch (g->state) {
	case GS_PREPARING:
		member_set_protos(m, req);
		join_hold(co, g, m, r);
		maybe_complete_join(co, g);
		return 0;
	case GS_COMPLETING:
	case GS_STABLE:
		if (member_same_protos(m, req) && !(g->state == GS_STABLE &&
		    g->leader != NULL && strcmp(g->leader, m->id) == 0)) {
			/* a join already answered, or nothing changed */
			m->join = r->pend;
			m->join.active = true;
			join_answer(co, g, m);
			return 0;
		}
		member_set_protos(m, req);
		join_hold(co, g, m, r);
		prepare_rebalance(co, g, "a member rejoined");
		return 0;
	default:
		join_error(co, &r->pend, RN_KERR_UNKNOWN_MEMBER_ID, NULL);
		return 0;
	}
}

int
co_join_group(struct co *co, struct co_req *r)
{
	const struct rn_JoinGroupRequest *req = r->req;
	struct co_group *g;
	int16_t err;
	int32_t p;

	if (req->group_id.len <= 0) {
		join_error(co, &r->pend, RN_KERR_INVALID_GROUP_ID, NULL);
		return 0;
	}
	p = co_partition_of(co, req->group_id);
	if ((err = co_part_error(co, p)) != 0) {
		join_error(co, &r->pend, err, NULL);
		return 0;
	}
	if (req->session_timeout_ms < co->gs.min_session_ms ||
	    req->session_timeout_ms > co->gs.max_session_ms) {
		join_error(co, &r->pend, RN_KERR_INVALID_SESSION_TIMEOUT, NULL);
		return 0;
	}
	g = co_group_find(co, req->group_id);
	if (g == NULL && req->member_id.len > 0) {
		join_error(co, &r->pend, RN_KERR_UNKNOWN_MEMBER_ID, NULL);
		return 0;
	}
	if (g != NULL && g->state == GS_DEAD) {
		join_error(co, &r->pend, RN_KERR_COORDINATOR_NOT_AVAILABLE,
		    NULL);
		return 0;
	}
	if (g != NULL && !protocols_fit(g, req)) {
		join_error(co, &r->pend, RN_KERR_INCONSISTENT_GROUP_PROTOCOL,
		    NULL);
		return 0;
	}
	if (g == NULL) {
		if (req->protocol_type.len <= 0 || req->protocols_count <= 0) {
			join_error(co, &r->pend,
			    RN_KERR_INCONSISTENT_GROUP_PROTOCOL, NULL);
			return 0;
		}
		g = co_group_create(co, req->group_id, p);
	}
	if (req->member_id.len <= 0)
		return join_unknown(co, g, r);
	return join_known(co, g, r);
}

/* ---- SyncGroup, Heartbeat, LeaveGroup ------------------------------- */

/* The checks SyncGroup, Heartbeat and OffsetCommit share. */
static int16_t
member_check(struct co *co, struct rn_kstr group, struct rn_kstr member,
    struct rn_kstr instance, int32_t generation, struct co_group **gp,
    struct co_member **mp)
{
	struct co_group *g;
	struct co_member *m, *s;
	int16_t err;

	*gp = NULL;
	*mp = NULL;
	if (group.len <= 0)
		return RN_KERR_INVALID_GROUP_ID;
	if ((err = co_part_error(co, co_partition_of(co, group))) != 0)
		return err;
	if ((g = co_group_find(co, group)) == NULL)
		return RN_KERR_UNKNOWN_MEMBER_ID;
	*gp = g;
	if (g->state == GS_DEAD)
		return RN_KERR_COORDINATOR_NOT_AVAILABLE;
	m = member_find(g, member);
	s = member_by_instance(g, instance);
	if (s != NULL && s != m)
		return RN_KERR_FENCED_INSTANCE_ID;
	if (m == NULL)
		return RN_KERR_UNKNOWN_MEMBER_ID;
	*mp = m;
	if (generation != g->generation)
		return RN_KERR_ILLEGAL_GENERATION;
	return 0;
}

/* The leader's plan: each member's assignment; then Stable. */
static void
sync_complete(struct co *co, struct co_group *g,
    const struct rn_SyncGroupRequest *req)
{
	int i, j;

	for (i = 0; i < g->n_members; i++) {
		struct co_member *m = g->members[i];

		free(m->assignment);
		m->assignment = NULL;
		m->assignment_len = 0;
		for (j = 0; j < req->assignments_count; j++) {
			const struct rn_kbytes *a = &req->assignments[j].assignment;

			if (!kstr_is(req->assignments[j].member_id, m->id) ||
			    a->len <= 0)
				continue;
			if ((m->assignment = malloc((size_t)a->len)) == NULL)
				fatalx("group coordinator: out of memory");
			memcpy(m->assignment, a->ptr, (size_t)a->len);
			m->assignment_len = a->len;
			break;
		}
	}
	set_state(g, GS_STABLE);
	co_group_store(co, g);
	for (i = 0; i < g->n_members; i++)
		if (g->members[i]->sync.active)
			sync_answer(co, &g->members[i]->sync, 0, g,
			    g->members[i]);
}

int
co_sync_group(struct co *co, struct co_req *r)
{
	const struct rn_SyncGroupRequest *req = r->req;
	struct co_group *g;
	struct co_member *m;
	int16_t err;

	err = member_check(co, req->group_id, req->member_id,
	    req->group_instance_id, req->generation_id, &g, &m);
	if (err == 0 && ((req->protocol_type.len >= 0 &&
	    !kstr_is(req->protocol_type, g->protocol_type)) ||
	    (req->protocol_name.len >= 0 && !kstr_is(req->protocol_name,
	    g->protocol))))
		err = RN_KERR_INCONSISTENT_GROUP_PROTOCOL;
	if (err == 0 && g->state == GS_EMPTY)
		err = RN_KERR_UNKNOWN_MEMBER_ID;
	if (err == 0 && g->state == GS_PREPARING)
		err = RN_KERR_REBALANCE_IN_PROGRESS;
	if (err != 0) {
		sync_answer(co, &r->pend, err, NULL, NULL);
		return 0;
	}
	m->expire_ms = co->now + m->session_ms;
	if (g->state == GS_STABLE) {
		sync_answer(co, &r->pend, 0, g, m);
		return 0;
	}
	if (m->sync.active)
		sync_answer(co, &m->sync, RN_KERR_REBALANCE_IN_PROGRESS, NULL,
		    NULL);
	m->sync = r->pend;
	m->sync.active = true;
	if (g->leader != NULL && strcmp(g->leader, m->id) == 0)
		sync_complete(co, g, req);
	return 0;
}

int
co_heartbeat(struct co *co, struct co_req *r)
{
	const struct rn_HeartbeatRequest *req = r->req;
	struct rn_HeartbeatResponse resp;
	struct co_group *g;
	struct co_member *m;
	int16_t err;

	err = member_check(co, req->group_id, req->member_id,
	    req->group_instance_id, req->generation_id, &g, &m);
	if (err == 0)
		m->expire_ms = co->now + m->session_ms;
	if (err == 0 && g->state == GS_EMPTY)
		err = RN_KERR_UNKNOWN_MEMBER_ID;
	else if (err == 0 && g->state == GS_PREPARING)
		err = RN_KERR_REBALANCE_IN_PROGRESS;
	rn_HeartbeatResponse_init(&resp);
	resp.error_code = err;
	return co_reply(co, &r->pend, &resp);
}

/* One leaving member: by member id, or a static one by instance id. */
static int16_t
leave_one(struct co *co, struct co_group *g, struct rn_kstr member,
    struct rn_kstr instance)
{
	struct co_member *m = NULL, *s = member_by_instance(g, instance);
	int pi;

	if (member.len > 0)
		m = member_find(g, member);
	if (instance.len >= 0) {
		if (s == NULL)
			return RN_KERR_UNKNOWN_MEMBER_ID;
		if (member.len > 0 && m != s)
			return RN_KERR_FENCED_INSTANCE_ID;
		m = s;
	}
	if (m == NULL && (pi = pending_find(g, member)) >= 0) {
		pending_drop(g, pi);
		maybe_complete_join(co, g);
		return 0;
	}
	if (m == NULL)
		return RN_KERR_UNKNOWN_MEMBER_ID;
	member_gone(co, g, m, "left the group");
	return 0;
}

int
co_leave_group(struct co *co, struct co_req *r)
{
	const struct rn_LeaveGroupRequest *req = r->req;
	struct rn_LeaveGroupResponse resp;
	struct co_group *g = NULL;
	int16_t err;
	int32_t i;

	rn_LeaveGroupResponse_init(&resp);
	err = req->group_id.len <= 0 ? RN_KERR_INVALID_GROUP_ID :
	    co_part_error(co, co_partition_of(co, req->group_id));
	if (err == 0 && (g = co_group_find(co, req->group_id)) != NULL &&
	    g->state == GS_DEAD)
		err = RN_KERR_COORDINATOR_NOT_AVAILABLE;
	if (err != 0) {
		resp.error_code = err;
		return co_reply(co, &r->pend, &resp);
	}
	if (r->pend.ver < 3) {
		struct rn_kstr none = { NULL, -1 };

		resp.error_code = g == NULL ? RN_KERR_UNKNOWN_MEMBER_ID :
		    leave_one(co, g, req->member_id, none);
		return co_reply(co, &r->pend, &resp);
	}
	resp.members_count = req->members_count;
	resp.members = rn_arena_alloc(&co->arena, sizeof(*resp.members) *
	    (size_t)(req->members_count > 0 ? req->members_count : 1));
	if (resp.members == NULL)
		return -ENOMEM;
	for (i = 0; i < req->members_count; i++) {
		const struct rn_LeaveGroupRequest_MemberIdentity *mi =
		    &req->members[i];

		rn_LeaveGroupResponse_MemberResponse_init(&resp.members[i]);
		resp.members[i].member_id = mi->member_id;
		resp.members[i].group_instance_id = mi->group_instance_id;
		resp.members[i].error_code = g == NULL ?
		    RN_KERR_UNKNOWN_MEMBER_ID : leave_one(co, g, mi->member_id,
		    mi->group_instance_id);
	}
	return co_reply(co, &r->pend, &resp);
}

/* ---- ListGroups, DescribeGroups, DeleteGroups ----------------------- */

static bool
state_wanted(const struct rn_ListGroupsRequest *req, enum co_gstate s)
{
	const char *name = co_state_name(s);
	int32_t i;

	if (req->states_filter_count <= 0)
		return true;
	for (i = 0; i < req->states_filter_count; i++)
		if ((size_t)req->states_filter[i].len == strlen(name) &&
		    strncasecmp(req->states_filter[i].ptr, name,
		    strlen(name)) == 0)
			return true;
	return false;
}

int
co_list_groups(struct co *co, struct co_req *r)
{
	const struct rn_ListGroupsRequest *req = r->req;
	struct rn_ListGroupsResponse resp;
	struct co_group *g;
	unsigned b;
	int32_t p, k = 0;

	rn_ListGroupsResponse_init(&resp);
	for (p = 0; p < co->n_parts && p < CO_MAX_PARTS; p++)
		if (co->part[p].state == CP_LOADING)
			resp.error_code = RN_KERR_COORDINATOR_LOAD_IN_PROGRESS;
	resp.groups = rn_arena_alloc(&co->arena, sizeof(*resp.groups) *
	    (co->n_groups + 1));
	if (resp.groups == NULL)
		return -ENOMEM;
	for (b = 0; b < CO_BUCKETS; b++)
		for (g = co->buckets[b]; g != NULL; g = g->next) {
			if (g->state == GS_DEAD || !state_wanted(req, g->state))
				continue;
			rn_ListGroupsResponse_ListedGroup_init(&resp.groups[k]);
			resp.groups[k].group_id = ks(g->id);
			resp.groups[k].protocol_type = ks(g->protocol_type ?
			    g->protocol_type : "");
			resp.groups[k].group_state = ks(co_state_name(g->state));
			k++;
		}
	resp.groups_count = k;
	return co_reply(co, &r->pend, &resp);
}

static void
describe_one(struct co *co, struct rn_kstr id,
    struct rn_DescribeGroupsResponse_DescribedGroup *o)
{
	struct co_group *g;
	int i;

	rn_DescribeGroupsResponse_DescribedGroup_init(o);
	o->group_id = id;
	o->group_state = ks("");
	o->protocol_type = ks("");
	o->protocol_data = ks("");
	if ((o->error_code = id.len < 0 ? RN_KERR_INVALID_GROUP_ID :
	    co_part_error(co, co_partition_of(co, id))) != 0)
		return;
	if ((g = co_group_find(co, id)) == NULL) {
		o->group_state = ks("Dead");
		return;
	}
	o->group_state = ks(co_state_name(g->state));
	o->protocol_type = ks(g->protocol_type ? g->protocol_type : "");
	o->protocol_data = ks(g->state == GS_STABLE ? g->protocol : "");
	if (o->protocol_data.len < 0)
		o->protocol_data = ks("");
	o->members = rn_arena_alloc(&co->arena, sizeof(*o->members) *
	    (size_t)(g->n_members + 1));
	if (o->members == NULL) {
		o->error_code = RN_KERR_UNKNOWN_SERVER_ERROR;
		return;
	}
	for (i = 0; i < g->n_members; i++) {
		struct rn_DescribeGroupsResponse_DescribedGroupMember *dm =
		    &o->members[i];
		const struct co_member *m = g->members[i];
		const struct co_proto *pr = g->state == GS_STABLE ?
		    member_proto(m, g->protocol) : NULL;

		rn_DescribeGroupsResponse_DescribedGroupMember_init(dm);
		dm->member_id = ks(m->id);
		dm->group_instance_id = ks(m->instance_id);
		dm->client_id = ks(m->client_id);
		dm->client_host = ks(m->client_host);
		dm->member_metadata.ptr = pr ? pr->meta : NULL;
		dm->member_metadata.len = pr ? pr->len : 0;
		dm->member_assignment.ptr = g->state == GS_STABLE ?
		    m->assignment : NULL;
		dm->member_assignment.len = g->state == GS_STABLE ?
		    m->assignment_len : 0;
	}
	o->members_count = g->n_members;
}

int
co_describe_groups(struct co *co, struct co_req *r)
{
	const struct rn_DescribeGroupsRequest *req = r->req;
	struct rn_DescribeGroupsResponse resp;
	int32_t i;

	rn_DescribeGroupsResponse_init(&resp);
	resp.groups_count = req->groups_count;
	resp.groups = rn_arena_alloc(&co->arena, sizeof(*resp.groups) *
	    (size_t)(req->groups_count > 0 ? req->groups_count : 1));
	if (resp.groups == NULL)
		return -ENOMEM;
	for (i = 0; i < req->groups_count; i++)
		describe_one(co, req->groups[i], &resp.groups[i]);
	return co_reply(co, &r->pend, &resp);
}

/* Tombstones for a group and all its offsets, then it is gone. */
static int16_t
delete_one(struct co *co, struct rn_kstr id)
{
	struct co_group *g;
	struct rn_record_in *recs;
	struct rn_kwriter w;
	size_t *offs;
	int16_t err;
	int64_t end;
	int i, n;

	if (id.len < 0)
		return RN_KERR_INVALID_GROUP_ID;
	if ((err = co_part_error(co, co_partition_of(co, id))) != 0)
		return err;
	if ((g = co_group_find(co, id)) == NULL || g->state == GS_DEAD)
		return RN_KERR_GROUP_ID_NOT_FOUND;
	if (g->state != GS_EMPTY)
		return RN_KERR_NON_EMPTY_GROUP;
	n = g->n_offsets + 1;
	recs = calloc((size_t)n, sizeof(*recs));
	offs = calloc((size_t)n + 1, sizeof(*offs));
	if (recs == NULL || offs == NULL)
		fatalx("group coordinator: out of memory");
	rn_kwriter_init(&w);
	for (i = 0; i < g->n_offsets; i++) {
		offs[i] = w.len;
		rn_grec_offset_key(&w, ks(g->id),
		    ks(g->offsets[i].topic), g->offsets[i].partition);
	}
	offs[i] = w.len;
	rn_grec_group_key(&w, ks(g->id));
	offs[n] = w.len;
	for (i = 0; i < n; i++) {
		recs[i].key = w.buf + offs[i];
		recs[i].key_len = (int32_t)(offs[i + 1] - offs[i]);
		recs[i].value = NULL;
		recs[i].value_len = -1;
		recs[i].timestamp = rn_wallclock_ms();
	}
	err = w.err ? RN_KERR_UNKNOWN_SERVER_ERROR :
	    co_log_append(co, g->partition, recs, n, &end);
	rn_kwriter_free(&w);
	free(recs);
	free(offs);
	if (err != 0)
		return err == RN_KERR_NOT_COORDINATOR ? err :
		    RN_KERR_COORDINATOR_NOT_AVAILABLE;
	log_info("group %s deleted", g->id);
	co_group_remove(co, g);
	return 0;
}

int
co_delete_groups(struct co *co, struct co_req *r)
{
	const struct rn_DeleteGroupsRequest *req = r->req;
	struct rn_DeleteGroupsResponse resp;
	int32_t i;

	rn_DeleteGroupsResponse_init(&resp);
	resp.results_count = req->groups_names_count;
	resp.results = rn_arena_alloc(&co->arena, sizeof(*resp.results) *
	    (size_t)(req->groups_names_count > 0 ? req->groups_names_count : 1));
	if (resp.results == NULL)
		return -ENOMEM;
	for (i = 0; i < req->groups_names_count; i++) {
		resp.results[i].group_id = req->groups_names[i];
		resp.results[i].error_code = delete_one(co,
		    req->groups_names[i]);
	}
	return co_reply(co, &r->pend, &resp);
}

/* ---- timers --------------------------------------------------------- */

static int64_t
group_tick(struct co *co, struct co_group *g)
{
	int64_t next = INT64_MAX;
	int i;

	for (i = 0; i < g->n_pending;) {
		if (g->pending[i].expire_ms <= co->now) {
			pending_drop(g, i);
			maybe_complete_join(co, g);
			continue;
		}
		if (g->pending[i].expire_ms < next)
			next = g->pending[i].expire_ms;
		i++;
	}
	for (i = 0; i < g->n_members;) {
		struct co_member *m = g->members[i];

		/* a member whose join is held waits for the rebalance */
		if (!m->join.active && m->expire_ms <= co->now) {
			member_gone(co, g, m, "timed out (session timeout)");
			i = 0;
			continue;
		}
		if (!m->join.active && m->expire_ms < next)
			next = m->expire_ms;
		i++;
	}
	if (g->state == GS_PREPARING) {
		if (g->join_deadline <= co->now && g->initial_delay &&
		    g->n_members > g->delay_members && g->delay_left_ms > 0) {
			int64_t d = co->gs.initial_delay_ms < g->delay_left_ms ?
			    co->gs.initial_delay_ms : g->delay_left_ms;

			g->join_deadline = co->now + d;
			g->delay_left_ms -= d;
			g->delay_members = g->n_members;
		} else if (g->join_deadline <= co->now) {
			g->initial_delay = false;
			complete_join(co, g);
			return next;
		}
		if (g->state == GS_PREPARING && g->join_deadline < next)
			next = g->join_deadline;
	}
	return next;
}

int64_t
co_groups_tick(struct co *co)
{
	int64_t next = co->now + 1000, t;
	struct co_group *g, *ng;
	unsigned b;

	for (b = 0; b < CO_BUCKETS; b++)
		for (g = co->buckets[b]; g != NULL; g = ng) {
			ng = g->next;
			if (g->n_members == 0 && g->n_pending == 0 &&
			    g->state != GS_PREPARING)
				continue;
			if ((t = group_tick(co, g)) < next)
				next = t;
		}
	return next;
}

void
co_groups_unload(struct co *co, int32_t partition)
{
	struct co_group *g, *ng;
	unsigned b;
	int i;

	for (b = 0; b < CO_BUCKETS; b++)
		for (g = co->buckets[b]; g != NULL; g = ng) {
			ng = g->next;
			if (g->partition != partition)
				continue;
			for (i = 0; i < g->n_members; i++) {
				struct co_member *m = g->members[i];

				if (m->join.active)
					join_error(co, &m->join,
					    RN_KERR_NOT_COORDINATOR, m->id);
				if (m->sync.active)
					sync_answer(co, &m->sync,
					    RN_KERR_NOT_COORDINATOR, NULL, NULL);
			}
			co_group_remove(co, g);
		}
}

/* ---- persistence ---------------------------------------------------- */

void
co_group_load(struct co *co, int32_t partition, struct rn_kstr id,
    const struct rn_grec_group *v)
{
	struct co_group *g = co_group_find(co, id);
	int32_t i;

	if (v == NULL) {
		if (g != NULL)
			co_group_remove(co, g);
		return;
	}
	if (g == NULL)
		g = co_group_create(co, id, partition);
	for (i = 0; i < g->n_members; i++)
		member_free(g->members[i]);
	g->n_members = 0;
	set_str(&g->leader, NULL);
	free(g->protocol_type);
	g->protocol_type = co_strdup(v->protocol_type);
	free(g->protocol);
	g->protocol = v->protocol.len >= 0 ? co_strdup(v->protocol) : NULL;
	g->generation = v->generation;
	/* members come back with a fresh session; the leader is theirs */
	for (i = 0; i < v->n_members && i < co->gs.max_size; i++) {
		const struct rn_grec_member *rm = &v->members[i];
		struct co_member *m = calloc(1, sizeof(*m));

		if (m == NULL)
			fatalx("group coordinator: out of memory");
		m->id = co_strdup(rm->member_id);
		m->instance_id = rm->instance_id.len >= 0 ?
		    co_strdup(rm->instance_id) : NULL;
		m->client_id = co_strdup(rm->client_id);
		m->client_host = co_strdup(rm->client_host);
		m->session_ms = rm->session_timeout;
		m->rebalance_ms = rm->rebalance_timeout > 0 ?
		    rm->rebalance_timeout : rm->session_timeout;
		m->expire_ms = rn_now_ms() + m->session_ms;
		if ((m->protos = calloc(1, sizeof(*m->protos))) == NULL)
			fatalx("group coordinator: out of memory");
		m->protos[0].name = co_strdup(v->protocol.len >= 0 ?
		    v->protocol : ks(""));
		m->protos[0].len = rm->subscription.len > 0 ?
		    rm->subscription.len : 0;
		m->protos[0].meta = malloc((size_t)m->protos[0].len + 1);
		m->assignment_len = rm->assignment.len > 0 ?
		    rm->assignment.len : 0;
		m->assignment = malloc((size_t)m->assignment_len + 1);
		if (m->protos[0].meta == NULL || m->assignment == NULL)
			fatalx("group coordinator: out of memory");
		memcpy(m->protos[0].meta, rm->subscription.ptr,
		    (size_t)m->protos[0].len);
		memcpy(m->assignment, rm->assignment.ptr,
		    (size_t)m->assignment_len);
		m->n_protos = 1;
		member_add(g, m);
	}
	if (v->leader.len >= 0 && member_find(g, v->leader) != NULL)
	{
		free(g->leader);
		g->leader = co_strdup(v->leader);
	}
	set_state(g, g->n_members > 0 ? GS_STABLE : GS_EMPTY);
}

void
co_group_store(struct co *co, struct co_group *g)
{
	struct rn_grec_group v;
	struct rn_grec_member *ms;
	struct rn_record_in rec;
	struct rn_kwriter kw, vw;
	int64_t end;
	int16_t err;
	int i;

	memset(&v, 0, sizeof(v));
	v.protocol_type = ks(g->protocol_type ? g->protocol_type : "");
	v.generation = g->generation;
	v.protocol = ks(g->protocol);
	v.leader = ks(g->leader);
	v.state_ts = g->state_ts;
	ms = calloc((size_t)g->n_members + 1, sizeof(*ms));
	if (ms == NULL)
		fatalx("group coordinator: out of memory");
	for (i = 0; i < g->n_members; i++) {
		const struct co_member *m = g->members[i];
		const struct co_proto *pr = member_proto(m, g->protocol);

		ms[i].member_id = ks(m->id);
		ms[i].instance_id = ks(m->instance_id);
		ms[i].client_id = ks(m->client_id);
		ms[i].client_host = ks(m->client_host);
		ms[i].rebalance_timeout = m->rebalance_ms;
		ms[i].session_timeout = m->session_ms;
		ms[i].subscription.ptr = pr ? pr->meta : NULL;
		ms[i].subscription.len = pr ? pr->len : 0;
		ms[i].assignment.ptr = m->assignment;
		ms[i].assignment.len = m->assignment_len;
	}
	v.members = ms;
	v.n_members = g->n_members;
	rn_kwriter_init(&kw);
	rn_kwriter_init(&vw);
	rn_grec_group_key(&kw, ks(g->id));
	rn_grec_group_value(&vw, &v);
	memset(&rec, 0, sizeof(rec));
	rec.key = kw.buf;
	rec.key_len = (int32_t)kw.len;
	rec.value = vw.buf;
	rec.value_len = (int32_t)vw.len;
	rec.timestamp = rn_wallclock_ms();
	/*
	 * Not waited for: a lost group record costs the members a rejoin
	 * after a coordinator move, never an offset.
	 */
	if (kw.err || vw.err || (err = co_log_append(co, g->partition, &rec,
	    1, &end)) != 0)
		log_warnx("group %s: cannot store its metadata", g->id);
	rn_kwriter_free(&kw);
	rn_kwriter_free(&vw);
	free(ms);
}
