/*
 * Kafka frames over a byte stream, on top of the codec (kcodec.h) and the
 * generated API table (kmsg_gen.h): a request frame (size prefix, request
 * header, body), reading whole frames with a size cap, and a response
 * header matched to its request.
 *
 * One reading buffer serves two shapes: a stream whose bytes arrive in
 * callbacks (libuv: rn_kfb_room, then rn_kfb_next over what came, then
 * rn_kfb_consume), and a client with one request in flight on a
 * non-blocking socket (rn_kframe_recv reads exactly one frame).
 */
#ifndef RN_KFRAME_H
#define RN_KFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol/kcodec.h"

/* ---- headers that need the API table ------------------------------- */

/*
 * Decode a request header. The header version follows from the API key and
 * version (see rn_kapi_request_header_version); an unknown API key still
 * yields key, version and correlation id, and returns RN_KE_VERSION so the
 * caller can decide (Kafka brokers close the connection).
 */
int rn_krequest_header_decode(struct rn_kreader *r,
    struct rn_krequest_header *h);

/*
 * Start a response frame: size prefix and the response header whose
 * version the API table gives. Finish with rn_kw_frame_end(w, mark).
 */
int rn_kresponse_begin(struct rn_kwriter *w, int16_t api_key,
    int16_t api_version, int32_t correlation_id, size_t *mark);

/* ---- client: requests out, responses in ---------------------------- */

/*
 * Append a whole request frame to w: size prefix, request header of
 * version hver (-1: as the API table says), then the body, either a
 * generated request struct (body) or bytes already encoded (raw, rawlen;
 * body NULL). 0, or a codec error (RN_KE_VERSION for an API the table
 * does not know).
 */
int rn_kframe_request(struct rn_kwriter *w, int hver, int16_t key,
    int16_t ver, int32_t corr, const char *client_id, const void *body,
    const void *raw, size_t rawlen);

/* The correlation id a response frame starts with; false if too short. */
bool rn_kframe_corr(const void *frame, size_t size, int32_t *corr);

/*
 * Read the response header of a frame (its body, after the size prefix)
 * of version hver (-1: from the table for key and ver) and check it
 * answers corr; r then reads the response body. 0, RN_KE_MALFORMED, or
 * -EPROTO when it answers another request.
 */
int rn_kframe_response(struct rn_kreader *r, const void *frame, size_t size,
    int hver, int16_t key, int16_t ver, int32_t corr);

/* ---- reading frames ------------------------------------------------ */

struct rn_kframebuf {
	uint8_t *buf;
	size_t len;             /* bytes in buf */
	size_t cap;
};

void rn_kfb_free(struct rn_kframebuf *fb);

/*
 * Room for the next read at buf + len, grown so that a read gets at least
 * 64 KiB; *room is 0 if it could not grow and nothing is left.
 */
void rn_kfb_room(struct rn_kframebuf *fb, uint8_t **base, size_t *room);

/*
 * The next whole frame at *off: 1 with *frame and *size set (the bytes
 * after the size prefix) and *off moved past it; 0 when more bytes are
 * needed; RN_KE_FRAMESIZE when the size prefix is negative or above max.
 */
int rn_kfb_next(const struct rn_kframebuf *fb, size_t *off, int32_t max,
    const uint8_t **frame, size_t *size);

/* Forget the first off bytes (the frames handled). */
void rn_kfb_consume(struct rn_kframebuf *fb, size_t off);

/*
 * Read from a non-blocking fd, never past the end of one frame: 1 when a
 * whole frame is in (buf + 4, len - 4 bytes; empty the buffer with
 * fb->len = 0 before the next), 0 when not yet, -ENOTCONN at end of file,
 * -EMSGSIZE for a size prefix above max, -ENOMEM, or -errno. The buffer
 * grows as bytes arrive, not as the size prefix says.
 */
int rn_kframe_recv(int fd, struct rn_kframebuf *fb, int32_t max);

/* The same from any byte source: rd answers bytes read, 0 when none
 * yet, or a negative errno (-ENOTCONN at the end). */
typedef ssize_t (*rn_kframe_read_fn)(void *arg, void *buf, size_t len);
int rn_kframe_recv_fn(rn_kframe_read_fn rd, void *arg,
    struct rn_kframebuf *fb, int32_t max);

#endif /* RN_KFRAME_H */
