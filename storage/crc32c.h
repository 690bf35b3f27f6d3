/*
 * CRC32C (Castagnoli), the checksum of Kafka's RecordBatch v2.
 *
 * rn_crc32c() picks the SSE4.2 implementation when the CPU has it and a
 * table-driven one otherwise. All functions take the CRC of the data so far
 * (0 for none) and return the CRC including buf, so rn_crc32c(0, "123456789",
 * 9) == 0xE3069283.
 */
#ifndef RN_STORAGE_CRC32C_H
#define RN_STORAGE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t rn_crc32c(uint32_t crc, const void *buf, size_t len);

/* Portable slicing-by-8 version; always available. */
uint32_t rn_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* SSE4.2 version; only call it when rn_crc32c_hw_available(). */
uint32_t rn_crc32c_hw(uint32_t crc, const void *buf, size_t len);
int rn_crc32c_hw_available(void);

/* CRC of A||B from crc(A), crc(B) and len(B); O(log len2). */
uint32_t rn_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

/*
 * CRC of a buffer after some of its bytes changed, without reading it again.
 * old_crc is the CRC of the whole len-byte buffer; xor_delta is old^new for
 * its first delta_len bytes (the rest unchanged). Used to fix a batch CRC
 * after rewriting header fields near its start.
 */
uint32_t rn_crc32c_patch(uint32_t old_crc, uint64_t len,
    const void *xor_delta, size_t delta_len);

#endif /* RN_STORAGE_CRC32C_H */
