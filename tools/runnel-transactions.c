/*
 * runnel-transactions: kafka-transactions.sh's verbs.
 *
 *   runnel-transactions --bootstrap-server H:P [--command-config FILE] VERB
 *
 *   describe-producers --topic T --partition P [--broker-id B]
 *   abort --topic T --partition P --start-offset O
 *   abort --topic T --partition P --producer-id ID --producer-epoch E
 *         --coordinator-epoch C
 *   find-hanging (--broker-id B | --topic T [--partition P])
 *         [--max-transaction-timeout MINUTES]
 *   list [--duration-filter MS]
 *   describe --transactional-id ID
 *
 * Requests go in plain text over tool_kclient (DescribeProducers,
 * WriteTxnMarkers, ListTransactions and DescribeTransactions are not in
 * librdkafka 2.0.2's admin API). The verbs that ask the transaction
 * coordinators are in txn_coord_verbs.c.
 */
#include "autoconf.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "protocol/kerrors.h"
#include "tools/tool_common.h"
#include "tools/txn_client.h"
#include "tools/txn_coord_verbs.h"

struct args {
	const char *bootstrap, *verb, *topic, *txn_id;
	long partition, broker, start_offset, pid, epoch, cepoch, max_min,
	    duration;
	struct tool_props props;
};

static void
usage(FILE *f)
{
	fprintf(f,
"usage: runnel-transactions --bootstrap-server HOST:PORT\n"
"           [--command-config FILE] VERB [OPTIONS]\n"
"\n"
"VERBS\n"
"  describe-producers --topic TOPIC --partition P [--broker-id ID]\n"
"      The active producers of a partition, as its leader (or broker ID's\n"
"      replica) has them: id, epoch, coordinator epoch of the last marker,\n"
"      last sequence and timestamp, and where its open transaction starts.\n"
"  abort --topic TOPIC --partition P --start-offset OFFSET\n"
"      Abort the open transaction that starts at OFFSET: the producer is\n"
"      found with DescribeProducers, then the leader writes its abort marker.\n"
"  abort --topic TOPIC --partition P --producer-id ID --producer-epoch E\n"
"        --coordinator-epoch C\n"
"      Write an abort marker for that producer on the partition.\n"
"  find-hanging (--broker-id ID | --topic TOPIC [--partition P])\n"
"        [--max-transaction-timeout MINUTES]\n"
"      Open transactions whose producer last wrote longer ago than the\n"
"      largest transaction timeout (15 minutes by default) and that their\n"
"      coordinator does not know as ongoing on that partition.\n"
"  list [--duration-filter MS]\n"
"      The transactional ids every broker coordinates, with their producer\n"
"      id and state; only transactions running longer than MS if given.\n"
"  describe --transactional-id ID\n"
"      ID's state at its coordinator: producer id and epoch, state,\n"
"      timeout, start time and the partitions of its transaction.\n"
"\n"
"OPTIONS\n"
"  --bootstrap-server HOST:PORT   a broker's plain-text listener\n"
"  --command-config FILE          client properties (security.protocol\n"
"                                 must be PLAINTEXT)\n"
"  --help                         this text\n"
"\n"
"EXIT STATUS\n"
"  0 done, 1 failed (the broker's error is printed), 2 bad usage\n");
}

enum {
	O_TOPIC = 1, O_PART, O_BROKER, O_START, O_PID, O_EPOCH, O_CEPOCH,
	O_MAXTO, O_TXNID, O_DURATION,
};

