/*
 * A small TAP producer for the C tests, in the style of c-tap-harness:
 * plan(), ok(), is_int(), is_str(), diag(), skip_all(), done_testing().
 * Results go to stdout for automake's tap-driver.sh; diagnostics to stderr.
 */
#ifndef RN_TAP_H
#define RN_TAP_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count;
static int tap_failed;
static int tap_planned = -1;

static inline void
plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

static inline void
diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void
diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static inline int
tap_result(int pass, const char *fmt, va_list ap)
{
	tap_count++;
	if (!pass)
		tap_failed++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	return pass;
}

static inline int
ok(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int
ok(int pass, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = tap_result(pass, fmt, ap);
	va_end(ap);
	return r;
}

static inline int
is_int(long long got, long long want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int
is_int(long long got, long long want, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = tap_result(got == want, fmt, ap);
	va_end(ap);
	if (!r)
		diag("    got: %lld\n#  wanted: %lld", got, want);
	return r;
}

static inline int
is_str(const char *got, const char *want, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int
is_str(const char *got, const char *want, const char *fmt, ...)
{
	va_list ap;
	int r, pass;

	pass = got != NULL && want != NULL ? strcmp(got, want) == 0 : got == want;
	va_start(ap, fmt);
	r = tap_result(pass, fmt, ap);
	va_end(ap);
	if (!r)
		diag("    got: '%s'\n#  wanted: '%s'", got ? got : "(null)",
		    want ? want : "(null)");
	return r;
}

/* Exit 77 is automake's "skipped"; TAP readers see the plan line. */
static inline void
skip_all(const char *why) __attribute__((noreturn));
static inline void
skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	fflush(stdout);
	exit(0);
}

static inline void
bail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void
bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(255);
}

static inline int
done_testing(void)
{
	if (tap_planned < 0)
		printf("1..%d\n", tap_count);
	else if (tap_planned != tap_count)
		diag("planned %d tests but ran %d", tap_planned, tap_count);
	fflush(stdout);
	return tap_failed != 0 || (tap_planned >= 0 && tap_planned != tap_count);
}

#endif /* RN_TAP_H */
