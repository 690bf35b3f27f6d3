/*
 * ssl.principal.mapping.rules: parse the list the way Kafka splits it,
 * compile each pattern with PCRE2 (Java's regex dialect is close: lazy
 * quantifiers, \s, \w, named groups), and apply the first rule whose
 * pattern matches the whole DN with Java's replaceAll semantics.
 */
#include "autoconf.h"

#define PCRE2_CODE_UNIT_WIDTH 8

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcre2.h>

#include "common/principal_map.h"

struct pmap_rule {
	bool is_default;
	char casing;            /* 0, 'L' or 'U' */
	char *pattern;          /* as written, escapes kept */
	char *replacement;      /* as written, escapes kept */
	pcre2_code *code;
	uint32_t groups;
};

struct rn_pmap {
	int n;
	struct pmap_rule rules[RN_PMAP_MAX_RULES];
	pcre2_match_data *md;       /* sized for the rule with most groups */
	pcre2_match_context *mctx;  /* the limits */
};

/* A bounded output buffer: over is set instead of writing past cap. */
struct sbuf {
	char *buf;
	size_t len, cap;
	bool over;
};

static void
sb_add(struct sbuf *sb, const char *s, size_t n)
{
	if (sb->buf == NULL)
		return;
	if (sb->over || n >= sb->cap - sb->len) {
		sb->over = true;
		return;
	}
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

/* Java's \s */
static bool
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
	    c == '\v';
}

/* The end of a pattern or replacement: its first unescaped '/', or NULL. */
static const char *
scan_part(const char *p)
{
	while (*p != '\0') {
		if (*p == '\\') {
			if (p[1] == '\0')
				return NULL;
			p += 2;
		} else if (*p == '/')
			return p;
		else
			p++;
	}
	return NULL;
}

/* Where the text from p up to the next comma (or the end) ends, less its
 * trailing blanks. */
static const char *
segment_end(const char *p)
{
	const char *e = p + strcspn(p, ",");

	while (e > p && is_ws(e[-1]))
		e--;
	return e;
}

/* Only blanks, then a comma or the end. */
static bool
at_separator(const char *p)
{
	while (is_ws(*p))
		p++;
	return *p == ',' || *p == '\0';
}

/*
 * Java's Matcher.appendReplacement: "\x" is x, "$n" the longest group
 * number that exists, "${name}" a named group; a group that did not take
 * part adds nothing. With ov NULL only checks, and says why not in why.
 */
static bool
expand(const struct pmap_rule *r, const char *subj, const PCRE2_SIZE *ov,
    struct sbuf *out, char *why, size_t whylen)
{
	const char *p = r->replacement;
	uint32_t g;

