/*
 * ssl.principal.mapping.rules: the name a client certificate's subject
 * (its RFC 2253 DN) gives the principal, as Kafka's SslPrincipalMapper
 * does. The value is a comma-separated list of DEFAULT (the DN as it
 * is) and RULE:pattern/replacement/ with an optional L or U (lower or
 * upper case the result); "\/" and "\," stay inside a pattern or a
 * replacement. The first rule whose Java-style regex (PCRE2) matches the
 * whole DN names the principal, its replacement taking $1, ${name};
 * no rule matching refuses the login.
 *
 * The rules come from the operator, the DN from the client: the rule
 * count and pattern length are bounded, and every match runs under
 * PCRE2 match, depth and heap limits so a hostile DN cannot make a
 * pathological pattern spin. Parsed once by the supervisor; a map is
 * then used by one thread only (it keeps its match buffer).
 */
#ifndef RN_PRINCIPAL_MAP_H
#define RN_PRINCIPAL_MAP_H

#include <stdbool.h>
#include <stddef.h>

#define RN_PMAP_MAX_RULES 64
#define RN_PMAP_PATTERN_MAX 1024     /* bytes of one pattern or replacement */
#define RN_PMAP_VALUE_MAX 16384      /* bytes of the whole value */
#define RN_PMAP_MATCH_LIMIT 100000   /* PCRE2 match() calls per match */
#define RN_PMAP_DEPTH_LIMIT 2000     /* PCRE2 backtracking depth */
#define RN_PMAP_HEAP_LIMIT_KIB 1024

struct rn_pmap;

enum rn_pmap_result {
	RN_PMAP_OK = 0,
	RN_PMAP_NO_MATCH,   /* no rule applies: Kafka's NoMatchingRule */
	RN_PMAP_TOO_LONG,   /* the name does not fit the caller's buffer */
	RN_PMAP_LIMIT,      /* a match hit the PCRE2 limits: refused */
};

/*
 * The rules of value (NULL: Kafka's default, "DEFAULT"), or NULL with a
 * one-line reason naming key in err ("out of memory" included).
 */
struct rn_pmap *rn_pmap_parse(const char *value, const char *key, char *err,
    size_t errlen);

/* The principal name dn maps to, into out (NUL-terminated on OK). */
enum rn_pmap_result rn_pmap_apply(struct rn_pmap *m, const char *dn,
    char *out, size_t outlen);

/* The rules as Kafka prints them ("[RULE:p/r/L, DEFAULT]"), for logs. */
void rn_pmap_describe(const struct rn_pmap *m, char *buf, size_t len);

/* Only DEFAULT: the DN unchanged, whatever it is. */
bool rn_pmap_is_default(const struct rn_pmap *m);

int rn_pmap_count(const struct rn_pmap *m);

void rn_pmap_free(struct rn_pmap *m);

#endif /* RN_PRINCIPAL_MAP_H */
