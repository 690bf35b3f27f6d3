/* Walking a msgpack message before msgpack-c unpacks it (mpbound.h). */
#include "autoconf.h"

#include <stdbool.h>
#include <stdint.h>

#include "common/mpbound.h"

/* A k-byte big-endian length at *pos, moved past; false past len. */
static bool
get_len(const uint8_t *p, size_t len, size_t *pos, int k, uint64_t *out)
{
	uint64_t v = 0;
	int i;

	if ((size_t)k > len - *pos)
		return false;
	for (i = 0; i < k; i++)
		v = v << 8 | p[(*pos)++];
	*out = v;
	return true;
}

size_t
rn_mp_bounded(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t pending = 1;	/* objects announced, not read yet */
	size_t pos = 0;

	while (pending > 0) {
		uint64_t skip = 0, elems = 0, l;
		uint8_t b;

		/* every object still to read takes a byte at least */
		if (pos >= len || pending > len - pos)
			return 0;
		b = p[pos++];
		pending--;
		if (b <= 0x7f || b >= 0xe0)
			continue;			/* fixint */
		if (b <= 0x8f)
			elems = 2 * (uint64_t)(b & 0x0f);	/* fixmap */
		else if (b <= 0x9f)
			elems = b & 0x0f;		/* fixarray */
		else if (b <= 0xbf)
			skip = b & 0x1f;		/* fixstr */
		else switch (b) {
		case 0xc0: case 0xc2: case 0xc3:	/* nil, false, true */
			break;
		case 0xc4: case 0xd9:			/* bin8, str8 */
		case 0xc5: case 0xda:			/* bin16, str16 */
		case 0xc6: case 0xdb:			/* bin32, str32 */
			if (!get_len(p, len, &pos, b == 0xc4 || b == 0xd9 ? 1 :
			    b == 0xc5 || b == 0xda ? 2 : 4, &skip))
				return 0;
			break;
		case 0xc7: case 0xc8: case 0xc9:	/* ext 8, 16, 32 */
			if (!get_len(p, len, &pos, b == 0xc7 ? 1 : b == 0xc8 ?
			    2 : 4, &l))
				return 0;
			skip = l + 1;			/* its type byte */
			break;
		case 0xca: case 0xce: case 0xd2:	/* float32, 32-bit ints */
			skip = 4;
			break;
		case 0xcb: case 0xcf: case 0xd3:	/* float64, 64-bit ints */
			skip = 8;
			break;
		case 0xcc: case 0xd0:
			skip = 1;
			break;
		case 0xcd: case 0xd1:
			skip = 2;
			break;
		case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
			skip = 1 + (1u << (b - 0xd4));	/* fixext: type, data */
			break;
		case 0xdc: case 0xdd:			/* array 16, 32 */
			if (!get_len(p, len, &pos, b == 0xdc ? 2 : 4, &elems))
				return 0;
			break;
		case 0xde: case 0xdf:			/* map 16, 32 */
			if (!get_len(p, len, &pos, b == 0xde ? 2 : 4, &l))
				return 0;
			elems = 2 * l;
			break;
		default:				/* 0xc1: never used */
			return 0;
		}
		if (skip > len - pos)
			return 0;
		pos += (size_t)skip;
		pending += elems;
	}
	return pos;
}

msgpack_unpack_return
rn_mp_unpack(msgpack_unpacked *up, const void *buf, size_t len)
{
	size_t n = rn_mp_bounded(buf, len);

	if (n == 0)
		return MSGPACK_UNPACK_PARSE_ERROR;
	return msgpack_unpack_next(up, buf, n, NULL);
}
