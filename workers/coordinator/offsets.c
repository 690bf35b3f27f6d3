/*
 * Committed offsets: OffsetCommit (a group member's, or a standalone
 * consumer's with generation -1 and no member id), OffsetFetch,
 * OffsetDelete, the offsets of a loaded partition, and the expiry of an
 * empty group's offsets after offsets.retention.minutes. A commit is
 * answered, and seen by OffsetFetch, only once its records are below the
 * high watermark of the group's __consumer_offsets partition.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/coordinator/coord_int.h"

static uint32_t
offset_hash(struct rn_kstr topic, int32_t p)
{
	uint32_t h = rn_hash32_more(RN_FNV32_SEED ^ (uint32_t)p, topic.ptr,
	    topic.len > 0 ? (size_t)topic.len : 0);

	return h ^ (h >> 15);
}

static bool
offset_is(const struct co_offset *o, struct rn_kstr topic, int32_t p)
{
	return o->partition == p && co_kstr_is(topic, o->topic);
}

/* The index slot of (topic, p): where it is, or the free one it would take. */
static uint32_t *
index_slot(struct co_group *g, struct rn_kstr topic, int32_t p)
{
	uint32_t mask = g->index_cap - 1, i = offset_hash(topic, p) & mask;

	while (g->index[i] != 0 &&
	    !offset_is(&g->offsets[g->index[i] - 1], topic, p))
		i = (i + 1) & mask;
	return &g->index[i];
}

static void
index_rebuild(struct co_group *g, uint32_t cap)
{
	int i;

	free(g->index);
	if ((g->index = calloc(cap, sizeof(*g->index))) == NULL)
		fatalx("group coordinator: out of memory");
	g->index_cap = cap;
	for (i = 0; i < g->n_offsets; i++)
		*index_slot(g, co_ks(g->offsets[i].topic),
		    g->offsets[i].partition) = (uint32_t)i + 1;
}

static struct co_offset *
offset_find(struct co_group *g, struct rn_kstr topic, int32_t p)
{
	uint32_t *slot;

	if (g->index_cap == 0)
		return NULL;
	slot = index_slot(g, topic, p);
	return *slot != 0 ? &g->offsets[*slot - 1] : NULL;
}

static struct co_offset *
offset_add(struct co_group *g, struct rn_kstr topic, int32_t p)
{
	struct co_offset *o;

	if (g->n_offsets == g->cap_offsets) {
		int cap = g->cap_offsets ? 2 * g->cap_offsets : 8;
		void *n = realloc(g->offsets, sizeof(*g->offsets) *
		    (size_t)cap);

		if (n == NULL)
			fatalx("group coordinator: out of memory");
		g->offsets = n;
		g->cap_offsets = cap;
	}
	o = &g->offsets[g->n_offsets++];
	o->topic = co_strdup(topic);
	o->partition = p;
	o->metadata = NULL;
	if ((uint32_t)g->n_offsets * 2 > g->index_cap)
		index_rebuild(g, g->index_cap ? 2 * g->index_cap : 16);
	else
		*index_slot(g, topic, p) = (uint32_t)g->n_offsets;
	return o;
}

void
co_offset_set(struct co_group *g, struct rn_kstr topic, int32_t p,
    const struct rn_grec_offset *v)
{
	struct co_offset *o = offset_find(g, topic, p);
	struct rn_kstr md = v->metadata.len >= 0 ? v->metadata : co_ks("");

	if (o == NULL)
		o = offset_add(g, topic, p);
	/* the metadata rarely changes between commits: kept if the same */
	if (o->metadata == NULL || !co_kstr_is(md, o->metadata)) {
		free(o->metadata);
		o->metadata = co_strdup(md);
	}
	o->offset = v->offset;
	o->epoch = v->leader_epoch;
	o->commit_ts = v->commit_ts;
}

bool
co_offset_remove(struct co_group *g, struct rn_kstr topic, int32_t p)
{
	struct co_offset *o = offset_find(g, topic, p);

	if (o == NULL)
		return false;
	free(o->topic);
	free(o->metadata);
	*o = g->offsets[--g->n_offsets];
	/* removals are rare (deletes, expiry, tombstones): rebuild */
	index_rebuild(g, g->index_cap);
	return true;
}

void
co_offsets_free(struct co_group *g)
{
	int i;

	for (i = 0; i < g->n_offsets; i++) {
		free(g->offsets[i].topic);
		free(g->offsets[i].metadata);
	}
	free(g->offsets);
	free(g->index);
	co_txn_offsets_free(g);
	g->offsets = NULL;
	g->index = NULL;
	g->n_offsets = g->cap_offsets = 0;
	g->index_cap = 0;
}

