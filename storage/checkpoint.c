/* Checkpoint files in Kafka's text formats, replaced atomically. */
#include "common/util.h"
#include "storage/checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
rn_ckpt_write_atomic(const char *path, const void *data, size_t len)
{
	/* one implementation of tmp + fsync + rename + fsync(dir): common's */
	return rn_write_file_atomic(path, data, len, 0644);
}

/* Growable text buffer for building a file. */
struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void
sbuf_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void
sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = (b->cap ? b->cap * 2 : 256) + (size_t)n;
		char *np = realloc(b->p, ncap);

		if (np == NULL) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
}

int
rn_offset_checkpoint_write(const char *path, const struct rn_tp_offset *e,
    size_t n)
{
	struct sbuf b = { 0 };
	int rc;

	sbuf_printf(&b, "0\n%zu\n", n);
	for (size_t i = 0; i < n; i++) {
		/* Kafka's format is space separated; topic names cannot hold spaces. */
		if (e[i].topic[0] == '\0' || strpbrk(e[i].topic, " \n") != NULL) {
			free(b.p);
			return -EINVAL;
		}
		sbuf_printf(&b, "%s %" PRId32 " %" PRId64 "\n", e[i].topic,
		    e[i].partition, e[i].offset);
	}
	rc = b.err ? b.err : rn_ckpt_write_atomic(path, b.p, b.len);
	free(b.p);
	return rc;
}

int
rn_epoch_checkpoint_write(const char *path, const struct rn_epoch_entry *e,
    size_t n, bool durable)
{
	struct sbuf b = { 0 };
	int rc;

	sbuf_printf(&b, "0\n%zu\n", n);
	for (size_t i = 0; i < n; i++)
		sbuf_printf(&b, "%" PRId32 " %" PRId64 "\n", e[i].epoch,
		    e[i].start_offset);
	rc = b.err ? b.err : durable ? rn_ckpt_write_atomic(path, b.p, b.len) :
	    rn_write_file_replace(path, b.p, b.len, 0644);
	free(b.p);
	return rc;
}

/* Read a whole small file, NUL terminated. */
static int
slurp(const char *path, char **out)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0, cap = 0;

	if (f == NULL)
		return -errno;
	for (;;) {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap + 65536);

			if (nb == NULL) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = nb;
			cap += 65536;
		}
		size_t n = fread(buf + len, 1, cap - len - 1, f);

		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[len] = '\0';
	*out = buf;
	return 0;
}

/* Parse "0\n<count>\n"; returns the count and advances *pp. */
static int64_t
parse_preamble(char **pp)
{
	char *p = *pp, *end;
	long long v, n;

	v = strtoll(p, &end, 10);
	if (end == p || *end != '\n' || v != 0)
		return -EBADMSG;
	p = end + 1;
	n = strtoll(p, &end, 10);
	if (end == p || *end != '\n' || n < 0)
		return -EBADMSG;
	*pp = end + 1;
	return n;
}

/*
 * Read a checkpoint file and its preamble: the entry count, with *buf the
 * file (the caller frees it) and *p its first entry line; or -errno with
 * nothing to free.
 */
static int64_t
load(const char *path, char **buf, char **p)
{
	int64_t count;
	int rc = slurp(path, buf);

	if (rc < 0)
		return rc;
	*p = *buf;
	if ((count = parse_preamble(p)) < 0)
		free(*buf);
	return count;
}

int
rn_offset_checkpoint_read(const char *path, struct rn_tp_offset **out, size_t *n)
{
	char *buf, *p, *line;
	int64_t count = load(path, &buf, &p);
	struct rn_tp_offset *e = NULL;
	size_t got = 0;
	int rc = 0;

	if (count < 0)
		return (int)count;
	e = calloc(count ? (size_t)count : 1, sizeof(*e));
	if (e == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	while ((line = strsep(&p, "\n")) != NULL) {
		char topic[RN_TOPIC_MAX + 2];
		long long part, off;
		int used = 0;

		if (*line == '\0')
			continue;
		if (got == (size_t)count ||
		    sscanf(line, "%250s %lld %lld%n", topic, &part, &off, &used) != 3 ||
		    line[used] != '\0' || strlen(topic) > RN_TOPIC_MAX ||
		    part < 0 || part > INT32_MAX) {
			rc = -EBADMSG;
			goto out;
		}
		strcpy(e[got].topic, topic);
		e[got].partition = (int32_t)part;
		e[got].offset = off;
		got++;
	}
	if (got != (size_t)count) {
		rc = -EBADMSG;
		goto out;
	}
	*out = e;
	*n = got;
	e = NULL;
out:
	free(e);
	free(buf);
	return rc;
}

int
rn_epoch_checkpoint_read(const char *path, struct rn_epoch_entry *e, size_t cap,
    size_t *n)
{
	char *buf, *p, *line;
	int64_t count = load(path, &buf, &p);
	size_t got = 0;
	int rc = 0;

	if (count < 0)
		return (int)count;
	if ((size_t)count > cap) {
		rc = -EOVERFLOW;
		goto out;
	}
	while ((line = strsep(&p, "\n")) != NULL) {
		long long epoch, off;
		int used = 0;

		if (*line == '\0')
			continue;
		if (got == (size_t)count ||
		    sscanf(line, "%lld %lld%n", &epoch, &off, &used) != 2 ||
		    line[used] != '\0' || epoch < 0 || epoch > INT32_MAX || off < 0) {
			rc = -EBADMSG;
			goto out;
		}
		e[got].epoch = (int32_t)epoch;
		e[got].reserved = 0;
		e[got].start_offset = off;
		got++;
	}
	if (got != (size_t)count)
		rc = -EBADMSG;
	else
		*n = got;
out:
	free(buf);
	return rc;
}

/* Kafka's Uuid text form; the codec lives in common/util.c. */
void
rn_uuid_to_base64url(const uint8_t id[16], char out[23])
{
	struct rn_uuid u;

	memcpy(u.b, id, 16);
	rn_uuid_str(&u, out);
}

int
rn_uuid_from_base64url(const char *s, uint8_t id[16])
{
	struct rn_uuid u;
	int rc = rn_uuid_parse(s, &u);

	if (rc == 0)
		memcpy(id, u.b, 16);
	return rc;
}

int
rn_partition_metadata_write(const char *partition_dir, const uint8_t id[16],
    bool durable)
{
	char path[4096], text[64], enc[23];
	int n;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", partition_dir,
	    RN_PARTITION_METADATA) >= sizeof(path))
		return -ENAMETOOLONG;
	rn_uuid_to_base64url(id, enc);
	n = snprintf(text, sizeof(text), "version: 0\ntopic_id: %s", enc);
	return durable ? rn_ckpt_write_atomic(path, text, (size_t)n) :
	    rn_write_file_replace(path, text, (size_t)n, 0644);
}

int
rn_partition_metadata_read(const char *partition_dir, uint8_t id[16])
{
	char path[4096], enc[64], *buf;
	int version, used = 0, rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", partition_dir,
	    RN_PARTITION_METADATA) >= sizeof(path))
		return -ENAMETOOLONG;
	rc = slurp(path, &buf);
	if (rc < 0)
		return rc;
	if (sscanf(buf, "version: %d\ntopic_id: %63s%n", &version, enc, &used) != 2 ||
	    version != 0 || strspn(buf + used, "\n") != strlen(buf + used))
		rc = -EBADMSG;
	else if (rn_uuid_from_base64url(enc, id) < 0)
		rc = -EBADMSG;
	free(buf);
	return rc;
}
