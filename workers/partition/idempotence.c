#include "autoconf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "common/util.h"
#include "ipc/prodpool.h"
#include "protocol/kerrors.h"
#include "workers/partition/idempotence.h"

static int32_t
last_seq(const struct rn_batch_header *h)
{
	/* sequences wrap at INT32_MAX like Kafka's */
	int64_t s = (int64_t)h->base_sequence + h->last_offset_delta;
	return (int32_t)(s > INT32_MAX ? s - INT32_MAX - 1 : s);
}

static struct rn_prodpool *pool;	/* this process's mapping */
static int64_t expiration_ms = RN_IDEM_EXPIRATION_MS;

_Static_assert(sizeof(struct rn_idem_producer) <= RN_PRODPOOL_BODY,
    "a producer entry must fit a pool box");

void
rn_idem_pool_attach(struct rn_prodpool *pp)
{
	pool = pp;
}

void
rn_idem_set_expiration(int64_t ms)
{
	expiration_ms = ms > 0 ? ms : RN_IDEM_EXPIRATION_MS;
}

static struct rn_idem_producer *
pooled(uint32_t ref)
{
	return rn_prodpool_body(pool, ref);
}

static unsigned
bucket_of(int64_t pid)
{
	/* Fibonacci hashing: the ids of one node differ in the low bits */
	return (unsigned)(((uint64_t)pid * 0x9e3779b97f4a7c15ULL) >> 58) %
	    RN_IDEM_BUCKETS;
}

/* A chain longer than the pool is a torn one: it ends there. */
static bool
chain_sane(uint32_t steps)
{
	return pool != NULL && steps <= pool->capacity;
}

static struct rn_idem_producer *
iter_next(const struct rn_idem_state *cs, struct rn_idem_iter *it)
{
	struct rn_idem_state *s = (struct rn_idem_state *)cs;
	struct rn_idem_producer *q;

	while (it->i < RN_IDEM_PRODUCERS)
		if ((q = &s->p[it->i++])->pid != 0)
			return q;
	for (;;) {
		while (it->ref == 0) {
			if (it->b >= RN_IDEM_BUCKETS || pool == NULL)
				return NULL;
			it->ref = s->bucket[it->b++];
		}
		if (!chain_sane(++it->steps) || (q = pooled(it->ref)) == NULL)
			return NULL;
		it->ref = q->link;
		if (q->pid != 0)
			return q;
	}
}

const struct rn_idem_producer *
rn_idem_next(const struct rn_idem_state *s, struct rn_idem_iter *it)
{
	return iter_next(s, it);
}

size_t
rn_idem_count(const struct rn_idem_state *s)
{
	struct rn_idem_iter it = RN_IDEM_ITER_INIT;
	size_t n = 0;

	while (iter_next(s, &it) != NULL)
		n++;
	return n;
}

const struct rn_idem_batch *
rn_idem_newest(const struct rn_idem_producer *p)
{
	return p->n > 0 ? &p->b[(p->next + RN_IDEM_BATCHES - 1) %
	    RN_IDEM_BATCHES] : NULL;
}

static struct rn_idem_producer *
find_mut(const struct rn_idem_state *cs, int64_t pid)
{
	struct rn_idem_state *s = (struct rn_idem_state *)cs;
	struct rn_idem_producer *q;
	uint32_t ref, steps = 0;
	int i;

	for (i = 0; i < RN_IDEM_PRODUCERS; i++)
		if (s->p[i].pid == pid)
			return &s->p[i];
	if (pool == NULL)
		return NULL;
	for (ref = s->bucket[bucket_of(pid)]; ref != 0 && chain_sane(++steps);
	    ref = q->link) {
		if ((q = pooled(ref)) == NULL)
			return NULL;
		if (q->pid == pid)
			return q;
	}
	return NULL;
}

static const struct rn_idem_producer *
find(const struct rn_idem_state *s, int64_t pid)
{
	return find_mut(s, pid);
}

static bool
inline_entry(const struct rn_idem_state *s, const struct rn_idem_producer *q)
{
	return q >= &s->p[0] && q < &s->p[RN_IDEM_PRODUCERS];
}

