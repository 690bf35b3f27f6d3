/*
 * TxnOffsetCommit: a transactional producer's offsets for a group. They
 * are written to the group's __consumer_offsets partition in a
 * transactional batch of the producer, held pending per producer once
 * replicated, and made the group's committed offsets when the commit
 * marker reaches that partition (the network worker that wrote it tells
 * the coordinator), or dropped by an abort marker. Loading a partition
 * replays the same: a transactional batch's offsets pending, a marker
 * applying or dropping them.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/coordinator/coord_int.h"

/* Pending offsets a group, all producers: a bound on what requests keep. */
#define CO_MAX_TXN_OFFSETS 100000

void
co_txn_offset_add(struct co_group *g, int64_t pid, struct rn_kstr topic,
    int32_t p, const struct rn_grec_offset *v)
{
	struct co_txn_offset *o = NULL;
	struct rn_kstr md = v->metadata.len >= 0 ? v->metadata : co_ks("");
	int i;

	for (i = 0; i < g->n_txn_offs; i++)
		if (g->txn_offs[i].pid == pid &&
		    g->txn_offs[i].partition == p &&
		    co_kstr_is(topic, g->txn_offs[i].topic)) {
			o = &g->txn_offs[i];
			free(o->metadata);
			break;
		}
	if (o == NULL) {
		if (g->n_txn_offs >= CO_MAX_TXN_OFFSETS)
			return;   /* checked before writing; a load is bounded */
		if (g->n_txn_offs == g->cap_txn_offs) {
			int cap = g->cap_txn_offs ? 2 * g->cap_txn_offs : 8;
			void *n = realloc(g->txn_offs, sizeof(*g->txn_offs) *
			    (size_t)cap);

			if (n == NULL)
				fatalx("group coordinator: out of memory");
			g->txn_offs = n;
			g->cap_txn_offs = cap;
		}
		o = &g->txn_offs[g->n_txn_offs++];
		o->pid = pid;
		o->topic = co_strdup(topic);
		o->partition = p;
	}
	o->offset = v->offset;
	o->epoch = v->leader_epoch;
	o->metadata = co_strdup(md);
	o->commit_ts = v->commit_ts;
}

/*
 * KIP-447: asked for stable offsets (librdkafka asks so by default), a
 * partition whose offset a transaction still holds pending answers
 * UNSTABLE_OFFSET_COMMIT, and the client asks again: the commit marker
 * reaches the group's partition after EndTxn is answered.
 */
void
co_txn_offsets_unstable(const struct co_group *g,
    struct rn_OffsetFetchResponse_OffsetFetchResponseGroup *o)
{
	int32_t i, j, k;

	if (g == NULL || g->n_txn_offs == 0)
		return;
	for (i = 0; i < o->topics_count; i++)
		for (j = 0; j < o->topics[i].partitions_count; j++) {
			struct rn_OffsetFetchResponse_OffsetFetchResponsePartitions
			    *pp = &o->topics[i].partitions[j];

			for (k = 0; k < g->n_txn_offs; k++)
				if (g->txn_offs[k].partition ==
				    pp->partition_index &&
				    co_kstr_is(o->topics[i].name,
				    g->txn_offs[k].topic)) {
					pp->committed_offset = -1;
					pp->committed_leader_epoch = -1;
					pp->error_code =
					    RN_KERR_UNSTABLE_OFFSET_COMMIT;
					break;
				}
		}
}

void
co_txn_offsets_free(struct co_group *g)
{
	int i;

	for (i = 0; i < g->n_txn_offs; i++) {
		free(g->txn_offs[i].topic);
		free(g->txn_offs[i].metadata);
	}
	free(g->txn_offs);
	g->txn_offs = NULL;
	g->n_txn_offs = g->cap_txn_offs = 0;
}

static void
group_marker(struct co_group *g, int64_t pid, bool commit)
{
	int i, k = 0;

	for (i = 0; i < g->n_txn_offs; i++) {
		struct co_txn_offset *o = &g->txn_offs[i];

		if (o->pid != pid) {
			g->txn_offs[k++] = *o;
			continue;
		}
		if (commit) {
			struct rn_grec_offset v;

			v.offset = o->offset;
			v.leader_epoch = o->epoch;
			v.metadata = co_ks(o->metadata);
			v.commit_ts = o->commit_ts;
			v.expire_ts = -1;
			co_offset_set(g, co_ks(o->topic), o->partition, &v);
		}
		free(o->topic);
		free(o->metadata);
	}
	g->n_txn_offs = k;
}

