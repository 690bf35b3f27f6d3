/*
 * libFuzzer target for a control-socket request as runneld decodes it:
 * supervisor/sv_request.c, which sv_control.c calls once a frame is in.
 * The input is one frame's body; the supervisor closes on a frame over
 * RN_CTL_MAX_REQUEST before decoding, and libFuzzer's -max_len in
 * run-fuzz.sh is that size. Any local user can send one. Seeds
 * (tests/fuzz/corpus-ctl/) are the requests the real runnelctl sends.
 *
 * Invariants that abort() (bugs, not bad input):
 *   - a refused request says why; an accepted one names a verb runneld
 *     has, its fields NUL-terminated;
 *   - what rn_mp_bounded passes, msgpack-c unpacks to the same end (they
 *     agree on where a message ends), unless it nests deeper than
 *     msgpack-c's stack;
 *   - an accepted request packed again as runnelctl packs it decodes to
 *     the same request.
 * Sanitizers report the rest (overreads, UB, leaks, and allocations over
 * libFuzzer's -malloc_limit_mb, such as msgpack-c reserving room for
 * elements a message only announces).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/mpbound.h"
#include "supervisor/sv_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
bug(const char *what, int rc)
{
	fprintf(stderr, "fuzz_ctl: %s (%d)\n", what, rc);
	abort();
}

static void
check_terminated(const char *s, size_t size)
{
	if (memchr(s, '\0', size) == NULL)
		bug("a decoded field is not NUL-terminated", (int)size);
}

/* The walk and msgpack-c agree on the first object's end. */
static void
check_bound(const uint8_t *data, size_t size)
{
	size_t n = rn_mp_bounded(data, size), off = 0;
	msgpack_unpacked up;
	msgpack_unpack_return rc;

	if (n == 0)
		return;
	msgpack_unpacked_init(&up);
	rc = msgpack_unpack_next(&up, (const char *)data, n, &off);
	/* deeper than MSGPACK_EMBED_STACK_SIZE: refused, not misread */
	if (rc != MSGPACK_UNPACK_NOMEM_ERROR &&
	    (rc != MSGPACK_UNPACK_SUCCESS || off != n))
		bug("msgpack-c and rn_mp_bounded disagree on a message's end",
		    (int)rc);
	msgpack_unpacked_destroy(&up);
}

/* req as runnelctl would send it (tools/runnelctl.c pack_request). */
static void
pack(const struct sv_request *req, msgpack_sbuffer *sb)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2 + (req->has_role || req->rolling) +
	    req->has_role + req->has_worker + (req->fault[0] != '\0') +
	    (req->state[0] != '\0') + (req->binary[0] != '\0'));
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_CTL_VERSION);
	rn_mp_pack_str(&pk, "verb");
	rn_mp_pack_str(&pk, sv_verb_name(req->verb));
	if (req->has_role) {
		rn_mp_pack_str(&pk, "role");
		rn_mp_pack_str(&pk, req->role);
	}
	if (req->has_role || req->rolling) {
		rn_mp_pack_str(&pk, "rolling");
		if (req->rolling)
			msgpack_pack_true(&pk);
		else
			msgpack_pack_false(&pk);
	}
	if (req->has_worker) {
		rn_mp_pack_str(&pk, "worker");
		rn_mp_pack_str(&pk, req->worker);
	}
	if (req->fault[0] != '\0') {
		rn_mp_pack_str(&pk, "fault");
		rn_mp_pack_str(&pk, req->fault);
	}
	if (req->state[0] != '\0') {
		rn_mp_pack_str(&pk, "state");
		rn_mp_pack_str(&pk, req->state);
	}
	if (req->binary[0] != '\0') {
		rn_mp_pack_str(&pk, "binary");
		rn_mp_pack_str(&pk, req->binary);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sv_request req, req2;
	msgpack_sbuffer sb;
	const char *err;
	int rc;

	if (size > RN_CTL_MAX_REQUEST)
		return 0;	/* "request too large", before decoding */
	check_bound(data, size);
	rc = sv_request_decode(data, size, &req, &err);
	if (rc != 0) {
		if (err == NULL || err[0] == '\0' || (rc != -EBADMSG &&
		    rc != -EPROTO && rc != -EINVAL && rc != -ENOENT))
			bug("a refusal without its reason", rc);
		return 0;
	}
	if ((unsigned)req.verb >= SV_VERB_COUNT)
		bug("a verb runneld does not have", (int)req.verb);
	check_terminated(req.worker, sizeof(req.worker));
	check_terminated(req.role, sizeof(req.role));
	check_terminated(req.fault, sizeof(req.fault));
	check_terminated(req.state, sizeof(req.state));
	check_terminated(req.binary, sizeof(req.binary));
	if (req.bad_binary)
		return 0;	/* refused by the verb; nothing to repack */
	msgpack_sbuffer_init(&sb);
	pack(&req, &sb);
	if ((rc = sv_request_decode(sb.data, sb.size, &req2, &err)) != 0)
		bug("a request packed like runnelctl's is refused", rc);
	if (memcmp(&req, &req2, sizeof(req)) != 0)
		bug("a repacked request decodes to another", 0);
	msgpack_sbuffer_destroy(&sb);
	return 0;
}
