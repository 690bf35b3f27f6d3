/*
 * TLS over memory BIOs and a SASL login, either side, driven by whoever
 * owns the socket. Memory BIOs rather than SSL_set_fd so one code path
 * serves a blocking fd and a libuv stream alike.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "common/arena.h"
#include "common/config.h"
#include "common/sasl_config.h"
#include "common/scram.h"
#include "common/ssl_config.h"
#include "common/util.h"
#include "protocol/kerrors.h"
#include "protocol/kframe.h"
#include "protocol/kmsg_gen.h"
#include "workers/secure_client.h"

#define SASL_FRAME_MAX 65536     /* a login answer is far smaller */
/* bytes a peer may have waiting before the login is done: a frame and
 * the TLS records around it; more is a flood, not a login */
#define PRELOGIN_IN_MAX (4 * SASL_FRAME_MAX)
#define SCRAM_MSG_MAX 1024
#define CLIENT_ID "runnel-broker"

enum secc_state {
	S_TLS,          /* TLS handshake under way */
	S_MECH,         /* SaslHandshake sent */
	S_FIRST,        /* first SaslAuthenticate sent */
	S_FINAL,        /* SCRAM client-final sent */
	S_SRV_MECH,     /* server: waiting for SaslHandshake */
	S_SRV_AUTH,     /* server: waiting for SaslAuthenticate */
	S_DONE,
	S_FAILED,
};

struct bytes {
	uint8_t *b;
	size_t off, len, cap;   /* data is b[off .. len) */
};

struct rn_secc {
	const struct rn_secc_cfg *c;   /* client */
	const struct rn_sasl_cfg *users; /* server: PLAIN users; NULL: none */
	bool server;
	bool raw_token;         /* server: SaslHandshake v0, a bare token next */
	char principal[256];    /* server: who logged in */
	SSL *ssl;
	BIO *rb, *wb;           /* network in, network out */
	struct bytes in, out;   /* the same without TLS */
	enum secc_state state;
	int32_t corr;
	uint8_t *frame;         /* a login answer being read */
	size_t flen;
	bool auth_failed;
	char err[256];
	/* SCRAM: what the client-final and the check of server-final need */
	char cnonce[48];
	char first_bare[SCRAM_MSG_MAX];
	uint8_t server_sig[RN_SCRAM_KEY_MAX];
};

static int
bytes_add(struct bytes *q, const void *p, size_t n)
{
	if (n == 0)
		return 0;	/* p and q->b may be NULL: no memcpy at all */
	if (q->off > 0 && q->off == q->len)
		q->off = q->len = 0;
	if (q->len + n > q->cap) {
		size_t cap = q->cap ? q->cap : 4096;
		uint8_t *nb;

		if (q->off > 0) {
			memmove(q->b, q->b + q->off, q->len - q->off);
			q->len -= q->off;
			q->off = 0;
		}
		while (cap < q->len + n)
			cap *= 2;
		if (cap != q->cap) {
			if ((nb = realloc(q->b, cap)) == NULL)
				return -1;
			q->b = nb;
			q->cap = cap;
		}
	}
	memcpy(q->b + q->len, p, n);
	q->len += n;
	return 0;
}

static size_t
bytes_take(struct bytes *q, void *p, size_t cap)
{
	size_t n = q->len - q->off;

	if (n > cap)
		n = cap;
	if (n == 0)
		return 0;	/* nothing queued yet: q->b may be NULL */
	memcpy(p, q->b + q->off, n);
	q->off += n;
	return n;
}

