/*
 * Incremental fetch sessions (KIP-227). A client that opens a session
 * names its partitions once; each later request names only those whose
 * fetch position changed, and the answer carries only the partitions with
 * something new: records, an error, or a high watermark, last stable
 * offset or log start the session was not yet told. Followers fetch this
 * way, so a replication round costs what changed, not every partition a
 * follower replicates.
 *
 * What a request looks at comes from the wake set, not from a walk over
 * the session: the session's slots keep this worker's parked bit, so an
 * append or a high watermark moving on one of them marks its slot, and
 * net_fsess_marks turns the marks into the session's pending partitions.
 * A request then builds an answer from the partitions it names and the
 * pending ones only (net_fsess_effective rewrites c->req to list them).
 * Every partition of the session is looked at again after a new image and
 * at least every FULL_PASS_MS: that also tells the leader where a follower
 * stands on partitions it did not name (its ISR needs a recent caught-up
 * time), as Kafka's leader hears of every session partition each fetch.
 *
 * A session belongs to the connection that made it and ends with it;
 * another connection naming its id gets FETCH_SESSION_ID_NOT_FOUND, and
 * its client starts a new session (Kafka's rule for an unknown id). A
 * worker keeps at most its share of max.incremental.fetch.session.cache.
 * slots; past that a new session is answered in full without one.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"

#define FULL_PASS_MS 1000
#define NEVER (-2)	/* a told offset before the first answer */

struct fsess_topic {
	uint8_t id[16];
	char *name;		/* sessions by name (v7-12) */
	int32_t name_len;
};

struct fsess_part {
	uint32_t topic;		/* index into topics */
	int32_t partition;
	int32_t slot;		/* in the image last looked at; -1: none */
	int32_t max_bytes;
	int32_t leader_epoch;	/* the request's current_leader_epoch */
	int32_t last_fetched_epoch;
	int64_t fetch_offset;
	int64_t log_start;	/* the fetcher's own (followers) */
	int64_t told_hw, told_lso, told_start;
	bool named;		/* in the request being answered */
	bool pending;		/* may have something to say */
	bool live;
};

struct net_fsess {
	int32_t id;
	int32_t epoch;		/* the one the next request must carry */
	int32_t replica_id;
	bool by_id;		/* v13+: topics by id */
	bool all;		/* look at every partition in the next answer */
	bool full;		/* the answer being built looks at every one */
	bool fresh;		/* a new session: its first answer lists all */
	bool woken;		/* a partition became pending since the build */
	uint64_t view_version;
	int64_t full_at_ms;	/* the next full look */
	struct net_fsess *next;
	struct fsess_topic *topics;
	uint32_t n_topics, cap_topics;
	struct fsess_part *parts;
	uint32_t n_parts, cap_parts, n_dead;
	/* open addressing, value index + 1: topics by key, parts by
	 * (topic, partition), parts by slot */
	uint32_t *thash, *phash, *shash;
	uint32_t tcap, pcap, scap;
	uint32_t *eidx;		/* the answer's parts, in its order */
	uint32_t n_eidx;
	uint32_t *due;		/* the named and pending parts, once each */
	uint32_t n_due;
};

static uint64_t
mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static uint64_t
bytes_hash(const void *p, size_t len)
{
	return mix(rn_hash64(p, len));
}

static uint64_t
topic_hash(const struct net_fsess *s, const struct fsess_topic *t)
{
	return s->by_id ? bytes_hash(t->id, 16) :
	    bytes_hash(t->name, (size_t)t->name_len);
}

static uint64_t
part_hash(uint32_t topic, int32_t partition)
{
	return mix(((uint64_t)topic << 32) ^ (uint32_t)partition);
}

/* A power of two at least twice n (and 16). */
static uint32_t
table_cap(uint32_t n)
{
	uint32_t cap = 16;

	while (cap < 2 * n)
		cap *= 2;
	return cap;
}

