/*
 * meta.properties: what Kafka keeps per log dir about the node and the
 * cluster. Files are written in java.util.Properties' text form (a "#"
 * comment line with the date, then key=value lines) so Kafka's tools read
 * them too.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "storage/metaprops.h"

#define MP_MAX_DIRS (RN_CONFIG_MAX_LOGDIRS + 1)

/* Every dir holding a meta.properties: the log dirs, then the metadata log
 * dir unless it is one of them. Returns how many. */
static int
mp_dirs(const struct rn_config *cfg, const char *dirs[MP_MAX_DIRS])
{
	int i, n = 0;
	bool meta_listed = false;

	for (i = 0; i < cfg->n_log_dirs; i++) {
		dirs[n++] = cfg->log_dirs[i];
		if (strcmp(cfg->log_dirs[i], cfg->metadata_log_dir) == 0)
			meta_listed = true;
	}
	if (!meta_listed && cfg->metadata_log_dir[0] != '\0')
		dirs[n++] = cfg->metadata_log_dir;
	return n;
}

static int
parse_int(const char *v, long min, long max, long *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || n < min || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

/* What reading meta.properties has found so far. */
struct mp_read {
	struct rn_metaprops *mp;
	const char *path;
	long node, broker;
	bool have_version;
};

/* One key = value line; 0, or -EINVAL with err filled. */
static int
read_key(struct mp_read *st, const char *k, const char *v, char *err,
    size_t errlen)
{
	struct rn_metaprops *mp = st->mp;
	struct rn_uuid u;
	long n = 0;

	if (strcmp(k, "version") == 0) {
		if (parse_int(v, 0, 2, &n) != 0) {
			snprintf(err, errlen, "%s: unsupported version '%s' "
			    "(0, 1 and 2 are known)", st->path, v);
			return -EINVAL;
		}
		mp->version = (int)n;
		st->have_version = true;
	} else if (strcmp(k, "node.id") == 0 || strcmp(k, "broker.id") == 0) {
		if (parse_int(v, 0, INT32_MAX, &n) != 0) {
			snprintf(err, errlen, "%s: invalid %s '%s'", st->path,
			    k, v);
			return -EINVAL;
		}
		*(k[0] == 'n' ? &st->node : &st->broker) = n;
	} else if (strcmp(k, "cluster.id") == 0) {
		/* a cut file would otherwise name another cluster */
		if (rn_uuid_parse(v, &u) != 0) {
			snprintf(err, errlen, "%s: cluster.id '%s' is not a "
			    "Kafka Uuid (22 base64url characters)", st->path,
			    v);
			return -EINVAL;
		}
		strlcpy(mp->cluster_id, v, sizeof(mp->cluster_id));
	} else if (strcmp(k, "directory.id") == 0) {
		if (rn_uuid_parse(v, &u) != 0) {
			snprintf(err, errlen, "%s: directory.id '%s' is not a "
			    "Uuid", st->path, v);
			return -EINVAL;
		}
		memcpy(mp->dir_id, u.b, 16);
		mp->has_dir_id = true;
	}
	/* other keys: kept by Kafka, ignored here */
	return 0;
}

/* Each line of f through read_key; 0, or -EINVAL with err filled. */
static int
read_lines(FILE *f, struct mp_read *st, char *err, size_t errlen)
{
	char line[1024];
	int rc = 0;

	while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
		char *k = rn_trim(line), *sep;

		if (*k == '\0' || *k == '#' || *k == '!')
			continue;
		if ((sep = strpbrk(k, "=:")) == NULL) {
			snprintf(err, errlen, "%s: line without '=': %s",
			    st->path, k);
			return -EINVAL;
		}
		*sep = '\0';
		rc = read_key(st, rn_trim(k), rn_trim(sep + 1), err, errlen);
	}
	return rc;
}

