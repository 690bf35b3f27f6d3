/*
 * The Prometheus text exposition (0.0.4) of a collection's samples. A
 * scrape of a busy node is thousands of lines and may come 100 times a
 * second, so a line is written with plain copies into room reserved once
 * for it: no printf, no check per byte, the family's name measured once
 * per family (its samples are together), numbers two digits at a time.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/sv_metrics.h"
#include "supervisor/sv_metrics_int.h"

int
sv_obuf_reserve(struct sv_obuf *o, size_t n)
{
	size_t cap;
	char *b;

	if (o->len + n <= o->cap)
		return 0;
	for (cap = o->cap ? o->cap : 4096; cap < o->len + n; cap *= 2)
		;
	if ((b = realloc(o->b, cap)) == NULL)
		return -ENOMEM;
	o->b = b;
	o->cap = cap;
	return 0;
}

void
sv_obuf_free(struct sv_obuf *o)
{
	free(o->b);
	*o = (struct sv_obuf){ NULL, 0, 0 };
}

static char *
put(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

static const char digit_pairs[200] =
	"0001020304050607080910111213141516171819"
	"2021222324252627282930313233343536373839"
	"4041424344454647484950515253545556575859"
	"6061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* v in decimal, zero-padded to min_digits (at most 20). */
static char *
put_u64(char *p, uint64_t v, int min_digits)
{
	char d[20], *q = d + sizeof(d);

	while (v >= 100) {
		q -= 2;
		memcpy(q, digit_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		q -= 2;
		memcpy(q, digit_pairs + 2 * v, 2);
	} else
		*--q = (char)('0' + v);
	while (d + sizeof(d) - q < min_digits)
		*--q = '0';
	return put(p, q, (size_t)(d + sizeof(d) - q));
}

/* A label value with the escapes the format asks for: \\, \" and \n. */
static char *
put_escaped(char *p, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[i] == '\\' || s[i] == '"' || s[i] == '\n') {
			*p++ = '\\';
			*p++ = s[i] == '\n' ? 'n' : s[i];
		} else
			*p++ = s[i];
	}
	return p;
}

/* ,name="value" after the first label: our own strings, no escapes. */
static char *
put_label(char *p, const char *name, size_t nlen, const char *val,
    size_t vlen)
{
	*p++ = ',';
	p = put(p, name, nlen);
	p = put(p, "=\"", 2);
	p = put(p, val, vlen);
	*p++ = '"';
	return p;
}

static int
put_family_head(struct sv_obuf *o, const struct sv_met_family *f,
    size_t name_len)
{
	size_t help = strlen(f->help), type = strlen(f->type);
	char *p;

	if (sv_obuf_reserve(o, 2 * name_len + help + type + 20) != 0)
		return -ENOMEM;
	p = o->b + o->len;
	p = put(p, "# HELP ", 7);
	p = put(p, f->name, name_len);
	*p++ = ' ';
	p = put(p, f->help, help);
	p = put(p, "\n# TYPE ", 8);
	p = put(p, f->name, name_len);
	*p++ = ' ';
	p = put(p, f->type, type);
	*p++ = '\n';
	o->len = (size_t)(p - o->b);
	return 0;
}

/*
 * A sample's strings and their lengths. Each is measured once, and not
 * again for the next sample when it is the same string: a histogram's
 * 28 lines share all but le and the suffix.
 */
struct line {
	const char *str[6];
	size_t len[6];
};
enum { L_SUFFIX, L_NAME1, L_NAME2, L_VAL2, L_NAME3, L_VAL3 };

static void
line_measure(struct line *l, const struct sv_met_sample *s)
{
	const char *str[6] = { s->suffix, s->lname, s->l2name, s->l2val,
	    s->l3name, s->l3val };
	unsigned i;

	for (i = 0; i < 6; i++)
		if (str[i] != l->str[i]) {
			l->str[i] = str[i];
			l->len[i] = str[i] != NULL ? strlen(str[i]) : 0;
		}
}

/* The most a sample's line takes beside its family's name. */
static size_t
line_room(const struct line *l, const struct sv_met_sample *s)
{
	/* punctuation, a label's number, the value: under 64 */
	size_t n = 64 + 2 * s->lval_len;
	unsigned i;

	for (i = 0; i < 6; i++)
		n += l->len[i];
	return n;
}

/* name{labels} value\n; the room was reserved by the caller. */
static char *
put_sample(char *p, const struct sv_met_sample *s, const struct line *l,
    const char *name, size_t name_len)
{
	char num[12], *e;

	p = put(p, name, name_len);
	if (s->suffix != NULL)
		p = put(p, s->suffix, l->len[L_SUFFIX]);
	if (s->lname != NULL) {
		*p++ = '{';
		p = put(p, s->lname, l->len[L_NAME1]);
		p = put(p, "=\"", 2);
		p = put_escaped(p, s->lval, s->lval_len);
		*p++ = '"';
		if (s->l2name != NULL && s->l2val != NULL)
			p = put_label(p, s->l2name, l->len[L_NAME2],
			    s->l2val, l->len[L_VAL2]);
		else if (s->l2name != NULL) {
			e = s->l2num < 0 ? put(num, "-", 1) : num;
			e = put_u64(e, s->l2num < 0 ? -(uint64_t)s->l2num :
			    (uint64_t)s->l2num, 1);
			p = put_label(p, s->l2name, l->len[L_NAME2], num,
			    (size_t)(e - num));
		}
		if (s->l3name != NULL)
			p = put_label(p, s->l3name, l->len[L_NAME3],
			    s->l3val, l->len[L_VAL3]);
		*p++ = '}';
	}
	*p++ = ' ';
	if (s->v_signed && (int64_t)s->v < 0) {
		*p++ = '-';
		p = put_u64(p, -s->v, 1);
	} else if (s->v_us) {
		p = put_u64(p, s->v / 1000000, 1);
		*p++ = '.';
		p = put_u64(p, s->v % 1000000, 6);
	} else
		p = put_u64(p, s->v, 1);
	*p++ = '\n';
	return p;
}

int
sv_metrics_render(const struct sv_metrics *m, struct sv_obuf *o)
{
	const struct sv_met_family *f = NULL;
	const struct sv_met_sample *s;
	size_t i, start = o->len, name_len = 0;
	struct line l = { { NULL }, { 0 } };

	/* most lines are a histogram bucket's, under 128 bytes */
	if (sv_obuf_reserve(o, m->n * 128) != 0)
		goto err;
	for (i = 0; i < m->n; i++) {
		s = &m->s[i];
		if (i == 0 || s->fam != m->s[i - 1].fam) {
			f = &sv_met_families[s->fam];
			name_len = strlen(f->name);
			if (put_family_head(o, f, name_len) != 0)
				goto err;
		}
		line_measure(&l, s);
		if (sv_obuf_reserve(o, name_len + line_room(&l, s)) != 0)
			goto err;
		o->len = (size_t)(put_sample(o->b + o->len, s, &l, f->name,
		    name_len) - o->b);
	}
	return 0;
err:
	o->len = start;
	return -ENOMEM;
}
