/* The cleaner's checkpoint of each compacted log's first dirty offset. */
#ifndef RN_CL_CKPT_H
#define RN_CL_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "storage/checkpoint.h"

#define CL_CKPT_FILE "cleaner-offset-checkpoint"

struct cl_ckpt {
	char path[1100];
	struct rn_tp_offset *e;
	size_t n, cap;
};

/* Read <logdir>/cleaner-offset-checkpoint (missing: empty). */
int cl_ckpt_load(struct cl_ckpt *k, const char *logdir);
void cl_ckpt_free(struct cl_ckpt *k);
/* The first dirty offset recorded, or -1. */
int64_t cl_ckpt_get(const struct cl_ckpt *k, const char *topic,
    int32_t partition);
/* Record it and rewrite the file. */
int cl_ckpt_set(struct cl_ckpt *k, const char *topic, int32_t partition,
    int64_t offset);

#endif /* RN_CL_CKPT_H */
