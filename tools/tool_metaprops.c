/*
 * Reading and writing meta.properties. The file is a Java properties
 * file: '#'/'!' comments, "key=value" or "key: value", backslash escapes.
 * We read that syntax and write the subset Java writes for these keys.
 */
#include "autoconf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/tool_metaprops.h"

/* Undo Java's escapes in place (\t \n \r \f \uXXXX for ASCII, \c -> c). */
static void
unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (*s != '\\') {
			*o++ = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case 't': *o++ = '\t'; s++; break;
		case 'n': *o++ = '\n'; s++; break;
		case 'r': *o++ = '\r'; s++; break;
		case 'f': *o++ = '\f'; s++; break;
		case 'u': {
			unsigned v = 0;
			int i;
			for (i = 1; i <= 4 && isxdigit((unsigned char)s[i]); i++)
				v = v * 16 + (unsigned)(isdigit((unsigned char)s[i])
				    ? s[i] - '0' : (tolower((unsigned char)s[i]) -
				    'a' + 10));
			*o++ = v < 0x80 ? (char)v : '?';
			s += i;
			break;
		}
		case '\0': break;
		default: *o++ = *s++;
		}
	}
	*o = '\0';
}

static int
parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int
tool_metaprops_read(const char *dir, struct tool_metaprops *mp, char *err,
    size_t errlen)
{
	char path[4200], line[4096], broker_id[32] = "";
	FILE *f;
	int lineno = 0;
	bool has_version = false;
	long v;

	memset(mp, 0, sizeof(*mp));
	snprintf(path, sizeof(path), "%s/%s", dir, TOOL_META_FILE);
	if ((f = fopen(path, "r")) == NULL) {
		if (errno == ENOENT)
			return 1;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		char *k = line, *sep, *val, *e;

		lineno++;
		while (isspace((unsigned char)*k))
			k++;
		if (*k == '\0' || *k == '#' || *k == '!')
			continue;
		e = k + strlen(k);
		while (e > k && isspace((unsigned char)e[-1]))
			*--e = '\0';
		/* the key ends at an unescaped '=', ':' or blank */
		for (sep = k; *sep && *sep != '=' && *sep != ':' &&
		    !isspace((unsigned char)*sep); sep++)
			if (*sep == '\\' && sep[1])
				sep++;
		val = sep;
		while (isspace((unsigned char)*val))
			val++;
		if (*val == '=' || *val == ':')
			val++;
		while (isspace((unsigned char)*val))
			val++;
		*sep = '\0';
		unescape(k);
		unescape(val);
		if (strcmp(k, "version") == 0) {
			if (parse_int(val, 0, 2, &v) != 0) {
				snprintf(err, errlen, "%s:%d: version '%s' is "
				    "not 0, 1 or 2", path, lineno, val);
				goto bad;
			}
			mp->version = (int)v;
			has_version = true;
		} else if (strcmp(k, "cluster.id") == 0) {
			if (strlcpy(mp->cluster_id, val,
			    sizeof(mp->cluster_id)) >= sizeof(mp->cluster_id)) {
				snprintf(err, errlen, "%s:%d: cluster.id too "
				    "long", path, lineno);
				goto bad;
			}
			mp->has_cluster_id = true;
		} else if (strcmp(k, "node.id") == 0) {
			if (parse_int(val, 0, INT32_MAX, &v) != 0) {
				snprintf(err, errlen, "%s:%d: node.id '%s' is "
				    "not a node id", path, lineno, val);
				goto bad;
			}
			mp->node_id = (int32_t)v;
			mp->has_node_id = true;
		} else if (strcmp(k, "broker.id") == 0) {
			strlcpy(broker_id, val, sizeof(broker_id));
		} else if (strcmp(k, "directory.id") == 0) {
			if (rn_uuid_parse(val, &mp->directory_id) != 0) {
				snprintf(err, errlen, "%s:%d: directory.id '%s' "
				    "is not a Kafka Uuid", path, lineno, val);
				goto bad;
			}
			mp->has_directory_id = true;
		}
		/* other keys are kept by nobody: Kafka ignores them too */
	}
	fclose(f);
	/* no version key means version 0, the ZooKeeper-era layout */
	if (!has_version)
		mp->version = 0;
	if (mp->version == 0 && broker_id[0] &&
	    parse_int(broker_id, 0, INT32_MAX, &v) == 0) {
		mp->node_id = (int32_t)v;
		mp->has_node_id = true;
	}
	if (mp->version >= 1 && !mp->has_node_id) {
		snprintf(err, errlen, "%s: version %d without node.id", path,
		    mp->version);
		return -1;
	}
	if (mp->version == 1 && !mp->has_cluster_id) {
		snprintf(err, errlen, "%s: version 1 without cluster.id", path);
		return -1;
	}
	return 0;
bad:
	fclose(f);
	return -1;
}

/* Java's escaping for a value we write (cluster.id is free text). */
static void
put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '\\' || c == '=' || c == ':' || c == '#' || c == '!')
			fprintf(f, "\\%c", c);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\r')
			fputs("\\r", f);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04X", c);
		else
			fputc(c, f);
	}
}

int
tool_metaprops_write(const char *dir, const struct tool_metaprops *mp,
    char *err, size_t errlen)
{
	char path[4200], when[64], *buf = NULL, id[23];
	size_t len = 0;
	time_t now = time(NULL);
	struct tm tm;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, TOOL_META_FILE);
	if ((f = open_memstream(&buf, &len)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ",
	    gmtime_r(&now, &tm));
	fprintf(f, "#\n#written by runnel-storage %s\n", when);
	fprintf(f, "version=%d\n", mp->version);
	if (mp->has_cluster_id) {
		fputs("cluster.id=", f);
		put_escaped(f, mp->cluster_id);
		fputc('\n', f);
	}
	if (mp->has_node_id)
		fprintf(f, "%s=%d\n", mp->version == 0 ? "broker.id" :
		    "node.id", mp->node_id);
	if (mp->has_directory_id) {
		rn_uuid_str(&mp->directory_id, id);
		fprintf(f, "directory.id=%s\n", id);
	}
	fclose(f);
	rc = rn_write_file_atomic(path, buf, len, 0644);
	free(buf);
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return -1;
	}
	return 0;
}
