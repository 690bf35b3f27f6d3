/*
 * common/log.h for the fuzz targets: every line is formatted, so its
 * arguments are read as a real log would read them (a %s over bytes with
 * no NUL is an overread the sanitizer sees), then dropped. Hostile input
 * logs a line per bad record; writing them would make stderr the
 * bottleneck; FUZZ_LOG=1 prints them, to replay a crash with its story.
 * A fatal() is never a way to refuse input: it aborts.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

void
rn_log_init(const char *component, const char *worker, int verbose)
{
	(void)component;
	(void)worker;
	(void)verbose;
}

void
rn_log_set_verbose(int verbose)
{
	(void)verbose;
}

void
rn_vlog(int prio, const char *fmt, va_list ap)
{
	char msg[1024];
	int saved = errno;

	static int show = -1;

	if (show < 0)
		show = getenv("FUZZ_LOG") != NULL;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (show)
		fprintf(stderr, "<%d> %s\n", prio, msg);
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
	va_list ap;

	(void)fields;
	va_start(ap, fmt);
	rn_vlog(prio, fmt, ap);
	va_end(ap);
}

void
rn_log_about(int prio, struct rn_log_subject subj, const char *fmt, ...)
{
	char f[RN_LOG_SUBJECT_FIELDS][RN_LOG_FIELD_MAX];
	va_list ap;

	/* the journal fields are built as under systemd */
	(void)rn_log_subject_fields(&subj, f);
	va_start(ap, fmt);
	rn_vlog(prio, fmt, ap);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rn_vlog(LOG_WARNING, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": fatal() on fuzz input\n");
	abort();
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": fatalx() on fuzz input\n");
	abort();
}
