/*
 * Capture sessions (capture.h, session.h): InitializeTracing, StartTracing,
 * StopTracing and Terminate of the controller's protocol over the
 * providers connected, each provider's part in the session (its stats,
 * INITIALIZE, START, STOP, TERMINATE), the buffering mode applied to what
 * it sends, and the getters the API answers from.
 *
 * Everything here runs under the manager's lock, but for the writes: what
 * a provider's records add to the trace is decided under it (a struct
 * cap_out), written with it let go and the writer's lock held
 * (cap_session_put), and counted once it is taken again. Every function
 * that may write takes the writer's lock first (writer.h).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_internal.h"
#include "reader.h"
#include "session.h"
#include "writer.h"

void cap_out_init(struct cap_out *o, struct pstat *ps)
{
	memset(o, 0, sizeof(*o));
	o->ps = ps;
}

void cap_session_flush(struct session *s, struct pstat *ps, struct cap_out *o)
{
	if (s->write_results)
		cap_ring_take(&ps->ring, &o->ring);
	else
		cap_ring_clear(&ps->ring);
}

/* Writes o to the trace (the writer's lock held, the manager's not): a
 * circular provider's held records (durable first), then a frame's, then
 * the buffer-full record; each part counted in o once written whole. */
static void out_write(struct cap_writer *w, struct cap_out *o)
{
	const struct cap_ring *r = &o->ring;
	uint32_t id = o->ps ? (uint32_t)o->ps->provider : 0;
	const char *name = o->ps ? o->ps->name : ""; /* set at join, never changed */

	if (r->dlen && cap_writer_records(w, id, name, r->durable, r->dlen) == 0)
		o->durable_written += r->dlen;
	if (r->rlen > r->roff && cap_writer_records(w, id, name, r->ring + r->roff, r->rlen - r->roff) == 0)
		o->rolling_written += r->rlen - r->roff;
	if (o->n && cap_writer_records(w, id, name, o->p, o->n) == 0) {
		if (o->durable)
			o->durable_written += o->n;
		else
			o->rolling_written += o->n;
	}
	if (o->ps && o->buffer_full)
		cap_writer_buffer_full(w, id);
	if (o->grew)
		cap_writer_grew(w);
}

void cap_session_put(struct captures *m, struct session *s, struct cap_out *o)
{
	if (o->n == 0 && o->ring.dlen == 0 && o->ring.rlen == o->ring.roff && !o->buffer_full && !o->grew) {
		cap_ring_free(&o->ring); /* nothing to write (circular DATA, a refused frame): mu stays held */
		return;
	}
	pthread_mutex_unlock(&m->mu);
	out_write(&m->w, o);
	pthread_mutex_lock(&m->mu);
	if (o->ps) {
		o->ps->durable_bytes += o->durable_written;
		o->ps->rolling_bytes += o->rolling_written;
	}
	cap_ring_free(&o->ring);
	if (m->w.error[0] && s)
		snprintf(s->error, sizeof(s->error), "%s", m->w.error);
}

void cap_session_free(struct session *s)
{
	size_t i;

	for (i = 0; i < s->nps; i++)
		free(s->ps[i]);
	free(s->ps);
	free(s->cfg.specs);
	free(s->labels);
	free(s->name);
	free(s->description);
	free(s);
}

struct session *cap_session_find(struct captures *m, int64_t id)
{
	size_t i;

	if (m->cur && m->cur->id == id)
		return m->cur;
	for (i = 0; i < m->nended; i++)
		if (m->ended[i]->id == id)
			return m->ended[i];
	return NULL;
}

struct pstat *cap_session_pstat(struct session *s, int64_t provider)
{
	size_t i;

	for (i = 0; s && i < s->nps; i++)
		if (s->ps[i]->provider == provider)
			return s->ps[i];
	return NULL;
}

