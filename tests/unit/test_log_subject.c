/*
 * What a log record's subject becomes in the journal (TOPIC=, PARTITION=,
 * BROKER=, GROUP=), and that stderr shows the message as rn_log() does.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "storage/logdir.h"
#include "tests/lib/tap.h"

static char f[RN_LOG_SUBJECT_FIELDS][RN_LOG_FIELD_MAX];

/* The subject's fields joined by spaces, for one is_str() a case. */
static const char *
fields_of(struct rn_log_subject s)
{
	static char out[RN_LOG_SUBJECT_FIELDS * RN_LOG_FIELD_MAX];
	int i, n;

	memset(f, 0, sizeof(f));
	n = rn_log_subject_fields(&s, f);
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i > 0)
			strcat(out, " ");
		strcat(out, f[i]);
	}
	return out;
}

static void
test_fields(void)
{
	struct rn_log_subject all = { "orders", 3, 2, "billing" };
	struct rn_log_subject none = { NULL, -1, -1, NULL };
	struct rn_log_subject lone = { NULL, 5, -1, NULL };
	char big[400];

	is_str(fields_of(rn_subj_topic("orders")), "TOPIC=orders", "a topic");
	is_str(fields_of(rn_subj_part("orders", 3)),
	    "TOPIC=orders PARTITION=3", "a partition carries its topic");
	is_str(fields_of(rn_subj_part("orders", 0)),
	    "TOPIC=orders PARTITION=0", "partition 0 is a partition");
	is_str(fields_of(rn_subj_replica("orders", 1, 4)),
	    "TOPIC=orders PARTITION=1 BROKER=4", "a replica: partition and "
	    "broker");
	is_str(fields_of(rn_subj_broker(7)), "BROKER=7", "a broker");
	is_str(fields_of(rn_subj_broker(0)), "BROKER=0", "broker 0 is one");
	is_str(fields_of(rn_subj_group("billing")), "GROUP=billing",
	    "a group");
	is_str(fields_of(all), "TOPIC=orders PARTITION=3 BROKER=2 "
	    "GROUP=billing", "all four, in that order");
	is_int(rn_log_subject_fields(&all, f), RN_LOG_SUBJECT_FIELDS,
	    "all four count RN_LOG_SUBJECT_FIELDS");
	is_str(fields_of(none), "", "NULL and -1 are no field");
	is_str(fields_of(lone), "", "a partition without its topic is none");
	is_str(fields_of(rn_subj_part("", 2)), "", "an empty topic is none");
	is_str(fields_of(rn_subj_group("")), "", "an empty group is none");
	is_str(fields_of(rn_subj_broker(-2)), "", "a negative broker is none");
	is_str(fields_of(rn_subj_part("orders", -7)), "TOPIC=orders",
	    "a negative partition is none");
	is_str(fields_of(rn_subj_replica("t", 2147483647, 2147483647)),
	    "TOPIC=t PARTITION=2147483647 BROKER=2147483647",
	    "the largest numbers fit");

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	fields_of(rn_subj_topic(big));
	is_int((long long)strlen(f[0]), (long long)strlen("TOPIC=") +
	    RN_LOG_VALUE_MAX, "a long topic keeps RN_LOG_VALUE_MAX bytes");
	ok(strncmp(f[0], "TOPIC=", 6) == 0 &&
	    memcmp(f[0] + 6, big, RN_LOG_VALUE_MAX) == 0,
	    "and is the topic's first RN_LOG_VALUE_MAX bytes");
	fields_of(rn_subj_group(big));
	is_int((long long)strlen(f[0]), (long long)strlen("GROUP=") +
	    RN_LOG_VALUE_MAX, "a long group too");
	big[249] = '\0';
	fields_of(rn_subj_part(big, 1));
	is_int((long long)strlen(f[0]), (long long)strlen("TOPIC=") + 249,
	    "Kafka's longest topic name (249) is kept whole");
}

/* Lines about a partition that only know its directory. */
static void
test_dirs(void)
{
	char topic[RN_TOPIC_MAX + 1];

	is_str(fields_of(rn_logdir_subject("/var/lib/runnel/orders-3", topic)),
	    "TOPIC=orders PARTITION=3", "a partition directory's path");
	is_str(fields_of(rn_logdir_subject("my-topic-12", topic)),
	    "TOPIC=my-topic PARTITION=12", "a bare name, split at its last '-'");
	is_str(fields_of(rn_logdir_subject("/d/orders-3.00112233445566778899"
	    "aabbccddeeff-future", topic)), "", "a future copy names none");
	is_str(fields_of(rn_logdir_subject("/d/orders-3.00112233445566778899"
	    "aabbccddeeff-delete", topic)), "", "nor a deleted one");
}

/* What stderr got from fn. */
static const char *
stderr_of(void (*fn)(void))
{
	static char out[4096];
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	if (tmp == NULL || saved < 0)
		bail("tmpfile: %m");
	fflush(stderr);
	dup2(fileno(tmp), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, sizeof(out) - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	return out;
}

static void
plain(void)
{
	rn_log(LOG_WARNING, "%s-%d: leader %d -> %d", "orders", 3, 1, 2);
	rn_log(LOG_DEBUG, "not shown");
}

static void
about(void)
{
	rn_log_about(LOG_WARNING, rn_subj_part("orders", 3),
	    "%s-%d: leader %d -> %d", "orders", 3, 1, 2);
	rn_log_about(LOG_DEBUG, rn_subj_broker(1), "not shown");
}

static void
test_stderr(void)
{
	char want[4096];

	/* the tests read the log from stderr, journal or not */
	setenv("RUNNEL_LOG_STDERR", "1", 1);
	rn_log_init("network", "network-1", 0);
	strlcpy(want, stderr_of(plain), sizeof(want));
	is_str(want, "<4>network[network-1]: orders-3: leader 1 -> 2\n",
	    "rn_log on stderr");
	is_str(stderr_of(about), want, "rn_log_about writes the same line, "
	    "and no debug unless verbose");
}

int
main(void)
{
	plan(26);
	test_fields();
	test_dirs();
	test_stderr();
	return done_testing();
}
