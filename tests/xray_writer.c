/*
 * XRay FDR writer: builds logs of versions 1 to 5 in memory for tests,
 * fuzz seeds and benchmarks (see xray_writer.h for the layout and the
 * choices made).
 *
 * Every metadata record goes through meta(): the kind byte, then the data
 * bytes the caller packed, then w->junk up to 16 bytes. Function records
 * go through xrw_function(). The TSC bookkeeping (w->tsc) mirrors the
 * runtime's "latest TSC": NewCPUId and TSCWrap set it, function records
 * and v5 custom and typed events move it by their delta.
 */
#include "xray_writer.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { META = 16, DATA = 15, FUNC = 8, HEADER = 32 };

static void reserve(struct xrw *w, size_t n)
{
	size_t cap;

	if (w->cap - w->len >= n)
		return;
	cap = w->cap ? w->cap : 4096;
	while (cap - w->len < n)
		cap *= 2;
	w->buf = realloc(w->buf, cap);
	if (w->buf == NULL)
		abort();
	w->cap = cap;
}

static void put_le(uint8_t *q, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		q[i] = (uint8_t)(v >> (8 * i));
}

void xrw_init(struct xrw *w, uint16_t version, uint64_t v1_bufsize)
{
	memset(w, 0, sizeof(*w));
	w->version = version;
	w->bufsize = v1_bufsize;
	w->open = SIZE_MAX;
}

