#include "autoconf.h"

#include <stdatomic.h>
#include <string.h>

#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/partition/idempotence.h"

static int32_t
last_seq(const struct rn_batch_header *h)
{
	/* sequences wrap at INT32_MAX like Kafka's */
	int64_t s = (int64_t)h->base_sequence + h->last_offset_delta;
	return (int32_t)(s > INT32_MAX ? s - INT32_MAX - 1 : s);
}

static const struct rn_idem_producer *
find(const struct rn_idem_state *s, int64_t pid)
{
	int i;

	for (i = 0; i < RN_IDEM_PRODUCERS; i++)
		if (s->p[i].pid == pid)
			return &s->p[i];
	return NULL;
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

/* The producer's entry, taken (the least recently used one without an
 * open transaction, else the least recently used) if it has none. */
static struct rn_idem_producer *
entry(struct rn_idem_state *s, int64_t pid, int16_t epoch)
{
	struct rn_idem_producer *p = NULL, *oldest = NULL, *oldest_any = &s->p[0];
	int i;

	for (i = 0; i < RN_IDEM_PRODUCERS; i++) {
		struct rn_idem_producer *q = &s->p[i];

		if (q->pid == pid)
			return q;
		if (q->last_used_ms < oldest_any->last_used_ms)
			oldest_any = q;
		if ((q->pid == 0 || q->txn_first < 0) && (oldest == NULL ||
		    q->last_used_ms < oldest->last_used_ms))
			oldest = q;
	}
	p = oldest != NULL ? oldest : oldest_any;
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->epoch = epoch;
	p->txn_first = -1;
	p->coord_epoch = -1;
	return p;
}

static int64_t
record_marker(struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t now_ms)
{
	struct rn_idem_producer *p = entry(s, h->producer_id, h->producer_epoch);
	int64_t first = p->txn_first;

	if (h->producer_epoch != p->epoch) {
		/* a marker at a bumped epoch fences the older one's batches */
		p->n = 0;
		p->next = 0;
		p->epoch = h->producer_epoch;
	}
	p->txn_first = -1;
	p->markers++;
	p->last_used_ms = now_ms;
	return first;
}

int64_t
rn_idem_record(struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t base_offset, int64_t now_ms)
{
	struct rn_idem_producer *p;

	if (h->producer_id < 0)
		return -1;
	if (h->attributes & RN_BATCH_ATTR_CONTROL)
		return record_marker(s, h, now_ms);
	p = entry(s, h->producer_id, h->producer_epoch);
	if (h->producer_epoch != p->epoch) {
		/* a new epoch: its sequences start over */
		int64_t pid = p->pid;

		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->epoch = h->producer_epoch;
		p->txn_first = -1;
		p->coord_epoch = -1;
	}
	p->b[p->next].first_seq = h->base_sequence;
	p->b[p->next].last_seq = last_seq(h);
	p->b[p->next].base_offset = base_offset;
	p->next = (uint16_t)((p->next + 1) % RN_IDEM_BATCHES);
	if (p->n < RN_IDEM_BATCHES)
		p->n++;
	p->last_used_ms = now_ms;
	if ((h->attributes & RN_BATCH_ATTR_TRANSACTIONAL) && p->txn_first < 0)
		p->txn_first = base_offset;
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
	int64_t first = -1;
	int i;

	for (i = 0; i < RN_IDEM_PRODUCERS; i++)
		if (s->p[i].pid != 0 && s->p[i].pid != pid &&
		    s->p[i].txn_first >= 0 &&
		    (first < 0 || s->p[i].txn_first < first))
			first = s->p[i].txn_first;
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
	int i;

	for (i = 0; i < RN_IDEM_PRODUCERS; i++)
		if (s->p[i].pid == pid)
			s->p[i].coord_epoch = coord_epoch;
}

void
rn_idem_set_txn(struct rn_idem_state *s, int64_t pid, int64_t first,
    int32_t coord_epoch)
{
	int i;

	for (i = 0; i < RN_IDEM_PRODUCERS; i++)
		if (s->p[i].pid == pid) {
			s->p[i].txn_first = first;
			s->p[i].coord_epoch = coord_epoch;
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
