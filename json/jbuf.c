/*
 * A small streaming JSON writer for bulk replies.
 *
 * cJSON builds a tree and keeps numbers as doubles; replies with 100 k rows
 * and 64-bit ids need neither. This writer appends text to one buffer,
 * escapes strings (invalid UTF-8 bytes become U+FFFD, so any trace string
 * yields valid JSON) and prints integers exactly.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jbuf.h"
#include "../provider/utf8.h"

void jb_init(struct jbuf *b)
{
	memset(b, 0, sizeof(*b));
}

void jb_fini(struct jbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int jb_reserve(struct jbuf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return -1;
	if (b->len + n + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + n + 1)
		cap *= 2;
	if ((p = realloc(b->p, cap)) == NULL) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

char *jb_take(struct jbuf *b, size_t *len)
{
	char *p;

	if (jb_reserve(b, 1) != 0) {
		jb_fini(b);
		return NULL;
	}
	b->p[b->len] = '\0';
	p = b->p;
	if (len)
		*len = b->len;
	memset(b, 0, sizeof(*b));
	return p;
}

static void jb_escape(struct jbuf *b, const unsigned char *s, size_t n);

void jb_key(struct jbuf *b, const char *k)
{
	jb_sep(b);
	jb_raw(b, "\"", 1);
	jb_escape(b, (const unsigned char *)k, strlen(k));
	jb_raw(b, "\":", 2);
	b->need_comma = 0;
}

static void jb_escape(struct jbuf *b, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, run, k;
	char esc[8];

	while (i < n) {
		for (run = i; run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\'; run++)
			;
		jb_raw(b, (const char *)s + i, run - i);
		if ((i = run) >= n)
			break;
		if (s[i] >= 0x80) {
			k = utf8_seq_len(s + i, n - i);
			if (k)
				jb_raw(b, (const char *)s + i, k);
			else
				jb_raw(b, "\xef\xbf\xbd", 3);
			i += k ? k : 1;
			continue;
		}
		if (s[i] == '"' || s[i] == '\\') {
			esc[0] = '\\';
			esc[1] = (char)s[i];
			jb_raw(b, esc, 2);
		} else {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[s[i] >> 4];
			esc[5] = hex[s[i] & 15];
			jb_raw(b, esc, 6);
		}
		i++;
	}
}

void jb_strn(struct jbuf *b, const char *s, size_t n)
{
	jb_sep(b);
	jb_raw(b, "\"", 1);
	jb_escape(b, (const unsigned char *)s, n);
	jb_raw(b, "\"", 1);
}

char *jb_quote(const char *s, size_t *len)
{
	struct jbuf q;

	jb_init(&q);
	jb_str(&q, s);
	return jb_take(&q, len);
}

void jb_str(struct jbuf *b, const char *s)
{
	if (s == NULL)
		jb_null(b);
	else
		jb_strn(b, s, strlen(s));
}

/* The decimal digits of v, written backwards from the end of t (24 bytes);
 * returns where they start. printf's machinery was a tenth of the time of
 * a zoomed-out viewport (three or four integers a slice). */
/* Doubles print with the fewest digits that read back the same; NaN and
 * infinities, which JSON lacks, print as null. */
void jb_dbl(struct jbuf *b, double v)
{
	char t[32];
	int n, prec;

	if (!isfinite(v)) {
		jb_null(b);
		return;
	}
	for (prec = 15; prec <= 17; prec++) {
		n = snprintf(t, sizeof(t), "%.*g", prec, v);
		if (strtod(t, NULL) == v)
			break;
	}
	jb_sep(b);
	jb_raw(b, t, (size_t)n);
	if (strpbrk(t, ".eE") == NULL && strcmp(t, "-0") != 0)
		jb_raw(b, ".0", 2);
}

void jb_bool(struct jbuf *b, int v)
{
	jb_sep(b);
	jb_raw(b, v ? "true" : "false", v ? 4 : 5);
}

void jb_null(struct jbuf *b)
{
	jb_sep(b);
	jb_raw(b, "null", 4);
}
