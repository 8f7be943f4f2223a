/*
 * UTF-8: the one reading of a sequence and the one way to cut a string,
 * for every part of the project that checks or shortens text (the provider
 * library's names and values, the server's names and error messages, the
 * catalog's labels, the JSON writer). A string cut anywhere else can end in
 * half a character, which the viewer then shows as U+FFFD.
 *
 * Header-only (static inline): the provider library links nothing of the
 * server's, and the server's modules include this file from here.
 */
#ifndef PROVIDER_UTF8_H
#define PROVIDER_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * The length (1 to 4) of the well-formed UTF-8 sequence at s, n bytes
 * left; 0 when it is not one: a stray continuation byte, a sequence cut
 * short, an overlong form, a surrogate or a code point past U+10FFFF.
 */
static inline size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t c;

	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	len = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (len > n)
		return 0;
	c = s[0] & (0x3f >> (len - 1));
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) || (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return len;
}

/* 1 when s[0..n) is well-formed UTF-8 (utf8_seq_len's rules), else 0. */
static inline int utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	while (p < end) {
		size_t k = utf8_seq_len(p, (size_t)(end - p));

		if (k == 0)
			return 0;
		p += k;
	}
	return 1;
}

/*
 * The length of s (n bytes) cut to at most max bytes, never inside a UTF-8
 * sequence: a character that does not fit whole is left out. Bytes that are
 * not UTF-8 are cut like single characters (at most 3 bytes are given back).
 */
static inline size_t utf8_cut(const char *s, size_t n, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i;

	if (n <= max)
		return n;
	for (i = max; i > 0 && max - i < 3 && (u[i] & 0xc0) == 0x80; i--)
		;
	return (u[i] & 0xc0) == 0xc0 ? i : max;
}

/*
 * Copies src into dst (cap bytes, cap > 0) cut at a character boundary as
 * utf8_cut does, NUL-terminated: snprintf("%s") for text. Returns the
 * length copied.
 */
static inline size_t utf8_copy(char *dst, size_t cap, const char *src)
{
	size_t n = utf8_cut(src, strlen(src), cap - 1);

	memmove(dst, src, n);
	dst[n] = '\0';
	return n;
}

#endif