static int
parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "bootstrap-server", required_argument, NULL, 'b' },
		{ "topic", required_argument, NULL, O_TOPIC },
		{ "partition", required_argument, NULL, O_PART },
		{ "broker-id", required_argument, NULL, O_BROKER },
		{ "start-offset", required_argument, NULL, O_START },
		{ "producer-id", required_argument, NULL, O_PID },
		{ "producer-epoch", required_argument, NULL, O_EPOCH },
		{ "coordinator-epoch", required_argument, NULL, O_CEPOCH },
		{ "max-transaction-timeout", required_argument, NULL, O_MAXTO },
		{ "transactional-id", required_argument, NULL, O_TXNID },
		{ "duration-filter", required_argument, NULL, O_DURATION },
		TOOL_LOPT_CLIENT,
		{ NULL, 0, NULL, 0 },
	};
	int ch, rc = 0;

	a->partition = a->broker = a->start_offset = a->pid = a->epoch =
	    a->cepoch = -1;
	a->max_min = 15;
	a->duration = -1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'b': a->bootstrap = optarg; break;
		case O_TOPIC: a->topic = optarg; break;
		case O_PART: rc = tool_opt_long("--partition", optarg, 0,
		    INT32_MAX, &a->partition); break;
		case O_BROKER: rc = tool_opt_long("--broker-id", optarg, 0,
		    INT32_MAX, &a->broker); break;
		case O_START: rc = tool_opt_long("--start-offset", optarg, 0,
		    INT64_MAX, &a->start_offset); break;
		case O_PID: rc = tool_opt_long("--producer-id", optarg, 0,
		    INT64_MAX, &a->pid); break;
		case O_EPOCH: rc = tool_opt_long("--producer-epoch", optarg, 0,
		    INT16_MAX, &a->epoch); break;
		case O_CEPOCH: rc = tool_opt_long("--coordinator-epoch",
		    optarg, 0, INT32_MAX, &a->cepoch); break;
		case O_MAXTO: rc = tool_opt_long("--max-transaction-timeout",
		    optarg, 0, INT32_MAX, &a->max_min); break;
		case O_TXNID: a->txn_id = optarg; break;
		case O_DURATION: rc = tool_opt_long("--duration-filter",
		    optarg, -1, INT64_MAX, &a->duration); break;
		case TOOL_O_CMD_CONFIG:
			rc = tool_props_load_file(&a->props, optarg);
			break;
		case 'h': usage(stdout); return TOOL_EXIT_OK;
		default: usage(stderr); return TOOL_EXIT_USAGE;
		}
		if (rc != 0)
			return TOOL_EXIT_USAGE;
	}
	if (optind + 1 != argc || a->bootstrap == NULL) {
		usage(stderr);
		return TOOL_EXIT_USAGE;
	}
	a->verb = argv[optind];
	if (tool_check_bootstrap(a->bootstrap) != 0)
		return TOOL_EXIT_USAGE;
	if (!tool_plaintext_only(&a->props)) {
		tool_errx("only a PLAINTEXT listener is supported (the "
		    "requests it sends are not in librdkafka)");
		return TOOL_EXIT_USAGE;
	}
	return -1;
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The cluster's metadata, or NULL after saying why. */
static struct rn_MetadataResponse *
metadata(const struct args *a, struct rn_arena *ar)
{
	static struct rn_MetadataResponse md;
	char err[256];

	if (txc_metadata(a->bootstrap, TOOL_DEFAULT_TIMEOUT_MS, ar, &md, err,
	    sizeof(err)) != 0) {
		tool_errx("cannot read the cluster's metadata: %s", err);
		return NULL;
	}
	return &md;
}

/* The partition's producers as broker (its leader if -1) has them. */
static int
producers_of(const struct rn_MetadataResponse *md,
    const char *topic, int32_t p, int32_t broker, struct rn_arena *ar,
    const struct rn_DescribeProducersResponse_PartitionResponse **out)
{
	static struct rn_DescribeProducersResponse resp;
	struct rn_DescribeProducersRequest_TopicRequest tr;
	struct rn_DescribeProducersRequest req;
	const struct rn_MetadataResponse_MetadataResponsePartition *mp =
	    txc_partition(txc_topic(md, topic), p);
	int32_t parts[1] = { p };
	char err[256];
	int16_t e;

	if (mp == NULL) {
		tool_errx("%s-%d: %s", topic, p,
		    rn_kerr_name(RN_KERR_UNKNOWN_TOPIC_OR_PARTITION));
		return -1;
	}
	if (broker < 0 && (broker = mp->leader_id) < 0) {
		tool_errx("%s-%d has no leader now", topic, p);
		return -1;
	}
	rn_DescribeProducersRequest_init(&req);
	rn_DescribeProducersRequest_TopicRequest_init(&tr);
	tr.name.ptr = topic;
	tr.name.len = (int32_t)strlen(topic);
	tr.partition_indexes = parts;
	tr.partition_indexes_count = 1;
	req.topics = &tr;
	req.topics_count = 1;
	if (txc_describe_producers(md, broker, &req, TOOL_DEFAULT_TIMEOUT_MS,
	    ar, &resp, err, sizeof(err)) != 0) {
		tool_errx("DescribeProducers to broker %d: %s", broker, err);
		return -1;
	}
	if (resp.topics_count != 1 || resp.topics[0].partitions_count != 1) {
		tool_errx("DescribeProducers: the answer does not name %s-%d",
		    topic, p);
		return -1;
	}
	*out = &resp.topics[0].partitions[0];
	if ((e = (*out)->error_code) != 0) {
		tool_errx("%s-%d: %s%s%.*s", topic, p, rn_kerr_name(e),
		    (*out)->error_message.len > 0 ? ": " : "",
		    (int)((*out)->error_message.len > 0 ?
		    (*out)->error_message.len : 0),
		    (*out)->error_message.ptr);
		return -1;
	}
	return 0;
}

