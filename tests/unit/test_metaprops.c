/*
 * meta.properties without a format step: missing files are written with
 * node.id and directory.id only; a file naming another node stops startup;
 * dirs naming two clusters stop startup; a learned cluster id goes into
 * every dir, and never replaces another one.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/util.h"
#include "storage/metaprops.h"
#include "tests/lib/tap.h"

static char tmp[256];
/* what runneld's worker env gets from rn_metaprops_ensure */
static char env_cid[23];
static uint8_t env_ids[RN_CONFIG_MAX_LOGDIRS][16];

static int
ensure(const struct rn_config *cfg)
{
	return rn_metaprops_ensure(cfg, env_cid, env_ids);
}

static void
load_cfg(struct rn_config *cfg, const char *dirs)
{
	char text[2048], err[256];

	snprintf(text, sizeof(text),
	    "node.id=1\nprocess.roles=broker,controller\n"
	    "listeners=PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:2\n"
	    "controller.listener.names=CONTROLLER\n"
	    "controller.quorum.voters=1@127.0.0.1:2\nlog.dirs=%s\n"
	    "metadata.log.dir=%s/meta\n", dirs, tmp);
	if (rn_config_parse(cfg, text, "test", err, sizeof(err), NULL,
	    NULL) != 0 || rn_config_finish(cfg, err, sizeof(err)) != 0)
		bail("config: %s", err);
}

static void
write_file(const char *dir, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/meta.properties", dir);
	if ((f = fopen(path, "w")) == NULL)
		bail("cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

int
main(void)
{
	struct rn_config cfg;
	struct rn_metaprops mp, mp2;
	char dirs[700], d1[300], d2[300], meta[300], err[512], cid[23];
	uint8_t ids[RN_CONFIG_MAX_LOGDIRS][16];

	rn_log_init("test", NULL, 0);
	snprintf(tmp, sizeof(tmp), "/tmp/rn-test-mp-XXXXXX");
	if (mkdtemp(tmp) == NULL)
		bail("mkdtemp");
	snprintf(d1, sizeof(d1), "%s/d1", tmp);
	snprintf(d2, sizeof(d2), "%s/d2", tmp);
	snprintf(meta, sizeof(meta), "%s/meta", tmp);
	rn_mkdir_p(d1, 0700);
	rn_mkdir_p(d2, 0700);
	rn_mkdir_p(meta, 0700);
	snprintf(dirs, sizeof(dirs), "%s,%s", d1, d2);
	load_cfg(&cfg, dirs);

	is_int(rn_metaprops_read(d1, &mp, err, sizeof(err)), -ENOENT,
	    "no file yet");
	is_int(ensure(&cfg), 0, "ensure writes the files");
	is_int(rn_metaprops_read(d1, &mp, err, sizeof(err)), 0, "d1 parses");
	ok(mp.version == RN_METAPROPS_VERSION && mp.node_id == 1 &&
	    mp.cluster_id[0] == '\0' && mp.has_dir_id,
	    "version 2, node.id 1, directory.id, no cluster.id");
	ok(memcmp(env_ids[0], mp.dir_id, 16) == 0,
	    "env carries d1's directory.id");
	is_int(rn_metaprops_read(meta, &mp2, err, sizeof(err)), 0,
	    "the metadata log dir has one too");
	rn_metaprops_read(d2, &mp2, err, sizeof(err));
	ok(memcmp(mp.dir_id, mp2.dir_id, 16) != 0, "directory ids differ");
	is_int(ensure(&cfg), 0, "ensure again: no change");
	rn_metaprops_read(d1, &mp2, err, sizeof(err));
	ok(memcmp(mp.dir_id, mp2.dir_id, 16) == 0, "directory.id is kept");

	/* learning the cluster id */
	is_int(rn_metaprops_set_cluster_id(&cfg, "MkU3OEVBNTcwNTJENDM2Qg",
	    err, sizeof(err)), 0, "cluster id persisted");
	is_int(rn_metaprops_load(&cfg, cid, ids, err, sizeof(err)), 0,
	    "load");
	is_str(cid, "MkU3OEVBNTcwNTJENDM2Qg", "every dir names it");
	rn_metaprops_read(meta, &mp2, err, sizeof(err));
	is_str(mp2.cluster_id, "MkU3OEVBNTcwNTJENDM2Qg",
	    "the metadata log dir too");
	is_int(rn_metaprops_set_cluster_id(&cfg, "AAAAAAAAAAAAAAAAAAAAAA",
	    err, sizeof(err)), -EEXIST, "another cluster id is refused");
	ok(strstr(err, "refusing") != NULL, "with a reason: %s", err);
	rn_metaprops_read(d2, &mp2, err, sizeof(err));
	is_str(mp2.cluster_id, "MkU3OEVBNTcwNTJENDM2Qg", "and nothing written");

	/* a replaced disk joins the known cluster */
	snprintf(err, sizeof(err), "rm -f %s/meta.properties", d2);
	if (system(err) != 0)
		bail("rm");
	is_int(ensure(&cfg), 0, "ensure with d2 empty");
	rn_metaprops_read(d2, &mp2, err, sizeof(err));
	is_str(mp2.cluster_id, "MkU3OEVBNTcwNTJENDM2Qg",
	    "the new file names the known cluster");
	is_str(env_cid, "MkU3OEVBNTcwNTJENDM2Qg", "env has it");

	/* conflicts stop startup */
	write_file(d2, "#\nversion=1\nnode.id=1\n"
	    "cluster.id=AAAAAAAAAAAAAAAAAAAAAA\n");
	ok(ensure(&cfg) != 0, "two cluster ids: refused");
	write_file(d2, "version=1\nnode.id=7\n");
	ok(ensure(&cfg) != 0, "another node.id: refused");
	write_file(d2, "version=9\nnode.id=1\n");
	ok(rn_metaprops_read(d2, &mp2, err, sizeof(err)) == -EINVAL &&
	    strstr(err, "version") != NULL, "unknown version: %s", err);
	/* Kafka's V1 file without a directory.id gets one */
	write_file(d2, "#\n#Thu Jan 01 00:00:00 UTC 2026\nversion=1\n"
	    "node.id=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n");
	is_int(ensure(&cfg), 0, "Kafka V1 file accepted");
	rn_metaprops_read(d2, &mp2, err, sizeof(err));
	ok(mp2.has_dir_id && mp2.version == 1, "directory.id added, version "
	    "kept");

	snprintf(err, sizeof(err), "rm -rf %s", tmp);
	if (system(err) != 0)
		diag("cannot remove %s", tmp);
	return done_testing();
}
