/*
 * A group's metadata in __consumer_offsets: written when a generation
 * settles (group metadata value v4: members, their subscriptions and
 * assignments), read back when a partition is loaded, so members keep
 * their ids and generation across a coordinator move or restart.
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
		co_member_free(g->members[i]);
	g->n_members = 0;
	co_set_str(&g->leader, NULL);
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
		    v->protocol : co_ks(""));
		m->protos[0].len = rm->subscription.len > 0 ?
		    rm->subscription.len : 0;
		m->protos[0].meta = malloc((size_t)m->protos[0].len + 1);
		m->assignment_len = rm->assignment.len > 0 ?
		    rm->assignment.len : 0;
		m->assignment = malloc((size_t)m->assignment_len + 1);
		if (m->protos[0].meta == NULL || m->assignment == NULL)
			fatalx("group coordinator: out of memory");
		if (m->protos[0].len > 0)
			memcpy(m->protos[0].meta, rm->subscription.ptr,
			    (size_t)m->protos[0].len);
		if (m->assignment_len > 0)
			memcpy(m->assignment, rm->assignment.ptr,
			    (size_t)m->assignment_len);
		m->n_protos = 1;
		co_member_add(g, m);
	}
	if (v->leader.len >= 0 && co_member_find(g, v->leader) != NULL)
	{
		free(g->leader);
		g->leader = co_strdup(v->leader);
	}
	co_set_state(g, g->n_members > 0 ? GS_STABLE : GS_EMPTY);
	/* when it became what it is, for offsets.retention.minutes */
	if (v->state_ts > 0)
		g->state_ts = v->state_ts;
}

int16_t
co_group_store(struct co *co, struct co_group *g, int64_t *end)
{
	struct rn_grec_group v;
	struct rn_grec_member *ms;
	struct rn_record_in rec;
	struct rn_kwriter kw, vw;
	int16_t err = RN_KERR_UNKNOWN_SERVER_ERROR;
	int64_t ignored;
	int i;

	if (end == NULL)
		end = &ignored;
	memset(&v, 0, sizeof(v));
	v.protocol_type = co_ks(g->protocol_type ? g->protocol_type : "");
	v.generation = g->generation;
	v.protocol = co_ks(g->protocol);
	v.leader = co_ks(g->leader);
	v.state_ts = g->state_ts;
	ms = calloc((size_t)g->n_members + 1, sizeof(*ms));
	if (ms == NULL)
		fatalx("group coordinator: out of memory");
	for (i = 0; i < g->n_members; i++) {
		const struct co_member *m = g->members[i];
		const struct co_proto *pr = co_member_proto(m, g->protocol);

		ms[i].member_id = co_ks(m->id);
		ms[i].instance_id = co_ks(m->instance_id);
		ms[i].client_id = co_ks(m->client_id);
		ms[i].client_host = co_ks(m->client_host);
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
	rn_grec_group_key(&kw, co_ks(g->id));
	rn_grec_group_value(&vw, &v);
	memset(&rec, 0, sizeof(rec));
	rec.key = kw.buf;
	rec.key_len = (int32_t)kw.len;
	rec.value = vw.buf;
	rec.value_len = (int32_t)vw.len;
	rec.timestamp = rn_wallclock_ms();
	if (kw.err || vw.err || (err = co_log_append(co, g->partition, &rec,
	    1, end)) != 0)
		rn_log_about(LOG_WARNING, rn_subj_group(g->id), "group %s: "
		    "cannot store its metadata (%s)", g->id, rn_kerr_name(err));
	rn_kwriter_free(&kw);
	rn_kwriter_free(&vw);
	free(ms);
	return err;
}
