/*
 * runnel-storage: a node's log directories before it starts.
 *
 *   runnel-storage random-uuid
 *   runnel-storage format --config FILE [--cluster-id ID] [--ignore-formatted]
 *                         [--add-scram MECHANISM=[name=U,password=P]]...
 *   runnel-storage info --config FILE
 *
 * format writes meta.properties version 2 (KIP-1262) into every log dir
 * and the metadata log dir: node.id, a fresh directory.id per dir, and
 * cluster.id when given. Without --cluster-id the node learns the id from
 * the metadata log and writes it itself. Formatting is never needed for a
 * broker; it pins the cluster id so the node can only join that cluster.
 * The file is read and written by storage/metaprops.c, the code
 * runneld itself uses, so the two can never disagree on its format.
 * --add-scram, as Kafka's, leaves SCRAM credentials for the cluster's
 * first start: bootstrap.scram in metadata.log.dir (common/scram_boot.h),
 * which the founding controller turns into UserScramCredential records.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "common/config.h"
#include "common/scram_boot.h"
#include "common/util.h"
#include "storage/metaprops.h"
#include "tools/storage_scram.h"

#define EXIT_USAGE 2

struct dir {
	const char *path;
	int state; /* 0 formatted, 1 empty, -1 unreadable */
	struct rn_metaprops mp;
	char err[512];
	int lock_fd;
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: runnel-storage random-uuid\n"
	    "       runnel-storage format --config FILE [--cluster-id ID] "
	    "[--ignore-formatted]\n"
	    "              [--add-scram 'SCRAM-SHA-256=[name=U,password=P]']...\n"
	    "       runnel-storage info --config FILE\n"
	    "format writes meta.properties (version 2) into each of log.dirs "
	    "and\nmetadata.log.dir; --cluster-id is optional (KIP-1262). "
	    "--ignore-formatted\nleaves dirs that already have meta.properties "
	    "as they are. --add-scram\n(repeatable; iterations=N, or "
	    "salt=B64,saltedpassword=B64 for password=)\ngives the cluster "
	    "SCRAM credentials at its first start.\n");
}

/* A Kafka Uuid that does not start with '-', so it can be a flag value. */
static int
new_uuid(struct rn_uuid *u, char s[23])
{
	int rc;

	do {
		if ((rc = rn_uuid_random(u)) != 0)
			return rc;
		rn_uuid_str(u, s);
	} while (s[0] == '-');
	return 0;
}

static void
config_warn(void *arg, const char *msg)
{
	fprintf(stderr, "runnel-storage: warning: %s\n", msg);
}

/* log.dirs then metadata.log.dir, without repeats. */
static int
load_dirs(const char *config, struct rn_config *cfg, struct dir **dirsp)
{
	char err[512];
	struct dir *dirs;
	int i, j, n = 0, rc;

	if (rn_config_load(cfg, config, err, sizeof(err), config_warn,
	    NULL) != 0 || rn_config_finish(cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "runnel-storage: %s\n", err);
		return -1;
	}
	if ((dirs = calloc((size_t)cfg->n_log_dirs + 2, sizeof(*dirs))) ==
	    NULL)
		return -1;
	for (i = 0; i < cfg->n_log_dirs; i++)
		dirs[n++].path = cfg->log_dirs[i];
	if (cfg->metadata_log_dir[0] != '\0') {
		for (j = 0; j < n; j++)
			if (strcmp(dirs[j].path, cfg->metadata_log_dir) == 0)
				break;
		if (j == n)
			dirs[n++].path = cfg->metadata_log_dir;
	}
	if (n == 0) {
		fprintf(stderr, "runnel-storage: %s names no log.dirs\n",
		    config);
		free(dirs);
		return -1;
	}
	for (i = 0; i < n; i++) {
		dirs[i].lock_fd = -1;
		rc = rn_metaprops_read(dirs[i].path, &dirs[i].mp,
		    dirs[i].err, sizeof(dirs[i].err));
		dirs[i].state = rc == 0 ? 0 : rc == -ENOENT ? 1 : -1;
	}
	*dirsp = dirs;
	return n;
}

/*
 * Take the dir's lock as runneld does, so a running node's dirs are never
 * formatted under it. The fd stays open until exit.
 */