void
co_offset_load(struct co *co, int32_t partition, const struct rn_grec_key *k,
    const struct rn_grec_offset *v)
{
	struct co_group *g = co_group_find(co, k->group);

	if (v == NULL) {
		if (g != NULL)
			co_offset_remove(g, k->topic, k->partition);
		return;
	}
	if (g == NULL)
		g = co_group_create(co, k->group, partition);
	co_offset_set(g, k->topic, k->partition, v);
}

/* ---- OffsetCommit --------------------------------------------------- */

/* Whether the group takes a commit from this member at this generation. */
static int16_t
commit_check(struct co *co, const struct rn_OffsetCommitRequest *req,
    int16_t ver, struct co_group **gp)
{
	struct co_group *g;
	int32_t gen = ver >= 1 ? req->generation_id_or_member_epoch : -1;
	int16_t err;
	int i;

	*gp = NULL;
	if (req->group_id.len <= 0)
		return RN_KERR_INVALID_GROUP_ID;
	if ((err = co_part_error(co, co_partition_of(co, req->group_id))) != 0)
		return err;
	if ((g = co_group_find(co, req->group_id)) == NULL) {
		if (gen >= 0)
			return RN_KERR_ILLEGAL_GENERATION;
		*gp = co_group_create(co, req->group_id,
		    co_partition_of(co, req->group_id));
		return 0;
	}
	*gp = g;
	if (g->state == GS_DEAD)
		return RN_KERR_COORDINATOR_NOT_AVAILABLE;
	if (gen < 0 && g->state == GS_EMPTY)
		return 0;   /* a standalone consumer's commit */
	for (i = 0; i < g->n_members; i++)
		if (g->members[i]->instance_id != NULL &&
		    co_kstr_is(req->group_instance_id,
		    g->members[i]->instance_id) &&
		    !co_kstr_is(req->member_id, g->members[i]->id))
			return RN_KERR_FENCED_INSTANCE_ID;
	for (i = 0; i < g->n_members; i++)
		if (req->member_id.len > 0 &&
		    co_kstr_is(req->member_id, g->members[i]->id))
			break;
	if (i == g->n_members)
		return RN_KERR_UNKNOWN_MEMBER_ID;
	if (gen != g->generation)
		return RN_KERR_ILLEGAL_GENERATION;
	if (g->state == GS_COMPLETING)
		return RN_KERR_REBALANCE_IN_PROGRESS;
	/* a commit counts as a sign of life */
	g->members[i]->expire_ms = co->now + g->members[i]->session_ms;
	return 0;
}

static void
commit_write_free(struct co_write *wr)
{
	rn_arena_free(&wr->arena);
	free(wr->body);
	free(wr->group);
	free(wr);
}

/* Answer a commit: per partition, its own error or the write's. */
void
co_commit_settled(struct co *co, struct co_write *wr, int16_t kerr)
{
	const struct rn_OffsetCommitRequest *req = &wr->req;
	struct rn_OffsetCommitResponse resp;
	struct co_group *g = co_group_find(co, rn_kstr_c(wr->group));
	int64_t now = rn_wallclock_ms();
	int32_t i, j, k = 0;

	/* the group went (expired, deleted) while the records replicated */
	if (g == NULL && kerr == 0 && co_part_error(co, wr->partition) == 0)
		g = co_group_create(co, rn_kstr_c(wr->group), wr->partition);

	rn_OffsetCommitResponse_init(&resp);
	resp.topics_count = req->topics_count;
	resp.topics = rn_arena_alloc(&wr->arena, sizeof(*resp.topics) *
	    (size_t)(req->topics_count > 0 ? req->topics_count : 1));
	for (i = 0; resp.topics != NULL && i < req->topics_count; i++) {
		const struct rn_OffsetCommitRequest_OffsetCommitRequestTopic *t =
		    &req->topics[i];
		struct rn_OffsetCommitResponse_OffsetCommitResponseTopic *o =
		    &resp.topics[i];

		o->name = t->name;
		o->partitions_count = t->partitions_count;
		o->partitions = rn_arena_alloc(&wr->arena,
		    sizeof(*o->partitions) * (size_t)(t->partitions_count > 0 ?
		    t->partitions_count : 1));
		if (o->partitions == NULL) {
			resp.topics = NULL;
			break;
		}
		for (j = 0; j < t->partitions_count; j++, k++) {
			const struct rn_OffsetCommitRequest_OffsetCommitRequestPartition
			    *pp = &t->partitions[j];
			int16_t e = wr->errs[k] != 0 ? wr->errs[k] : kerr;

			o->partitions[j].partition_index = pp->partition_index;
			o->partitions[j].error_code = e;
			if (e == 0 && g != NULL) {
				struct rn_grec_offset v;

				v.offset = pp->committed_offset;
				v.leader_epoch = wr->pend.ver >= 6 ?
				    pp->committed_leader_epoch : -1;
				v.metadata = pp->committed_metadata;
				v.commit_ts = now;
				v.expire_ts = -1;
				co_offset_set(g, t->name, pp->partition_index, &v);
			}
		}
	}
	if (resp.topics == NULL)
		resp.topics_count = 0;
	if (wr->pend.active)
		(void)co_reply(co, &wr->pend, &resp);
	commit_write_free(wr);
}

