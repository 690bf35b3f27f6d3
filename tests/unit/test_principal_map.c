/*
 * ssl.principal.mapping.rules: the cases Kafka's SslPrincipalMapperTest
 * holds the mapper to (which values parse, how a list splits, what a DN
 * maps to), and runnel's bounds: a hostile DN against a pathological
 * pattern is refused within the PCRE2 limits instead of spinning.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/principal_map.h"
#include "tests/lib/tap.h"

#define KEY "ssl.principal.mapping.rules"

static char err[512];

static bool
valid(const char *rules)
{
	struct rn_pmap *m = rn_pmap_parse(rules, KEY, err, sizeof(err));

	rn_pmap_free(m);
	return m != NULL;
}

/* The rules as parsed, in Kafka's toString form. */
static const char *
split(const char *rules)
{
	static char out[1024];
	struct rn_pmap *m = rn_pmap_parse(rules, KEY, err, sizeof(err));

	if (m == NULL) {
		snprintf(out, sizeof(out), "error: %s", err);
		return out;
	}
	rn_pmap_describe(m, out, sizeof(out));
	rn_pmap_free(m);
	return out;
}

static void
test_valid(void)
{
	static const char *good[] = {
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
	};
	static const char *bad[] = {
		"default", "DEFAUL", "DEFAULT/L", "DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ok(valid(good[i]), "valid: %s", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(!valid(bad[i]) && strstr(err, KEY) != NULL,
		    "refused, naming the key: %s", bad[i]);
	/* runnel refuses what Java would only fail at the first login */
	ok(!valid("RULE:^CN=(.*)$/$x/"), "a '$' that is no group: %s", err);
	ok(!valid("RULE:^CN=.*$/$1/"), "$1 with no group: %s", err);
	ok(!valid("RULE:^CN=(?<who>.*)$/${whom}/"), "an unknown group "
	    "name: %s", err);
	ok(!valid("RULE:^CN=(.*$/$1/"), "a pattern PCRE2 cannot compile: "
	    "%s", err);
	ok(strstr(err, "offset") != NULL, "the compile error says where");
}