static void
tinsert(uint32_t *tab, uint32_t cap, uint64_t h, uint32_t idx)
{
	uint32_t at = (uint32_t)h & (cap - 1);

	while (tab[at] != 0)
		at = (at + 1) & (cap - 1);
	tab[at] = idx + 1;
}

/* The three tables built again for what the session holds now. */
static int
rehash(struct net_fsess *s)
{
	uint32_t tcap = table_cap(s->n_topics), pcap = table_cap(s->n_parts);
	uint32_t *th = calloc(tcap, sizeof(*th));
	uint32_t *ph = calloc(pcap, sizeof(*ph));
	uint32_t *sh = calloc(pcap, sizeof(*sh));
	uint32_t i;

	if (th == NULL || ph == NULL || sh == NULL) {
		free(th);
		free(ph);
		free(sh);
		return -ENOMEM;
	}
	free(s->thash);
	free(s->phash);
	free(s->shash);
	s->thash = th;
	s->phash = ph;
	s->shash = sh;
	s->tcap = tcap;
	s->pcap = s->scap = pcap;
	for (i = 0; i < s->n_topics; i++)
		tinsert(th, tcap, topic_hash(s, &s->topics[i]), i);
	for (i = 0; i < s->n_parts; i++) {
		tinsert(ph, pcap, part_hash(s->parts[i].topic,
		    s->parts[i].partition), i);
		if (s->parts[i].slot >= 0)
			tinsert(sh, pcap, mix((uint64_t)s->parts[i].slot), i);
	}
	return 0;
}

static int64_t
topic_find(const struct net_fsess *s, const uint8_t *id, struct rn_kstr name)
{
	uint64_t h = s->by_id ? bytes_hash(id, 16) :
	    bytes_hash(name.ptr, name.len > 0 ? (size_t)name.len : 0);
	uint32_t at = (uint32_t)h & (s->tcap - 1), v;

	while ((v = s->thash[at]) != 0) {
		const struct fsess_topic *t = &s->topics[v - 1];

		if (s->by_id ? memcmp(t->id, id, 16) == 0 :
		    (t->name_len == name.len && memcmp(t->name, name.ptr,
		    (size_t)name.len) == 0))
			return v - 1;
		at = (at + 1) & (s->tcap - 1);
	}
	return -1;
}

static int64_t
part_find(const struct net_fsess *s, uint32_t topic, int32_t partition)
{
	uint32_t at = (uint32_t)part_hash(topic, partition) & (s->pcap - 1), v;

	while ((v = s->phash[at]) != 0) {
		if (s->parts[v - 1].topic == topic &&
		    s->parts[v - 1].partition == partition)
			return v - 1;
		at = (at + 1) & (s->pcap - 1);
	}
	return -1;
}

/* The live part in slot, or -1 (an entry of a slot it left is skipped). */
static int64_t
slot_find(const struct net_fsess *s, int32_t slot)
{
	uint32_t at = (uint32_t)mix((uint64_t)slot) & (s->scap - 1), v;

	while ((v = s->shash[at]) != 0) {
		if (s->parts[v - 1].slot == slot && s->parts[v - 1].live)
			return v - 1;
		at = (at + 1) & (s->scap - 1);
	}
	return -1;
}

static int64_t
topic_add(struct net_fsess *s, const uint8_t *id, struct rn_kstr name)
{
	int64_t ti = topic_find(s, id, name);
	struct fsess_topic *t;

	if (ti >= 0)
		return ti;
	if (s->n_topics == s->cap_topics) {
		uint32_t cap = s->cap_topics ? 2 * s->cap_topics : 8;
		void *nt = realloc(s->topics, cap * sizeof(*s->topics));

		if (nt == NULL)
			return -ENOMEM;
		s->topics = nt;
		s->cap_topics = cap;
	}
	t = &s->topics[s->n_topics];
	memset(t, 0, sizeof(*t));
	memcpy(t->id, id, 16);
	if (!s->by_id && name.len > 0) {
		if ((t->name = malloc((size_t)name.len)) == NULL)
			return -ENOMEM;
		memcpy(t->name, name.ptr, (size_t)name.len);
		t->name_len = name.len;
	}
	s->n_topics++;
	if (2 * s->n_topics > s->tcap) {
		if (rehash(s) != 0)
			return -ENOMEM;
	} else {
		tinsert(s->thash, s->tcap, topic_hash(s, t), s->n_topics - 1);
	}
	return s->n_topics - 1;
}

