/*
 * ssl.* keys -> SSL_CTX for a client listener. Every failure names the
 * key it comes from; key material read from files is wiped once parsed.
 */
#include "autoconf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/config.h"
#include "common/principal_map.h"
#include "common/ssl_config.h"
#include "common/util.h"

#define PEM_FILE_MAX (1024 * 1024)

const char *
rn_listener_key(const struct rn_config *cfg, const char *listener,
    const char *mech, const char *key)
{
	char name[512], lower[RN_CONFIG_NAME_MAX];
	const char *v;
	size_t i;

	for (i = 0; listener[i] != '\0' && i < sizeof(lower) - 1; i++)
		lower[i] = (char)tolower((unsigned char)listener[i]);
	lower[i] = '\0';
	if (mech != NULL) {
		char m[64];

		for (i = 0; mech[i] != '\0' && i < sizeof(m) - 1; i++)
			m[i] = (char)tolower((unsigned char)mech[i]);
		m[i] = '\0';
		snprintf(name, sizeof(name), "listener.name.%s.%s.%s", lower,
		    m, key);
		if ((v = rn_config_static(cfg, name)) != NULL)
			return v;
	}
	snprintf(name, sizeof(name), "listener.name.%s.%s", lower, key);
	if ((v = rn_config_static(cfg, name)) != NULL)
		return v;
	return rn_config_static(cfg, key);
}

struct rn_pmap *
rn_ssl_principal_map_new(const struct rn_config *cfg, const char *lname,
    char *err, size_t errlen)
{
	static const char key[] = "ssl.principal.mapping.rules";
	const char *v = rn_listener_key(cfg, lname, NULL, key);
	char scoped[512];
	size_t i;

	/* name the key the value came from */
	snprintf(scoped, sizeof(scoped), "listener.name.%s.%s", lname, key);
	for (i = 0; scoped[i] != '\0'; i++)
		scoped[i] = (char)tolower((unsigned char)scoped[i]);
	return rn_pmap_parse(v, v != NULL && v == rn_config_static(cfg,
	    scoped) ? scoped : key, err, errlen);
}

/* The last OpenSSL error as text (the queue is emptied). */
static const char *
ossl_why(void)
{
	static char buf[256];
	unsigned long e, last = 0;

	while ((e = ERR_get_error()) != 0)
		last = e;
	if (last == 0)
		return "unknown error";
	ERR_error_string_n(last, buf, sizeof(buf));
	return buf;
}

/* A whole (small) file into memory; the caller wipes and frees it. */
static char *
read_pem_file(const char *path, size_t *len, char *err, size_t errlen,
    const char *key)
{
	struct stat st;
	char *buf;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s '%s': %s", key, path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > PEM_FILE_MAX) {
		snprintf(err, errlen, "%s '%s': not a regular file under 1 MiB",
		    key, path);
		close(fd);
		return NULL;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		close(fd);
		return NULL;
	}
	if (rn_read_full(fd, buf, (size_t)st.st_size) != st.st_size) {
		snprintf(err, errlen, "%s '%s': short read", key, path);
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	buf[st.st_size] = '\0';
	*len = (size_t)st.st_size;
	return buf;
}

static void
wipe_free(char *p, size_t len)
{
	if (p == NULL)
		return;
	OPENSSL_cleanse(p, len);
	free(p);
}

/* Never prompt on a terminal: no password given is an empty one. */
static int
pem_password(char *buf, int size, int rwflag, void *u)
{
	const char *pw = u;
	size_t n;

	(void)rwflag;
	if (pw == NULL || size <= 0)
		return 0;
	n = strlen(pw);
	if (n > (size_t)size)
		n = (size_t)size;
	memcpy(buf, pw, n);
	return (int)n;
}

/*
 * Inline PEM as Kafka takes it: a properties value often has the PEM
 * joined on one line (continuation lines lose their breaks). Rebuild the
 * lines OpenSSL wants: each BEGIN and END line on its own, the base64
 * between them without blanks, cut at 64 columns. NULL: out of memory.
 */
