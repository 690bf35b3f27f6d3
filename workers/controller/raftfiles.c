/*
 * The metadata quorum's files, checked before libraft loads them.
 *
 * libraft 0.15 quietly repairs some damage in ways that let a voter
 * forget what it acknowledged: a metadata file shorter than its 32 bytes
 * is deleted (with both gone the term and the vote are forgotten), an
 * open segment is cut at its first bad batch whatever follows it, and
 * other damage is only reported without naming the file. A voter that
 * forgets an entry or a vote it gave can break the quorum's safety, so
 * what is checked here stops the controller with the file's name instead.
 * Accepted as libraft's own crash repairs: one torn metadata file next to
 * a good one, and an open segment whose bad batch is followed by nothing
 * but zeros (the preallocated, never written rest of the file).
 *
 * On-disk facts (libraft's uv_*.c, format 1, little endian): metadataN is
 * format, version, term, vote (4 x u64). A segment is a u64 format, then
 * batches: two u32 checksums (of the header, of the data), the header
 * (u64 entry count, then per entry u64 term, u8 type, 3 unused bytes, u32
 * size), then the entries' data. The checksum is libiberty's crc32 (not
 * reflected, polynomial 0x04c11db7, no final xor). A snapshot's .meta is
 * format, checksum, configuration index and length (4 x u64) and the
 * configuration; its data file is usually an LZ4 frame with a content
 * checksum.
 */
#include "autoconf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lz4frame.h>

#include "workers/controller/raft.h"

#define RF_FORMAT 1
#define RF_META_SIZE 32
#define RF_MAX_ENTRIES (8 * 1024 * 1024 / 32)
#define RF_CONF_MAX (1024 * 1024)

static uint32_t rf_table[256];

static uint32_t
rf_crc(const uint8_t *p, size_t n, uint32_t crc)
{
	uint32_t i, j, c;

	if (rf_table[1] == 0)
		for (i = 0; i < 256; i++) {
			for (c = i << 24, j = 0; j < 8; j++)
				c = c & 0x80000000u ? (c << 1) ^ 0x04c11db7u :
				    c << 1;
			rf_table[i] = c;
		}
	while (n-- > 0)
		crc = (crc << 8) ^ rf_table[((crc >> 24) ^ *p++) & 0xff];
	return crc;
}

static uint64_t
rf_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t
rf_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* The whole file; NULL with errno set. */
static uint8_t *
rf_read(const char *dir, const char *name, size_t *len)
{
	char path[PATH_MAX];
	struct stat st;
	uint8_t *buf;
	ssize_t r;
	size_t got = 0;
	int fd, e;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || (buf = malloc((size_t)st.st_size + 1)) ==
	    NULL) {
		e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	while (got < (size_t)st.st_size &&
	    (r = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)r;
	close(fd);
	*len = got;
	return buf;
}

static bool
rf_zeros(const uint8_t *p, size_t n)
{
	while (n-- > 0)
		if (*p++ != 0)
			return false;
	return true;
}

/*
 * The batches of a segment from byte 8: how many entries they hold, or -1
 * with *bad at the start of the first batch that is cut short or fails
 * its checksums.
 */
static int64_t
rf_batches(const uint8_t *b, size_t len, size_t *at)
{
	int64_t entries = 0;
	size_t off = 8, hlen, dlen, i;
	uint64_t n;

	while (off < len) {
		*at = off;
		if (len - off < 16)
			return -1;
		n = rf_le64(b + off + 8);
		if (n == 0 || n > RF_MAX_ENTRIES)
			return -1;
		hlen = 8 + 16 * n;
		if (len - off - 8 < hlen ||
		    rf_crc(b + off + 8, hlen, 0) != rf_le32(b + off))
			return -1;
		for (dlen = 0, i = 0; i < n; i++)
			dlen += rf_le32(b + off + 16 + 16 * i + 12);
		if (len - off - 8 - hlen < dlen ||
		    rf_crc(b + off + 8 + hlen, dlen, 0) != rf_le32(b + off + 4))
			return -1;
		off += 8 + hlen + dlen;
		entries += (int64_t)n;
	}
	*at = off;
	return entries;
}

static int
rf_segment(const char *dir, const char *name, bool open, char *err,
    size_t errlen)
{
	unsigned long long first, end;
	size_t len = 0, at = 0;
	int64_t n;
	uint8_t *b;
	int rc = 0;

	if ((b = rf_read(dir, name, &len)) == NULL) {
		snprintf(err, errlen, "%s/%s: %s", dir, name, strerror(errno));
		return -errno;
	}
	if (open && (len == 0 || rf_zeros(b, len)))
		goto out;	/* made, never written: libraft drops it */
	if (len < 8 || rf_le64(b) != RF_FORMAT) {
		snprintf(err, errlen, "%s/%s: no segment header (%zu bytes)",
		    dir, name, len);
		rc = -EBADMSG;
		goto out;
	}
	n = rf_batches(b, len, &at);
	if (n < 0 && open && rf_zeros(b + at, len - at))
		goto out;	/* the unwritten rest of the file */
	if (n < 0) {
		snprintf(err, errlen, "%s/%s: the batch at byte %zu of %zu is "
		    "cut short or fails its checksum%s", dir, name, at, len,
		    open ? ", and data follows it" : "");
		rc = -EBADMSG;
	} else if (!open && sscanf(name, "%llu-%llu", &first, &end) == 2 &&
	    (uint64_t)n != end - first + 1) {
		snprintf(err, errlen, "%s/%s: %lld entries where the name says "
		    "%llu", dir, name, (long long)n, end - first + 1);
		rc = -EBADMSG;
	}
out:
	free(b);
	return rc;
}

/* 1 if metadataN is there and sound, 0 if absent, -2 if shorter than
 * its 32 bytes (a torn write), -1 if otherwise damaged. */
static int
rf_metadata(const char *dir, int i, char *err, size_t errlen)
{
	char name[16];
	uint8_t *b;
	size_t len = 0;
	int rc;

	snprintf(name, sizeof(name), "metadata%d", i);
	if ((b = rf_read(dir, name, &len)) == NULL)
		return errno == ENOENT ? 0 : -1;
	if (len < RF_META_SIZE)
		rc = -2;
	else
		rc = len == RF_META_SIZE && rf_le64(b) == RF_FORMAT &&
		    rf_le64(b + 8) != 0 ? 1 : -1;
	if (rc < 0)
		snprintf(err, errlen, "%s/%s: %zu bytes, not a metadata file "
		    "(format %d, 32 bytes)", dir, name, len, RF_FORMAT);
	free(b);
	return rc;
}

/* The snapshot libraft would load: its configuration and its data. */
static int
rf_snapshot(const char *dir, const char *meta, char *err, size_t errlen)
{
	char data[NAME_MAX + 1];
	LZ4F_dctx *dctx;
	uint8_t *b, out[65536];
	size_t len = 0, pos, in, o, r = 1;
	uint64_t clen;

	if ((b = rf_read(dir, meta, &len)) == NULL) {
		snprintf(err, errlen, "%s/%s: %s", dir, meta, strerror(errno));
		return -errno;
	}
	clen = len >= 32 ? rf_le64(b + 24) : 0;
	if (len < 32 || rf_le64(b) != RF_FORMAT || clen == 0 ||
	    clen > RF_CONF_MAX || len - 32 < clen ||
	    rf_crc(b + 32, clen, rf_crc(b + 16, 16, 0)) !=
	    (uint32_t)rf_le64(b + 8)) {
		snprintf(err, errlen, "%s/%s: cut short or fails its checksum",
		    dir, meta);
		free(b);
		return -EBADMSG;
	}
	free(b);
	snprintf(data, sizeof(data), "%.*s", (int)(strlen(meta) - 5), meta);
	if ((b = rf_read(dir, data, &len)) == NULL) {
		snprintf(err, errlen, "%s/%s: %s", dir, data, strerror(errno));
		return -errno;
	}
	/* not a frame: the state's own decoding judges it (fsm_restore) */
	if (len < 4 || rf_le32(b) != 0x184D2204u) {
		free(b);
		return 0;
	}
	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx,
	    LZ4F_VERSION))) {
		free(b);
		snprintf(err, errlen, "%s/%s: no LZ4 context", dir, data);
		return -ENOMEM;
	}
	for (pos = 0; pos < len && r != 0; pos += in) {
		in = len - pos;
		o = sizeof(out);
		r = LZ4F_decompress(dctx, out, &o, b + pos, &in, NULL);
		if (LZ4F_isError(r))
			break;
	}
	LZ4F_freeDecompressionContext(dctx);
	free(b);
	if (r != 0) {
		snprintf(err, errlen, "%s/%s: the compressed snapshot is %s",
		    dir, data, LZ4F_isError(r) ? LZ4F_getErrorName(r) :
		    "cut short");
		return -EBADMSG;
	}
	return 0;
}

