/*
 * One logging API for every process. Under systemd (the journal socket
 * exists) records go to journald with structured fields; otherwise to
 * stderr with sd-daemon "<N>" priority prefixes, which journald and
 * humans both read.
 */
#ifndef RN_LOG_H
#define RN_LOG_H

#include <stdarg.h>
#include <syslog.h>

/* Process-wide identity, set once after fork: COMPONENT= and WORKER=. */
void rn_log_init(const char *component, const char *worker, int verbose);
void rn_log_set_verbose(int verbose);

void rn_log(int prio, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rn_vlog(int prio, const char *fmt, va_list ap);

/*
 * A record with extra journal fields ("TOPIC=x", "PARTITION=3", ...),
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
