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

/* A growable JSON text. Allocation failure is sticky (oom) and checked once. */
struct jbuf {
	char *p;
	size_t len, cap;
	int oom;
	int need_comma; /* the next value in the current container needs a comma */
};

void jb_init(struct jbuf *b);
void jb_fini(struct jbuf *b);
/* Hands the text over (NUL-terminated); the caller frees it. NULL on oom. */
char *jb_take(struct jbuf *b, size_t *len);
void jb_raw(struct jbuf *b, const char *s, size_t n);
/* Makes room for n more bytes at once: a writer that knows about how much
 * it will append saves the copies of growing step by step. */
void jb_grow(struct jbuf *b, size_t n);
void jb_obj(struct jbuf *b);      /* { */
void jb_obj_end(struct jbuf *b);  /* } */
void jb_arr(struct jbuf *b);      /* [ */
void jb_arr_end(struct jbuf *b);  /* ] */
void jb_key(struct jbuf *b, const char *k);
/* A key written as it is (a literal that needs no escaping): what writers
 * of many rows use, JB_KEY(b, "ts"). */
void jb_key_lit(struct jbuf *b, const char *k, size_t n);
#define JB_KEY(b, lit) jb_key_lit((b), "\"" lit "\":", sizeof("\"" lit "\":") - 1)
/* A value that already is JSON text (a string escaped once and kept). */
void jb_json(struct jbuf *b, const char *s, size_t n);
/* s as a JSON string value, in a malloc'd text; NULL when out of memory. */
char *jb_quote(const char *s, size_t *len);
void jb_str(struct jbuf *b, const char *s);
void jb_strn(struct jbuf *b, const char *s, size_t n);
void jb_i64(struct jbuf *b, int64_t v);
void jb_u64(struct jbuf *b, uint64_t v);
void jb_dbl(struct jbuf *b, double v);
void jb_bool(struct jbuf *b, int v);
void jb_null(struct jbuf *b);

#endif
