/*
 * Kafka's config catalogue: lookups, validation by type and range, and
 * where an effective value comes from.
 */
#include "autoconf.h"

#include <string.h>

#include "common/config.h"
#include "common/kconfig_catalogue.h"
#include "tests/lib/tap.h"

static void
test_tables(void)
{
	size_t i;
	bool sorted = true;

	for (i = 1; i < rn_kcfg_topic_n; i++)
		sorted &= strcmp(rn_kcfg_topic[i - 1].name,
		    rn_kcfg_topic[i].name) < 0;
	for (i = 1; i < rn_kcfg_broker_n; i++)
		sorted &= strcmp(rn_kcfg_broker[i - 1].name,
		    rn_kcfg_broker[i].name) < 0;
	ok(sorted, "both tables sorted, no duplicates");
	ok(rn_kcfg_topic_n >= 35 && rn_kcfg_broker_n >= 350,
	    "%zu topic and %zu broker names", rn_kcfg_topic_n,
	    rn_kcfg_broker_n);
	ok(rn_kcfg_topic_find("message.format.version") != NULL &&
	    rn_kcfg_topic_find("delete.retention.ms") != NULL &&
	    rn_kcfg_topic_find("min.compaction.lag.ms") != NULL,
	    "Kafka's topic names are known");
	ok(rn_kcfg_topic_find("no.such.config") == NULL &&
	    rn_kcfg_broker_find("no.such.config") == NULL,
	    "a made-up name is not");
	ok(rn_kcfg_broker_find("sasl.kerberos.min.time.before.relogin") !=
	    NULL && (rn_kcfg_broker_find(
	    "sasl.kerberos.min.time.before.relogin")->flags &
	    RN_KCFG_PER_BROKER), "sasl.kerberos.min.time.before.relogin: "
	    "dynamic per broker");
	ok(!(rn_kcfg_broker_find("log.retention.hours")->flags &
	    RN_KCFG_DYNAMIC) && (rn_kcfg_broker_find("log.retention.ms")->flags &
	    RN_KCFG_DYNAMIC), "log.retention.hours read-only, .ms dynamic");
	ok(rn_kcfg_listener_find("listener.name.internal.ssl.keystore.location")
	    != NULL && rn_kcfg_listener_find(
	    "listener.name.sasl_ssl.plain.sasl.jaas.config") != NULL &&
	    rn_kcfg_listener_find("listener.name.x.bogus") == NULL,
	    "listener-prefixed keys");
	for (i = 0; i < rn_kcfg_topic_n; i++)
		if (rn_kcfg_topic[i].dflt != NULL && rn_kcfg_validate(
		    &rn_kcfg_topic[i], rn_kcfg_topic[i].dflt, NULL, 0) != 0)
			break;
	ok(i == rn_kcfg_topic_n, "every topic default passes its own check");
}

