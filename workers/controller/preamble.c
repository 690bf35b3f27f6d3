/* The controller listener's preamble (preamble.h). */
#include "autoconf.h"

#include <string.h>

#include "workers/controller/preamble.h"

enum ctl_preamble
ctl_preamble_read(const uint8_t *buf, size_t n, uint64_t *id)
{
	size_t cmp = n < CTL_RAFT_MAGIC_LEN ? n : CTL_RAFT_MAGIC_LEN;
	uint64_t v = 0;
	int i;

	if (memcmp(buf, CTL_RAFT_MAGIC, cmp) != 0)
		return CTL_PREAMBLE_KAFKA;
	if (n < CTL_RAFT_PREAMBLE_LEN)
		return CTL_PREAMBLE_MORE;
	for (i = 0; i < 8; i++)
		v = v << 8 | buf[CTL_RAFT_MAGIC_LEN + i];
	*id = v;
	return v != 0 ? CTL_PREAMBLE_RAFT : CTL_PREAMBLE_NO_ID;
}

void
ctl_preamble_write(uint8_t out[CTL_RAFT_PREAMBLE_LEN], uint64_t id)
{
	int i;

	memcpy(out, CTL_RAFT_MAGIC, CTL_RAFT_MAGIC_LEN);
	for (i = 0; i < 8; i++)
		out[CTL_RAFT_MAGIC_LEN + i] = (uint8_t)(id >> (56 - 8 * i));
}