void
co_write_queue(struct co *co, struct co_write *wr, const struct co_group *g,
    int64_t end)
{
	wr->partition = g->partition;
	wr->leader_epoch = co->part[g->partition].leader_epoch;
	wr->need = end;
	wr->deadline_ms = co->now + co->gs.commit_timeout_ms;
	*co->writes_tail = wr;
	co->writes_tail = &wr->next;
}

void
co_writes_fail(struct co *co, bool txn_log, int32_t p)
{
	struct co_write *wr, **pp;

	for (pp = &co->writes; (wr = *pp) != NULL;) {
		if (wr->txn_log == txn_log && wr->partition == p) {
			*pp = wr->next;
			co_write_settled(co, wr, RN_KERR_NOT_COORDINATOR);
		} else
			pp = &wr->next;
	}
	co->writes_tail = &co->writes;
	for (wr = co->writes; wr != NULL; wr = wr->next)
		co->writes_tail = &wr->next;
}

void
co_write_settled(struct co *co, struct co_write *wr, int16_t kerr)
{
	switch (wr->kind) {
	case CW_SYNC:
		co_sync_settled(co, wr, kerr);
		break;
	case CW_TXN_COMMIT:
		co_txn_commit_settled(co, wr, kerr);
		break;
	case CW_TXN_STATE:
		co_txn_state_settled(co, wr, kerr);
		break;
	default:
		co_commit_settled(co, wr, kerr);
	}
}

void
co_offset_recs_init(struct co_offset_recs *o, int32_t max)
{
	memset(o, 0, sizeof(*o));
	o->recs = calloc((size_t)max + 1, sizeof(*o->recs));
	o->ko = calloc((size_t)max + 1, sizeof(*o->ko));
	o->vo = calloc((size_t)max + 1, sizeof(*o->vo));
	if (o->recs == NULL || o->ko == NULL || o->vo == NULL)
		fatalx("group coordinator: out of memory");
	o->now = rn_wallclock_ms();
	rn_kwriter_init(&o->kw);
}

void
co_offset_recs_add(struct co_offset_recs *o, const struct co_group *g,
    struct rn_kstr topic, int32_t partition, int64_t offset,
    int32_t leader_epoch, struct rn_kstr metadata)
{
	struct rn_grec_offset v;

	v.offset = offset;
	v.leader_epoch = leader_epoch;
	v.metadata = metadata;
	v.commit_ts = o->now;
	v.expire_ts = -1;
	o->ko[o->n] = o->kw.len;
	rn_grec_offset_key(&o->kw, rn_kstr_c(g->id), topic, partition);
	o->vo[o->n] = o->kw.len;
	rn_grec_offset_value(&o->kw, &v);
	o->recs[o->n].timestamp = o->now;
	o->n++;
}

int16_t
co_offset_recs_append(struct co *co, struct co_offset_recs *o,
    const struct co_group *g, int64_t pid, int16_t epoch, int64_t *end)
{
	int16_t err;
	int32_t i;

	/* the writer may have moved while growing: pointers only now */
	o->ko[o->n] = o->kw.len;
	for (i = 0; i < o->n; i++) {
		o->recs[i].key = o->kw.buf + o->ko[i];
		o->recs[i].key_len = (int32_t)(o->vo[i] - o->ko[i]);
		o->recs[i].value = o->kw.buf + o->vo[i];
		o->recs[i].value_len = (int32_t)(o->ko[i + 1] - o->vo[i]);
	}
	err = o->n == 0 ? 0 : o->kw.err ? RN_KERR_UNKNOWN_SERVER_ERROR :
	    co_log_append_to(co, false, g->partition, o->recs, o->n, pid,
	    epoch, end);
	rn_kwriter_free(&o->kw);
	free(o->recs);
	free(o->ko);
	free(o->vo);
	return err;
}

