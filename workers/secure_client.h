/*
 * A secured connection between nodes, either side: TLS, then a SASL
 * login (PLAIN or SCRAM-SHA-256/512 over SaslHandshake v1 and
 * SaslAuthenticate v2), as Kafka's brokers log in to each other and to
 * the controllers. The client side serves the replica fetchers and the
 * controller worker's outgoing connections; the server side (PLAIN
 * only, as Kafka's controller listeners) the controller listener. It
 * does no I/O itself: the caller feeds it the bytes that came from the
 * socket and sends what it takes out, so a blocking fd and a libuv
 * stream can both drive it.
 */
#ifndef RN_SECURE_CLIENT_H
#define RN_SECURE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <openssl/ssl.h>

struct rn_config;
struct rn_sasl_cfg;

/*
 * How this node logs in on one listener of its peers. Built by the
 * supervisor before the first fork (the truststore and a client key are
 * read with its privileges); the workers that connect keep it.
 */
struct rn_secc_cfg {
	char listener[64];
	SSL_CTX *ctx;           /* NULL: no TLS */
	bool verify_host;       /* ssl.endpoint.identification.algorithm=https */
	unsigned mech;          /* RN_SASL_*; 0: no SASL */
	char *user, *password;
};

/*
 * The settings for connecting to listener (its ssl.* keys, the
 * mechanism from mech_key, e.g. sasl.mechanism.inter.broker.protocol,
 * default PLAIN, and username/password from the listener's
 * listener.name.<name>.<mechanism>.sasl.jaas.config or sasl.jaas.config).
 * 0, or -1 with a one-line reason naming the key.
 */
int rn_secc_cfg_load(const struct rn_config *cfg, const char *listener,
    const char *mech_key, struct rn_secc_cfg *out, char *err, size_t errlen);
/* Frees the context and wipes the password. */
void rn_secc_cfg_free(struct rn_secc_cfg *c);
/* "SASL_SSL, SCRAM-SHA-512 as broker": for the startup log. */
void rn_secc_cfg_describe(const struct rn_secc_cfg *c, char *buf,
    size_t len);

struct rn_secc;

/* A session to host (checked against the peer's certificate when
 * verify_host), or NULL when out of memory. */
struct rn_secc *rn_secc_new(const struct rn_secc_cfg *c, const char *host);
void rn_secc_free(struct rn_secc *s);
/* The server side: TLS with ctx (NULL: none), then, when users is not
 * NULL, a PLAIN login against them. NULL when out of memory. */
struct rn_secc *rn_secc_new_server(SSL_CTX *ctx,
    const struct rn_sasl_cfg *users);
/* Server side, after the handshake: "User:<name>", a certificate's
 * "User:<subject>", or "User:ANONYMOUS". */
const char *rn_secc_principal(const struct rn_secc *s);

/* Bytes read from the socket. 0, or -1 when out of memory or when more
 * than a login's worth waits before the login is done (a flood). */
int rn_secc_feed(struct rn_secc *s, const void *buf, size_t len);
/* Up to cap bytes to send to the socket; 0 when there are none. */
size_t rn_secc_take(struct rn_secc *s, void *buf, size_t cap);
/* Whether bytes are waiting to be taken. */
bool rn_secc_wants_send(const struct rn_secc *s);

/*
 * Drive the TLS handshake and the login with the bytes fed so far:
 * 1 when done, 0 when more input is needed, -1 when it failed
 * (rn_secc_error says why; never the password).
 */
int rn_secc_handshake(struct rn_secc *s);
const char *rn_secc_error(const struct rn_secc *s);
/* Whether the login failed on the peer's answer (wrong credentials)
 * rather than on the transport. */
bool rn_secc_auth_failed(const struct rn_secc *s);

/* After the handshake: plaintext to send (0, -1 on error), and
 * plaintext received (bytes, 0 when none yet, -1 at a TLS error or the
 * peer's close_notify). */
int rn_secc_write(struct rn_secc *s, const void *buf, size_t len);
ssize_t rn_secc_read(struct rn_secc *s, void *buf, size_t cap);
/* Whether plaintext is ready to read without more input. */
bool rn_secc_readable(const struct rn_secc *s);
/*
 * Bytes of a connection that may carry TLS (sec NULL: plain), as they
 * are there now, never waiting: > 0 read, 0 none yet, -ENOTCONN at the
 * peer's close or a TLS error, -errno. flush(arg) sends what TLS has to
 * send meanwhile (its own records: key updates, alerts).
 */
ssize_t rn_secc_recv_now(int fd, struct rn_secc *sec, void *buf, size_t len,
    int (*flush)(void *), void *arg);

/* The handshake on a connected blocking fd, within timeout_ms. 0, or -1
 * with rn_secc_error set. */
int rn_secc_handshake_fd(struct rn_secc *s, int fd, int timeout_ms);

#endif /* RN_SECURE_CLIENT_H */
