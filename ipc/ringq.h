/*
 * Messages of any size over a ring (ring.h accepts payloads up to
 * rn_ring_max_payload()). A larger message travels as consecutive
 * RN_IPC_FRAGMENT frames, each {u32 total, u32 offset, u16 type, u16 0}
 * then its bytes; the consumer reassembles it into a buffer it bounds.
 * When the ring is full the producer keeps the rest in its own queue and
 * pushes it from its loop (rn_ringq_pump), so a message larger than the
 * ring itself gets through as the consumer drains it. Messages leave in
 * the order they were sent.
 */
#ifndef RN_IPC_RINGQ_H
#define RN_IPC_RINGQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/ring.h"

#define RN_RINGQ_FRAG_HDR 12u

struct rn_ringq_msg;

/* Producer side: what did not fit yet. */
struct rn_ringq {
	struct rn_ringq_msg *head, *tail;
	size_t bytes;            /* queued payload bytes */
};

/* Consumer side: the message being reassembled. */
struct rn_ringq_in {
	uint8_t *buf;
	size_t len, total;
	uint16_t type;
	pid_t sender;
};

/*
 * Send buf as one message of type: pushed now as far as the ring allows,
 * the rest queued. dest (0: any) is the consumer's pid it is meant for;
 * rn_ringq_pump drops it if another process has taken that ring since.
 * 0, or -ENOMEM, -EMSGSIZE (over 4 GiB), -EBADMSG (ring corrupt).
 * The caller notifies the consumer afterwards.
 */
int rn_ringq_send(struct rn_ringq *q, struct rn_ring *r, uint16_t type,
    const void *buf, size_t len, pid_t dest);
/* Push what is queued; 1 if anything moved, 0 if not, -EBADMSG. */
int rn_ringq_pump(struct rn_ringq *q, struct rn_ring *r, pid_t dest_now);
bool rn_ringq_pending(const struct rn_ringq *q);
void rn_ringq_clear(struct rn_ringq *q);

/*
 * Consumer: one RN_IPC_FRAGMENT payload from sender. 1 when the message
 * is complete (in->type, in->buf, in->len; rn_ringq_in_done() after use),
 * 0 while more is due, -EMSGSIZE if it announces more than max bytes
 * (dropped), -EBADMSG for a fragment that does not continue anything
 * (left over from a restarted peer: dropped).
 */
int rn_ringq_take(struct rn_ringq_in *in, pid_t sender, const void *frag,
    size_t len, size_t max);
void rn_ringq_in_done(struct rn_ringq_in *in);

#endif /* RN_IPC_RINGQ_H */
