/*
 * runnel-metadata-quorum: the metadata quorum as kafka-metadata-quorum.sh
 * shows it, from DescribeQuorum on any broker (which forwards it to the
 * active controller).
 *
 *   runnel-metadata-quorum --bootstrap-server H:P describe --status
 *   runnel-metadata-quorum --bootstrap-server H:P describe --replication
 */
#include "autoconf.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "tools/tool_kclient.h"

#define TIMEOUT_MS 30000
#define DQ_VERSION 1

static const char *prog = "runnel-metadata-quorum";

static void
usage(FILE *f)
{
	fprintf(f, "usage: %s --bootstrap-server HOST:PORT describe "
	    "--status|--replication\n", prog);
}

static void
print_ids(const char *label, const struct rn_DescribeQuorumResponse_ReplicaState
    *v, int32_t n)
{
	int32_t i;

	printf("%-24s[", label);
	for (i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", v[i].replica_id);
	printf("]\n");
}

static void
status(const char *cluster_id,
    const struct rn_DescribeQuorumResponse_PartitionData *q)
{
	const struct rn_DescribeQuorumResponse_ReplicaState *leader = NULL,
	    *laggard = NULL;
	int64_t lag = 0, lag_ms = 0;
	int32_t i;

	for (i = 0; i < q->current_voters_count; i++) {
		if (q->current_voters[i].replica_id == q->leader_id)
			leader = &q->current_voters[i];
		if (laggard == NULL || q->current_voters[i].log_end_offset <
		    laggard->log_end_offset)
			laggard = &q->current_voters[i];
	}
	if (leader != NULL && laggard != NULL) {
		lag = leader->log_end_offset - laggard->log_end_offset;
		if (laggard == leader)
			lag_ms = 0;
		else if (leader->last_caught_up_timestamp >= 0 &&
		    laggard->last_caught_up_timestamp >= 0)
			lag_ms = leader->last_caught_up_timestamp -
			    laggard->last_caught_up_timestamp;
		else
			lag_ms = -1;
	}
	printf("%-24s%s\n", "ClusterId:", cluster_id[0] ? cluster_id :
	    "(unknown)");
	printf("%-24s%d\n", "LeaderId:", q->leader_id);
	printf("%-24s%d\n", "LeaderEpoch:", q->leader_epoch);
	printf("%-24s%lld\n", "HighWatermark:", (long long)q->high_watermark);
	printf("%-24s%lld\n", "MaxFollowerLag:", (long long)lag);
	printf("%-24s%lld\n", "MaxFollowerLagTimeMs:", (long long)lag_ms);
	print_ids("CurrentVoters:", q->current_voters,
	    q->current_voters_count);
	print_ids("CurrentObservers:", q->observers, q->observers_count);
}

static void
ts_str(int64_t ts, int64_t now, char *buf, size_t len)
{
	if (ts < 0)
		snprintf(buf, len, "-1");
	else
		snprintf(buf, len, "%lld ms ago", (long long)(now - ts > 0 ?
		    now - ts : 0));
}

static void
replication(const struct rn_DescribeQuorumResponse_PartitionData *q)
{
	const struct rn_DescribeQuorumResponse_ReplicaState *leader = NULL;
	int64_t now = rn_wallclock_ms();
	int32_t i, pass;

	for (i = 0; i < q->current_voters_count; i++)
		if (q->current_voters[i].replica_id == q->leader_id)
			leader = &q->current_voters[i];
	printf("%-8s %-14s %-8s %-20s %-23s %s\n", "NodeId", "LogEndOffset",
	    "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status");
	/* the leader first, then followers, then observers */
	for (pass = 0; pass < 3; pass++) {
		const struct rn_DescribeQuorumResponse_ReplicaState *v =
		    pass < 2 ? q->current_voters : q->observers;
		int32_t n = pass < 2 ? q->current_voters_count :
		    q->observers_count;

		for (i = 0; i < n; i++) {
			char f[32], c[32];
			bool is_leader = pass < 2 && v[i].replica_id ==
			    q->leader_id;

			if ((pass == 0) != is_leader)
				continue;
			ts_str(v[i].last_fetch_timestamp, now, f, sizeof(f));
			ts_str(v[i].last_caught_up_timestamp, now, c, sizeof(c));
			printf("%-8d %-14lld %-8lld %-20s %-23s %s\n",
			    v[i].replica_id, (long long)v[i].log_end_offset,
			    (long long)(leader != NULL ? leader->log_end_offset -
			    v[i].log_end_offset : 0), f, c, pass == 0 ?
			    "Leader" : pass == 1 ? "Follower" : "Observer");
		}
	}
}

/* The mode ('s' or 'r') from the command line; -1 to go on, else the
 * exit code. */
static int
parse_args(int argc, char **argv, const char **bootstrap, int *mode)
{
	static const struct option opts[] = {
		{ "bootstrap-server", required_argument, NULL, 'b' },
		{ "status", no_argument, NULL, 's' },
		{ "replication", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'b': *bootstrap = optarg; break;
		case 's': *mode = 's'; break;
		case 'r': *mode = 'r'; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (*bootstrap == NULL || optind >= argc ||
	    strcmp(argv[optind], "describe") != 0) {
		usage(stderr);
		return 2;
	}
	/* options may also follow the verb */
	for (optind++; optind < argc; optind++) {
		if (strcmp(argv[optind], "--status") == 0)
			*mode = 's';
		else if (strcmp(argv[optind], "--replication") == 0)
			*mode = 'r';
		else {
			fprintf(stderr, "%s: unknown argument %s\n", prog,
			    argv[optind]);
			return 2;
		}
	}
	if (*mode == 0) {
		fprintf(stderr, "%s: describe needs --status or "
		    "--replication\n", prog);
		return 2;
	}
	return -1;
}

/* The error a DescribeQuorum answer carries, 0 if none. */
static int16_t
quorum_error(const struct rn_DescribeQuorumResponse *resp)
{
	if (resp->error_code != 0)
		return resp->error_code;
	if (resp->topics_count != 1 || resp->topics[0].partitions_count != 1)
		return RN_KERR_UNKNOWN_SERVER_ERROR;
	return resp->topics[0].partitions[0].error_code;
}

/* The metadata partition's quorum; NULL after saying why. */
static const struct rn_DescribeQuorumResponse_PartitionData *
describe_quorum(int fd, struct rn_arena *arena,
    struct rn_DescribeQuorumResponse *resp)
{
	struct rn_DescribeQuorumRequest req;
	struct rn_DescribeQuorumRequest_TopicData td;
	struct rn_DescribeQuorumRequest_PartitionData pd;
	const struct rn_DescribeQuorumResponse_PartitionData *q = NULL;
	char err[512];

	rn_DescribeQuorumRequest_init(&req);
	rn_DescribeQuorumRequest_TopicData_init(&td);
	rn_DescribeQuorumRequest_PartitionData_init(&pd);
	pd.partition_index = 0;
	td.topic_name = rn_kstr_c("__cluster_metadata");
	td.partitions = &pd;
	td.partitions_count = 1;
	req.topics = &td;
	req.topics_count = 1;
	if (tkc_call_api(fd, RN_KAPI_DESCRIBE_QUORUM, DQ_VERSION, &req, arena,
	    resp, TIMEOUT_MS, err, sizeof(err)) != 0)
		fprintf(stderr, "%s: DescribeQuorum: %s\n", prog, err);
	else if (quorum_error(resp) != 0)
		fprintf(stderr, "%s: DescribeQuorum failed: %s\n", prog,
		    rn_kerr_name(quorum_error(resp)));
	else
		q = &resp->topics[0].partitions[0];
	return q;
}

int
main(int argc, char **argv)
{
	struct rn_DescribeQuorumResponse resp;
	const struct rn_DescribeQuorumResponse_PartitionData *q;
	const char *bootstrap = NULL;
	struct rn_arena arena;
	char err[512], cid[64];
	int mode = 0, fd, rc;

	if ((rc = parse_args(argc, argv, &bootstrap, &mode)) >= 0)
		return rc;
	if ((fd = tkc_connect(bootstrap, 10000, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	rn_arena_init(&arena, 16u << 20);
	rc = 1;
	if ((q = describe_quorum(fd, &arena, &resp)) != NULL) {
		if (mode == 's') {
			tkc_cluster_id(fd, TIMEOUT_MS, &arena, cid,
			    sizeof(cid));
			status(cid, q);
		} else
			replication(q);
		rc = 0;
	}
	rn_arena_free(&arena);
	close(fd);
	return rc;
}
