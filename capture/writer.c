/*
 * The capture's trace (writer.h): a live trace of the catalog
 * (cat_live_open) that holds the FXT magic record, then each provider's
 * records in a provider section of their own, a DATA frame at a time.
 * Provider info and section records a provider sends itself are left out:
 * sections are the manager's. Called under the manager's lock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capture_internal.h"
#include "session.h"
#include "writer.h"

int cap_writer_write(struct captures *m, struct session *s, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0 && s->fd >= 0) {
		ssize_t k = write(s->fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			snprintf(s->error, sizeof(s->error), "the capture's trace could not be written: %s",
				 strerror(k < 0 ? errno : EIO));
			close(s->fd);
			s->fd = -1;
			cat_live_close(m->cat, s->trace, 0);
			return -1;
		}
		c += k;
		n -= (size_t)k;
		s->size += (uint64_t)k;
	}
	return s->fd >= 0 ? 0 : -1;
}

void cap_writer_grew(struct captures *m, struct session *s)
{
	char err[256];

	if (s->fd >= 0 && cat_live_grew(m->cat, s->trace, s->size, err, sizeof(err)) != 0) {
		snprintf(s->error, sizeof(s->error), "the capture's trace was deleted or failed");
		close(s->fd);
		s->fd = -1;
	}
}

/* Makes the live trace at the first start (under mu). */
int cap_writer_open(struct captures *m, struct session *s, char *err, size_t errlen)
{
	struct cat_new nw = { 0 };
	uint8_t magic[8];

	if (s->trace > 0)
		return 0;
	nw.name = s->name;
	nw.description = s->description;
	nw.labels = s->labels;
	nw.nlabels = s->cfg.nlabels;
	nw.format_hint = "fxt";
	if ((s->trace = cat_live_open(m->cat, &nw, &s->fd, err, errlen)) < 0) {
		s->trace = 0;
		return -1;
	}
	fxt_put_magic(magic);
	if (cap_writer_write(m, s, magic, sizeof(magic)) != 0) {
		snprintf(err, errlen, "%s", s->error);
		return -1;
	}
	return 0;
}

/* Records here were framed on arrival (on_data): their sizes hold. */
static size_t record_bytes(const uint8_t *p)
{
	return (size_t)fxt_record_bytes(p);
}

/* Writes records of provider ps to the trace, after its provider section
 * (and, the first time, its provider info). Provider info and section
 * records of the provider's own are left out: sections are the manager's. */
void cap_writer_records(struct captures *m, struct session *s, struct pstat *ps, const uint8_t *p, size_t n,
			  int durable)
{
	uint8_t meta[8 + 264];
	size_t off = 0, k;

	if (n == 0 || s->fd < 0)
		return;
	if (!ps->described) {
		k = fxt_put_provider_info(meta, (uint32_t)ps->provider, ps->name);
		if (cap_writer_write(m, s, meta, k) != 0)
			return;
		ps->described = 1;
	} else {
		k = fxt_put_provider_section(meta, (uint32_t)ps->provider);
		if (cap_writer_write(m, s, meta, k) != 0)
			return;
	}
	/* whole runs of records in one write: only a provider's own section
	 * records are left out between them */
	while (off < n) {
		size_t run = off;

		while (run < n && !fxt_record_is_section(p + run))
			run += record_bytes(p + run);
		if (run > off && cap_writer_write(m, s, p + off, run - off) != 0)
			return;
		off = run < n ? run + record_bytes(p + run) : run;
	}
	if (durable)
		ps->durable_bytes += n;
	else
		ps->rolling_bytes += n;
	cap_writer_grew(m, s);
}
