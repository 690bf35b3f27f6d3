/*
 * The first bytes of a connection on the controller listener. A raft
 * peer opens with CTL_RAFT_MAGIC and its node id (8 bytes, big-endian);
 * anything else is a Kafka-protocol connection. transport.c reads them
 * as they arrive; pure, so tests/fuzz/fuzz_raft.c runs it alone.
 */
#ifndef RN_CTL_PREAMBLE_H
#define RN_CTL_PREAMBLE_H

#include <stddef.h>
#include <stdint.h>

#define CTL_RAFT_MAGIC "RNRAFT01"
#define CTL_RAFT_MAGIC_LEN 8
#define CTL_RAFT_PREAMBLE_LEN 16

enum ctl_preamble {
	CTL_PREAMBLE_MORE,	/* a raft preamble so far: read on */
	CTL_PREAMBLE_KAFKA,	/* not one: a Kafka-protocol connection */
	CTL_PREAMBLE_RAFT,	/* a raft peer's, *id set */
	CTL_PREAMBLE_NO_ID,	/* a raft peer's with node id 0: close it */
};

/* What the n bytes read so far (at most CTL_RAFT_PREAMBLE_LEN) are. */
enum ctl_preamble ctl_preamble_read(const uint8_t *buf, size_t n,
    uint64_t *id);

/* The preamble this node sends as node id. */
void ctl_preamble_write(uint8_t out[CTL_RAFT_PREAMBLE_LEN], uint64_t id);

#endif /* RN_CTL_PREAMBLE_H */
