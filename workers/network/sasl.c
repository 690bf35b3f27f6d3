/*
 * SASL on the SASL_PLAINTEXT and SASL_SSL listeners, as Kafka serves it:
 * SaslHandshake picks the mechanism, then the client's tokens come in
 * SaslAuthenticate requests (handshake v1) or as raw size-prefixed frames
 * (v0). PLAIN (RFC 4616) is checked here, SCRAM-SHA-256 and SCRAM-SHA-512
 * in scram.c against the credentials of the image. Until a login succeeds
 * only ApiVersions and these are taken; a failed login is answered after
 * connection.failed.authentication.delay.ms and the connection closed.
 * The password is never logged, whatever happens.
 *
 * KIP-368: with connections.max.reauth.ms set, a login's session lasts
 * that long (SaslAuthenticate v1+ says so in session_lifetime_ms). A
 * client may log in again on the live connection, SaslHandshake v1+ with
 * the same mechanism and then SaslAuthenticate, as the same principal;
 * any other request after the session's end closes the connection.
 */
#include "autoconf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sasl_config.h"
#include "common/scram.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"

#define MSG_BAD_LOGIN "Authentication failed: Invalid username or password"

bool
net_sasl_preauth_ok(const struct conn *c, int16_t api_key)
{
	if (c->reauthing)
		return api_key == RN_KAPI_SASL_AUTHENTICATE;
	if (c->authed)
		return true;
	return c->sasl != NULL && (api_key == RN_KAPI_API_VERSIONS ||
	    api_key == RN_KAPI_SASL_HANDSHAKE ||
	    api_key == RN_KAPI_SASL_AUTHENTICATE);
}

static const char *
listener_name(const struct net *n, const struct conn *c)
{
	return n->cfg->listeners[c->listener].name;
}

bool
net_sasl_session_ok(struct net *n, const struct conn *c, int16_t api_key)
{
	int64_t now;

	if (!c->authed || c->reauthing || c->session_end_ms == 0 ||
	    api_key == RN_KAPI_SASL_HANDSHAKE)
		return true;
	if ((now = rn_now_ms()) < c->session_end_ms)
		return true;
	/* as Kafka: the request is not answered, the connection closed */
	log_info("connection from %s on listener %s: the session of %s "
	    "expired %lld ms ago without re-authentication "
	    "(connections.max.reauth.ms): closing", c->peer,
	    listener_name(n, c), c->principal,
	    (long long)(now - c->session_end_ms));
	return false;
}

/* A login (or a re-authentication) done: its session's lifetime in ms. */
static int64_t
session_start(struct net *n, struct conn *c, int16_t auth_version)
{
	int64_t life = c->sasl->reauth_ms;

	if (!c->reauthing)
		c->reauth_ok = auth_version >= 1;
	else
		log_debug("connection from %s on listener %s: re-authenticated "
		    "as %s", c->peer, listener_name(n, c), c->principal);
	c->reauthing = false;
	c->session_end_ms = life > 0 ? rn_now_ms() + life : 0;
	return life;
}

/* A user name fit for a log line: printable, cut short. */
static void
log_name(const uint8_t *p, size_t len, char *out, size_t outlen)
{
	size_t i, k = 0;

	for (i = 0; i < len && k + 1 < outlen && i < 64; i++)
		out[k++] = isprint(p[i]) ? (char)p[i] : '?';
	out[k] = '\0';
}

/*
 * RFC 4616: [authzid] NUL authcid NUL passwd. 0 and the principal set,
 * or -1 with the reason for the client (never naming the password).
 */
static int
plain_login(struct net *n, struct conn *c, const uint8_t *tok, size_t len,
    const char **why)
{
	const uint8_t *z1, *z2, *user, *pw;
	size_t zlen, ulen, pwlen;
	char name[72];

	(void)n;
	if (tok == NULL || (z1 = memchr(tok, 0, len)) == NULL ||
	    (z2 = memchr(z1 + 1, 0, len - (size_t)(z1 + 1 - tok))) == NULL) {
		*why = "Invalid SASL/PLAIN request: expected 3 tokens";
		log_warnx("SASL/PLAIN login from %s on listener %s: malformed "
		    "token: closing", c->peer, listener_name(n, c));
		return -1;
	}
	zlen = (size_t)(z1 - tok);
	user = z1 + 1;
	ulen = (size_t)(z2 - user);
	pw = z2 + 1;
	pwlen = len - (size_t)(pw - tok);
	log_name(user, ulen, name, sizeof(name));
	if (ulen == 0 || pwlen == 0)
		*why = ulen == 0 ? "Authentication failed: username not "
		    "specified" : "Authentication failed: password not "
		    "specified";
	else if (zlen != 0 && (zlen != ulen || memcmp(tok, user, ulen) != 0))
		*why = "Authentication failed: Client requested an "
		    "authorization id that is different from username";
	else if (!rn_sasl_plain_check(c->sasl, (const char *)user, ulen,
	    (const char *)pw, pwlen))
		*why = MSG_BAD_LOGIN;
	else if (ulen + sizeof("User:") > sizeof(c->principal))
		/* a cut name could be another user's principal */
		*why = "Authentication failed: username too long";
	else {
		snprintf(c->principal, sizeof(c->principal), "User:%.*s",
		    (int)ulen, (const char *)user);
		c->authed = true;
		c->auth_deadline_ms = 0;
		log_debug("connection from %s on listener %s: authenticated "
		    "as %s (SASL/PLAIN)", c->peer, listener_name(n, c),
		    c->principal);
		return 0;
	}
	log_warnx("SASL/PLAIN authentication failed for user '%s' from %s "
	    "on listener %s: %s", name, c->peer, listener_name(n, c), *why);
	return -1;
}

