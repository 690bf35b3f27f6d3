/*
 * For the fuzz targets that feed record batches: recompute each framed
 * batch's CRC, so mutated bodies reach what reads past the checksum
 * instead of stopping there.
 */
#ifndef RN_FUZZ_FIX_CRCS_H
#define RN_FUZZ_FIX_CRCS_H

#include <stddef.h>
#include <stdint.h>

#include "storage/batch.h"
#include "storage/bytes.h"

static inline void
fuzz_fix_crcs(uint8_t *b, size_t len)
{
	size_t off = 0;

	while (len - off >= RN_BATCH_HEADER_SIZE) {
		int32_t blen = (int32_t)rn_get_be32(b + off + RN_BATCH_OFF_LENGTH);
		size_t sz;

		if (blen < RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD)
			return;
		sz = (size_t)blen + RN_BATCH_LOG_OVERHEAD;
		if (sz > len - off)
			return;
		rn_put_be32(b + off + RN_BATCH_OFF_CRC,
		    rn_batch_compute_crc(b + off, sz));
		off += sz;
	}
}

#endif