static char *
pem_normalize(const char *in)
{
	size_t len = strlen(in), k = 0, col;
	char *out = malloc(len * 2 + 64);
	const char *p = in, *b, *e;

	if (out == NULL)
		return NULL;
	while ((b = strstr(p, "-----BEGIN ")) != NULL &&
	    (e = strstr(b + 11, "-----")) != NULL) {
		const char *end;

		e += 5;
		memcpy(out + k, b, (size_t)(e - b));
		k += (size_t)(e - b);
		out[k++] = '\n';
		if ((end = strstr(e, "-----END ")) == NULL)
			break;
		for (col = 0, p = e; p < end; p++) {
			if (isspace((unsigned char)*p))
				continue;
			out[k++] = *p;
			if (++col == 64) {
				out[k++] = '\n';
				col = 0;
			}
		}
		if (col != 0)
			out[k++] = '\n';
		if ((e = strstr(end + 9, "-----")) == NULL)
			break;
		e += 5;
		memcpy(out + k, end, (size_t)(e - end));
		k += (size_t)(e - end);
		out[k++] = '\n';
		p = e;
	}
	out[k] = '\0';
	return out;
}

/* The leaf certificate, then its chain, from PEM text. */
static int
use_chain(SSL_CTX *ctx, const char *pem, size_t len, const char *where,
    char *err, size_t errlen)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	X509 *x;
	int n = 0;

	if (b == NULL)
		goto bad;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		int ok = n == 0 ? SSL_CTX_use_certificate(ctx, x) :
		    SSL_CTX_add1_chain_cert(ctx, x);

		X509_free(x);
		if (ok != 1)
			goto bad;
		n++;
	}
	ERR_clear_error(); /* the end of the text reads as an error */
	BIO_free(b);
	if (n == 0) {
		snprintf(err, errlen, "%s: no PEM certificate in it", where);
		return -1;
	}
	return 0;
bad:
	BIO_free(b);
	snprintf(err, errlen, "%s: %s", where, ossl_why());
	return -1;
}

static int
use_key(SSL_CTX *ctx, const char *pem, size_t len, const char *password,
    const char *where, char *err, size_t errlen)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	EVP_PKEY *k;

	if (b == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	k = PEM_read_bio_PrivateKey(b, NULL, pem_password, (void *)password);
	BIO_free(b);
	if (k == NULL) {
		snprintf(err, errlen, "%s: cannot read the private key (%s%s)",
		    where, password == NULL ? "" : "wrong ssl.key.password? ",
		    ossl_why());
		return -1;
	}
	if (SSL_CTX_use_PrivateKey(ctx, k) != 1) {
		EVP_PKEY_free(k);
		snprintf(err, errlen, "%s: %s", where, ossl_why());
		return -1;
	}
	EVP_PKEY_free(k);
	if (SSL_CTX_check_private_key(ctx) != 1) {
		snprintf(err, errlen, "%s: the private key does not match the "
		    "certificate", where);
		return -1;
	}
	return 0;
}

static int
check_type(const struct rn_config *cfg, const char *listener,
    const char *key, char *err, size_t errlen)
{
	const char *t = rn_listener_key(cfg, listener, NULL, key);

	if (t != NULL && strcasecmp(t, "PEM") != 0) {
		snprintf(err, errlen, "invalid value '%s' for %s: only PEM "
		    "is supported (convert JKS or PKCS12 with keytool or "
		    "openssl, and set %s=PEM)", t, key, key);
		return -1;
	}
	return 0;
}

