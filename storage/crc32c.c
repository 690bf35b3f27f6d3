/*
 * CRC32C: slicing-by-8 tables in software, the SSE4.2 crc32 instruction in
 * hardware. The hardware path runs three independent CRC streams over
 * adjacent blocks to hide the instruction's 3-cycle latency, then merges
 * them with a precomputed "append N zero bytes" operator.
 */
#include "storage/crc32c.h"

#include <endian.h>
#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#define POLY 0x82f63b78u	/* Castagnoli, bit-reflected */

/* Per-lane block sizes for the interleaved hardware loop. */
#define LONG_BLOCK 8192
#define SHORT_BLOCK 256

static uint32_t sw_table[8][256];
static uint32_t x2n_table[64];	/* x^(2^k) mod P */
static uint32_t long_shift[4][256];
static uint32_t short_shift[4][256];
static int hw_ok;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* a*b mod P in the reflected representation (bit 31 is x^0). */
static uint32_t
gf2_mulmod(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (uint32_t m = 0x80000000u; m != 0; m >>= 1) {
		if (a & m)
			p ^= b;
		b = (b & 1) ? (b >> 1) ^ POLY : b >> 1;
	}
	return p;
}

/* x^(8*n) mod P: the operator that feeds n zero bytes through a CRC. */
static uint32_t
xpow8n(uint64_t n)
{
	uint32_t r = 0x80000000u;
	int k = 3;	/* start at x^8 = x^(2^3) */

	while (n != 0) {
		if (n & 1)
			r = gf2_mulmod(x2n_table[k & 63], r);
		n >>= 1;
		k++;
	}
	return r;
}

static void
build_shift(uint32_t tab[4][256], uint64_t nbytes)
{
	uint32_t op = xpow8n(nbytes);

	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++)
			tab[k][b] = gf2_mulmod(op, b << (8 * k));
}

static void
crc32c_init(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
		sw_table[0][n] = c;
	}
	for (uint32_t n = 0; n < 256; n++)
		for (int k = 1; k < 8; k++)
			sw_table[k][n] = (sw_table[k - 1][n] >> 8) ^
			    sw_table[0][sw_table[k - 1][n] & 0xff];

	x2n_table[0] = 0x40000000u;	/* x^1 */
	for (int k = 1; k < 64; k++)
		x2n_table[k] = gf2_mulmod(x2n_table[k - 1], x2n_table[k - 1]);

	build_shift(long_shift, LONG_BLOCK);
	build_shift(short_shift, SHORT_BLOCK);
#if defined(__x86_64__)
	__builtin_cpu_init();
	hw_ok = __builtin_cpu_supports("sse4.2");
#endif
}

static inline void
ensure_init(void)
{
	pthread_once(&init_once, crc32c_init);
}

int
rn_crc32c_hw_available(void)
{
	ensure_init();
	return hw_ok;
}

static inline uint32_t
load32le(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

/* Raw (no pre/post inversion) table CRC update. */
static uint32_t
sw_update(uint32_t c, const unsigned char *p, size_t len)
{
	while (len != 0 && ((uintptr_t)p & 7) != 0) {
		c = sw_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo = load32le(p) ^ c, hi = load32le(p + 4);

		c = sw_table[7][lo & 0xff] ^ sw_table[6][(lo >> 8) & 0xff] ^
		    sw_table[5][(lo >> 16) & 0xff] ^ sw_table[4][lo >> 24] ^
		    sw_table[3][hi & 0xff] ^ sw_table[2][(hi >> 8) & 0xff] ^
		    sw_table[1][(hi >> 16) & 0xff] ^ sw_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len-- != 0)
		c = sw_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

uint32_t
rn_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	ensure_init();
	return ~sw_update(~crc, buf, len);
}

#if defined(__x86_64__)
static inline uint64_t
shift_apply(const uint32_t tab[4][256], uint64_t c)
{
	return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^
	    tab[2][(c >> 16) & 0xff] ^ tab[3][(c >> 24) & 0xff];
}

static inline uint64_t
load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Whole runs of three lanes of block bytes each, merged by shifting. */
__attribute__((target("sse4.2"))) static inline uint64_t
hw_lanes(uint64_t c0, const unsigned char **pp, size_t *lenp, size_t block,
    const uint32_t shift[4][256])
{
	const unsigned char *p = *pp;
	size_t len = *lenp;

	while (len >= 3 * block) {
		uint64_t c1 = 0, c2 = 0;
		const unsigned char *end = p + block;

		do {
			c0 = _mm_crc32_u64(c0, load64(p));
			c1 = _mm_crc32_u64(c1, load64(p + block));
			c2 = _mm_crc32_u64(c2, load64(p + 2 * block));
			p += 8;
		} while (p < end);
		c0 = shift_apply(shift, c0) ^ c1;
		c0 = shift_apply(shift, c0) ^ c2;
		p += 2 * block;
		len -= 3 * block;
	}
	*pp = p;
	*lenp = len;
	return c0;
}

__attribute__((target("sse4.2"))) static uint32_t
hw_update(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c0 = crc;

	while (len != 0 && ((uintptr_t)p & 7) != 0) {
		c0 = _mm_crc32_u8((uint32_t)c0, *p++);
		len--;
	}
	/* Three lanes of LONG_BLOCK, then of SHORT_BLOCK, merged by shifting. */
	c0 = hw_lanes(c0, &p, &len, LONG_BLOCK, long_shift);
	c0 = hw_lanes(c0, &p, &len, SHORT_BLOCK, short_shift);
	while (len >= 8) {
		c0 = _mm_crc32_u64(c0, load64(p));
		p += 8;
		len -= 8;
	}
	while (len-- != 0)
		c0 = _mm_crc32_u8((uint32_t)c0, *p++);
	return (uint32_t)c0;
}

uint32_t
rn_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	ensure_init();
	return ~hw_update(~crc, buf, len);
}
#else
uint32_t
rn_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return rn_crc32c_sw(crc, buf, len);
}
#endif

uint32_t
rn_crc32c(uint32_t crc, const void *buf, size_t len)
{
	ensure_init();
#if defined(__x86_64__)
	if (hw_ok)
		return ~hw_update(~crc, buf, len);
#endif
	return ~sw_update(~crc, buf, len);
}

uint32_t
rn_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
	ensure_init();
	return gf2_mulmod(xpow8n(len2), crc1) ^ crc2;
}

uint32_t
rn_crc32c_patch(uint32_t old_crc, uint64_t len, const void *xor_delta,
    size_t delta_len)
{
	/*
	 * CRC is affine: crc(M ^ D) = crc(M) ^ raw(D), where raw is the CRC
	 * without inversions. D is zero past delta_len, so raw(D) is the raw
	 * CRC of the prefix fed through (len - delta_len) zero bytes.
	 */
	uint32_t c;

	ensure_init();
	if (delta_len > len)
		delta_len = (size_t)len;
	c = sw_update(0, xor_delta, delta_len);
	return old_crc ^ gf2_mulmod(xpow8n(len - delta_len), c);
}