	while (*p != '\0') {
		if (*p == '\\') {
			if (p[1] == '\0') {
				snprintf(why, whylen, "a '\\' ends the "
				    "replacement");
				return false;
			}
			sb_add(out, p + 1, 1);
			p += 2;
			continue;
		}
		if (*p != '$') {
			sb_add(out, p++, 1);
			continue;
		}
		p++;
		if (*p == '{') {
			char name[33];
			const char *e = strchr(p, '}');
			int num;

			if (e == NULL || e == p + 1 ||
			    (size_t)(e - p - 1) >= sizeof(name)) {
				snprintf(why, whylen, "a '${' without a group "
				    "name and '}' in the replacement");
				return false;
			}
			memcpy(name, p + 1, (size_t)(e - p - 1));
			name[e - p - 1] = '\0';
			num = pcre2_substring_number_from_name(r->code,
			    (PCRE2_SPTR)name);
			if (num < 0) {
				snprintf(why, whylen, "the replacement names "
				    "group '%s', which the pattern has not",
				    name);
				return false;
			}
			g = (uint32_t)num;
			p = e + 1;
		} else if (isdigit((unsigned char)*p)) {
			g = (uint32_t)(*p - '0');
			if (g > r->groups) {
				/* Kafka makes such a reference literal text;
				 * with no group at all Java would throw */
				if (r->groups == 0) {
					snprintf(why, whylen, "the replacement "
					    "refers to group %u but the pattern "
					    "has no group", g);
					return false;
				}
				sb_add(out, "$", 1);
				continue;
			}
			p++;
			while (isdigit((unsigned char)*p) &&
			    g * 10 + (uint32_t)(*p - '0') <= r->groups)
				g = g * 10 + (uint32_t)(*p++ - '0');
		} else {
			snprintf(why, whylen, "a '$' in the replacement is "
			    "not followed by a group number or {name} (write "
			    "\\$ for a dollar)");
			return false;
		}
		if (ov != NULL && ov[2 * g] != PCRE2_UNSET)
			sb_add(out, subj + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
	}
	return true;
}

static bool
add_rule(struct rn_pmap *m, bool is_default, const char *pat, size_t plen,
    const char *rep, size_t rlen, char casing, const char *key, char *err,
    size_t errlen)
{
	struct pmap_rule *r;
	char why[160];
	PCRE2_SIZE off;
	int code;

	if (m->n == RN_PMAP_MAX_RULES) {
		snprintf(err, errlen, "invalid value for %s: more than %d "
		    "rules", key, RN_PMAP_MAX_RULES);
		return false;
	}
	r = &m->rules[m->n];
	r->is_default = is_default;
	r->casing = casing;
	if (is_default) {
		m->n++;
		return true;
	}
	if (plen > RN_PMAP_PATTERN_MAX || rlen > RN_PMAP_PATTERN_MAX) {
		snprintf(err, errlen, "invalid value for %s: a rule's pattern "
		    "or replacement is longer than %d bytes", key,
		    RN_PMAP_PATTERN_MAX);
		return false;
	}
	m->n++;         /* rn_pmap_free frees what is set from here */
	if ((r->pattern = strndup(pat, plen)) == NULL ||
	    (r->replacement = strndup(rep, rlen)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	r->code = pcre2_compile((PCRE2_SPTR)pat, plen, 0, &code, &off, NULL);
	if (r->code == NULL) {
		PCRE2_UCHAR msg[120];

		pcre2_get_error_message(code, msg, sizeof(msg));
		snprintf(err, errlen, "invalid value for %s: rule "
		    "`RULE:%.200s/%.200s/`: %s at offset %zu of the pattern",
		    key, r->pattern, r->replacement, (const char *)msg,
		    (size_t)off);
		return false;
	}
	pcre2_pattern_info(r->code, PCRE2_INFO_CAPTURECOUNT, &r->groups);
	if (!expand(r, NULL, NULL, &(struct sbuf){ 0 }, why, sizeof(why))) {
		snprintf(err, errlen, "invalid value for %s: rule "
		    "`RULE:%.200s/%.200s/`: %s", key, r->pattern,
		    r->replacement, why);
		return false;
	}
	return true;
}

/* The rules themselves, Kafka's way: blanks around them and empty ones
 * ignored, a comma inside a pattern kept (it ends at its '/'). */
static bool
parse_rules(struct rn_pmap *m, const char *value, const char *key, char *err,
    size_t errlen)
{
	const char *p = value, *start, *pe, *re, *q, *e;
	char casing;

	for (;;) {
		while (is_ws(*p))
			p++;
		if (*p == '\0')
			return true;
		if (*p == ',') {
			p++;
			continue;
		}
		start = p;
		if (strncmp(p, "DEFAULT", 7) == 0 && at_separator(p + 7)) {
			if (!add_rule(m, true, NULL, 0, NULL, 0, 0, key, err,
			    errlen))
				return false;
			p += 7;
		} else if (strncmp(p, "RULE:", 5) == 0 &&
		    (pe = scan_part(p + 5)) != NULL &&
		    (re = scan_part(pe + 1)) != NULL) {
			q = re + 1;
			casing = *q == 'L' || *q == 'U' ? *q++ : 0;
			if ((e = segment_end(q)) > q) {
				snprintf(err, errlen, "invalid value for %s: "
				    "invalid rule `%.*s`, unmatched substring "
				    "`%.*s`", key, (int)(e - start > 300 ? 300 :
				    e - start), start, (int)(e - q > 100 ? 100 :
				    e - q), q);
				return false;
			}
			if (!add_rule(m, false, p + 5, (size_t)(pe - p - 5),
			    pe + 1, (size_t)(re - pe - 1), casing, key, err,
			    errlen))
				return false;
			p = q;
		} else {
			e = segment_end(p);
			snprintf(err, errlen, "invalid value for %s: invalid "
			    "rule `%.*s` (rules are DEFAULT or "
			    "RULE:pattern/replacement/ with an optional L or U)",
			    key, (int)(e - p > 300 ? 300 : e - p), p);
			return false;
		}
		while (is_ws(*p))
			p++;
		if (*p == ',')
			p++;
	}
}

struct rn_pmap *
rn_pmap_parse(const char *value, const char *key, char *err, size_t errlen)
{
	struct rn_pmap *m;
	uint32_t most = 0;
	int i;

	if (value == NULL)
		value = "DEFAULT";
	if (strlen(value) > RN_PMAP_VALUE_MAX) {
		snprintf(err, errlen, "invalid value for %s: longer than %d "
		    "bytes", key, RN_PMAP_VALUE_MAX);
		return NULL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!parse_rules(m, value, key, err, errlen))
		goto fail;
	for (i = 0; i < m->n; i++)
		if (m->rules[i].groups > most)
			most = m->rules[i].groups;
	if ((m->md = pcre2_match_data_create(most + 1, NULL)) == NULL ||
	    (m->mctx = pcre2_match_context_create(NULL)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	pcre2_set_match_limit(m->mctx, RN_PMAP_MATCH_LIMIT);
	pcre2_set_depth_limit(m->mctx, RN_PMAP_DEPTH_LIMIT);
	pcre2_set_heap_limit(m->mctx, RN_PMAP_HEAP_LIMIT_KIB);
	return m;
fail:
	rn_pmap_free(m);
	return NULL;
}

/*
 * Java's String.replaceAll: every match from the start, left to right;
 * after an empty match the next search starts one further on.
 */
static enum rn_pmap_result
replace_all(struct rn_pmap *m, const struct pmap_rule *r, const char *dn,
    size_t len, struct sbuf *out)
{
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
	size_t from = 0, copied = 0;
	char why[8];
	int rc;

	while (from <= len) {
		rc = pcre2_match(r->code, (PCRE2_SPTR)dn, len, from, 0, m->md,
		    m->mctx);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0 || ov[1] < ov[0] || ov[0] < copied)
			return RN_PMAP_LIMIT;
		sb_add(out, dn + copied, ov[0] - copied);
		expand(r, dn, ov, out, why, sizeof(why));
		copied = ov[1];
		from = ov[1] == ov[0] ? ov[1] + 1 : ov[1];
	}
	sb_add(out, dn + copied, len - copied);
	return out->over ? RN_PMAP_TOO_LONG : RN_PMAP_OK;
}

enum rn_pmap_result
rn_pmap_apply(struct rn_pmap *m, const char *dn, char *out, size_t outlen)
{
	struct sbuf sb = { out, 0, outlen, outlen == 0 };
	size_t len = strlen(dn), i;
	enum rn_pmap_result res;
	int k, rc;

	if (outlen > 0)
		out[0] = '\0';
	for (k = 0; k < m->n; k++) {
		const struct pmap_rule *r = &m->rules[k];

		if (r->is_default) {
			sb_add(&sb, dn, len);
			return sb.over ? RN_PMAP_TOO_LONG : RN_PMAP_OK;
		}
		/* Java's matches(): the whole DN */
		rc = pcre2_match(r->code, (PCRE2_SPTR)dn, len, 0,
		    PCRE2_ANCHORED | PCRE2_ENDANCHORED, m->md, m->mctx);
		if (rc == PCRE2_ERROR_NOMATCH)
			continue;
		if (rc < 0)
			return RN_PMAP_LIMIT;   /* never the next rule's name */
		if ((res = replace_all(m, r, dn, len, &sb)) != RN_PMAP_OK)
			return res;
		for (i = 0; i < sb.len && r->casing != 0; i++)
			out[i] = (char)(r->casing == 'L' ?
			    tolower((unsigned char)out[i]) :
			    toupper((unsigned char)out[i]));
		return RN_PMAP_OK;
	}
	return RN_PMAP_NO_MATCH;
}

void
rn_pmap_describe(const struct rn_pmap *m, char *buf, size_t len)
{
	struct sbuf sb = { buf, 0, len, len == 0 };
	int k;

	if (len > 0)
		buf[0] = '\0';
	sb_add(&sb, "[", 1);
	for (k = 0; k < m->n; k++) {
		const struct pmap_rule *r = &m->rules[k];

		if (k > 0)
			sb_add(&sb, ", ", 2);
		if (r->is_default) {
			sb_add(&sb, "DEFAULT", 7);
			continue;
		}
		sb_add(&sb, "RULE:", 5);
		sb_add(&sb, r->pattern, strlen(r->pattern));
		sb_add(&sb, "/", 1);
		sb_add(&sb, r->replacement, strlen(r->replacement));
		if (r->casing != 0) {
			sb_add(&sb, "/", 1);
			sb_add(&sb, &r->casing, 1);
		}
	}
	sb_add(&sb, "]", 1);
	if (sb.over && len >= 4)
		memcpy(buf + (sb.len < len - 4 ? sb.len : len - 4), "...", 4);
}

bool
rn_pmap_is_default(const struct rn_pmap *m)
{
	return m->n >= 1 && m->rules[0].is_default;
}

int
rn_pmap_count(const struct rn_pmap *m)
{
	return m->n;
}

void
rn_pmap_free(struct rn_pmap *m)
{
	int k;

	if (m == NULL)
		return;
	for (k = 0; k < m->n; k++) {
		pcre2_code_free(m->rules[k].code);
		free(m->rules[k].pattern);
		free(m->rules[k].replacement);
	}
	pcre2_match_data_free(m->md);
	pcre2_match_context_free(m->mctx);
	free(m);
}
