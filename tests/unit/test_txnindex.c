/* Aborted-transaction index files: Kafka's 34-byte AbortedTxn layout,
 * appends, a torn tail, truncation at a marker offset, the merge of a
 * cleaning's segments. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "storage/bytes.h"
#include "storage/txnindex.h"
#include "tests/lib/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct collect {
	struct rn_aborted_txn a[8];
	int n;
};

static int
collect_cb(void *arg, const struct rn_aborted_txn *a)
{
	struct collect *c = arg;

	if (c->n < 8)
		c->a[c->n] = *a;
	c->n++;
	return 0;
}

static off_t
file_size(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, 0) == 0 ? st.st_size : -1;
}

int
main(void)
{
	char tmpl[] = "/tmp/runnel-txnindex-XXXXXX", path[256];
	const char *name = "00000000000000000100.txnindex";
	struct rn_aborted_txn a = { 7, 103, 107, 108 }, b = { 9, 104, 110, 111 };
	struct collect c;
	uint8_t buf[RN_TXNINDEX_ENTRY];
	int dirfd, fd;

	plan(18);
	if (mkdtemp(tmpl) == NULL || (dirfd = open(tmpl, O_RDONLY)) < 0)
		bail("temporary dir");

	rn_txnindex_encode(&a, buf);
	ok(rn_get_be16(buf) == 0 && rn_get_be64(buf + 2) == 7 &&
	    rn_get_be64(buf + 10) == 103 && rn_get_be64(buf + 18) == 107 &&
	    rn_get_be64(buf + 26) == 108,
	    "entry: version 0, pid, first, last, last stable offset (big endian)");

	memset(&c, 0, sizeof(c));
	is_int(rn_txnindex_read(dirfd, 100, collect_cb, &c), 0, "no file: nothing");
	is_int(c.n, 0, "and no entries");

	is_int(rn_txnindex_append(dirfd, 100, &a), 0, "append");
	is_int(rn_txnindex_append(dirfd, 100, &b), 0, "append a second");
	is_int((int)file_size(dirfd, name), 2 * RN_TXNINDEX_ENTRY,
	    "<base>.txnindex holds two 34-byte entries");
	memset(&c, 0, sizeof(c));
	rn_txnindex_read(dirfd, 100, collect_cb, &c);
	ok(c.n == 2 && c.a[0].producer_id == 7 && c.a[0].first_offset == 103 &&
	    c.a[1].last_offset == 110 && c.a[1].last_stable_offset == 111,
	    "both read back in order");

	/* a crash in the middle of an append: a torn entry */
	snprintf(path, sizeof(path), "%s/%s", tmpl, name);
	fd = open(path, O_WRONLY | O_APPEND);
	ok(fd >= 0 && write(fd, buf, 10) == 10, "torn tail written");
	close(fd);
	memset(&c, 0, sizeof(c));
	rn_txnindex_read(dirfd, 100, collect_cb, &c);
	is_int(c.n, 2, "a torn last entry is ignored");
	rn_txnindex_append(dirfd, 100, &a);
	is_int((int)file_size(dirfd, name), 3 * RN_TXNINDEX_ENTRY,
	    "the next append writes over the torn bytes");

	is_int(rn_txnindex_truncate(dirfd, 100, 110), 0, "truncate at 110");
	memset(&c, 0, sizeof(c));
	rn_txnindex_read(dirfd, 100, collect_cb, &c);
	ok(c.n == 1 && c.a[0].last_offset == 107,
	    "entries whose marker is at or past the cut are gone");

	/* another version is not ours to read */
	fd = open(path, O_WRONLY | O_APPEND);
	buf[1] = 3;
	ok(fd >= 0 && write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf),
	    "an entry of version 3 appended");
	close(fd);
	is_int(rn_txnindex_read(dirfd, 100, collect_cb, &c), -EBADMSG,
	    "an unknown version is -EBADMSG");

	/* a cleaning merges segments 100 and 200 into 100 */
	unlink(path);
	{
		int64_t olds[2] = { 100, 200 };
		struct rn_aborted_txn c1 = { 7, 150, 201, 202 };

		rn_txnindex_append(dirfd, 100, &a);
		rn_txnindex_append(dirfd, 200, &c1);
		is_int(rn_txnindex_merge(dirfd, olds, 2), 0, "merge");
		is_int(rn_txnindex_merge(dirfd, olds, 2), 0,
		    "merged again (a swap cut short and redone)");
		memset(&c, 0, sizeof(c));
		rn_txnindex_read(dirfd, 100, collect_cb, &c);
		ok(c.n == 2 && c.a[0].last_offset == 107 &&
		    c.a[1].last_offset == 201,
		    "the merged index holds both, once each, in order");
		rn_txnindex_unlink_merged(dirfd, olds, 2);
		ok(faccessat(dirfd, "00000000000000000200.txnindex", F_OK, 0) != 0,
		    "the merged-away segment's index is removed");
	}
	unlink(path);
	close(dirfd);
	rmdir(tmpl);
	return done_testing();
}