static int
describe_producers(const struct args *a, struct rn_arena *ar)
{
	const struct rn_DescribeProducersResponse_PartitionResponse *pr;
	const struct rn_MetadataResponse *md;

	if (a->topic == NULL || a->partition < 0) {
		tool_errx("describe-producers needs --topic and --partition");
		return TOOL_EXIT_USAGE;
	}
	if ((md = metadata(a, ar)) == NULL ||
	    producers_of(md, a->topic, (int32_t)a->partition,
	    (int32_t)a->broker, ar, &pr) != 0)
		return TOOL_EXIT_FAIL;
	printf("%-20s %-14s %-23s %-13s %-15s %s\n", "ProducerId",
	    "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
	    "LastTimestamp", "CurrentTransactionStartOffset");
	for (int i = 0; i < pr->active_producers_count; i++) {
		const struct rn_DescribeProducersResponse_ProducerState *s =
		    &pr->active_producers[i];
		char start[24];

		if (s->current_txn_start_offset >= 0)
			snprintf(start, sizeof(start), "%" PRId64,
			    s->current_txn_start_offset);
		else
			snprintf(start, sizeof(start), "None");
		printf("%-20" PRId64 " %-14d %-23d %-13d %-15" PRId64 " %s\n",
		    s->producer_id, s->producer_epoch, s->coordinator_epoch,
		    s->last_sequence, s->last_timestamp, start);
	}
	return TOOL_EXIT_OK;
}

static int
abort_txn(const struct args *a, struct rn_arena *ar)
{
	const struct rn_MetadataResponse_MetadataResponsePartition *mp;
	const struct rn_MetadataResponse *md;
	int64_t pid = a->pid;
	int32_t epoch = (int32_t)a->epoch, cepoch = (int32_t)a->cepoch;
	char err[256];
	int16_t e;

	if (a->topic == NULL || a->partition < 0 || (a->start_offset < 0 &&
	    (a->pid < 0 || a->epoch < 0 || a->cepoch < 0))) {
		tool_errx("abort needs --topic, --partition and either "
		    "--start-offset or --producer-id, --producer-epoch and "
		    "--coordinator-epoch");
		return TOOL_EXIT_USAGE;
	}
	if ((md = metadata(a, ar)) == NULL)
		return TOOL_EXIT_FAIL;
	if (a->start_offset >= 0) {
		const struct rn_DescribeProducersResponse_PartitionResponse *pr;
		int i;

		if (producers_of(md, a->topic, (int32_t)a->partition, -1,
		    ar, &pr) != 0)
			return TOOL_EXIT_FAIL;
		for (i = 0; i < pr->active_producers_count; i++)
			if (pr->active_producers[i].current_txn_start_offset ==
			    a->start_offset)
				break;
		if (i == pr->active_producers_count) {
			tool_errx("no open transaction starts at offset %ld of "
			    "%s-%ld", a->start_offset, a->topic, a->partition);
			return TOOL_EXIT_FAIL;
		}
		pid = pr->active_producers[i].producer_id;
		epoch = pr->active_producers[i].producer_epoch;
		/* as Kafka's tool: the epoch of the producer's last marker,
		 * 0 when it has none */
		cepoch = pr->active_producers[i].coordinator_epoch >= 0 ?
		    pr->active_producers[i].coordinator_epoch : 0;
	}
	mp = txc_partition(txc_topic(md, a->topic), (int32_t)a->partition);
	if (mp == NULL || mp->leader_id < 0) {
		tool_errx("%s-%ld: no such partition, or no leader now",
		    a->topic, a->partition);
		return TOOL_EXIT_FAIL;
	}
	e = txc_abort(md, mp->leader_id, a->topic, (int32_t)a->partition, pid,
	    (int16_t)epoch, cepoch, TOOL_DEFAULT_TIMEOUT_MS, ar, err,
	    sizeof(err));
	if (e < 0) {
		tool_errx("WriteTxnMarkers to broker %d: %s", mp->leader_id,
		    err);
		return TOOL_EXIT_FAIL;
	}
	if (e != 0) {
		tool_errx("aborting producer %" PRId64 "'s transaction on "
		    "%s-%ld: %s", pid, a->topic, a->partition,
		    rn_kerr_name(e));
		return TOOL_EXIT_FAIL;
	}
	printf("Aborted the transaction of producer %" PRId64 " (epoch %d, "
	    "coordinator epoch %d) on %s-%ld\n", pid, epoch, cepoch, a->topic,
	    a->partition);
	return TOOL_EXIT_OK;
}

