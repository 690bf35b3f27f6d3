/*
 * Error returns of the storage library. Functions return 0 or a negative
 * errno, or one of the negative kinds below, which carry the Kafka error
 * code the broker should answer with (-(RN_ERR_KAFKA_BASE + code)).
 */
#ifndef RN_STORAGE_ERRORS_H
#define RN_STORAGE_ERRORS_H

#include <errno.h>

#define RN_ERR_KAFKA_BASE 10000

enum {
	RN_ERR_CORRUPT_MESSAGE = -(RN_ERR_KAFKA_BASE + 2),
	RN_ERR_MESSAGE_TOO_LARGE = -(RN_ERR_KAFKA_BASE + 10),
	RN_ERR_RECORD_LIST_TOO_LARGE = -(RN_ERR_KAFKA_BASE + 18),
	RN_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT = -(RN_ERR_KAFKA_BASE + 43),
	RN_ERR_INVALID_RECORD = -(RN_ERR_KAFKA_BASE + 87),
};

/* Kafka error codes that storage errno values map to. */
#define RN_KAFKA_UNKNOWN_SERVER_ERROR (-1)
#define RN_KAFKA_OFFSET_OUT_OF_RANGE 1
#define RN_KAFKA_KAFKA_STORAGE_ERROR 56

/* Map a storage return value to the Kafka error code for the response. */
static inline int
rn_storage_kafka_error(int rc)
{
	if (rc >= 0)
		return 0;
	if (rc <= -RN_ERR_KAFKA_BASE)
		return -rc - RN_ERR_KAFKA_BASE;
	switch (-rc) {
	case ERANGE:
		return RN_KAFKA_OFFSET_OUT_OF_RANGE;
	case EIO:
	case ENOSPC:
	case EDQUOT:
	case EROFS:
	case ENOENT:
	case EBADF:
		return RN_KAFKA_KAFKA_STORAGE_ERROR;
	default:
		return RN_KAFKA_UNKNOWN_SERVER_ERROR;
	}
}

#endif /* RN_STORAGE_ERRORS_H */
