/*
 * Retention: which traces the bounds (--retain-days, --retain-bytes)
 * remove, oldest first. Pinned traces and traces not yet ingested are never
 * removed.
 */
#include <stdio.h>
#include <string.h>

#include "catalog_internal.h"

/* Another server's traces count against its bounds, not this one's. */
static int removable(const struct trace_rec *r)
{
	return !r->meta.pinned && !r->sync.foreign && (r->state.status == TS_READY || r->state.status == TS_FAILED);
}

size_t cat_retention_plan(struct trace_rec *const *v, size_t n, const struct cat_opts *o, time_t now,
			  struct cat_removal *out, size_t max)
{
	uint64_t used = 0;
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		used += v[i]->sync.foreign ? 0 : v[i]->state.stored;
	/* v is in id order, which is upload order: oldest first */
	for (i = 0; i < n && k < max; i++) {
		const struct trace_rec *r = v[i];

		if (!removable(r))
			continue;
		if (o->retain_days > 0 && (int64_t)(now - r->state.created) >= o->retain_days * 86400) {
			out[k].id = r->id;
			out[k++].reason = "age";
			used -= r->state.stored;
		}
	}
	for (i = 0; i < n && k < max && o->retain_bytes > 0 && used > o->retain_bytes; i++) {
		const struct trace_rec *r = v[i];
		size_t j;

		if (!removable(r))
			continue;
		for (j = 0; j < k && out[j].id != r->id; j++)
			;
		if (j < k)
			continue; /* already going for its age */
		out[k].id = r->id;
		out[k++].reason = "space";
		used -= r->state.stored;
	}
	return k;
}


enum { NEXT_REMOVALS = 5 };

void cat_usage_json(struct catalog *c, struct jbuf *out)
{
	uint64_t used = 0;
	size_t i, pinned = 0, shown = 0;

	pthread_mutex_lock(&c->mu);
	cat_sync_locked(c, 0); /* down: what this server last knew */
	for (i = 0; i < c->n; i++) {
		used += c->v[i]->state.stored;
		pinned += c->v[i]->meta.pinned != 0;
	}
	jb_obj(out);
	jb_key(out, "traces");
	jb_u64(out, c->n);
	jb_key(out, "pinned");
	jb_u64(out, pinned);
	jb_key(out, "stored_bytes");
	jb_u64(out, used);
	jb_key(out, "retain_days");
	if (c->o.retain_days > 0)
		jb_i64(out, c->o.retain_days);
	else
		jb_null(out);
	jb_key(out, "retain_bytes");
	if (c->o.retain_bytes > 0)
		jb_u64(out, c->o.retain_bytes);
	else
		jb_null(out);
	jb_key(out, "next_removals");
	jb_arr(out);
	for (i = 0; i < c->n && shown < NEXT_REMOVALS && (c->o.retain_days > 0 || c->o.retain_bytes > 0); i++) {
		const struct trace_rec *r = c->v[i];

		if (!removable(r))
			continue;
		jb_obj(out);
		jb_key(out, "id");
		jb_i64(out, r->id);
		jb_key(out, "name");
		jb_str(out, r->meta.name);
		jb_key(out, "stored_bytes");
		jb_u64(out, r->state.stored);
		jb_key(out, "remove_at");
		if (c->o.retain_days > 0) {
			char at[32];

			cat_rfc3339(r->state.created + (time_t)(c->o.retain_days * 86400), at, sizeof(at));
			jb_str(out, at);
		} else {
			jb_null(out);
		}
		jb_obj_end(out);
		shown++;
	}
	jb_arr_end(out);
	jb_obj_end(out);
	pthread_mutex_unlock(&c->mu);
}
