/*
 * Single-producer/single-consumer ring of variable-length messages living in
 * the shared-memory segment.  The ring holds no pointers, only free-running
 * 64-bit byte indices, so every process may map it at a different address.
 *
 * Frames are 16-byte aligned: a 16-byte header {len, type, flags, sender pid,
 * check} followed by the payload padded to 16 bytes.  A message that would
 * cross the end of the data area is preceded by a padding frame filling the
 * rest of it, so payloads are always contiguous.  Headers never straddle the
 * end because every frame size and the capacity are multiples of 16.
 *
 * Placement: the memory passed to rn_ring_init() must be 64-byte aligned
 * (head, tail and the wake-up flag each have their own cache line).
 *
 * Largest payload: a ring of capacity C accepts payloads up to
 * min(RN_RING_MSG_MAX, C/2 - 16) (see rn_ring_max_payload()); the C/2 bound
 * guarantees a message always fits once the ring drains, wherever the
 * indices stand.  A full 64 KiB payload needs a capacity of 256 KiB.
 *
 * Crash behaviour: a producer that dies mid-push leaves nothing visible (head
 * is published by one release store after the frame is complete); a consumer
 * that dies between peek and release leaves the message at tail, to be peeked
 * again by its successor.  Neither death corrupts the ring.
 */
#ifndef RN_IPC_RING_H
#define RN_IPC_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rn_ring;				/* lives in shared memory; opaque */

#define RN_RING_MSG_MAX (64u * 1024u)	/* largest payload accepted */
#define RN_RING_CAP_MIN 4096u		/* smallest capacity */
#define RN_RING_HDR_SIZE 256u		/* control block before the data */
/* Where the free-running indices sit in the control block (for debugging
 * tools and the fault-injection tests; checked by _Static_assert). */
#define RN_RING_OFF_HEAD 64u
#define RN_RING_OFF_TAIL 128u

/* Bytes needed in shm for a ring of capacity bytes (power of two, >= 4096,
 * <= 2^31); 0 if capacity is invalid. */
size_t rn_ring_shm_size(uint32_t capacity);
/* Format mem (64-byte aligned); 0 or -EINVAL. */
int rn_ring_init(void *mem, uint32_t capacity);
/* View formatted memory (no checks). */
struct rn_ring *rn_ring_at(void *mem);

/*
 * Producer side.  -EAGAIN if full, -EMSGSIZE if len > rn_ring_max_payload(),
 * -EBADMSG if the ring's geometry or indices are corrupt (nothing written;
 * see rn_ring_repair()).  The message becomes visible atomically (a single
 * release store of head) only when complete.  Any type value is allowed;
 * padding is marked by a flag.
 */
int rn_ring_push(struct rn_ring *r, uint16_t type, const void *buf,
    uint32_t len);

/*
 * Consumer side: peek returns payload length (>= 0) and a pointer INTO the
 * ring (contiguous, 16-byte aligned), or -EAGAIN if empty, or -EBADMSG if the
 * frame at tail is corrupt.  Peeking again without release returns the same
 * message.  release advances tail past the peeked message (no-op if empty).
 * The payload pointer is valid until release.
 */
ssize_t rn_ring_peek(struct rn_ring *r, uint16_t *type, const void **payload);
void rn_ring_release(struct rn_ring *r);
/* Sender of the message at tail, 0 if empty (or corrupt). Consumer side. */
pid_t rn_ring_peek_sender(struct rn_ring *r);

/*
 * Wake-ups: an eventfd per consumer.  The consumer announces it is about to
 * sleep, then MUST peek once more before blocking on the eventfd (a message
 * pushed in between would otherwise be missed); after waking it clears the
 * flag.  The producer calls rn_ring_notify() after push; it writes efd only
 * when the consumer said it sleeps, and clears the flag so a burst of pushes
 * costs one write.  notify returns 0 (written or not needed) or -errno from
 * write(2).  It costs a full memory fence (the price of not losing a
 * wake-up), ~20-100 ns: with bursts, push them all, then notify once.
 */
void rn_ring_consumer_sleeping(struct rn_ring *r, bool sleeping);
int rn_ring_notify(struct rn_ring *r, int efd);

/*
 * Blocking helper for a consumer without an event loop: returns 0 as soon as
 * the ring is non-empty, -ETIMEDOUT after timeout_ms (-1: forever), -errno.
 * Spins briefly before sleeping on efd.
 */
int rn_ring_wait(struct rn_ring *r, int efd, int timeout_ms);

/*
 * After a crash: valid() checks the geometry, the indices (tail <= head,
 * head - tail <= capacity, both 16-aligned) and the frame chain from tail to
 * head.  It is exact when at most one side is running (it reads but never
 * writes, so it may run beside a live producer after the consumer died).
 *
 * repair() makes a ring usable: it drops everything beyond the last intact
 * frame (head moves back to it); a ring with impossible indices is reset to
 * empty.  It returns the number of bytes dropped (at most capacity).  On a
 * valid ring it writes nothing, so calling it beside a live producer is then
 * harmless.  Resetting impossible indices only moves tail (unless head is
 * misaligned), which a running producer tolerates; truncating after a corrupt
 * frame moves head back, so the producer must not be running then.  Neither
 * may a consumer.  With a live producer use rn_ring_discard().  A ring whose
 * geometry (magic/capacity) is destroyed cannot be repaired: valid() stays
 * false and the caller must rn_ring_init() it again.
 */
bool rn_ring_valid(const struct rn_ring *r);
size_t rn_ring_repair(struct rn_ring *r);

uint64_t rn_ring_used(const struct rn_ring *r);	/* bytes between tail and head */

/* Additions. */
/* Drop everything queued (tail := head); returns bytes dropped (at most
 * capacity).  Consumer side, or the supervisor while the consumer is dead:
 * safe while the producer keeps pushing, and makes a corrupt ring valid as
 * long as head itself is sane (16-aligned). */
size_t rn_ring_discard(struct rn_ring *r);
uint32_t rn_ring_capacity(const struct rn_ring *r);
uint32_t rn_ring_max_payload(const struct rn_ring *r);
bool rn_ring_empty(struct rn_ring *r);		/* consumer side */

#endif /* RN_IPC_RING_H */
