/*
 * The login between nodes (workers/secure_client.c) without a socket:
 * client and server sessions pumped into each other (SASL_PLAINTEXT), a
 * SCRAM-SHA-512 server played by the test with common/scram.c, and
 * hostile bytes on either side.
 */
#include "autoconf.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/arena.h"
#include "common/sasl_config.h"
#include "common/scram.h"
#include "protocol/kerrors.h"
#include "protocol/kframe.h"
#include "protocol/kmsg_gen.h"
#include "tests/lib/tap.h"
#include "workers/secure_client.h"

#define JAAS "org.apache.kafka.common.security.plain.PlainLoginModule " \
	"required username=\"broker\" password=\"pw-good\" " \
	"user_broker=\"pw-good\" user_alice=\"pw-alice\";"

static uint8_t buf[1 << 20];

/* Bytes from one session into the other; how many moved. */
static size_t
move(struct rn_secc *from, struct rn_secc *to)
{
	size_t n, total = 0;

	while ((n = rn_secc_take(from, buf, sizeof(buf))) > 0) {
		rn_secc_feed(to, buf, n);
		total += n;
	}
	return total;
}

/* Both handshakes driven until neither moves; their results. */
static void
pump(struct rn_secc *c, struct rn_secc *s, int *rc, int *rs)
{
	int i;

	for (i = 0; i < 20; i++) {
		*rc = rn_secc_handshake(c);
		move(c, s);
		*rs = rn_secc_handshake(s);
		if (move(s, c) == 0 && *rc != 0 && *rs != 0)
			break;
	}
	*rc = rn_secc_handshake(c);
}

static struct rn_secc_cfg
client_cfg(unsigned mech, const char *user, const char *pw)
{
	struct rn_secc_cfg c;

	memset(&c, 0, sizeof(c));
	strcpy(c.listener, "BROKER");
	c.mech = mech;
	c.user = strdup(user);
	c.password = strdup(pw);
	return c;
}

/* One whole frame the client sent, as the test's server reads it. */
static int
client_request(struct rn_secc *c, struct rn_krequest_header *h,
    struct rn_kreader *r, uint8_t *frame, size_t cap)
{
	size_t n = rn_secc_take(c, frame, cap);

	if (n < 4)
		return -1;
	rn_kreader_init(r, frame + 4, n - 4);
	return rn_krequest_header_decode(r, h);
}

static void
server_answer(struct rn_secc *c, const struct rn_krequest_header *h,
    const void *body)
{
	struct rn_kwriter w;
	size_t mark;

	rn_kwriter_init(&w);
	rn_kresponse_begin(&w, h->api_key, h->api_version, h->correlation_id,
	    &mark);
	if (h->api_key == RN_KAPI_SASL_HANDSHAKE)
		rn_SaslHandshakeResponse_encode(&w, h->api_version, body);
	else
		rn_SaslAuthenticateResponse_encode(&w, h->api_version, body);
	rn_kw_frame_end(&w, mark);
	rn_secc_feed(c, w.buf, w.len);
	rn_kwriter_free(&w);
}

/*
 * A SCRAM-SHA-512 server for user broker/pw-good, sending iterations
 * iters (and, when forge, a signature that is not ServerKey's); 1 when
 * the client finished and accepted our signature.
 */