static int
fail(struct rn_secc *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
fail(struct rn_secc *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	s->state = S_FAILED;
	return -1;
}

/* ---- configuration --------------------------------------------------- */

static unsigned
mech_bit(const char *m)
{
	return strcmp(m, "PLAIN") == 0 ? RN_SASL_PLAIN :
	    strcmp(m, "SCRAM-SHA-256") == 0 ? RN_SASL_SCRAM_SHA256 :
	    strcmp(m, "SCRAM-SHA-512") == 0 ? RN_SASL_SCRAM_SHA512 : 0;
}

static const char *
mech_name(unsigned bit)
{
	return bit == RN_SASL_PLAIN ? "PLAIN" :
	    bit == RN_SASL_SCRAM_SHA256 ? "SCRAM-SHA-256" :
	    bit == RN_SASL_SCRAM_SHA512 ? "SCRAM-SHA-512" : "none";
}

int
rn_secc_cfg_load(const struct rn_config *cfg, const char *lname,
    const char *mech_key, struct rn_secc_cfg *out, char *err, size_t errlen)
{
	enum rn_secproto proto = rn_config_listener_proto(cfg, lname);
	const char *algo, *mech, *jaas;
	char lower[32], why[256];
	size_t i;

	memset(out, 0, sizeof(*out));
	strlcpy(out->listener, lname, sizeof(out->listener));
	if (RN_SEC_TLS(proto)) {
		if ((out->ctx = rn_ssl_client_ctx_new(cfg, lname, err,
		    errlen)) == NULL)
			return -1;
		algo = rn_listener_key(cfg, lname, NULL,
		    "ssl.endpoint.identification.algorithm");
		out->verify_host = algo == NULL ||
		    strcasecmp(algo, "https") == 0;
		if (algo != NULL && *algo != '\0' && !out->verify_host) {
			snprintf(err, errlen, "invalid value '%s' for "
			    "ssl.endpoint.identification.algorithm: https or "
			    "empty", algo);
			goto bad;
		}
	}
	if (!RN_SEC_SASL(proto))
		return 0;
	mech = rn_config_static(cfg, mech_key);
	if (mech == NULL)
		mech = "PLAIN";
	if ((out->mech = mech_bit(mech)) == 0) {
		snprintf(err, errlen, "invalid value '%s' for %s: PLAIN, "
		    "SCRAM-SHA-256 or SCRAM-SHA-512", mech, mech_key);
		goto bad;
	}
	for (i = 0; mech[i] != '\0' && i < sizeof(lower) - 1; i++)
		lower[i] = (char)tolower((unsigned char)mech[i]);
	lower[i] = '\0';
	jaas = rn_listener_key(cfg, lname, lower, "sasl.jaas.config");
	if (jaas == NULL) {
		snprintf(err, errlen, "listener %s is %s: set "
		    "listener.name.%s.%s.sasl.jaas.config with this node's "
		    "username and password", lname, rn_secproto_name(proto),
		    lname, lower);
		goto bad;
	}
	if (rn_jaas_login(jaas, &out->user, &out->password, why,
	    sizeof(why)) != 0) {
		snprintf(err, errlen, "sasl.jaas.config of listener %s: %s",
		    lname, why);
		goto bad;
	}
	return 0;
bad:
	rn_secc_cfg_free(out);
	return -1;
}

void
rn_secc_cfg_free(struct rn_secc_cfg *c)
{
	if (c->ctx != NULL)
		SSL_CTX_free(c->ctx);
	c->ctx = NULL;
	free(c->user);
	c->user = NULL;
	if (c->password != NULL) {
		OPENSSL_cleanse(c->password, strlen(c->password));
		free(c->password);
	}
	c->password = NULL;
}

void
rn_secc_cfg_describe(const struct rn_secc_cfg *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", c->ctx != NULL ? "TLS" : "",
	    c->ctx != NULL && !c->verify_host ? " (no host check)" : "",
	    c->ctx != NULL && c->mech != 0 ? ", " : "",
	    c->mech != 0 ? "SASL " : "", c->mech != 0 ? mech_name(c->mech) :
	    "");
	if (c->mech != 0) {
		strlcat(buf, " as ", len);
		strlcat(buf, c->user, len);
	}
}

/* ---- a session ------------------------------------------------------- */

struct rn_secc *
rn_secc_new(const struct rn_secc_cfg *c, const char *host)
{
	struct rn_secc *s = calloc(1, sizeof(*s));
	struct in6_addr a6;

	if (s == NULL)
		return NULL;
	s->c = c;
	s->state = S_TLS;
	if (c->ctx == NULL)
		return s;
	if ((s->ssl = SSL_new(c->ctx)) == NULL ||
	    (s->rb = BIO_new(BIO_s_mem())) == NULL ||
	    (s->wb = BIO_new(BIO_s_mem())) == NULL)
		goto bad;
	BIO_set_mem_eof_return(s->rb, -1);
	SSL_set_bio(s->ssl, s->rb, s->wb);
	SSL_set_connect_state(s->ssl);
	if (c->verify_host) {
		/* an address is checked against the IP SANs, a name against
		 * the DNS ones (and sent as SNI) */
		if (inet_pton(AF_INET, host, &a6) == 1 ||
		    inet_pton(AF_INET6, host, &a6) == 1) {
			if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s->ssl),
			    host) != 1)
				goto bad;
		} else if (SSL_set1_host(s->ssl, host) != 1 ||
		    SSL_set_tlsext_host_name(s->ssl, host) != 1)
			goto bad;
	}
	return s;
bad:
	if (s->ssl != NULL)
		SSL_free(s->ssl);   /* frees the BIOs it was given */
	else {
		BIO_free(s->rb);
		BIO_free(s->wb);
	}
	free(s);
	return NULL;
}