/* Part i is named or pending: on the list of those, once. */
static void
due_add(struct net_fsess *s, uint32_t i)
{
	if (!s->parts[i].named && !s->parts[i].pending)
		s->due[s->n_due++] = i;
}

/* The request's view of one partition, into the session. */
static int
part_update(struct net_fsess *s, const struct rn_FetchRequest_FetchTopic *ft,
    const struct rn_FetchRequest_FetchPartition *fp)
{
	int64_t ti = topic_add(s, ft->topic_id.b, ft->topic), pi;
	struct fsess_part *sp;

	if (ti < 0)
		return (int)ti;
	if ((pi = part_find(s, (uint32_t)ti, fp->partition)) < 0) {
		if (s->n_parts == s->cap_parts) {
			uint32_t cap = s->cap_parts ? 2 * s->cap_parts : 64;
			void *np = realloc(s->parts, cap * sizeof(*s->parts));
			void *ne = realloc(s->eidx, cap * sizeof(*s->eidx));
			void *nt = realloc(s->due, cap * sizeof(*s->due));

			if (np != NULL)
				s->parts = np;
			if (ne != NULL)
				s->eidx = ne;
			if (nt != NULL)
				s->due = nt;
			if (np == NULL || ne == NULL || nt == NULL)
				return -ENOMEM;
			s->cap_parts = cap;
		}
		pi = s->n_parts++;
		sp = &s->parts[pi];
		memset(sp, 0, sizeof(*sp));
		sp->topic = (uint32_t)ti;
		sp->partition = fp->partition;
		sp->slot = -1;
		sp->told_hw = sp->told_lso = sp->told_start = NEVER;
		sp->live = true;
		if (2 * s->n_parts > s->pcap) {
			if (rehash(s) != 0)
				return -ENOMEM;
		} else {
			tinsert(s->phash, s->pcap, part_hash(sp->topic,
			    sp->partition), (uint32_t)pi);
		}
	}
	sp = &s->parts[pi];
	sp->fetch_offset = fp->fetch_offset;
	sp->log_start = fp->log_start_offset;
	sp->max_bytes = fp->partition_max_bytes;
	sp->leader_epoch = fp->current_leader_epoch;
	sp->last_fetched_epoch = fp->last_fetched_epoch;
	due_add(s, (uint32_t)pi);
	sp->named = true;
	return 0;
}

static void
part_forget(struct net_fsess *s, const struct rn_FetchRequest_ForgottenTopic *f)
{
	int64_t ti = topic_find(s, f->topic_id.b, f->topic), pi;
	int32_t j;

	if (ti < 0)
		return;
	for (j = 0; j < f->partitions_count; j++)
		if ((pi = part_find(s, (uint32_t)ti, f->partitions[j])) >= 0 &&
		    s->parts[pi].live) {
			s->parts[pi].live = false;
			s->n_dead++;
		}
}

