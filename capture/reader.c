/*
 * The providers (capture.h, reader.h): each connected provider has a
 * reader thread that reads its packets from the upgraded socket, a packet
 * and its payload whole without any lock, then takes the manager's lock to
 * act on it (the session's part, session.c). A packet that may add to the
 * trace (DATA, STOPPED; and the provider leaving) is taken with the
 * writer's lock first (writer.h), and its records are written with the
 * manager's lock let go. Packets to a provider are sent without blocking.
 * GetProviders and GetKnownCategories list the providers.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "capture_internal.h"
#include "reader.h"
#include "session.h"
#include "writer.h"

int cap_provider_send(struct provider *p, const struct fifo_packet *pk, const void *payload, size_t n)
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

void cap_provider_send_categories(struct provider *p, const char *cats)
{
	struct fifo_packet pk = { FIFO_DATA, 0, FIFO_DATA_CATEGORIES, strlen(cats) };

	cap_provider_send(p, &pk, cats, strlen(cats));
}

struct provider *cap_provider_find(struct captures *m, int64_t id)
{
	struct provider *p;

	for (p = m->providers; p; p = p->next)
		if (p->id == id)
			return p;
	return NULL;
}

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

/* One packet from provider p (with its payload read); -1 to disconnect. */
/* One packet from provider p (with its payload read), under the manager's
 * lock: what it adds to the trace goes into o, whose ps is p's entry in
 * the current session (NULL: none). 0, or -1 to disconnect. */
static int on_packet(struct captures *m, struct provider *p, const struct fifo_packet *pk,
		     const uint8_t raw[FIFO_PACKET_SIZE], const uint8_t *payload, struct cap_out *o)
{
	struct session *s = m->cur;
	struct pstat *ps = o->ps;
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
			cap_session_data(ps, payload, (size_t)pk->data64, pk->data32 == FIFO_DATA_DURABLE, o);
		if (ps && ps->failed)
			rc = -1;
		break;
	case FIFO_SAVE_BUFFER: {
		struct fifo_packet ack = { FIFO_BUFFER_SAVED, 0, pk->data32, pk->data64 };

		if (ps)
			ps->wrapped = pk->data32 > ps->wrapped ? pk->data32 : ps->wrapped;
		rc = cap_provider_send(p, &ack, NULL, 0);
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
				cap_session_flush(s, ps, o);
			o->grew = 1;
		}
		break;
	case FIFO_ALERT:
		if (s && fifo_alert_name(raw, name) == 0 && s->nalerts < CAP_MAX_ALERTS) {
			memcpy(s->alerts[(s->alert_head + s->nalerts) % CAP_MAX_ALERTS], name, sizeof(name));
			s->nalerts++;
		}
		break;
	}
	return rc;
}

/* Acts on one packet: takes the locks it needs, writes what it adds to the
 * trace. 0, or -1 to disconnect. */
static int reader_packet(struct captures *m, struct provider *p, const struct fifo_packet *pk,
			 const uint8_t raw[FIFO_PACKET_SIZE], const uint8_t *payload)
{
	int writes = pk->request == FIFO_DATA || pk->request == FIFO_STOPPED;
	struct cap_out o;
	int rc;

	if (writes)
		cap_writer_lock(&m->w);
	pthread_mutex_lock(&m->mu);
	cap_out_init(&o, cap_session_pstat(m->cur, p->id));
	rc = on_packet(m, p, pk, raw, payload, &o);
	if (writes)
		cap_session_put(m, m->cur, &o); /* the writer's lock keeps m->cur */
	cap_changed(m);
	pthread_mutex_unlock(&m->mu);
	if (writes)
		cap_writer_unlock(&m->w);
	return rc;
}

static void provider_free(struct provider *p)
{
	free(p->categories);
	free(p->extra);
	free(p);
}

/* Links p in and brings it into the current session, if any. */
static void reader_join(struct captures *m, struct provider *p)
{
	struct session *s;

	pthread_mutex_lock(&m->mu);
	p->next = m->providers;
	m->providers = p;
	m->nproviders++;
	/* not into a session that is ending: it lets the lock go while it
	 * writes, and would not send this provider TERMINATE */
	if ((s = m->cur) != NULL && s->state != CAP_TERMINATING) {
		struct pstat *ps = cap_session_join(s, p);

		/* a provider that arrives while the capture runs starts at once */
		if (ps && (s->state == CAP_STARTING || s->state == CAP_STARTED))
			cap_session_start_one(p, ps, FIFO_CLEAR_ENTIRE);
	}
	cap_changed(m);
	pthread_mutex_unlock(&m->mu);
}

/* Unlinks p, whose connection ended (why: the protocol error that ended
 * it, or ""): its part in the session is over, and what a circular buffer
 * held of it is written. */
static void reader_leave(struct captures *m, struct provider *p, const char *why)
{
	struct provider **pp;
	struct pstat *ps;
	struct cap_out o;

	cap_writer_lock(&m->w);
	pthread_mutex_lock(&m->mu);
	for (pp = &m->providers; *pp && *pp != p;)
		pp = &(*pp)->next;
	if (*pp)
		*pp = p->next;
	if ((ps = cap_session_pstat(m->cur, p->id)) != NULL) {
		ps->gone = 1;
		if (why[0] && !ps->failed) {
			ps->failed = 1;
			snprintf(ps->why, sizeof(ps->why), "%s", why);
		}
		cap_out_init(&o, ps);
		if (ps->mode == FIFO_MODE_CIRCULAR && ps->started && !ps->stopped)
			cap_session_flush(m->cur, ps, &o); /* what it sent is kept */
		o.grew = 1;
		cap_session_put(m, m->cur, &o);
	}
	cap_changed(m);
	pthread_mutex_unlock(&m->mu);
	cap_writer_unlock(&m->w);
}

static void *reader_main(void *arg)
{
	struct provider *p = arg;
	struct captures *m = (struct captures *)p->next; /* set by cap_provider_add before start */
	uint8_t raw[FIFO_PACKET_SIZE], *payload = NULL;
	size_t cap = 0;
	char why[160] = "";

	reader_join(m, p);
	for (;;) {
		struct fifo_packet pk;

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
		if (reader_packet(m, p, &pk, raw, payload) != 0)
			break;
	}
	free(payload);
	reader_leave(m, p, why);
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