void
co_txn_offsets_marker(struct co *co, int32_t partition, int64_t pid,
    bool commit)
{
	struct co_group *g;
	int b;

	for (b = 0; b < CO_BUCKETS; b++)
		for (g = co->buckets[b]; g != NULL; g = g->next)
			if (g->partition == partition && g->n_txn_offs > 0)
				group_marker(g, pid, commit);
}

static void
txn_write_free(struct co_write *wr)
{
	rn_arena_free(&wr->arena);
	free(wr->body);
	free(wr->group);
	free(wr);
}

void
co_txn_commit_settled(struct co *co, struct co_write *wr, int16_t kerr)
{
	const struct rn_TxnOffsetCommitRequest *req = &wr->treq;
	struct rn_TxnOffsetCommitResponse resp;
	struct co_group *g = co_group_find(co, rn_kstr_c(wr->group));
	int64_t now = rn_wallclock_ms();
	int32_t i, j, k = 0;

	if (g == NULL && kerr == 0 && co_part_error(co, wr->partition) == 0)
		g = co_group_create(co, rn_kstr_c(wr->group), wr->partition);
	rn_TxnOffsetCommitResponse_init(&resp);
	resp.topics_count = req->topics_count;
	resp.topics = rn_arena_alloc(&wr->arena, sizeof(*resp.topics) *
	    (size_t)(req->topics_count > 0 ? req->topics_count : 1));
	for (i = 0; resp.topics != NULL && i < req->topics_count; i++) {
		const struct rn_TxnOffsetCommitRequest_TxnOffsetCommitRequestTopic
		    *t = &req->topics[i];
		struct rn_TxnOffsetCommitResponse_TxnOffsetCommitResponseTopic
		    *o = &resp.topics[i];

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
			const struct rn_TxnOffsetCommitRequest_TxnOffsetCommitRequestPartition
			    *pp = &t->partitions[j];
			int16_t e = wr->errs[k] != 0 ? wr->errs[k] : kerr;

			o->partitions[j].partition_index = pp->partition_index;
			o->partitions[j].error_code = e;
			if (e == 0 && g != NULL) {
				struct rn_grec_offset v;

				v.offset = pp->committed_offset;
				v.leader_epoch = pp->committed_leader_epoch;
				v.metadata = pp->committed_metadata;
				v.commit_ts = now;
				v.expire_ts = -1;
				co_txn_offset_add(g, req->producer_id, t->name,
				    pp->partition_index, &v);
			}
		}
	}
	if (resp.topics == NULL)
		resp.topics_count = 0;
	if (wr->pend.active)
		(void)co_reply(co, &wr->pend, &resp);
	txn_write_free(wr);
}

/* The group's answer to a transactional commit before any write. */
static int16_t
txn_commit_check(struct co *co, struct co_req *r,
    const struct rn_TxnOffsetCommitRequest *req, struct co_group **gp)
{
	struct co_group *g;
	int16_t err;
	int i;

	*gp = NULL;
	if (!co_authorized(co, r, RN_ACL_OP_WRITE, RN_ACL_RES_TRANSACTIONAL_ID,
	    req->transactional_id))
		return RN_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	if (!co_authorized(co, r, RN_ACL_OP_READ, RN_ACL_RES_GROUP,
	    req->group_id))
		return RN_KERR_GROUP_AUTHORIZATION_FAILED;
	if (req->group_id.len <= 0)
		return RN_KERR_INVALID_GROUP_ID;
	if ((err = co_part_error(co, co_partition_of(co, req->group_id))) != 0)
		return err;
	if ((g = co_group_find(co, req->group_id)) == NULL) {
		*gp = co_group_create(co, req->group_id,
		    co_partition_of(co, req->group_id));
		return 0;
	}
	*gp = g;
	if (g->state == GS_DEAD)
		return RN_KERR_COORDINATOR_NOT_AVAILABLE;
	if (g->n_txn_offs >= 100000) {
		rn_log_about(LOG_WARNING, rn_subj_group(g->id), "group %s: "
		    "too many transactional offsets pending", g->id);
		return RN_KERR_COORDINATOR_NOT_AVAILABLE;
	}
	/* KIP-447: a member's commit is checked as OffsetCommit checks it */
	if (r->pend.ver < 3 || req->generation_id < 0)
		return 0;
	for (i = 0; i < g->n_members; i++)
		if (co_kstr_is(req->member_id, g->members[i]->id))
			break;
	if (i == g->n_members)
		return RN_KERR_UNKNOWN_MEMBER_ID;
	if (req->generation_id != g->generation)
		return RN_KERR_ILLEGAL_GENERATION;
	return 0;
}