int
rn_metaprops_read(const char *dir, struct rn_metaprops *mp, char *err,
    size_t errlen)
{
	char path[1100];
	struct mp_read st = { mp, path, -1, -1, false };
	FILE *f;
	int rc;

	memset(mp, 0, sizeof(*mp));
	mp->node_id = -1;
	snprintf(path, sizeof(path), "%s/%s", dir, RN_METAPROPS_FILE);
	if ((f = fopen(path, "re")) == NULL) {
		rc = -errno;
		if (rc != -ENOENT)
			snprintf(err, errlen, "cannot read %s: %s", path,
			    strerror(errno));
		return rc;
	}
	rc = read_lines(f, &st, err, errlen);
	fclose(f);
	if (rc != 0)
		return rc;
	if (!st.have_version)
		mp->version = 0; /* Kafka's default when the key is missing */
	mp->node_id = (int32_t)(mp->version == 0 ? st.broker : st.node);
	if (mp->version > 0 && st.node < 0) {
		snprintf(err, errlen, "%s: version %d without node.id", path,
		    mp->version);
		return -EINVAL;
	}
	return 0;
}

int
rn_metaprops_write(const char *dir, const struct rn_metaprops *mp)
{
	char path[1100], buf[512], date[64], idstr[23];
	struct rn_uuid u;
	time_t now = time(NULL);
	struct tm tm;
	int len;

	localtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a %b %d %H:%M:%S %Z %Y", &tm);
	memcpy(u.b, mp->dir_id, 16);
	rn_uuid_str(&u, idstr);
	len = snprintf(buf, sizeof(buf), "#\n#%s\nnode.id=%d\nversion=%d\n",
	    date, mp->node_id, mp->version);
	if (mp->cluster_id[0] != '\0')
		len += snprintf(buf + len, sizeof(buf) - (size_t)len,
		    "cluster.id=%s\n", mp->cluster_id);
	if (mp->has_dir_id)
		len += snprintf(buf + len, sizeof(buf) - (size_t)len,
		    "directory.id=%s\n", idstr);
	snprintf(path, sizeof(path), "%s/%s", dir, RN_METAPROPS_FILE);
	/* 0644 as Kafka leaves it: workers that dropped privileges read it */
	return rn_write_file_atomic(path, buf, (size_t)len, 0644);
}

/* Read every dir; check node ids and that the cluster ids agree. */
static int
mp_read_all(const struct rn_config *cfg, const char **dirs, int n,
    struct rn_metaprops *mps, bool *present, char cluster_id[23],
    char *err, size_t errlen)
{
	const char *cid_dir = NULL;
	int i, rc;

	cluster_id[0] = '\0';
	for (i = 0; i < n; i++) {
		rc = rn_metaprops_read(dirs[i], &mps[i], err, errlen);
		present[i] = rc == 0;
		if (rc == -ENOENT)
			continue;
		if (rc != 0)
			return rc;
		if (mps[i].node_id != cfg->node_id) {
			snprintf(err, errlen, "log dir %s: its %s names node.id "
			    "%d but this node's node.id is %d; the dir belongs "
			    "to another node", dirs[i], RN_METAPROPS_FILE,
			    mps[i].node_id, cfg->node_id);
			return -EINVAL;
		}
		if (mps[i].cluster_id[0] == '\0')
			continue;
		if (cid_dir == NULL) {
			cid_dir = dirs[i];
			strlcpy(cluster_id, mps[i].cluster_id, 23);
		} else if (strcmp(cluster_id, mps[i].cluster_id) != 0) {
			snprintf(err, errlen, "log dirs %s and %s belong to "
			    "different clusters (cluster.id %s and %s)",
			    cid_dir, dirs[i], cluster_id, mps[i].cluster_id);
			return -EINVAL;
		}
	}
	return 0;
}

int
rn_metaprops_load(const struct rn_config *cfg, char cluster_id[23],
    uint8_t dir_ids[][16], char *err, size_t errlen)
{
	const char *dirs[MP_MAX_DIRS];
	struct rn_metaprops mps[MP_MAX_DIRS];
	bool present[MP_MAX_DIRS];
	int i, n = mp_dirs(cfg, dirs), rc;

	if ((rc = mp_read_all(cfg, dirs, n, mps, present, cluster_id, err,
	    errlen)) != 0)
		return rc;
	for (i = 0; i < cfg->n_log_dirs; i++) {
		if (!present[i] || !mps[i].has_dir_id) {
			snprintf(err, errlen, "log dir %s has no %s with a "
			    "directory.id", dirs[i], RN_METAPROPS_FILE);
			return -EINVAL;
		}
		memcpy(dir_ids[i], mps[i].dir_id, 16);
	}
	return 0;
}

