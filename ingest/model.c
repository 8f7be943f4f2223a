/*
 * The in-memory trace model: the string pool and the thread, event and
 * provider tables that decoders fill (model.h).
 *
 * Everything is stored in a few large arrays so that memory stays
 * proportional to the events and no event costs an allocation of its own.
 * Allocation failures set the sticky m->oom flag; decoders check it once per
 * record.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* The sched table's order: by cpu, then time, then file order. */
static int sched_cmp(const void *a, const void *b)
{
	const struct mdl_sched *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int model_init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	vec_init(&m->soff, sizeof(uint64_t));
	vec_init(&m->threads, sizeof(struct mdl_thread));
	kmap_init(&m->thread_map);
	vec_init(&m->events, sizeof(struct mdl_ev));
	vec_init(&m->ends, sizeof(int64_t));
	vec_init(&m->args, sizeof(struct mdl_arg));
	vec_init(&m->bytes, 1);
	rs_init(&m->sched, sizeof(struct mdl_sched), sched_cmp);
	vec_init(&m->sched_grown, sizeof(struct mdl_sched));
	vec_init(&m->logs, sizeof(struct mdl_log));
	vec_init(&m->kobjs, sizeof(struct mdl_kobj));
	vec_init(&m->uobjs, sizeof(struct mdl_uobj));
	vec_init(&m->blobs, sizeof(struct mdl_blob));
	vec_init(&m->profs, sizeof(struct mdl_prof));
	vec_init(&m->providers, sizeof(struct mdl_provider *));
	m->format = "fxt";
	/* the byte arena is never NULL, so an empty blob points somewhere */
	if (vec_reserve(&m->bytes, 64) != 0)
		return -1;
	return model_intern(m, "", 0) == 0 ? 0 : -1;
}

static void provider_clear(struct mdl_provider *p)
{
	size_t i;

	for (i = 0; i < sizeof(p->strings) / sizeof(p->strings[0]); i++) {
		free(p->strings[i]);
		p->strings[i] = NULL;
	}
	memset(p->threads, 0, sizeof(p->threads));
}

void model_fini(struct model *m)
{
	size_t i;

	for (i = 0; i < m->providers.len; i++) {
		struct mdl_provider *p = *VEC_AT(&m->providers, struct mdl_provider *, i);

		provider_clear(p);
		free(p);
	}
	free(m->sdata);
	free(m->shash);
	vec_fini(&m->soff);
	vec_fini(&m->threads);
	kmap_fini(&m->thread_map);
	vec_fini(&m->events);
	vec_fini(&m->ends);
	vec_fini(&m->args);
	vec_fini(&m->bytes);
	rs_fini(&m->sched);
	vec_fini(&m->sched_grown);
	vec_fini(&m->logs);
	vec_fini(&m->kobjs);
	vec_fini(&m->uobjs);
	vec_fini(&m->blobs);
	vec_fini(&m->profs);
	vec_fini(&m->providers);
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = UINT64_C(1469598103934665603);
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * UINT64_C(1099511628211);
	return h ^ (h >> 31);
}

const char *model_str(const struct model *m, uint32_t id)
{
	if (id >= m->soff.len)
		return "";
	return m->sdata + *VEC_AT(&m->soff, uint64_t, id);
}

static int model_shash_grow(struct model *m)
{
	size_t n = m->shash ? (m->shash_mask + 1) * 2 : 4096, i, j;
	uint32_t *h = calloc(n, sizeof(uint32_t));

	if (h == NULL)
		return -1;
	for (i = 0; i < m->soff.len; i++) {
		const char *s = model_str(m, (uint32_t)i);

		j = hash_bytes(s, strlen(s)) & (n - 1);
		while (h[j])
			j = (j + 1) & (n - 1);
		h[j] = (uint32_t)i + 1;
	}
	free(m->shash);
	m->shash = h;
	m->shash_mask = n - 1;
	return 0;
}

static int model_sappend(struct model *m, const char *s, size_t n)
{
	uint64_t *off;

	if (m->slen + n + 1 > m->scap) {
		size_t cap = m->scap ? m->scap : 65536;
		char *p;

		while (cap < m->slen + n + 1)
			cap *= 2;
		if ((p = realloc(m->sdata, cap)) == NULL)
			return -1;
		m->sdata = p;
		m->scap = cap;
	}
	if ((off = vec_push(&m->soff)) == NULL)
		return -1;
	*off = m->slen;
	memcpy(m->sdata + m->slen, s, n);
	m->sdata[m->slen + n] = '\0';
	m->slen += n + 1;
	return 0;
}

