#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "common/log.h"

static char log_component[32] = "runneld";
static char log_worker[32] = "";
static int log_verbose;
static int log_to_journal;

void
rn_log_init(const char *component, const char *worker, int verbose)
{
	strlcpy(log_component, component, sizeof(log_component));
	strlcpy(log_worker, worker ? worker : "", sizeof(log_worker));
	log_verbose = verbose;
	/*
	 * RUNNEL_LOG_STDERR forces stderr, which tests use to read the log
	 * even on hosts where a journal runs.
	 */
	log_to_journal = getenv("RUNNEL_LOG_STDERR") == NULL &&
	    access("/run/systemd/journal/socket", W_OK) == 0;
}

void
rn_log_set_verbose(int verbose)
{
	log_verbose = verbose;
}

static void
log_emit(int prio, const char *const *fields, const char *msg)
{
	if (log_to_journal) {
		struct iovec iov[16];
		char buf[4][96];
		int n = 0, i;

		snprintf(buf[0], sizeof(buf[0]), "PRIORITY=%d", prio);
		snprintf(buf[1], sizeof(buf[1]), "COMPONENT=%s", log_component);
		snprintf(buf[2], sizeof(buf[2]), "WORKER=%s", log_worker);
		snprintf(buf[3], sizeof(buf[3]), "SYSLOG_IDENTIFIER=runneld");
		for (i = 0; i < 4; i++) {
			if (i == 2 && log_worker[0] == '\0')
				continue;
			iov[n].iov_base = buf[i];
			iov[n++].iov_len = strlen(buf[i]);
		}
		for (i = 0; fields != NULL && fields[i] != NULL && n < 14; i++) {
			iov[n].iov_base = (void *)fields[i];
			iov[n++].iov_len = strlen(fields[i]);
		}
		/* MESSAGE= is built in one buffer; sd_journal_sendv takes iovecs. */
		char *m = NULL;
		if (asprintf(&m, "MESSAGE=%s", msg) >= 0) {
			iov[n].iov_base = m;
			iov[n++].iov_len = strlen(m);
			if (sd_journal_sendv(iov, n) == 0) {
				free(m);
				return;
			}
			free(m);
		}
		/* journal went away: fall through to stderr */
	}
	if (log_worker[0] != '\0')
		fprintf(stderr, "<%d>%s[%s]: %s\n", prio, log_component,
		    log_worker, msg);
	else
		fprintf(stderr, "<%d>%s: %s\n", prio, log_component, msg);
}

void
rn_vlog(int prio, const char *fmt, va_list ap)
{
	char msg[1024];
	int saved = errno;

	if (prio == LOG_DEBUG && !log_verbose)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	log_emit(prio, NULL, msg);
	errno = saved;
}

void
rn_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rn_vlog(prio, fmt, ap);
	va_end(ap);
}

void
rn_log_fields(int prio, const char *const *fields, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int saved = errno;

	if (prio == LOG_DEBUG && !log_verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_emit(prio, fields, msg);
	errno = saved;
}

void
rn_log_about(int prio, struct rn_log_subject subj, const char *fmt, ...)
{
	char f[RN_LOG_SUBJECT_FIELDS][RN_LOG_FIELD_MAX], msg[1024];
	const char *fields[RN_LOG_SUBJECT_FIELDS + 1] = { NULL };
	va_list ap;
	int saved = errno, i, n;

	if (prio == LOG_DEBUG && !log_verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* stderr shows the message alone: the fields are the journal's */
	if (log_to_journal) {
		n = rn_log_subject_fields(&subj, f);
		for (i = 0; i < n; i++)
			fields[i] = f[i];
	}
	log_emit(prio, fields, msg);
	errno = saved;
}

/* The message with strerror(errno) after it, at prio with prefix. */
static void
log_errno(int prio, const char *prefix, const char *fmt, va_list ap)
{
	char msg[1024];
	int saved = errno;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	rn_log(prio, "%s%s: %s", prefix, msg, strerror(saved));
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_errno(LOG_WARNING, "", fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_errno(LOG_CRIT, "fatal: ", fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rn_log(LOG_CRIT, "fatal: %s", msg);
	exit(1);
}
