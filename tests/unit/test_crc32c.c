/* CRC32C: known vectors, hardware vs software, combine/patch, throughput. */
#include "storage/crc32c.h"
#include "tests/lib/tap.h"

#include <time.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t
rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
throughput(uint32_t (*fn)(uint32_t, const void *, size_t),
    const unsigned char *buf, size_t len)
{
	volatile uint32_t sink = 0;
	double t0 = now_s(), t;
	size_t total = 0;

	do {
		for (int i = 0; i < 16; i++) {
			sink ^= fn(0, buf, len);
			total += len;
		}
		t = now_s() - t0;
	} while (t < 0.25);
	(void)sink;
	return total / t / 1e9;
}

int
main(void)
{
	static const unsigned char zeros[32], ones[32] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	unsigned char incr[32];
	size_t big = 1 << 20;
	unsigned char *buf = malloc(big + 64);
	int hw = rn_crc32c_hw_available();
	int mismatches = 0, split_bad = 0, combine_bad = 0, patch_bad = 0;

	if (buf == NULL)
		bail("malloc");
	plan(12);

	is_int(rn_crc32c(0, "123456789", 9), 0xE3069283u, "crc32c(123456789)");
	is_int(rn_crc32c_sw(0, "123456789", 9), 0xE3069283u, "sw crc32c(123456789)");
	is_int(rn_crc32c(0, "", 0), 0, "crc32c of nothing is 0");
	/* RFC 3720 (iSCSI) B.4 test patterns. */
	for (int i = 0; i < 32; i++)
		incr[i] = (unsigned char)i;
	is_int(rn_crc32c(0, zeros, 32), 0x8A9136AAu, "32 zero bytes");
	is_int(rn_crc32c(0, ones, 32), 0x62A8AB43u, "32 0xff bytes");
	is_int(rn_crc32c(0, incr, 32), 0x46DD794Eu, "32 incrementing bytes");

	for (size_t i = 0; i < big + 64; i++)
		buf[i] = (unsigned char)rng();
	/* Random lengths and misalignments cover every loop of both paths. */
	for (int i = 0; i < 2000; i++) {
		size_t len = i < 1000 ? rng() % 2048 : rng() % big;
		size_t off = rng() % 64;

		if (off + len > big + 64)
			len = big + 64 - off;
		if (rn_crc32c_hw(0, buf + off, len) != rn_crc32c_sw(0, buf + off, len))
			mismatches++;
		if (len > 1) {
			size_t cut = rng() % len;
			uint32_t a = rn_crc32c(0, buf + off, cut);
			uint32_t whole = rn_crc32c(0, buf + off, len);

			if (rn_crc32c(a, buf + off + cut, len - cut) != whole)
				split_bad++;
			if (rn_crc32c_combine(a, rn_crc32c(0, buf + off + cut,
			    len - cut), len - cut) != whole)
				combine_bad++;
		}
	}
	if (!hw)
		diag("no SSE4.2: hardware path falls back to software");
	is_int(mismatches, 0, "hw == sw on 2000 random buffers");
	is_int(split_bad, 0, "incremental crc == one-shot crc");
	is_int(combine_bad, 0, "combine(crc(A), crc(B), |B|) == crc(AB)");

	for (int i = 0; i < 200; i++) {
		size_t len = 16 + rng() % 100000, dlen = 1 + rng() % 16;
		unsigned char delta[16];
		uint32_t before = rn_crc32c(0, buf, len);

		for (size_t j = 0; j < dlen; j++) {
			delta[j] = (unsigned char)rng();
			buf[j] ^= delta[j];
		}
		if (rn_crc32c_patch(before, len, delta, dlen) != rn_crc32c(0, buf, len))
			patch_bad++;
	}
	is_int(patch_bad, 0, "patch after rewriting a prefix == recomputed crc");

	{
		double sw = throughput(rn_crc32c_sw, buf, big);
		double hwt = throughput(rn_crc32c, buf, big);
		double small = throughput(rn_crc32c, buf, 1024);

		diag("crc32c software: %.2f GB/s", sw);
		diag("crc32c %s (1 MiB buffers): %.2f GB/s", hw ? "sse4.2" : "sw", hwt);
		diag("crc32c %s (1 KiB buffers): %.2f GB/s", hw ? "sse4.2" : "sw", small);
		ok(sw > 0.1, "software path is at least 0.1 GB/s");
		ok(!hw || hwt > sw, "hardware path is faster than software");
	}
	free(buf);
	return done_testing();
}