/* A pooled entry off its chain: its ref, 0 if no chain names it. */
static uint32_t
unchain(struct rn_idem_state *s, struct rn_idem_producer *q)
{
	uint32_t *at = &s->bucket[bucket_of(q->pid)], steps = 0, ref;
	struct rn_idem_producer *r;

	while ((ref = *at) != 0 && chain_sane(++steps) &&
	    (r = pooled(ref)) != NULL) {
		if (r == q) {
			*at = q->link;
			s->n_pooled--;
			return ref;
		}
		at = &r->link;
	}
	return 0;
}

/* A pooled entry off its chain and back to the pool: off the chain
 * first, so a death between leaks the box but never leaves a chain
 * through a free one. */
static void
unlink_pooled(struct rn_idem_state *s, struct rn_idem_producer *q)
{
	uint32_t ref = unchain(s, q);

	memset(q, 0, sizeof(*q));
	if (ref != 0)
		rn_prodpool_give(pool, ref);
}

static void
forget(struct rn_idem_state *s, struct rn_idem_producer *q)
{
	if (inline_entry(s, q))
		memset(q, 0, sizeof(*q));
	else
		unlink_pooled(s, q);
}

static void
format_entry(struct rn_idem_producer *p, int64_t pid, int16_t epoch,
    int64_t now_ms)
{
	uint32_t link = p->link;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->epoch = epoch;
	p->txn_first = -1;
	p->coord_epoch = -1;
	p->last_used_ms = now_ms;
	p->link = link;
}

/* A free inline entry, or a box from the pool on pid's chain. */
static struct rn_idem_producer *
take_free(struct rn_idem_state *s, int64_t pid, int16_t epoch, int64_t now_ms)
{
	struct rn_idem_producer *q;
	uint32_t ref;
	int i;

	for (i = 0; i < RN_IDEM_PRODUCERS; i++)
		if (s->p[i].pid == 0) {
			format_entry(&s->p[i], pid, epoch, now_ms);
			return &s->p[i];
		}
	if (pool == NULL || (ref = rn_prodpool_take(pool)) == 0)
		return NULL;
	if ((q = pooled(ref)) == NULL)
		return NULL;
	q->link = s->bucket[bucket_of(pid)];
	format_entry(q, pid, epoch, now_ms);
	/* whole before the chain names it */
	s->bucket[bucket_of(pid)] = ref;
	s->n_pooled++;
	return q;
}

int
rn_idem_expire(struct rn_idem_state *s, int64_t now_ms)
{
	struct rn_idem_iter it = RN_IDEM_ITER_INIT;
	struct rn_idem_producer *q;
	int n = 0;

	/* the iterator has already stepped past q when q goes */
	while ((q = iter_next(s, &it)) != NULL)
		if (q->txn_first < 0 && now_ms - q->last_used_ms >=
		    expiration_ms) {
			forget(s, q);
			n++;
		}
	return n;
}

/*
 * A new producer's entry: a free one, else (idle ones expired first) the
 * least recently used without an open transaction gives way; with
 * any_txn, even one with a transaction (the batch is already in the log:
 * a follower's, a replay). NULL: no room.
 */
static struct rn_idem_producer *
entry_new(struct rn_idem_state *s, int64_t pid, int16_t epoch, int64_t now_ms,
    bool any_txn)
{
	struct rn_idem_iter it = RN_IDEM_ITER_INIT;
	struct rn_idem_producer *q, *lru = NULL, *lru_any = NULL;

	if ((q = take_free(s, pid, epoch, now_ms)) != NULL)
		return q;
	if (rn_idem_expire(s, now_ms) > 0 &&
	    (q = take_free(s, pid, epoch, now_ms)) != NULL)
		return q;
	while ((q = iter_next(s, &it)) != NULL) {
		if (lru_any == NULL || q->last_used_ms < lru_any->last_used_ms)
			lru_any = q;
		if (q->txn_first < 0 && (lru == NULL ||
		    q->last_used_ms < lru->last_used_ms))
			lru = q;
	}
	if (lru == NULL && any_txn)
		lru = lru_any;
	if (lru == NULL)
		return NULL;
	s->evicted++;
	if (lru->txn_first >= 0)
		s->txn_gen++;
	/* its place is reused: a box moves to pid's chain */
	if (!inline_entry(s, lru)) {
		uint32_t ref = unchain(s, lru);

		if (ref == 0)
			return NULL;	/* a torn chain: not ours to use */
		lru->link = s->bucket[bucket_of(pid)];
		format_entry(lru, pid, epoch, now_ms);
		s->bucket[bucket_of(pid)] = ref;
		s->n_pooled++;
		return lru;
	}
	lru->link = 0;
	format_entry(lru, pid, epoch, now_ms);
	return lru;
}