static int
load_keystore(SSL_CTX *ctx, const struct rn_config *cfg, const char *lname,
    char *err, size_t errlen)
{
	const char *loc = rn_listener_key(cfg, lname, NULL,
	    "ssl.keystore.location");
	const char *chain = rn_listener_key(cfg, lname, NULL,
	    "ssl.keystore.certificate.chain");
	const char *key = rn_listener_key(cfg, lname, NULL, "ssl.keystore.key");
	const char *pw = rn_listener_key(cfg, lname, NULL, "ssl.key.password");
	char *text;
	size_t len;
	int rc;

	if (check_type(cfg, lname, "ssl.keystore.type", err, errlen) != 0)
		return -1;
	if (chain != NULL || key != NULL) {
		if (chain == NULL || key == NULL) {
			snprintf(err, errlen, "listener %s: "
			    "ssl.keystore.certificate.chain and "
			    "ssl.keystore.key go together", lname);
			return -1;
		}
		char *c = pem_normalize(chain), *k = pem_normalize(key);

		rc = c == NULL || k == NULL ? -1 : 0;
		if (rc != 0)
			snprintf(err, errlen, "out of memory");
		if (rc == 0)
			rc = use_chain(ctx, c, strlen(c),
			    "ssl.keystore.certificate.chain", err, errlen);
		if (rc == 0)
			rc = use_key(ctx, k, strlen(k), pw, "ssl.keystore.key",
			    err, errlen);
		if (c != NULL)
			wipe_free(c, strlen(c));
		if (k != NULL)
			wipe_free(k, strlen(k));
		return rc;
	}
	if (loc == NULL) {
		snprintf(err, errlen, "listener %s is %s but has no key: set "
		    "ssl.keystore.location (a PEM file with the certificate "
		    "chain and the private key) or listener.name.<name>."
		    "ssl.keystore.location", lname, "TLS");
		return -1;
	}
	if ((text = read_pem_file(loc, &len, err, errlen,
	    "ssl.keystore.location")) == NULL)
		return -1;
	rc = use_chain(ctx, text, len, "ssl.keystore.location", err, errlen);
	if (rc == 0)
		rc = use_key(ctx, text, len, pw, "ssl.keystore.location", err,
		    errlen);
	wipe_free(text, len);
	return rc;
}