static int
lock_dir(struct dir *d)
{
	char path[4200];
	int rc;

	if ((rc = rn_mkdir_p(d->path, 0750)) != 0) {
		fprintf(stderr, "runnel-storage: cannot create %s: %s\n",
		    d->path, strerror(-rc));
		return -1;
	}
	snprintf(path, sizeof(path), "%s/.lock", d->path);
	if ((d->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) ==
	    -1) {
		fprintf(stderr, "runnel-storage: cannot open %s: %s\n", path,
		    strerror(errno));
		return -1;
	}
	if (flock(d->lock_fd, LOCK_EX | LOCK_NB) == -1) {
		fprintf(stderr, "runnel-storage: %s is in use (locked by a "
		    "running runneld?); stop the node first\n", d->path);
		return -1;
	}
	return 0;
}

/*
 * How many dirs are empty (to format), or -1 after saying why one that is
 * formatted stops the format: another node's or cluster's, or formatted
 * at all without --ignore-formatted.
 */
static int
check_dirs(const struct dir *dirs, int n, const struct rn_config *cfg,
    const char *config, const char *cluster_id, bool ignore)
{
	int i, empty = 0;

	for (i = 0; i < n; i++) {
		const struct dir *d = &dirs[i];

		if (d->state < 0) {
			fprintf(stderr, "runnel-storage: %s\n", d->err);
			return -1;
		}
		if (d->state == 1) {
			empty++;
			continue;
		}
		/* a formatted dir must belong to this node and cluster */
		if (d->mp.node_id >= 0 && d->mp.node_id != cfg->node_id) {
			fprintf(stderr, "runnel-storage: %s belongs to node.id "
			    "%d, but %s says node.id=%d\n", d->path,
			    d->mp.node_id, config, cfg->node_id);
			return -1;
		}
		if (cluster_id != NULL && d->mp.cluster_id[0] != '\0' &&
		    strcmp(d->mp.cluster_id, cluster_id) != 0) {
			fprintf(stderr, "runnel-storage: %s belongs to cluster "
			    "%s, not %s\n", d->path, d->mp.cluster_id,
			    cluster_id);
			return -1;
		}
		if (!ignore) {
			fprintf(stderr, "runnel-storage: log directory %s is "
			    "already formatted (it has %s); "
			    "--ignore-formatted skips formatted dirs and "
			    "formats the others\n", d->path, RN_METAPROPS_FILE);
			return -1;
		}
	}
	return empty;
}

/* A directory id no dir of this node has yet; 0, or -1 after saying why. */
static int
new_dir_id(const struct dir *dirs, int n, struct rn_uuid *did, char idstr[23])
{
	bool dup;
	int j;

	do {
		if (new_uuid(did, idstr) != 0) {
			fprintf(stderr, "runnel-storage: no randomness: %s\n",
			    strerror(errno));
			return -1;
		}
		dup = false;
		for (j = 0; j < n; j++)
			if (dirs[j].mp.has_dir_id &&
			    memcmp(dirs[j].mp.dir_id, did->b, 16) == 0)
				dup = true;
	} while (dup);
	return 0;
}

/* Write meta.properties into dirs[i]; 0, or -1 after saying why. */
static int
format_dir(struct dir *dirs, int n, int i, const struct rn_config *cfg,
    const char *cluster_id)
{
	struct dir *d = &dirs[i];
	struct rn_metaprops mp;
	struct rn_uuid did;
	char idstr[23];
	int werr;

	memset(&mp, 0, sizeof(mp));
	mp.version = RN_METAPROPS_VERSION;
	mp.node_id = cfg->node_id;
	mp.has_dir_id = true;
	if (cluster_id != NULL)
		strlcpy(mp.cluster_id, cluster_id, sizeof(mp.cluster_id));
	/* directory ids are unique within the node */
	if (new_dir_id(dirs, n, &did, idstr) != 0)
		return -1;
	memcpy(mp.dir_id, did.b, 16);
	if ((werr = rn_metaprops_write(d->path, &mp)) != 0) {
		fprintf(stderr, "runnel-storage: cannot write %s/%s: %s\n",
		    d->path, RN_METAPROPS_FILE, strerror(-werr));
		return -1;
	}
	d->mp = mp;
	printf("Formatted %s: node.id=%d directory.id=%s %s%s\n",
	    d->path, mp.node_id, idstr,
	    cluster_id ? "cluster.id=" : "no cluster.id (the node "
	    "learns it from the cluster)", cluster_id ? cluster_id : "");
	return 0;
}

