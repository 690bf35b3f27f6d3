/*
 * A bound on what msgpack-c allocates for a message from outside.
 * msgpack-c reserves an array's or a map's elements when it reads the
 * container's header, before reading them: an array32 header of 5 bytes
 * can have it ask malloc for 64 GiB. A message is walked first and
 * refused unless its first object is complete and no container in it
 * announces more elements than bytes are left (each takes one at least);
 * what msgpack-c then allocates is at most 16 bytes per byte of input.
 */
#ifndef RN_MPBOUND_H
#define RN_MPBOUND_H

#include <stddef.h>

#include <msgpack.h>

/* The length of buf's first object when it passes the walk, else 0. */
size_t rn_mp_bounded(const void *buf, size_t len);

/*
 * msgpack_unpack_next over buf's first object once rn_mp_bounded passed
 * it; MSGPACK_UNPACK_PARSE_ERROR (up left empty) when it did not.
 */
msgpack_unpack_return rn_mp_unpack(msgpack_unpacked *up, const void *buf,
    size_t len);

#endif /* RN_MPBOUND_H */
