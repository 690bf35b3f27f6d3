/*
 * TLS on a client connection: the handshake, and reads and writes with
 * the nonblocking semantics conn.c expects. Record data goes out with
 * SSL_sendfile when the kernel does the encryption (kTLS), so fetches
 * stay zero-copy; otherwise a file range is read into the worker's one
 * bounded buffer and encrypted from there (no allocation per send).
 *
 * A write that TLS could not finish must be retried with the same bytes:
 * conn.c only moves on by what was reported written, and the bytes are
 * gathered again from the same place (segment data does not change).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/log.h"
#include "common/principal_map.h"
#include "common/util.h"
#include "workers/network/net_int.h"

/* A write from the caller's memory, not through the buffer, from here */
#define TLS_DIRECT_MIN (16 * 1024)

int
net_tls_start(struct net *n, struct conn *c, SSL_CTX *ctx)
{
	if (n->tls_buf == NULL &&
	    (n->tls_buf = malloc(NET_TLS_BUF)) == NULL)
		return -ENOMEM;
	if ((c->ssl = SSL_new(ctx)) == NULL) {
		ERR_clear_error();
		return -ENOMEM;
	}
	if (SSL_set_fd(c->ssl, c->fd) != 1) {
		ERR_clear_error();
		SSL_free(c->ssl);
		c->ssl = NULL;
		return -ENOMEM;
	}
	SSL_set_accept_state(c->ssl);
	return 0;
}

/* Why a handshake failed, for the log. */
static void
tls_why(struct conn *c, int rc, char *buf, size_t len)
{
	unsigned long e = ERR_peek_last_error();
	long v = SSL_get_verify_result(c->ssl);

	if (v != X509_V_OK)
		snprintf(buf, len, "client certificate: %s",
		    X509_verify_cert_error_string(v));
	else if (e != 0)
		snprintf(buf, len, "%s", ERR_reason_error_string(e) != NULL ?
		    ERR_reason_error_string(e) : "TLS error");
	else if (rc == SSL_ERROR_SYSCALL)
		snprintf(buf, len, "%s", errno != 0 ? strerror(errno) :
		    "the peer closed the connection");
	else
		snprintf(buf, len, "TLS error %d", rc);
	ERR_clear_error();
}

/* Why a client certificate gave no principal. */
enum tls_principal_fail {
	TLS_PRINCIPAL_OK = 0,
	TLS_PRINCIPAL_TOO_LONG,
	TLS_PRINCIPAL_NO_RULE,
	TLS_PRINCIPAL_LIMIT,
};

/*
 * The principal a client certificate names: "User:" and its RFC 2253
 * subject DN, or on an SSL listener what ssl.principal.mapping.rules
 * make of the DN (Kafka's DefaultKafkaPrincipalBuilder). Never a cut
 * name: it could be someone else's. dn gets the DN for the log.
 */
static enum tls_principal_fail
tls_principal(struct net *n, struct conn *c, char *dn, size_t dnlen)
{
	struct rn_pmap *pmap = n->w->env->sec[c->listener].pmap;
	X509 *x = SSL_get1_peer_certificate(c->ssl);
	enum tls_principal_fail res = TLS_PRINCIPAL_OK;
	char name[sizeof(c->principal) - sizeof("User:") + 1];
	BIO *b;
	char *p;
	long len;

	strlcpy(c->principal, "User:ANONYMOUS", sizeof(c->principal));
	dn[0] = '\0';
	if (x == NULL)
		return TLS_PRINCIPAL_OK;
	if ((b = BIO_new(BIO_s_mem())) != NULL) {
		if (X509_NAME_print_ex(b, X509_get_subject_name(x), 0,
		    XN_FLAG_RFC2253) >= 0 && (len = BIO_get_mem_data(b, &p)) > 0) {
			if ((size_t)len >= dnlen)
				res = TLS_PRINCIPAL_TOO_LONG;
			else
				snprintf(dn, dnlen, "%.*s", (int)len, p);
		}
		BIO_free(b);
	}
	X509_free(x);
	if (res != TLS_PRINCIPAL_OK || dn[0] == '\0')
		return res;
	if (pmap == NULL ||
	    n->cfg->listeners[c->listener].proto != RN_SEC_SSL)
		strlcpy(name, dn, sizeof(name));
	else {
		switch (rn_pmap_apply(pmap, dn, name, sizeof(name))) {
		case RN_PMAP_OK:
			break;
		case RN_PMAP_NO_MATCH:
			return TLS_PRINCIPAL_NO_RULE;
		case RN_PMAP_LIMIT:
			return TLS_PRINCIPAL_LIMIT;
		default:
			return TLS_PRINCIPAL_TOO_LONG;
		}
	}
	if (strlen(name) + sizeof("User:") > sizeof(c->principal))
		return TLS_PRINCIPAL_TOO_LONG;
	snprintf(c->principal, sizeof(c->principal), "User:%s", name);
	return TLS_PRINCIPAL_OK;
}

/* Log why a certificate named no principal (the rules are no secret). */
static void
tls_principal_refused(struct net *n, struct conn *c, const char *dn,
    enum tls_principal_fail why)
{
	const char *lname = n->cfg->listeners[c->listener].name;
	char rules[512];

