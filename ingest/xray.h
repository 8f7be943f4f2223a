#ifndef INGEST_XRAY_H
#define INGEST_XRAY_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/*
 * The XRay FDR decoder (xray.c): a push parser like the FXT one. Buffers
 * arrive in ring order, so records are kept per thread until xray_finish(),
 * which orders each thread's buffers in time, merges the threads by the time
 * of their next record (so that events reach the model in time order, ties
 * in thread order, and the build stage need not sort them), matches entries
 * and exits and fills the model: complete events (MDL_EV_COMPLETE) named "fn#<id>" in
 * category "xray" on thread (pid, tid), MDL_EV_BEGIN for calls still open,
 * instants for custom and typed events; diagnostics in m->diag.
 */
struct xray_decoder;
struct xray_decoder *xray_create(struct model *m);
int xray_feed(struct xray_decoder *d, const uint8_t *buf, size_t n);
/*
 * Before the first xray_feed(): the whole input starts at base, readable
 * until xray_finish() returns, and each chunk fed is the next part of it. Buffers are then read where they lie instead of being copied (a
 * mapped file: its pages are touched once, not copied into fresh memory).
 */
void xray_stable_input(struct xray_decoder *d, const uint8_t *base);
/*
 * The same, for base a private read-only mapping of a file (never memory
 * the caller wrote, whose pages would read back as zeros): each buffer's
 * pages are given back (MADV_DONTNEED) once xray_finish() has walked it, so
 * that the input is not held in memory while the events are made; a page
 * read again comes back from the page cache.
 */
void xray_stable_file(struct xray_decoder *d, const uint8_t *base);
int xray_finish(struct xray_decoder *d);
void xray_destroy(struct xray_decoder *d);
/* Whether the first bytes are an XRay FDR file header (version 1-5, type 1). */
int xray_detect(const uint8_t *buf, size_t n);

#endif