/* The records of a transactional commit, appended as its producer. */
static int16_t
txn_commit_append(struct co *co, struct co_write *wr, struct co_group *g,
    int *n_ok, int64_t *end)
{
	const struct rn_TxnOffsetCommitRequest *req = &wr->treq;
	struct co_offset_recs o;
	int32_t i, j, k = 0, total = 0;

	for (i = 0; i < req->topics_count; i++)
		total += req->topics[i].partitions_count;
	co_offset_recs_init(&o, total);
	for (i = 0; i < req->topics_count; i++)
		for (j = 0; j < req->topics[i].partitions_count; j++, k++) {
			const struct rn_TxnOffsetCommitRequest_TxnOffsetCommitRequestPartition
			    *pp = &req->topics[i].partitions[j];

			if (wr->errs[k] == 0)
				co_offset_recs_add(&o, g, req->topics[i].name,
				    pp->partition_index, pp->committed_offset,
				    pp->committed_leader_epoch,
				    pp->committed_metadata);
		}
	*n_ok = o.n;
	return co_offset_recs_append(co, &o, g, req->producer_id,
	    req->producer_epoch, end);
}

int
co_txn_offset_commit(struct co *co, struct co_req *r)
{
	struct co_write *wr = calloc(1, sizeof(*wr));
	struct rn_kreader kr;
	struct co_group *g = NULL;
	int32_t i, j, k = 0, total = 0;
	int64_t end = -1;
	int16_t err;
	int n_ok = 0;

	if (wr == NULL || (wr->body = malloc(r->len + 1)) == NULL)
		fatalx("group coordinator: out of memory");
	if (r->len > 0)
		memcpy(wr->body, r->body, r->len);
	rn_arena_init(&wr->arena, 8 * r->len + 8192);
	rn_kreader_init(&kr, wr->body, r->len);
	wr->pend = r->pend;
	wr->kind = CW_TXN_COMMIT;
	if (rn_TxnOffsetCommitRequest_decode(&kr, r->pend.ver, &wr->arena,
	    &wr->treq) < 0) {
		txn_write_free(wr);
		return -EPROTO;
	}
	for (i = 0; i < wr->treq.topics_count; i++)
		total += wr->treq.topics[i].partitions_count;
	wr->errs = rn_arena_alloc(&wr->arena, sizeof(*wr->errs) *
	    (size_t)(total + 1));
	if (wr->errs == NULL) {
		txn_write_free(wr);
		return -ENOMEM;
	}
	wr->group = co_strdup(wr->treq.group_id);
	err = txn_commit_check(co, r, &wr->treq, &g);
	for (i = 0; i < wr->treq.topics_count; i++) {
		bool topic_ok = err != 0 || co_authorized(co, r,
		    RN_ACL_OP_READ, RN_ACL_RES_TOPIC, wr->treq.topics[i].name);

		for (j = 0; j < wr->treq.topics[i].partitions_count; j++, k++) {
			const struct rn_kstr *md =
			    &wr->treq.topics[i].partitions[j].committed_metadata;

			wr->errs[k] = err;
			if (err == 0 && !topic_ok)
				wr->errs[k] =
				    RN_KERR_TOPIC_AUTHORIZATION_FAILED;
			else if (err == 0 && md->len > co->gs.max_metadata)
				wr->errs[k] = RN_KERR_OFFSET_METADATA_TOO_LARGE;
		}
	}
	if (err == 0)
		err = txn_commit_append(co, wr, g, &n_ok, &end);
	if (err != 0 || n_ok == 0) {
		co_txn_commit_settled(co, wr, err);
		return 0;
	}
	co_write_queue(co, wr, g, end);
	return 0;
}
