/*
 * Log dir failure: which errors take a dir offline, the offline bits in
 * the segment header (set once, logged once, other dirs untouched), and
 * the controller's side as records apply: a replica marked LOST is
 * offline and placed nowhere on its broker, the failed dir leaves the
 * broker's registered dirs, and both survive a snapshot.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/mdimage.h"
#include "ipc/shm.h"
#include "storage/errors.h"
#include "tests/lib/tap.h"
#include "workers/controller/offline_dirs.h"
#include "workers/controller/records.h"
#include "workers/controller/state.h"
#include "workers/partition/dirfail.h"

static void
test_errors(void)
{
	ok(rn_dirfail_is_io_error(-EIO) && rn_dirfail_is_io_error(ENOSPC) &&
	    rn_dirfail_is_io_error(-EROFS) && rn_dirfail_is_io_error(-EDQUOT),
	    "EIO, ENOSPC, EROFS, EDQUOT are disk failures (either sign)");
	ok(!rn_dirfail_is_io_error(0) && !rn_dirfail_is_io_error(-ERANGE) &&
	    !rn_dirfail_is_io_error(-ESTALE) && !rn_dirfail_is_io_error(-EAGAIN) &&
	    !rn_dirfail_is_io_error(RN_ERR_CORRUPT_MESSAGE) &&
	    !rn_dirfail_is_io_error(-EILSEQ),
	    "a bad request, a moved slot or a stale handle is not");
}

static void
test_flag(void)
{
	struct rn_shm_params sp = { 4, 1u << 12, 64 };
	struct rn_shm shm;
	int rc;

	if ((rc = rn_shm_create(&sp, &shm)) != 0)
		bail("rn_shm_create: %s", strerror(-rc));
	is_int(rn_dirfail_mask(&shm), 0, "a new segment has no offline dir");
	is_int(rn_dirfail_check(&shm, 1, "/d1", -ERANGE, "reading"), -ERANGE,
	    "a non-I/O error is handed back");
	is_int(rn_dirfail_mask(&shm), 0, "and takes nothing offline");
	is_int(rn_dirfail_check(&shm, 1, "/d1", -ENOSPC, "appending"),
	    -ENOSPC, "ENOSPC is handed back");
	ok(rn_dirfail_offline(&shm, 1) && !rn_dirfail_offline(&shm, 0),
	    "and takes that dir offline, not the other");
	rn_dirfail_check(&shm, 1, "/d1", -EIO, "flushing");
	rn_dirfail_check(&shm, 40, "/d40", -EIO, "flushing");
	rn_dirfail_check(&shm, -1, NULL, -EIO, "flushing");
	is_int(rn_dirfail_mask(&shm), 2, "a second error or a dir out of "
	    "range changes nothing");
	ok(!rn_dirfail_offline(&shm, -1) && !rn_dirfail_offline(&shm, 40),
	    "no index outside log.dirs is offline");
	rn_shm_destroy(&shm);
}

static uint8_t dirs[2][16] = { { 0xd1 }, { 0xd2 } };
static uint8_t tid[16] = { 0x7a };

static void
apply(struct ctl_state *st, struct ctl_batch *b, uint64_t index)
{
	size_t len;
	void *e = ctl_batch_finish(b, &len);

	if (e == NULL || ctl_state_apply(st, e, len, index) < 0)
		bail("batch at %llu did not apply", (unsigned long long)index);
	free(e);
	ctl_batch_free(b);
	ctl_batch_init(b);
}

/* Broker 1 with two dirs, topic t with p0 on the first and p1 on the
 * second; then p1's replica lost and the second dir gone. */
static void
build(struct ctl_state *st)
{
	struct ctl_batch b;
	struct ctl_broker br;
	struct ctl_partition p;
	int32_t one = 1;
	int i;

	ctl_state_init(st);
	ctl_batch_init(&b);
	memset(&br, 0, sizeof(br));
	br.id = 1;
	br.log_dirs = dirs;
	br.n_log_dirs = 2;
	ctl_rec_register_broker(&b, &br, false);
	ctl_rec_topic(&b, "t", 1, tid);
	for (i = 0; i < 2; i++) {
		memset(&p, 0, sizeof(p));
		p.n_replicas = p.n_isr = 1;
		p.replicas = p.isr = &one;
		p.leader = 1;
		p.dirs = &dirs[i];
		ctl_rec_partition(&b, tid, i, &p, false);
	}
	apply(st, &b, 2);
	p = st->topics[0]->parts[1];
	p.dirs = (uint8_t (*)[16])ctl_dir_lost;
	p.partition_epoch++;
	ctl_rec_partition(&b, tid, 1, &p, false);
	ctl_rec_broker_dirs(&b, 1, (const uint8_t (*)[16])dirs, 1);
	apply(st, &b, 3);
}

static void
check(const struct ctl_state *st, const char *what)
{
	const uint8_t (*ids)[16] = (const uint8_t (*)[16])dirs;
	struct ctl_local loc = { .node_id = 1, .n_dirs = 2, .dir_ids = ids,
	    .max_partitions = 64 };
	const struct ctl_topic *t = st->topics[0];
	int32_t slot, d0, d1;

	ok(!ctl_replica_lost(&t->parts[0], 1) &&
	    ctl_replica_lost(&t->parts[1], 1), "%s: p1's replica is lost, "
	    "p0's is not", what);
	ok(st->brokers[0].n_log_dirs == 1 &&
	    memcmp(st->brokers[0].log_dirs[0], dirs[0], 16) == 0,
	    "%s: the broker keeps only its healthy dir", what);
	ctl_state_local_placement(st, &loc, t, 0, &slot, &d0);
	ctl_state_local_placement(st, &loc, t, 1, &slot, &d1);
	ok(d0 == 0 && d1 == RN_MDV_DIR_LOST, "%s: the image places p0 in "
	    "dir 0 and p1 nowhere (%d, %d)", what, d0, d1);
}

static void
test_state(void)
{
	struct ctl_state st, back;
	msgpack_sbuffer sb;

	build(&st);
	is_int(st.topics[0]->parts[1].partition_epoch, 1,
	    "the LOST record bumped the partition epoch");
	check(&st, "applied");
	msgpack_sbuffer_init(&sb);
	ctl_state_init(&back);
	if (ctl_state_snapshot(&st, &sb) != 0 ||
	    ctl_state_restore(&back, sb.data, sb.size) != 0)
		bail("snapshot round trip failed");
	check(&back, "restored from a snapshot");
	msgpack_sbuffer_destroy(&sb);
	ctl_state_free(&st);
	ctl_state_free(&back);
}

int
main(void)
{
	plan(16);
	test_errors();
	test_flag();
	test_state();
	return done_testing();
}