void xrw_fini(struct xrw *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

int xrw_save(const struct xrw *w, const char *path)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (f == NULL)
		return -1;
	if (w->len > 0 && fwrite(w->buf, 1, w->len, f) != w->len)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

void xrw_bytes(struct xrw *w, const void *p, size_t n)
{
	reserve(w, n);
	if (n > 0)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

size_t xrw_mark(const struct xrw *w)
{
	return w->len;
}

void xrw_patch8(struct xrw *w, size_t off, uint8_t v)
{
	assert(off < w->len);
	w->buf[off] = v;
}

void xrw_patch64(struct xrw *w, size_t off, uint64_t v)
{
	assert(off + 8 <= w->len);
	put_le(w->buf + off, v, 8);
}

void xrw_header_raw(struct xrw *w, uint16_t version, uint16_t type, uint32_t bits, uint64_t freq, uint64_t bufsize)
{
	uint8_t h[HEADER] = { 0 };

	put_le(h, version, 2);
	put_le(h + 2, type, 2);
	put_le(h + 4, bits, 4);
	put_le(h + 8, freq, 8);
	put_le(h + 16, bufsize, 8);
	xrw_bytes(w, h, sizeof(h));
}

void xrw_header(struct xrw *w, uint64_t cycle_frequency)
{
	xrw_header_raw(w, w->version, 1, 3, cycle_frequency, w->bufsize);
}

/* A metadata record: kind byte, n data bytes, junk to 16 bytes. */
static void meta(struct xrw *w, unsigned kind, const uint8_t *data, size_t n)
{
	uint8_t r[META];

	assert(kind < 128 && n <= DATA);
	memset(r, w->junk, sizeof(r));
	r[0] = (uint8_t)(1 | kind << 1);
	if (n > 0)
		memcpy(r + 1, data, n);
	xrw_bytes(w, r, sizeof(r));
}

void xrw_meta(struct xrw *w, unsigned kind, const uint8_t data[15])
{
	meta(w, kind, data, DATA);
}

void xrw_extents(struct xrw *w, uint64_t n)
{
	uint8_t d[8];

	put_le(d, n, 8);
	meta(w, XRW_EXTENTS, d, sizeof(d));
}

void xrw_new_buffer(struct xrw *w, uint32_t tid)
{
	uint8_t d[4];

	put_le(d, tid, 4);
	meta(w, XRW_NEW_BUFFER, d, sizeof(d));
}

void xrw_end_of_buffer(struct xrw *w)
{
	meta(w, XRW_END_OF_BUFFER, NULL, 0);
}

void xrw_new_cpu(struct xrw *w, uint16_t cpu, uint64_t tsc)
{
	uint8_t d[10];

	put_le(d, cpu, 2);
	put_le(d + 2, tsc, 8);
	meta(w, XRW_NEW_CPU, d, sizeof(d));
	w->tsc = tsc;
}

void xrw_tsc_wrap(struct xrw *w, uint64_t tsc)
{
	uint8_t d[8];

	put_le(d, tsc, 8);
	meta(w, XRW_TSC_WRAP, d, sizeof(d));
	w->tsc = tsc;
}

void xrw_walltime(struct xrw *w, uint64_t sec, uint32_t usec)
{
	uint8_t d[12];

	put_le(d, sec, 8);
	put_le(d + 8, usec, 4);
	meta(w, XRW_WALLTIME, d, sizeof(d));
}

void xrw_pid(struct xrw *w, uint32_t pid)
{
	uint8_t d[4];

	put_le(d, pid, 4);
	meta(w, XRW_PID, d, sizeof(d));
}

void xrw_call_arg(struct xrw *w, uint64_t arg)
{
	uint8_t d[8];

	put_le(d, arg, 8);
	meta(w, XRW_CALL_ARG, d, sizeof(d));
}

void xrw_custom(struct xrw *w, uint64_t tsc, uint16_t cpu, const void *data, uint32_t len)
{
	uint8_t d[14];
	size_t n = 12;

	put_le(d, len, 4);
	if (w->version >= 5) {
		put_le(d + 4, (uint32_t)(int32_t)(int64_t)(tsc - w->tsc), 4);
		w->tsc = tsc;
		n = 8;
	} else {
		put_le(d + 4, tsc, 8);
		if (w->version == 4) {
			put_le(d + 12, cpu, 2);
			n = 14;
		}
	}
	meta(w, XRW_CUSTOM, d, n);
	xrw_bytes(w, data, len);
}

void xrw_typed(struct xrw *w, uint64_t tsc, uint16_t type, const void *data, uint32_t len)
{
	uint8_t d[10];

	put_le(d, len, 4);
	put_le(d + 4, (uint32_t)(int32_t)(int64_t)(tsc - w->tsc), 4);
	put_le(d + 8, type, 2);
	w->tsc = tsc;
	meta(w, XRW_TYPED, d, sizeof(d));
	xrw_bytes(w, data, len);
}

void xrw_function(struct xrw *w, unsigned kind, uint32_t fid, uint32_t delta)
{
	uint8_t r[FUNC];

	assert(kind < 8 && fid < (UINT32_C(1) << 28));
	put_le(r, (uint32_t)kind << 1 | fid << 4, 4);
	put_le(r + 4, delta, 4);
	xrw_bytes(w, r, sizeof(r));
	w->tsc += delta;
}

/* A function record at absolute tsc, wrapping first when needed. */
static void function_at(struct xrw *w, unsigned kind, uint32_t fid, uint64_t tsc)
{
	assert(tsc >= w->tsc);
	if (tsc - w->tsc > UINT32_MAX)
		xrw_tsc_wrap(w, tsc);
	xrw_function(w, kind, fid, (uint32_t)(tsc - w->tsc));
}

void xrw_enter(struct xrw *w, uint32_t fid, uint64_t tsc)
{
	function_at(w, XRW_ENTER, fid, tsc);
}

void xrw_exit(struct xrw *w, uint32_t fid, uint64_t tsc)
{
	function_at(w, XRW_EXIT, fid, tsc);
}

void xrw_tail_exit(struct xrw *w, uint32_t fid, uint64_t tsc)
{
	function_at(w, XRW_TAIL_EXIT, fid, tsc);
}

void xrw_enter_args(struct xrw *w, uint32_t fid, uint64_t tsc, const uint64_t *args, unsigned nargs)
{
	unsigned i;

	function_at(w, XRW_ENTER_ARGS, fid, tsc);
	for (i = 0; i < nargs; i++)
		xrw_call_arg(w, args[i]);
}

void xrw_buffer_open(struct xrw *w)
{
	assert(w->open == SIZE_MAX);
	w->open = w->len;
	if (w->version >= 2)
		xrw_extents(w, 0);
}

void xrw_buffer_begin(struct xrw *w, uint32_t tid, uint32_t pid, uint64_t wall_sec, uint32_t wall_usec, uint16_t cpu,
		      uint64_t tsc)
{
	xrw_buffer_open(w);
	xrw_new_buffer(w, tid);
	xrw_walltime(w, wall_sec, wall_usec);
	if (w->version >= 3)
		xrw_pid(w, pid);
	xrw_new_cpu(w, cpu, tsc);
}

void xrw_buffer_end(struct xrw *w)
{
	size_t used, end;

	assert(w->open != SIZE_MAX);
	if (w->version >= 2) {
		xrw_patch64(w, w->open + 1, w->len - w->open - META);
	} else {
		xrw_end_of_buffer(w);
		used = w->len - w->open;
		assert(used <= w->bufsize);
		end = w->open + (size_t)w->bufsize;
		reserve(w, end - w->len);
		memset(w->buf + w->len, w->junk, end - w->len);
		w->len = end;
	}
	w->open = SIZE_MAX;
}