int
rn_idem_admit(struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t now_ms)
{
	if (h->producer_id < 0 || find(s, h->producer_id) != NULL)
		return 0;
	if (entry_new(s, h->producer_id, h->producer_epoch, now_ms, false) ==
	    NULL) {
		s->refused++;
		return -RN_KERR_REQUEST_TIMED_OUT;
	}
	return 0;
}

int
rn_idem_check(const struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t *dup_offset)
{
	const struct rn_idem_producer *p;
	const struct rn_idem_batch *newest;
	int i;

	if (h->producer_id < 0)
		return RN_IDEM_APPEND;
	p = find(s, h->producer_id);
	if (p != NULL && p->txn_first >= 0 && h->producer_epoch == p->epoch &&
	    !(h->attributes & RN_BATCH_ATTR_TRANSACTIONAL))
		return -RN_KERR_INVALID_TXN_STATE;	/* inside its transaction */
	/* a marker at a bumped epoch leaves no batches but fences the older */
	if (p != NULL && h->producer_epoch < p->epoch)
		return -RN_KERR_INVALID_PRODUCER_EPOCH;
	if (p == NULL || p->n == 0) {
		/*
		 * No state of this producer here (a new replica, a topic
		 * created again, records gone to retention): any sequence is
		 * taken, as Kafka does since it dropped UNKNOWN_PRODUCER_ID.
		 */
		return RN_IDEM_APPEND;
	}
	if (h->producer_epoch < p->epoch)
		return -RN_KERR_INVALID_PRODUCER_EPOCH;
	/* the group coordinator's transactional offsets carry no sequence */
	if (h->base_sequence < 0 && (h->attributes & RN_BATCH_ATTR_TRANSACTIONAL))
		return RN_IDEM_APPEND;
	if (h->producer_epoch > p->epoch)
		return h->base_sequence == 0 ? RN_IDEM_APPEND :
		    -RN_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
	for (i = 0; i < p->n; i++)
		if (p->b[i].first_seq == h->base_sequence &&
		    p->b[i].last_seq == last_seq(h)) {
			*dup_offset = p->b[i].base_offset;
			return RN_IDEM_DUPLICATE;
		}
	newest = &p->b[(p->next + RN_IDEM_BATCHES - 1) % RN_IDEM_BATCHES];
	if (h->base_sequence == (newest->last_seq == INT32_MAX ? 0 :
	    newest->last_seq + 1))
		return RN_IDEM_APPEND;
	return -RN_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
}

/* The producer's entry, made if it has none (for a batch already in
 * the log: in the last resort a producer with a transaction gives way). */
static struct rn_idem_producer *
entry(struct rn_idem_state *s, int64_t pid, int16_t epoch, int64_t now_ms)
{
	struct rn_idem_producer *p = find_mut(s, pid);

	return p != NULL ? p : entry_new(s, pid, epoch, now_ms, true);
}

static int64_t
record_marker(struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t now_ms)
{
	struct rn_idem_producer *p = find_mut(s, h->producer_id);
	int64_t first;

	/* a marker of a producer not known here ends nothing: it gets an
	 * entry only where one is free, never by evicting another */
	if (p == NULL && (p = entry_new(s, h->producer_id, h->producer_epoch,
	    now_ms, false)) == NULL)
		return -1;
	first = p->txn_first;

	if (h->producer_epoch != p->epoch) {
		/* a marker at a bumped epoch fences the older one's batches */
		p->n = 0;
		p->next = 0;
		p->epoch = h->producer_epoch;
	}
	p->txn_first = -1;
	p->markers++;
	p->last_used_ms = now_ms;
	if (first >= 0)
		s->txn_gen++;
	return first;
}