/* The records of a commit: one per partition without an error. */
static int16_t
commit_append(struct co *co, struct co_write *wr, struct co_group *g,
    int *n_ok, int64_t *end)
{
	const struct rn_OffsetCommitRequest *req = &wr->req;
	struct co_offset_recs o;
	int32_t i, j, k = 0, total = 0;

	for (i = 0; i < req->topics_count; i++)
		total += req->topics[i].partitions_count;
	co_offset_recs_init(&o, total);
	for (i = 0; i < req->topics_count; i++)
		for (j = 0; j < req->topics[i].partitions_count; j++, k++) {
			const struct rn_OffsetCommitRequest_OffsetCommitRequestPartition
			    *pp = &req->topics[i].partitions[j];

			if (wr->errs[k] == 0)
				co_offset_recs_add(&o, g, req->topics[i].name,
				    pp->partition_index, pp->committed_offset,
				    wr->pend.ver >= 6 ?
				    pp->committed_leader_epoch : -1,
				    pp->committed_metadata);
		}
	*n_ok = o.n;
	return co_offset_recs_append(co, &o, g, -1, -1, end);
}

int
co_offset_commit(struct co *co, struct co_req *r)
{
	struct co_write *wr = calloc(1, sizeof(*wr));
	struct rn_kreader kr;
	struct co_group *g;
	int32_t i, j, k = 0, total = 0;
	int64_t end = -1;
	int16_t err;
	int n_ok = 0;

	/* the write outlives this turn: its own copy of the request */
	if (wr == NULL || (wr->body = malloc(r->len + 1)) == NULL)
		fatalx("group coordinator: out of memory");
	if (r->len > 0)
		memcpy(wr->body, r->body, r->len);
	rn_arena_init(&wr->arena, 8 * r->len + 8192);
	rn_kreader_init(&kr, wr->body, r->len);
	wr->pend = r->pend;
	if (rn_OffsetCommitRequest_decode(&kr, r->pend.ver, &wr->arena,
	    &wr->req) < 0) {
		commit_write_free(wr);
		return -EPROTO;
	}
	for (i = 0; i < wr->req.topics_count; i++)
		total += wr->req.topics[i].partitions_count;
	wr->errs = rn_arena_alloc(&wr->arena, sizeof(*wr->errs) *
	    (size_t)(total + 1));
	if (wr->errs == NULL) {
		commit_write_free(wr);
		return -ENOMEM;
	}
	wr->group = co_strdup(wr->req.group_id);
	/* READ on the group, then on each topic, as Kafka checks them */
	err = !co_authorized(co, r, RN_ACL_OP_READ, RN_ACL_RES_GROUP,
	    wr->req.group_id) ? RN_KERR_GROUP_AUTHORIZATION_FAILED :
	    commit_check(co, &wr->req, r->pend.ver, &g);
	for (i = 0; i < wr->req.topics_count; i++) {
		bool topic_ok = err != 0 || co_authorized(co, r,
		    RN_ACL_OP_READ, RN_ACL_RES_TOPIC, wr->req.topics[i].name);

		for (j = 0; j < wr->req.topics[i].partitions_count; j++, k++) {
			const struct rn_kstr *md =
			    &wr->req.topics[i].partitions[j].committed_metadata;

			wr->errs[k] = err;
			if (err == 0 && !topic_ok)
				wr->errs[k] =
				    RN_KERR_TOPIC_AUTHORIZATION_FAILED;
			else if (err == 0 && md->len > co->gs.max_metadata)
				wr->errs[k] = RN_KERR_OFFSET_METADATA_TOO_LARGE;
		}
	}
	if (err == 0)
		err = commit_append(co, wr, g, &n_ok, &end);
	if (err != 0 || n_ok == 0) {
		co_commit_settled(co, wr, err);
		return 0;
	}
	co_write_queue(co, wr, g, end);
	return 0;
}

/* ---- OffsetFetch ---------------------------------------------------- */

struct fetch_part {
	int32_t partition;
	int64_t offset;
	int32_t epoch;
	struct rn_kstr metadata;
};

/* One partition's committed offset, or -1 when there is none. */
static void
fetch_fill(struct co_group *g, struct rn_kstr topic, int32_t p,
    struct fetch_part *out)
{
	struct co_offset *o = g != NULL ? offset_find(g, topic, p) : NULL;