/* Hold a failed login's answer back, then answer and close. */
static void
fail_later(struct net *n, struct conn *c)
{
	if (n->auth_fail_delay_ms <= 0) {
		net_sasl_fail_now(n, c);
		return;
	}
	net_conn_park(n, c, CONN_WAIT_AUTH_FAILED, rn_now_ms() +
	    n->auth_fail_delay_ms);
}

void
net_sasl_fail_now(struct net *n, struct conn *c)
{
	c->closing = true;
	if (c->sasl_state == CONN_SASL_TOKEN) {
		struct rn_SaslAuthenticateResponse r;

		rn_SaslAuthenticateResponse_init(&r);
		r.error_code = RN_KERR_SASL_AUTHENTICATION_FAILED;
		r.error_message = rn_kstr_c(MSG_BAD_LOGIN);
		(void)net_respond(n, c, &r);
	}
	/* a v0 client is told by the close alone; one answered at once
	 * is closed by the caller, conn.c */
	if (c->wait != CONN_IDLE)
		net_conn_request_done(n, c);
}

/* The enabled mechanisms, as the handshake lists them. */
static const struct {
	const char *name;
	unsigned bit;
	int scram;               /* RN_SCRAM_*, 0 for PLAIN */
} mechs[] = {
	{ "PLAIN", RN_SASL_PLAIN, 0 },
	{ "SCRAM-SHA-256", RN_SASL_SCRAM_SHA256, RN_SCRAM_SHA256 },
	{ "SCRAM-SHA-512", RN_SASL_SCRAM_SHA512, RN_SCRAM_SHA512 },
};
#define N_MECHS (sizeof(mechs) / sizeof(mechs[0]))

int
net_sasl_handshake(struct net *n, struct conn *c)
{
	const struct rn_SaslHandshakeRequest *req = c->req;
	struct rn_SaslHandshakeResponse r;
	struct rn_kstr names[N_MECHS];
	size_t i, m = N_MECHS;

	rn_SaslHandshakeResponse_init(&r);
	r.mechanisms = names;
	for (i = 0; c->sasl != NULL && i < N_MECHS; i++) {
		if (!(c->sasl->mechs & mechs[i].bit))
			continue;
		names[r.mechanisms_count++] = rn_kstr_c(mechs[i].name);
		if (req->mechanism.len == (int32_t)strlen(mechs[i].name) &&
		    memcmp(req->mechanism.ptr, mechs[i].name,
		    (size_t)req->mechanism.len) == 0)
			m = i;
	}
	if (c->sasl != NULL && c->authed && !c->reauthing && c->scram == NULL &&
	    c->reauth_ok && c->hdr.api_version >= 1 && m < N_MECHS &&
	    (int)m == c->sasl_mech) {
		/* KIP-368: a re-authentication, bounded as a first login */
		c->reauthing = true;
		c->auth_deadline_ms = rn_now_ms() + NET_TLS_HANDSHAKE_MS;
		net_deadline_soon(n, c->auth_deadline_ms);
		if (mechs[m].scram != 0 && net_scram_start(c,
		    mechs[m].scram) != 0) {
			c->closing = true;
			return -1;
		}
		c->sasl_state = CONN_SASL_TOKEN;
	} else if (c->sasl == NULL || c->authed ||
	    c->sasl_state != CONN_SASL_HANDSHAKE || c->scram != NULL) {
		r.error_code = RN_KERR_ILLEGAL_SASL_STATE;
		log_warnx("connection from %s on listener %s: SaslHandshake "
		    "out of turn%s: closing", c->peer, listener_name(n, c),
		    c->authed ? " (a re-authentication needs SaslHandshake "
		    "and SaslAuthenticate v1+ and the first login's "
		    "mechanism)" : "");
		c->closing = true;
	} else if (m < N_MECHS) {
		c->sasl_mech = (int8_t)m;
		if (mechs[m].scram != 0 && net_scram_start(c,
		    mechs[m].scram) != 0) {
			c->closing = true;
			return -1;
		}
		c->sasl_state = c->hdr.api_version == 0 ? CONN_SASL_RAW :
		    CONN_SASL_TOKEN;
	} else {
		char name[72];

		log_name((const uint8_t *)req->mechanism.ptr,
		    req->mechanism.len > 0 ? (size_t)req->mechanism.len : 0,
		    name, sizeof(name));
		log_warnx("connection from %s on listener %s: SASL mechanism "
		    "'%s' is not enabled (%s): closing", c->peer,
		    listener_name(n, c), name, c->sasl->mech_list);
		r.error_code = RN_KERR_UNSUPPORTED_SASL_MECHANISM;
		c->closing = true;
	}
	return net_respond(n, c, &r);
}

