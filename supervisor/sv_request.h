/*
 * A control-socket request as data: one frame's msgpack map checked and
 * decoded into its verb and fields before anything acts on it
 * (sv_control.c answers it). It needs no supervisor state, so
 * tests/fuzz/fuzz_ctl.c runs it alone.
 */
#ifndef SV_REQUEST_H
#define SV_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

/* The verbs runnelctl sends (docs/ARCHITECTURE.md lists them). */
enum sv_verb {
	SV_VERB_STATUS,
	SV_VERB_BROKERS,
	SV_VERB_METRICS,
	SV_VERB_FAULT,
	SV_VERB_RESTART,
	SV_VERB_STOP,
	SV_VERB_UPGRADE,
	SV_VERB_RELOAD,
	SV_VERB_COUNT
};

#define SV_REQUEST_PATH_MAX 4096	/* as struct sv's exe */

/* Fields a verb does not take are left empty. */
struct sv_request {
	enum sv_verb verb;
	/* restart: a worker, or a role (all: every worker), rolling or not */
	bool has_worker;
	char worker[64];
	bool has_role;
	char role[32];
	bool rolling;
	/* fault: its name and "on" or "off" ("" when absent or too long) */
	char fault[32];
	char state[8];
	/* upgrade: the binary, "" for the running one; bad_binary when the
	 * field is there but not a string that fits */
	char binary[SV_REQUEST_PATH_MAX];
	bool bad_binary;
};

/*
 * Decode the request in buf: 0, or with *err the text of the error reply
 * -EBADMSG (not a msgpack map), -EPROTO (another protocol version) or
 * -EINVAL (no verb), after which the connection closes, or -ENOENT (a
 * verb this runneld does not know), after which it stays open.
 */
int sv_request_decode(const void *buf, size_t len, struct sv_request *req,
    const char **err);

const char *sv_verb_name(enum sv_verb v);

#endif /* SV_REQUEST_H */
