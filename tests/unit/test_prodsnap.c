/* Producer-state snapshot files: Kafka's PidSnapshot v1 layout, CRC,
 * refusal of damaged files, listing and pruning. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "storage/bytes.h"
#include "storage/crc32c.h"
#include "storage/prodsnap.h"
#include "tests/lib/tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct collect {
	struct rn_prodsnap_entry e[8];
	int n;
};

static int
collect_cb(void *arg, const struct rn_prodsnap_entry *e)
{
	struct collect *c = arg;

	if (c->n < 8)
		c->e[c->n] = *e;
	c->n++;
	return 0;
}

static int
same(const struct rn_prodsnap_entry *a, const struct rn_prodsnap_entry *b)
{
	return a->producer_id == b->producer_id && a->epoch == b->epoch &&
	    a->last_seq == b->last_seq && a->last_offset == b->last_offset &&
	    a->offset_delta == b->offset_delta && a->timestamp == b->timestamp &&
	    a->coordinator_epoch == b->coordinator_epoch &&
	    a->txn_first_offset == b->txn_first_offset;
}

static const struct rn_prodsnap_entry two[2] = {
	{ 0x0102030405060708LL, 3, 41, 1000, 9, 1700000000000LL, -1, -1 },
	{ 77, 0, 2147483647, 5, 0, -1, -1, -1 },
};

static void
test_layout(void)
{
	uint8_t buf[RN_PRODSNAP_HEADER + 2 * RN_PRODSNAP_ENTRY];
	const uint8_t *e0 = buf + RN_PRODSNAP_HEADER;
	struct collect c = { .n = 0 };

	is_int((int)rn_prodsnap_size(2), (int)sizeof(buf), "10 + 46 bytes an entry");
	rn_prodsnap_encode(two, 2, buf);
	is_int(rn_get_be16(buf), 1, "version 1 first (int16)");
	is_int((int)rn_get_be32(buf + 6), 2, "then, after the CRC, the count");
	ok(rn_get_be32(buf + 2) == rn_crc32c(0, buf + 6, sizeof(buf) - 6),
	    "CRC32C of everything after the CRC field");
	ok(rn_get_be64(e0) == 0x0102030405060708ULL &&
	    rn_get_be16(e0 + 8) == 3 && rn_get_be32(e0 + 10) == 41 &&
	    rn_get_be64(e0 + 14) == 1000 && rn_get_be32(e0 + 22) == 9 &&
	    rn_get_be64(e0 + 26) == 1700000000000ULL &&
	    rn_get_be32(e0 + 34) == 0xffffffffu &&
	    rn_get_be64(e0 + 38) == UINT64_MAX,
	    "entry: producer id, epoch, last seq, last offset, offset delta, "
	    "timestamp, coordinator epoch, txn first offset, big endian");
	is_int(rn_prodsnap_decode(buf, sizeof(buf), collect_cb, &c), 0,
	    "decodes");
	ok(c.n == 2 && same(&c.e[0], &two[0]) && same(&c.e[1], &two[1]),
	    "same entries back");
}

static void
test_damage(void)
{
	uint8_t buf[RN_PRODSNAP_HEADER + 2 * RN_PRODSNAP_ENTRY], bad[sizeof(buf)];
	struct collect c = { .n = 0 };
	size_t i;
	int refused = 0;

	rn_prodsnap_encode(two, 2, buf);
	for (i = 0; i < sizeof(buf); i++) {
		memcpy(bad, buf, sizeof(buf));
		bad[i] ^= 0x40;
		refused += rn_prodsnap_decode(bad, sizeof(bad), collect_cb, &c) ==
		    -EBADMSG;
	}
	is_int(refused, (int)sizeof(buf), "any flipped byte is -EBADMSG");
	is_int(c.n, 0, "... and no entry of a damaged file is handed out");
	for (i = 0; i < sizeof(buf); i++)
		if (rn_prodsnap_decode(buf, i, collect_cb, &c) != -EBADMSG)
			break;
	is_int((int)i, (int)sizeof(buf), "every shorter prefix is -EBADMSG");
	memcpy(bad, buf, sizeof(buf));
	rn_put_be32(bad + 6, 0x7fffffff);
	rn_put_be32(bad + 2, rn_crc32c(0, bad + 6, sizeof(bad) - 6));
	is_int(rn_prodsnap_decode(bad, sizeof(bad), collect_cb, &c), -EBADMSG,
	    "a count beyond the bytes, CRC right, is -EBADMSG");
	rn_prodsnap_encode(NULL, 0, bad);
	is_int(rn_prodsnap_decode(bad, RN_PRODSNAP_HEADER, collect_cb, &c), 0,
	    "no producers: a 10-byte snapshot");
	srand(7);
	for (i = 0; i < 2000; i++) {
		size_t len = (size_t)rand() % sizeof(bad), k;

		for (k = 0; k < len; k++)
			bad[k] = (uint8_t)rand();
		(void)rn_prodsnap_decode(bad, len, collect_cb, &c);
	}
	ok(1, "random bytes decode without a crash");
}

static void
test_files(void)
{
	char root[] = "/tmp/test_prodsnap.XXXXXX", path[128];
	int64_t offs[8];
	struct collect c = { .n = 0 };
	int dfd, fd, i;

	if (mkdtemp(root) == NULL)
		bail("mkdtemp");
	dfd = open(root, O_RDONLY | O_DIRECTORY);
	is_int(rn_prodsnap_read(dfd, 5, collect_cb, &c), -ENOENT,
	    "a missing snapshot is -ENOENT");
	for (i = 5; i >= 1; i--)
		is_int(rn_prodsnap_write(dfd, i * 100, two, 2, i == 5), 0,
		    "write a snapshot");
	snprintf(path, sizeof(path), "%s/00000000000000000500.snapshot", root);
	ok(access(path, F_OK) == 0, "named <20-digit offset>.snapshot");
	snprintf(path, sizeof(path), "%s/00000000000000000700.snapshot.tmp",
	    root);
	fd = open(path, O_CREAT | O_WRONLY, 0644);
	close(fd);
	is_int(rn_prodsnap_list(dfd, offs, 8), 5, "five listed (not the .tmp)");
	ok(offs[0] == 100 && offs[4] == 500, "oldest first");
	is_int(rn_prodsnap_read(dfd, 300, collect_cb, &c), 0, "read one back");
	is_int(c.n, 2, "with its two producers");
	is_int(rn_prodsnap_prune(dfd, 0, 400, 10), 1, "prune above 400: one");
	is_int(rn_prodsnap_prune(dfd, 200, -1, 10), 1, "prune below 200: one");
	is_int(rn_prodsnap_prune(dfd, 0, -1, 1), 2, "keep the newest one");
	is_int(rn_prodsnap_list(dfd, offs, 8), 1, "one left");
	is_int((int)offs[0], 400, "the newest");
	fd = openat(dfd, "00000000000000000400.snapshot", O_WRONLY | O_TRUNC);
	(void)write(fd, "\0\1\0\0", 4);
	close(fd);
	is_int(rn_prodsnap_read(dfd, 400, collect_cb, &c), -EBADMSG,
	    "a torn file is -EBADMSG");
	is_int(rn_prodsnap_remove(dfd, 400), 0, "removed");
	is_int(rn_prodsnap_remove(dfd, 400), 0, "removing it again is fine");
	unlink(path);
	close(dfd);
	rmdir(root);
}

int
main(void)
{
	test_layout();
	test_damage();
	test_files();
	done_testing();
	return 0;
}
