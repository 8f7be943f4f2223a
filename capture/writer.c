/*
 * The trace writer (writer.h): the capture's trace file and the catalog's
 * record of it as it grows. A failure ends the trace as failed and leaves
 * its reason in w->error; every write after it does nothing, so that the
 * capture goes on (its providers are still answered) without a trace.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../ingest/fxtrec.h"
#include "writer.h"

void cap_writer_init(struct cap_writer *w, struct catalog *cat)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	w->cat = cat;
	w->fd = -1;
}

void cap_writer_fini(struct cap_writer *w)
{
	free(w->described);
	w->described = NULL;
	pthread_mutex_destroy(&w->mu);
}

void cap_writer_lock(struct cap_writer *w)
{
	pthread_mutex_lock(&w->mu);
}

void cap_writer_unlock(struct cap_writer *w)
{
	pthread_mutex_unlock(&w->mu);
}

/* Appends p[0..n) to the source. 0, or -1 when the trace failed (now: it
 * is ended as failed, or before). */
static int write_all(struct cap_writer *w, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0 && w->fd >= 0) {
		ssize_t k = write(w->fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			snprintf(w->error, sizeof(w->error), "the capture's trace could not be written: %s",
				 strerror(k < 0 ? errno : EIO));
			close(w->fd);
			w->fd = -1;
			cat_live_close(w->cat, w->trace, 0);
			return -1;
		}
		c += k;
		n -= (size_t)k;
		w->size += (uint64_t)k;
	}
	return w->fd >= 0 ? 0 : -1;
}

void cap_writer_grew(struct cap_writer *w)
{
	char err[256];

	if (w->fd >= 0 && cat_live_grew(w->cat, w->trace, w->size, err, sizeof(err)) != 0) {
		snprintf(w->error, sizeof(w->error), "the capture's trace was deleted or failed");
		close(w->fd);
		w->fd = -1;
	}
}

int cap_writer_open(struct cap_writer *w, const struct cat_new *nw, int64_t *trace, char *err, size_t errlen)
{
	uint8_t magic[8];

	*trace = 0;
	w->size = 0;
	w->ndescribed = 0;
	w->error[0] = '\0';
	if ((w->trace = cat_live_open(w->cat, nw, &w->fd, err, errlen)) < 0) {
		w->trace = 0;
		w->fd = -1;
		return -1;
	}
	*trace = w->trace;
	fxt_put_magic(magic);
	if (write_all(w, magic, sizeof(magic)) != 0) {
		snprintf(err, errlen, "%s", w->error);
		return -1;
	}
	return 0;
}

static int described(const struct cap_writer *w, uint32_t provider)
{
	size_t i;

	for (i = 0; i < w->ndescribed; i++)
		if (w->described[i] == provider)
			return 1;
	return 0;
}

/* Notes that provider's info record is in the trace; 0, or -1 when memory
 * ran out (its next records then describe it again, which ingest takes). */
static int describe(struct cap_writer *w, uint32_t provider)
{
	if (w->ndescribed == w->cap_described) {
		size_t c = w->cap_described ? w->cap_described * 2 : 16;
		uint32_t *v = realloc(w->described, c * sizeof(*v));

		if (v == NULL)
			return -1;
		w->described = v;
		w->cap_described = c;
	}
	w->described[w->ndescribed++] = provider;
	return 0;
}

/* Records here were framed on arrival (cap_session_data): their sizes hold. */
static size_t record_bytes(const uint8_t *p)
{
	return (size_t)fxt_record_bytes(p);
}

int cap_writer_records(struct cap_writer *w, uint32_t provider, const char *name, const uint8_t *p, size_t n)
{
	uint8_t meta[8 + 264];
	size_t off = 0, k;
	int first = !described(w, provider);

	if (n == 0 || w->fd < 0)
		return -1;
	if (first)
		k = fxt_put_provider_info(meta, provider, name);
	else
		k = fxt_put_provider_section(meta, provider);
	if (write_all(w, meta, k) != 0)
		return -1;
	if (first)
		describe(w, provider);
	/* whole runs of records in one write: only a provider's own section
	 * records are left out between them */
	while (off < n) {
		size_t run = off;

		while (run < n && !fxt_record_is_section(p + run))
			run += record_bytes(p + run);
		if (run > off && write_all(w, p + off, run - off) != 0)
			return -1;
		off = run < n ? run + record_bytes(p + run) : run;
	}
	cap_writer_grew(w);
	return 0;
}

void cap_writer_buffer_full(struct cap_writer *w, uint32_t provider)
{
	uint8_t rec[8];

	if (w->fd >= 0 && described(w, provider)) {
		fxt_put_buffer_full(rec, provider);
		write_all(w, rec, sizeof(rec));
	}
}

void cap_writer_close(struct cap_writer *w, int complete)
{
	if (w->fd >= 0) {
		cap_writer_grew(w); /* may fail: the trace is ended all the same */
		if (w->fd >= 0)
			close(w->fd);
		w->fd = -1;
		cat_live_close(w->cat, w->trace, complete);
	}
	w->trace = 0;
	w->size = 0;
	w->ndescribed = 0;
	w->error[0] = '\0';
}