static void set_state(struct captures *m, struct session *s, int state)
{
	if (s->state != state) {
		s->state = state;
		s->version++;
		cap_changed(m);
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

/* Brings provider p into session s: its stats entry, INITIALIZE (under the
 * manager's lock). */
struct pstat *cap_session_join(struct session *s, struct provider *p)
{
	const struct cap_spec *sp = spec_of(s, p->name);
	struct pstat *ps = cap_session_pstat(s, p->id);
	uint32_t mb = sp && sp->buffer_size_megabytes_hint ? sp->buffer_size_megabytes_hint
							   : s->cfg.buffer_size_megabytes_hint;
	struct fifo_packet pk = { FIFO_INITIALIZE, 0, (uint32_t)s->cfg.buffering_mode, (uint64_t)mb << 20 };

	if (ps == NULL) {
		if (s->nps == s->cap_ps) {
			size_t c = s->cap_ps ? s->cap_ps * 2 : 8;
			struct pstat **v = realloc(s->ps, c * sizeof(*v));

			if (v == NULL)
				return NULL;
			s->ps = v;
			s->cap_ps = c;
		}
		/* each entry its own allocation: the array moves as it grows,
		 * an entry never does (see struct session) */
		if ((ps = calloc(1, sizeof(*ps))) == NULL)
			return NULL;
		s->ps[s->nps++] = ps;
		ps->provider = p->id;
		snprintf(ps->name, sizeof(ps->name), "%s", p->name);
		ps->pid = p->pid;
	}
	ps->mode = s->cfg.buffering_mode;
	ps->buffer_bytes = (uint64_t)mb << 20;
	cap_provider_send_categories(p, categories_for(s, p));
	cap_provider_send(p, &pk, NULL, 0);
	return ps;
}

void cap_session_start_one(struct provider *p, struct pstat *ps, int disposition)
{
	struct fifo_packet pk = { FIFO_START, 0, (uint32_t)disposition, 0 };

	ps->start_sent = 1;
	ps->started = 0;
	ps->stopped = 0;
	ps->full = 0;
	ps->run_base = ps->durable_bytes + ps->rolling_bytes; /* each run has a buffer's worth */
	if (disposition != FIFO_RETAIN)
		cap_ring_clear(&ps->ring);
	cap_provider_send(p, &pk, NULL, 0);
}

static char *dup0(const char *s)
{
	return s ? strdup(s) : NULL;
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
		cap_session_free(s);
		return CAP_EEXISTS;
	}
	pthread_mutex_unlock(&m->mu);
	if ((id = cap_next_id(m, err, errlen)) < 0) {
		cap_session_free(s);
		return id;
	}
	pthread_mutex_lock(&m->mu);
	if (m->cur) { /* another request made one meanwhile */
		pthread_mutex_unlock(&m->mu);
		snprintf(err, errlen, "another capture is in progress: terminate it first (one session at a time)");
		cap_session_free(s);
		return CAP_EEXISTS;
	}
	s->id = id;
	s->state = CAP_INITIALIZED;
	s->version = 1;
	m->cur = s;
	for (p = m->providers; p; p = p->next)
		cap_session_join(s, p);
	cap_changed(m);
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

/*
 * Makes s's live trace at its first start (both locks held; the manager's
 * is let go while the file is made). Nothing that needs the writer's lock
 * (another start, a terminate) can run meanwhile, and nothing else moves s
 * out of its state, so the caller's checks still hold after. 0, or -1
 * (err says why).
 */
static int open_trace(struct captures *m, struct session *s, char *err, size_t errlen)
{
	struct cat_new nw = { 0 };
	int64_t trace;
	int rc;

	nw.name = s->name; /* owned by s, which lives while the writer's lock is held */
	nw.description = s->description;
	nw.labels = s->labels;
	nw.nlabels = s->cfg.nlabels;
	nw.format_hint = "fxt";
	pthread_mutex_unlock(&m->mu);
	rc = cap_writer_open(&m->w, &nw, &trace, err, errlen);
	pthread_mutex_lock(&m->mu);
	if (trace > 0)
		s->trace = trace;
	if (m->w.error[0])
		snprintf(s->error, sizeof(s->error), "%s", m->w.error);
	return rc;
}

/* The session id names, if it is the current one (under the manager's
 * lock); else NULL with *rc CAP_ENOENT (no such capture) or CAP_ENOT_INIT
 * (it was terminated: err says so, in the words of ended). */
static struct session *current(struct captures *m, int64_t id, const char *ended, int *rc, char *err, size_t errlen)
{
	struct session *s = cap_session_find(m, id);

	*rc = CAP_OK;
	if (s == NULL) {
		*rc = CAP_ENOENT;
	} else if (s != m->cur) {
		*rc = CAP_ENOT_INIT;
		snprintf(err, errlen, "%s", ended);
		s = NULL;
	}
	return s;
}

int cap_start(struct captures *m, int64_t id, int disposition, const char *additional, char *err, size_t errlen)
{
	struct session *s;
	struct provider *p;
	int rc = CAP_OK;

	cap_writer_lock(&m->w);
	pthread_mutex_lock(&m->mu);
	if ((s = current(m, id, "the capture was terminated", &rc, err, errlen)) == NULL) {
		/* rc and err say why */
	} else if ((rc = start_error(s->state)) != CAP_OK) {
		snprintf(err, errlen, "the capture is %s", cap_state_name(s->state));
	} else if (s->trace == 0 && open_trace(m, s, err, errlen) != 0) {
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
			struct pstat *ps = cap_session_pstat(s, p->id);

			/* categories before START, no new INITIALIZE: that would
			 * make the provider drop the buffer a 'retain' keeps */
			if (ps == NULL)
				ps = cap_session_join(s, p);
			else if (resend)
				cap_provider_send_categories(p, categories_for(s, p));
			if (ps && !ps->gone && !ps->failed)
				cap_session_start_one(p, ps, disposition);
		}
		set_state(m, s, CAP_STARTING);
	}
	pthread_mutex_unlock(&m->mu);
	cap_writer_unlock(&m->w);
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

/* 1 when no provider of s still owes the answer want (under the manager's
 * lock). */
static int all_answered(struct captures *m, struct session *s, int stopping)
{
	size_t i;

	for (i = 0; i < s->nps; i++) {
		struct pstat *ps = s->ps[i];

		if (ps->gone || ps->failed || cap_provider_find(m, ps->provider) == NULL)
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
	s = cap_session_find(m, id);
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
	if ((s = cap_session_find(m, id)) != NULL && s->state == CAP_STARTING)
		set_state(m, s, CAP_STARTED);
	pthread_mutex_unlock(&m->mu);
}

int cap_stop(struct captures *m, int64_t id, int write_results, char *err, size_t errlen)
{
	struct session *s;
	struct provider *p;
	int rc = CAP_OK;

	pthread_mutex_lock(&m->mu);
	if ((s = current(m, id, "the capture was terminated", &rc, err, errlen)) == NULL) {
		/* rc and err say why */
	} else if (s->state != CAP_STARTING && s->state != CAP_STARTED) {
		rc = s->state == CAP_STOPPING ? CAP_OK : CAP_ENOT_STARTED;
		if (rc)
			snprintf(err, errlen, "the capture is %s, not started", cap_state_name(s->state));
	} else {
		struct fifo_packet pk = { FIFO_STOP, 0, 0, 0 };

		s->write_results = write_results;
		for (p = m->providers; p; p = p->next) {
			struct pstat *ps = cap_session_pstat(s, p->id);

			if (ps && owes_stopped(ps))
				cap_provider_send(p, &pk, NULL, 0);
		}
		set_state(m, s, CAP_STOPPING);
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* The stop is over (both locks held): what circular buffers hold is
 * written, even for providers that did not answer in time, and the state
 * moves on. The manager's lock is let go while each provider's records are
 * written (cap_session_put); providers that join meanwhile are appended to
 * s->ps, and looked at too. */
static void stop_complete(struct captures *m, struct session *s)
{
	struct cap_out o;
	size_t i;

	for (i = 0; i < s->nps; i++) {
		struct pstat *ps = s->ps[i];

		cap_out_init(&o, ps);
		if (ps->mode == FIFO_MODE_CIRCULAR)
			cap_session_flush(s, ps, &o);
		o.buffer_full = ps->dropped + ps->refused > 0;
		cap_session_put(m, s, &o);
	}
	cap_out_init(&o, NULL);
	o.grew = 1;
	cap_session_put(m, s, &o);
	set_state(m, s, CAP_STOPPED);
}

int cap_stop_done(struct captures *m, int64_t id)
{
	struct session *s;
	int rc;

	cap_writer_lock(&m->w);
	pthread_mutex_lock(&m->mu);
	s = cap_session_find(m, id);
	rc = s == NULL ? CAP_ENOENT : s->state != CAP_STOPPING || all_answered(m, s, 1);
	if (s && s->state == CAP_STOPPING && rc == 1)
		stop_complete(m, s);
	pthread_mutex_unlock(&m->mu);
	cap_writer_unlock(&m->w);
	return rc;
}

void cap_stop_finish(struct captures *m, int64_t id)
{
	struct session *s;

	cap_writer_lock(&m->w);
	pthread_mutex_lock(&m->mu);
	if ((s = cap_session_find(m, id)) != NULL && s->state == CAP_STOPPING)
		stop_complete(m, s);
	pthread_mutex_unlock(&m->mu);
	cap_writer_unlock(&m->w);
}

void cap_session_end(struct captures *m, struct session *s)
{
	struct fifo_packet pk = { FIFO_TERMINATE, 0, 0, 0 };
	struct provider *p;
	struct cap_out o;
	size_t i;

	set_state(m, s, CAP_TERMINATING);
	for (i = 0; i < s->nps; i++) {
		struct pstat *ps = s->ps[i];

		if (ps->mode == FIFO_MODE_CIRCULAR && ps->started && !ps->stopped) {
			cap_out_init(&o, ps);
			cap_session_flush(s, ps, &o);
			cap_session_put(m, s, &o);
		}
	}
	for (p = m->providers; p; p = p->next)
		if (cap_session_pstat(s, p->id))
			cap_provider_send(p, &pk, NULL, 0);
	pthread_mutex_unlock(&m->mu);
	cap_writer_close(&m->w, 1);
	pthread_mutex_lock(&m->mu);
	for (i = 0; i < s->nps; i++)
		cap_ring_free(&s->ps[i]->ring);
	set_state(m, s, CAP_READY);
	if (m->nended == CAP_MAX_ENDED)
		cap_session_free(m->ended[--m->nended]);
	memmove(m->ended + 1, m->ended, m->nended * sizeof(m->ended[0]));
	m->ended[0] = s;
	m->nended++;
	m->cur = NULL;
	cap_changed(m);
}

int cap_terminate(struct captures *m, int64_t id, char *err, size_t errlen)
{
	struct session *s;
	int rc = CAP_OK;

	cap_writer_lock(&m->w);
	pthread_mutex_lock(&m->mu);
	if ((s = current(m, id, "the capture was terminated already", &rc, err, errlen)) != NULL) {
		if (s->state == CAP_STARTING || s->state == CAP_STARTED || s->state == CAP_STOPPING) {
			struct fifo_packet pk = { FIFO_STOP, 0, 0, 0 };
			struct provider *p;

			for (p = m->providers; p; p = p->next)
				if (cap_session_pstat(s, p->id))
					cap_provider_send(p, &pk, NULL, 0);
			stop_complete(m, s);
		}
		cap_session_end(m, s);
	}
	pthread_mutex_unlock(&m->mu);
	cap_writer_unlock(&m->w);
	return rc;
}

/* ---- JSON (the renderers are json.c) --------------------------------------- */

int cap_json(struct captures *m, int64_t id, struct jbuf *out)
{
	struct session *s;

	pthread_mutex_lock(&m->mu);
	if ((s = cap_session_find(m, id)) != NULL)
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
	if ((s = cap_session_find(m, id)) != NULL) {
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
	if ((s = cap_session_find(m, id)) == NULL) {
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
	if ((s = cap_session_find(m, id)) != NULL) {
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
	if ((s = cap_session_find(m, id)) != NULL)
		t = s->cfg.start_timeout_milliseconds;
	pthread_mutex_unlock(&m->mu);
	return t;
}

void cap_session_data(struct pstat *ps, const uint8_t *p, size_t n, int durable, struct cap_out *o)
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
	}
	if (ps->mode != FIFO_MODE_CIRCULAR) { /* oneshot's first buffer's worth, or streaming's all */
		o->p = p;
		o->n = n;
		o->durable = durable;
	}
}
