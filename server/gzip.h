/*
 * HTTP compression of large JSON replies (gzip, zlib's deflate at a fast
 * level). Measured on this machine kind (docs/API.md, "Compression"): a
 * slices reply shrinks about 6 to 10 times for about 3 ms per MB; below
 * SRV_GZIP_MIN bytes it is not worth the header.
 */
#ifndef SERVER_GZIP_H
#define SERVER_GZIP_H

#include <stddef.h>

enum { SRV_GZIP_MIN = 4096 };

/* Whether an Accept-Encoding header value takes gzip (and not "gzip;q=0"). */
int srv_gzip_accepted(const char *accept_encoding);

/*
 * Compresses n bytes at in into a new gzip member. Returns 0 and sets *out
 * (malloc'd, the caller frees it) and *outn; -1 when out of memory or when
 * the result would not be smaller, and then nothing is allocated.
 */
int srv_gzip(const char *in, size_t n, char **out, size_t *outn);

#endif