/*
 * One token of the mechanism chosen: 1 and a token in out to answer
 * (the login may have succeeded: c->authed), 0 failed (answered later),
 * -1 malformed: close.
 */
static int
sasl_token(struct net *n, struct conn *c, const uint8_t *tok, size_t len,
    char *out, size_t *outlen)
{
	const char *why;

	*outlen = 0;
	if (c->scram == NULL)
		return plain_login(n, c, tok, len, &why) == 0 ? 1 : 0;
	switch (net_scram_step(n, c, tok, len, out, NET_SCRAM_OUT_MAX,
	    outlen)) {
	case NET_SCRAM_NEXT:
	case NET_SCRAM_DONE:
		return 1;
	case NET_SCRAM_FAILED:
		return 0;
	}
	return -1;
}

int
net_sasl_authenticate(struct net *n, struct conn *c)
{
	const struct rn_SaslAuthenticateRequest *req = c->req;
	struct rn_SaslAuthenticateResponse r;
	char out[NET_SCRAM_OUT_MAX], before[sizeof(c->principal)];
	size_t outlen;

	rn_SaslAuthenticateResponse_init(&r);
	if (c->sasl == NULL || (c->authed && !c->reauthing) ||
	    c->sasl_state != CONN_SASL_TOKEN) {
		log_warnx("connection from %s on listener %s: "
		    "SaslAuthenticate out of turn: closing", c->peer,
		    listener_name(n, c));
		r.error_code = RN_KERR_ILLEGAL_SASL_STATE;
		r.error_message = rn_kstr_c("SaslAuthenticate without a "
		    "SaslHandshake, or after a login");
		c->closing = true;
		return net_respond(n, c, &r);
	}
	if (c->reauthing)
		memcpy(before, c->principal, sizeof(before));
	if (sasl_token(n, c, req->auth_bytes.ptr, req->auth_bytes.len > 0 ?
	    (size_t)req->auth_bytes.len : 0, out, &outlen) == 1) {
		if (c->reauthing && c->scram == NULL &&
		    strcmp(before, c->principal) != 0) {
			/* as Kafka: the principal may not change */
			log_warnx("connection from %s on listener %s: "
			    "re-authentication as %s, not %s: closing",
			    c->peer, listener_name(n, c), c->principal,
			    before);
			memcpy(c->principal, before, sizeof(before));
			fail_later(n, c);
			return 0;
		}
		if (c->authed && c->scram == NULL)
			r.session_lifetime_ms = session_start(n, c,
			    c->hdr.api_version);
		r.auth_bytes.ptr = (const uint8_t *)out;
		r.auth_bytes.len = (int32_t)outlen;
		return net_respond(n, c, &r);
	}
	/* as Kafka: a token it cannot read fails the login too, answered
	 * SASL_AUTHENTICATION_FAILED and closed */
	fail_later(n, c);
	return 0;
}

bool
net_sasl_raw_token(struct net *n, struct conn *c)
{
	char out[NET_SCRAM_OUT_MAX];
	size_t outlen;
	struct net_out *o;

	switch (sasl_token(n, c, c->rbuf + c->frame_off + 4, c->frame_len,
	    out, &outlen)) {
	case 1:
		/* a v0 client cannot re-authenticate: its session ends */
		if (c->authed && c->scram == NULL)
			(void)session_start(n, c, 0);
		break;
	case 0:
		fail_later(n, c);
		return true;
	default:
		return false;
	}
	/* the answer (empty for PLAIN) in a raw frame of its own */
	if ((o = calloc(1, sizeof(*o))) == NULL ||
	    (o->chunks = malloc(sizeof(*o->chunks))) == NULL) {
		free(o);
		return false;
	}
	rn_kwriter_init(&o->w);
	rn_kw_int32(&o->w, (int32_t)outlen);
	rn_kw_raw(&o->w, out, outlen);
	if (o->w.err != 0) {
		net_out_free(n, o);
		return false;
	}
	o->chunks[0] = (struct rn_kchunk){ o->w.buf, o->w.len, -1, 0 };
	o->n_chunks = 1;
	net_conn_queue(n, c, o);
	return true;
}
