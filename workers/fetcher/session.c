/*
 * The follower's side of incremental fetch sessions (KIP-227). The first
 * fetch to a leader opens a session naming every partition followed
 * there; later fetches name only the partitions whose position changed
 * (records appended, a truncation, a new leader epoch) and forget those
 * no longer followed there, and the leader answers only the partitions
 * with something new. A round then costs what changed: with 10,000
 * partitions per leader a sessionless round read and encoded every one
 * on both sides.
 *
 * A session error (unknown id, wrong epoch) or a closed connection ends
 * the session and the next fetch opens one again. A leader with no room
 * answers the opening fetch in full without one: sessionless fetches for
 * SESSION_RETRY_MS, then another try. Throttled replicas (a reassignment
 * under a replication quota) are fetched without a session: their
 * allowance changes each request.
 */
#include "autoconf.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "storage/batch.h"
#include "storage/checkpoint.h"
#include "workers/fetcher/fetcher_int.h"

#define SESSION_RETRY_MS 30000
#define START_CHECK_MS 5000	/* members' log starts compared this often */

void
fsn_reset(struct leader *l)
{
	l->sess.id = 0;
	l->sess.opening = false;
	l->sess.n_members = 0;
}

void
fsn_free(struct leader *l)
{
	free(l->sess.members);
	free(l->sess.dirty);
	memset(&l->sess, 0, sizeof(l->sess));
}

/* fp's log end moved (records, a truncation, a restart): the next fetch
 * to its leader names it. */
void
fsn_moved(struct leader *l, struct fpart *fp)
{
	struct fsession *s = &l->sess;

	if (fp->dirty)
		return;
	fp->dirty = true;
	if (s->n_dirty == s->cap_dirty) {
		int cap = s->cap_dirty ? 2 * s->cap_dirty : 64;
		void *nd = realloc(s->dirty, sizeof(*s->dirty) * (size_t)cap);

		if (nd == NULL) {
			s->dirty_lost = true;
			return;
		}
		s->dirty = nd;
		s->cap_dirty = cap;
	}
	s->dirty[s->n_dirty++] = fp;
}

/* The fetch went out with every dirty replica in it. */
void
fsn_kicked(struct leader *l)
{
	l->sess.n_dirty = 0;
	l->sess.dirty_lost = false;
}

/*
 * The replicas the next fetch to l looks at: all that follow l (mine, n)
 * unless it is incremental and nothing but positions moved since its
 * last whole look: then only the dirty ones, by topic. A whole look
 * comes after the list or the image changed, and every START_CHECK_MS
 * (log starts move with our retention alone).
 */
struct fpart **
fsn_candidates(struct fetcher *f, struct leader *l, enum fsn_mode mode,
    struct fpart **mine, int *n)
{
	struct fsession *s = &l->sess;
	int64_t now = rn_now_ms();

	s->check_start = mode == FSN_INCREMENTAL && now >= s->check_ms;
	s->whole = mode != FSN_INCREMENTAL || s->check_start ||
	    s->dirty_lost || s->looked_gen != f->mine_gen;
	if (s->whole) {
		s->looked_gen = f->mine_gen;
		if (s->check_start)
			s->check_ms = now + START_CHECK_MS;
		return mine;
	}
	if (s->n_dirty > 1)
		qsort(s->dirty, (size_t)s->n_dirty, sizeof(*s->dirty),
		    fpart_cmp);
	*n = s->n_dirty;
	return s->dirty;
}

/*
 * The session fields of the next fetch to l, and how its partitions are
 * chosen: all of them (FSN_NONE, FSN_OPEN) or only the changed ones.
 */
enum fsn_mode
fsn_begin(struct fetcher *f, struct leader *l, struct rn_FetchRequest *req,
    bool throttled)
{
	struct fsession *s = &l->sess;

	req->session_id = 0;
	req->session_epoch = -1;
	if (throttled || rn_now_ms() < s->retry_ms) {
		if (s->id != 0) {
			/* this fetch ends it: the epoch -1 of a full fetch */
			req->session_id = s->id;
			fsn_reset(l);
		}
		return FSN_NONE;
	}
	if (s->id == 0) {
		s->gen = ++f->sess_gens;
		s->n_members = 0;
		s->opening = true;
		s->max_batch = 0;
		s->check_ms = rn_now_ms() + START_CHECK_MS;
		s->looked_gen = 0;
		req->session_epoch = 0;
		return FSN_OPEN;
	}
	req->session_id = s->id;
	req->session_epoch = s->epoch;
	return FSN_INCREMENTAL;
}

/* Whether an incremental fetch names fp: what the leader holds for it
 * is not where it stands now. */
bool
fsn_wanted(struct fetcher *f, struct leader *l, struct fpart *fp)
{
	fp->kick = f->kicks;
	if (fp->sess_gen != l->sess.gen || fp->dirty ||
	    fp->sent_epoch != fp->mp->leader_epoch)
		return true;
	return l->sess.check_start &&
	    rn_part_log_start(fp->p) != fp->sent_start;
}

/* fp goes out in this fetch with pp: the session holds that now. */
int
fsn_sent(struct fetcher *f, struct leader *l, enum fsn_mode mode,
    struct fpart *fp, const struct rn_FetchRequest_FetchPartition *pp)
{
	struct fsession *s = &l->sess;