/* The CAs client certificates are checked against, and named to clients. */
static int
load_truststore(SSL_CTX *ctx, const struct rn_config *cfg, const char *lname,
    bool needed, char *err, size_t errlen)
{
	const char *loc = rn_listener_key(cfg, lname, NULL,
	    "ssl.truststore.location");
	const char *inl = rn_listener_key(cfg, lname, NULL,
	    "ssl.truststore.certificates");
	const char *where = loc != NULL ? "ssl.truststore.location" :
	    "ssl.truststore.certificates";
	STACK_OF(X509_INFO) *infos;
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	char *text = NULL;
	size_t len = 0;
	BIO *b;
	int i, n = 0;

	if (check_type(cfg, lname, "ssl.truststore.type", err, errlen) != 0)
		return -1;
	if (loc == NULL && inl == NULL) {
		if (!needed)
			return 0;
		snprintf(err, errlen, "listener %s: ssl.client.auth needs a "
		    "truststore: set ssl.truststore.location (PEM CA "
		    "certificates)", lname);
		return -1;
	}
	if (loc != NULL && (text = read_pem_file(loc, &len, err, errlen,
	    where)) == NULL)
		return -1;
	if (text == NULL) {
		if ((text = pem_normalize(inl)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		len = strlen(text);
	}
	b = BIO_new_mem_buf(text, (int)len);
	infos = b != NULL ? PEM_X509_INFO_read_bio(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	wipe_free(text, len);
	if (infos == NULL) {
		snprintf(err, errlen, "%s: %s", where, ossl_why());
		return -1;
	}
	for (i = 0; i < sk_X509_INFO_num(infos); i++) {
		X509_INFO *xi = sk_X509_INFO_value(infos, i);

		if (xi->x509 == NULL)
			continue;
		if (X509_STORE_add_cert(store, xi->x509) != 1 ||
		    SSL_CTX_add_client_CA(ctx, xi->x509) != 1)
			break;
		n++;
	}
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	if (n == 0) {
		snprintf(err, errlen, "%s: no PEM certificate in it", where);
		return -1;
	}
	return 0;
}

static int
proto_version(const char *name)
{
	if (strcmp(name, "TLSv1.3") == 0)
		return TLS1_3_VERSION;
	if (strcmp(name, "TLSv1.2") == 0)
		return TLS1_2_VERSION;
	if (strcmp(name, "TLSv1.1") == 0)
		return TLS1_1_VERSION;
	if (strcmp(name, "TLSv1") == 0)
		return TLS1_VERSION;
	return -1;
}

/* ssl.enabled.protocols: the span from the oldest to the newest named. */
static int
set_protocols(SSL_CTX *ctx, const char *list, char *err, size_t errlen)
{
	char buf[256], *s = buf, *p;
	int lo = 0, hi = 0, v;

	if (strlcpy(buf, list, sizeof(buf)) >= sizeof(buf))
		goto bad;
	while ((p = strsep(&s, ",")) != NULL) {
		p = rn_trim(p);
		if (*p == '\0')
			continue;
		if ((v = proto_version(p)) < 0) {
			snprintf(err, errlen, "invalid value '%s' for "
			    "ssl.enabled.protocols: %s is not one of TLSv1.3, "
			    "TLSv1.2, TLSv1.1, TLSv1", list, p);
			return -1;
		}
		if (lo == 0 || v < lo)
			lo = v;
		if (v > hi)
			hi = v;
	}
	if (lo == 0)
		goto bad;
	if (SSL_CTX_set_min_proto_version(ctx, lo) != 1 ||
	    SSL_CTX_set_max_proto_version(ctx, hi) != 1)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "invalid value '%s' for ssl.enabled.protocols",
	    list);
	return -1;
}

/*
 * ssl.cipher.suites names suites the Java way (IANA: TLS_ECDHE_RSA_WITH_
 * AES_128_GCM_SHA256); OpenSSL's own names are taken too. TLS 1.3 suites
 * and older ones are set apart, and a version left without any is off.
 */
static int
set_ciphers(SSL_CTX *ctx, const char *list, char *err, size_t errlen)
{
	char buf[4096], old[4096] = "", v13[1024] = "", *s = buf, *p;
	STACK_OF(SSL_CIPHER) *all;
	int i;

	if (strlcpy(buf, list, sizeof(buf)) >= sizeof(buf)) {
		snprintf(err, errlen, "ssl.cipher.suites: too long");
		return -1;
	}
	if (SSL_CTX_set_cipher_list(ctx, "ALL:COMPLEMENTOFALL") != 1)
		goto bad;
	all = SSL_CTX_get_ciphers(ctx);
	while ((p = strsep(&s, ",")) != NULL) {
		const SSL_CIPHER *found = NULL;

		p = rn_trim(p);
		if (*p == '\0')
			continue;
		for (i = 0; i < sk_SSL_CIPHER_num(all) && found == NULL; i++) {
			const SSL_CIPHER *c = sk_SSL_CIPHER_value(all, i);
			const char *std = SSL_CIPHER_standard_name(c);

			if ((std != NULL && strcmp(std, p) == 0) ||
			    strcmp(SSL_CIPHER_get_name(c), p) == 0)
				found = c;
		}
		if (found == NULL) {
			snprintf(err, errlen, "invalid value for "
			    "ssl.cipher.suites: %s is not a cipher suite this "
			    "OpenSSL knows", p);
			return -1;
		}
		if ((SSL_CIPHER_get_protocol_id(found) & 0xff00) == 0x1300)
			snprintf(v13 + strlen(v13), sizeof(v13) - strlen(v13),
			    "%s%s", v13[0] ? ":" : "",
			    SSL_CIPHER_get_name(found));
		else
			snprintf(old + strlen(old), sizeof(old) - strlen(old),
			    "%s%s", old[0] ? ":" : "",
			    SSL_CIPHER_get_name(found));
	}
	if (SSL_CTX_set_ciphersuites(ctx, v13) != 1)
		goto bad;
	if (old[0] != '\0') {
		if (SSL_CTX_set_cipher_list(ctx, old) != 1)
			goto bad;
	} else if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1)
		goto bad;
	if (v13[0] == '\0' &&
	    (SSL_CTX_get_max_proto_version(ctx) == 0 ||
	    SSL_CTX_get_max_proto_version(ctx) > TLS1_2_VERSION) &&
	    SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION) != 1)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "invalid value '%s' for ssl.cipher.suites: %s",
	    list, ossl_why());
	return -1;
}

