/*
 * The compression codecs of RecordBatch v2, over the system libraries:
 * gzip (zlib), snappy (raw blocks, or the xerial framing Java clients
 * write), lz4 (frame format) and zstd. Used where a batch must be opened:
 * the log cleaner, which rewrites the records of a batch it keeps in part
 * and recompresses them with the batch's own codec, and the produce check
 * of compacted topics.
 */
#ifndef RN_STORAGE_CODEC_H
#define RN_STORAGE_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer, reused across calls (grow-only). */
struct rn_buf {
	uint8_t *p;
	size_t len;
	size_t cap;
};

int rn_buf_reserve(struct rn_buf *b, size_t cap);
void rn_buf_free(struct rn_buf *b);

/*
 * Decompress in[0..len) of codec (RN_COMPRESSION_*) into out (replacing
 * its contents), refusing output larger than max_out. 0, -EBADMSG for
 * corrupt input, -EFBIG past max_out, -ENOMEM, -ENOTSUP.
 */
int rn_codec_decompress(int codec, const uint8_t *in, size_t len,
    struct rn_buf *out, size_t max_out);

/* Compress in[0..len) into out (replacing its contents). 0 or -errno. */
int rn_codec_compress(int codec, const uint8_t *in, size_t len,
    struct rn_buf *out);

#endif /* RN_STORAGE_CODEC_H */
