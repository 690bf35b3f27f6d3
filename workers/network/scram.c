/*
 * The server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC
 * 7677) over SaslAuthenticate tokens or v0 raw frames: client-first,
 * server-first (the combined nonce, the salt, the iterations), then
 * client-final, whose proof is checked against the StoredKey of the
 * user's credential in the image, and server-final with the server
 * signature. Every message is bounded (SCRAM_MSG_MAX) and the exchange
 * keeps one fixed-size struct per connection, freed when it ends. No
 * password, proof or key is ever logged.
 */
#include "autoconf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "common/log.h"
#include "common/scram.h"
#include "workers/network/net_int.h"

/* Longest client message taken; real ones are under 300 bytes. */
#define SCRAM_MSG_MAX 1024
#define SNONCE_BYTES 18          /* 24 base64 characters */

struct net_scram {
	int mech;
	bool first_done;         /* client-final expected */
	char user[RN_SCRAM_NAME_MAX + 1];
	char gs2[SCRAM_MSG_MAX];   /* the gs2 header, "n,," */
	size_t gs2_len;
	char nonce[SCRAM_MSG_MAX + 32]; /* client nonce + ours */
	/* client-first-bare "," server-first: the start of AuthMessage */
	char auth[2 * SCRAM_MSG_MAX + 512];
	size_t auth_len;
	uint8_t stored_key[RN_SCRAM_KEY_MAX];
	uint8_t server_key[RN_SCRAM_KEY_MAX];
};

int
net_scram_start(struct conn *c, int mech)
{
	if ((c->scram = calloc(1, sizeof(*c->scram))) == NULL)
		return -1;
	c->scram->mech = mech;
	return 0;
}

void
net_scram_free(struct conn *c)
{
	if (c->scram == NULL)
		return;
	OPENSSL_cleanse(c->scram, sizeof(*c->scram));
	free(c->scram);
	c->scram = NULL;
}

static const char *
listener_name(const struct net *n, const struct conn *c)
{
	return n->cfg->listeners[c->listener].name;
}

/* A user name fit for a log line: printable, cut short. */
static void
log_user(const char *s, char *out, size_t outlen)
{
	size_t k = 0;

	for (; *s != '\0' && k + 1 < outlen && k < 64; s++)
		out[k++] = isprint((unsigned char)*s) ? *s : '?';
	out[k] = '\0';
}

static int
b64_decode(const char *in, size_t len, uint8_t *out, size_t outmax)
{
	int n;
	size_t pad = 0;

	if (len == 0 || len % 4 != 0 || len / 4 * 3 > outmax)
		return -1;
	if ((n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len)) < 0)
		return -1;
	if (in[len - 1] == '=')
		pad++;
	if (in[len - 2] == '=')
		pad++;
	return n - (int)pad;
}

/* SCRAM's saslname: "=2C" is ',', "=3D" is '=', any other '=' bad. */
static bool
unescape_name(const char *in, size_t len, char *out, size_t outmax)
{
	size_t i, k = 0;

	for (i = 0; i < len; i++) {
		char ch = in[i];

		if (ch == '=') {
			if (len - i >= 3 && memcmp(in + i, "=2C", 3) == 0)
				ch = ',';
			else if (len - i >= 3 && memcmp(in + i, "=3D", 3) == 0)
				ch = '=';
			else
				return false;
			i += 2;
		}
		if (ch == '\0' || k + 1 >= outmax)
			return false;
		out[k++] = ch;
	}
	out[k] = '\0';
	return k > 0;
}

/* The next attribute "x=value" of msg at *pos, up to ',' or the end. */
static bool
attr(const char *msg, size_t len, size_t *pos, char *name,
    const char **val, size_t *vlen)
{
	const char *end, *p = msg + *pos;

	if (*pos + 2 > len || p[1] != '=')
		return false;
	*name = p[0];
	*val = p + 2;
	end = memchr(*val, ',', len - *pos - 2);
	*vlen = end != NULL ? (size_t)(end - *val) : len - *pos - 2;
	*pos += 2 + *vlen + (end != NULL ? 1 : 0);
	return true;
}

static bool
printable_nonce(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] < 0x21 || s[i] > 0x7e || s[i] == ',')
			return false;
	return len > 0;
}

/*
 * client-first: gs2-header ("n,," or "y,," with an optional a=authzid)
 * then client-first-bare "n=user,r=nonce[,ext...]". Answers with the
 * server-first, or fails: unknown user.
 */