int64_t
rn_idem_record(struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t base_offset, int64_t now_ms)
{
	struct rn_idem_producer *p;
	int64_t before;

	if (h->producer_id < 0)
		return -1;
	if (h->attributes & RN_BATCH_ATTR_CONTROL)
		return record_marker(s, h, now_ms);
	if ((p = entry(s, h->producer_id, h->producer_epoch, now_ms)) == NULL)
		return -1;	/* no inline room and no pool: unreachable */
	before = p->txn_first;
	if (h->producer_epoch != p->epoch)
		/* a new epoch: its sequences start over */
		format_entry(p, p->pid, h->producer_epoch, now_ms);
	p->b[p->next].first_seq = h->base_sequence;
	p->b[p->next].last_seq = last_seq(h);
	p->b[p->next].base_offset = base_offset;
	p->next = (uint16_t)((p->next + 1) % RN_IDEM_BATCHES);
	if (p->n < RN_IDEM_BATCHES)
		p->n++;
	p->last_used_ms = now_ms;
	if ((h->attributes & RN_BATCH_ATTR_TRANSACTIONAL) && p->txn_first < 0)
		p->txn_first = base_offset;
	if (p->txn_first != before)
		s->txn_gen++;
	return -1;
}

int
rn_idem_marker_check(const struct rn_idem_state *s, int64_t pid,
    int16_t epoch, int32_t coord_epoch)
{
	const struct rn_idem_producer *p = find(s, pid);

	if (pid < 0 || epoch < 0)
		return -RN_KERR_INVALID_PRODUCER_EPOCH;
	if (p != NULL && epoch < p->epoch)
		return -RN_KERR_INVALID_PRODUCER_EPOCH;
	if (p != NULL && p->coord_epoch > coord_epoch)
		return -RN_KERR_TRANSACTION_COORDINATOR_FENCED;
	return 0;
}

int64_t
rn_idem_first_unstable_but(const struct rn_idem_state *s, int64_t pid)
{
	struct rn_idem_iter it = RN_IDEM_ITER_INIT;
	const struct rn_idem_producer *q;
	int64_t first = -1;

	while ((q = iter_next(s, &it)) != NULL)
		if (q->pid != pid && q->txn_first >= 0 &&
		    (first < 0 || q->txn_first < first))
			first = q->txn_first;
	return first;
}

int64_t
rn_idem_first_unstable(const struct rn_idem_state *s)
{
	return rn_idem_first_unstable_but(s, 0);
}

void
rn_idem_set_coord_epoch(struct rn_idem_state *s, int64_t pid,
    int32_t coord_epoch)
{
	struct rn_idem_producer *q = find_mut(s, pid);

	if (q != NULL)
		q->coord_epoch = coord_epoch;
}

void
rn_idem_set_txn(struct rn_idem_state *s, int64_t pid, int64_t first,
    int32_t coord_epoch)
{
	struct rn_idem_producer *q = find_mut(s, pid);

	if (q != NULL) {
		q->txn_first = first;
		q->coord_epoch = coord_epoch;
	}
}

bool
rn_idem_txn_open(const struct rn_idem_state *s, int64_t pid, int16_t epoch,
    int64_t *guard)
{
	const struct rn_idem_producer *p = find(s, pid);

	if (p != NULL && p->txn_first >= 0 && p->epoch == epoch)
		return true;
	*guard = p != NULL ? (int64_t)p->markers : -1;
	return false;
}

void
rn_idem_reset(struct rn_idem_state *s)
{
	uint32_t ref, next, steps = 0;
	struct rn_idem_producer *q;
	int b;

	for (b = 0; b < RN_IDEM_BUCKETS && pool != NULL; b++)
		for (ref = s->bucket[b]; ref != 0 && chain_sane(++steps);
		    ref = next) {
			if ((q = pooled(ref)) == NULL)
				break;
			next = q->link;
			/* the chain head moves first: a death here leaks */
			s->bucket[b] = next;
			memset(q, 0, sizeof(*q));
			rn_prodpool_give(pool, ref);
		}
	memset(s, 0, sizeof(*s));
}

int64_t
rn_idem_new_producer_id(_Atomic int64_t *counter, int32_t node_id)
{
	/*
	 * Unique without asking the controller: 15 bits of node id, then a
	 * counter that starts at milliseconds since 2024 times 1000, so a
	 * restarted node never reuses an id unless it handed out more than
	 * a thousand per millisecond before.
	 */
	int64_t base = (rn_wallclock_ms() - 1704067200000LL) * 1000, cur;

	cur = atomic_load(counter);
	while (cur < base && !atomic_compare_exchange_weak(counter, &cur, base))
		;
	cur = atomic_fetch_add(counter, 1) + 1;
	return ((int64_t)(node_id & 0x7fff) << 48) | (cur & ((1LL << 48) - 1));
}