static void
test_splitting(void)
{
	static const char *cases[][2] = {
		{ "[]", "" },
		{ "[DEFAULT]", "DEFAULT" },
		{ "[RULE:/]", "RULE://" },
		{ "[RULE:/.*]", "RULE:/.*/" },
		{ "[RULE:/.*/L]", "RULE:/.*/L" },
		{ "[RULE:/, DEFAULT]", "RULE://,DEFAULT" },
		{ "[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  " },
		{ "[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  " },
		{ "[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  " },
		{ "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
		  "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  " },
		{ "[]", ",   , , ,      , , ,   " },
		{ "[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,," },
		{ "[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   " },
		{ "[RULE:   /  /U, DEFAULT]",
		  "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ," },
		{ "[RULE:\\/\\\\\\(\\)\\n\\t/\\/\\/]",
		  "RULE:\\/\\\\\\(\\)\\n\\t/\\/\\//" },
		{ "[RULE:\\**\\/+/*/L, RULE:\\/*\\**/**]",
		  "RULE:\\**\\/+/*/L,RULE:\\/*\\**/**/" },
		{ "[RULE:,RULE:,/,RULE:,\\//U, RULE:,/RULE:,, "
		  "RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
		  "RULE:,RULE:,/,RULE:,\\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,"
		  "RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		is_str(split(cases[i][1]), cases[i][0], "splits: '%s'",
		    cases[i][1]);
}

/* What dn maps to under rules, or "<no match>" and the like. */
static const char *
name_of(const char *rules, const char *dn)
{
	static char out[256];
	struct rn_pmap *m = rn_pmap_parse(rules, KEY, err, sizeof(err));
	enum rn_pmap_result r;

	if (m == NULL)
		return err;
	r = rn_pmap_apply(m, dn, out, sizeof(out));
	rn_pmap_free(m);
	return r == RN_PMAP_OK ? out : r == RN_PMAP_NO_MATCH ? "<no match>" :
	    r == RN_PMAP_TOO_LONG ? "<too long>" : "<limit>";
}

static void
test_mapping(void)
{
	const char *rules =
	    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, "
	    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, "
	    "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, "
	    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, "
	    "DEFAULT";
	char big[400];

	is_str(name_of(rules, "CN=Duke,OU=ServiceUsers,O=Org,C=US"), "duke",
	    "the first rule, lower-cased");
	is_str(name_of(rules, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"),
	    "duke@sme", "two groups");
	is_str(name_of(rules, "cn=duke,ou=sme,dc=mycp,dc=com"), "DUKE@SME",
	    "upper-cased");
	is_str(name_of(rules, "cN=duke,OU=JavaSoft,O=Sun Microsystems"),
	    "DUKE", "a later rule when the first do not match");
	is_str(name_of(rules, "OU=JavaSoft,O=Sun Microsystems,C=US"),
	    "OU=JavaSoft,O=Sun Microsystems,C=US", "DEFAULT: the DN as it is");
	is_str(name_of("RULE:^CN=((\\\\, *|\\w)+)(,.*|$)/$1/,DEFAULT",
	    "CN=Tkac\\, Adam,OU=ITZ,DC=geodis,DC=cz"), "Tkac\\, Adam",
	    "an escaped comma inside the name");
	is_str(name_of("RULE:^CN=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT",
	    "CN=Alice,OU=ServiceUsers,O=Runnel,C=US"), "alice",
	    "the README's rule");
	is_str(name_of("RULE:^CN=([a-z]+)$/$1/", "CN=Alice,O=x"), "<no match>",
	    "no rule matches: no name");
	is_str(name_of("", "CN=alice"), "<no match>", "no rules at all: no "
	    "name");
	is_str(name_of(NULL, "CN=alice"), "CN=alice", "unset is DEFAULT");
	is_str(name_of("RULE:CN=([a-z]+)/$1/", "xCN=alice"), "<no match>",
	    "the pattern must match the whole DN, not a part");
	is_str(name_of("RULE:^CN=(?<who>[a-z]+)$/user-${who}\\$/",
	    "CN=bob"), "user-bob$", "a named group and an escaped $");
	is_str(name_of("RULE:^CN=(a)(b)$/$12-$3$0/", "CN=ab"), "a2-$3CN=ab",
	    "$12 with two groups is $1 then 2; $3 is literal; $0 the match");
	is_str(name_of("RULE:^CN=(x)?(y)$/[$1]$2/", "CN=y"), "[]y",
	    "a group that took no part adds nothing");
	is_str(name_of("RULE:(.*?)/-/", "ab"), "-a-b-",
	    "replaceAll: every (empty) match, as Java does");
	is_str(name_of("RULE:^CN=(.*),O=\\/x\\,y$/$1/", "CN=a,O=/x,y"), "a",
	    "\\/ and \\, in a pattern");
	is_str(name_of("RULE:^CN=(.*)$/$1\\/$1/", "CN=a"), "a/a",
	    "\\/ in a replacement is a slash");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	is_str(name_of("DEFAULT", big), "<too long>", "a name longer than "
	    "the buffer is refused, not cut");
}

/* Catastrophic backtracking: (a+)+$ against aaaa...b. */
static void
test_bounds(void)
{
	char dn[200], rules[RN_PMAP_VALUE_MAX + 16];
	struct timespec t0, t1;
	const char *got;
	double ms;
	int i;

	memset(dn, 'a', sizeof(dn) - 2);
	dn[sizeof(dn) - 2] = 'b';
	dn[sizeof(dn) - 1] = '\0';
	clock_gettime(CLOCK_MONOTONIC, &t0);
	got = name_of("RULE:^(a+)+$/$1/,RULE:^(.*)$/$1/", dn);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	is_str(got, "<limit>", "a pathological pattern stops at the match "
	    "limit and refuses, never falling to the next rule");
	ok(ms < 2000, "within the limits: %.1f ms", ms);

	rules[0] = '\0';
	for (i = 0; i <= RN_PMAP_MAX_RULES; i++)
		strcat(rules, "RULE:x/y/,");
	ok(!valid(rules) && strstr(err, "more than") != NULL,
	    "more than %d rules: %s", RN_PMAP_MAX_RULES, err);
	strcpy(rules, "RULE:");
	memset(rules + 5, 'x', RN_PMAP_PATTERN_MAX + 1);
	strcpy(rules + 5 + RN_PMAP_PATTERN_MAX + 1, "/y/");
	ok(!valid(rules) && strstr(err, "longer than") != NULL,
	    "a pattern over %d bytes: %s", RN_PMAP_PATTERN_MAX, err);
	memset(rules, ' ', RN_PMAP_VALUE_MAX + 1);
	rules[RN_PMAP_VALUE_MAX + 1] = '\0';
	ok(!valid(rules), "a value over %d bytes", RN_PMAP_VALUE_MAX);
}

int
main(void)
{
	plan(63);
	test_valid();
	test_splitting();
	test_mapping();
	test_bounds();
	return done_testing();
}
