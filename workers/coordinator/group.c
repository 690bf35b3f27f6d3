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

/* ---- replies -------------------------------------------------------- */

static void
join_error(struct co *co, struct co_pending *p, int16_t err,
    const char *member_id)
{
	struct rn_JoinGroupResponse r;

	rn_JoinGroupResponse_init(&r);
	r.error_code = err;
	r.generation_id = -1;
	r.protocol_name = co_ks(p->ver >= 7 ? NULL : "");
	r.leader = co_ks("");
	r.member_id = co_ks(member_id != NULL ? member_id : "");
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
	r.protocol_type = co_ks(g->protocol_type);
	r.protocol_name = co_ks(g->protocol != NULL ? g->protocol :
	    (m->join.ver >= 7 ? NULL : ""));
	r.leader = co_ks(g->leader != NULL ? g->leader : "");
	r.member_id = co_ks(m->id);
	r.skip_assignment = m->skip_assignment && m->join.ver >= 9;
	if (leader && (ms = calloc((size_t)g->n_members, sizeof(*ms))) ==
	    NULL)
		fatalx("group coordinator: out of memory");
	for (i = 0; leader && i < g->n_members; i++) {
		const struct co_member *o = g->members[i];
		const struct co_proto *pr = co_member_proto(o, g->protocol);

		ms[k].member_id = co_ks(o->id);
		ms[k].group_instance_id = co_ks(o->instance_id);
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
		r.protocol_type = co_ks(g->protocol_type);
		r.protocol_name = co_ks(g->protocol);
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
				co_set_str(&g->leader, g->members[i]->id);
		if (g->leader == NULL && g->n_members > 0)
			co_set_str(&g->leader, g->members[0]->id);
	}
	co_member_free(m);
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
	co_set_state(g, GS_PREPARING);
	rn_log_about(LOG_INFO, rn_subj_group(g->id), "group %s: preparing to "
	    "rebalance generation %d (%s)", g->id, g->generation, why);
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
		rn_log_about(LOG_INFO, rn_subj_group(g->id), "group %s: member "
		    "%s did not rejoin in time", g->id, m->id);
		member_remove(co, g, m, RN_KERR_UNKNOWN_MEMBER_ID);
	}
	g->generation++;
	if (g->n_members == 0) {
		co_set_str(&g->protocol, NULL);
		co_set_state(g, GS_EMPTY);
		(void)co_group_store(co, g, NULL);
		rn_log_about(LOG_INFO, rn_subj_group(g->id), "group %s: "
		    "generation %d is empty", g->id, g->generation);
		return;
	}
	proto = co_select_protocol(g);
	co_set_str(&g->protocol, proto);
	co_set_state(g, GS_COMPLETING);
	rn_log_about(LOG_INFO, rn_subj_group(g->id), "group %s: generation %d "
	    "with %d members, protocol %s, leader %s", g->id, g->generation,
	    g->n_members, proto ? proto : "-", g->leader);
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
	rn_log_about(LOG_INFO, rn_subj_group(g->id), "group %s: member %s %s",
	    g->id, m->id, why);
	member_remove(co, g, m, RN_KERR_UNKNOWN_MEMBER_ID);
	if (g->state == GS_STABLE || g->state == GS_COMPLETING) {
		if (g->n_members == 0) {
			g->generation++;
			co_set_str(&g->protocol, NULL);
			co_set_state(g, GS_EMPTY);
			(void)co_group_store(co, g, NULL);
		} else
			prepare_rebalance(co, g, why);
	} else if (g->state == GS_PREPARING) {
		if (g->n_members == 0 && g->n_pending == 0) {
			g->generation++;
			co_set_str(&g->protocol, NULL);
			co_set_state(g, GS_EMPTY);
			(void)co_group_store(co, g, NULL);
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
	co_member_set_protos(m, req);
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
	bool same = co_member_same_protos(old, req);
	bool was_leader = g->leader != NULL && strcmp(g->leader, old->id) == 0;
	char *id = co_member_id_new(req->group_instance_id);

	if (old->join.active)
		join_error(co, &old->join, RN_KERR_FENCED_INSTANCE_ID, old->id);
	if (old->sync.active)
		sync_answer(co, &old->sync, RN_KERR_FENCED_INSTANCE_ID, NULL,
		    NULL);
	rn_log_about(LOG_INFO, rn_subj_group(g->id), "group %s: static member "
	    "%s rejoined as %s", g->id, old->instance_id, id);
	free(old->id);
	old->id = id;
	if (was_leader)
		co_set_str(&g->leader, id);
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
		(void)co_group_store(co, g, NULL);
		return 0;
	}
	co_member_set_protos(old, req);
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

	if ((m = co_member_by_instance(g, req->group_instance_id)) != NULL)
		return join_static_rejoin(co, g, m, r);
	if (g->n_members + g->n_pending >= co->gs.max_size ||
	    g->n_pending >= CO_MAX_PENDING) {
		join_error(co, &r->pend, RN_KERR_GROUP_MAX_SIZE_REACHED, NULL);
		return 0;
	}
	id = co_member_id_new(req->group_instance_id.len >= 0 ?
	    req->group_instance_id : r->client);
	if (r->pend.ver >= 4 && req->group_instance_id.len < 0) {
		/* KIP-394: the member comes back with the id it is given */
		co_pending_add(g, id, co->now + req->session_timeout_ms);
		join_error(co, &r->pend, RN_KERR_MEMBER_ID_REQUIRED, id);
		free(id);
		return 0;
	}
	m = member_new(r, req, id);
	m->expire_ms = co->now + m->session_ms;
	co_member_add(g, m);
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

	if ((pi = co_pending_find(g, req->member_id)) >= 0) {
		if (g->n_members >= co->gs.max_size) {
			co_pending_drop(g, pi);
			join_error(co, &r->pend, RN_KERR_GROUP_MAX_SIZE_REACHED,
			    NULL);
			return 0;
		}
		co_pending_drop(g, pi);
		m = member_new(r, req, co_strdup(req->member_id));
		m->expire_ms = co->now + m->session_ms;
		co_member_add(g, m);
		join_hold(co, g, m, r);
		if (g->state == GS_PREPARING)
			maybe_complete_join(co, g);
		else
			prepare_rebalance(co, g, "a new member joined");
		return 0;
	}
	if ((m = co_member_find(g, req->member_id)) == NULL) {
		struct co_member *s = co_member_by_instance(g,
		    req->group_instance_id);

		join_error(co, &r->pend, s != NULL ?
		    RN_KERR_FENCED_INSTANCE_ID : RN_KERR_UNKNOWN_MEMBER_ID,
		    NULL);
		return 0;
	}
	if (m->instance_id != NULL && req->group_instance_id.len >= 0 &&
	    !co_kstr_is(req->group_instance_id, m->instance_id)) {
		join_error(co, &r->pend, RN_KERR_FENCED_INSTANCE_ID, NULL);
		return 0;
	}
	m->expire_ms = co->now + m->session_ms;
	switch (g->state) {
	case GS_PREPARING:
		co_member_set_protos(m, req);
		join_hold(co, g, m, r);
		maybe_complete_join(co, g);
		return 0;
	case GS_COMPLETING:
	case GS_STABLE:
		if (co_member_same_protos(m, req) && !(g->state == GS_STABLE &&
		    g->leader != NULL && strcmp(g->leader, m->id) == 0)) {
			/* a join already answered, or nothing changed */
			m->join = r->pend;
			m->join.active = true;
			join_answer(co, g, m);
			return 0;
		}
		co_member_set_protos(m, req);
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
	if (!co_authorized(co, r, RN_ACL_OP_READ, RN_ACL_RES_GROUP,
	    req->group_id)) {
		join_error(co, &r->pend, RN_KERR_GROUP_AUTHORIZATION_FAILED,
		    NULL);
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
	if (g != NULL && !co_protocols_fit(g, req)) {
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
	m = co_member_find(g, member);
	s = co_member_by_instance(g, instance);
	if (s != NULL && s != m)
		return RN_KERR_FENCED_INSTANCE_ID;
	if (m == NULL)
		return RN_KERR_UNKNOWN_MEMBER_ID;
	*mp = m;
	if (generation != g->generation)
		return RN_KERR_ILLEGAL_GENERATION;
	return 0;
}

/* Every held SyncGroup of the group gets this answer. */
static void
sync_answer_all(struct co *co, struct co_group *g, int16_t err)
{
	int i;

	for (i = 0; i < g->n_members; i++)
		if (g->members[i]->sync.active)
			sync_answer(co, &g->members[i]->sync, err, g,
			    g->members[i]);
}

/* A plan that could not be stored: nobody gets it; rebalance again. */
static void
sync_failed(struct co *co, struct co_group *g, int16_t err)
{
	int i;

	sync_answer_all(co, g, err);
	for (i = 0; i < g->n_members; i++) {
		free(g->members[i]->assignment);
		g->members[i]->assignment = NULL;
		g->members[i]->assignment_len = 0;
	}
	prepare_rebalance(co, g, "its assignments could not be stored");
}

/*
 * The leader's plan: each member's assignment, stored in
 * __consumer_offsets; the members get it (and the group is Stable) once
 * the record is replicated, so a new coordinator knows this generation.
 */
static void
sync_complete(struct co *co, struct co_group *g,
    const struct rn_SyncGroupRequest *req)
{
	struct co_write *wr;
	int64_t end = -1;
	int16_t err;
	int i, j;

	for (i = 0; i < g->n_members; i++) {
		struct co_member *m = g->members[i];

		free(m->assignment);
		m->assignment = NULL;
		m->assignment_len = 0;
		for (j = 0; j < req->assignments_count; j++) {
			const struct rn_kbytes *a = &req->assignments[j].assignment;

			if (!co_kstr_is(req->assignments[j].member_id, m->id) ||
			    a->len <= 0)
				continue;
			if ((m->assignment = malloc((size_t)a->len)) == NULL)
				fatalx("group coordinator: out of memory");
			memcpy(m->assignment, a->ptr, (size_t)a->len);
			m->assignment_len = a->len;
			break;
		}
	}
	if ((err = co_group_store(co, g, &end)) != 0) {
		sync_failed(co, g, err);
		return;
	}
	if ((wr = calloc(1, sizeof(*wr))) == NULL)
		fatalx("group coordinator: out of memory");
	wr->kind = CW_SYNC;
	wr->generation = g->generation;
	wr->group = co_strdup(co_ks(g->id));
	rn_arena_init(&wr->arena, 0);
	co_write_queue(co, wr, g, end);
}

void
co_sync_settled(struct co *co, struct co_write *wr, int16_t kerr)
{
	struct co_group *g = co_group_find(co, co_ks(wr->group));

	/* the generation it stored may have ended meanwhile */
	if (g != NULL && g->state == GS_COMPLETING &&
	    g->generation == wr->generation) {
		if (kerr != 0)
			sync_failed(co, g, kerr);
		else {
			co_set_state(g, GS_STABLE);
			sync_answer_all(co, g, 0);
		}
	}
	rn_arena_free(&wr->arena);
	free(wr->group);
	free(wr);
}

int
co_sync_group(struct co *co, struct co_req *r)
{
	const struct rn_SyncGroupRequest *req = r->req;
	struct co_group *g;
	struct co_member *m;
	int16_t err;

	err = !co_authorized(co, r, RN_ACL_OP_READ, RN_ACL_RES_GROUP,
	    req->group_id) ? RN_KERR_GROUP_AUTHORIZATION_FAILED :
	    member_check(co, req->group_id, req->member_id,
	    req->group_instance_id, req->generation_id, &g, &m);
	if (err == 0 && ((req->protocol_type.len >= 0 &&
	    !co_kstr_is(req->protocol_type, g->protocol_type)) ||
	    (req->protocol_name.len >= 0 && !co_kstr_is(req->protocol_name,
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

	err = !co_authorized(co, r, RN_ACL_OP_READ, RN_ACL_RES_GROUP,
	    req->group_id) ? RN_KERR_GROUP_AUTHORIZATION_FAILED :
	    member_check(co, req->group_id, req->member_id,
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
	struct co_member *m = NULL, *s = co_member_by_instance(g, instance);
	int pi;

	if (member.len > 0)
		m = co_member_find(g, member);
	if (instance.len >= 0) {
		if (s == NULL)
			return RN_KERR_UNKNOWN_MEMBER_ID;
		if (member.len > 0 && m != s)
			return RN_KERR_FENCED_INSTANCE_ID;
		m = s;
	}
	if (m == NULL && (pi = co_pending_find(g, member)) >= 0) {
		co_pending_drop(g, pi);
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
	    !co_authorized(co, r, RN_ACL_OP_READ, RN_ACL_RES_GROUP,
	    req->group_id) ? RN_KERR_GROUP_AUTHORIZATION_FAILED :
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

/* ---- timers --------------------------------------------------------- */

static int64_t
group_tick(struct co *co, struct co_group *g)
{
	int64_t next = INT64_MAX;
	int i;

	for (i = 0; i < g->n_pending;) {
		if (g->pending[i].expire_ms <= co->now) {
			co_pending_drop(g, i);
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