static int
client_first(struct net *n, struct conn *c, const char *msg, size_t len,
    char *out, size_t outmax, size_t *outlen, const char **why)
{
	struct net_scram *s = c->scram;
	const struct rn_scram_cred *cred;
	const char *v, *bare, *cnonce = NULL, *authz = NULL;
	char name, salt64[RN_SCRAM_SALT_MAX * 4 / 3 + 8];
	char authzid[RN_SCRAM_NAME_MAX + 1];
	uint8_t rnd[SNONCE_BYTES];
	char snonce[SNONCE_BYTES * 4 / 3 + 4];
	size_t pos = 0, vlen, cnlen = 0, alen = 0;
	int w;

	/* gs2-cbind-flag: no channel binding ("p=" asks for one) */
	if (len < 3 || (msg[0] != 'n' && msg[0] != 'y') || msg[1] != ',') {
		*why = "a gs2 header without channel binding expected";
		return NET_SCRAM_MALFORMED;
	}
	pos = 2;
	if (msg[pos] == 'a') {
		if (!attr(msg, len, &pos, &name, &authz, &alen)) {
			*why = "bad authzid";
			return NET_SCRAM_MALFORMED;
		}
	} else if (msg[pos++] != ',') {
		*why = "bad gs2 header";
		return NET_SCRAM_MALFORMED;
	}
	s->gs2_len = pos;
	memcpy(s->gs2, msg, pos);
	bare = msg + pos;
	if (!attr(msg, len, &pos, &name, &v, &vlen) || name != 'n' ||
	    !unescape_name(v, vlen, s->user, sizeof(s->user))) {
		/* "m=" (a mandatory extension) lands here too */
		*why = "bad user name";
		return NET_SCRAM_MALFORMED;
	}
	if (!attr(msg, len, &pos, &name, &cnonce, &cnlen) || name != 'r' ||
	    !printable_nonce(cnonce, cnlen)) {
		*why = "bad client nonce";
		return NET_SCRAM_MALFORMED;
	}
	/* extensions: Kafka's tokenauth (delegation tokens) is not served */
	while (pos < len) {
		const char *e = msg + pos;
		const char *comma = memchr(e, ',', len - pos);
		size_t elen = comma != NULL ? (size_t)(comma - e) : len - pos;

		if (elen >= 10 && memcmp(e, "tokenauth=", 10) == 0 &&
		    !(elen == 15 && memcmp(e + 10, "false", 5) == 0)) {
			*why = "delegation tokens are not served";
			return NET_SCRAM_FAILED;
		}
		pos += elen + (comma != NULL ? 1 : 0);
	}
	if (authz != NULL && (!unescape_name(authz, alen, authzid,
	    sizeof(authzid)) || strcmp(authzid, s->user) != 0)) {
		*why = "an authorization id different from the user name";
		return NET_SCRAM_FAILED;
	}
	cred = rn_scram_find(n->view.scram, n->view.n_scram, s->user,
	    strlen(s->user), s->mech);
	if (cred == NULL) {
		*why = "no such user (or no credential for this mechanism)";
		return NET_SCRAM_FAILED;
	}
	memcpy(s->stored_key, cred->stored_key, sizeof(s->stored_key));
	memcpy(s->server_key, cred->server_key, sizeof(s->server_key));
	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		*why = "no random bytes for the nonce";
		return NET_SCRAM_FAILED;
	}
	EVP_EncodeBlock((unsigned char *)snonce, rnd, sizeof(rnd));
	EVP_EncodeBlock((unsigned char *)salt64, cred->salt,
	    (int)cred->salt_len);
	w = snprintf(s->nonce, sizeof(s->nonce), "%.*s%s", (int)cnlen, cnonce,
	    snonce);
	if (w < 0 || (size_t)w >= sizeof(s->nonce))
		return NET_SCRAM_MALFORMED;
	w = snprintf(out, outmax, "r=%s,s=%s,i=%d", s->nonce, salt64,
	    (int)cred->iterations);
	if (w < 0 || (size_t)w >= outmax)
		return NET_SCRAM_MALFORMED;
	*outlen = (size_t)w;
	w = snprintf(s->auth, sizeof(s->auth), "%.*s,%s",
	    (int)(len - (size_t)(bare - msg)), bare, out);
	if (w < 0 || (size_t)w >= sizeof(s->auth))
		return NET_SCRAM_MALFORMED;
	s->auth_len = (size_t)w;
	s->first_done = true;
	return NET_SCRAM_NEXT;
}

/*
 * client-final: "c=<base64 gs2 header>,r=<nonce>[,ext...],p=<proof>".
 * The proof is ClientKey XOR HMAC(StoredKey, AuthMessage); the login
 * holds if H(ClientKey) is the StoredKey.
 */
