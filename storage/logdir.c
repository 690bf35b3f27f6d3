/* Partition directory names and log-dir-level markers. */
#include "autoconf.h"

#include "storage/logdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int
rn_topic_name_valid(const char *topic)
{
	size_t n = strlen(topic);

	if (n == 0 || n > RN_TOPIC_MAX || strcmp(topic, ".") == 0 ||
	    strcmp(topic, "..") == 0)
		return 0;
	return strspn(topic, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._-") == n;
}

int
rn_partition_dir_name(char *buf, size_t size, const char *topic,
    int32_t partition)
{
	int n;

	if (!rn_topic_name_valid(topic) || partition < 0)
		return -EINVAL;
	n = snprintf(buf, size, "%s-%d", topic, partition);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

int
rn_partition_dir_parse(const char *name, char topic[RN_TOPIC_MAX + 1],
    int32_t *partition)
{
	const char *dash = strrchr(name, '-');
	char *end;
	long v;
	size_t tlen;

	if (dash == NULL || dash == name || dash[1] < '0' || dash[1] > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(dash + 1, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0 || v > INT32_MAX)
		return -EINVAL;
	tlen = (size_t)(dash - name);
	if (tlen > RN_TOPIC_MAX)
		return -EINVAL;
	memcpy(topic, name, tlen);
	topic[tlen] = '\0';
	if (!rn_topic_name_valid(topic))
		return -EINVAL;
	*partition = (int32_t)v;
	return 0;
}

struct rn_log_subject
rn_logdir_subject(const char *path, char topic[RN_TOPIC_MAX + 1])
{
	const char *base = strrchr(path, '/');
	int32_t p;

	if (rn_partition_dir_parse(base != NULL ? base + 1 : path, topic,
	    &p) != 0)
		return (struct rn_log_subject){ NULL, -1, -1, NULL };
	return rn_subj_part(topic, p);
}

int
rn_logdir_list(const char *root,
    int (*fn)(void *arg, const char *topic, int32_t partition), void *arg)
{
	DIR *d = opendir(root);
	struct dirent *de;
	int rc = 0;

	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		char topic[RN_TOPIC_MAX + 1];
		int32_t part;
		struct stat st;

		if (de->d_name[0] == '.' ||
		    rn_partition_dir_parse(de->d_name, topic, &part) < 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISDIR(st.st_mode))
			continue;
		rc = fn(arg, topic, part);
		if (rc < 0)
			break;
	}
	closedir(d);
	return rc < 0 ? rc : 0;
}

static int
marker_path(char *buf, size_t size, const char *root)
{
	if ((size_t)snprintf(buf, size, "%s/%s", root, RN_CLEAN_SHUTDOWN_FILE) >= size)
		return -ENAMETOOLONG;
	return 0;
}

int
rn_logdir_mark_clean(const char *root)
{
	char path[4096];
	int rc = marker_path(path, sizeof(path), root);

	return rc < 0 ? rc : rn_ckpt_write_atomic(path, "", 0);
}

int
rn_logdir_take_clean(const char *root)
{
	char path[4096];
	int rc = marker_path(path, sizeof(path), root);

	if (rc < 0)
		return rc;
	if (unlink(path) < 0)
		return errno == ENOENT ? 0 : -errno;
	/* Make the removal durable: a crash from now on must look unclean. */
	{
		int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
	return 1;
}

/* nftw() passes no argument: the first failure of one removal. */
static int rm_first_err;

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *f)
{
	(void)sb;
	(void)flag;
	(void)f;
	if (remove(path) != 0 && errno != ENOENT && rm_first_err == 0)
		rm_first_err = -errno;
	return 0;
}

int
rn_logdir_remove_tree(const char *path)
{
	rm_first_err = 0;
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return rm_first_err;
}

int
rn_logdir_retire(const char *root, const char *name, char *to, size_t tolen)
{
	char from[4200], base[256], hex[33];
	uint8_t raw[16];
	size_t keep = 255 - (1 + 32 + strlen("-delete"));
	int i, fd;

	if (getrandom(raw, sizeof(raw), GRND_NONBLOCK) != sizeof(raw)) {
		uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

		for (i = 0; i < 16; i++, x = x * 6364136223846793005ull + 1)
			raw[i] = (uint8_t)(x >> 56);
	}
	for (i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	snprintf(base, sizeof(base), "%s", name);
	if (strlen(base) > keep)
		base[keep] = '\0';
	snprintf(from, sizeof(from), "%s/%s", root, name);
	if ((size_t)snprintf(to, tolen, "%s/%s.%s-delete", root, base, hex) >=
	    tolen)
		return -ENAMETOOLONG;
	if (rename(from, to) != 0)
		return -errno;
	if ((fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	return 0;
}

int
rn_logdir_discard(const char *root, const char *name)
{
	char to[4200];
	int rc = rn_logdir_retire(root, name, to, sizeof(to));

	if (rc != 0)
		return rc;
	(void)rn_logdir_remove_tree(to);
	return 0;
}
