/*
 * Unit tests for the controller's journal of applied metadata log entries
 * (workers/controller/journal.c), what broker-only nodes follow the log
 * by: the entries after an offset, in order, bounded per answer; gaps in
 * the raft indexes (barriers, configurations) are not holes; once the
 * oldest are dropped, or after a snapshot, an offset before them gets
 * -ENOENT (the whole state is sent instead).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/tap.h"
#include "workers/controller/journal.h"

static void
add(struct ctl_journal *j, uint64_t index, size_t len)
{
	char *buf = malloc(len ? len : 1);

	memset(buf, (int)(index & 0xff), len);
	ctl_journal_add(j, index, buf, len);
	free(buf);
}

int
main(void)
{
	struct ctl_journal j;
	size_t first = 99, count = 99;
	uint64_t i;
	int rc;

	plan(12);
	ctl_journal_init(&j);
	rc = ctl_journal_since(&j, 0, 1 << 20, &first, &count);
	ok(rc == 0 && count == 0, "an empty journal: nothing after 0");

	add(&j, 1, 100);
	add(&j, 3, 100);	/* 2 was a barrier: never applied */
	add(&j, 4, 100);
	rc = ctl_journal_since(&j, 0, 1 << 20, &first, &count);
	ok(rc == 0 && count == 3 && ctl_journal_at(&j, first)->index == 1,
	    "after 0: entries 1, 3, 4");
	rc = ctl_journal_since(&j, 2, 1 << 20, &first, &count);
	ok(rc == 0 && count == 2 && ctl_journal_at(&j, first)->index == 3 &&
	    ctl_journal_at(&j, first)->data[0] == 3,
	    "after 2 (a gap): entries 3 and 4, with their bytes");
	rc = ctl_journal_since(&j, 4, 1 << 20, &first, &count);
	ok(rc == 0 && count == 0, "after the last: none");
	rc = ctl_journal_since(&j, 0, 250, &first, &count);
	ok(rc == 0 && count == 2, "at most 250 bytes: two entries of 100");
	rc = ctl_journal_since(&j, 0, 10, &first, &count);
	ok(rc == 0 && count == 1, "but always one");

	/* 40 entries of 1 MiB: the oldest go past 32 MiB */
	for (i = 5; i < 45; i++)
		add(&j, i, 1 << 20);
	ok(j.bytes <= (32u << 20) && j.floor > 4,
	    "past 32 MiB the oldest are dropped (floor %llu, %zu bytes)",
	    (unsigned long long)j.floor, j.bytes);
	rc = ctl_journal_since(&j, 4, 1 << 30, &first, &count);
	is_int(rc, -ENOENT, "an offset before the dropped ones: -ENOENT");
	rc = ctl_journal_since(&j, j.floor, 1 << 30, &first, &count);
	ok(rc == 0 && count > 0 && ctl_journal_at(&j, first)->index ==
	    j.floor + 1 && ctl_journal_at(&j, first + count - 1)->index == 44,
	    "from the floor: every entry kept, to the last");

	ctl_journal_reset(&j, 100);	/* a snapshot at 100 */
	rc = ctl_journal_since(&j, 44, 1 << 20, &first, &count);
	is_int(rc, -ENOENT, "after a snapshot: older offsets get -ENOENT");
	add(&j, 101, 10);
	rc = ctl_journal_since(&j, 100, 1 << 20, &first, &count);
	ok(rc == 0 && count == 1, "and the entries after it are served");
	add(&j, 90, 10);	/* not after the last: the log was replaced */
	rc = ctl_journal_since(&j, 89, 1 << 20, &first, &count);
	is_int(rc, -ENOENT, "an entry out of order resets the journal: "
	    "nothing before it is served");
	ctl_journal_free(&j);
	return done_testing();
}
