/* Checkpoint files, partition.metadata, log dir names, leader epoch cache. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "storage/checkpoint.h"
#include "storage/epoch.h"
#include "storage/logdir.h"
#include "tests/lib/tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static void
put_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static void
get_file(const char *name, char *buf, size_t size)
{
	char path[512];
	FILE *f;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%s", root, name);
	f = fopen(path, "r");
	if (f != NULL) {
		n = fread(buf, 1, size - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
}

static int
count_cb(void *arg, const char *topic, int32_t partition)
{
	(void)topic;
	(void)partition;
	(*(int *)arg)++;
	return 0;
}

static int
count_deleted(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	int n = 0;

	while (dp != NULL && (de = readdir(dp)) != NULL)
		if (strstr(de->d_name, "-delete") != NULL)
			n++;
	if (dp != NULL)
		closedir(dp);
	return n;
}

int
main(void)
{
	char path[512], text[1024], topic[RN_TOPIC_MAX + 1], enc[23];
	struct rn_tp_offset in[3] = {
		{ "orders", 0, 42 }, { "orders", 11, 0 }, { "__consumer_offsets", 7, 123456789012LL },
	};
	struct rn_tp_offset *out = NULL;
	struct rn_epoch_entry ep[4] = { { 1, 0, 0 }, { 3, 0, 100 }, { 4, 0, 250 } }, got[8];
	struct rn_epoch_cache *c = calloc(1, sizeof(*c));
	uint8_t id[16], id2[16];
	size_t n = 0;
	int32_t part, e;
	int64_t o;
	int cnt = 0;

	snprintf(root, sizeof(root), "/tmp/rn-ckpt-XXXXXX");
	if (mkdtemp(root) == NULL)
		bail("mkdtemp");

	/* Offset checkpoints in Kafka's text format. */
	snprintf(path, sizeof(path), "%s/%s", root, RN_RECOVERY_POINT_CHECKPOINT);
	is_int(rn_offset_checkpoint_write(path, in, 3), 0, "write recovery-point checkpoint");
	get_file(RN_RECOVERY_POINT_CHECKPOINT, text, sizeof(text));
	is_str(text, "0\n3\norders 0 42\norders 11 0\n__consumer_offsets 7 123456789012\n",
	    "Kafka's layout: version, count, topic partition offset");
	is_int(rn_offset_checkpoint_read(path, &out, &n), 0, "read it back");
	ok(n == 3 && strcmp(out[2].topic, "__consumer_offsets") == 0 && out[2].partition == 7 &&
	    out[2].offset == 123456789012LL && out[1].partition == 11, "same entries");
	free(out);
	snprintf(path, sizeof(path), "%s/%s.tmp", root, RN_RECOVERY_POINT_CHECKPOINT);
	ok(access(path, F_OK) != 0, "no temporary file left behind");
	put_file("bad1", "1\n0\n");
	snprintf(path, sizeof(path), "%s/bad1", root);
	is_int(rn_offset_checkpoint_read(path, &out, &n), -EBADMSG, "unknown version rejected");
	put_file("bad2", "0\n2\norders 0 42\n");
	snprintf(path, sizeof(path), "%s/bad2", root);
	is_int(rn_offset_checkpoint_read(path, &out, &n), -EBADMSG, "count mismatch rejected");
	put_file("bad3", "0\n1\norders x 42\n");
	snprintf(path, sizeof(path), "%s/bad3", root);
	is_int(rn_offset_checkpoint_read(path, &out, &n), -EBADMSG, "bad number rejected");
	snprintf(path, sizeof(path), "%s/missing", root);
	is_int(rn_offset_checkpoint_read(path, &out, &n), -ENOENT, "missing file is -ENOENT");

	/* Leader epoch checkpoint. */
	snprintf(path, sizeof(path), "%s/%s", root, RN_LEADER_EPOCH_CHECKPOINT);
	is_int(rn_epoch_checkpoint_write(path, ep, 3, true), 0, "write leader-epoch-checkpoint");
	get_file(RN_LEADER_EPOCH_CHECKPOINT, text, sizeof(text));
	is_str(text, "0\n3\n1 0\n3 100\n4 250\n", "epoch startOffset lines");
	is_int(rn_epoch_checkpoint_read(path, got, 8, &n), 0, "read it back");
	ok(n == 3 && got[1].epoch == 3 && got[1].start_offset == 100, "same entries");
	is_int(rn_epoch_checkpoint_read(path, got, 2, &n), -EOVERFLOW, "too many for the buffer");

	/* Topic ids and partition.metadata. */
	memset(id, 0, sizeof(id));
	id[15] = 1;
	rn_uuid_to_base64url(id, enc);
	is_str(enc, "AAAAAAAAAAAAAAAAAAAAAQ", "Uuid(0, 1) like Kafka's toString");
	for (int i = 0; i < 16; i++)
		id[i] = (uint8_t)(i * 37 + 250);
	rn_uuid_to_base64url(id, enc);
	is_int(rn_uuid_from_base64url(enc, id2), 0, "decode");
	ok(memcmp(id, id2, 16) == 0 && strlen(enc) == 22 && strspn(enc,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == 22,
	    "base64url round trip (%s)", enc);
	is_int(rn_uuid_from_base64url("AAAAAAAAAAAAAAAAAAAAA+", id2), -EINVAL, "'+' is not base64url");
	is_int(rn_uuid_from_base64url("AAAAAAAAAAAAAAAAAAAAAB", id2), -EINVAL, "stray low bits rejected");
	is_int(rn_partition_metadata_write(root, id, true), 0, "write partition.metadata");
	get_file(RN_PARTITION_METADATA, text, sizeof(text));
	snprintf(path, sizeof(path), "version: 0\ntopic_id: %s", enc);
	is_str(text, path, "Kafka's partition.metadata text");
	memset(id2, 0, sizeof(id2));
	is_int(rn_partition_metadata_read(root, id2), 0, "read it back");
	ok(memcmp(id, id2, 16) == 0, "same topic id");

	/* Partition directory names. */
	rn_partition_dir_name(text, sizeof(text), "my-topic.v2", 17);
	is_str(text, "my-topic.v2-17", "dir name");
	is_int(rn_partition_dir_parse("my-topic.v2-17", topic, &part), 0, "parse splits at the last dash");
	ok(strcmp(topic, "my-topic.v2") == 0 && part == 17, "topic and partition");
	is_int(rn_partition_dir_parse("nodash", topic, &part), -EINVAL, "not a partition dir");
	is_int(rn_partition_dir_parse("t-1x", topic, &part), -EINVAL, "bad partition number");
	is_int(rn_partition_dir_name(text, sizeof(text), "bad topic", 0), -EINVAL, "illegal topic");
	snprintf(path, sizeof(path), "%s/orders-3", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/orders-4", root);
	mkdir(path, 0755);
	rn_logdir_list(root, count_cb, &cnt);
	is_int(cnt, 2, "log dir listing finds partition dirs only");
	is_int(rn_logdir_take_clean(root), 0, "no clean-shutdown marker yet");
	rn_logdir_mark_clean(root);
	is_int(rn_logdir_take_clean(root), 1, "marker found once");
	is_int(rn_logdir_take_clean(root), 0, "... and consumed");
	snprintf(path, sizeof(path), "%s/orders-4/00000000000000000000.log",
	    root);
	fclose(fopen(path, "w"));
	is_int(rn_logdir_discard(root, "orders-4"), 0,
	    "discard a partition dir");
	snprintf(path, sizeof(path), "%s/orders-4", root);
	ok(access(path, F_OK) != 0, "... it is gone");
	is_int(count_deleted(root), 0, "... with no -delete dir left beside it");
	is_int(rn_logdir_discard(root, "orders-4"), -ENOENT,
	    "discarding it again: ENOENT");

	/* Leader epoch cache semantics. */
	is_int(rn_epoch_assign(c, 2, 0), 1, "assign epoch 2 at 0");
	is_int(rn_epoch_assign(c, 2, 10), 0, "same epoch later: no change");
	rn_epoch_assign(c, 4, 50);
	rn_epoch_assign(c, 6, 90);
	is_int(rn_epoch_latest(c), 6, "latest epoch");
	rn_epoch_end_offset_for(c, 4, 120, &e, &o);
	is_int(e * 1000 + o, 4090, "epoch 4 ends where 6 starts");
	rn_epoch_end_offset_for(c, 5, 120, &e, &o);
	is_int(e * 1000 + o, 4090, "missing epoch 5 answers with epoch 4");
	rn_epoch_end_offset_for(c, -1, 120, &e, &o);
	is_int(o, -1, "undefined epoch");
	is_int(rn_epoch_assign(c, 5, 70), 1, "lower epoch than the latest");
	is_int(rn_epoch_snapshot(c, got, 8), 3, "... replaces the non-monotonic tail");
	ok(got[2].epoch == 5 && got[2].start_offset == 70, "2@0, 4@50, 5@70");
	rn_epoch_truncate_from_start(c, 60);
	is_int(rn_epoch_snapshot(c, got, 8), 2, "truncate from start keeps the covering epoch");
	ok(got[0].epoch == 4 && got[0].start_offset == 60, "... clamped to the new start");
	rn_epoch_truncate_from_end(c, 70);
	is_int(rn_epoch_snapshot(c, got, 8), 1, "truncate from end drops epochs starting there");
	for (int i = 0; i < RN_EPOCH_CACHE_SLOTS + 10; i++)
		rn_epoch_assign(c, 10 + i, 100 + i);
	is_int(rn_epoch_snapshot(c, got, 1), 1, "snapshot honours its buffer");
	is_int(c->count, RN_EPOCH_CACHE_SLOTS, "full cache forgets the oldest");
	is_int(rn_epoch_latest(c), 10 + RN_EPOCH_CACHE_SLOTS + 9, "newest kept");

	free(c);
	snprintf(text, sizeof(text), "rm -rf '%s'", root);
	if (system(text) != 0)
		diag("cleanup failed");
	return done_testing();
}
