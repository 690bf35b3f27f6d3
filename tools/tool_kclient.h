/*
 * A minimal blocking Kafka-protocol client over a plain socket, on our
 * own codec (protocol/), for the admin requests librdkafka 2.0.2 lacks
 * (DescribeQuorum, ElectLeaders): connect to the first bootstrap server,
 * send one request, read its response.
 */
#ifndef RN_TOOL_KCLIENT_H
#define RN_TOOL_KCLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/kcodec.h"

/* A connected socket to the first "host:port" of bootstrap, or -1 with
 * err filled. */
int tkc_connect(const char *bootstrap, int timeout_ms, char *err,
    size_t errlen);
/*
 * Send body as request (key, ver) and read the answer; *resp reads the
 * response body (after its header), its bytes in arena. 0, or -1 with
 * err filled (timeout, closed connection, bad frame).
 */
int tkc_call(int fd, int16_t key, int16_t ver, const struct rn_kwriter *body,
    struct rn_arena *arena, struct rn_kreader *resp, int timeout_ms,
    char *err, size_t errlen);
/*
 * The same with the generated codec: req (a generated request struct)
 * encoded as (key, ver), the answer decoded into resp (its strings in
 * arena). 0, or -1 with err filled.
 */
int tkc_call_api(int fd, int16_t key, int16_t ver, const void *req,
    struct rn_arena *arena, void *resp, int timeout_ms, char *err,
    size_t errlen);
/* The cluster id from Metadata (no topics); "" when unknown. */
void tkc_cluster_id(int fd, int timeout_ms, struct rn_arena *arena,
    char *out, size_t outlen);

#endif /* RN_TOOL_KCLIENT_H */