/* libraft's order of snapshots: term, index, timestamp. */
static bool
rf_newer(const char *a, const char *b)
{
	unsigned long long x[3], y[3];
	int i;

	if (b[0] == '\0')
		return true;
	sscanf(a, "snapshot-%llu-%llu-%llu", &x[0], &x[1], &x[2]);
	sscanf(b, "snapshot-%llu-%llu-%llu", &y[0], &y[1], &y[2]);
	for (i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] > y[i];
	return false;
}

int
ctl_raft_check_files(const char *dir, char *err, size_t errlen)
{
	char snap[NAME_MAX + 1] = "", m1[512] = "", m2[512] = "";
	unsigned long long a, b;
	struct dirent *de;
	bool data = false;
	size_t l;
	int rc = 0, s1, s2, k;
	DIR *d;

	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -errno;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		l = strlen(de->d_name);
		if (sscanf(de->d_name, "%llu-%llu%n", &a, &b, &k) == 2 &&
		    (size_t)k == l) {
			data = true;
			rc = rf_segment(dir, de->d_name, false, err, errlen);
		} else if (sscanf(de->d_name, "open-%llu%n", &a, &k) == 1 &&
		    (size_t)k == l) {
			rc = rf_segment(dir, de->d_name, true, err, errlen);
		} else if (strncmp(de->d_name, "snapshot-", 9) == 0 && l > 5 &&
		    strcmp(de->d_name + l - 5, ".meta") == 0) {
			data = true;
			if (rf_newer(de->d_name, snap))
				strlcpy(snap, de->d_name, sizeof(snap));
		}
	}
	closedir(d);
	if (rc != 0)
		return rc;
	if (snap[0] != '\0' && (rc = rf_snapshot(dir, snap, err, errlen)) != 0)
		return rc;
	s1 = rf_metadata(dir, 1, m1, sizeof(m1));
	s2 = rf_metadata(dir, 2, m2, sizeof(m2));
	/* one torn file next to a sound one: a write cut by a crash */
	if (s1 != -1 && s2 != -1 && (s1 > 0 || s2 > 0))
		return 0;
	if (s1 < 0 || s2 < 0) {
		snprintf(err, errlen, "%s%s%s: the term and vote cannot be "
		    "trusted", m1,
		    s1 < 0 && s2 < 0 ? "; " : "", m2);
		return -EBADMSG;
	}
	if (data) {
		snprintf(err, errlen, "%s: log entries but neither metadata1 "
		    "nor metadata2: the term and vote are lost", dir);
		return -EBADMSG;
	}
	return 0;
}
