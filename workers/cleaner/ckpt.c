/*
 * cleaner-offset-checkpoint, Kafka's file at each log dir's root: for every
 * compacted partition there, the offset where its dirty part starts. Only
 * the cleaner reads and writes it; a lost file costs one full cleaning.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "workers/cleaner/ckpt.h"

int
cl_ckpt_load(struct cl_ckpt *k, const char *logdir)
{
	int rc;

	memset(k, 0, sizeof(*k));
	snprintf(k->path, sizeof(k->path), "%s/%s", logdir, CL_CKPT_FILE);
	rc = rn_offset_checkpoint_read(k->path, &k->e, &k->n);
	k->cap = k->n;
	if (rc == -ENOENT || rc == -EBADMSG) {
		k->e = NULL;
		k->n = k->cap = 0;
		return 0;
	}
	return rc;
}

void
cl_ckpt_free(struct cl_ckpt *k)
{
	free(k->e);
	k->e = NULL;
	k->n = k->cap = 0;
}

int64_t
cl_ckpt_get(const struct cl_ckpt *k, const char *topic, int32_t partition)
{
	for (size_t i = 0; i < k->n; i++)
		if (k->e[i].partition == partition &&
		    strcmp(k->e[i].topic, topic) == 0)
			return k->e[i].offset;
	return -1;
}

int
cl_ckpt_set(struct cl_ckpt *k, const char *topic, int32_t partition,
    int64_t offset)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		if (k->e[i].partition == partition &&
		    strcmp(k->e[i].topic, topic) == 0)
			break;
	if (i == k->n) {
		if (k->n == k->cap) {
			size_t ncap = k->cap ? k->cap * 2 : 16;
			struct rn_tp_offset *ne = realloc(k->e, ncap * sizeof(*ne));

			if (ne == NULL)
				return -ENOMEM;
			k->e = ne;
			k->cap = ncap;
		}
		strlcpy(k->e[i].topic, topic, sizeof(k->e[i].topic));
		k->e[i].partition = partition;
		k->n++;
	}
	k->e[i].offset = offset;
	return rn_offset_checkpoint_write(k->path, k->e, k->n);
}
