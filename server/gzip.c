/*
 * gzip for replies (gzip.h): one deflate pass into a buffer sized by
 * deflateBound, so a reply is compressed once and, when cached, served
 * compressed again without more work.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "gzip.h"

int srv_gzip_accepted(const char *ae)
{
	const char *p;

	if (ae == NULL)
		return 0;
	for (p = ae; (p = strcasestr(p, "gzip")) != NULL; p += 4) {
		const char *q = p + 4;

		while (*q == ' ')
			q++;
		if (*q == ';') { /* a quality: only q=0 (or 0.0...) refuses */
			q++;
			while (*q == ' ')
				q++;
			if ((q[0] == 'q' || q[0] == 'Q') && q[1] == '=' && strtod(q + 2, NULL) == 0.0)
				continue;
		}
		return 1;
	}
	return 0;
}

int srv_gzip(const char *in, size_t n, char **out, size_t *outn)
{
	z_stream z;
	uLong bound;
	char *buf;

	memset(&z, 0, sizeof(z));
	if (n > (size_t)UINT32_MAX || deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	bound = deflateBound(&z, (uLong)n);
	if ((buf = malloc(bound)) == NULL)
		goto out_end;
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = (Bytef *)buf;
	z.avail_out = (uInt)bound;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END || z.total_out >= n)
		goto out_free;
	*out = buf;
	*outn = z.total_out;
	deflateEnd(&z);
	return 0;
out_free:
	free(buf);
out_end:
	deflateEnd(&z);
	return -1;
}
