/*
 * Log dir failure on the broker: which errors take a dir offline, and
 * the offline bits in the segment header (set once, logged once, other
 * dirs untouched). The controller's side is in test_ctl_state.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include "ipc/shm.h"
#include "storage/errors.h"
#include "tests/lib/tap.h"
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
	struct rn_shm_params sp = { 4, 1u << 12, 64, 0 };
	struct rn_shm shm;
	int rc;

	if ((rc = rn_shm_create(&sp, &shm)) != 0)
		bail("rn_shm_create: %s", strerror(-rc));
	is_int(rn_dirfail_mask(&shm), 0, "a new segment has no offline dir");
	is_int(rn_dirfail_check(&shm, 1, "/d1", -ERANGE, "reading"), -ERANGE,
	    "a non-I/O error is handed back");
	is_int(rn_dirfail_mask(&shm), 0, "and takes nothing offline");
	is_int(rn_dirfail_check(&shm, 1, "/d1", EDQUOT, "deleting segments"),
	    EDQUOT, "a count that equals an errno (122 segments deleted) is "
	    "handed back");
	is_int(rn_dirfail_check(&shm, 1, "/d1", EIO, "reading"), EIO,
	    "(5 bytes read)");
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

int
main(void)
{
	plan(12);
	test_errors();
	test_flag();
	return done_testing();
}