	out->partition = p;
	out->offset = o ? o->offset : -1;
	out->epoch = o ? o->epoch : -1;
	out->metadata = rn_kstr_c(o ? o->metadata : "");
}

/*
 * The topics of one group's answer, in the v8 shape (the older shape
 * has the same fields). Requested topics, or all the group has.
 */
static int
fetch_group(struct co *co, struct co_group *g, struct rn_kstr gid,
    const struct rn_OffsetFetchRequest_OffsetFetchRequestTopics *ts,
    int32_t n_ts, struct rn_OffsetFetchResponse_OffsetFetchResponseGroup *o)
{
	int32_t i, j, k;

	(void)gid;
	if (n_ts < 0) {
		/* every partition the group has, one topic entry each */
		n_ts = g != NULL ? g->n_offsets : 0;
		o->topics = rn_arena_alloc(&co->arena, sizeof(*o->topics) *
		    (size_t)(n_ts + 1));
		if (o->topics == NULL)
			return -ENOMEM;
		for (k = 0, i = 0; i < n_ts; i++) {
			struct rn_kstr tn = rn_kstr_c(g->offsets[i].topic);
			struct fetch_part fp;

			for (j = 0; j < k; j++)
				if (rn_kstr_eq(o->topics[j].name,
				    g->offsets[i].topic))
					break;
			if (j == k) {
				o->topics[k].name = tn;
				o->topics[k].partitions = rn_arena_alloc(
				    &co->arena, sizeof(*o->topics[k].partitions)
				    * (size_t)(n_ts + 1));
				if (o->topics[k].partitions == NULL)
					return -ENOMEM;
				o->topics[k++].partitions_count = 0;
			}
			fetch_fill(g, tn, g->offsets[i].partition, &fp);
			{
				struct rn_OffsetFetchResponse_OffsetFetchResponsePartitions
				    *pp = &o->topics[j].partitions[
				    o->topics[j].partitions_count++];

				rn_OffsetFetchResponse_OffsetFetchResponsePartitions_init(pp);
				pp->partition_index = fp.partition;
				pp->committed_offset = fp.offset;
				pp->committed_leader_epoch = fp.epoch;
				pp->metadata = fp.metadata;
			}
		}
		o->topics_count = k;
		return 0;
	}
	o->topics_count = n_ts;
	o->topics = rn_arena_alloc(&co->arena, sizeof(*o->topics) *
	    (size_t)(n_ts + 1));
	if (o->topics == NULL)
		return -ENOMEM;
	for (i = 0; i < n_ts; i++) {
		o->topics[i].name = ts[i].name;
		o->topics[i].partitions_count = ts[i].partition_indexes_count;
		o->topics[i].partitions = rn_arena_alloc(&co->arena,
		    sizeof(*o->topics[i].partitions) *
		    (size_t)(ts[i].partition_indexes_count + 1));
		if (o->topics[i].partitions == NULL)
			return -ENOMEM;
		for (j = 0; j < ts[i].partition_indexes_count; j++) {
			struct rn_OffsetFetchResponse_OffsetFetchResponsePartitions
			    *pp = &o->topics[i].partitions[j];
			struct fetch_part fp;

			fetch_fill(g, ts[i].name, ts[i].partition_indexes[j], &fp);
			rn_OffsetFetchResponse_OffsetFetchResponsePartitions_init(pp);
			pp->partition_index = fp.partition;
			pp->committed_offset = fp.offset;
			pp->committed_leader_epoch = fp.epoch;
			pp->metadata = fp.metadata;
		}
	}
	return 0;
}

/*
 * DESCRIBE on each topic of the answer: a topic asked for by name and
 * refused says TOPIC_AUTHORIZATION_FAILED in each partition; when all
 * the group's offsets were asked for, a refused topic is left out.
 */
static void
fetch_authorize_topics(struct co *co, struct co_req *r, bool named,
    struct rn_OffsetFetchResponse_OffsetFetchResponseGroup *o)
{
	int32_t i, j, k = 0;

	for (i = 0; i < o->topics_count; i++) {
		struct rn_OffsetFetchResponse_OffsetFetchResponseTopics *t =
		    &o->topics[i];

		if (co_authorized(co, r, RN_ACL_OP_DESCRIBE, RN_ACL_RES_TOPIC,
		    t->name)) {
			o->topics[k++] = *t;
			continue;
		}
		if (!named)
			continue;
		for (j = 0; j < t->partitions_count; j++) {
			t->partitions[j].committed_offset = -1;
			t->partitions[j].committed_leader_epoch = -1;
			t->partitions[j].error_code =
			    RN_KERR_TOPIC_AUTHORIZATION_FAILED;
		}
		o->topics[k++] = *t;
	}
	o->topics_count = k;
}