/* Forgotten parts (and topics left without any) dropped for good. */
static int
compact(struct net_fsess *s)
{
	uint32_t *tmap, i, n = 0, nt = 0;

	if (s->n_dead == 0)
		return 0;
	if ((tmap = calloc(s->n_topics ? s->n_topics : 1, sizeof(*tmap))) == NULL)
		return -ENOMEM;
	for (i = 0; i < s->n_parts; i++)
		if (s->parts[i].live) {
			tmap[s->parts[i].topic] = 1;
			s->parts[n++] = s->parts[i];
		}
	s->n_parts = n;
	for (i = 0; i < s->n_topics; i++) {
		if (tmap[i] == 0) {
			free(s->topics[i].name);
			continue;
		}
		s->topics[nt] = s->topics[i];
		tmap[i] = nt++;
	}
	s->n_topics = nt;
	s->n_due = 0;
	for (i = 0; i < s->n_parts; i++) {
		s->parts[i].topic = tmap[s->parts[i].topic];
		if (s->parts[i].named || s->parts[i].pending)
			s->due[s->n_due++] = i;
	}
	free(tmap);
	s->n_dead = 0;
	return rehash(s);
}

static void
sess_free(struct net_fsess *s)
{
	uint32_t i;

	for (i = 0; i < s->n_topics; i++)
		free(s->topics[i].name);
	free(s->topics);
	free(s->parts);
	free(s->thash);
	free(s->phash);
	free(s->shash);
	free(s->eidx);
	free(s->due);
	free(s);
}

void
net_fsess_free(struct net *n, struct conn *c)
{
	struct net_fsess **pp;

	if (c->fsess == NULL)
		return;
	for (pp = &n->fsess; *pp != NULL; pp = &(*pp)->next)
		if (*pp == c->fsess) {
			*pp = c->fsess->next;
			break;
		}
	n->fsess_parts -= c->fsess->n_parts;
	sess_free(c->fsess);
	c->fsess = NULL;
	c->fsess_on = false;
	n->n_fsess--;
	net_count_fsess(n);
}

/* This worker's share of max.incremental.fetch.session.cache.slots. */
static unsigned
sess_cap(const struct net *n)
{
	unsigned workers = n->cfg->num_network_threads > 0 ?
	    (unsigned)n->cfg->num_network_threads : 1;
	unsigned slots = n->cfg->fetch_session_slots > 0 ?
	    (unsigned)n->cfg->fetch_session_slots : 0;

	return (slots + workers - 1) / workers;
}

static int32_t
new_id(const struct net *n)
{
	const struct net_fsess *s;
	uint32_t r;

	for (;;) {
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
			r = (uint32_t)rn_now_us() * 2654435761u;
		r &= 0x7fffffff;
		for (s = n->fsess; s != NULL && s->id != (int32_t)r; s = s->next)
			;
		if (r != 0 && s == NULL)
			return (int32_t)r;
	}
}

/* More than the node could lead: a session that big is refused. */
static uint32_t
sess_max_parts(const struct net *n)
{
	return 2 * n->parts.n + 1024;
}

/* Every partition of the request into a new session (epoch 0): 1, or 0
 * when it would be too big (answered in full without one), or -errno. */
static int
sess_open(struct net *n, struct conn *c, const struct rn_FetchRequest *req)
{
	struct net_fsess *s = calloc(1, sizeof(*s));
	int32_t i, j;

	if (s == NULL)
		return -ENOMEM;
	s->by_id = c->hdr.api_version >= 13;
	s->replica_id = req->replica_id;
	if (rehash(s) != 0) {
		sess_free(s);
		return -ENOMEM;
	}
	for (i = 0; i < req->topics_count; i++)
		for (j = 0; j < req->topics[i].partitions_count; j++) {
			if (part_update(s, &req->topics[i],
			    &req->topics[i].partitions[j]) != 0) {
				sess_free(s);
				return -ENOMEM;
			}
			if (s->n_parts > sess_max_parts(n)) {
				sess_free(s);
				return 0; /* answered in full, without one */
			}
		}
	s->id = new_id(n);
	s->epoch = 1;
	s->all = s->fresh = true;
	s->next = n->fsess;
	n->fsess = s;
	n->n_fsess++;
	n->fsess_parts += s->n_parts;
	net_count_fsess(n);
	c->fsess = s;
	return 1;
}

