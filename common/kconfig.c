/*
 * Lookups, validation and value resolution over Kafka's config catalogue
 * (kconfig_catalogue.c).
 */
#include "autoconf.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/kconfig_catalogue.h"
#include "common/util.h"

#define SYN_MAX 16

static const struct rn_kcfg *
find(const struct rn_kcfg *tab, size_t n, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = strcmp(tab[mid].name, name);

		if (r == 0)
			return &tab[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct rn_kcfg *
rn_kcfg_topic_find(const char *name)
{
	return find(rn_kcfg_topic, rn_kcfg_topic_n, name);
}

const struct rn_kcfg *
rn_kcfg_broker_find(const char *name)
{
	return find(rn_kcfg_broker, rn_kcfg_broker_n, name);
}

const struct rn_kcfg *
rn_kcfg_listener_find(const char *name)
{
	const struct rn_kcfg *k;
	const char *p;

	if (strncmp(name, "listener.name.", 14) != 0 ||
	    (p = strchr(name + 14, '.')) == NULL || p == name + 14)
		return NULL;
	if ((k = rn_kcfg_broker_find(p + 1)) != NULL)
		return k;
	/* listener.name.<l>.<mechanism>.sasl.jaas.config and the like */
	if ((p = strchr(p + 1, '.')) != NULL)
		return rn_kcfg_broker_find(p + 1);
	return NULL;
}

/* ---- validation ----------------------------------------------------- */

static const char *const type_names[] = {
	[RN_KCFG_BOOLEAN] = "BOOLEAN", [RN_KCFG_STRING] = "STRING",
	[RN_KCFG_INT] = "INT", [RN_KCFG_SHORT] = "SHORT",
	[RN_KCFG_LONG] = "LONG", [RN_KCFG_DOUBLE] = "DOUBLE",
	[RN_KCFG_LIST] = "LIST", [RN_KCFG_CLASS] = "CLASS",
	[RN_KCFG_PASSWORD] = "PASSWORD",
};

static bool
parse_num(const struct rn_kcfg *k, const char *s, long long *i, double *d)
{
	char *end;

	errno = 0;
	if (*s == '\0')
		return false;
	if (k->type == RN_KCFG_DOUBLE) {
		*d = strtod(s, &end);
		return errno == 0 && *end == '\0';
	}
	*i = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return false;
	if (k->type == RN_KCFG_INT)
		return *i >= INT32_MIN && *i <= INT32_MAX;
	if (k->type == RN_KCFG_SHORT)
		return *i >= INT16_MIN && *i <= INT16_MAX;
	return true;
}

/* -1 below min, 1 above max, 0 inside. */
static int
out_of_range(const struct rn_kcfg *k, long long i, double d)
{
	if (k->type == RN_KCFG_DOUBLE) {
		if (k->min != NULL && d < strtod(k->min, NULL))
			return -1;
		if (k->max != NULL && d > strtod(k->max, NULL))
			return 1;
		return 0;
	}
	if (k->min != NULL && i < strtoll(k->min, NULL, 10))
		return -1;
	if (k->max != NULL && i > strtoll(k->max, NULL, 10))
		return 1;
	return 0;
}

/* Is item (len n) one of the comma-separated choices? */
static bool
is_choice(const char *choices, const char *item, size_t n, bool icase)
{
	const char *c = choices, *e;

	for (; c != NULL && *c != '\0'; c = *e ? e + 1 : e) {
		e = strchr(c, ',');
		if (e == NULL)
			e = c + strlen(c);
		if ((size_t)(e - c) == n && (icase ? strncasecmp(c, item, n) :
		    strncmp(c, item, n)) == 0)
			return true;
	}
	return false;
}

/* For a LIST, v is the caller's trimmed copy: cut into items in place. */
static bool
choices_ok(const struct rn_kcfg *k, const char *value, char *v)
{
	char *p, *e, *item;

	if (k->check != RN_KCHK_LIST)
		return is_choice(k->choices, value, strlen(value),
		    k->check == RN_KCHK_ICHOICE);
	for (p = v; *p != '\0'; p = e) {
		if ((e = strchr(p, ',')) != NULL)
			*e++ = '\0';
		else
			e = p + strlen(p);
		item = rn_trim(p);
		if (!is_choice(k->choices, item, strlen(item), false))
			return false;
	}
	return true;
}

/* 0.8.2, 0.10.1-IV2, 2.8, 3.0-IV1: a release Kafka's versions know */
static bool
version_ok(const char *v)
{
	unsigned long major, minor;
	char *end;

	if (!isdigit((unsigned char)*v))
		return false;
	major = strtoul(v, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return false;
	minor = strtoul(end + 1, &end, 10);
	if (*end == '.' && isdigit((unsigned char)end[1]))
		strtoul(end + 1, &end, 10);
	if (strncmp(end, "-IV", 3) == 0 && isdigit((unsigned char)end[3]))
		strtoul(end + 3, &end, 10);
	if (*end != '\0')
		return false;
	if (major == 0)
		return minor >= 8 && minor <= 11;
	return major <= 4 && minor <= 9;
}

/* "*", or partition:broker pairs separated by commas */
static bool
throttled_ok(const char *v)
{
	const char *p = v;

	if (strcmp(v, "*") == 0 || *v == '\0')
		return true;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		if (*p++ != ':' || !isdigit((unsigned char)*p))
			return false;
		while (isdigit((unsigned char)*p))
			p++;
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0')
			return true;
		if (*p++ != ',')
			return false;
	}
}

bool
rn_kcfg_throttled_has(const char *v, int32_t partition, int32_t broker)
{
	const char *p = v;
	char *end;

	if (v == NULL || *v == '\0')
		return false;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '*')
		return true;
	while (*p != '\0') {
		long pp = strtol(p, &end, 10), bb;

		if (end == p || *end != ':')
			return false;
		bb = strtol(end + 1, &end, 10);
		if (pp == partition && bb == broker)
			return true;
		while (isspace((unsigned char)*end))
			end++;
		if (*end != ',')
			return false;
		p = end + 1;
	}
	return false;
}

static int
fail(const struct rn_kcfg *k, const char *value, char *err, size_t errlen,
    const char *why)
{
	snprintf(err, errlen, "Invalid value %s for configuration %s: %s",
	    value, k->name, why);
	return -EINVAL;
}

static int
check_number(const struct rn_kcfg *k, const char *v, char *err,
    size_t errlen)
{
	char why[160];
	long long i = 0;
	double d = 0;
	int r;

	if (!parse_num(k, v, &i, &d)) {
		snprintf(why, sizeof(why), "Not a number of type %s",
		    type_names[k->type]);
		return fail(k, v, err, errlen, why);
	}
	if (k->check != RN_KCHK_RANGE && k->check != RN_KCHK_RANGE_OR_DEFAULT)
		return 0;
	if (k->check == RN_KCHK_RANGE_OR_DEFAULT && k->dflt != NULL &&
	    strtoll(k->dflt, NULL, 10) == i)
		return 0;
	if ((r = out_of_range(k, i, d)) == 0)
		return 0;
	if (k->check == RN_KCHK_RANGE_OR_DEFAULT && k->max != NULL)
		snprintf(why, sizeof(why), "Value must be between %s and %s or "
		    "equal to %s", k->min, k->max, k->dflt);
	else if (k->check == RN_KCHK_RANGE_OR_DEFAULT)
		snprintf(why, sizeof(why), "Value must be at least %s or equal "
		    "to %s", k->min, k->dflt);
	else
		snprintf(why, sizeof(why), r < 0 ? "Value must be at least %s" :
		    "Value must be no more than %s", r < 0 ? k->min : k->max);
	return fail(k, v, err, errlen, why);
}

int
rn_kcfg_validate(const struct rn_kcfg *k, const char *value, char *err,
    size_t errlen)
{
	char buf[4096], why[512], *v;

	/* Kafka trims before parsing */
	strlcpy(buf, value, sizeof(buf));
	v = rn_trim(buf);
	switch (k->type) {
	case RN_KCFG_BOOLEAN:
		if (strcasecmp(v, "true") != 0 && strcasecmp(v, "false") != 0)
			return fail(k, value, err, errlen, "Expected value to "
			    "be either true or false");
		return 0;
	case RN_KCFG_INT:
	case RN_KCFG_SHORT:
	case RN_KCFG_LONG:
	case RN_KCFG_DOUBLE:
		return check_number(k, v, err, errlen);
	default:
		break;
	}
	switch (k->check) {
	case RN_KCHK_CHOICE:
	case RN_KCHK_ICHOICE:
	case RN_KCHK_LIST:
		if (choices_ok(k, value, v))
			return 0;
		snprintf(why, sizeof(why), "String must be one of%s: %s",
		    k->check == RN_KCHK_ICHOICE ? " (case insensitive)" : "",
		    k->choices);
		return fail(k, value, err, errlen, why);
	case RN_KCHK_NONEMPTY:
		if (*v != '\0')
			return 0;
		return fail(k, value, err, errlen, "String must be non-empty");
	case RN_KCHK_VERSION:
		if (version_ok(v))
			return 0;
		return fail(k, value, err, errlen, "Not a Kafka version such "
		    "as 2.8 or 3.0-IV1");
	case RN_KCHK_THROTTLED:
		if (throttled_ok(v))
			return 0;
		return fail(k, value, err, errlen, "must be * or a list of "
		    "partitionId:brokerId pairs");
	default:
		return 0;
	}
}

/* ---- resolution ----------------------------------------------------- */

struct syn {
	const char *name, *value;
	enum rn_config_source source;
};

/* The i-th comma-separated name of list into buf; false past the end. */
static bool
nth_name(const char *list, int i, char *buf, size_t buflen)
{
	const char *p = list, *e;

	for (; p != NULL && *p != '\0'; i--, p = *e ? e + 1 : e) {
		e = strchr(p, ',');
		if (e == NULL)
			e = p + strlen(p);
		if (i == 0) {
			size_t n = (size_t)(e - p) < buflen ? (size_t)(e - p) :
			    buflen - 1;

			memcpy(buf, p, n);
			buf[n] = '\0';
			return true;
		}
	}
	return false;
}

/* log.retention.hours=2 as milliseconds */
static const char *
convert(const char *key, const char *value, char *buf, size_t buflen)
{
	size_t n = strlen(key);
	long long v, mul;
	char *end;

	if (n > 6 && strcmp(key + n - 6, ".hours") == 0)
		mul = 3600000;
	else if (n > 8 && strcmp(key + n - 8, ".minutes") == 0)
		mul = 60000;
	else
		return value;
	v = strtoll(value, &end, 10);
	if (end == value || v > INT64_MAX / mul)
		return value;
	snprintf(buf, buflen, "%lld", v < 0 ? -1LL : v * mul);
	return buf;
}

static const enum rn_config_source levels[] = {
	RN_CFGSRC_DYNAMIC_BROKER_CONFIG,
	RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG,
	RN_CFGSRC_STATIC_BROKER_CONFIG,
	RN_CFGSRC_DEFAULT_CONFIG,
};

/*
 * Every synonym of the broker keys in list, level by level: Kafka's
 * order. Names point into the catalogue.
 */
static int
collect(const char *list, rn_kcfg_get_fn get, void *arg, struct syn *out,
    int max)
{
	const struct rn_kcfg *b;
	char name[128];
	size_t l;
	int i, n = 0;

	for (l = 0; l < sizeof(levels) / sizeof(levels[0]); l++)
		for (i = 0; nth_name(list, i, name, sizeof(name)) && n < max;
		    i++) {
			const char *v;

			if ((b = rn_kcfg_broker_find(name)) == NULL)
				continue;
			if (levels[l] == RN_CFGSRC_DEFAULT_CONFIG)
				v = b->dflt;
			else
				v = get != NULL ? get(arg, levels[l], b->name) :
				    NULL;
			if (v == NULL)
				continue;
			out[n].name = b->name;
			out[n].value = rn_kcfg_sensitive(b) ? NULL : v;
			out[n++].source = levels[l];
		}
	return n;
}

void
rn_kcfg_topic_value(const struct rn_kcfg *k, const char *override,
    rn_kcfg_get_fn get, void *arg, rn_kcfg_syn_fn syn, void *synarg,
    struct rn_kcfg_value *out, char *buf, size_t buflen)
{
	struct syn s[SYN_MAX];
	int i, n;

	n = k->synonyms != NULL ? collect(k->synonyms, get, arg, s,
	    SYN_MAX) : 0;
	if (override != NULL) {
		out->value = override;
		out->source = RN_CFGSRC_DYNAMIC_TOPIC_CONFIG;
		if (syn != NULL)
			syn(synarg, k->name, override, out->source);
	} else if (n > 0) {
		out->value = s[0].value != NULL ? convert(s[0].name,
		    s[0].value, buf, buflen) : NULL;
		out->source = s[0].source;
	} else {
		out->value = k->dflt;
		out->source = RN_CFGSRC_DEFAULT_CONFIG;
	}
	for (i = 0; syn != NULL && i < n; i++)
		syn(synarg, s[i].name, s[i].value, s[i].source);
}

/* Broker keys that stand for one setting: log.retention.ms/minutes/hours. */
static const char *
siblings(const struct rn_kcfg *k)
{
	size_t i;

	for (i = 0; i < rn_kcfg_topic_n; i++) {
		const char *l = rn_kcfg_topic[i].synonyms;
		const char *p;
		size_t n = strlen(k->name);

		if (l == NULL || strchr(l, ',') == NULL)
			continue;
		for (p = strstr(l, k->name); p != NULL; p = strstr(p + 1,
		    k->name))
			if ((p == l || p[-1] == ',') && (p[n] == ',' ||
			    p[n] == '\0'))
				return l;
	}
	return k->name;
}

void
rn_kcfg_broker_value(const struct rn_kcfg *k, bool cluster_default,
    rn_kcfg_get_fn get, void *arg, rn_kcfg_syn_fn syn, void *synarg,
    struct rn_kcfg_value *out)
{
	struct syn s[SYN_MAX];
	bool first;
	size_t l;
	int i, n;

	out->value = NULL;
	out->source = RN_CFGSRC_DEFAULT_CONFIG;
	for (l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
		enum rn_config_source lv = levels[l];
		const char *v;

		if (cluster_default && lv != RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG)
			continue;
		v = lv == RN_CFGSRC_DEFAULT_CONFIG ? k->dflt : get != NULL ?
		    get(arg, lv, k->name) : NULL;
		if (v != NULL) {
			out->value = v;
			break;
		}
	}
	n = collect(siblings(k), get, arg, s, SYN_MAX);
	/* Kafka lists synonyms from the key's own first entry on; the first
	 * one listed names the source */
	for (i = 0; i < n && strcmp(s[i].name, k->name) != 0; i++)
		;
	for (first = true; i < n; i++) {
		if (cluster_default &&
		    s[i].source != RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG)
			continue;
		if (first)
			out->source = s[i].source;
		first = false;
		if (syn != NULL)
			syn(synarg, s[i].name, s[i].value, s[i].source);
	}
	if (rn_kcfg_sensitive(k))
		out->value = NULL;
}