static int
fetch_one_group(struct co *co, struct co_req *r, struct rn_kstr gid,
    const struct rn_OffsetFetchRequest_OffsetFetchRequestTopics *ts,
    int32_t n_ts, struct rn_OffsetFetchResponse_OffsetFetchResponseGroup *o)
{
	struct co_group *g;
	int rc;

	rn_OffsetFetchResponse_OffsetFetchResponseGroup_init(o);
	o->group_id = gid;
	if (gid.len < 0)
		o->error_code = RN_KERR_INVALID_GROUP_ID;
	else if (!co_authorized(co, r, RN_ACL_OP_DESCRIBE, RN_ACL_RES_GROUP,
	    gid))
		o->error_code = RN_KERR_GROUP_AUTHORIZATION_FAILED;
	else
		o->error_code = co_part_error(co, co_partition_of(co, gid));
	if (o->error_code != 0)
		return 0;
	g = co_group_find(co, gid);
	if ((rc = fetch_group(co, g, gid, ts, n_ts, o)) != 0)
		return rc;
	if (((const struct rn_OffsetFetchRequest *)r->req)->require_stable)
		co_txn_offsets_unstable(g, o);
	fetch_authorize_topics(co, r, n_ts >= 0, o);
	return 0;
}

/* OffsetFetch v0-7: one group, in the older shape of the answer. */
static int
fetch_v7(struct co *co, struct co_req *r,
    const struct rn_OffsetFetchRequest *req, int16_t ver,
    struct rn_OffsetFetchResponse *resp)
{
	struct rn_OffsetFetchRequest_OffsetFetchRequestTopics *ts = NULL;
	struct rn_OffsetFetchResponse_OffsetFetchResponseGroup g8;
	int32_t i, j, n = req->topics_count;
	int rc;

	if (n > 0) {
		if ((ts = rn_arena_alloc(&co->arena, sizeof(*ts) *
		    (size_t)n)) == NULL)
			return -ENOMEM;
		for (i = 0; i < n; i++) {
			ts[i].name = req->topics[i].name;
			ts[i].partition_indexes = req->topics[i].partition_indexes;
			ts[i].partition_indexes_count =
			    req->topics[i].partition_indexes_count;
		}
	}
	if ((rc = fetch_one_group(co, r, req->group_id, ts, n, &g8)) != 0)
		return rc;
	if (ver >= 2)
		resp->error_code = g8.error_code;
	else if (g8.error_code != 0 && n > 0)
		/* v0-1 have no group error: each partition says it */
		(void)fetch_group(co, NULL, req->group_id, ts, n, &g8);
	resp->topics_count = g8.topics_count;
	resp->topics = rn_arena_alloc(&co->arena, sizeof(*resp->topics) *
	    (size_t)(g8.topics_count + 1));
	if (resp->topics == NULL)
		return -ENOMEM;
	for (i = 0; i < g8.topics_count; i++) {
		struct rn_OffsetFetchResponse_OffsetFetchResponseTopic *o =
		    &resp->topics[i];

		o->name = g8.topics[i].name;
		o->partitions_count = g8.topics[i].partitions_count;
		o->partitions = rn_arena_alloc(&co->arena,
		    sizeof(*o->partitions) * (size_t)(o->partitions_count + 1));
		if (o->partitions == NULL)
			return -ENOMEM;
		for (j = 0; j < o->partitions_count; j++) {
			const struct rn_OffsetFetchResponse_OffsetFetchResponsePartitions
			    *s = &g8.topics[i].partitions[j];

			rn_OffsetFetchResponse_OffsetFetchResponsePartition_init(
			    &o->partitions[j]);
			o->partitions[j].partition_index = s->partition_index;
			o->partitions[j].committed_offset = s->committed_offset;
			o->partitions[j].committed_leader_epoch =
			    s->committed_leader_epoch;
			o->partitions[j].metadata = s->metadata;
			o->partitions[j].error_code = s->error_code != 0 ?
			    s->error_code : ver < 2 ? g8.error_code : 0;
		}
	}
	return 0;
}

