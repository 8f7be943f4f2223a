/*
 * A writer for LLVM XRay Flight Data Recorder (FDR) logs, versions 1 to 5,
 * for tests, fuzz seeds and benchmarks.
 *
 * The decoder (ingest/xray.c) has to be tested on logs we control bit for
 * bit, so this module builds them in memory, one record per call, laid out
 * as compiler-rt's runtime writes them (the table is in ingest/xray.c's
 * header comment): the 32-byte file header; per buffer, in v2+, a
 * BufferExtents record giving the size of what follows, or in v1 a
 * fixed-size buffer closed by EndOfBuffer and filler; the 16-byte metadata
 * records and the 8-byte function records. Function records carry the TSC
 * as a 32-bit delta from the previous record; the convenience calls
 * (xrw_enter, xrw_exit, ...) take absolute TSCs, compute the delta and
 * write a TSCWrap first when it does not fit, as the runtime does.
 *
 * Nothing is validated beyond what the encoding needs: tests that need
 * malformed input write raw records (xrw_meta, xrw_function, xrw_bytes) or
 * patch bytes afterwards (xrw_mark, xrw_patch8). Unused data bytes of
 * metadata records are filled with w->junk (0 by default), since the
 * runtime leaves them uninitialized and a reader must not look at them.
 * Allocation failure calls abort(): this is test code.
 */
#ifndef TESTS_XRAY_WRITER_H
#define TESTS_XRAY_WRITER_H

#include <stddef.h>
#include <stdint.h>

/* A growable output buffer; caller-owned, see xrw_init/xrw_fini. */
struct xrw {
	uint8_t *buf;     /* the log so far; NULL until the first write */
	size_t len;       /* bytes written */
	size_t cap;       /* bytes allocated; len <= cap */
	uint16_t version; /* record layouts follow it (custom events, Pid, framing) */
	uint64_t bufsize; /* v1: bytes of every buffer in the file */
	size_t open;      /* offset of the open buffer (its extents record in v2+); SIZE_MAX if none */
	uint64_t tsc;     /* latest absolute TSC written: the base of the next delta */
	uint8_t junk;     /* fills unused metadata bytes and v1 filler */
};

enum xrw_meta_kind {
	XRW_NEW_BUFFER = 0,
	XRW_END_OF_BUFFER = 1,
	XRW_NEW_CPU = 2,
	XRW_TSC_WRAP = 3,
	XRW_WALLTIME = 4,
	XRW_CUSTOM = 5,
	XRW_CALL_ARG = 6,
	XRW_EXTENTS = 7,
	XRW_TYPED = 8,
	XRW_PID = 9
};

enum xrw_fn_kind { XRW_ENTER = 0, XRW_EXIT = 1, XRW_TAIL_EXIT = 2, XRW_ENTER_ARGS = 3 };

/* Lifecycle. v1_bufsize is the fixed buffer size of version 1 logs (it is
 * also written in the header of every version). xrw_fini frees the buffer. */
void xrw_init(struct xrw *w, uint16_t version, uint64_t v1_bufsize);
void xrw_fini(struct xrw *w);
/* Writes the log to path. Returns 0, or -1 with errno set. */
int xrw_save(const struct xrw *w, const char *path);

/* Raw output and patching, for malformed input. */
void xrw_bytes(struct xrw *w, const void *p, size_t n);
size_t xrw_mark(const struct xrw *w);                    /* current length */
void xrw_patch8(struct xrw *w, size_t off, uint8_t v);   /* off < len */
void xrw_patch64(struct xrw *w, size_t off, uint64_t v); /* off + 8 <= len, little-endian */

/* The file header: type 1 (FDR), constant and non-stop TSC bits set. */
void xrw_header(struct xrw *w, uint64_t cycle_frequency);
void xrw_header_raw(struct xrw *w, uint16_t version, uint16_t type, uint32_t bits, uint64_t freq, uint64_t bufsize);

/*
 * A buffer as the runtime starts it: [BufferExtents (v2+)] NewBuffer,
 * WallTimeMarker, Pid (v3+) and NewCPUId(cpu, tsc). xrw_buffer_end closes
 * it: v2+ patches the extents with the bytes written since; v1 writes
 * EndOfBuffer and filler up to bufsize (asserting it fits).
 */
void xrw_buffer_begin(struct xrw *w, uint32_t tid, uint32_t pid, uint64_t wall_sec, uint32_t wall_usec, uint16_t cpu,
		      uint64_t tsc);
void xrw_buffer_end(struct xrw *w);
/* Opens a buffer with no records at all (v2+: the extents only; v1: nothing). */
void xrw_buffer_open(struct xrw *w);

/* Metadata records, one call each. The custom event layout follows
 * w->version: v1-3 size + TSC, v4 + cpu, v5 size + delta from w->tsc. */
void xrw_meta(struct xrw *w, unsigned kind, const uint8_t data[15]); /* any kind, raw */
void xrw_extents(struct xrw *w, uint64_t n);
void xrw_new_buffer(struct xrw *w, uint32_t tid);
void xrw_end_of_buffer(struct xrw *w);
void xrw_new_cpu(struct xrw *w, uint16_t cpu, uint64_t tsc);    /* sets w->tsc */
void xrw_tsc_wrap(struct xrw *w, uint64_t tsc);                 /* sets w->tsc */
void xrw_walltime(struct xrw *w, uint64_t sec, uint32_t usec);
void xrw_pid(struct xrw *w, uint32_t pid);
void xrw_call_arg(struct xrw *w, uint64_t arg);
void xrw_custom(struct xrw *w, uint64_t tsc, uint16_t cpu, const void *data, uint32_t len);
void xrw_typed(struct xrw *w, uint64_t tsc, uint16_t type, const void *data, uint32_t len);

/* A function record with a raw delta (w->tsc moves by it). */
void xrw_function(struct xrw *w, unsigned kind, uint32_t fid, uint32_t delta);

/* Function records at absolute TSCs (>= w->tsc); a TSCWrap comes first when
 * the delta does not fit in 32 bits. xrw_enter_args writes the arguments
 * as CallArgument records after the entry. */
void xrw_enter(struct xrw *w, uint32_t fid, uint64_t tsc);
void xrw_exit(struct xrw *w, uint32_t fid, uint64_t tsc);
void xrw_tail_exit(struct xrw *w, uint32_t fid, uint64_t tsc);
void xrw_enter_args(struct xrw *w, uint32_t fid, uint64_t tsc, const uint64_t *args, unsigned nargs);

#endif /* TESTS_XRAY_WRITER_H */
