/*
 * The trace manager (capture.h): sessions, providers and their reader
 * threads, and the capture's trace. The buffering modes it enforces on
 * what arrives are pure functions of their own (modes.c), and a capture's
 * JSON is rendered by json.c from the session record (capture_internal.h).
 *
 * One lock (mu) guards everything here; the trace file is written under
 * it, so records of different providers interleave a DATA frame at a time
 * and each frame lands after its provider section record. A provider's
 * reader thread reads a frame whole without the lock, then takes it to act.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "capture_internal.h"
#include "../ingest/util.h"

enum { MAX_ENDED = 16, TICK_MS = 100 };

struct provider {
	int64_t id;
	char name[CAP_MAX_NAME + 1];
	uint64_t pid;
	char *categories;
	int sock;
	void *handle;
	uint8_t *extra;                     /* bytes read before the upgrade */
	size_t extra_len, extra_off;
	pthread_t reader;
	struct provider *next;
};

struct waiter {
	void *conn;
	int64_t deadline;
	struct waiter *next;
};

struct captures {
	pthread_mutex_t mu;
	struct catalog *cat;
	struct cap_hooks h;
	struct provider *providers;
	size_t nproviders;
	int64_t next_provider;
	/* capture ids: ids_mu guards these two only, so that the file is
	 * written outside mu */
	pthread_mutex_t ids_mu;
	int64_t last_session;               /* the last id handed out, as in ids_path */
	char ids_path[4096];                /* <data>/capture-id: the last id, so that ids outlive a restart */
	struct session *cur;                /* the session not yet terminated, or NULL */
	struct session *ended[MAX_ENDED];   /* newest first */
	size_t nended;
	struct waiter *waiters;
	int stop;
	pthread_t ticker;
	pthread_cond_t tick;
};

int64_t cap_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

const char *cap_state_name(int state)
{
	static const char *const names[] = { "ready",   "initialized", "starting",   "started",
					     "stopping", "stopped",     "terminating" };

	return state >= CAP_READY && state <= CAP_TERMINATING ? names[state - CAP_READY] : "ready";
}

/* ---- waiting ---------------------------------------------------------------- */

/* Wakes every waiter (under mu): something changed. */
static void changed(struct captures *m)
{
	struct waiter *w = m->waiters, *next;

	m->waiters = NULL;
	for (; w; w = next) {
		next = w->next;
		m->h.resume(w->conn);
		free(w);
	}
}

int cap_wait(struct captures *m, void *conn, int64_t deadline_ms)
{
	struct waiter *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return -1;
	pthread_mutex_lock(&m->mu);
	if (m->stop) {
		pthread_mutex_unlock(&m->mu);
		free(w);
		return -1;
	}
	w->conn = conn;
	w->deadline = deadline_ms;
	w->next = m->waiters;
	m->waiters = w;
	m->h.suspend(conn);
	pthread_mutex_unlock(&m->mu);
	return 0;
}

