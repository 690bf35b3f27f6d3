/*
 * What operators and tools ask of groups: ListGroups (with a state
 * filter), DescribeGroups, DeleteGroups (tombstones for an empty group
 * and its offsets).
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

	/* DESCRIBE on the cluster lists all, else the groups one may see */
	bool all = co_authorized_cluster(co, r, RN_ACL_OP_DESCRIBE);

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
			if (!all && !co_authorized(co, r, RN_ACL_OP_DESCRIBE,
			    RN_ACL_RES_GROUP, co_ks(g->id)))
				continue;
			rn_ListGroupsResponse_ListedGroup_init(&resp.groups[k]);
			resp.groups[k].group_id = co_ks(g->id);
			resp.groups[k].protocol_type = co_ks(g->protocol_type ?
			    g->protocol_type : "");
			resp.groups[k].group_state = co_ks(co_state_name(g->state));
			k++;
		}
	resp.groups_count = k;
	return co_reply(co, &r->pend, &resp);
}

static void
describe_one(struct co *co, struct co_req *r, struct rn_kstr id,
    struct rn_DescribeGroupsResponse_DescribedGroup *o)
{
	struct co_group *g;
	int i;

	rn_DescribeGroupsResponse_DescribedGroup_init(o);
	o->group_id = id;
	o->group_state = co_ks("");
	o->protocol_type = co_ks("");
	o->protocol_data = co_ks("");
	if ((o->error_code = id.len < 0 ? RN_KERR_INVALID_GROUP_ID :
	    !co_authorized(co, r, RN_ACL_OP_DESCRIBE, RN_ACL_RES_GROUP, id) ?
	    RN_KERR_GROUP_AUTHORIZATION_FAILED :
	    co_part_error(co, co_partition_of(co, id))) != 0)
		return;
	if ((g = co_group_find(co, id)) == NULL) {
		o->group_state = co_ks("Dead");
		return;
	}
	o->group_state = co_ks(co_state_name(g->state));
	o->protocol_type = co_ks(g->protocol_type ? g->protocol_type : "");
	o->protocol_data = co_ks(g->state == GS_STABLE ? g->protocol : "");
	if (o->protocol_data.len < 0)
		o->protocol_data = co_ks("");
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
		    co_member_proto(m, g->protocol) : NULL;

		rn_DescribeGroupsResponse_DescribedGroupMember_init(dm);
		dm->member_id = co_ks(m->id);
		dm->group_instance_id = co_ks(m->instance_id);
		dm->client_id = co_ks(m->client_id);
		dm->client_host = co_ks(m->client_host);
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
		describe_one(co, r, req->groups[i], &resp.groups[i]);
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
		rn_grec_offset_key(&w, co_ks(g->id),
		    co_ks(g->offsets[i].topic), g->offsets[i].partition);
	}
	offs[i] = w.len;
	rn_grec_group_key(&w, co_ks(g->id));
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
	rn_log_about(LOG_INFO, rn_subj_group(g->id), "group %s deleted",
	    g->id);
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
		resp.results[i].error_code = req->groups_names[i].len >= 0 &&
		    !co_authorized(co, r, RN_ACL_OP_DELETE, RN_ACL_RES_GROUP,
		    req->groups_names[i]) ? RN_KERR_GROUP_AUTHORIZATION_FAILED :
		    delete_one(co, req->groups_names[i]);
	}
	return co_reply(co, &r->pend, &resp);
}
