/*
 * Kafka's ssl.* keys for one listener (listener.name.<name>.ssl.* first,
 * then the global key) into an OpenSSL server context. PEM only: the
 * keystore as one file (ssl.keystore.location) or inline
 * (ssl.keystore.certificate.chain + ssl.keystore.key), the truststore as
 * a file or inline (ssl.truststore.certificates). Built by the
 * supervisor before any worker starts, so files are read once, with its
 * privileges (docs/ARCHITECTURE.md, "TLS and SASL").
 */
#ifndef RN_SSL_CONFIG_H
#define RN_SSL_CONFIG_H

#include <stddef.h>

#include <openssl/ssl.h>

struct rn_config;

/* The listener's context, or NULL with a one-line reason naming the key. */
SSL_CTX *rn_ssl_ctx_new(const struct rn_config *cfg, const char *listener,
    char *err, size_t errlen);

/* A client context for connecting to the peers' listener of that name:
 * its truststore (else the system CAs), its keystore as the client
 * certificate when set. NULL with a reason. */
SSL_CTX *rn_ssl_client_ctx_new(const struct rn_config *cfg,
    const char *listener, char *err, size_t errlen);

struct rn_pmap;

/* The listener's ssl.principal.mapping.rules (listener.name.<name>. first),
 * parsed; NULL with a reason naming the key that was set. */
struct rn_pmap *rn_ssl_principal_map_new(const struct rn_config *cfg,
    const char *listener, char *err, size_t errlen);

/* What the context serves, for the startup log: "TLSv1.2-TLSv1.3, ...". */
void rn_ssl_ctx_describe(const struct rn_config *cfg, const char *listener,
    char *buf, size_t len);

/*
 * A listener-scoped Kafka key: listener.name.<name lowercased>.<key>,
 * else <key>; NULL if neither is set. mech, when not NULL, is tried
 * between them (listener.name.<name>.<mech lowercased>.<key>).
 */
const char *rn_listener_key(const struct rn_config *cfg,
    const char *listener, const char *mech, const char *key);

#endif /* RN_SSL_CONFIG_H */