/*
 * The session rules of a Fetch v7+ request: 0 to answer it without a
 * session (c->fsess_on false), 1 with c->fsess (c->req rewritten by
 * net_fsess_effective), or -errno. *err: a top-level error to answer
 * with instead (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
 * FETCH_SESSION_TOPIC_ID_ERROR).
 */
int
net_fsess_begin(struct net *n, struct conn *c, int16_t *err)
{
	const struct rn_FetchRequest *req = c->req;
	struct net_fsess *s = c->fsess;
	uint32_t before;
	int32_t i, j;
	int rc = 0;

	*err = RN_KERR_NONE;
	c->fsess_on = false;
	/* what net_fsess_effective builds from, and where it builds */
	c->fsess_req = req;
	c->fsess_mark = c->req_mark;
	if (req->session_epoch == -1 || req->session_epoch == 0) {
		/* a session named with either is over */
		if (s != NULL && req->session_id != 0 && s->id == req->session_id)
			net_fsess_free(n, c);
		if (req->session_epoch == -1)
			return 0;
		/* one session a connection: a new one replaces it */
		if (c->fsess != NULL)
			net_fsess_free(n, c);
		if (n->n_fsess >= sess_cap(n))
			return 0;	/* answered in full, without one */
		if ((rc = sess_open(n, c, req)) <= 0)
			return rc;
		c->fsess_on = true;
		return 1;
	}
	if (s == NULL || s->id != req->session_id ||
	    s->replica_id != req->replica_id) {
		*err = RN_KERR_FETCH_SESSION_ID_NOT_FOUND;
		return 0;
	}
	if (s->epoch != req->session_epoch) {
		*err = RN_KERR_INVALID_FETCH_SESSION_EPOCH;
		return 0;
	}
	if (s->by_id != (c->hdr.api_version >= 13)) {
		*err = RN_KERR_FETCH_SESSION_TOPIC_ID_ERROR;
		return 0;
	}
	before = s->n_parts;
	for (i = 0; rc == 0 && i < req->topics_count; i++)
		for (j = 0; rc == 0 && j < req->topics[i].partitions_count; j++)
			rc = part_update(s, &req->topics[i],
			    &req->topics[i].partitions[j]);
	for (i = 0; rc == 0 && i < req->forgotten_topics_data_count; i++)
		part_forget(s, &req->forgotten_topics_data[i]);
	if (rc == 0)
		rc = compact(s);
	if (s->n_parts != before) {
		n->fsess_parts += s->n_parts;
		n->fsess_parts -= before;
		net_count_fsess(n);
	}
	if (rc != 0)
		return rc;
	/* a session never holds more than the node could lead: beyond
	 * that it ends, and its client starts again with a full one */
	if (s->n_parts > sess_max_parts(n)) {
		net_fsess_free(n, c);
		*err = RN_KERR_FETCH_SESSION_ID_NOT_FOUND;
		return 0;
	}
	s->epoch = s->epoch == INT32_MAX ? 1 : s->epoch + 1;
	if (s->view_version != n->view.version ||
	    rn_wallclock_ms() >= s->full_at_ms)
		s->all = true;
	c->fsess_on = true;
	return 1;
}

static const struct fsess_part *cmp_parts;

static int
eidx_cmp(const void *x, const void *y)
{
	const struct fsess_part *a = &cmp_parts[*(const uint32_t *)x];
	const struct fsess_part *b = &cmp_parts[*(const uint32_t *)y];

	if (a->topic != b->topic)
		return a->topic < b->topic ? -1 : 1;
	return (a->partition > b->partition) - (a->partition < b->partition);
}

