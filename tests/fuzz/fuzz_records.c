/*
 * libFuzzer target for the metadata log as a controller applies it
 * (workers/controller/state.c). The input is a run of entries, each a
 * big-endian 16-bit length and that many bytes: a raft entry's data as
 * raft.c's FSM gets it, zero padding included (a length past the end
 * takes the rest). A first entry that is a msgpack map is a snapshot,
 * restored with ctl_state_restore as raft restores one before replaying
 * the entries after it; every entry is applied with ctl_state_apply to a
 * fresh state, at index 1, 2, ... Seeds (tests/fuzz/corpus-records/) are
 * the entries a real cluster's controllers sent each other.
 *
 * Invariants that abort() (records that decode but break the state):
 *   - a snapshot of the state restores, every record of it applying, into
 *     a state whose snapshot is the same bytes (snapshots are
 *     deterministic, and a node restored from one has what the node that
 *     took it had);
 *   - the image of the state (ctl_state_encode_image, as node 1 of the
 *     cluster publishes it) loads in rn_mdview_load, the workers' parser,
 *     with the state's brokers and topics.
 * Sanitizers report the rest (overreads, UB, leaks: ctl_state_free must
 * free everything applying allocated).
 */
#include "autoconf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "ipc/mdimage.h"
#include "workers/controller/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
bug(const char *what, long long a, long long b)
{
	fprintf(stderr, "fuzz_records: %s (%lld, %lld)\n", what, a, b);
	abort();
}

/* snapshot -> restore -> snapshot gives the same bytes. */
static void
check_snapshot(const struct ctl_state *st)
{
	msgpack_sbuffer s1, s2;
	struct ctl_state st2;
	int rc;

	msgpack_sbuffer_init(&s1);
	msgpack_sbuffer_init(&s2);
	if (ctl_state_snapshot(st, &s1) != 0)
		goto out;	/* out of memory */
	ctl_state_init(&st2);
	if ((rc = ctl_state_restore(&st2, s1.data, s1.size)) != 0)
		bug("a snapshot does not restore whole", rc, (long long)s1.size);
	if (ctl_state_snapshot(&st2, &s2) == 0 && (s1.size != s2.size ||
	    memcmp(s1.data, s2.data, s1.size) != 0))
		bug("a restored snapshot snapshots differently",
		    (long long)s1.size, (long long)s2.size);
	ctl_state_free(&st2);
out:
	msgpack_sbuffer_destroy(&s1);
	msgpack_sbuffer_destroy(&s2);
}

/* The image the controller publishes parses in the workers' reader. */
static void
check_image(const struct ctl_state *st)
{
	static const uint8_t dirs[2][16] = { { 1 }, { 2 } };
	struct ctl_local loc = {
		.node_id = 1, .controller_id = 1, .epoch = 3, .n_dirs = 2,
		.dir_ids = dirs, .max_partitions = 1000,
	};
	msgpack_sbuffer sb;
	struct rn_mdview v;
	int rc;

	msgpack_sbuffer_init(&sb);
	if ((rc = ctl_state_encode_image(st, &loc, &sb)) != 0)
		bug("the image does not encode", rc, 0);
	rn_mdview_init(&v);
	if ((rc = rn_mdview_load(&v, sb.data, sb.size)) != 0)
		bug("the workers refuse the image", rc, (long long)sb.size);
	if (v.n_brokers != st->n_brokers || v.n_topics != st->n_topics)
		bug("the image lost brokers or topics", v.n_brokers,
		    v.n_topics);
	rn_mdview_free(&v);
	msgpack_sbuffer_destroy(&sb);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_state st;
	uint64_t index = 0;
	size_t off = 0;

	ctl_state_init(&st);
	while (size - off >= 2) {
		size_t n = (size_t)data[off] << 8 | data[off + 1];
		uint8_t *entry;

		off += 2;
		if (n > size - off)
			n = size - off;
		/* its own allocation, so an overread past it is seen */
		if ((entry = malloc(n ? n : 1)) == NULL)
			break;
		memcpy(entry, data + off, n);
		if (index == 0 && n > 0 && ((entry[0] & 0xf0) == 0x80 ||
		    entry[0] == 0xde || entry[0] == 0xdf))
			(void)ctl_state_restore(&st, entry, n);
		else
			(void)ctl_state_apply(&st, entry, n, index + 1);
		index++;
		free(entry);
		off += n;
	}
	check_snapshot(&st);
	check_image(&st);
	ctl_state_free(&st);
	return 0;
}