static int
client_final(struct conn *c, const char *msg, size_t len, char *out,
    size_t outmax, size_t *outlen, const char **why)
{
	struct net_scram *s = c->scram;
	size_t kl = rn_scram_key_len(s->mech), pos = 0, vlen, nofinal, nl;
	uint8_t cb[SCRAM_MSG_MAX], proof[RN_SCRAM_KEY_MAX + 3];
	uint8_t sig[RN_SCRAM_KEY_MAX], key[RN_SCRAM_KEY_MAX];
	uint8_t stored[RN_SCRAM_KEY_MAX];
	char auth[sizeof(s->auth) + SCRAM_MSG_MAX + 2], name;
	char v64[RN_SCRAM_KEY_MAX * 2];
	const char *v, *p;
	size_t i;
	int n, ok;

	if (!attr(msg, len, &pos, &name, &v, &vlen) || name != 'c' ||
	    (n = b64_decode(v, vlen, cb, sizeof(cb))) < 0 ||
	    (size_t)n != s->gs2_len || memcmp(cb, s->gs2, s->gs2_len) != 0) {
		*why = "bad channel binding";
		return NET_SCRAM_MALFORMED;
	}
	/*
	 * As Kafka: the nonce must end with ours, not equal it. librdkafka
	 * 2.0.2 sends its own nonce in front of the combined one, and hashes
	 * what it sent, so the proof still holds.
	 */
	nl = strlen(s->nonce);
	if (!attr(msg, len, &pos, &name, &v, &vlen) || name != 'r' ||
	    vlen < nl || memcmp(v + vlen - nl, s->nonce, nl) != 0) {
		*why = "the nonce is not the one of this exchange";
		return NET_SCRAM_MALFORMED;
	}
	/* the proof is the last attribute */
	for (p = NULL, i = pos - 1; i + 3 <= len; i++)
		if (memcmp(msg + i, ",p=", 3) == 0)
			p = msg + i;
	if (p == NULL || memchr(p + 3, ',', len - (size_t)(p + 3 - msg)) !=
	    NULL) {
		*why = "no proof";
		return NET_SCRAM_MALFORMED;
	}
	nofinal = (size_t)(p - msg);
	n = b64_decode(p + 3, len - nofinal - 3, proof, sizeof(proof));
	if (n < 0 || (size_t)n != kl) {
		*why = "a proof of the wrong size";
		return NET_SCRAM_MALFORMED;
	}
	memcpy(auth, s->auth, s->auth_len);
	auth[s->auth_len] = ',';
	memcpy(auth + s->auth_len + 1, msg, nofinal);
	if (rn_scram_hmac(s->mech, s->stored_key, kl, auth,
	    s->auth_len + 1 + nofinal, sig) != 0) {
		*why = "HMAC failed";
		return NET_SCRAM_FAILED;
	}
	for (i = 0; i < kl; i++)
		key[i] = proof[i] ^ sig[i];
	ok = rn_scram_hash(s->mech, key, kl, stored) == 0 &&
	    CRYPTO_memcmp(stored, s->stored_key, kl) == 0;
	OPENSSL_cleanse(key, sizeof(key));
	if (!ok) {
		*why = "wrong password";
		return NET_SCRAM_FAILED;
	}
	if (rn_scram_hmac(s->mech, s->server_key, kl, auth,
	    s->auth_len + 1 + nofinal, sig) != 0) {
		*why = "HMAC failed";
		return NET_SCRAM_FAILED;
	}
	EVP_EncodeBlock((unsigned char *)v64, sig, (int)kl);
	n = snprintf(out, outmax, "v=%s", v64);
	if (n < 0 || (size_t)n >= outmax)
		return NET_SCRAM_FAILED;
	*outlen = (size_t)n;
	return NET_SCRAM_DONE;
}

int
net_scram_step(struct net *n, struct conn *c, const uint8_t *tok,
    size_t len, char *out, size_t outmax, size_t *outlen)
{
	struct net_scram *s = c->scram;
	const char *mech = rn_scram_mech_name(s->mech), *why = "";
	char user[72];
	int rc;

	*outlen = 0;
	if (tok == NULL || len == 0 || len > SCRAM_MSG_MAX ||
	    memchr(tok, '\0', len) != NULL) {
		why = "an empty, oversized or NUL-holding message";
		rc = NET_SCRAM_MALFORMED;
	} else if (!s->first_done)
		rc = client_first(n, c, (const char *)tok, len, out, outmax,
		    outlen, &why);
	else
		rc = client_final(c, (const char *)tok, len, out, outmax,
		    outlen, &why);
	log_user(s->user, user, sizeof(user));
	switch (rc) {
	case NET_SCRAM_DONE:
		if (snprintf(c->principal, sizeof(c->principal), "User:%s",
		    s->user) >= (int)sizeof(c->principal)) {
			/* a cut principal could name another user's ACLs */
			log_warnx("SASL/%s authentication failed for user '%s' "
			    "from %s on listener %s: the user name is too "
			    "long for a principal", mech, user, c->peer,
			    listener_name(n, c));
			strlcpy(c->principal, "User:ANONYMOUS",
			    sizeof(c->principal));
			rc = NET_SCRAM_FAILED;
			break;
		}
		c->authed = true;
		c->auth_deadline_ms = 0;
		log_debug("connection from %s on listener %s: authenticated "
		    "as %s (SASL/%s)", c->peer, listener_name(n, c),
		    c->principal, mech);
		break;
	case NET_SCRAM_NEXT:
		break;
	case NET_SCRAM_FAILED:
		log_warnx("SASL/%s authentication failed for user '%s' from %s "
		    "on listener %s: %s", mech, user, c->peer,
		    listener_name(n, c), why);
		break;
	default:
		log_warnx("SASL/%s login from %s on listener %s: malformed "
		    "%s message (%s): closing", mech, c->peer,
		    listener_name(n, c), s->first_done ? "client-final" :
		    "client-first", why);
		break;
	}
	if (rc != NET_SCRAM_NEXT)
		net_scram_free(c);
	return rc;
}