struct rn_secc *
rn_secc_new_server(SSL_CTX *ctx, const struct rn_sasl_cfg *users)
{
	struct rn_secc *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->server = true;
	s->users = users;
	s->state = S_TLS;
	strlcpy(s->principal, "User:ANONYMOUS", sizeof(s->principal));
	if (ctx == NULL)
		return s;
	if ((s->ssl = SSL_new(ctx)) == NULL ||
	    (s->rb = BIO_new(BIO_s_mem())) == NULL ||
	    (s->wb = BIO_new(BIO_s_mem())) == NULL) {
		if (s->ssl != NULL)
			SSL_free(s->ssl);
		BIO_free(s->rb);
		free(s);
		return NULL;
	}
	BIO_set_mem_eof_return(s->rb, -1);
	SSL_set_bio(s->ssl, s->rb, s->wb);
	SSL_set_accept_state(s->ssl);
	return s;
}

const char *
rn_secc_principal(const struct rn_secc *s)
{
	return s->principal;
}

void
rn_secc_free(struct rn_secc *s)
{
	if (s == NULL)
		return;
	if (s->ssl != NULL)
		SSL_free(s->ssl);
	free(s->in.b);
	free(s->out.b);
	free(s->frame);
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}

int
rn_secc_feed(struct rn_secc *s, const void *buf, size_t len)
{
	size_t held = s->ssl != NULL ? BIO_ctrl_pending(s->rb) :
	    s->in.len - s->in.off;

	if (s->state != S_DONE && held + len > PRELOGIN_IN_MAX) {
		fail(s, "more than %d bytes before the login",
		    PRELOGIN_IN_MAX);
		return -1;
	}
	if (len > 0 && (s->ssl != NULL ? BIO_write(s->rb, buf, (int)len) !=
	    (int)len : bytes_add(&s->in, buf, len) != 0)) {
		fail(s, "out of memory");
		return -1;
	}
	return 0;
}

