/*
 * Inside capture/: the trace writer (writer.c), which owns the capture's
 * trace file: a live trace of the catalog holding the FXT magic record,
 * then each provider's records in a provider section of their own.
 *
 * It has a lock of its own, taken before the manager's and never while
 * holding it, so that no file is written and no catalog call is made
 * under the manager's lock: a request that only reads the manager (a
 * capture's JSON, the providers, a state poll) never waits for the disk.
 * Whoever writes holds the writer's lock from the moment it decides what
 * to write (under the manager's lock) until it has counted what was
 * written, so the records of one provider reach the file in the order
 * they were decided, and no session ends meanwhile. Every cap_writer_*
 * function but init, fini, lock and unlock is called with the lock held.
 */
#ifndef CAPTURE_WRITER_H
#define CAPTURE_WRITER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../catalog/catalog.h"

struct cap_writer {
	pthread_mutex_t mu;      /* the writer's lock: guards every field below; taken before the
				    manager's lock, never under it */
	struct catalog *cat;     /* where the live trace is recorded; set at init */
	int64_t trace;           /* the live trace being written; 0 when none is open */
	int fd;                  /* its source, appended to; -1 when none, or once a write failed */
	uint64_t size;           /* bytes in the source: what the catalog is told it has grown to */
	uint32_t *described;     /* the providers whose provider info record is in the trace (the
				    first of their records); ndescribed of cap_described used */
	size_t ndescribed, cap_described;
	char error[256];         /* why the trace failed; "" while it has not. Static text only */
};

void cap_writer_init(struct cap_writer *w, struct catalog *cat);
/* Frees what init and the writes took; the trace must be closed. */
void cap_writer_fini(struct cap_writer *w);
void cap_writer_lock(struct cap_writer *w);
void cap_writer_unlock(struct cap_writer *w);

/*
 * Makes the live trace nw describes (the catalog's cat_live_open) and
 * writes its magic record. Returns 0, or -1 with err set (the catalog's
 * reason, or w->error when the magic could not be written). *trace is the
 * trace's id whenever the catalog made one, even if the magic failed (the
 * trace is then ended as failed), and 0 otherwise.
 */
int cap_writer_open(struct cap_writer *w, const struct cat_new *nw, int64_t *trace, char *err, size_t errlen);
/*
 * Appends the whole FXT records p[0..n) of provider (named name) after its
 * provider info record (the first time) or a provider section record, then
 * tells the catalog the trace grew. The provider's own provider info and
 * section records are left out: sections are the manager's. Returns 0 when
 * every byte was written, -1 when none could be (no trace, or it failed
 * now or before: w->error says why).
 */
int cap_writer_records(struct cap_writer *w, uint32_t provider, const char *name, const uint8_t *p, size_t n);
/* Appends a buffer-full record for provider (it dropped records), if its
 * records are in the trace. */
void cap_writer_buffer_full(struct cap_writer *w, uint32_t provider);
/* Tells the catalog how far the trace has grown (its readers then see it). */
void cap_writer_grew(struct cap_writer *w);
/* Ends the trace: complete (1) makes it ready. The writer is then empty,
 * for the next capture's trace. */
void cap_writer_close(struct cap_writer *w, int complete);

#endif
