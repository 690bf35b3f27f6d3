/* RecordBatch compression codecs over zlib, snappy, lz4 and zstd. */
#include "storage/codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "storage/batch.h"
#include "storage/bytes.h"

/* The framing Java clients put around snappy blocks (xerial). */
static const uint8_t xerial_magic[8] = { 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0 };
#define XERIAL_HEADER 16
#define XERIAL_BLOCK 32768

/* Contexts are kept: a process opens many batches, one at a time. */
static ZSTD_DCtx *zdctx;
static ZSTD_CCtx *zcctx;
static LZ4F_dctx *lz4dctx;

int
rn_buf_reserve(struct rn_buf *b, size_t cap)
{
	uint8_t *np;
	size_t ncap;

	if (cap <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 4096;
	while (ncap < cap)
		ncap *= 2;
	if ((np = realloc(b->p, ncap)) == NULL)
		return -ENOMEM;
	b->p = np;
	b->cap = ncap;
	return 0;
}

void
rn_buf_free(struct rn_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* Room for at least want more bytes past len, bounded by max. */
static int
grow(struct rn_buf *b, size_t want, size_t max)
{
	if (b->len >= max)
		return -EFBIG;
	if (want > max - b->len)
		want = max - b->len;
	return rn_buf_reserve(b, b->len + want);
}

/* Room to decompress into: the buffer's, never past max. */
static size_t
room(const struct rn_buf *b, size_t max)
{
	size_t end = b->cap < max ? b->cap : max;

	return end - b->len;
}

static int
gzip_decompress(const uint8_t *in, size_t len, struct rn_buf *out, size_t max)
{
	z_stream zs;
	int zr, rc = 0;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return -ENOMEM;
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	do {
		if ((rc = grow(out, len * 4 + 1024, max)) < 0)
			break;
		zs.next_out = out->p + out->len;
		zs.avail_out = (uInt)room(out, max);
		zr = inflate(&zs, Z_NO_FLUSH);
		out->len = (size_t)(zs.next_out - out->p);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			rc = -EBADMSG;
		else if (zr == Z_BUF_ERROR && zs.avail_in == 0)
			rc = -EBADMSG;	/* truncated stream */
		if (zr == Z_STREAM_END)
			break;
	} while (rc == 0);
	inflateEnd(&zs);
	return rc;
}

static int
gzip_compress(const uint8_t *in, size_t len, struct rn_buf *out)
{
	z_stream zs;
	int rc;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
	    Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	rc = rn_buf_reserve(out, deflateBound(&zs, (uLong)len) + 32);
	if (rc == 0) {
		zs.next_in = (Bytef *)(uintptr_t)in;
		zs.avail_in = (uInt)len;
		zs.next_out = out->p;
		zs.avail_out = (uInt)out->cap;
		rc = deflate(&zs, Z_FINISH) == Z_STREAM_END ? 0 : -EIO;
		out->len = out->cap - zs.avail_out;
	}
	deflateEnd(&zs);
	return rc;
}

static int
snappy_block(const uint8_t *in, size_t len, struct rn_buf *out, size_t max)
{
	size_t n;
	int rc;

	if (snappy_uncompressed_length((const char *)in, len, &n) != SNAPPY_OK)
		return -EBADMSG;
	if (n > max - out->len)
		return -EFBIG;
	if ((rc = rn_buf_reserve(out, out->len + n + 1)) < 0)
		return rc;
	if (snappy_uncompress((const char *)in, len, (char *)out->p + out->len,
	    &n) != SNAPPY_OK)
		return -EBADMSG;
	out->len += n;
	return 0;
}

static int
snappy_decompress(const uint8_t *in, size_t len, struct rn_buf *out, size_t max)
{
	size_t pos = XERIAL_HEADER;
	int rc;

	if (len < XERIAL_HEADER || memcmp(in, xerial_magic, 8) != 0)
		return snappy_block(in, len, out, max);
	while (pos < len) {
		uint32_t blen;

		if (len - pos < 4)
			return -EBADMSG;
		blen = rn_get_be32(in + pos);
		pos += 4;
		if (blen > len - pos)
			return -EBADMSG;
		if ((rc = snappy_block(in + pos, blen, out, max)) < 0)
			return rc;
		pos += blen;
	}
	return 0;
}

static int
snappy_compress_x(const uint8_t *in, size_t len, struct rn_buf *out)
{
	size_t nblocks = len / XERIAL_BLOCK + 1, pos = 0;
	int rc;

	rc = rn_buf_reserve(out, XERIAL_HEADER + nblocks *
	    (4 + snappy_max_compressed_length(XERIAL_BLOCK)));
	if (rc < 0)
		return rc;
	memcpy(out->p, xerial_magic, 8);
	rn_put_be32(out->p + 8, 1);	/* version */
	rn_put_be32(out->p + 12, 1);	/* compatible version */
	out->len = XERIAL_HEADER;
	while (pos < len) {
		size_t chunk = len - pos < XERIAL_BLOCK ? len - pos : XERIAL_BLOCK;
		size_t clen = out->cap - out->len - 4;

		if (snappy_compress((const char *)in + pos, chunk,
		    (char *)out->p + out->len + 4, &clen) != SNAPPY_OK)
			return -EIO;
		rn_put_be32(out->p + out->len, (uint32_t)clen);
		out->len += 4 + clen;
		pos += chunk;
	}
	return 0;
}

static int
lz4_decompress(const uint8_t *in, size_t len, struct rn_buf *out, size_t max)
{
	size_t pos = 0;
	int rc = 0;

	if (lz4dctx == NULL &&
	    LZ4F_isError(LZ4F_createDecompressionContext(&lz4dctx, LZ4F_VERSION)))
		return -ENOMEM;
	LZ4F_resetDecompressionContext(lz4dctx);
	while (pos < len) {
		size_t src = len - pos, dst, r;

		if ((rc = grow(out, len * 4 + 65536, max)) < 0)
			return rc;
		dst = room(out, max);
		r = LZ4F_decompress(lz4dctx, out->p + out->len, &dst, in + pos,
		    &src, NULL);
		if (LZ4F_isError(r))
			return -EBADMSG;
		out->len += dst;
		pos += src;
		if (r == 0)
			break;
		if (src == 0 && dst == 0)
			return -EBADMSG;
	}
	return 0;
}

static int
lz4_compress(const uint8_t *in, size_t len, struct rn_buf *out)
{
	LZ4F_preferences_t prefs;
	size_t n;
	int rc;

	/* Independent 64 KiB blocks, no checksums: what every client reads. */
	memset(&prefs, 0, sizeof(prefs));
	prefs.frameInfo.blockSizeID = LZ4F_max64KB;
	prefs.frameInfo.blockMode = LZ4F_blockIndependent;
	if ((rc = rn_buf_reserve(out, LZ4F_compressFrameBound(len, &prefs))) < 0)
		return rc;
	n = LZ4F_compressFrame(out->p, out->cap, in, len, &prefs);
	if (LZ4F_isError(n))
		return -EIO;
	out->len = n;
	return 0;
}

static int
zstd_decompress(const uint8_t *in, size_t len, struct rn_buf *out, size_t max)
{
	ZSTD_inBuffer ib = { in, len, 0 };
	int rc;

	if (zdctx == NULL && (zdctx = ZSTD_createDCtx()) == NULL)
		return -ENOMEM;
	ZSTD_DCtx_reset(zdctx, ZSTD_reset_session_only);
	while (ib.pos < ib.size) {
		ZSTD_outBuffer ob;
		size_t r;

		if ((rc = grow(out, len * 4 + 65536, max)) < 0)
			return rc;
		ob.dst = out->p + out->len;
		ob.size = room(out, max);
		ob.pos = 0;
		r = ZSTD_decompressStream(zdctx, &ob, &ib);
		if (ZSTD_isError(r))
			return -EBADMSG;
		out->len += ob.pos;
		if (r == 0 && ib.pos == ib.size)
			break;
		if (ob.pos == 0 && ib.pos == ib.size)
			return -EBADMSG;	/* truncated frame */
	}
	return 0;
}

static int
zstd_compress(const uint8_t *in, size_t len, struct rn_buf *out)
{
	size_t n;
	int rc;

	if (zcctx == NULL && (zcctx = ZSTD_createCCtx()) == NULL)
		return -ENOMEM;
	if ((rc = rn_buf_reserve(out, ZSTD_compressBound(len))) < 0)
		return rc;
	n = ZSTD_compressCCtx(zcctx, out->p, out->cap, in, len, 3);
	if (ZSTD_isError(n))
		return -EIO;
	out->len = n;
	return 0;
}

int
rn_codec_decompress(int codec, const uint8_t *in, size_t len,
    struct rn_buf *out, size_t max_out)
{
	out->len = 0;
	switch (codec) {
	case RN_COMPRESSION_GZIP:
		return gzip_decompress(in, len, out, max_out);
	case RN_COMPRESSION_SNAPPY:
		return snappy_decompress(in, len, out, max_out);
	case RN_COMPRESSION_LZ4:
		return lz4_decompress(in, len, out, max_out);
	case RN_COMPRESSION_ZSTD:
		return zstd_decompress(in, len, out, max_out);
	}
	return -ENOTSUP;
}

int
rn_codec_compress(int codec, const uint8_t *in, size_t len, struct rn_buf *out)
{
	out->len = 0;
	switch (codec) {
	case RN_COMPRESSION_GZIP:
		return gzip_compress(in, len, out);
	case RN_COMPRESSION_SNAPPY:
		return snappy_compress_x(in, len, out);
	case RN_COMPRESSION_LZ4:
		return lz4_compress(in, len, out);
	case RN_COMPRESSION_ZSTD:
		return zstd_compress(in, len, out);
	}
	return -ENOTSUP;
}
