/*
 * rn_mp_bounded / rn_mp_unpack (common/mpbound.c): every msgpack type
 * msgpack-c packs is walked to its exact length; truncated messages and
 * containers announcing more elements than bytes are left are refused
 * before msgpack-c reserves room for them.
 */
#include "autoconf.h"

#include <stdint.h>
#include <string.h>

#include <msgpack.h>

#include "common/mpbound.h"
#include "tests/lib/tap.h"

/* Every type once, nested: what the control socket and records use and
 * what they do not (floats, ext, bin, wide ints). */
static void
pack_all(msgpack_packer *pk)
{
	static const char blob[300];
	char str[70000];

	memset(str, 'x', sizeof(str));
	msgpack_pack_map(pk, 3);
	msgpack_pack_str(pk, 1);
	msgpack_pack_str_body(pk, "a", 1);
	msgpack_pack_array(pk, 20);
	msgpack_pack_nil(pk);
	msgpack_pack_true(pk);
	msgpack_pack_false(pk);
	msgpack_pack_int8(pk, -100);
	msgpack_pack_int16(pk, -30000);
	msgpack_pack_int32(pk, -2000000000);
	msgpack_pack_int64(pk, INT64_MIN);
	msgpack_pack_uint8(pk, 200);
	msgpack_pack_uint16(pk, 60000);
	msgpack_pack_uint32(pk, 4000000000u);
	msgpack_pack_uint64(pk, UINT64_MAX);
	msgpack_pack_float(pk, 1.5f);
	msgpack_pack_double(pk, 2.5);
	msgpack_pack_bin(pk, sizeof(blob));
	msgpack_pack_bin_body(pk, blob, sizeof(blob));
	msgpack_pack_str(pk, 40);		/* str8 */
	msgpack_pack_str_body(pk, str, 40);
	msgpack_pack_str(pk, 300);		/* str16 */
	msgpack_pack_str_body(pk, str, 300);
	msgpack_pack_str(pk, sizeof(str));	/* str32 */
	msgpack_pack_str_body(pk, str, sizeof(str));
	msgpack_pack_ext(pk, 1, 7);		/* fixext1 */
	msgpack_pack_ext_body(pk, blob, 1);
	msgpack_pack_ext(pk, 3, 7);		/* ext8 */
	msgpack_pack_ext_body(pk, blob, 3);
	msgpack_pack_ext(pk, 16, 7);		/* fixext16 */
	msgpack_pack_ext_body(pk, blob, 16);
	msgpack_pack_str(pk, 1);
	msgpack_pack_str_body(pk, "b", 1);
	msgpack_pack_array(pk, 20);		/* array16 */
	for (int i = 0; i < 20; i++)
		msgpack_pack_map(pk, 0);
	msgpack_pack_str(pk, 1);
	msgpack_pack_str_body(pk, "c", 1);
	msgpack_pack_map(pk, 17);		/* map16 */
	for (int i = 0; i < 17; i++) {
		msgpack_pack_int(pk, i);
		msgpack_pack_array(pk, 0);
	}
}

int
main(void)
{
	static const uint8_t huge_array[] = { 0xdd, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t huge_map[] = { 0xdf, 0x10, 0x00, 0x00, 0x00,
	    0xc0, 0xc0 };
	static const uint8_t long_str[] = { 0xdb, 0x00, 0x00, 0x01, 0x00,
	    'a' };
	static const uint8_t unused[] = { 0xc1 };
	static const uint8_t nested[] = { 0x91, 0x91, 0x91, 0x90, 0xc0 };
	msgpack_sbuffer sb;
	msgpack_packer pk;
	msgpack_unpacked up;
	size_t n, i, refused = 0;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_all(&pk);
	is_int((long long)rn_mp_bounded(sb.data, sb.size), (long long)sb.size,
	    "every type, nested: walked to its end (%zu bytes)", sb.size);
	msgpack_pack_nil(&pk);		/* what follows the first object */
	is_int((long long)rn_mp_bounded(sb.data, sb.size),
	    (long long)sb.size - 1, "bytes after the first object are not its");
	for (i = 0; i < sb.size - 1; i++)
		if (rn_mp_bounded(sb.data, i) == 0)
			refused++;
	is_int((long long)refused, (long long)sb.size - 1,
	    "every truncation of it refused");
	msgpack_unpacked_init(&up);
	ok(rn_mp_unpack(&up, sb.data, sb.size) == MSGPACK_UNPACK_SUCCESS &&
	    up.data.type == MSGPACK_OBJECT_MAP && up.data.via.map.size == 3,
	    "rn_mp_unpack unpacks what it passes");
	msgpack_unpacked_destroy(&up);

	is_int((long long)rn_mp_bounded(huge_array, sizeof(huge_array)), 0,
	    "an array32 of 2^32-1 elements in 5 bytes: refused");
	is_int((long long)rn_mp_bounded(huge_map, sizeof(huge_map)), 0,
	    "a map32 announcing 2^28 pairs: refused");
	is_int((long long)rn_mp_bounded(long_str, sizeof(long_str)), 0,
	    "a str32 longer than the message: refused");
	is_int((long long)rn_mp_bounded(unused, sizeof(unused)), 0,
	    "0xc1 (never used): refused");
	is_int((long long)rn_mp_bounded(nested, sizeof(nested)), 4,
	    "nested arrays: walked to the innermost's end");
	n = rn_mp_bounded("", 0);
	is_int((long long)n, 0, "nothing: refused");
	msgpack_unpacked_init(&up);
	ok(rn_mp_unpack(&up, huge_array, sizeof(huge_array)) ==
	    MSGPACK_UNPACK_PARSE_ERROR, "rn_mp_unpack refuses what the walk "
	    "refused, without unpacking");
	msgpack_unpacked_destroy(&up);
	msgpack_sbuffer_destroy(&sb);
	return done_testing();
}
