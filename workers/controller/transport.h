/*
 * libraft transport over the CONTROLLER listener the supervisor bound.
 * The controller worker never binds: it accepts on the inherited socket
 * and tells raft connections from Kafka ones by their first bytes
 * (preamble.h): a raft peer's preamble, or a Kafka-protocol connection
 * (broker-to-controller requests), handed to the kafka callback.
 * Outgoing raft connections go to the peer's controller address from
 * controller.quorum.voters and send the same preamble.
 */
#ifndef RN_CTL_TRANSPORT_H
#define RN_CTL_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include <openssl/ssl.h>

#include "common/config.h"
#include "workers/controller/preamble.h"

#define CTL_HANDSHAKE_TIMEOUT_MS 10000

/*
 * A connection that is not raft: the callee owns tcp (uv_tcp_t from raft_malloc(),
 * not reading) and the bytes already read from it. NULL callback: the
 * connection is logged and closed.
 */
typedef void (*ctl_kafka_conn_cb)(void *arg, uv_tcp_t *tcp,
    const uint8_t *head, size_t n);

/*
 * Set up t (zeroed by the caller) to accept on listen_fd (a listening,
 * non-blocking socket; the transport closes it when it closes) in loop.
 * cfg gives the voters' addresses.
 */
int ctl_transport_init(struct raft_uv_transport *t, uv_loop_t *loop,
    int listen_fd, const struct rn_config *cfg);
void ctl_transport_set_kafka_cb(struct raft_uv_transport *t,
    ctl_kafka_conn_cb cb, void *arg);
/*
 * A secured controller listener (workers/controller/relay.h): raft
 * connects to the voters as client (NULL: PLAINTEXT), and accepted
 * connections get TLS with srv_ctx (NULL: none) and a PLAIN login
 * against srv_users (NULL: none) when srv_secured. With the authorizer
 * on, only super.users pass.
 */
struct rn_secc_cfg;
struct rn_sasl_cfg;
void ctl_transport_set_security(struct raft_uv_transport *t,
    const struct rn_secc_cfg *client, SSL_CTX *srv_ctx,
    const struct rn_sasl_cfg *srv_users, bool srv_secured);

/* Release what init allocated, after raft closed the transport. */
void ctl_transport_free(struct raft_uv_transport *t);

/* "host:port" (or "[v6]:port") into host and port; 0 or -EINVAL. */
int ctl_split_address(const char *address, char *host, size_t hostlen,
    uint16_t *port);

#endif /* RN_CTL_TRANSPORT_H */