int
co_offset_fetch(struct co *co, struct co_req *r)
{
	const struct rn_OffsetFetchRequest *req = r->req;
	struct rn_OffsetFetchResponse resp;
	int32_t i;
	int rc;

	rn_OffsetFetchResponse_init(&resp);
	if (r->pend.ver < 8) {
		if ((rc = fetch_v7(co, r, req, r->pend.ver, &resp)) != 0)
			return rc;
		return co_reply(co, &r->pend, &resp);
	}
	resp.groups_count = req->groups_count;
	resp.groups = rn_arena_alloc(&co->arena, sizeof(*resp.groups) *
	    (size_t)(req->groups_count + 1));
	if (resp.groups == NULL)
		return -ENOMEM;
	for (i = 0; i < req->groups_count; i++)
		if ((rc = fetch_one_group(co, r, req->groups[i].group_id,
		    req->groups[i].topics, req->groups[i].topics_count,
		    &resp.groups[i])) != 0)
			return rc;
	return co_reply(co, &r->pend, &resp);
}

/* ---- OffsetDelete and expiry ---------------------------------------- */

/* Tombstones for some of a group's offsets (and the group itself). */
static int16_t
write_tombstones(struct co *co, struct co_group *g,
    const struct co_offset *const *offs, int n, bool group_too)
{
	struct rn_record_in *recs = calloc((size_t)n + 1, sizeof(*recs));
	size_t *ko = calloc((size_t)n + 2, sizeof(*ko));
	struct rn_kwriter kw;
	int64_t end;
	int16_t err;
	int i, k = n + (group_too ? 1 : 0);

	if (recs == NULL || ko == NULL)
		fatalx("group coordinator: out of memory");
	rn_kwriter_init(&kw);
	for (i = 0; i < n; i++) {
		ko[i] = kw.len;
		rn_grec_offset_key(&kw, rn_kstr_c(g->id),
		    rn_kstr_c(offs[i]->topic), offs[i]->partition);
	}
	ko[n] = kw.len;
	if (group_too)
		rn_grec_group_key(&kw, rn_kstr_c(g->id));
	ko[k] = kw.len;
	for (i = 0; i < k; i++) {
		recs[i].key = kw.buf + ko[i];
		recs[i].key_len = (int32_t)(ko[i + 1] - ko[i]);
		recs[i].value = NULL;
		recs[i].value_len = -1;
		recs[i].timestamp = rn_wallclock_ms();
	}
	err = k == 0 ? 0 : kw.err ? RN_KERR_UNKNOWN_SERVER_ERROR :
	    co_log_append(co, g->partition, recs, k, &end);
	rn_kwriter_free(&kw);
	free(recs);
	free(ko);
	return err;
}

/* The topics a member's consumer-protocol subscription names. */
static bool
subscribed(const struct co_group *g, struct rn_kstr topic)
{
	int i, j;

	if (g->protocol_type == NULL || strcmp(g->protocol_type,
	    "consumer") != 0)
		return false;
	for (i = 0; i < g->n_members; i++) {
		const struct co_member *m = g->members[i];

		for (j = 0; j < m->n_protos; j++) {
			struct rn_kreader r;
			int32_t n, k;

			if (g->protocol != NULL &&
			    strcmp(m->protos[j].name, g->protocol) != 0)
				continue;
			rn_kreader_init(&r, m->protos[j].meta,
			    (size_t)m->protos[j].len);
			(void)rn_kr_int16(&r);
			n = rn_kr_int32(&r);
			for (k = 0; k < n && !r.err; k++) {
				struct rn_kstr t = rn_kr_string(&r, false,
				    false);

				if (!r.err && t.len == topic.len && t.len > 0 &&
				    memcmp(t.ptr, topic.ptr, (size_t)t.len) == 0)
					return true;
			}
		}
	}
	return false;
}