/*
 * The --add-scram credentials into the metadata log dir, which must be
 * one this run formats: a started node's metadata log would never read
 * them. 0, or -1 after saying why.
 */
static int
write_scram(const struct dir *dirs, int n, const struct rn_config *cfg,
    const struct rn_scram_cred *scram, int n_scram)
{
	int i, rc;

	for (i = 0; i < n; i++)
		if (strcmp(dirs[i].path, cfg->metadata_log_dir) == 0)
			break;
	if (i == n || dirs[i].state != 1) {
		fprintf(stderr, "runnel-storage: --add-scram needs an "
		    "unformatted metadata.log.dir, and %s is formatted: its "
		    "cluster has started or will start without them; use "
		    "runnel-configs --alter --entity-type users instead\n",
		    cfg->metadata_log_dir);
		return -1;
	}
	if ((rc = rn_scram_boot_write(cfg->metadata_log_dir, scram,
	    n_scram)) != 0) {
		fprintf(stderr, "runnel-storage: cannot write %s/%s: %s\n",
		    cfg->metadata_log_dir, RN_SCRAM_BOOT_FILE, strerror(-rc));
		return -1;
	}
	for (i = 0; i < n_scram; i++)
		printf("SCRAM credential %s for user %s (iterations=%d) "
		    "written to %s/%s\n", rn_scram_mech_name(scram[i].mech),
		    scram[i].name, (int)scram[i].iterations,
		    cfg->metadata_log_dir, RN_SCRAM_BOOT_FILE);
	return 0;
}

