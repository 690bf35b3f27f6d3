/* Big-endian field access for Kafka's on-disk formats (unaligned-safe). */
#ifndef RN_STORAGE_BYTES_H
#define RN_STORAGE_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t
rn_get_be16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return be16toh(v);
}

static inline uint32_t
rn_get_be32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static inline uint64_t
rn_get_be64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static inline void
rn_put_be16(void *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static inline void
rn_put_be32(void *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static inline void
rn_put_be64(void *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

#endif /* RN_STORAGE_BYTES_H */
