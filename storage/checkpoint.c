/* Checkpoint files in Kafka's text formats, replaced atomically. */
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

static int
write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
fsync_parent(const char *path)
{
	char *copy = strdup(path);
	int fd, rc = 0;

	if (copy == NULL)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		rc = -errno;
	else if (fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

int
rn_ckpt_write_atomic(const char *path, const void *data, size_t len)
{
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 5);
	int fd, rc;

	if (tmp == NULL)
		return -ENOMEM;
	memcpy(tmp, path, plen);
	memcpy(tmp + plen, ".tmp", 5);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = write_all(fd, data, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc == 0)
		rc = fsync_parent(path);
	else
		unlink(tmp);
out:
	free(tmp);
	return rc;
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
    size_t n)
{
	struct sbuf b = { 0 };
	int rc;

	sbuf_printf(&b, "0\n%zu\n", n);
	for (size_t i = 0; i < n; i++)
		sbuf_printf(&b, "%" PRId32 " %" PRId64 "\n", e[i].epoch,
		    e[i].start_offset);
	rc = b.err ? b.err : rn_ckpt_write_atomic(path, b.p, b.len);
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

int
rn_offset_checkpoint_read(const char *path, struct rn_tp_offset **out, size_t *n)
{
	char *buf, *p, *line;
	int64_t count;
	struct rn_tp_offset *e = NULL;
	size_t got = 0;
	int rc = slurp(path, &buf);

	if (rc < 0)
		return rc;
	p = buf;
	count = parse_preamble(&p);
	if (count < 0) {
		rc = (int)count;
		goto out;
	}
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
	int64_t count;
	size_t got = 0;
	int rc = slurp(path, &buf);

	if (rc < 0)
		return rc;
	p = buf;
	count = parse_preamble(&p);
	if (count < 0) {
		rc = (int)count;
		goto out;
	}
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

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void
rn_uuid_to_base64url(const uint8_t id[16], char out[23])
{
	int o = 0;

	for (int i = 0; i < 16; i += 3) {
		uint32_t v = (uint32_t)id[i] << 16;

		if (i + 1 < 16)
			v |= (uint32_t)id[i + 1] << 8;
		if (i + 2 < 16)
			v |= id[i + 2];
		out[o++] = b64url[(v >> 18) & 63];
		out[o++] = b64url[(v >> 12) & 63];
		if (i + 1 < 16)
			out[o++] = b64url[(v >> 6) & 63];
		if (i + 2 < 16)
			out[o++] = b64url[v & 63];
	}
	out[o] = '\0';
}

static int
b64val(char c)
{
	const char *p = c ? strchr(b64url, c) : NULL;

	return p ? (int)(p - b64url) : -1;
}

int
rn_uuid_from_base64url(const char *s, uint8_t id[16])
{
	uint8_t tmp[18];
	int o = 0;

	if (strlen(s) != 22)
		return -EINVAL;
	for (int i = 0; i < 24; i += 4) {
		int v[4];

		for (int k = 0; k < 4; k++) {
			v[k] = i + k < 22 ? b64val(s[i + k]) : 0;
			if (v[k] < 0)
				return -EINVAL;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
		    (uint32_t)v[2] << 6 | (uint32_t)v[3];
		tmp[o++] = (uint8_t)(w >> 16);
		tmp[o++] = (uint8_t)(w >> 8);
		tmp[o++] = (uint8_t)w;
	}
	/* 22 characters carry 132 bits; the last 4 must be zero. */
	if ((b64val(s[21]) & 0x0f) != 0)
		return -EINVAL;
	memcpy(id, tmp, 16);
	return 0;
}

int
rn_partition_metadata_write(const char *partition_dir, const uint8_t id[16])
{
	char path[4096], text[64], enc[23];
	int n;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", partition_dir,
	    RN_PARTITION_METADATA) >= sizeof(path))
		return -ENAMETOOLONG;
	rn_uuid_to_base64url(id, enc);
	n = snprintf(text, sizeof(text), "version: 0\ntopic_id: %s", enc);
	return rn_ckpt_write_atomic(path, text, (size_t)n);
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