static int
cmd_format(const char *config, const char *cluster_id, bool ignore,
    const struct rn_scram_cred *scram, int n_scram)
{
	struct rn_config cfg;
	struct dir *dirs = NULL;
	struct rn_uuid cid;
	int i, n, empty, rc = 1;

	/* Kafka takes any string; runnel keeps cluster ids as Kafka Uuids */
	if (cluster_id != NULL && (rn_uuid_parse(cluster_id, &cid) != 0 ||
	    rn_uuid_is_zero(&cid))) {
		fprintf(stderr, "runnel-storage: --cluster-id '%s' is not a "
		    "Kafka Uuid (22 base64url characters); runnel-storage "
		    "random-uuid makes one\n", cluster_id);
		return 1;
	}
	if ((n = load_dirs(config, &cfg, &dirs)) < 0)
		return 1;
	if ((empty = check_dirs(dirs, n, &cfg, config, cluster_id, ignore)) <
	    0)
		goto out;
	if (empty == 0 && n_scram == 0) {
		printf("Every log directory is already formatted.\n");
		rc = 0;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (dirs[i].state == 1 && lock_dir(&dirs[i]) != 0)
			goto out;
	if (n_scram > 0 && write_scram(dirs, n, &cfg, scram, n_scram) != 0)
		goto out;
	for (i = 0; i < n; i++)
		if (dirs[i].state == 1 &&
		    format_dir(dirs, n, i, &cfg, cluster_id) != 0)
			goto out;
	rc = 0;
out:
	for (i = 0; dirs != NULL && i < n; i++)
		if (dirs[i].lock_fd != -1)
			close(dirs[i].lock_fd);
	free(dirs);
	return rc;
}

static int
cmd_info(const char *config)
{
	struct rn_config cfg;
	struct dir *dirs = NULL;
	const char *cluster = NULL;
	struct rn_uuid u;
	char id[23];
	int i, j, n, problems = 0;

	if ((n = load_dirs(config, &cfg, &dirs)) < 0)
		return 1;
	for (i = 0; i < n; i++) {
		struct dir *d = &dirs[i];

		if (d->state < 0) {
			printf("%s: unreadable: %s\n", d->path, d->err);
			problems++;
			continue;
		}
		if (d->state == 1) {
			printf("%s: not formatted (no %s; runneld writes one "
			    "at start)\n", d->path, RN_METAPROPS_FILE);
			continue;
		}
		printf("%s: formatted\n", d->path);
		printf("  version=%d\n", d->mp.version);
		if (d->mp.cluster_id[0] != '\0')
			printf("  cluster.id=%s\n", d->mp.cluster_id);
		else
			printf("  cluster.id is not known yet\n");
		if (d->mp.node_id >= 0)
			printf("  node.id=%d\n", d->mp.node_id);
		if (d->mp.has_dir_id) {
			memcpy(u.b, d->mp.dir_id, 16);
			rn_uuid_str(&u, id);
			printf("  directory.id=%s\n", id);
		}
		if (d->mp.node_id >= 0 && d->mp.node_id != cfg.node_id) {
			printf("  problem: node.id %d differs from the "
			    "config's %d\n", d->mp.node_id, cfg.node_id);
			problems++;
		}
		if (d->mp.cluster_id[0] != '\0') {
			if (cluster == NULL)
				cluster = d->mp.cluster_id;
			else if (strcmp(cluster, d->mp.cluster_id) != 0) {
				printf("  problem: cluster.id differs from "
				    "another dir's (%s)\n", cluster);
				problems++;
			}
		}
		for (j = 0; j < i; j++)
			if (dirs[j].state == 0 && d->mp.has_dir_id &&
			    dirs[j].mp.has_dir_id &&
			    memcmp(dirs[j].mp.dir_id, d->mp.dir_id, 16) == 0) {
				printf("  problem: same directory.id as %s\n",
				    dirs[j].path);
				problems++;
			}
	}
	if (problems)
		printf("%d problem%s found\n", problems, problems > 1 ? "s" :
		    "");
	free(dirs);
	return problems ? 1 : 0;
}

int
main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "cluster-id", required_argument, NULL, 't' },
		{ "ignore-formatted", no_argument, NULL, 'g' },
		{ "add-scram", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *verb, *config = NULL, *cluster_id = NULL;
	static struct rn_scram_cred scram[RN_SCRAM_BOOT_MAX];
	bool ignore = false;
	char err[256];
	int ch, i, n_scram = 0, rc;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	verb = argv[1];
	if (strcmp(verb, "-h") == 0 || strcmp(verb, "--help") == 0) {
		usage(stdout);
		return 0;
	}
	optind = 2;
	while ((ch = getopt_long(argc, argv, "c:t:gs:h", lopts, NULL)) != -1) {
		switch (ch) {
		case 'c': config = optarg; break;
		case 't': cluster_id = optarg; break;
		case 'g': ignore = true; break;
		case 's':
			if (n_scram == RN_SCRAM_BOOT_MAX) {
				fprintf(stderr, "runnel-storage: at most %d "
				    "--add-scram\n", RN_SCRAM_BOOT_MAX);
				return EXIT_USAGE;
			}
			if (storage_scram_parse(optarg, &scram[n_scram], err,
			    sizeof(err)) != 0) {
				fprintf(stderr, "runnel-storage: --add-scram: "
				    "%s\n", err);
				return EXIT_USAGE;
			}
			for (i = 0; i < n_scram; i++)
				if (rn_scram_cmp(&scram[i], &scram[n_scram]) ==
				    0) {
					fprintf(stderr, "runnel-storage: "
					    "--add-scram: %s for user %s is "
					    "given twice\n", rn_scram_mech_name(
					    scram[i].mech), scram[i].name);
					return EXIT_USAGE;
				}
			n_scram++;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "runnel-storage: unexpected argument '%s'\n",
		    argv[optind]);
		return EXIT_USAGE;
	}
	if (strcmp(verb, "random-uuid") == 0) {
		struct rn_uuid u;
		char s[23];

		if (config || cluster_id || ignore || n_scram) {
			fprintf(stderr, "runnel-storage: random-uuid takes no "
			    "options\n");
			return EXIT_USAGE;
		}
		if (new_uuid(&u, s) != 0) {
			fprintf(stderr, "runnel-storage: no randomness: %s\n",
			    strerror(errno));
			return 1;
		}
		printf("%s\n", s);
		return 0;
	}
	if (strcmp(verb, "format") != 0 && strcmp(verb, "info") != 0) {
		fprintf(stderr, "runnel-storage: unknown command '%s'\n", verb);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (config == NULL) {
		fprintf(stderr, "runnel-storage: %s needs --config FILE\n",
		    verb);
		return EXIT_USAGE;
	}
	if (strcmp(verb, "info") == 0) {
		if (cluster_id || ignore || n_scram) {
			fprintf(stderr, "runnel-storage: info takes only "
			    "--config\n");
			return EXIT_USAGE;
		}
		return cmd_info(config);
	}
	rc = cmd_format(config, cluster_id, ignore, scram, n_scram);
	for (i = 0; i < n_scram; i++)
		storage_scram_free(&scram[i]);
	return rc;
}