/* Where the image has a session partition now, or -1. */
static int32_t
slot_now(struct net *n, const struct net_fsess *s, const struct fsess_part *sp)
{
	const struct fsess_topic *t = &s->topics[sp->topic];
	const struct rn_mdv_topic *mt = s->by_id ?
	    rn_mdview_topic_by_id(&n->view, t->id) :
	    net_topic(n, (struct rn_kstr){ t->name, t->name_len });
	const struct rn_mdv_partition *mp = mt != NULL ?
	    rn_mdview_partition(mt, sp->partition) : NULL;

	return mp != NULL ? mp->slot : -1;
}

/*
 * c->req becomes the request this answer is built from: every partition
 * of the session after a new image or when a full look is due, else the
 * named and the pending ones. Built again at each wake-up of a parked
 * fetch (first false), in the connection's arena after the decoded
 * request. Only a request's first build notes a follower's positions
 * (fetch.c): the timed full look counts only when it is one, or a stream
 * of new images looked at by parked rebuilds would keep putting it off,
 * and the caught-up times of partitions the follower does not name would
 * age until their ISRs shrink.
 */
int
net_fsess_effective(struct net *n, struct conn *c, bool first)
{
	struct net_fsess *s = c->fsess;
	const struct rn_FetchRequest *orig = c->fsess_req;
	struct rn_FetchRequest *req;
	struct rn_FetchRequest_FetchTopic *ft;
	struct rn_FetchRequest_FetchPartition *fp;
	bool reslot = false;
	uint32_t i, k = 0;

	rn_arena_rewind(&c->arena, &c->fsess_mark);
	if (s->all) {
		s->full = true;
		s->all = false;
		s->view_version = n->view.version;
	}
	if (s->full && first)
		s->full_at_ms = rn_wallclock_ms() + (n->cfg->
		    replica_lag_time_max_ms / 4 < FULL_PASS_MS ?
		    n->cfg->replica_lag_time_max_ms / 4 : FULL_PASS_MS);
	s->woken = false;
	if (s->full)
		for (k = 0; k < s->n_parts; k++)
			s->eidx[k] = k;
	else
		for (k = 0; k < s->n_due; k++)
			s->eidx[k] = s->due[k];
	s->n_eidx = k;
	/* by topic: one entry a topic in the answer */
	cmp_parts = s->parts;
	if (k > 1)
		qsort(s->eidx, k, sizeof(*s->eidx), eidx_cmp);
	req = rn_arena_alloc(&c->arena, sizeof(*req));
	ft = rn_arena_alloc(&c->arena, sizeof(*ft) * (k ? k : 1));
	fp = rn_arena_alloc(&c->arena, sizeof(*fp) * (k ? k : 1));
	if (req == NULL || ft == NULL || fp == NULL)
		return -ENOMEM;
	*req = *orig;
	req->topics = ft;
	req->topics_count = 0;
	req->forgotten_topics_data_count = 0;
	for (i = 0; i < k; i++) {
		struct fsess_part *sp = &s->parts[s->eidx[i]];
		const struct fsess_topic *t = &s->topics[sp->topic];
		int32_t slot;

		if (i == 0 || s->parts[s->eidx[i - 1]].topic != sp->topic) {
			ft = &req->topics[req->topics_count++];
			memset(ft, 0, sizeof(*ft));
			memcpy(ft->topic_id.b, t->id, 16);
			ft->topic = (struct rn_kstr){ t->name, t->name_len };
			ft->partitions = &fp[i];
		}
		fp[i] = (struct rn_FetchRequest_FetchPartition){
			.partition = sp->partition,
			.current_leader_epoch = sp->leader_epoch,
			.fetch_offset = sp->fetch_offset,
			.last_fetched_epoch = sp->last_fetched_epoch,
			.log_start_offset = sp->log_start,
			.partition_max_bytes = sp->max_bytes,
		};
		ft->partitions_count++;
		/* its slot, so that a mark there finds it */
		if ((s->full || sp->named) && (slot = slot_now(n, s, sp)) !=
		    sp->slot) {
			sp->slot = slot;
			reslot = true;
		}
	}
	if (reslot && rehash(s) != 0)
		return -ENOMEM;
	c->req = req;
	rn_arena_mark(&c->arena, &c->req_mark);
	return 0;
}