int
co_offset_delete(struct co *co, struct co_req *r)
{
	const struct rn_OffsetDeleteRequest *req = r->req;
	struct rn_OffsetDeleteResponse resp;
	const struct co_offset **offs;
	struct co_group *g = NULL;
	int32_t i, j, n = 0, total = 0;
	int16_t err;

	rn_OffsetDeleteResponse_init(&resp);
	err = req->group_id.len <= 0 ? RN_KERR_INVALID_GROUP_ID :
	    !co_authorized(co, r, RN_ACL_OP_DELETE, RN_ACL_RES_GROUP,
	    req->group_id) ? RN_KERR_GROUP_AUTHORIZATION_FAILED :
	    co_part_error(co, co_partition_of(co, req->group_id));
	if (err == 0 && ((g = co_group_find(co, req->group_id)) == NULL ||
	    g->state == GS_DEAD))
		err = RN_KERR_GROUP_ID_NOT_FOUND;
	if (err != 0) {
		resp.error_code = err;
		return co_reply(co, &r->pend, &resp);
	}
	for (i = 0; i < req->topics_count; i++)
		total += req->topics[i].partitions_count;
	offs = rn_arena_alloc(&co->arena, sizeof(*offs) * (size_t)(total + 1));
	resp.topics = rn_arena_alloc(&co->arena, sizeof(*resp.topics) *
	    (size_t)(req->topics_count + 1));
	if (offs == NULL || resp.topics == NULL)
		return -ENOMEM;
	resp.topics_count = req->topics_count;
	for (i = 0; i < req->topics_count; i++) {
		const struct rn_OffsetDeleteRequest_OffsetDeleteRequestTopic *t =
		    &req->topics[i];
		struct rn_OffsetDeleteResponse_OffsetDeleteResponseTopic *o =
		    &resp.topics[i];
		bool sub = g->state != GS_EMPTY && subscribed(g, t->name);
		bool allowed = co_authorized(co, r, RN_ACL_OP_READ,
		    RN_ACL_RES_TOPIC, t->name);

		o->name = t->name;
		o->partitions_count = t->partitions_count;
		o->partitions = rn_arena_alloc(&co->arena,
		    sizeof(*o->partitions) * (size_t)(t->partitions_count + 1));
		if (o->partitions == NULL)
			return -ENOMEM;
		for (j = 0; j < t->partitions_count; j++) {
			struct co_offset *x;

			o->partitions[j].partition_index =
			    t->partitions[j].partition_index;
			o->partitions[j].error_code = !allowed ?
			    RN_KERR_TOPIC_AUTHORIZATION_FAILED : sub ?
			    RN_KERR_GROUP_SUBSCRIBED_TO_TOPIC : 0;
			if (allowed && !sub && (x = offset_find(g, t->name,
			    t->partitions[j].partition_index)) != NULL)
				offs[n++] = x;
		}
	}
	if (n > 0 && (err = write_tombstones(co, g, offs, n, false)) != 0) {
		resp.error_code = err;
		resp.topics_count = 0;
		return co_reply(co, &r->pend, &resp);
	}
	for (i = 0; i < req->topics_count; i++)
		for (j = 0; j < req->topics[i].partitions_count; j++)
			if (resp.topics[i].partitions[j].error_code == 0)
				co_offset_remove(g, req->topics[i].name,
				    req->topics[i].partitions[j].partition_index);
	return co_reply(co, &r->pend, &resp);
}

/*
 * offsets.retention.minutes: an empty group's offsets go once it has been
 * empty that long (a group of standalone commits: once each offset is
 * that old); an empty group left with no offsets goes too.
 */
void
co_offsets_expire(struct co *co)
{
	int64_t now = rn_wallclock_ms();
	struct co_group *g, *ng;
	const struct co_offset **offs;
	unsigned b;
	int i, n;

	for (b = 0; b < CO_BUCKETS; b++)
		for (g = co->buckets[b]; g != NULL; g = ng) {
			ng = g->next;
			if (g->state != GS_EMPTY || g->n_members > 0 ||
			    co_part_error(co, g->partition) != 0)
				continue;
			offs = calloc((size_t)g->n_offsets + 1, sizeof(*offs));
			if (offs == NULL)
				fatalx("group coordinator: out of memory");
			for (n = 0, i = 0; i < g->n_offsets; i++) {
				/* Kafka: a group that had members counts from
				 * when it became empty, one of standalone
				 * commits from each commit */
				int64_t since = g->protocol_type != NULL &&
				    g->protocol_type[0] != '\0' ?
				    g->state_ts : g->offsets[i].commit_ts;

				if (since + co->gs.retention_ms <= now)
					offs[n++] = &g->offsets[i];
			}
			if (n == g->n_offsets && write_tombstones(co, g, offs,
			    n, true) == 0) {
				rn_log_about(LOG_INFO, rn_subj_group(g->id),
				    "group %s: offsets expired; removed",
				    g->id);
				co_group_remove(co, g);
			} else if (n > 0 && write_tombstones(co, g, offs, n,
			    false) == 0) {
				/* removal moves entries: by key, from the end */
				for (i = n - 1; i >= 0; i--)
					co_offset_remove(g,
					    rn_kstr_c(offs[i]->topic),
					    offs[i]->partition);
			}
			free(offs);
		}
}
