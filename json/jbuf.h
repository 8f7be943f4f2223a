/*
 * The JSON writer: a growable text that values are appended to, commas and
 * escaping done for the caller. Hand-written so that 64-bit integers are
 * printed exactly, strings always come out as valid UTF-8 JSON (control
 * bytes escaped, bytes that are not UTF-8 replaced), and 100 k rows render
 * in milliseconds. Used by every module that answers in JSON (query,
 * catalog, capture, server); it depends on nothing but libc.
 */
#ifndef JSON_JBUF_H
#define JSON_JBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A growable JSON text. Allocation failure is sticky (oom) and checked once. */
struct jbuf {
	char *p;
	size_t len, cap;
	int oom;
	int need_comma; /* the next value in the current container needs a comma */
};

void jb_init(struct jbuf *b);
/* Room for n more bytes (and a NUL); 0, or -1 out of memory (sticky). */
int jb_reserve(struct jbuf *b, size_t n);
void jb_fini(struct jbuf *b);
/* Hands the text over (NUL-terminated); the caller frees it. NULL on oom. */
char *jb_take(struct jbuf *b, size_t *len);
void jb_key(struct jbuf *b, const char *k);
/* s as a JSON string value, in a malloc'd text; NULL when out of memory. */
char *jb_quote(const char *s, size_t *len);
void jb_str(struct jbuf *b, const char *s);
void jb_strn(struct jbuf *b, const char *s, size_t n);
void jb_dbl(struct jbuf *b, double v);
void jb_bool(struct jbuf *b, int v);
void jb_null(struct jbuf *b);

/*
 * The few steps every value takes, inline: a reply of ten thousand slices
 * makes a hundred thousand of them, and a call each (with a memcpy of a
 * size the compiler cannot see) was most of its writing time.
 */
static inline void jb_raw(struct jbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap && jb_reserve(b, n) != 0)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* Makes room for n more bytes at once: a writer that knows about how much
 * it will append saves the copies of growing step by step. */
static inline void jb_grow(struct jbuf *b, size_t n)
{
	(void)jb_reserve(b, n);
}

static inline void jb_sep(struct jbuf *b)
{
	if (b->need_comma)
		jb_raw(b, ",", 1);
	b->need_comma = 1;
}

static inline void jb_obj(struct jbuf *b) /* { */
{
	jb_sep(b);
	jb_raw(b, "{", 1);
	b->need_comma = 0;
}

static inline void jb_obj_end(struct jbuf *b) /* } */
{
	jb_raw(b, "}", 1);
	b->need_comma = 1;
}

static inline void jb_arr(struct jbuf *b) /* [ */
{
	jb_sep(b);
	jb_raw(b, "[", 1);
	b->need_comma = 0;
}

static inline void jb_arr_end(struct jbuf *b) /* ] */
{
	jb_raw(b, "]", 1);
	b->need_comma = 1;
}

/* A key written as it is (a literal that needs no escaping): what writers
 * of many rows use, JB_KEY(b, "ts"). */
static inline void jb_key_lit(struct jbuf *b, const char *k, size_t n)
{
	jb_sep(b);
	jb_raw(b, k, n);
	b->need_comma = 0;
}
#define JB_KEY(b, lit) jb_key_lit((b), "\"" lit "\":", sizeof("\"" lit "\":") - 1)

/* A value that already is JSON text (a string escaped once and kept). */
static inline void jb_json(struct jbuf *b, const char *s, size_t n)
{
	jb_sep(b);
	jb_raw(b, s, n);
}

/* The decimal digits of v, written backwards from the end of t (24 bytes);
 * returns where they start (printf's machinery was a tenth of a zoomed-out
 * viewport's time). Two digits at a time: a timestamp's eleven digits were
 * the largest part of a columnar reply's writing, a division each. */
static inline char *jb_digits(uint64_t v, char *t)
{
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
				       "25262728293031323334353637383940414243444546474849"
				       "50515253545556575859606162636465666768697071727374"
				       "75767778798081828384858687888990919293949596979899";
	char *p = t + 24;

	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;

		v /= 100;
		*--p = pairs[d + 1];
		*--p = pairs[d];
	}
	if (v >= 10) {
		*--p = pairs[v * 2 + 1];
		*--p = pairs[v * 2];
	} else {
		*--p = (char)('0' + v);
	}
	return p;
}

static inline void jb_i64(struct jbuf *b, int64_t v)
{
	char t[24], *p = jb_digits(v < 0 ? -(uint64_t)v : (uint64_t)v, t);

	if (v < 0)
		*--p = '-';
	jb_sep(b);
	jb_raw(b, p, (size_t)(t + 24 - p));
}

static inline void jb_u64(struct jbuf *b, uint64_t v)
{
	char t[24], *p = jb_digits(v, t);

	jb_sep(b);
	jb_raw(b, p, (size_t)(t + 24 - p));
}

#endif