	(void)f;
	fp->dirty = false;
	if (mode == FSN_NONE)
		return 0;
	fp->sent_start = pp->log_start_offset;
	fp->sent_epoch = pp->current_leader_epoch;
	if (fp->sess_gen == s->gen)
		return 0;
	if (s->n_members == s->cap_members) {
		int cap = s->cap_members ? 2 * s->cap_members : 64;
		void *nm = realloc(s->members, sizeof(*s->members) *
		    (size_t)cap);

		if (nm == NULL)
			return -1;
		s->members = nm;
		s->cap_members = cap;
	}
	if (fp->p->lcfg.max_message_bytes > s->max_batch)
		s->max_batch = fp->p->lcfg.max_message_bytes;
	memcpy(s->members[s->n_members].id, fp->id, 16);
	s->members[s->n_members].partition = fp->mp->p;
	s->members[s->n_members].fp = fp;
	s->n_members++;
	fp->sess_gen = s->gen;
	return 0;
}

/* Still followed from l, as the member it was added as? */
static bool
member_kept(const struct fetcher *f, const struct leader *l,
    const struct fsession_member *m)
{
	const struct fpart *fp = m->fp;

	return fp->kick == f->kicks && fp->sess_gen == l->sess.gen &&
	    fp->leader == l->id && fp->mp->p == m->partition &&
	    memcmp(fp->id, m->id, 16) == 0;
}

/*
 * An incremental fetch's ForgottenTopicsData: the members no longer
 * followed from l (left its leadership, deleted, moved to another
 * fetcher), dropped from the session. Called after every fsn_wanted of
 * the fetch (they stamp what is followed).
 */
int
fsn_forget(struct fetcher *f, struct leader *l, struct rn_FetchRequest *req,
    struct rn_arena *a)
{
	struct fsession *s = &l->sess;
	int32_t *pv;
	int i, kept = 0, gone = 0;

	/* members leave only with the list, which a whole look follows */
	if (!s->whole)
		return 0;
	for (i = 0; i < s->n_members; i++)
		gone += !member_kept(f, l, &s->members[i]);
	if (gone == 0)
		return 0;
	req->forgotten_topics_data = rn_arena_alloc(a,
	    sizeof(*req->forgotten_topics_data) * (size_t)gone);
	/* the members array is compacted below: the numbers live here */
	pv = rn_arena_alloc(a, sizeof(*pv) * (size_t)gone);
	if (req->forgotten_topics_data == NULL || pv == NULL)
		return -1;
	for (i = 0; i < s->n_members; i++) {
		struct fsession_member *m = &s->members[i];
		struct rn_FetchRequest_ForgottenTopic *ft;

		if (member_kept(f, l, m)) {
			s->members[kept++] = *m;
			continue;
		}
		/* one entry a partition: a leader takes a topic twice */
		ft = &req->forgotten_topics_data[
		    req->forgotten_topics_data_count++];
		memset(ft, 0, sizeof(*ft));
		memcpy(ft->topic_id.b, m->id, 16);
		pv[req->forgotten_topics_data_count - 1] = m->partition;
		ft->partitions = &pv[req->forgotten_topics_data_count - 1];
		ft->partitions_count = 1;
		/* out of the list, the slot's entry is out of the session
		 * (its mp may point into a freed image: not read); one still
		 * listed stays, as the member it is now */
		if (m->fp->kick != f->kicks && m->fp->sess_gen == s->gen)
			m->fp->sess_gen = 0;
	}
	s->n_members = kept;
	return 0;
}

/*
 * The session part of a fetch answer. False: a session error (the
 * session is over; the answer holds no partitions).
 */
bool
fsn_answered(struct leader *l, const struct rn_FetchResponse *resp)
{
	struct fsession *s = &l->sess;

	switch (resp->error_code) {
	case RN_KERR_FETCH_SESSION_ID_NOT_FOUND:
	case RN_KERR_INVALID_FETCH_SESSION_EPOCH:
	case RN_KERR_FETCH_SESSION_TOPIC_ID_ERROR:
		rn_log_about(LOG_INFO, rn_subj_broker(l->id), "fetch session "
		    "%d with leader %d: %s: opening another", s->id, l->id,
		    rn_kerr_name(resp->error_code));
		fsn_reset(l);
		return false;
	default:
		break;
	}
	if (s->opening) {
		s->opening = false;
		if (resp->session_id == 0) {
			/* no room on the leader: answered in full */
			fsn_reset(l);
			s->retry_ms = rn_now_ms() + SESSION_RETRY_MS;
			return true;
		}
		s->id = resp->session_id;
		s->epoch = 1;
	} else if (s->id != 0) {
		s->epoch = s->epoch == INT32_MAX ? 1 : s->epoch + 1;
	}
	return true;
}

/* The member an answer's entry is about when the fetch did not name it. */
struct fpart *
fsn_member(struct fetcher *f, struct leader *l, const uint8_t *topic_id,
    int32_t partition)
{
	const struct rn_mdv_topic *t;
	const struct rn_mdv_partition *mp;
	struct fpart *fp;

	if (l->sess.id == 0 ||
	    (t = rn_mdview_topic_by_id(&f->view, topic_id)) == NULL ||
	    (mp = rn_mdview_partition(t, partition)) == NULL || mp->slot < 0)
		return NULL;
	fp = &f->fp[mp->slot];
	/* followed this round (its t and mp are current), from l, in the
	 * session, and still this partition */
	if (fp->round != f->round || fp->sess_gen != l->sess.gen ||
	    fp->leader != l->id || memcmp(fp->id, topic_id, 16) != 0 ||
	    fp->mp->p != partition)
		return NULL;
	return fp;
}

/*
 * The largest answer an incremental fetch can bring: any member may come
 * back, not only those the fetch names.
 */
size_t
fsn_resp_bound(const struct leader *l)
{
	return 256 + (size_t)l->sess.n_members * (RESP_PART_BYTES + 16 +
	    RN_TOPIC_MAX) + FETCH_MAX_BYTES + (size_t)l->sess.max_batch +
	    RN_BATCH_HEADER_SIZE;
}
