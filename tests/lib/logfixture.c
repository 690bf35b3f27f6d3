/*
 * Helpers for the C unit tests of a partition log (see logfixture.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* nftw */
#endif
#include "tests/lib/logfixture.h"
#include "storage/bytes.h"
#include "storage/crc32c.h"
#include "tests/lib/tap.h"

#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void
lf_rm_rf(const char *path)
{
	nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

uint32_t
lf_mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	x ^= x >> 16;
	return x;
}

/* One uncompressed batch of nrec records with vsize-byte values. */
size_t
lf_mk_batch(uint8_t *buf, size_t cap, int nrec, int vsize, int64_t ts, uint32_t seed)
{
	static uint8_t val[65536];
	struct rn_record_in recs[256];
	struct rn_batch_build_opts o;
	char key[256][16];
	ssize_t n;

	rn_batch_build_opts_default(&o);
	for (int i = 0; i < vsize && i < (int)sizeof(val); i++)
		val[i] = (uint8_t)lf_mix(seed + (uint32_t)i);
	for (int i = 0; i < nrec; i++) {
		snprintf(key[i], sizeof(key[i]), "k%u-%d", seed, i);
		recs[i] = (struct rn_record_in){
			.key = key[i], .key_len = (int32_t)strlen(key[i]),
			.value = val, .value_len = vsize, .timestamp = ts,
		};
	}
	n = rn_batch_build(buf, cap, &o, recs, nrec);
	if (n < 0)
		bail("rn_batch_build: %zd", n);
	return (size_t)n;
}

/*
 * Read everything from `from` to the log end in max_bytes slices, checking
 * every batch (CRC, framing) and that offsets are contiguous. Returns the
 * end offset reached or a negative error; counts batches, digests bytes.
 */
int64_t
lf_check_all(struct rn_log *log, int64_t from, int64_t max_bytes, int64_t *nbatches,
    uint32_t *digest)
{
	static uint8_t buf[4 << 20];
	struct rn_batch_limits lim = { RN_BATCH_V_REPLICA, 0 };
	int64_t off = from, leo = rn_log_end_offset(log), nb = 0;
	uint32_t d = 0;

	while (off < leo) {
		struct rn_log_slice sl;
		size_t p = 0, len;
		int64_t first;
		int rc = rn_log_read(log, off, max_bytes, -1, &sl);

		if (rc < 0)
			return rc;
		if (sl.len <= 0 || sl.len > (int64_t)sizeof(buf))
			return -1000;
		if (pread(sl.fd, buf, (size_t)sl.len, sl.file_pos) != sl.len)
			return -1001;
		len = (size_t)sl.len;
		first = sl.first_offset;
		rn_log_slice_release(log, &sl);
		while (p < len) {
			struct rn_batch_header h;
			size_t sz;

			rn_batch_parse_header(buf + p, &h);
			sz = rn_batch_total_size(&h);
			if (p + sz > len)
				return -1002;	/* partial batch returned */
			if (rn_batch_validate(buf + p, sz, &lim, NULL) != 0)
				return -1003;
			if (p == 0 ? !(h.base_offset <= off && rn_batch_last_offset(&h) >= off) :
			    h.base_offset != off)
				return -1004;
			if (p == 0 && h.base_offset != first)
				return -1005;
			d = rn_crc32c(d, buf + p, sz);
			off = rn_batch_last_offset(&h) + 1;
			nb++;
			p += sz;
		}
	}
	if (nbatches)
		*nbatches = nb;
	if (digest)
		*digest = d;
	return off;
}

struct rn_log_config
lf_small_config(void)
{
	struct rn_log_config c = rn_log_config_default();

	c.segment_bytes = 128 * 1024;
	c.segment_index_bytes = 16 * 1024;
	c.index_interval_bytes = 1024;
	c.retention_ms = -1;
	return c;
}

uint8_t lf_pbuf[1 << 20];

/* Append `count` batches of varied shapes; returns 0 if offsets were contiguous. */
int
lf_append_varied(struct rn_log *log, int count, uint32_t seed, int64_t ts, int64_t now,
    int *rolls)
{
	for (int i = 0; i < count; i++) {
		uint32_t r = lf_mix(seed + (uint32_t)i);
		int nrec = 1 + (int)(r % 20), vsize = 10 + (int)((r >> 8) % 2000);
		size_t n = lf_mk_batch(lf_pbuf, sizeof(lf_pbuf), nrec, vsize, ts, seed + (uint32_t)i);
		int64_t leo = rn_log_end_offset(log);
		struct rn_append_info info;
		int rc = rn_log_append(log, lf_pbuf, n, 1, now, &info);

		if (rc < 0) {
			diag("append %d: %d", i, rc);
			return rc;
		}
		if (info.base_offset != leo || info.last_offset != leo + nrec - 1 ||
		    rn_log_end_offset(log) != leo + nrec)
			return -1;
		if (rolls && info.rolled)
			(*rolls)++;
	}
	return 0;
}
