/* server.properties parsing: Kafka's syntax, defaults, and the error messages. */
#include "autoconf.h"

#include <string.h>

#include "common/config.h"
#include "tests/lib/tap.h"

static char warnings[4096];

static void
collect(void *arg, const char *msg)
{
	(void)arg;
	strlcat(warnings, msg, sizeof(warnings));
	strlcat(warnings, "\n", sizeof(warnings));
}

#define BASE \
	"node.id=7\n" \
	"process.roles=broker,controller\n" \
	"listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093\n" \
	"controller.listener.names=CONTROLLER\n" \
	"controller.quorum.voters=7@127.0.0.1:19093\n" \
	"log.dirs=/tmp/a,/tmp/b\n"

static int
load(struct rn_config *cfg, const char *text, char *err, size_t errlen)
{
	warnings[0] = '\0';
	err[0] = '\0';
	if (rn_config_parse(cfg, text, "test.properties", err, errlen, collect,
	    NULL) != 0)
		return -1;
	return rn_config_finish(cfg, err, errlen);
}

static int
contains(const char *hay, const char *needle)
{
	return hay != NULL && strstr(hay, needle) != NULL;
}

int
main(void)
{
	struct rn_config cfg;
	char err[1024];

	plan(62);

	/* the embedded default is a complete single-node config */
	is_int(load(&cfg, rn_config_embedded_default, err, sizeof(err)), 0,
	    "embedded default parses: %s", err);
	is_int(cfg.roles, RN_ROLE_BROKER | RN_ROLE_CONTROLLER,
	    "default roles are broker,controller");
	is_int(cfg.num_network_threads, 3, "default num.network.threads");

	is_int(load(&cfg, BASE, err, sizeof(err)), 0, "base config: %s", err);
	is_int(cfg.node_id, 7, "node.id");
	is_int(cfg.n_listeners, 2, "two listeners");
	is_str(cfg.listeners[1].name, "CONTROLLER", "listener name");
	is_int(cfg.listeners[0].port, 19092, "listener port");
	is_int(cfg.n_advertised, 1, "advertised defaults to broker listeners");
	is_str(cfg.advertised[0].name, "PLAINTEXT", "advertised listener");
	is_int(cfg.n_log_dirs, 2, "two log dirs");
	is_str(cfg.metadata_log_dir, "/tmp/a", "metadata.log.dir defaults to the first");
	is_int(cfg.log_retention_ms, 168LL * 3600000, "retention 168 h");
	is_str(cfg.control_socket_path, "/run/runnel/runneld.sock",
	    "control.socket.path default");
	is_int(cfg.log_cleaner_workers, 1, "a broker has a log cleaner by default");
	is_int(load(&cfg, BASE "log.cleaner.enable=false\n", err, sizeof(err)), 0,
	    "log.cleaner.enable=false: %s", err);
	is_int(cfg.log_cleaner_workers, 0, "log.cleaner.enable=false: no log cleaner");
	load(&cfg, BASE "log.cleaner.threads=0\n", err, sizeof(err));
	is_int(cfg.log_cleaner_workers, 0, "log.cleaner.threads=0: no log cleaner");
	load(&cfg, "node.id=7\nprocess.roles=controller\n"
	    "listeners=CONTROLLER://127.0.0.1:19093\n"
	    "controller.listener.names=CONTROLLER\n"
	    "controller.quorum.voters=7@127.0.0.1:19093\nlog.dirs=/tmp/a\n", err,
	    sizeof(err));
	is_int(cfg.log_cleaner_workers, 0, "a controller-only node has none");

	/* Java properties syntax: separators, comments, continuation, escapes */
	is_int(load(&cfg, BASE "# comment\n! also a comment\n"
	    "num.network.threads : 5\n"
	    "num.replica.fetchers 2\n"
	    "broker.rack = rack\\\n   -a\n"
	    "log.retention.minutes=10\n", err, sizeof(err)), 0,
	    "separators and continuation: %s", err);
	is_int(cfg.num_network_threads, 5, "key : value");
	is_int(cfg.num_replica_fetchers, 2, "key value");
	is_str(cfg.broker_rack, "rack-a", "continued line joins");
	is_int(cfg.log_retention_ms, 600000, "minutes beat hours");
	is_int(load(&cfg, BASE "log.retention.minutes=10\nlog.retention.ms=5\n",
	    err, sizeof(err)), 0, "ms and minutes");
	is_int(cfg.log_retention_ms, 5, "ms beats minutes");

	/* unknown keys warn and name the key; known Kafka keys pass quietly */
	is_int(load(&cfg, BASE "no.such.key=1\nnum.io.threads=8\n", err,
	    sizeof(err)), 0, "unknown key is not an error");
	ok(contains(warnings, "no.such.key"), "warning names the key: %s",
	    warnings);
	ok(contains(warnings, "test.properties:7"), "warning names the line");
	ok(!contains(warnings, "num.io.threads"), "Kafka's num.io.threads is accepted");

	/* invalid values: one message naming key, value and line */
	is_int(load(&cfg, BASE "num.network.threads=lots\n", err, sizeof(err)),
	    -1, "non-integer is an error");
	ok(contains(err, "num.network.threads") && contains(err, "'lots'") &&
	    contains(err, ":7:"), "message names key, value, line: %s", err);
	is_int(load(&cfg, BASE "num.network.threads=0\n", err, sizeof(err)), -1,
	    "zero network threads is out of range");
	ok(contains(err, "out of range"), "range message: %s", err);
	is_int(load(&cfg, BASE "auto.create.topics.enable=yes\n", err,
	    sizeof(err)), -1, "bool must be true/false");
	is_int(load(&cfg, "node.id=1\nlisteners=PLAINTEXT//x:1\n", err,
	    sizeof(err)), -1, "malformed listener");
	ok(contains(err, "listeners") && contains(err, ":2:"),
	    "listener message: %s", err);
	is_int(load(&cfg, BASE "controller.quorum.voters=1@a:1,1@b:2\n", err,
	    sizeof(err)), -1, "duplicate voter id");
	is_int(load(&cfg, BASE "log.dirs=relative/path\n", err, sizeof(err)),
	    -1, "relative log dir");
	is_int(load(&cfg, BASE "listener.security.protocol.map=PLAINTEXT:SSL\n",
	    err, sizeof(err)), 0, "an SSL inter-broker listener: %s", err);
	ok(cfg.listeners[0].proto == RN_SEC_SSL, "is SSL");
	is_int(load(&cfg, BASE "listener.security.protocol.map=PLAINTEXT:SSL\n"
	    "security.inter.broker.protocol=PLAINTEXT\n"
	    "inter.broker.listener.name=PLAINTEXT\n", err, sizeof(err)), -1,
	    "inter.broker.listener.name and security.inter.broker.protocol "
	    "together are refused");
	ok(contains(err, "security.inter.broker.protocol"), "naming them: %s",
	    err);
	is_int(load(&cfg, BASE "security.inter.broker.protocol=PLAINTEXT\n",
	    err, sizeof(err)), 0, "security.inter.broker.protocol alone: %s",
	    err);
	is_str(cfg.inter_broker_listener_name, "PLAINTEXT",
	    "names the inter-broker listener after the protocol");
	is_int(load(&cfg, BASE "security.inter.broker.protocol=TLS\n", err,
	    sizeof(err)), -1, "an unknown security.inter.broker.protocol");
	is_int(load(&cfg, BASE "listener.security.protocol.map=PLAINTEXT:TLS\n",
	    err, sizeof(err)), -1, "an unknown protocol is refused");
	is_int(load(&cfg, BASE "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,"
	    "CONTROLLER:SASL_SSL\n", err, sizeof(err)), 0,
	    "a SASL_SSL controller listener: %s", err);
	is_int(rn_config_listener_proto(&cfg, "CONTROLLER"), RN_SEC_SASL_SSL,
	    "its protocol");
	is_int(load(&cfg, BASE "listener.security.protocol.map=CONTROLLER:PLAINTEXT\n",
	    err, sizeof(err)), -1, "a broker listener the map leaves out");
	is_int(load(&cfg, "node.id=7\nprocess.roles=broker,controller\n"
	    "listeners=PLAINTEXT://127.0.0.1:1,SECURE://127.0.0.1:2,"
	    "CONTROLLER://127.0.0.1:3\ncontroller.listener.names=CONTROLLER\n"
	    "controller.quorum.voters=7@127.0.0.1:3\nlog.dirs=/tmp/a\n"
	    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,"
	    "secure:sasl_ssl\n", err, sizeof(err)), 0,
	    "a SASL_SSL broker listener beside a PLAINTEXT one: %s", err);
	ok(cfg.listeners[1].proto == RN_SEC_SASL_SSL &&
	    cfg.listeners[0].proto == RN_SEC_PLAINTEXT &&
	    cfg.listeners[2].proto == RN_SEC_PLAINTEXT &&
	    cfg.advertised[1].proto == RN_SEC_SASL_SSL,
	    "each listener has its protocol, advertised ones too");
	is_str(cfg.inter_broker_listener_name, "PLAINTEXT",
	    "the inter-broker listener defaults to the PLAINTEXT one");

	/* required keys and cross-key rules */
	is_int(load(&cfg, "process.roles=broker\n", err, sizeof(err)), -1,
	    "missing node.id");
	ok(contains(err, "node.id"), "message names node.id: %s", err);
	is_int(load(&cfg, "node.id=1\nprocess.roles=broker\n"
	    "listeners=PLAINTEXT://:9092\ncontroller.listener.names=CONTROLLER\n"
	    "log.dirs=/tmp/x\n", err, sizeof(err)), -1, "missing voters");
	ok(contains(err, "controller.quorum.voters"), "names the voters key: %s",
	    err);
	is_int(load(&cfg, "node.id=2\nprocess.roles=controller\n"
	    "listeners=CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n"
	    "controller.quorum.voters=1@h:9093\nlog.dirs=/tmp/x\n", err,
	    sizeof(err)), -1, "a controller must be a voter");

	/* command-line overrides */
	is_int(load(&cfg, BASE, err, sizeof(err)), 0, "reload base");
	is_int(rn_config_override(&cfg, "num.network.threads=9", err,
	    sizeof(err)), 0, "override applies");
	is_int(cfg.num_network_threads, 9, "override value");
	is_int(rn_config_override(&cfg, "bogus.key=1", err, sizeof(err)), -1,
	    "override of an unknown key is refused");
	return done_testing();
}
