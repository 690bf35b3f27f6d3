/* The bootstrap SCRAM credentials file (see scram_boot.h). */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/scram_boot.h"
#include "common/util.h"

/* A line at its longest: the mechanism, four hex fields, a number. */
#define LINE_MAX_BYTES (16 + 2 * RN_SCRAM_NAME_MAX + 12 + \
	2 * RN_SCRAM_SALT_MAX + 4 * RN_SCRAM_KEY_MAX + 8)
#define FILE_MAX_BYTES ((size_t)RN_SCRAM_BOOT_MAX * LINE_MAX_BYTES)

static const char hexdig[] = "0123456789abcdef";

static char *
put_hex(char *p, const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		*p++ = hexdig[b[i] >> 4];
		*p++ = hexdig[b[i] & 15];
	}
	*p++ = ' ';
	return p;
}

int
rn_scram_boot_write(const char *dir, const struct rn_scram_cred *v, int n)
{
	static const char head[] = "# SCRAM credentials for the cluster's "
	    "first start (runnel-storage format --add-scram):\n# mechanism, "
	    "user (hex), iterations, salt, StoredKey, ServerKey (hex)\n";
	char path[4200], *buf, *p;
	size_t cap;
	int i, rc;

	if (n < 0 || n > RN_SCRAM_BOOT_MAX)
		return -E2BIG;
	cap = sizeof(head) + (size_t)n * LINE_MAX_BYTES;
	if ((buf = malloc(cap)) == NULL)
		return -ENOMEM;
	p = buf + strlcpy(buf, head, cap);
	for (i = 0; i < n; i++) {
		const struct rn_scram_cred *c = &v[i];
		size_t kl = rn_scram_key_len(c->mech);

		if (kl == 0 || strlen(c->name) > RN_SCRAM_NAME_MAX ||
		    c->salt_len > RN_SCRAM_SALT_MAX) {
			free(buf);
			return -EINVAL;
		}
		p += sprintf(p, "%s ", rn_scram_mech_name(c->mech));
		p = put_hex(p, (const uint8_t *)c->name, strlen(c->name));
		p += sprintf(p, "%d ", (int)c->iterations);
		p = put_hex(p, c->salt, c->salt_len);
		p = put_hex(p, c->stored_key, kl);
		p = put_hex(p, c->server_key, kl);
		p[-1] = '\n';
	}
	snprintf(path, sizeof(path), "%s/%s", dir, RN_SCRAM_BOOT_FILE);
	rc = rn_write_file_atomic(path, buf, (size_t)(p - buf), 0600);
	OPENSSL_cleanse(buf, cap);
	free(buf);
	return rc;
}

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* A hex field of min..max bytes into out; its length or -1. */
static long
get_hex(const char *s, uint8_t *out, size_t min, size_t max)
{
	size_t i, n = strlen(s);

	if (n % 2 != 0 || n / 2 < min || n / 2 > max)
		return -1;
	for (i = 0; i < n / 2; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (long)(n / 2);
}

/* One credential line (cut in place); 0 or -1. */
static int
parse_line(char *line, struct rn_scram_cred *c, char *name, uint8_t *salt)
{
	char *f[6], *save = NULL, *end;
	long iter, nl, sl;
	size_t kl;
	int i;

	for (i = 0; i < 6; i++)
		if ((f[i] = strtok_r(i == 0 ? line : NULL, " \t", &save)) ==
		    NULL)
			return -1;
	if (strtok_r(NULL, " \t", &save) != NULL)
		return -1;
	memset(c, 0, sizeof(*c));
	c->mech = (int8_t)rn_scram_mech_by_name(f[0], strlen(f[0]));
	if ((kl = rn_scram_key_len(c->mech)) == 0)
		return -1;
	if ((nl = get_hex(f[1], (uint8_t *)name, 1, RN_SCRAM_NAME_MAX)) < 0 ||
	    memchr(name, '\0', (size_t)nl) != NULL)
		return -1;
	name[nl] = '\0';
	errno = 0;
	iter = strtol(f[2], &end, 10);
	if (errno != 0 || *end != '\0' || iter < RN_SCRAM_MIN_ITERATIONS ||
	    iter > RN_SCRAM_MAX_ITERATIONS)
		return -1;
	if ((sl = get_hex(f[3], salt, 1, RN_SCRAM_SALT_MAX)) < 0 ||
	    get_hex(f[4], c->stored_key, kl, kl) < 0 ||
	    get_hex(f[5], c->server_key, kl, kl) < 0)
		return -1;
	c->name = name;
	c->iterations = (int32_t)iter;
	c->salt = salt;
	c->salt_len = (size_t)sl;
	return 0;
}

static int
read_all(const char *path, char **bufp, size_t *lenp, char *err,
    size_t errlen)
{
	struct stat st;
	ssize_t got;
	char *buf;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot open %s: %s", path,
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size > FILE_MAX_BYTES) {
		snprintf(err, errlen, "%s is not a regular file of at most %zu "
		    "bytes", path, FILE_MAX_BYTES);
		close(fd);
		return -1;
	}
	if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "out of memory reading %s", path);
		close(fd);
		return -1;
	}
	got = rn_read_full(fd, buf, (size_t)st.st_size);
	close(fd);
	if (got < 0 || got != st.st_size) {
		snprintf(err, errlen, "cannot read %s", path);
		free(buf);
		return -1;
	}
	buf[got] = '\0';
	*bufp = buf;
	*lenp = (size_t)got;
	return 1;
}

int
rn_scram_boot_read(const char *dir,
    int (*fn)(void *arg, const struct rn_scram_cred *c), void *arg,
    char *err, size_t errlen)
{
	char path[4200], name[RN_SCRAM_NAME_MAX + 1], *buf, *line, *next;
	uint8_t salt[RN_SCRAM_SALT_MAX];
	struct rn_scram_cred c;
	size_t len;
	int rc, n = 0, lineno = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, RN_SCRAM_BOOT_FILE);
	if ((rc = read_all(path, &buf, &len, err, errlen)) <= 0)
		return rc;
	for (line = buf; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		lineno++;
		line = rn_trim(line);
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if (n == RN_SCRAM_BOOT_MAX || parse_line(line, &c, name,
		    salt) != 0) {
			snprintf(err, errlen, "%s line %d: %s", path, lineno,
			    n == RN_SCRAM_BOOT_MAX ? "more than the credentials "
			    "a file may hold" : "not a credential "
			    "(mechanism, user, iterations, salt, StoredKey, "
			    "ServerKey)");
			rc = -1;
			break;
		}
		if (fn(arg, &c) != 0) {
			snprintf(err, errlen, "%s line %d: not taken", path,
			    lineno);
			rc = -1;
			break;
		}
		n++;
	}
	OPENSSL_cleanse(&c, sizeof(c));
	OPENSSL_cleanse(buf, len);
	free(buf);
	return rc < 0 ? -1 : n;
}
