/*
 * Inside capture/: the capture's trace file (writer.c): the FXT magic
 * record, then each provider's records in a provider section of their own.
 */
#ifndef CAPTURE_WRITER_H
#define CAPTURE_WRITER_H

#include <stddef.h>
#include <stdint.h>

struct captures;
struct session;
struct pstat;

/* Makes s's live trace at its first start and writes the magic record.
 * 0, or -1 (err says why). */
int cap_writer_open(struct captures *m, struct session *s, char *err, size_t errlen);
/* Appends p[0..n) to s's trace; 0, or -1 (the trace is then failed). */
int cap_writer_write(struct captures *m, struct session *s, const void *p, size_t n);
/* Tells the catalog how far s's trace has grown. */
void cap_writer_grew(struct captures *m, struct session *s);
/* Writes records of ps's provider to the trace, after its provider section. */
void cap_writer_records(struct captures *m, struct session *s, struct pstat *ps, const uint8_t *p, size_t n,
			int durable);

#endif
