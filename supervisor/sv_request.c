/* Decoding a control-socket request (sv_request.h). */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/mpbound.h"
#include "supervisor/sv_request.h"

static const char *const verb_names[SV_VERB_COUNT] = {
	[SV_VERB_STATUS] = "status",
	[SV_VERB_BROKERS] = "brokers",
	[SV_VERB_METRICS] = "metrics",
	[SV_VERB_FAULT] = "fault",
	[SV_VERB_RESTART] = "restart",
	[SV_VERB_STOP] = "stop",
	[SV_VERB_UPGRADE] = "upgrade",
	[SV_VERB_RELOAD] = "reload",
};

const char *
sv_verb_name(enum sv_verb v)
{
	return (unsigned)v < SV_VERB_COUNT ? verb_names[v] : "?";
}

/* Every field any verb takes; the verb looks at its own. */
static void
decode_fields(const msgpack_object *map, struct sv_request *req)
{
	const msgpack_object *o;

	req->has_role = rn_mp_get_str(map, "role", req->role,
	    sizeof(req->role)) == 0;
	o = rn_mp_get(map, "rolling");
	req->rolling = o != NULL && o->type == MSGPACK_OBJECT_BOOLEAN &&
	    o->via.boolean;
	req->has_worker = rn_mp_get_str(map, "worker", req->worker,
	    sizeof(req->worker)) == 0;
	/* a string that does not fit leaves the field empty */
	(void)rn_mp_get_str(map, "fault", req->fault, sizeof(req->fault));
	(void)rn_mp_get_str(map, "state", req->state, sizeof(req->state));
	req->bad_binary = rn_mp_get(map, "binary") != NULL &&
	    rn_mp_get_str(map, "binary", req->binary,
	    sizeof(req->binary)) != 0;
}

int
sv_request_decode(const void *buf, size_t len, struct sv_request *req,
    const char **err)
{
	msgpack_unpacked up;
	char verb[32];
	int rc = 0;
	unsigned v;

	memset(req, 0, sizeof(*req));
	*err = NULL;
	msgpack_unpacked_init(&up);
	/* bounded: any local user may send one */
	if (rn_mp_unpack(&up, buf, len) != MSGPACK_UNPACK_SUCCESS ||
	    up.data.type != MSGPACK_OBJECT_MAP) {
		*err = "malformed request: expected a msgpack map";
		rc = -EBADMSG;
	} else if (rn_mp_get_int(&up.data, "v", -1) != RN_CTL_VERSION) {
		*err = "unsupported control protocol version";
		rc = -EPROTO;
	} else if (rn_mp_get_str(&up.data, "verb", verb, sizeof(verb)) != 0) {
		*err = "malformed request: no verb";
		rc = -EINVAL;
	} else {
		for (v = 0; v < SV_VERB_COUNT; v++)
			if (strcmp(verb, verb_names[v]) == 0)
				break;
		if (v == SV_VERB_COUNT) {
			*err = "unknown verb";
			rc = -ENOENT;
		} else {
			req->verb = (enum sv_verb)v;
			decode_fields(&up.data, req);
		}
	}
	msgpack_unpacked_destroy(&up);
	return rc;
}
