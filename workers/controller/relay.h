/*
 * TLS and SASL on the controller listener, beneath the code that speaks
 * raft and Kafka over it. A relay owns one TCP connection and its
 * session (workers/secure_client.h) and pumps the plaintext through one
 * end of a socketpair; the other end is what raft, server.c and agent.c
 * get, opened as the uv_tcp_t they already take (libuv's stream code is
 * the same for a Unix socket). Why a relay rather than TLS inside each:
 * libraft reads and writes the stream it is given itself, so its bytes
 * can only be secured beneath it, and one relay then serves all three.
 * The user's end is usable at once: what it writes waits in the
 * socketpair until the login is done, and a failed login or a broken
 * connection reaches it as end of file, as a TCP failure would.
 */
#ifndef RN_CTL_RELAY_H
#define RN_CTL_RELAY_H

#include <stdbool.h>

#include <uv.h>

#include <openssl/ssl.h>

struct rn_secc_cfg;
struct rn_sasl_cfg;
struct rn_authz;

/*
 * Connect to addr (host for the certificate check) and log in as c;
 * plain_fd (one end of a socketpair, owned by the relay from now on)
 * carries the plaintext. what names the connection in logs ("raft
 * connection to node 2"). 0, or a negative errno (plain_fd closed).
 */
int ctl_relay_client(uv_loop_t *loop, int plain_fd,
    const struct sockaddr *addr, const char *host,
    const struct rn_secc_cfg *c, const char *what);

/*
 * Accept one connection from server, serve TLS with ctx (NULL: none)
 * and a PLAIN login against users (NULL: none); with the authorizer on,
 * only its super users pass (the controller listener carries cluster
 * actions only). plain_fd as above.
 */
int ctl_relay_server(uv_loop_t *loop, uv_stream_t *server, int plain_fd,
    SSL_CTX *ctx, const struct rn_sasl_cfg *users,
    const struct rn_authz *authz);

/* Close every relay (the transport closes): their users see the end. */
void ctl_relay_close_all(void);

/*
 * A socketpair for a relay: one end opened into tcp, the other in
 * *relay_fd for ctl_relay_*. 0 or a negative errno; either way tcp is
 * initialized on loop, for the caller to close as any stream.
 */
int ctl_relay_pair(uv_loop_t *loop, uv_tcp_t *tcp, int *relay_fd);

#endif /* RN_CTL_RELAY_H */