int
rn_metaprops_ensure(const struct rn_config *cfg, char cluster_id[23],
    uint8_t dir_ids[][16])
{
	const char *dirs[MP_MAX_DIRS];
	struct rn_metaprops mps[MP_MAX_DIRS];
	bool present[MP_MAX_DIRS];
	char err[1400], cid[23];
	int i, n = mp_dirs(cfg, dirs), rc;

	if (mp_read_all(cfg, dirs, n, mps, present, cid, err,
	    sizeof(err)) != 0) {
		log_errx("%s", err);
		return -1;
	}
	for (i = 0; i < n; i++) {
		struct rn_uuid u;
		bool write = false;

		if (!present[i]) {
			/* no format step: a dir without the file is new */
			memset(&mps[i], 0, sizeof(mps[i]));
			mps[i].version = RN_METAPROPS_VERSION;
			mps[i].node_id = cfg->node_id;
			write = true;
		}
		if (!mps[i].has_dir_id) {
			if ((rc = rn_uuid_random(&u)) != 0) {
				log_errx("log dir %s: no random directory.id: "
				    "%s", dirs[i], strerror(-rc));
				return -1;
			}
			memcpy(mps[i].dir_id, u.b, 16);
			mps[i].has_dir_id = true;
			write = true;
		}
		/* a replaced disk joins the cluster the other dirs know */
		if (mps[i].cluster_id[0] == '\0' && cid[0] != '\0') {
			strlcpy(mps[i].cluster_id, cid,
			    sizeof(mps[i].cluster_id));
			write = true;
		}
		if (write) {
			if (mps[i].version == 0)
				mps[i].version = RN_METAPROPS_VERSION;
			if ((rc = rn_metaprops_write(dirs[i], &mps[i])) != 0) {
				log_errx("log dir %s: cannot write %s: %s",
				    dirs[i], RN_METAPROPS_FILE, strerror(-rc));
				return -1;
			}
			log_info("log dir %s: wrote %s (node.id %d%s%s)",
			    dirs[i], RN_METAPROPS_FILE, cfg->node_id,
			    cid[0] ? ", cluster.id " : ", cluster id not yet "
			    "known", cid);
		}
		if (i < cfg->n_log_dirs)
			memcpy(dir_ids[i], mps[i].dir_id, 16);
	}
	strlcpy(cluster_id, cid, 23);
	return 0;
}

int
rn_metaprops_set_cluster_id(const struct rn_config *cfg,
    const char *cluster_id, char *err, size_t errlen)
{
	const char *dirs[MP_MAX_DIRS];
	struct rn_metaprops mps[MP_MAX_DIRS];
	bool present[MP_MAX_DIRS];
	char cid[23];
	int i, n = mp_dirs(cfg, dirs), rc;

	if ((rc = mp_read_all(cfg, dirs, n, mps, present, cid, err,
	    errlen)) != 0)
		return rc;
	/* refuse before writing anything: never adopt a second cluster id */
	if (cid[0] != '\0' && strcmp(cid, cluster_id) != 0) {
		snprintf(err, errlen, "the metadata log names cluster id %s "
		    "but this node's %s files name cluster id %s: refusing to "
		    "join another cluster", cluster_id, RN_METAPROPS_FILE, cid);
		return -EEXIST;
	}
	for (i = 0; i < n; i++) {
		if (present[i] && strcmp(mps[i].cluster_id, cluster_id) == 0)
			continue;
		if (!present[i]) {
			struct rn_uuid u;

			memset(&mps[i], 0, sizeof(mps[i]));
			mps[i].version = RN_METAPROPS_VERSION;
			mps[i].node_id = cfg->node_id;
			if ((rc = rn_uuid_random(&u)) != 0)
				return rc;
			memcpy(mps[i].dir_id, u.b, 16);
			mps[i].has_dir_id = true;
		}
		strlcpy(mps[i].cluster_id, cluster_id,
		    sizeof(mps[i].cluster_id));
		if ((rc = rn_metaprops_write(dirs[i], &mps[i])) != 0) {
			snprintf(err, errlen, "log dir %s: cannot write %s: %s",
			    dirs[i], RN_METAPROPS_FILE, strerror(-rc));
			return rc;
		}
	}
	return 0;
}
