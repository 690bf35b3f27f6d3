/*
 * Unit tests for messages of any size over a ring (ipc/ringq.c): a
 * message many times the ring's capacity streams through as the consumer
 * drains it, order is kept behind it, the consumer's bound is enforced,
 * and pieces left over from a restarted peer are dropped.
 */
#include "ipc/ringq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipc/msgtypes.h"
#include "tests/lib/tap.h"

#define CAP 8192u

static struct rn_ring *
ring_new(void)
{
	size_t sz = rn_ring_shm_size(CAP);
	void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || rn_ring_init(p, CAP) != 0)
		bail("ring");
	return rn_ring_at(p);
}

/* Consume everything in the ring; returns complete messages seen. */
static int
drain(struct rn_ring *r, struct rn_ringq_in *in, size_t max, uint16_t *types,
    size_t *lens, uint8_t **bufs, int *dropped)
{
	const void *payload;
	uint16_t type;
	ssize_t len;
	int n = 0, rc;

	while ((len = rn_ring_peek(r, &type, &payload)) >= 0) {
		if (type == RN_IPC_FRAGMENT) {
			rc = rn_ringq_take(in, 42, payload, (size_t)len, max);
			if (rc < 0)
				(*dropped)++;
			if (rc == 1) {
				types[n] = in->type;
				lens[n] = in->len;
				bufs[n] = malloc(in->len);
				memcpy(bufs[n], in->buf, in->len);
				n++;
				rn_ringq_in_done(in);
			}
		} else {
			types[n] = type;
			lens[n] = (size_t)len;
			bufs[n] = malloc((size_t)len + 1);
			memcpy(bufs[n], payload, (size_t)len);
			n++;
		}
		rn_ring_release(r);
	}
	return n;
}

int
main(void)
{
	struct rn_ring *r = ring_new();
	struct rn_ringq q = { 0 };
	struct rn_ringq_in in = { 0 };
	size_t big_len = 10 * CAP + 123, lens[8];
	uint8_t *big = malloc(big_len), *bufs[8];
	uint16_t types[8];
	int i, rounds = 0, n = 0, dropped = 0, k;

	for (i = 0; i < (int)big_len; i++)
		big[i] = (uint8_t)(i * 7 + 3);
	is_int(rn_ringq_send(&q, r, 9, "small", 5, 0), 0, "a small message");
	is_int(rn_ringq_pending(&q), 0, "goes straight into the ring");
	is_int(rn_ringq_send(&q, r, 11, big, big_len, 0), 0,
	    "a message ten times the ring's capacity is accepted");
	ok(rn_ringq_pending(&q), "and partly queued");
	is_int(rn_ringq_send(&q, r, 12, "after", 5, 0), 0,
	    "a small message behind it");
	ok(rn_ringq_pending(&q), "waits behind it, not ahead");
	while (n < 3 && rounds++ < 1000) {
		k = drain(r, &in, big_len, types + n, lens + n, bufs + n,
		    &dropped);
		n += k;
		rn_ringq_pump(&q, r, 0);
	}
	is_int(n, 3, "three messages arrive (%d rounds)", rounds);
	is_int(dropped, 0, "no piece dropped");
	if (n == 3) {
		ok(types[0] == 9 && lens[0] == 5 &&
		    !memcmp(bufs[0], "small", 5),
		    "first the small one");
		ok(types[1] == 11 && lens[1] == big_len &&
		    !memcmp(bufs[1], big, big_len),
		    "then the big one, byte-identical");
		ok(types[2] == 12 && lens[2] == 5 &&
		    !memcmp(bufs[2], "after", 5),
		    "then the one sent after it");
	}
	for (i = 0; i < n; i++)
		free(bufs[i]);
	is_int(rn_ringq_pending(&q), 0, "nothing left queued");

	/* the consumer's bound: announced size beyond max is dropped */
	rn_ringq_send(&q, r, 13, big, 3 * CAP, 0);
	n = drain(r, &in, CAP, types, lens, bufs, &dropped);
	rn_ringq_pump(&q, r, 0);
	n += drain(r, &in, CAP, types, lens, bufs, &dropped);
	rn_ringq_pump(&q, r, 0);
	n += drain(r, &in, CAP, types, lens, bufs, &dropped);
	is_int(n, 0, "a message over the consumer's bound is not delivered");
	ok(dropped >= 1, "its pieces are dropped (%d)", dropped);
	ok(in.buf == NULL, "and nothing is held for it");

	/* a queued message for a consumer that has since been replaced */
	dropped = 0;
	rn_ringq_send(&q, r, 14, big, 4 * CAP, 1234);
	drain(r, &in, big_len, types, lens, bufs, &dropped);
	is_int(rn_ringq_pump(&q, r, 5678), 1,
	    "the rest of a message for an old consumer is dropped");
	is_int(rn_ringq_pending(&q), 0, "nothing left for the newcomer");
	is_int(rn_ringq_send(&q, r, 15, "fresh", 5, 5678), 0,
	    "the newcomer's own message");
	n = drain(r, &in, big_len, types, lens, bufs, &dropped);
	is_int(n, 1, "arrives alone");
	ok(n == 1 && types[0] == 15, "as itself");
	if (n == 1)
		free(bufs[0]);

	/* a middle piece with nothing before it (peer restarted) */
	{
		uint8_t frag[RN_RINGQ_FRAG_HDR + 4] = { 0 };
		uint32_t total = 100, off = 50;

		memcpy(frag, &total, 4);
		memcpy(frag + 4, &off, 4);
		rn_ringq_in_done(&in);
		is_int(rn_ringq_take(&in, 42, frag, sizeof(frag), 1000),
		    -EBADMSG, "a piece that continues nothing is refused");
	}
	free(big);
	rn_ringq_clear(&q);
	rn_ringq_in_done(&in);
	done_testing();
}