/* Resumes the waiters whose deadline passed. */
static void *ticker_main(void *arg)
{
	struct captures *m = arg;

	pthread_mutex_lock(&m->mu);
	while (!m->stop) {
		struct waiter **pw = &m->waiters;
		int64_t now = cap_now_ms();

		while (*pw) {
			struct waiter *w = *pw;

			if (w->deadline <= now) {
				*pw = w->next;
				m->h.resume(w->conn);
				free(w);
			} else {
				pw = &w->next;
			}
		}
		cond_wait_ms(&m->tick, &m->mu, TICK_MS);
	}
	changed(m);
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

/* ---- the capture's trace ---------------------------------------------------- */

static int trace_write(struct captures *m, struct session *s, const void *p, size_t n)
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

static void trace_grew(struct captures *m, struct session *s)
{
	char err[256];

	if (s->fd >= 0 && cat_live_grew(m->cat, s->trace, s->size, err, sizeof(err)) != 0) {
		snprintf(s->error, sizeof(s->error), "the capture's trace was deleted or failed");
		close(s->fd);
		s->fd = -1;
	}
}

/* Makes the live trace at the first start (under mu). */
static int trace_open(struct captures *m, struct session *s, char *err, size_t errlen)
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
	if (trace_write(m, s, magic, sizeof(magic)) != 0) {
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
static void trace_records(struct captures *m, struct session *s, struct pstat *ps, const uint8_t *p, size_t n,
			  int durable)
{
	uint8_t meta[8 + 264];
	size_t off = 0, k;

	if (n == 0 || s->fd < 0)
		return;
	if (!ps->described) {
		k = fxt_put_provider_info(meta, (uint32_t)ps->provider, ps->name);
		if (trace_write(m, s, meta, k) != 0)
			return;
		ps->described = 1;
	} else {
		k = fxt_put_provider_section(meta, (uint32_t)ps->provider);
		if (trace_write(m, s, meta, k) != 0)
			return;
	}
	/* whole runs of records in one write: only a provider's own section
	 * records are left out between them */
	while (off < n) {
		size_t run = off;

		while (run < n && !fxt_record_is_section(p + run))
			run += record_bytes(p + run);
		if (run > off && trace_write(m, s, p + off, run - off) != 0)
			return;
		off = run < n ? run + record_bytes(p + run) : run;
	}
	if (durable)
		ps->durable_bytes += n;
	else
		ps->rolling_bytes += n;
	trace_grew(m, s);
}

/* ---- buffering modes at the manager (modes.c) ------------------------------ */

/* Writes what a circular provider's buffers hold (under mu). */
static void circular_flush(struct captures *m, struct session *s, struct pstat *ps)
{
	if (s->write_results) {
		trace_records(m, s, ps, ps->ring.durable, ps->ring.dlen, 1);
		trace_records(m, s, ps, ps->ring.ring + ps->ring.roff, ps->ring.rlen - ps->ring.roff, 0);
	}
	cap_ring_clear(&ps->ring);
}

/* ---- sessions ----------------------------------------------------------------- */

static void session_free(struct session *s)
{
	free(s->ps);
	free(s->cfg.specs);
	free(s->labels);
	free(s->name);
	free(s->description);
	free(s);
}

static struct session *find_session(struct captures *m, int64_t id)
{
	size_t i;

	if (m->cur && m->cur->id == id)
		return m->cur;
	for (i = 0; i < m->nended; i++)
		if (m->ended[i]->id == id)
			return m->ended[i];
	return NULL;
}

static struct pstat *find_pstat(struct session *s, int64_t provider)
{
	size_t i;

	for (i = 0; s && i < s->nps; i++)
		if (s->ps[i].provider == provider)
			return &s->ps[i];
	return NULL;
}

static void set_state(struct captures *m, struct session *s, int state)
{
	if (s->state != state) {
		s->state = state;
		s->version++;
		changed(m);
	}
}

static const struct cap_spec *spec_of(const struct session *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->cfg.nspecs; i++)
		if (strcmp(s->cfg.specs[i].name, name) == 0)
			return &s->cfg.specs[i];
	return NULL;
}

static int send_packet(struct provider *p, const struct fifo_packet *pk, const void *payload, size_t n)
{
	uint8_t raw[FIFO_PACKET_SIZE];

	fifo_encode(raw, pk);
	/* never blocks: a provider that does not read its packets is dropped */
	if (send(p->sock, raw, sizeof(raw), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(raw) ||
	    (n && send(p->sock, payload, n, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)n)) {
		shutdown(p->sock, SHUT_RDWR);
		return -1;
	}
	return 0;
}

static void send_categories(struct provider *p, const char *cats)
{
	struct fifo_packet pk = { FIFO_DATA, 0, FIFO_DATA_CATEGORIES, strlen(cats) };

	send_packet(p, &pk, cats, strlen(cats));
}

/* The categories provider p records: its spec's, else this start's. */
static const char *categories_for(const struct session *s, const struct provider *p)
{
	const struct cap_spec *sp = spec_of(s, p->name);

	return sp && sp->has_categories ? sp->categories : s->categories;
}

/* 1 when the comma-separated list has the name c[0..n). */
static int list_has(const char *list, const char *c, size_t n)
{
	while (*list) {
		size_t k = strcspn(list, ",");

		if (k == n && memcmp(list, c, n) == 0)
			return 1;
		list += k + (list[k] == ',');
	}
	return 0;
}

/* This start's categories (spec, StartOptions.additional_categories): the
 * config's with the additional ones added, each once; past
 * CAP_MAX_CATEGORIES in all the extra ones are discarded. */
static void start_categories(struct session *s, const char *additional)
{
	size_t len, count = 0;
	const char *c;

	snprintf(s->categories, sizeof(s->categories), "%s", s->cfg.categories);
	len = strlen(s->categories);
	for (c = s->categories; *c; c++)
		count += *c == ',';
	count += len > 0;
	for (c = additional ? additional : ""; *c && count < CAP_MAX_CATEGORIES;) {
		size_t n = strcspn(c, ",");

		if (n && !list_has(s->categories, c, n) && len + n + 2 <= sizeof(s->categories)) {
			if (len)
				s->categories[len++] = ',';
			memcpy(s->categories + len, c, n);
			len += n;
			s->categories[len] = '\0';
			count++;
		}
		c += n + (c[n] == ',');
	}
}

/* Brings provider p into session s: its stats entry, INITIALIZE (under mu). */
static struct pstat *join(struct session *s, struct provider *p)
{
	const struct cap_spec *sp = spec_of(s, p->name);
	struct pstat *ps = find_pstat(s, p->id);
	uint32_t mb = sp && sp->buffer_size_megabytes_hint ? sp->buffer_size_megabytes_hint
							   : s->cfg.buffer_size_megabytes_hint;
	struct fifo_packet pk = { FIFO_INITIALIZE, 0, (uint32_t)s->cfg.buffering_mode, (uint64_t)mb << 20 };

	if (ps == NULL) {
		if (s->nps == s->cap_ps) {
			size_t c = s->cap_ps ? s->cap_ps * 2 : 8;
			struct pstat *v = realloc(s->ps, c * sizeof(*v));

			if (v == NULL)
				return NULL;
			s->ps = v;
			s->cap_ps = c;
		}
		ps = &s->ps[s->nps++];
		memset(ps, 0, sizeof(*ps));
		ps->provider = p->id;
		snprintf(ps->name, sizeof(ps->name), "%s", p->name);
		ps->pid = p->pid;
	}
	ps->mode = s->cfg.buffering_mode;
	ps->buffer_bytes = (uint64_t)mb << 20;
	send_categories(p, categories_for(s, p));
	send_packet(p, &pk, NULL, 0);
	return ps;
}

static void start_one(struct provider *p, struct pstat *ps, int disposition)
{
	struct fifo_packet pk = { FIFO_START, 0, (uint32_t)disposition, 0 };

	ps->start_sent = 1;
	ps->started = 0;
	ps->stopped = 0;
	ps->full = 0;
	ps->run_base = ps->durable_bytes + ps->rolling_bytes; /* each run has a buffer's worth */
	if (disposition != FIFO_RETAIN)
		cap_ring_clear(&ps->ring);
	send_packet(p, &pk, NULL, 0);
}

static struct provider *find_provider(struct captures *m, int64_t id)
{
	struct provider *p;

	for (p = m->providers; p; p = p->next)
		if (p->id == id)
			return p;
	return NULL;
}

static char *dup0(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* ---- capture ids ---------------------------------------------------------------- */

/* The last capture id handed out before this server started: the number
 * in path, or 0 when there is none (a new data directory). */
static int64_t ids_load(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v = 0;

	if (f == NULL)
		return 0;
	if (fscanf(f, "%lld", &v) != 1 || v < 0)
		v = 0;
	fclose(f);
	return (int64_t)v;
}

/* Writes id into path through a file renamed over it (never half
 * written). 0, or -1 with errno set. */
static int ids_save(const char *path, int64_t id)
{
	char tmp[4200];
	FILE *f;
	int ok;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL)
		return -1;
	ok = fprintf(f, "%" PRId64 "\n", id) > 0;
	ok = fflush(f) == 0 && fsync(fileno(f)) == 0 && ok;
	ok = fclose(f) == 0 && ok;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/*
 * A capture id never given out before, by this server or an earlier one
 * on the same data directory: the id is on disk before anyone sees it.
 * Returns it, or CAP_ESTORAGE (err says why). An id taken by a request
 * that then fails is not given out again: ids increase, with gaps.
 */
static int64_t next_id(struct captures *m, char *err, size_t errlen)
{
	int64_t id;

	pthread_mutex_lock(&m->ids_mu);
	id = m->last_session + 1;
	if (ids_save(m->ids_path, id) != 0) {
		pthread_mutex_unlock(&m->ids_mu);
		snprintf(err, errlen, "cannot record the capture id in %s: %s", m->ids_path, strerror(errno));
		return CAP_ESTORAGE;
	}
	m->last_session = id;
	pthread_mutex_unlock(&m->ids_mu);
	return id;
}

int64_t cap_initialize(struct captures *m, const struct cap_config *cfg, char *err, size_t errlen)
{
	struct session *s = calloc(1, sizeof(*s));
	struct provider *p;
	int64_t id;

	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return CAP_ESTORAGE;
	}
	s->cfg = *cfg;
	s->fd = -1;
	s->write_results = 1;
	s->name = strdup(cfg->name && cfg->name[0] ? cfg->name : "capture");
	s->description = dup0(cfg->description);
	snprintf(s->categories, sizeof(s->categories), "%s", cfg->categories);
	if (cfg->nspecs && (s->cfg.specs = calloc(cfg->nspecs, sizeof(*cfg->specs))) != NULL)
		memcpy(s->cfg.specs, cfg->specs, cfg->nspecs * sizeof(*cfg->specs));
	if (cfg->nlabels && (s->labels = calloc(cfg->nlabels, sizeof(*cfg->labels))) != NULL)
		memcpy(s->labels, cfg->labels, cfg->nlabels * sizeof(*cfg->labels));
	s->cfg.labels = s->labels;
	s->cfg.name = s->name;
	s->cfg.description = s->description;
	pthread_mutex_lock(&m->mu);
	if (m->cur) {
		pthread_mutex_unlock(&m->mu);
		snprintf(err, errlen, "capture %" PRId64 " is in progress: terminate it first (one session at a time)",
			 m->cur->id);
		session_free(s);
		return CAP_EEXISTS;
	}
	pthread_mutex_unlock(&m->mu);
	if ((id = next_id(m, err, errlen)) < 0) {
		session_free(s);
		return id;
	}
	pthread_mutex_lock(&m->mu);
	if (m->cur) { /* another request made one meanwhile */
		pthread_mutex_unlock(&m->mu);
		snprintf(err, errlen, "another capture is in progress: terminate it first (one session at a time)");
		session_free(s);
		return CAP_EEXISTS;
	}
	s->id = id;
	s->state = CAP_INITIALIZED;
	s->version = 1;
	m->cur = s;
	for (p = m->providers; p; p = p->next)
		join(s, p);
	changed(m);
	pthread_mutex_unlock(&m->mu);
	return id;
}

static int start_error(int state)
{
	switch (state) {
	case CAP_STARTING:
	case CAP_STARTED:
		return CAP_EALREADY;
	case CAP_STOPPING:
		return CAP_ESTOPPING;
	case CAP_TERMINATING:
		return CAP_ETERMINATING;
	default:
		return CAP_OK;
	}
}

int cap_start(struct captures *m, int64_t id, int disposition, const char *additional, char *err, size_t errlen)
{
	struct session *s;
	struct provider *p;
	int rc = CAP_OK;

	pthread_mutex_lock(&m->mu);
	s = find_session(m, id);
	if (s == NULL) {
		rc = CAP_ENOENT;
	} else if (s != m->cur) {
		rc = CAP_ENOT_INIT;
		snprintf(err, errlen, "the capture was terminated");
	} else if ((rc = start_error(s->state)) != CAP_OK) {
		snprintf(err, errlen, "the capture is %s", cap_state_name(s->state));
	} else if (trace_open(m, s, err, errlen) != 0) {
		rc = CAP_ESTORAGE;
	} else {
		/* the categories go again when this start's differ from the last's */
		int resend = (additional && additional[0]) || s->extended;

		/* spec (StartOptions.buffer_disposition): after a Stop that wrote
		 * the results, the buffers are cleared whatever is asked, so that
		 * no data is saved twice */
		if (s->state == CAP_STOPPED && s->write_results)
			disposition = FIFO_CLEAR_ENTIRE;
		start_categories(s, additional);
		s->extended = additional && additional[0];
		for (p = m->providers; p; p = p->next) {
			struct pstat *ps = find_pstat(s, p->id);

			/* categories before START, no new INITIALIZE: that would
			 * make the provider drop the buffer a 'retain' keeps */
			if (ps == NULL)
				ps = join(s, p);
			else if (resend)
				send_categories(p, categories_for(s, p));
			if (ps && !ps->gone && !ps->failed)
				start_one(p, ps, disposition);
		}
		set_state(m, s, CAP_STARTING);
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* 1 when provider ps of a stopping session still owes STOPPED: it was
 * started, even if its STARTED is not read yet (it may be in the socket
 * with everything the provider sent after it, as when a program ends
 * right after it started). */
static int owes_stopped(const struct pstat *ps)
{
	return (ps->started || ps->start_sent) && !ps->stopped;
}

/* 1 when no provider of s still owes the answer want (under mu). */
static int all_answered(struct captures *m, struct session *s, int stopping)
{
	size_t i;

	for (i = 0; i < s->nps; i++) {
		struct pstat *ps = &s->ps[i];

		if (ps->gone || ps->failed || find_provider(m, ps->provider) == NULL)
			continue;
		if (stopping ? owes_stopped(ps) : !ps->started)
			return 0;
	}
	return 1;
}

int cap_start_done(struct captures *m, int64_t id)
{
	struct session *s;
	int rc;

	pthread_mutex_lock(&m->mu);
	s = find_session(m, id);
	rc = s == NULL ? CAP_ENOENT : s->state != CAP_STARTING || all_answered(m, s, 0);
	if (s && s->state == CAP_STARTING && rc == 1)
		set_state(m, s, CAP_STARTED);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void cap_start_finish(struct captures *m, int64_t id)
{
	struct session *s;

	pthread_mutex_lock(&m->mu);
	if ((s = find_session(m, id)) != NULL && s->state == CAP_STARTING)
		set_state(m, s, CAP_STARTED);
	pthread_mutex_unlock(&m->mu);
}

int cap_stop(struct captures *m, int64_t id, int write_results, char *err, size_t errlen)
{
	struct session *s;
	struct provider *p;
	int rc = CAP_OK;

	pthread_mutex_lock(&m->mu);
	s = find_session(m, id);
	if (s == NULL) {
		rc = CAP_ENOENT;
	} else if (s != m->cur) {
		rc = CAP_ENOT_INIT;
		snprintf(err, errlen, "the capture was terminated");
	} else if (s->state != CAP_STARTING && s->state != CAP_STARTED) {
		rc = s->state == CAP_STOPPING ? CAP_OK : CAP_ENOT_STARTED;
		if (rc)
			snprintf(err, errlen, "the capture is %s, not started", cap_state_name(s->state));
	} else {
		struct fifo_packet pk = { FIFO_STOP, 0, 0, 0 };

		s->write_results = write_results;
		for (p = m->providers; p; p = p->next) {
			struct pstat *ps = find_pstat(s, p->id);

			if (ps && owes_stopped(ps))
				send_packet(p, &pk, NULL, 0);
		}
		set_state(m, s, CAP_STOPPING);
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* The stop is over (under mu): what circular buffers hold is written, even
 * for providers that did not answer in time, and the state moves on. */
static void stop_complete(struct captures *m, struct session *s)
{
	size_t i;

	for (i = 0; i < s->nps; i++) {
		struct pstat *ps = &s->ps[i];

		if (ps->mode == FIFO_MODE_CIRCULAR)
			circular_flush(m, s, ps);
		if (ps->dropped + ps->refused > 0 && ps->described && s->fd >= 0) {
			uint8_t rec[8];

			fxt_put_buffer_full(rec, (uint32_t)ps->provider);
			trace_write(m, s, rec, sizeof(rec));
		}
	}
	trace_grew(m, s);
	set_state(m, s, CAP_STOPPED);
}

int cap_stop_done(struct captures *m, int64_t id)
{
	struct session *s;
	int rc;

	pthread_mutex_lock(&m->mu);
	s = find_session(m, id);
	rc = s == NULL ? CAP_ENOENT : s->state != CAP_STOPPING || all_answered(m, s, 1);
	if (s && s->state == CAP_STOPPING && rc == 1)
		stop_complete(m, s);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

void cap_stop_finish(struct captures *m, int64_t id)
{
	struct session *s;

	pthread_mutex_lock(&m->mu);
	if ((s = find_session(m, id)) != NULL && s->state == CAP_STOPPING)
		stop_complete(m, s);
	pthread_mutex_unlock(&m->mu);
}

/* Ends session s (under mu): providers told, the trace complete. */
static void end_session(struct captures *m, struct session *s)
{
	struct fifo_packet pk = { FIFO_TERMINATE, 0, 0, 0 };
	struct provider *p;
	size_t i;

	set_state(m, s, CAP_TERMINATING);
	for (i = 0; i < s->nps; i++)
		if (s->ps[i].mode == FIFO_MODE_CIRCULAR && s->ps[i].started && !s->ps[i].stopped)
			circular_flush(m, s, &s->ps[i]);
	for (p = m->providers; p; p = p->next)
		if (find_pstat(s, p->id))
			send_packet(p, &pk, NULL, 0);
	if (s->fd >= 0) {
		trace_grew(m, s);
		close(s->fd);
		s->fd = -1;
		cat_live_close(m->cat, s->trace, 1);
	}
	for (i = 0; i < s->nps; i++)
		cap_ring_free(&s->ps[i].ring);
	set_state(m, s, CAP_READY);
	if (m->nended == MAX_ENDED)
		session_free(m->ended[--m->nended]);
	memmove(m->ended + 1, m->ended, m->nended * sizeof(m->ended[0]));
	m->ended[0] = s;
	m->nended++;
	m->cur = NULL;
	changed(m);
}

int cap_terminate(struct captures *m, int64_t id, char *err, size_t errlen)
{
	struct session *s;
	int rc = CAP_OK;

	pthread_mutex_lock(&m->mu);
	s = find_session(m, id);
	if (s == NULL) {
		rc = CAP_ENOENT;
	} else if (s != m->cur) {
		rc = CAP_ENOT_INIT;
		snprintf(err, errlen, "the capture was terminated already");
	} else {
		if (s->state == CAP_STARTING || s->state == CAP_STARTED || s->state == CAP_STOPPING) {
			struct fifo_packet pk = { FIFO_STOP, 0, 0, 0 };
			struct provider *p;

			for (p = m->providers; p; p = p->next)
				if (find_pstat(s, p->id))
					send_packet(p, &pk, NULL, 0);
			stop_complete(m, s);
		}
		end_session(m, s);
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* ---- JSON (the renderers are json.c) --------------------------------------- */

int cap_json(struct captures *m, int64_t id, struct jbuf *out)
{
	struct session *s;

	pthread_mutex_lock(&m->mu);
	if ((s = find_session(m, id)) != NULL)
		cap_session_json(s, out);
	pthread_mutex_unlock(&m->mu);
	return s ? CAP_OK : CAP_ENOENT;
}

void cap_list_json(struct captures *m, struct jbuf *out)
{
	size_t i;

	pthread_mutex_lock(&m->mu);
	jb_obj(out);
	jb_key(out, "captures");
	jb_arr(out);
	if (m->cur)
		cap_session_json(m->cur, out);
	for (i = 0; i < m->nended; i++)
		cap_session_json(m->ended[i], out);
	jb_arr_end(out);
	jb_obj_end(out);
	pthread_mutex_unlock(&m->mu);
}

int cap_stats_json(struct captures *m, int64_t id, struct jbuf *out)
{
	struct session *s;

	pthread_mutex_lock(&m->mu);
	if ((s = find_session(m, id)) != NULL) {
		jb_obj(out);
		cap_stats_json_of(s, out);
		jb_key(out, "trace_id");
		if (s->trace > 0)
			jb_i64(out, s->trace);
		else
			jb_null(out);
		jb_obj_end(out);
	}
	pthread_mutex_unlock(&m->mu);
	return s ? CAP_OK : CAP_ENOENT;
}

int cap_alert_take(struct captures *m, int64_t id, char name[FIFO_ALERT_MAX + 1])
{
	struct session *s;
	int rc = 0;

	pthread_mutex_lock(&m->mu);
	if ((s = find_session(m, id)) == NULL) {
		rc = CAP_ENOENT;
	} else if (s->nalerts) {
		memcpy(name, s->alerts[s->alert_head], FIFO_ALERT_MAX + 1);
		s->alert_head = (s->alert_head + 1) % CAP_MAX_ALERTS;
		s->nalerts--;
		rc = 1;
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

int cap_state(struct captures *m, int64_t id, int *state, uint64_t *version)
{
	struct session *s;

	pthread_mutex_lock(&m->mu);
	if ((s = find_session(m, id)) != NULL) {
		*state = s->state;
		*version = s->version;
	}
	pthread_mutex_unlock(&m->mu);
	return s ? CAP_OK : CAP_ENOENT;
}

uint64_t cap_start_timeout(struct captures *m, int64_t id)
{
	struct session *s;
	uint64_t t = 0;

	pthread_mutex_lock(&m->mu);
	if ((s = find_session(m, id)) != NULL)
		t = s->cfg.start_timeout_milliseconds;
	pthread_mutex_unlock(&m->mu);
	return t;
}

/* ---- providers ------------------------------------------------------------------ */

/* Reads exactly n bytes from the provider (bytes read before the upgrade
 * first); 0, or -1 when the connection ended. */
static int read_full(struct provider *p, void *buf, size_t n)
{
	uint8_t *b = buf;

	while (n > 0 && p->extra_off < p->extra_len) {
		*b++ = p->extra[p->extra_off++];
		n--;
	}
	while (n > 0) {
		ssize_t k = recv(p->sock, b, n, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* A DATA frame's records, by the session's buffering mode (under mu). */
static void on_data(struct captures *m, struct session *s, struct pstat *ps, const uint8_t *p, size_t n,
		    int durable)
{
	uint64_t records;
	size_t good;

	if (fxt_framing(p, n, &records, &good) != 0) {
		ps->failed = 1;
		n = good; /* what came before stays */
	}
	if (ps->mode == FIFO_MODE_CIRCULAR) {
		ps->refused += cap_ring_add(&ps->ring, ps->buffer_bytes, p, n);
	} else if (ps->mode == FIFO_MODE_ONESHOT) {
		uint64_t have = ps->durable_bytes + ps->rolling_bytes - ps->run_base; /* this run's */

		n = cap_oneshot_take(have, ps->buffer_bytes, &ps->full, &ps->refused, p, n);
		trace_records(m, s, ps, p, n, durable);
	} else {
		trace_records(m, s, ps, p, n, durable);
	}
}

/* One packet from provider p (with its payload read); -1 to disconnect. */
static int on_packet(struct captures *m, struct provider *p, const struct fifo_packet *pk,
		     const uint8_t raw[FIFO_PACKET_SIZE], const uint8_t *payload)
{
	struct session *s = m->cur;
	struct pstat *ps = find_pstat(s, p->id);
	char name[FIFO_ALERT_MAX + 1];
	int rc = 0;

	switch (pk->request) {
	case FIFO_STARTED:
		if (pk->data32 != FIFO_PROTOCOL_VERSION) {
			/* a protocol we do not understand: ignore all its data */
			if (ps) {
				ps->failed = 1;
				snprintf(ps->why, sizeof(ps->why),
					 "the provider speaks FIFO protocol version %" PRIu32
					 ", this server version %d: its data was refused",
					 pk->data32, FIFO_PROTOCOL_VERSION);
			}
			return -1;
		}
		/* while stopping too: a START answered late, the STOP behind it */
		if (ps && (s->state == CAP_STARTING || s->state == CAP_STARTED ||
			   (s->state == CAP_STOPPING && ps->start_sent)))
			ps->started = 1;
		break;
	case FIFO_DATA:
		if (ps && ps->started && !ps->failed && s->trace > 0)
			on_data(m, s, ps, payload, (size_t)pk->data64, pk->data32 == FIFO_DATA_DURABLE);
		if (ps && ps->failed)
			rc = -1;
		break;
	case FIFO_SAVE_BUFFER: {
		struct fifo_packet ack = { FIFO_BUFFER_SAVED, 0, pk->data32, pk->data64 };

		if (ps)
			ps->wrapped = pk->data32 > ps->wrapped ? pk->data32 : ps->wrapped;
		rc = send_packet(p, &ack, NULL, 0);
		break;
	}
	case FIFO_OVERWRITTEN:
		if (ps)
			ps->overwritten = pk->data64;
		break;
	case FIFO_STATS:
		if (ps) {
			ps->wrapped = pk->data32;
			ps->dropped = pk->data64;
		}
		break;
	case FIFO_STOPPED:
		if (ps) {
			ps->stopped = 1;
			if (ps->mode == FIFO_MODE_CIRCULAR)
				circular_flush(m, s, ps);
			trace_grew(m, s);
		}
		break;
	case FIFO_ALERT:
		if (s && fifo_alert_name(raw, name) == 0 && s->nalerts < CAP_MAX_ALERTS) {
			memcpy(s->alerts[(s->alert_head + s->nalerts) % CAP_MAX_ALERTS], name, sizeof(name));
			s->nalerts++;
		}
		break;
	}
	changed(m);
	return rc;
}

static void provider_free(struct provider *p)
{
	free(p->categories);
	free(p->extra);
	free(p);
}

static void *reader_main(void *arg)
{
	struct provider *p = arg;
	struct captures *m = (struct captures *)p->next; /* set by cap_provider_add before start */
	uint8_t raw[FIFO_PACKET_SIZE], *payload = NULL;
	size_t cap = 0;
	char why[160] = "";

	pthread_mutex_lock(&m->mu);
	p->next = m->providers;
	m->providers = p;
	m->nproviders++;
	if (m->cur) {
		struct pstat *ps = join(m->cur, p);

		/* a provider that arrives while the capture runs starts at once */
		if (ps && (m->cur->state == CAP_STARTING || m->cur->state == CAP_STARTED))
			start_one(p, ps, FIFO_CLEAR_ENTIRE);
	}
	changed(m);
	pthread_mutex_unlock(&m->mu);
	for (;;) {
		struct fifo_packet pk;
		int rc;

		if (read_full(p, raw, sizeof(raw)) != 0)
			break;
		fifo_decode(raw, &pk);
		if (!fifo_provider_packet_ok(&pk, raw)) {
			/* PROVIDER-PROTOCOL: the connection is closed; say why */
			snprintf(why, sizeof(why),
				 "the provider sent a packet this protocol does not define (request 0x%04x, reserved "
				 "0x%04x, data32 %" PRIu32 ", data64 %" PRIu64 "): disconnected",
				 pk.request, pk.reserved, pk.data32, pk.data64);
			break;
		}
		if (pk.request == FIFO_DATA && pk.data64 > 0) {
			if (pk.data64 > cap) {
				uint8_t *q = realloc(payload, (size_t)pk.data64);

				if (q == NULL)
					break;
				payload = q;
				cap = (size_t)pk.data64;
			}
			if (read_full(p, payload, (size_t)pk.data64) != 0)
				break;
		}
		pthread_mutex_lock(&m->mu);
		rc = on_packet(m, p, &pk, raw, payload);
		pthread_mutex_unlock(&m->mu);
		if (rc != 0)
			break;
	}
	free(payload);
	pthread_mutex_lock(&m->mu);
	{
		struct provider **pp = &m->providers;
		struct pstat *ps = find_pstat(m->cur, p->id);

		while (*pp && *pp != p)
			pp = &(*pp)->next;
		if (*pp)
			*pp = p->next;
		if (ps) {
			ps->gone = 1;
			if (why[0] && !ps->failed) {
				ps->failed = 1;
				snprintf(ps->why, sizeof(ps->why), "%s", why);
			}
			if (ps->mode == FIFO_MODE_CIRCULAR && ps->started && !ps->stopped)
				circular_flush(m, m->cur, ps); /* what it sent is kept */
			trace_grew(m, m->cur);
		}
		changed(m);
	}
	pthread_mutex_unlock(&m->mu);
	m->h.close(p->handle);
	pthread_detach(pthread_self());
	pthread_mutex_lock(&m->mu);
	m->nproviders--; /* last: cap_close waits for this, then m is gone */
	pthread_mutex_unlock(&m->mu);
	provider_free(p);
	return NULL;
}

int64_t cap_provider_add(struct captures *m, const char *name, uint64_t pid, const char *categories, int sock,
			 void *handle, const void *extra, size_t extra_len)
{
	struct provider *p = calloc(1, sizeof(*p));
	int64_t id;

	if (p == NULL)
		return -1;
	pthread_mutex_lock(&m->mu);
	if (m->stop || m->nproviders >= CAP_MAX_PROVIDERS) {
		pthread_mutex_unlock(&m->mu);
		free(p);
		return -1;
	}
	id = p->id = ++m->next_provider;
	pthread_mutex_unlock(&m->mu);
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->pid = pid;
	p->categories = strdup(categories ? categories : "");
	p->sock = sock;
	p->handle = handle;
	if (extra_len && (p->extra = malloc(extra_len)) != NULL) {
		memcpy(p->extra, extra, extra_len);
		p->extra_len = extra_len;
	}
	p->next = (struct provider *)m; /* handed to the reader, which links p in */
	if (pthread_create(&p->reader, NULL, reader_main, p) != 0) {
		provider_free(p);
		return -1;
	}
	return id;
}

size_t cap_provider_count(struct captures *m)
{
	size_t n;

	pthread_mutex_lock(&m->mu);
	n = m->nproviders;
	pthread_mutex_unlock(&m->mu);
	return n;
}

void cap_providers_json(struct captures *m, struct jbuf *out)
{
	struct provider *p;

	pthread_mutex_lock(&m->mu);
	jb_obj(out);
	jb_key(out, "providers");
	jb_arr(out);
	for (p = m->providers; p; p = p->next) {
		jb_obj(out);
		jb_key(out, "id");
		jb_i64(out, p->id);
		jb_key(out, "name");
		jb_str(out, p->name);
		jb_key(out, "pid");
		jb_u64(out, p->pid);
		jb_key(out, "categories");
		jb_str(out, p->categories);
		jb_obj_end(out);
	}
	jb_arr_end(out);
	jb_obj_end(out);
	pthread_mutex_unlock(&m->mu);
}

void cap_categories_json(struct captures *m, struct jbuf *out)
{
	struct provider *p, *q;

	pthread_mutex_lock(&m->mu);
	jb_obj(out);
	jb_key(out, "categories");
	jb_arr(out);
	/* each category once, in the order providers announced them */
	for (p = m->providers; p; p = p->next) {
		const char *c = p->categories;

		while (*c) {
			size_t n = strcspn(c, ","), seen = 0;

			for (q = m->providers; q != p && !seen; q = q->next) {
				const char *d = q->categories;

				while (*d && !seen) {
					size_t k = strcspn(d, ",");

					seen = k == n && memcmp(c, d, n) == 0;
					d += k + (d[k] == ',');
				}
			}
			if (n && !seen) {
				char name[256];

				snprintf(name, sizeof(name), "%.*s", (int)(n < 255 ? n : 255), c);
				jb_obj(out);
				jb_key(out, "name");
				jb_str(out, name);
				jb_key(out, "description");
				jb_str(out, "");
				jb_obj_end(out);
			}
			c += n + (c[n] == ',');
		}
	}
	jb_arr_end(out);
	jb_obj_end(out);
	pthread_mutex_unlock(&m->mu);
}

/* ---- the manager ------------------------------------------------------------------ */

struct captures *cap_open(struct catalog *cat, const char *dir, const struct cap_hooks *h, char *err, size_t errlen)
{
	struct captures *m = calloc(1, sizeof(*m));

	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((size_t)snprintf(m->ids_path, sizeof(m->ids_path), "%s/capture-id", dir) >= sizeof(m->ids_path)) {
		snprintf(err, errlen, "the data directory's path is too long");
		free(m);
		return NULL;
	}
	m->last_session = ids_load(m->ids_path);
	pthread_mutex_init(&m->mu, NULL);
	pthread_mutex_init(&m->ids_mu, NULL);
	pthread_cond_init(&m->tick, NULL);
	m->cat = cat;
	m->h = *h;
	if (pthread_create(&m->ticker, NULL, ticker_main, m) != 0) {
		snprintf(err, errlen, "cannot start the capture manager's thread");
		free(m);
		return NULL;
	}
	return m;
}

void cap_close(struct captures *m)
{
	struct provider *p;
	size_t i;

	if (m == NULL)
		return;
	pthread_mutex_lock(&m->mu);
	m->stop = 1;
	if (m->cur)
		end_session(m, m->cur);
	for (p = m->providers; p; p = p->next)
		shutdown(p->sock, SHUT_RDWR);
	pthread_cond_broadcast(&m->tick);
	pthread_mutex_unlock(&m->mu);
	pthread_join(m->ticker, NULL);
	/* the readers end as their sockets do */
	for (i = 0; i < 500 && cap_provider_count(m) > 0; i++)
		usleep(10000);
}

void cap_free(struct captures *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->nended; i++)
		session_free(m->ended[i]);
	pthread_cond_destroy(&m->tick);
	pthread_mutex_destroy(&m->ids_mu);
	pthread_mutex_destroy(&m->mu);
	free(m);
}