size_t
rn_secc_take(struct rn_secc *s, void *buf, size_t cap)
{
	int n;

	if (s->ssl == NULL)
		return bytes_take(&s->out, buf, cap);
	if (BIO_ctrl_pending(s->wb) == 0)
		return 0;
	n = BIO_read(s->wb, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
	return n > 0 ? (size_t)n : 0;
}

bool
rn_secc_wants_send(const struct rn_secc *s)
{
	return s->ssl != NULL ? BIO_ctrl_pending(s->wb) > 0 :
	    s->out.len > s->out.off;
}

const char *
rn_secc_error(const struct rn_secc *s)
{
	return s->err;
}

bool
rn_secc_auth_failed(const struct rn_secc *s)
{
	return s->auth_failed;
}

/* Plaintext out, before or after the login. */
static int
plain_write(struct rn_secc *s, const void *buf, size_t len)
{
	if (s->ssl == NULL)
		return bytes_add(&s->out, buf, len);
	/* memory BIOs take everything: one call writes it all */
	return len == 0 || SSL_write(s->ssl, buf, (int)len) == (int)len ?
	    0 : -1;
}

/* Plaintext in: bytes, 0 when none yet, -1 at an error or the end. */
static ssize_t
plain_read(struct rn_secc *s, void *buf, size_t cap)
{
	int n, e;

	if (s->ssl == NULL)
		return (ssize_t)bytes_take(&s->in, buf, cap);
	ERR_clear_error();
	n = SSL_read(s->ssl, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
	if (n > 0)
		return n;
	e = SSL_get_error(s->ssl, n);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	return -1;
}

int
rn_secc_write(struct rn_secc *s, const void *buf, size_t len)
{
	return s->state == S_DONE ? plain_write(s, buf, len) : -1;
}

ssize_t
rn_secc_read(struct rn_secc *s, void *buf, size_t cap)
{
	return s->state == S_DONE ? plain_read(s, buf, cap) : -1;
}

ssize_t
rn_secc_recv_now(int fd, struct rn_secc *sec, void *buf, size_t len,
    int (*flush)(void *), void *arg)
{
	uint8_t raw[16384];
	ssize_t n, k;

	for (;;) {
		if (sec == NULL) {
			k = recv(fd, buf, len, MSG_DONTWAIT);
			if (k == 0)
				return -ENOTCONN;
			if (k < 0)
				return errno == EAGAIN || errno == EINTR ? 0 :
				    -errno;
			return k;
		}
		if ((n = rn_secc_read(sec, buf, len)) != 0)
			return n < 0 ? -ENOTCONN : n;
		k = recv(fd, raw, sizeof(raw), MSG_DONTWAIT);
		if (k == 0)
			return -ENOTCONN;
		if (k < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -errno;
		if (rn_secc_feed(sec, raw, (size_t)k) != 0)
			return -ENOMEM;
		if (rn_secc_wants_send(sec) && flush(arg) != 0)
			return -EPIPE;
	}
}

bool
rn_secc_readable(const struct rn_secc *s)
{
	if (s->state != S_DONE)
		return false;
	if (s->ssl == NULL)
		return s->in.len > s->in.off;
	/* decrypted bytes only: a partial record in the BIO needs more
	 * input, and counting it would make the caller spin */
	return SSL_pending(s->ssl) > 0;
}

/* ---- the login ------------------------------------------------------- */

static int
send_request(struct rn_secc *s, int16_t key, int16_t ver, const void *body)
{
	struct rn_kwriter w;
	int rc;

	rn_kwriter_init(&w);
	rc = rn_kframe_request(&w, -1, key, ver, ++s->corr, CLIENT_ID, body,
	    NULL, 0);
	if (rc == 0)
		rc = plain_write(s, w.buf, w.len);
	if (w.buf != NULL)
		OPENSSL_cleanse(w.buf, w.len);  /* PLAIN carries the password */
	rn_kwriter_free(&w);
	return rc;
}

/* A whole answer frame (after its size): 1, 0 when not yet, -1. */
static int
recv_frame(struct rn_secc *s, size_t *size)
{
	size_t need;
	ssize_t n;

	if (s->frame == NULL && (s->frame = malloc(SASL_FRAME_MAX)) == NULL)
		return fail(s, "out of memory");
	for (;;) {
		need = 4;
		if (s->flen >= 4) {
			int32_t sz = rn_kframe_size(s->frame, SASL_FRAME_MAX - 4);

			if (sz < 0)
				return fail(s, "login message of a bad size");
			need = 4 + (size_t)sz;
			if (s->flen == need) {
				*size = need - 4;
				s->flen = 0;
				return 1;
			}
		}
		n = plain_read(s, s->frame + s->flen, need - s->flen);
		if (n < 0)
			return fail(s, "connection closed during the login");
		if (n == 0)
			return 0;
		s->flen += (size_t)n;
	}
}

static int
send_handshake(struct rn_secc *s)
{
	struct rn_SaslHandshakeRequest req;

	rn_SaslHandshakeRequest_init(&req);
	req.mechanism = rn_kstr_c(mech_name(s->c->mech));
	if (send_request(s, RN_KAPI_SASL_HANDSHAKE, 1, &req) != 0)
		return fail(s, "cannot send SaslHandshake");
	s->state = S_MECH;
	return 0;
}

static int
send_auth(struct rn_secc *s, const void *bytes, size_t len)
{
	struct rn_SaslAuthenticateRequest req;

	memset(&req, 0, sizeof(req));
	req.auth_bytes.ptr = bytes;
	req.auth_bytes.len = (int32_t)len;
	if (send_request(s, RN_KAPI_SASL_AUTHENTICATE, 2, &req) != 0)
		return fail(s, "cannot send SaslAuthenticate");
	return 0;
}

static int
scram_mech(const struct rn_secc *s)
{
	return s->c->mech == RN_SASL_SCRAM_SHA512 ? RN_SCRAM_SHA512 :
	    RN_SCRAM_SHA256;
}

/* "n,,n=<user, ',' and '=' escaped>,r=<nonce>" (RFC 5802 5.1). */
static int
send_first(struct rn_secc *s)
{
	char msg[SCRAM_MSG_MAX + 8];
	uint8_t rnd[24];
	size_t n = 0;
	const char *u;

	if (s->c->mech == RN_SASL_PLAIN) {
		size_t ul = strlen(s->c->user), pl = strlen(s->c->password);
		int rc;

		if (ul + pl + 2 > sizeof(msg))
			return fail(s, "PLAIN user name and password too long");
		msg[0] = '\0';
		memcpy(msg + 1, s->c->user, ul);
		msg[1 + ul] = '\0';
		memcpy(msg + 2 + ul, s->c->password, pl);
		rc = send_auth(s, msg, ul + pl + 2);
		OPENSSL_cleanse(msg, sizeof(msg));
		s->state = S_FIRST;
		return rc;
	}
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return fail(s, "no random bytes for the nonce");
	EVP_EncodeBlock((unsigned char *)s->cnonce, rnd, sizeof(rnd));
	n = (size_t)snprintf(s->first_bare, sizeof(s->first_bare), "n=");
	for (u = s->c->user; *u != '\0' && n + 8 < sizeof(s->first_bare);
	    u++) {
		if (*u == ',' || *u == '=') {
			memcpy(s->first_bare + n, *u == ',' ? "=2C" : "=3D", 3);
			n += 3;
		} else
			s->first_bare[n++] = *u;
	}
	if (*u != '\0' || n + 3 + strlen(s->cnonce) >= sizeof(s->first_bare))
		return fail(s, "SCRAM user name too long");
	snprintf(s->first_bare + n, sizeof(s->first_bare) - n, ",r=%s",
	    s->cnonce);
	n = (size_t)snprintf(msg, sizeof(msg), "n,,%s", s->first_bare);
	s->state = S_FIRST;
	return send_auth(s, msg, n);
}

/* The value of attribute a ("r", "s", "i", "v") in a SCRAM message. */
static bool
scram_attr(const char *msg, size_t len, char a, const char **v,
    size_t *vlen)
{
	size_t i = 0;

	while (i + 1 < len) {
		size_t j = i;

		while (j < len && msg[j] != ',')
			j++;
		if (msg[i] == a && msg[i + 1] == '=') {
			*v = msg + i + 2;
			*vlen = j - i - 2;
			return true;
		}
		i = j + 1;
	}
	return false;
}

static int
b64_decode(const char *in, size_t len, uint8_t *out, size_t outmax)
{
	int n;

	if (len == 0 || len % 4 != 0 || len / 4 * 3 > outmax)
		return -1;
	if ((n = EVP_DecodeBlock(out, (const unsigned char *)in, (int)len)) < 0)
		return -1;
	if (in[len - 1] == '=')
		n--;
	if (in[len - 2] == '=')
		n--;
	return n;
}

/* server-first "r=<nonce>,s=<salt>,i=<n>" → client-final with proof. */
static int
send_final(struct rn_secc *s, const char *sf, size_t sflen)
{
	int mech = scram_mech(s);
	size_t kl = rn_scram_key_len(mech), n, vlen, i;
	uint8_t salt[RN_SCRAM_SALT_MAX], salted[RN_SCRAM_KEY_MAX],
	    ckey[RN_SCRAM_KEY_MAX], skey[RN_SCRAM_KEY_MAX],
	    stored[RN_SCRAM_KEY_MAX], csig[RN_SCRAM_KEY_MAX],
	    proof[RN_SCRAM_KEY_MAX];
	char msg[SCRAM_MSG_MAX + 256], auth[3 * SCRAM_MSG_MAX], num[16],
	    p64[2 * RN_SCRAM_KEY_MAX + 4];
	const char *nonce, *s64, *it;
	size_t nlen, slen, ilen;
	int saltn, iters, rc = -1;

	if (sflen > SCRAM_MSG_MAX ||
	    !scram_attr(sf, sflen, 'r', &nonce, &nlen) ||
	    !scram_attr(sf, sflen, 's', &s64, &slen) ||
	    !scram_attr(sf, sflen, 'i', &it, &ilen) || ilen == 0 ||
	    ilen >= sizeof(num))
		return fail(s, "malformed SCRAM server-first message");
	if (nlen <= strlen(s->cnonce) ||
	    memcmp(nonce, s->cnonce, strlen(s->cnonce)) != 0)
		return fail(s, "SCRAM server nonce does not extend ours");
	memcpy(num, it, ilen);
	num[ilen] = '\0';
	iters = atoi(num);
	/* a peer asking for more would make us burn CPU at its word */
	if (iters < RN_SCRAM_MIN_ITERATIONS || iters > RN_SCRAM_MAX_ITERATIONS)
		return fail(s, "SCRAM iterations %d out of %d-%d", iters,
		    RN_SCRAM_MIN_ITERATIONS, RN_SCRAM_MAX_ITERATIONS);
	if ((saltn = b64_decode(s64, slen, salt, sizeof(salt))) <= 0)
		return fail(s, "malformed SCRAM salt");
	n = (size_t)snprintf(msg, sizeof(msg), "c=biws,r=%.*s", (int)nlen,
	    nonce);
	vlen = (size_t)snprintf(auth, sizeof(auth), "%s,%.*s,%s",
	    s->first_bare, (int)sflen, sf, msg);
	if (n >= sizeof(msg) || vlen >= sizeof(auth))
		return fail(s, "SCRAM messages too long");
	if (rn_scram_salted_password(mech, s->c->password,
	    strlen(s->c->password), salt, (size_t)saltn, iters, salted) != 0 ||
	    rn_scram_hmac(mech, salted, kl, "Client Key", 10, ckey) != 0 ||
	    rn_scram_hmac(mech, salted, kl, "Server Key", 10, skey) != 0 ||
	    rn_scram_hash(mech, ckey, kl, stored) != 0 ||
	    rn_scram_hmac(mech, stored, kl, auth, vlen, csig) != 0 ||
	    rn_scram_hmac(mech, skey, kl, auth, vlen, s->server_sig) != 0) {
		fail(s, "SCRAM key derivation failed");
		goto out;
	}
	for (i = 0; i < kl; i++)
		proof[i] = ckey[i] ^ csig[i];
	EVP_EncodeBlock((unsigned char *)p64, proof, (int)kl);
	n += (size_t)snprintf(msg + n, sizeof(msg) - n, ",p=%s", p64);
	s->state = S_FINAL;
	rc = send_auth(s, msg, n);
out:
	OPENSSL_cleanse(salted, sizeof(salted));
	OPENSSL_cleanse(ckey, sizeof(ckey));
	OPENSSL_cleanse(skey, sizeof(skey));
	return rc;
}

/* server-final "v=<signature>": the peer knew our keys too. */
static int
check_final(struct rn_secc *s, const char *sf, size_t sflen)
{
	size_t kl = rn_scram_key_len(scram_mech(s)), vlen;
	uint8_t sig[RN_SCRAM_KEY_MAX + 3];
	const char *v;
	int n;

	if (!scram_attr(sf, sflen, 'v', &v, &vlen) ||
	    (n = b64_decode(v, vlen, sig, sizeof(sig))) != (int)kl ||
	    CRYPTO_memcmp(sig, s->server_sig, kl) != 0)
		return fail(s, "SCRAM server signature does not match: the "
		    "peer does not hold this user's keys");
	s->state = S_DONE;
	return 1;
}

static int
on_answer(struct rn_secc *s, const uint8_t *frame, size_t size)
{
	struct rn_kreader r;
	struct rn_arena arena;
	int rc = -1;

	rn_arena_init(&arena, SASL_FRAME_MAX);
	if (s->state == S_MECH) {
		struct rn_SaslHandshakeResponse hr;

		if (rn_kframe_response(&r, frame, size, -1,
		    RN_KAPI_SASL_HANDSHAKE, 1, s->corr) != 0 ||
		    rn_SaslHandshakeResponse_decode(&r, 1, &arena, &hr) < 0)
			rc = fail(s, "malformed SaslHandshake answer");
		else if (hr.error_code != RN_KERR_NONE)
			rc = fail(s, "the peer does not take SASL %s: %s",
			    mech_name(s->c->mech), rn_kerr_name(hr.error_code));
		else
			rc = send_first(s);
	} else {
		struct rn_SaslAuthenticateResponse ar;

		if (rn_kframe_response(&r, frame, size, -1,
		    RN_KAPI_SASL_AUTHENTICATE, 2, s->corr) != 0 ||
		    rn_SaslAuthenticateResponse_decode(&r, 2, &arena, &ar) < 0)
			rc = fail(s, "malformed SaslAuthenticate answer");
		else if (ar.error_code != RN_KERR_NONE) {
			s->auth_failed = true;
			rc = fail(s, "login as %s refused: %s%s%.*s",
			    s->c->user, rn_kerr_name(ar.error_code),
			    ar.error_message.len > 0 ? ": " : "",
			    ar.error_message.len > 0 ?
			    (ar.error_message.len > 120 ? 120 :
			    (int)ar.error_message.len) : 0,
			    ar.error_message.len > 0 ? ar.error_message.ptr : "");
		} else if (s->c->mech == RN_SASL_PLAIN) {
			s->state = S_DONE;
			rc = 0;
		} else if (s->state == S_FIRST)
			rc = send_final(s, (const char *)ar.auth_bytes.ptr,
			    ar.auth_bytes.len < 0 ? 0 :
			    (size_t)ar.auth_bytes.len);
		else
			rc = check_final(s, (const char *)ar.auth_bytes.ptr,
			    ar.auth_bytes.len < 0 ? 0 :
			    (size_t)ar.auth_bytes.len) < 0 ? -1 : 0;
	}
	rn_arena_free(&arena);
	return rc;
}

static int srv_answer(struct rn_secc *s, int16_t key, int16_t ver,
    int32_t corr, const void *body);

/*
 * A PLAIN message "[authzid] NUL user NUL password" against the
 * listener's users; answered in a SaslAuthenticate response (h), or,
 * after a SaslHandshake v0 (h NULL), with an empty frame on success and
 * nothing on failure, as Kafka does. True when the login is done.
 */
static bool
srv_plain(struct rn_secc *s, const uint8_t *bytes, size_t n,
    const struct rn_krequest_header *h)
{
	struct rn_SaslAuthenticateResponse resp;
	const char *b = (const char *)bytes, *user, *pw;
	size_t ulen;

	user = n > 0 ? memchr(b, '\0', n) : NULL;
	pw = user != NULL ? memchr(user + 1, '\0', n -
	    (size_t)(user + 1 - b)) : NULL;
	if (pw == NULL) {
		fail(s, "malformed PLAIN message");
		return false;
	}
	user++;
	ulen = (size_t)(pw - user);
	pw++;
	memset(&resp, 0, sizeof(resp));
	if (!rn_sasl_plain_check(s->users, user, ulen, pw,
	    n - (size_t)(pw - b))) {
		resp.error_code = RN_KERR_SASL_AUTHENTICATION_FAILED;
		resp.error_message = rn_kstr_c("Authentication failed: "
		    "Invalid username or password");
		if (h != NULL)
			srv_answer(s, h->api_key, h->api_version,
			    h->correlation_id, &resp);
		s->auth_failed = true;
		fail(s, "login as %.*s failed: wrong user name or password",
		    ulen > 64 ? 64 : (int)ulen, user);
		return false;
	}
	snprintf(s->principal, sizeof(s->principal), "User:%.*s",
	    ulen > sizeof(s->principal) - 6 ? (int)(sizeof(s->principal) - 6) :
	    (int)ulen, user);
	s->state = S_DONE;
	if (h == NULL) {
		static const uint8_t empty[4];

		return plain_write(s, empty, sizeof(empty)) == 0;
	}
	return srv_answer(s, h->api_key, h->api_version, h->correlation_id,
	    &resp) == 0;
}

/* Answer the request being read (header already decoded into h). */
static int
srv_answer(struct rn_secc *s, int16_t key, int16_t ver, int32_t corr,
    const void *body)
{
	struct rn_kwriter w;
	size_t mark;
	int rc;

	rn_kwriter_init(&w);
	rc = rn_kresponse_begin(&w, key, ver, corr, &mark);
	if (rc == 0)
		rc = key == RN_KAPI_SASL_HANDSHAKE ?
		    rn_SaslHandshakeResponse_encode(&w, ver, body) :
		    key == RN_KAPI_API_VERSIONS ?
		    rn_ApiVersionsResponse_encode(&w, ver, body) :
		    rn_SaslAuthenticateResponse_encode(&w, ver, body);
	if (rc >= 0) {
		rn_kw_frame_end(&w, mark);
		rc = w.err != 0 ? -1 : plain_write(s, w.buf, w.len);
	}
	rn_kwriter_free(&w);
	return rc < 0 ? -1 : 0;
}

/*
 * The server's side: SaslHandshake v1 naming PLAIN, then one
 * SaslAuthenticate (v0-2) with "[authzid] NUL user NUL password" checked
 * against the listener's JAAS users; ApiVersions before them. Anything
 * else ends the connection, as a Kafka broker does before a login.
 */
static int
srv_request(struct rn_secc *s, const uint8_t *frame, size_t size)
{
	struct rn_krequest_header h;
	struct rn_kreader r;
	struct rn_arena arena;
	int rc = -1, hrc;

	rn_arena_init(&arena, SASL_FRAME_MAX);
	rn_kreader_init(&r, frame, size);
	memset(&h, 0, sizeof(h));
	hrc = rn_krequest_header_decode(&r, &h);
	if (s->state == S_SRV_MECH && h.api_key == RN_KAPI_API_VERSIONS &&
	    (hrc == 0 || hrc == RN_KE_VERSION)) {
		/* clients ask first; the answer lists what a login needs */
		static const struct rn_ApiVersionsResponse_ApiVersion v[] = {
			{ RN_KAPI_API_VERSIONS, 0, 3 },
			{ RN_KAPI_SASL_HANDSHAKE, 0, 1 },
			{ RN_KAPI_SASL_AUTHENTICATE, 0, 2 },
		};
		struct rn_ApiVersionsResponse resp;
		int16_t ver = h.api_version;

		memset(&resp, 0, sizeof(resp));
		resp.finalized_features_epoch = -1;
		resp.api_keys = (struct rn_ApiVersionsResponse_ApiVersion *)v;
		resp.api_keys_count = 3;
		if (hrc != 0 || ver < 0 || ver > 3) {
			resp.error_code = RN_KERR_UNSUPPORTED_VERSION;
			ver = 0;
		}
		rc = srv_answer(s, RN_KAPI_API_VERSIONS, ver,
		    h.correlation_id, &resp);
		goto out;
	}
	if (s->state == S_SRV_AUTH && s->raw_token) {
		rc = srv_plain(s, frame, size, NULL) ? 0 : -1;
		goto out;
	}
	if (hrc != 0) {
		fail(s, "malformed request before the login");
		goto out;
	}
	if (s->state == S_SRV_MECH) {
		struct rn_SaslHandshakeRequest req;
		struct rn_SaslHandshakeResponse resp;
		struct rn_kstr plain = rn_kstr_c("PLAIN");

		if (h.api_key != RN_KAPI_SASL_HANDSHAKE || h.api_version < 0 ||
		    h.api_version > 1 || rn_SaslHandshakeRequest_decode(&r,
		    h.api_version, &arena, &req) < 0) {
			fail(s, "API %d v%d before the login (SaslHandshake "
			    "expected)", h.api_key, h.api_version);
			goto out;
		}
		s->raw_token = h.api_version == 0;
		memset(&resp, 0, sizeof(resp));
		resp.mechanisms = &plain;
		resp.mechanisms_count = 1;
		if (!rn_kstr_eq(req.mechanism, "PLAIN") || s->users == NULL ||
		    !(s->users->mechs & RN_SASL_PLAIN)) {
			resp.error_code = RN_KERR_UNSUPPORTED_SASL_MECHANISM;
			srv_answer(s, h.api_key, h.api_version, h.correlation_id,
			    &resp);
			fail(s, "SASL mechanism %.*s asked for (PLAIN only)",
			    req.mechanism.len > 32 ? 32 :
			    (req.mechanism.len < 0 ? 0 : (int)req.mechanism.len),
			    req.mechanism.ptr != NULL ? req.mechanism.ptr : "");
			goto out;
		}
		rc = srv_answer(s, h.api_key, h.api_version, h.correlation_id,
		    &resp);
		s->state = S_SRV_AUTH;
	} else {
		struct rn_SaslAuthenticateRequest req;

		if (h.api_key != RN_KAPI_SASL_AUTHENTICATE ||
		    h.api_version < 0 || h.api_version > 2 ||
		    rn_SaslAuthenticateRequest_decode(&r, h.api_version, &arena,
		    &req) < 0 || req.auth_bytes.len < 0) {
			fail(s, "API %d v%d where SaslAuthenticate was expected",
			    h.api_key, h.api_version);
			goto out;
		}
		rc = srv_plain(s, req.auth_bytes.ptr, (size_t)req.auth_bytes.len,
		    &h) ? 0 : -1;
	}
out:
	rn_arena_free(&arena);
	return rc;
}

/* The principal of the client certificate, as the network workers name
 * it ("User:<RFC 2253 subject>"); ANONYMOUS without one. */
static void
srv_cert_principal(struct rn_secc *s)
{
	X509 *x = SSL_get1_peer_certificate(s->ssl);
	BIO *b;
	char *p;
	long len;

	if (x == NULL)
		return;
	if ((b = BIO_new(BIO_s_mem())) != NULL) {
		if (X509_NAME_print_ex(b, X509_get_subject_name(x), 0,
		    XN_FLAG_RFC2253) >= 0 && (len = BIO_get_mem_data(b, &p)) >
		    0 && (size_t)len + 6 <= sizeof(s->principal))
			snprintf(s->principal, sizeof(s->principal),
			    "User:%.*s", (int)len, p);
		BIO_free(b);
	}
	X509_free(x);
}

static int
tls_step(struct rn_secc *s)
{
	unsigned long e;
	long vr;
	int rc;

	ERR_clear_error();
	if ((rc = SSL_do_handshake(s->ssl)) == 1)
		return 1;
	switch (SSL_get_error(s->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return 0;
	default:
		break;
	}
	if ((vr = SSL_get_verify_result(s->ssl)) != X509_V_OK)
		return fail(s, "TLS: peer certificate: %s",
		    X509_verify_cert_error_string(vr));
	e = ERR_peek_last_error();
	return fail(s, "TLS: %s", e != 0 ? ERR_reason_error_string(e) != NULL ?
	    ERR_reason_error_string(e) : "handshake failed" :
	    "connection closed during the handshake");
}

int
rn_secc_handshake(struct rn_secc *s)
{
	size_t size = 0;
	int rc;

	for (;;) {
		switch (s->state) {
		case S_DONE:
			free(s->frame);    /* the login's, not needed again */
			s->frame = NULL;
			return 1;
		case S_FAILED:
			return -1;
		case S_TLS:
			if (s->ssl != NULL && (rc = tls_step(s)) <= 0)
				return rc;
			if (s->server) {
				if (s->ssl != NULL)
					srv_cert_principal(s);
				s->state = s->users != NULL ? S_SRV_MECH :
				    S_DONE;
				break;
			}
			if (s->c->mech == 0)
				s->state = S_DONE;
			else if (send_handshake(s) != 0)
				return -1;
			break;
		default:
			if ((rc = recv_frame(s, &size)) <= 0)
				return rc;
			if ((s->server ? srv_request(s, s->frame + 4, size) :
			    on_answer(s, s->frame + 4, size)) != 0)
				return -1;
			break;
		}
	}
}

static int
flush_fd(struct rn_secc *s, int fd)
{
	uint8_t buf[16384];
	size_t n;

	while ((n = rn_secc_take(s, buf, sizeof(buf))) > 0)
		if (rn_write_all(fd, buf, n) < 0)
			return fail(s, "send: %s", strerror(errno));
	return 0;
}

int
rn_secc_handshake_fd(struct rn_secc *s, int fd, int timeout_ms)
{
	int64_t end = rn_now_ms() + timeout_ms;
	uint8_t buf[16384];
	ssize_t k;
	int rc;

	for (;;) {
		rc = rn_secc_handshake(s);
		if (flush_fd(s, fd) != 0)
			return -1;
		if (rc != 0)
			return rc > 0 ? 0 : -1;
		struct pollfd p = { fd, POLLIN, 0 };
		int left = (int)(end - rn_now_ms());

		if (left <= 0 || poll(&p, 1, left) == 0)
			return fail(s, "no answer within %d ms during the %s",
			    timeout_ms, s->state == S_TLS ? "TLS handshake" :
			    "login");
		k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (k == 0)
			return fail(s, "closed by the peer during the %s",
			    s->state == S_TLS ? "TLS handshake" : "login");
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			return fail(s, "recv: %s", strerror(errno));
		if (k > 0 && rn_secc_feed(s, buf, (size_t)k) != 0)
			return -1;
	}
}