static bool
worth_telling(const struct fsess_part *sp,
    const struct rn_FetchResponse_PartitionData *pd)
{
	return pd->records.len > 0 || pd->error_code != RN_KERR_NONE ||
	    pd->high_watermark != sp->told_hw ||
	    pd->last_stable_offset != sp->told_lso ||
	    pd->log_start_offset != sp->told_start;
}

/*
 * The answer is going out: but for a new session's first, it keeps only
 * the partitions worth telling (records, errors, offsets the session was
 * not told), a full look's too, and what each was told is noted.
 * unsent[k]: the k-th had records left behind (the byte budget): it
 * stays pending.
 */
void
net_fsess_answered(struct conn *c, struct rn_FetchResponse *r,
    const uint8_t *unsent)
{
	struct net_fsess *s = c->fsess;
	int32_t i, j, kt = 0;
	uint32_t k = 0;

	s->n_due = 0;
	for (i = 0; i < r->responses_count; i++) {
		struct rn_FetchResponse_FetchableTopicResponse *tr =
		    &r->responses[i];
		int32_t kp = 0;

		for (j = 0; j < tr->partitions_count && k < s->n_eidx;
		    j++, k++) {
			struct fsess_part *sp = &s->parts[s->eidx[k]];
			struct rn_FetchResponse_PartitionData *pd =
			    &tr->partitions[j];

			sp->named = sp->pending = false;
			if (unsent != NULL && unsent[k]) {
				/* records left behind: the next answer */
				due_add(s, s->eidx[k]);
				sp->pending = true;
			}
			if (!s->fresh && !worth_telling(sp, pd))
				continue;
			sp->told_hw = pd->high_watermark;
			sp->told_lso = pd->last_stable_offset;
			sp->told_start = pd->log_start_offset;
			tr->partitions[kp++] = *pd;
		}
		tr->partitions_count = kp;
		if (kp > 0)
			r->responses[kt++] = *tr;
	}
	/* (the answer mirrors the request: none is left over) */
	for (; k < s->n_eidx; k++)
		if (s->parts[s->eidx[k]].named || s->parts[s->eidx[k]].pending)
			s->due[s->n_due++] = s->eidx[k];
	r->responses_count = kt;
	r->session_id = s->id;
	s->full = s->fresh = false;
}

/*
 * After a wake-set take: the marked slots of each session become its
 * pending partitions (n->changed, words listed in n->changed_words).
 */
void
net_fsess_marks(struct net *n, uint32_t nw)
{
	struct net_fsess *s;
	uint32_t i;

	for (s = n->fsess; s != NULL; s = s->next)
		for (i = 0; i < nw; i++) {
			uint32_t w = n->changed_words[i];
			uint64_t bits = n->changed[w];

			while (bits != 0) {
				int32_t slot = (int32_t)(w * 64 +
				    (uint32_t)__builtin_ctzll(bits));
				int64_t pi = slot_find(s, slot);

				bits &= bits - 1;
				if (pi < 0)
					continue;
				if (!s->parts[pi].pending) {
					due_add(s, (uint32_t)pi);
					s->parts[pi].pending = true;
				}
				/* already pending too: a parked fetch rebuilt
				 * after a high watermark alone kept it so, and
				 * the records that follow must wake it */
				s->woken = true;
			}
		}
}

/* A new image: every session looks at all its partitions again. */
void
net_fsess_all(struct net *n)
{
	struct net_fsess *s;

	for (s = n->fsess; s != NULL; s = s->next)
		s->all = s->woken = true;
}

bool
net_fsess_woken(const struct conn *c)
{
	return c->fsess_on && c->fsess->woken;
}

bool
net_fsess_full(const struct conn *c)
{
	return c->fsess_on && c->fsess->full;
}