/* One hanging transaction's line; the header before the first. */
static void
hanging_line(int *shown, const struct txv_open *o, int64_t now)
{
	const struct rn_DescribeProducersResponse_ProducerState *s = &o->s;

	if ((*shown)++ == 0)
		printf("%-24s %-10s %-20s %-14s %-17s %-12s %-15s %s\n",
		    "Topic", "Partition", "ProducerId", "ProducerEpoch",
		    "CoordinatorEpoch", "StartOffset", "LastTimestamp",
		    "Duration(min)");
	printf("%-24s %-10d %-20" PRId64 " %-14d %-17d %-12" PRId64
	    " %-15" PRId64 " %" PRId64 "\n", o->topic, o->partition,
	    s->producer_id, s->producer_epoch, s->coordinator_epoch,
	    s->current_txn_start_offset, s->last_timestamp,
	    (now - s->last_timestamp) / 60000);
}

/* Candidates: open transactions whose producer last wrote longer ago than
 * the largest timeout, gathered before the coordinators are asked. */
struct candidates {
	struct txv_open *v;
	int n, cap;
};

/* One partition's candidates added to c; 0, or -1 after saying why. */
static int
candidates_in(const struct args *a, const struct rn_MetadataResponse *md,
    const char *topic, int32_t p, int32_t broker, struct rn_arena *ar,
    struct candidates *c)
{
	const struct rn_DescribeProducersResponse_PartitionResponse *pr;
	int64_t now = wall_ms(), max_ms = (int64_t)a->max_min * 60000;
	const char *name = NULL;

	if (producers_of(md, topic, p, broker, ar, &pr) != 0)
		return -1;
	for (int i = 0; i < pr->active_producers_count; i++) {
		const struct rn_DescribeProducersResponse_ProducerState *s =
		    &pr->active_producers[i];

		if (s->current_txn_start_offset < 0 ||
		    s->last_timestamp < 0 || now - s->last_timestamp <= max_ms)
			continue;
		if (c->n == c->cap) {
			int cap = c->cap ? c->cap * 2 : 16;
			struct txv_open *v = realloc(c->v,
			    sizeof(*v) * (size_t)cap);

			if (v == NULL) {
				tool_errx("out of memory");
				return -1;
			}
			c->v = v;
			c->cap = cap;
		}
		if (name == NULL &&
		    (name = rn_arena_strndup(ar, topic, strlen(topic))) ==
		    NULL) {
			tool_errx("out of memory");
			return -1;
		}
		c->v[c->n].topic = name;
		c->v[c->n].partition = p;
		c->v[c->n].s = *s;
		c->v[c->n].hanging = false;
		c->n++;
	}
	return 0;
}