/* The listener's ssl.enabled.protocols and ssl.cipher.suites, either side. */
static int
set_listener_ciphers(SSL_CTX *ctx, const struct rn_config *cfg,
    const char *lname, char *err, size_t errlen)
{
	const char *protos = rn_listener_key(cfg, lname, NULL,
	    "ssl.enabled.protocols");
	const char *suites = rn_listener_key(cfg, lname, NULL,
	    "ssl.cipher.suites");

	if (set_protocols(ctx, protos != NULL ? protos : "TLSv1.2,TLSv1.3",
	    err, errlen) != 0)
		return -1;
	if (suites != NULL && *suites != '\0' &&
	    set_ciphers(ctx, suites, err, errlen) != 0)
		return -1;
	return 0;
}

SSL_CTX *
rn_ssl_ctx_new(const struct rn_config *cfg, const char *lname, char *err,
    size_t errlen)
{
	const char *auth = rn_listener_key(cfg, lname, NULL, "ssl.client.auth");
	int verify = SSL_VERIFY_NONE;
	SSL_CTX *ctx;
	long opts;

	if (auth == NULL || strcasecmp(auth, "none") == 0)
		verify = SSL_VERIFY_NONE;
	else if (strcasecmp(auth, "requested") == 0)
		verify = SSL_VERIFY_PEER;
	else if (strcasecmp(auth, "required") == 0)
		verify = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	else {
		snprintf(err, errlen, "invalid value '%s' for ssl.client.auth: "
		    "not none, requested or required", auth);
		return NULL;
	}
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		snprintf(err, errlen, "listener %s: %s", lname, ossl_why());
		return NULL;
	}
	/* no renegotiation (Kafka has none either): a write never waits
	 * for a read; kTLS where the kernel has it */
	opts = SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE;
#ifdef SSL_OP_ENABLE_KTLS
	opts |= SSL_OP_ENABLE_KTLS;
#endif
	SSL_CTX_set_options(ctx, opts);
	/* no SSL_MODE_RELEASE_BUFFERS: it frees and allocates a connection's
	 * buffers around every record; ~34 KiB per connection is cheaper */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"runnel",
	    6);
	SSL_CTX_set_verify(ctx, verify, NULL);
	if (load_keystore(ctx, cfg, lname, err, errlen) != 0 ||
	    load_truststore(ctx, cfg, lname, verify != SSL_VERIFY_NONE, err,
	    errlen) != 0 ||
	    set_listener_ciphers(ctx, cfg, lname, err, errlen) != 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/*
 * This node as a TLS client of its peers' listener lname: the same
 * listener's truststore checks their certificates (the system's CAs
 * when it has none) and its keystore, when set, is the client
 * certificate a peer with ssl.client.auth asks for.
 */
SSL_CTX *
rn_ssl_client_ctx_new(const struct rn_config *cfg, const char *lname,
    char *err, size_t errlen)
{
	bool has_key = rn_listener_key(cfg, lname, NULL,
	    "ssl.keystore.location") != NULL ||
	    rn_listener_key(cfg, lname, NULL,
	    "ssl.keystore.certificate.chain") != NULL;
	bool has_trust = rn_listener_key(cfg, lname, NULL,
	    "ssl.truststore.location") != NULL ||
	    rn_listener_key(cfg, lname, NULL,
	    "ssl.truststore.certificates") != NULL;
	SSL_CTX *ctx;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		snprintf(err, errlen, "listener %s: %s", lname, ossl_why());
		return NULL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if ((has_key && load_keystore(ctx, cfg, lname, err, errlen) != 0) ||
	    (has_trust && load_truststore(ctx, cfg, lname, true, err,
	    errlen) != 0) ||
	    (!has_trust && SSL_CTX_set_default_verify_paths(ctx) != 1) ||
	    set_listener_ciphers(ctx, cfg, lname, err, errlen) != 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

void
rn_ssl_ctx_describe(const struct rn_config *cfg, const char *lname,
    char *buf, size_t len)
{
	const char *auth = rn_listener_key(cfg, lname, NULL, "ssl.client.auth");
	const char *protos = rn_listener_key(cfg, lname, NULL,
	    "ssl.enabled.protocols");

	snprintf(buf, len, "protocols %s, client auth %s, kTLS %s",
	    protos != NULL ? protos : "TLSv1.2,TLSv1.3",
	    auth != NULL ? auth : "none",
#ifdef SSL_OP_ENABLE_KTLS
	    "when the kernel has it"
#else
	    "not in this OpenSSL"
#endif
	    );
}
