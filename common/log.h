/*
 * One logging API for every process. Under systemd (the journal socket
 * exists) records go to journald with structured fields; otherwise to
 * stderr with sd-daemon "<N>" priority prefixes, which journald and
 * humans both read.
 */
#ifndef RN_LOG_H
#define RN_LOG_H

#include <stdarg.h>
#include <stdint.h>
#include <syslog.h>

/* Process-wide identity, set once after fork: COMPONENT= and WORKER=. */
void rn_log_init(const char *component, const char *worker, int verbose);
void rn_log_set_verbose(int verbose);

void rn_log(int prio, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rn_vlog(int prio, const char *fmt, va_list ap);

/*
 * What a record is about. Under journald each part is a field, TOPIC=,
 * PARTITION=, BROKER= (a node id) and GROUP=, so that `journalctl
 * TOPIC=orders` finds every line about it; stderr shows the message
 * alone. NULL (or "") and a negative number leave a part out. Make one
 * with the rn_subj_*() below, which say which parts a kind of line has.
 */
struct rn_log_subject {
	const char *topic;
	int32_t partition;	/* only with a topic */
	int32_t broker;
	const char *group;
};

static inline struct rn_log_subject
rn_subj_topic(const char *topic)
{
	return (struct rn_log_subject){ topic, -1, -1, NULL };
}

static inline struct rn_log_subject
rn_subj_part(const char *topic, int32_t partition)
{
	return (struct rn_log_subject){ topic, partition, -1, NULL };
}

/* A partition's replica on one broker. */
static inline struct rn_log_subject
rn_subj_replica(const char *topic, int32_t partition, int32_t broker)
{
	return (struct rn_log_subject){ topic, partition, broker, NULL };
}

static inline struct rn_log_subject
rn_subj_broker(int32_t broker)
{
	return (struct rn_log_subject){ NULL, -1, broker, NULL };
}

static inline struct rn_log_subject
rn_subj_group(const char *group)
{
	return (struct rn_log_subject){ NULL, -1, -1, group };
}

/* A record about subj: rn_log() plus the subject's journal fields. */
void rn_log_about(int prio, struct rn_log_subject subj, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * The journal fields of subj ("TOPIC=orders", "PARTITION=3", ...) in
 * that order, at most RN_LOG_SUBJECT_FIELDS; returns how many. A topic
 * or group keeps its first RN_LOG_VALUE_MAX bytes (Kafka's topic names
 * are at most 249). Pure: common/log_subject.c.
 */
#define RN_LOG_SUBJECT_FIELDS 4
#define RN_LOG_VALUE_MAX 255
#define RN_LOG_FIELD_MAX (RN_LOG_VALUE_MAX + 16)
int rn_log_subject_fields(const struct rn_log_subject *subj,
    char fields[RN_LOG_SUBJECT_FIELDS][RN_LOG_FIELD_MAX]);

/*
 * A record with other journal fields ("LOG_DIR=/data", "ERRNO=5"),
 * passed as a NULL-terminated list of preformatted strings.
 */
void rn_log_fields(int prio, const char *const *fields, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(...) rn_log(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) rn_log(LOG_INFO, __VA_ARGS__)
#define log_notice(...) rn_log(LOG_NOTICE, __VA_ARGS__)
#define log_warnx(...) rn_log(LOG_WARNING, __VA_ARGS__)
#define log_errx(...) rn_log(LOG_ERR, __VA_ARGS__)
/* log_warn appends ": strerror(errno)" like warn(3). */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* For broken invariants in process code only; library code never calls these. */
void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif /* RN_LOG_H */