static int
find_hanging(const struct args *a, struct rn_arena *ar)
{
	const struct rn_MetadataResponse *md;
	struct candidates c = { NULL, 0, 0 };
	int shown = 0, failed = 0;
	char name[256];
	int64_t now;

	if ((a->broker < 0) == (a->topic == NULL) ||
	    (a->partition >= 0 && a->topic == NULL)) {
		tool_errx("find-hanging needs either --broker-id or --topic "
		    "(with --partition if wanted)");
		return TOOL_EXIT_USAGE;
	}
	if ((md = metadata(a, ar)) == NULL)
		return TOOL_EXIT_FAIL;
	if (a->topic != NULL && txc_topic(md, a->topic) == NULL) {
		tool_errx("topic %s: %s", a->topic,
		    rn_kerr_name(RN_KERR_UNKNOWN_TOPIC_OR_PARTITION));
		return TOOL_EXIT_FAIL;
	}
	for (int i = 0; i < md->topics_count; i++) {
		const struct rn_MetadataResponse_MetadataResponseTopic *t =
		    &md->topics[i];

		snprintf(name, sizeof(name), "%.*s", (int)t->name.len,
		    t->name.ptr);
		if (a->topic != NULL && strcmp(name, a->topic) != 0)
			continue;
		for (int j = 0; j < t->partitions_count; j++) {
			const struct rn_MetadataResponse_MetadataResponsePartition
			    *mp = &t->partitions[j];
			bool here = a->broker < 0;

			if (a->partition >= 0 &&
			    mp->partition_index != a->partition)
				continue;
			for (int k = 0; !here && k < mp->replica_nodes_count;
			    k++)
				here = mp->replica_nodes[k] == a->broker;
			if (here && candidates_in(a, md, name,
			    mp->partition_index, (int32_t)a->broker, ar,
			    &c) != 0)
				failed++;
		}
	}
	/* then, as Kafka's tool, only those their coordinator does not
	 * expect to end */
	if (txv_cross_check(a->bootstrap, md, c.v, c.n, ar) != 0) {
		free(c.v);
		return TOOL_EXIT_FAIL;
	}
	now = wall_ms();
	for (int i = 0; i < c.n; i++)
		if (c.v[i].hanging)
			hanging_line(&shown, &c.v[i], now);
	if (shown == 0)
		printf("No hanging transactions found\n");
	free(c.v);
	return failed ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
}

static int
list_txns(const struct args *a, struct rn_arena *ar)
{
	const struct rn_MetadataResponse *md;

	if ((md = metadata(a, ar)) == NULL)
		return TOOL_EXIT_FAIL;
	return txv_list(md, a->duration, ar);
}

static int
describe_txn(const struct args *a, struct rn_arena *ar)
{
	if (a->txn_id == NULL) {
		tool_errx("describe needs --transactional-id");
		return TOOL_EXIT_USAGE;
	}
	return txv_describe(a->bootstrap, a->txn_id, ar);
}

int
main(int argc, char **argv)
{
	struct args a;
	struct rn_arena ar;
	int rc;

	tool_init("runnel-transactions");
	memset(&a, 0, sizeof(a));
	if ((rc = parse_args(argc, argv, &a)) >= 0)
		goto out;
	rn_arena_init(&ar, 64u << 20);
	if (strcmp(a.verb, "describe-producers") == 0) {
		rc = describe_producers(&a, &ar);
	} else if (strcmp(a.verb, "abort") == 0) {
		rc = abort_txn(&a, &ar);
	} else if (strcmp(a.verb, "find-hanging") == 0) {
		rc = find_hanging(&a, &ar);
	} else if (strcmp(a.verb, "list") == 0) {
		rc = list_txns(&a, &ar);
	} else if (strcmp(a.verb, "describe") == 0) {
		rc = describe_txn(&a, &ar);
	} else {
		tool_errx("unknown verb %s", a.verb);
		usage(stderr);
		rc = TOOL_EXIT_USAGE;
	}
	rn_arena_free(&ar);
out:
	tool_props_free(&a.props);
	return rc;
}