	if (why == TLS_PRINCIPAL_TOO_LONG) {
		log_warnx("TLS client %s on listener %s: its certificate's "
		    "subject%s%s is too long for a principal: closing", c->peer,
		    lname, dn[0] != '\0' ? " " : "", dn);
		return;
	}
	rn_pmap_describe(n->w->env->sec[c->listener].pmap, rules,
	    sizeof(rules));
	log_warnx("TLS client %s on listener %s: %s %s, "
	    "ssl.principal.mapping.rules %s: authentication failed, closing",
	    c->peer, lname, why == TLS_PRINCIPAL_NO_RULE ? "no rule applies "
	    "to" : "matching hit the regex limits on", dn, rules);
}

int
net_tls_handshake(struct net *n, struct conn *c)
{
	enum tls_principal_fail fail;
	char why[256], dn[512];
	int rc, err;

	ERR_clear_error();
	errno = 0;
	if ((rc = SSL_do_handshake(c->ssl)) == 1) {
		c->tls_done = true;
		c->tls_ktls = BIO_get_ktls_send(SSL_get_wbio(c->ssl)) > 0;
		if ((fail = tls_principal(n, c, dn, sizeof(dn))) !=
		    TLS_PRINCIPAL_OK) {
			tls_principal_refused(n, c, dn, fail);
			return -1;
		}
		log_debug("TLS with %s: %s, %s%s", c->peer,
		    SSL_get_version(c->ssl), SSL_get_cipher_name(c->ssl),
		    c->tls_ktls ? ", kTLS sends" : "");
		return 1;
	}
	err = SSL_get_error(c->ssl, rc);
	if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
		return 0;
	c->tls_broken = true;
	tls_why(c, err, why, sizeof(why));
	log_warnx("TLS handshake with %s on listener %s failed: %s: closing",
	    c->peer, n->cfg->listeners[c->listener].name, why);
	return -1;
}

bool
net_tls_wants_write(const struct conn *c)
{
	return c->ssl != NULL && SSL_want_write(c->ssl);
}

/* An SSL_* result that is not a byte count, as errno. */
static ssize_t
tls_fail(struct conn *c, int rc)
{
	switch (SSL_get_error(c->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		c->tls_broken = true;
		ERR_clear_error();
		if (errno == 0 || errno == EAGAIN)
			errno = ECONNRESET;
		return -1;
	default:
		c->tls_broken = true;
		log_debug("TLS with %s: %s", c->peer,
		    ERR_reason_error_string(ERR_peek_last_error()) ?
		    ERR_reason_error_string(ERR_peek_last_error()) : "error");
		ERR_clear_error();
		errno = EPROTO;
		return -1;
	}
}

ssize_t
net_tls_read(struct conn *c, void *buf, size_t len)
{
	int k;

	if (len > INT32_MAX)
		len = INT32_MAX;
	ERR_clear_error();
	errno = 0;
	if ((k = SSL_read(c->ssl, buf, (int)len)) > 0)
		return k;
	return tls_fail(c, k);
}

static ssize_t
tls_write(struct conn *c, const void *buf, size_t len)
{
	int k;

	ERR_clear_error();
	errno = 0;
	if ((k = SSL_write(c->ssl, buf, (int)len)) > 0)
		return k;
	if (SSL_get_error(c->ssl, k) == SSL_ERROR_ZERO_RETURN) {
		errno = EPIPE;
		return -1;
	}
	return tls_fail(c, k);
}

/*
 * Small pieces are gathered into the worker's buffer so a response
 * leaves in full records; a big first piece is written from where it is.
 */
ssize_t
net_tls_writev(struct net *n, struct conn *c, const struct iovec *iov,
    int niov)
{
	size_t len = 0;
	int i;

	if (niov == 0)
		return 0;
	if (iov[0].iov_len >= TLS_DIRECT_MIN)
		return tls_write(c, iov[0].iov_base,
		    iov[0].iov_len > NET_TLS_BUF * 4 ? NET_TLS_BUF * 4 :
		    iov[0].iov_len);
	for (i = 0; i < niov && len < NET_TLS_BUF; i++) {
		size_t k = iov[i].iov_len;

		if (k > NET_TLS_BUF - len)
			k = NET_TLS_BUF - len;
		memcpy(n->tls_buf + len, iov[i].iov_base, k);
		len += k;
	}
	return tls_write(c, n->tls_buf, len);
}

ssize_t
net_tls_sendfile(struct net *n, struct conn *c, int fd, off_t off,
    size_t len)
{
	ssize_t k;

	if (c->tls_ktls) {
		ossl_ssize_t s;

		ERR_clear_error();
		errno = 0;
		if ((s = SSL_sendfile(c->ssl, fd, off, len, 0)) >= 0)
			return (ssize_t)s;
		return tls_fail(c, (int)s);
	}
	if (len > NET_TLS_BUF)
		len = NET_TLS_BUF;
	if ((k = pread(fd, n->tls_buf, len, off)) <= 0)
		return k; /* 0: the file got shorter, as sendfile says it */
	return tls_write(c, n->tls_buf, (size_t)k);
}

bool
net_tls_pending(const struct conn *c)
{
	return c->ssl != NULL && c->tls_done && SSL_pending(c->ssl) > 0;
}

void
net_tls_free(struct conn *c)
{
	if (c->ssl == NULL)
		return;
	/* a clean close tells the client nothing was cut off */
	if (c->tls_done && !c->tls_broken) {
		ERR_clear_error();
		(void)SSL_shutdown(c->ssl);
		ERR_clear_error();
	}
	SSL_free(c->ssl);
	c->ssl = NULL;
}
