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
	if ((p = find(s, h->producer_id)) == NULL || p->n == 0) {
		/*
		 * No state of this producer here (a new replica, a topic
		 * created again, records gone to retention): any sequence is
		 * taken, as Kafka does since it dropped UNKNOWN_PRODUCER_ID.
		 */
		return RN_IDEM_APPEND;
	}
	if (h->producer_epoch < p->epoch)
		return -RN_KERR_INVALID_PRODUCER_EPOCH;
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

void
rn_idem_record(struct rn_idem_state *s, const struct rn_batch_header *h,
    int64_t base_offset, int64_t now_ms)
{
	struct rn_idem_producer *p = NULL, *oldest = &s->p[0];
	int i;

	if (h->producer_id < 0)
		return;
	for (i = 0; i < RN_IDEM_PRODUCERS; i++) {
		if (s->p[i].pid == h->producer_id) {
			p = &s->p[i];
			break;
		}
		if (s->p[i].last_used_ms < oldest->last_used_ms)
			oldest = &s->p[i];
	}
	if (p == NULL || h->producer_epoch != p->epoch) {
		/* new producer (or epoch): the least recently used slot */
		if (p == NULL)
			p = oldest;
		memset(p, 0, sizeof(*p));
		p->pid = h->producer_id;
		p->epoch = h->producer_epoch;
	}
	p->b[p->next].first_seq = h->base_sequence;
	p->b[p->next].last_seq = last_seq(h);
	p->b[p->next].base_offset = base_offset;
	p->next = (uint16_t)((p->next + 1) % RN_IDEM_BATCHES);
	if (p->n < RN_IDEM_BATCHES)
		p->n++;
	p->last_used_ms = now_ms;
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