static void
test_validate(void)
{
	const struct rn_kcfg *k;
	char err[512];

	k = rn_kcfg_topic_find("min.cleanable.dirty.ratio");
	ok(rn_kcfg_validate(k, "0.25", err, sizeof(err)) == 0,
	    "ratio 0.25");
	ok(rn_kcfg_validate(k, "1.5", err, sizeof(err)) != 0 &&
	    strcmp(err, "Invalid value 1.5 for configuration "
	    "min.cleanable.dirty.ratio: Value must be no more than 1") == 0,
	    "ratio 1.5: %s", err);
	k = rn_kcfg_topic_find("delete.retention.ms");
	ok(rn_kcfg_validate(k, "-5", err, sizeof(err)) != 0 &&
	    strstr(err, "at least 0") != NULL, "negative delete.retention.ms");
	ok(rn_kcfg_validate(k, "9223372036854775808", err, sizeof(err)) != 0 &&
	    strstr(err, "Not a number of type LONG") != NULL, "LONG overflow");
	k = rn_kcfg_topic_find("message.format.version");
	ok(rn_kcfg_validate(k, "0.10.2", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, "3.0-IV1", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, "2.8", err, sizeof(err)) == 0,
	    "message.format.version releases");
	ok(rn_kcfg_validate(k, "banana", err, sizeof(err)) != 0 &&
	    rn_kcfg_validate(k, "0.7.0", err, sizeof(err)) != 0,
	    "message.format.version nonsense");
	k = rn_kcfg_topic_find("cleanup.policy");
	ok(rn_kcfg_validate(k, "compact, delete", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, "compact,shred", err, sizeof(err)) != 0 &&
	    strstr(err, "String must be one of: compact,delete") != NULL,
	    "cleanup.policy list: %s", err);
	ok(rn_kcfg_validate(k, " compact ,\tdelete ", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, ",compact", err, sizeof(err)) != 0 &&
	    rn_kcfg_validate(k, "com pact", err, sizeof(err)) != 0 &&
	    strstr(err, "Invalid value com pact for") != NULL,
	    "cleanup.policy items are trimmed, inner blanks kept: %s", err);
	k = rn_kcfg_topic_find("delete.retention.ms");
	ok(rn_kcfg_validate(k, " 5 ", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, "5 5", err, sizeof(err)) != 0 &&
	    rn_kcfg_validate(k, "  ", err, sizeof(err)) != 0,
	    "a number is trimmed, inner blanks kept");
	k = rn_kcfg_topic_find("compression.gzip.level");
	ok(rn_kcfg_validate(k, "-1", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, "9", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, "0", err, sizeof(err)) != 0,
	    "gzip level 1..9 or -1: %s", err);
	k = rn_kcfg_topic_find("leader.replication.throttled.replicas");
	ok(rn_kcfg_validate(k, "*", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, "0:1, 1:2", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, "0-1", err, sizeof(err)) != 0,
	    "throttled replica lists");
	k = rn_kcfg_broker_find("sasl.login.refresh.buffer.seconds");
	ok(rn_kcfg_validate(k, "40000", err, sizeof(err)) != 0 &&
	    strstr(err, "type SHORT") != NULL, "SHORT range");
	k = rn_kcfg_broker_find("auto.create.topics.enable");
	ok(rn_kcfg_validate(k, "TRUE", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(k, "yes", err, sizeof(err)) != 0,
	    "booleans");
}

struct levels {
	const char *dyn_broker, *dyn_default, *statik;
	const char *key;
};

static const char *
get(void *arg, enum rn_config_source level, const char *key)
{
	struct levels *l = arg;

	if (strcmp(key, l->key) != 0)
		return NULL;
	return level == RN_CFGSRC_DYNAMIC_BROKER_CONFIG ? l->dyn_broker :
	    level == RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG ? l->dyn_default :
	    level == RN_CFGSRC_STATIC_BROKER_CONFIG ? l->statik : NULL;
}

static char synbuf[512];

static void
syn(void *arg, const char *name, const char *value,
    enum rn_config_source source)
{
	size_t n = strlen(synbuf);

	(void)arg;
	snprintf(synbuf + n, sizeof(synbuf) - n, "%s%s=%s/%d", n ? " " : "",
	    name, value ? value : "null", source);
}

static void
test_resolve(void)
{
	const struct rn_kcfg *k = rn_kcfg_topic_find("retention.ms");
	struct levels l = { NULL, NULL, "2", "log.retention.hours" };
	struct rn_kcfg_value v;
	char buf[64];

	synbuf[0] = '\0';
	rn_kcfg_topic_value(k, NULL, get, &l, syn, NULL, &v, buf, sizeof(buf));
	ok(strcmp(v.value, "7200000") == 0 &&
	    v.source == RN_CFGSRC_STATIC_BROKER_CONFIG,
	    "static log.retention.hours=2: retention.ms 7200000 (%s)",
	    v.value);
	is_str(synbuf, "log.retention.hours=2/4 log.retention.hours=168/5",
	    "synonyms in Kafka's order");
	synbuf[0] = '\0';
	rn_kcfg_topic_value(k, "1000", get, &l, syn, NULL, &v, buf,
	    sizeof(buf));
	ok(strcmp(v.value, "1000") == 0 &&
	    v.source == RN_CFGSRC_DYNAMIC_TOPIC_CONFIG &&
	    strncmp(synbuf, "retention.ms=1000/1 ", 20) == 0,
	    "a topic override comes first");
	k = rn_kcfg_topic_find("delete.retention.ms");
	rn_kcfg_topic_value(k, NULL, NULL, NULL, NULL, NULL, &v, buf,
	    sizeof(buf));
	ok(strcmp(v.value, "86400000") == 0 &&
	    v.source == RN_CFGSRC_DEFAULT_CONFIG, "delete.retention.ms "
	    "default 86400000 from log.cleaner.delete.retention.ms");
	k = rn_kcfg_topic_find("flush.ms");
	rn_kcfg_topic_value(k, NULL, NULL, NULL, NULL, NULL, &v, buf,
	    sizeof(buf));
	ok(strcmp(v.value, "9223372036854775807") == 0,
	    "flush.ms falls back to log.flush.scheduler.interval.ms");

	k = rn_kcfg_broker_find("log.retention.ms");
	synbuf[0] = '\0';
	rn_kcfg_broker_value(k, false, get, &l, syn, NULL, &v);
	ok(v.value == NULL && v.source == RN_CFGSRC_DEFAULT_CONFIG &&
	    synbuf[0] == '\0', "broker log.retention.ms: null, as Kafka");
	k = rn_kcfg_broker_find("log.retention.hours");
	rn_kcfg_broker_value(k, false, get, &l, NULL, NULL, &v);
	ok(strcmp(v.value, "2") == 0 &&
	    v.source == RN_CFGSRC_STATIC_BROKER_CONFIG,
	    "broker log.retention.hours=2 static");
	l.key = "sasl.kerberos.min.time.before.relogin";
	l.dyn_broker = "1000";
	k = rn_kcfg_broker_find(l.key);
	rn_kcfg_broker_value(k, false, get, &l, NULL, NULL, &v);
	ok(strcmp(v.value, "1000") == 0 &&
	    v.source == RN_CFGSRC_DYNAMIC_BROKER_CONFIG, "dynamic broker key");
	k = rn_kcfg_broker_find("ssl.keystore.password");
	rn_kcfg_broker_value(k, false, get, &l, NULL, NULL, &v);
	ok(v.value == NULL && rn_kcfg_sensitive(k), "passwords are "
	    "sensitive, shown as null");
}

static void
count_warning(void *arg, const char *msg)
{
	(void)msg;
	(*(int *)arg)++;
}

static void
test_properties(void)
{
	struct rn_config cfg;
	char err[512];
	const char *base = "node.id=1\nprocess.roles=broker,controller\n"
	    "listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n"
	    "controller.listener.names=CONTROLLER\n"
	    "controller.quorum.voters=1@localhost:9093\nlog.dirs=/tmp/x\n";
	char text[2048];
	int warned = 0;

	snprintf(text, sizeof(text), "%snum.io.threads=8\n"
	    "log.cleaner.threads=2\nsasl.kerberos.min.time.before.relogin="
	    "60000\nlistener.name.plaintext.ssl.keystore.type=PKCS12\n"
	    "log.retention.hours=1\n", base);
	ok(rn_config_parse(&cfg, text, "t", err, sizeof(err), count_warning,
	    &warned) == 0 && warned == 0,
	    "Kafka keys runnel does not act on are accepted, no warning");
	is_str(rn_config_static(&cfg, "log.cleaner.threads"), "2",
	    "and kept for DescribeConfigs");
	is_str(rn_config_static(&cfg, "log.retention.hours"), "1",
	    "acted-on Kafka keys kept too");
	ok(rn_config_static(&cfg, "log.retention.ms") == NULL,
	    "keys the file did not set are absent");
	snprintf(text, sizeof(text), "%sno.such.key=1\n", base);
	ok(rn_config_parse(&cfg, text, "t", err, sizeof(err), count_warning,
	    &warned) == 0 && warned == 1, "a made-up key still warns");
	snprintf(text, sizeof(text), "%slog.cleaner.threads=many\n", base);
	ok(rn_config_parse(&cfg, text, "t", err, sizeof(err), NULL, NULL) != 0 &&
	    strstr(err, "log.cleaner.threads") != NULL &&
	    strstr(err, "many") != NULL, "a bad value stops it: %s", err);
	ok(rn_config_override(&cfg, "num.io.threads=4", err, sizeof(err)) ==
	    0 && strcmp(rn_config_static(&cfg, "num.io.threads"), "4") == 0,
	    "--override of a Kafka key");
	ok(rn_config_override(&cfg, "no.such.key=4", err, sizeof(err)) != 0,
	    "--override of a made-up key refused");
}

int
main(void)
{
	test_tables();
	test_validate();
	test_resolve();
	test_properties();
	done_testing();
}