/*
 * Strings are compared up to an embedded NUL: a name with a NUL byte is
 * stored cut at it, which is also how SQLite and JSON consumers see it.
 */
uint32_t model_intern(struct model *m, const char *s, size_t n)
{
	const char *nul = memchr(s, '\0', n);
	size_t j;

	if (nul != NULL)
		n = (size_t)(nul - s);
	if ((m->soff.len + 1) * 2 > (m->shash ? m->shash_mask + 1 : 0) && model_shash_grow(m) != 0)
		goto out_oom;
	j = hash_bytes(s, n) & m->shash_mask;
	while (m->shash[j]) {
		const char *t = model_str(m, m->shash[j] - 1);

		if (strncmp(t, s, n) == 0 && t[n] == '\0')
			return m->shash[j] - 1;
		j = (j + 1) & m->shash_mask;
	}
	if (m->soff.len >= UINT32_MAX - 1 || model_sappend(m, s, n) != 0)
		goto out_oom;
	m->shash[j] = (uint32_t)m->soff.len;
	return (uint32_t)m->soff.len - 1;
out_oom:
	m->oom = 1;
	return MDL_NONE;
}

uint32_t model_thread(struct model *m, uint64_t pid, uint64_t tid)
{
	struct kmap_entry *e = kmap_get(&m->thread_map, pid, tid, 0, 0);
	struct mdl_thread *t;

	if (e == NULL)
		goto out_oom;
	if (e->val != MDL_NONE)
		return e->val;
	if ((t = vec_push(&m->threads)) == NULL)
		goto out_oom;
	t->pid = pid;
	t->tid = tid;
	e->val = (uint32_t)m->threads.len - 1;
	return e->val;
out_oom:
	m->oom = 1;
	return MDL_NONE;
}

struct mdl_ev *model_event(struct model *m)
{
	struct mdl_ev *e;

	/* seq is 32 bits: more events could not be told apart in file order */
	if (m->events_total >= UINT32_MAX - 1 || (e = vec_push(&m->events)) == NULL) {
		m->oom = 1;
		return NULL;
	}
	e->seq = m->seq++;
	m->events_total++;
	return e;
}

void model_checkpoint(struct model *m)
{
	/* a failed spill has turned itself off (spill_at = SIZE_MAX) */
	if (m->spill != NULL && m->events.len >= m->spill_at)
		m->spill(m->spill_ctx, m);
}

uint64_t model_bytes(struct model *m, const void *p, size_t n)
{
	size_t off = m->bytes.len;

	if (n == 0)
		return off;
	if (vec_reserve(&m->bytes, off + n) != 0) {
		m->oom = 1;
		return 0;
	}
	memcpy((char *)m->bytes.data + off, p, n);
	m->bytes.len += n;
	return off;
}

/* At most this many providers; an archive naming more is damaged. */
enum { MDL_MAX_PROVIDERS = 4096 };

struct mdl_provider *model_provider(struct model *m, uint32_t id, int reset)
{
	struct mdl_provider *p, **slot;
	size_t i;

	for (i = 0; i < m->providers.len; i++) {
		p = *VEC_AT(&m->providers, struct mdl_provider *, i);
		if (p->id == id) {
			if (reset) {
				provider_clear(p);
				p->ticks_per_second = 1000000000u;
			}
			return p;
		}
	}
	if (m->providers.len >= MDL_MAX_PROVIDERS)
		return *VEC_AT(&m->providers, struct mdl_provider *, m->providers.len - 1);
	if ((p = calloc(1, sizeof(*p))) == NULL || (slot = vec_push(&m->providers)) == NULL) {
		free(p);
		m->oom = 1;
		return NULL;
	}
	p->id = id;
	p->ticks_per_second = 1000000000u;
	*slot = p;
	return p;
}

int model_sched(struct model *m, const struct mdl_sched *s)
{
	struct mdl_sched *out = rs_push(&m->sched);

	if (out == NULL)
		return -1;
	*out = *s;
	out->seq = m->seq++;
	if (m->sched_keep) {
		struct mdl_sched *g = vec_push(&m->sched_grown);

		if (g == NULL)
			return -1;
		*g = *out;
	}
	if (m->sched.count == 1 || s->ts < m->sched_first)
		m->sched_first = s->ts;
	if (m->sched.count == 1 || s->ts > m->sched_last)
		m->sched_last = s->ts;
	return 0;
}