static int
scram_server(struct rn_secc *c, int iters, bool forge, char *why,
    size_t whylen)
{
	static uint8_t frame[8192];
	static const uint8_t salt[16] = "0123456789abcdef";
	struct rn_krequest_header h;
	struct rn_kreader r;
	struct rn_arena a;
	struct rn_SaslHandshakeRequest hreq;
	struct rn_SaslHandshakeResponse hresp;
	struct rn_SaslAuthenticateRequest areq;
	struct rn_SaslAuthenticateResponse aresp;
	struct rn_kstr m = rn_kstr_c("SCRAM-SHA-512");
	uint8_t salted[64], ckey[64], skey[64], stored[64], sig[64], ssig[64];
	char first[512], sfirst[640], final[512], auth[1700], salt64[32],
	    v[128];
	const char *p, *nonce;
	int n, i, rc;

	rn_arena_init(&a, 1 << 16);
	rn_secc_handshake(c);
	if (client_request(c, &h, &r, frame, sizeof(frame)) != 0 ||
	    h.api_key != RN_KAPI_SASL_HANDSHAKE ||
	    rn_SaslHandshakeRequest_decode(&r, h.api_version, &a, &hreq) < 0 ||
	    !rn_kstr_eq(hreq.mechanism, "SCRAM-SHA-512"))
		return snprintf(why, whylen, "no SaslHandshake SCRAM-SHA-512"),
		    0;
	memset(&hresp, 0, sizeof(hresp));
	hresp.mechanisms = &m;
	hresp.mechanisms_count = 1;
	server_answer(c, &h, &hresp);
	rn_secc_handshake(c);
	if (client_request(c, &h, &r, frame, sizeof(frame)) != 0 ||
	    rn_SaslAuthenticateRequest_decode(&r, h.api_version, &a, &areq) <
	    0 || areq.auth_bytes.len >= (int)sizeof(first))
		return snprintf(why, whylen, "no client-first"), 0;
	memcpy(first, areq.auth_bytes.ptr, (size_t)areq.auth_bytes.len);
	first[areq.auth_bytes.len] = '\0';
	if (strncmp(first, "n,,n=broker,r=", 14) != 0)
		return snprintf(why, whylen, "client-first %.100s", first), 0;
	nonce = first + 14;
	EVP_EncodeBlock((unsigned char *)salt64, salt, sizeof(salt));
	snprintf(sfirst, sizeof(sfirst), "r=%sSRVNONCE,s=%s,i=%d", nonce,
	    salt64, iters);
	memset(&aresp, 0, sizeof(aresp));
	aresp.auth_bytes.ptr = (const uint8_t *)sfirst;
	aresp.auth_bytes.len = (int32_t)strlen(sfirst);
	server_answer(c, &h, &aresp);
	rc = rn_secc_handshake(c);
	if (rc < 0)
		return snprintf(why, whylen, "%s", rn_secc_error(c)), 0;
	if (client_request(c, &h, &r, frame, sizeof(frame)) != 0 ||
	    rn_SaslAuthenticateRequest_decode(&r, h.api_version, &a, &areq) <
	    0 || areq.auth_bytes.len >= (int)sizeof(final))
		return snprintf(why, whylen, "no client-final"), 0;
	memcpy(final, areq.auth_bytes.ptr, (size_t)areq.auth_bytes.len);
	final[areq.auth_bytes.len] = '\0';
	/* the proof: ClientKey = proof XOR HMAC(StoredKey, AuthMessage) */
	if ((p = strstr(final, ",p=")) == NULL)
		return snprintf(why, whylen, "no proof in %.100s", final), 0;
	snprintf(auth, sizeof(auth), "%s,%s,%.*s", first + 3, sfirst,
	    (int)(p - final), final);
	rn_scram_salted_password(RN_SCRAM_SHA512, "pw-good", 7, salt,
	    sizeof(salt), iters, salted);
	rn_scram_hmac(RN_SCRAM_SHA512, salted, 64, "Client Key", 10, ckey);
	rn_scram_hmac(RN_SCRAM_SHA512, salted, 64, "Server Key", 10, skey);
	rn_scram_hash(RN_SCRAM_SHA512, ckey, 64, stored);
	rn_scram_hmac(RN_SCRAM_SHA512, stored, 64, auth, strlen(auth), sig);
	n = EVP_DecodeBlock(frame, (const unsigned char *)p + 3,
	    (int)strlen(p + 3));
	for (i = 0; i < 64 && n >= 64; i++)
		if ((frame[i] ^ sig[i]) != ckey[i])
			break;
	if (n < 64 || i < 64)
		return snprintf(why, whylen, "wrong proof"), 0;
	rn_scram_hmac(RN_SCRAM_SHA512, skey, 64, auth, strlen(auth), ssig);
	if (forge)
		ssig[0] ^= 1;
	strcpy(v, "v=");
	EVP_EncodeBlock((unsigned char *)v + 2, ssig, 64);
	aresp.auth_bytes.ptr = (const uint8_t *)v;
	aresp.auth_bytes.len = (int32_t)strlen(v);
	server_answer(c, &h, &aresp);
	rn_arena_free(&a);
	rc = rn_secc_handshake(c);
	if (rc != 1)
		snprintf(why, whylen, "%s", rn_secc_error(c));
	return rc == 1;
}

