/*
 * runnel-consumer-groups: the times --to-datetime and --by-duration take,
 * in the forms Kafka's tool accepts.
 */
#include "autoconf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cg.h"

/* Reads exactly n digits; -1 if they are not there. */
static int
digits(const char **s, int n)
{
	int v = 0;

	while (n-- > 0) {
		if (!isdigit((unsigned char)**s))
			return -1;
		v = v * 10 + (*(*s)++ - '0');
	}
	return v;
}

/* "", "Z", "+hh:mm", "-hhmm": seconds east of UTC, or -1 on *bad. */
static long
zone_offset(const char *s, bool *has_zone, bool *bad)
{
	int sign, h, m;

	*has_zone = *s != '\0';
	if (*s == '\0')
		return 0;
	if (strcmp(s, "Z") == 0)
		return 0;
	if (*s != '+' && *s != '-')
		goto fail;
	sign = *s++ == '-' ? -1 : 1;
	if ((h = digits(&s, 2)) < 0)
		goto fail;
	if (*s == ':')
		s++;
	if ((m = digits(&s, 2)) < 0 || *s != '\0' || h > 18 || m > 59)
		goto fail;
	return sign * (h * 3600L + m * 60L);
fail:
	*bad = true;
	return -1;
}

int
cg_parse_datetime(const char *s, int64_t *ms)
{
	struct tm tm;
	int millis = 0;
	bool has_zone, bad = false;
	long zone;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	if ((tm.tm_year = digits(&s, 4)) < 0 || *s++ != '-' ||
	    (tm.tm_mon = digits(&s, 2)) < 0 || *s++ != '-' ||
	    (tm.tm_mday = digits(&s, 2)) < 0 || *s++ != 'T' ||
	    (tm.tm_hour = digits(&s, 2)) < 0 || *s++ != ':' ||
	    (tm.tm_min = digits(&s, 2)) < 0 || *s++ != ':' ||
	    (tm.tm_sec = digits(&s, 2)) < 0)
		return -1;
	if (*s == '.') {
		s++;
		if ((millis = digits(&s, 3)) < 0)
			return -1;
	}
	zone = zone_offset(s, &has_zone, &bad);
	if (bad || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	if (has_zone) {
		t = timegm(&tm) - zone;
	} else {
		tm.tm_isdst = -1; /* local time, as Kafka's tool takes it */
		t = mktime(&tm);
	}
	if (t == (time_t)-1)
		return -1;
	*ms = (int64_t)t * 1000 + millis;
	return 0;
}

/* One "<number><unit>" of a duration; the number may have a fraction. */
static int
duration_part(const char **s, char *unit, double *v)
{
	char *end;

	if (!isdigit((unsigned char)**s))
		return -1;
	*v = strtod(*s, &end);
	if (end == *s || *end == '\0')
		return -1;
	*unit = *end;
	*s = end + 1;
	return 0;
}

int
cg_parse_duration(const char *s, int64_t *ms)
{
	double v, total = 0;
	bool in_time = false, any = false;
	char unit;

	if (*s == '-' || *s++ != 'P' || *s == '\0')
		return -1;
	while (*s != '\0') {
		if (*s == 'T' && !in_time) {
			in_time = true;
			s++;
			continue;
		}
		if (duration_part(&s, &unit, &v) != 0)
			return -1;
		if (unit == 'D' && !in_time)
			total += v * 86400e3;
		else if (unit == 'H' && in_time)
			total += v * 3600e3;
		else if (unit == 'M' && in_time)
			total += v * 60e3;
		else if (unit == 'S' && in_time)
			total += v * 1e3;
		else
			return -1;
		any = true;
	}
	if (!any || total > 9.2e18)
		return -1;
	*ms = (int64_t)total;
	return 0;
}