int
main(void)
{
	struct rn_sasl_cfg users;
	struct rn_secc_cfg good, bad, scram;
	struct rn_secc *c, *s;
	char err[256], why[256];
	uint8_t got[64];
	int rc, rs;

	plan(22);
	memset(&users, 0, sizeof(users));
	users.mechs = RN_SASL_PLAIN;
	if (rn_jaas_plain_users(JAAS, &users, err, sizeof(err)) != 0)
		bail("JAAS: %s", err);
	{
		char *u, *p;

		ok(rn_jaas_login(JAAS, &u, &p, err, sizeof(err)) == 0 &&
		    strcmp(u, "broker") == 0 && strcmp(p, "pw-good") == 0,
		    "the JAAS text's username and password are this node's "
		    "login");
		free(u);
		free(p);
		ok(rn_jaas_login("org.apache.kafka.common.security.plain."
		    "PlainLoginModule required user_a=\"b\";", &u, &p, err,
		    sizeof(err)) != 0 && strstr(err, "username") != NULL,
		    "a JAAS text without them is refused: %s", err);
	}

	/* PLAIN, both sides ours */
	good = client_cfg(RN_SASL_PLAIN, "broker", "pw-good");
	c = rn_secc_new(&good, "127.0.0.1");
	s = rn_secc_new_server(NULL, &users);
	pump(c, s, &rc, &rs);
	ok(rc == 1 && rs == 1, "PLAIN login: client %d, server %d (%s)", rc,
	    rs, rn_secc_error(c));
	is_str(rn_secc_principal(s), "User:broker", "the server's principal");
	ok(rn_secc_write(c, "ping", 4) == 0 && move(c, s) > 0 &&
	    rn_secc_read(s, got, sizeof(got)) == 4 &&
	    memcmp(got, "ping", 4) == 0, "bytes after the login reach the "
	    "server");
	ok(rn_secc_write(s, "pong", 4) == 0 && move(s, c) > 0 &&
	    rn_secc_read(c, got, sizeof(got)) == 4 &&
	    memcmp(got, "pong", 4) == 0, "and come back");
	rn_secc_free(c);
	rn_secc_free(s);

	/* a wrong password */
	bad = client_cfg(RN_SASL_PLAIN, "broker", "pw-WRONG");
	c = rn_secc_new(&bad, "127.0.0.1");
	s = rn_secc_new_server(NULL, &users);
	pump(c, s, &rc, &rs);
	ok(rc == -1 && rs == -1, "a wrong password fails both sides");
	ok(rn_secc_auth_failed(c) && strstr(rn_secc_error(c),
	    "SASL_AUTHENTICATION_FAILED") != NULL, "the client says the "
	    "login was refused: %s", rn_secc_error(c));
	ok(strstr(rn_secc_error(s), "broker") != NULL &&
	    strstr(rn_secc_error(s), "pw-") == NULL &&
	    strstr(rn_secc_error(c), "pw-") == NULL, "the reasons name the "
	    "user, not a password: %s", rn_secc_error(s));
	ok(rn_secc_write(c, "x", 1) != 0 && rn_secc_read(c, got, 1) < 0,
	    "a failed session carries nothing");
	rn_secc_free(c);
	rn_secc_free(s);

	/* hostile bytes before the login */
	{
		static const uint8_t huge[] = { 0x7f, 0xff, 0xff, 0xff, 0, 0 };
		static const uint8_t produce[] = { 0, 0, 0, 10, 0, 0, 0, 7, 0,
		    0, 0, 1, 0xff, 0xff };

		s = rn_secc_new_server(NULL, &users);
		rn_secc_feed(s, huge, sizeof(huge));
		ok(rn_secc_handshake(s) == -1 && strstr(rn_secc_error(s),
		    "size") != NULL, "a 2 GiB size prefix is refused at once: "
		    "%s", rn_secc_error(s));
		rn_secc_free(s);
		s = rn_secc_new_server(NULL, &users);
		rc = 0;
		for (size_t i = 0; i < 300 && rc == 0; i++)
			rc = rn_secc_feed(s, buf, 1024);
		ok(rc == -1 && strstr(rn_secc_error(s), "before the login") !=
		    NULL, "a flood before the login is cut at 256 KiB: %s",
		    rn_secc_error(s));
		rn_secc_free(s);
		s = rn_secc_new_server(NULL, &users);
		rn_secc_feed(s, produce, sizeof(produce));
		ok(rn_secc_handshake(s) == -1 && strstr(rn_secc_error(s),
		    "API 0") != NULL, "Produce before the login ends it: %s",
		    rn_secc_error(s));
		rn_secc_free(s);
	}

	/* ApiVersions first, as librdkafka asks */
	{
		static const uint8_t av[] = { 0, 0, 0, 12, 0, 18, 0, 0, 0, 0, 0,
		    5, 0, 2, 'a', 'b' };
		struct rn_kreader r;
		struct rn_ApiVersionsResponse resp;
		struct rn_arena a;
		size_t n;
		int i, sasl = 0;

		s = rn_secc_new_server(NULL, &users);
		rn_secc_feed(s, av, sizeof(av));
		rc = rn_secc_handshake(s);
		n = rn_secc_take(s, buf, sizeof(buf));
		rn_arena_init(&a, 1 << 16);
		ok(rc == 0 && n > 8 && rn_kframe_response(&r, buf + 4, n - 4,
		    -1, RN_KAPI_API_VERSIONS, 0, 5) == 0 &&
		    rn_ApiVersionsResponse_decode(&r, 0, &a, &resp) >= 0 &&
		    resp.error_code == 0, "ApiVersions before the login is "
		    "answered");
		for (i = 0; rc == 0 && i < resp.api_keys_count; i++)
			if ((resp.api_keys[i].api_key == 17 &&
			    resp.api_keys[i].min_version == 0) ||
			    resp.api_keys[i].api_key == 36)
				sasl++;
		is_int(sasl, 2, "listing SaslHandshake from v0 and "
		    "SaslAuthenticate");
		rn_arena_free(&a);
		c = rn_secc_new(&good, "127.0.0.1");
		pump(c, s, &rc, &rs);
		ok(rc == 1 && rs == 1, "the login after it works");
		rn_secc_free(c);
		rn_secc_free(s);
	}

	/* SCRAM-SHA-512 against a server played here */
	scram = client_cfg(RN_SASL_SCRAM_SHA512, "broker", "pw-good");
	c = rn_secc_new(&scram, "127.0.0.1");
	ok(scram_server(c, 4096, false, why, sizeof(why)), "SCRAM-SHA-512 "
	    "login, the server's signature checked: %s", why);
	rn_secc_free(c);
	c = rn_secc_new(&scram, "127.0.0.1");
	ok(!scram_server(c, 4096, true, why, sizeof(why)) &&
	    strstr(why, "signature") != NULL, "a server that cannot prove it "
	    "holds the keys is refused: %s", why);
	rn_secc_free(c);
	c = rn_secc_new(&scram, "127.0.0.1");
	why[0] = '\0';
	ok(!scram_server(c, 1000000, false, why, sizeof(why)) &&
	    strstr(why, "iterations") != NULL, "a server asking for a "
	    "million iterations is refused, not obeyed: %s", why);
	rn_secc_free(c);

	/* a server that does not know the mechanism */
	{
		struct rn_secc_cfg s256 = client_cfg(RN_SASL_SCRAM_SHA256,
		    "broker", "pw-good");

		c = rn_secc_new(&s256, "127.0.0.1");
		s = rn_secc_new_server(NULL, &users);
		pump(c, s, &rc, &rs);
		ok(rc == -1 && strstr(rn_secc_error(c),
		    "UNSUPPORTED_SASL_MECHANISM") != NULL, "a mechanism the "
		    "peer lacks fails, named: %s", rn_secc_error(c));
		ok(!rn_secc_auth_failed(c), "as a setup error, not a refused "
		    "login");
		rn_secc_free(c);
		rn_secc_free(s);
		rn_secc_cfg_free(&s256);
	}
	/* a SaslHandshake v0 client (kafka-python) with a bare token */
	{
		static const uint8_t hs0[] = { 0, 0, 0, 17, 0, 17, 0, 0, 0, 0,
		    0, 9, 0xff, 0xff, 0, 5, 'P', 'L', 'A', 'I', 'N' };
		static const uint8_t tok[] = { 0, 0, 0, 15, 0, 'b', 'r', 'o',
		    'k', 'e', 'r', 0, 'p', 'w', '-', 'g', 'o', 'o', 'd' };

		s = rn_secc_new_server(NULL, &users);
		rn_secc_feed(s, hs0, sizeof(hs0));
		rn_secc_feed(s, tok, sizeof(tok));
		rc = rn_secc_handshake(s);
		(void)rn_secc_take(s, buf, sizeof(buf));
		ok(rc == 1 && strcmp(rn_secc_principal(s), "User:broker") == 0,
		    "SaslHandshake v0 and a bare PLAIN token log in (%s)",
		    rn_secc_error(s));
		rn_secc_free(s);
	}
	rn_secc_cfg_free(&good);
	rn_secc_cfg_free(&bad);
	rn_secc_cfg_free(&scram);
	rn_sasl_cfg_free(&users);
	return done_testing();
}
