/*
 * The build stage (build.h): resolve (resolve.c), match (match.c) and write
 * (write.c) the decoded model into the rows of schema/trace.sql.
 */
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "commit.h"
#include "sorter.h"

static void build_fini(struct build *b)
{
	size_t i;

	build_write_abandon(b); /* nothing, when write.c ended it; first: its thread may read the store */
	vec_fini(&b->rows);
	kmap_fini(&b->row_map);
	kmap_fini(&b->kobj_map);
	vec_fini(&b->tracks);
	kmap_fini(&b->track_map);
	ss_fini(&b->ss);
	rs_fini(&b->flows);
	rs_fini(&b->flows_by_id);
	rs_fini(&b->points);
	for (i = 0; i < b->point_ids.len; i++)
		idg_fini(VEC_AT(&b->point_ids, struct id_group, i));
	vec_fini(&b->point_ids);
	free(b->row_of);
	vec_fini(&b->track_marks);
	argw_close(&b->args); /* nothing, when write.c closed it */
}

/* The counters table's order: by track, then as the points came. */
static int point_cmp(const void *a, const void *b)
{
	const struct bpoint *x = a, *y = b;

	if (x->track != y->track)
		return x->track < y->track ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Flows in the order of their from-slices in the slices' table (by track,
 * depth, then ordinal: ss_order), then as they were made. */
static int flow_from_cmp(const void *a, const void *b)
{
	const struct bflow *x = a, *y = b;

	if (x->from_track != y->from_track)
		return x->from_track < y->from_track ? -1 : 1;
	if (x->from_depth != y->from_depth)
		return x->from_depth < y->from_depth ? -1 : 1;
	if (x->from.ord != y->from.ord)
		return x->from.ord < y->from.ord ? -1 : 1;
	return x->n < y->n ? -1 : x->n > y->n;
}

/* The flows table's order. */
static int flow_id_cmp(const void *a, const void *b)
{
	const struct bflow *x = a, *y = b;

	return x->n < y->n ? -1 : x->n > y->n;
}

static void build_init(struct build *b, struct model *m, struct sorter *so, struct dbwriter *s,
		       struct ingest_result *res)
{
	memset(b, 0, sizeof(*b));
	b->m = m;
	b->so = so;
	b->s = s;
	b->res = res;
	vec_init(&b->rows, sizeof(struct thread_row));
	kmap_init(&b->row_map);
	kmap_init(&b->kobj_map);
	vec_init(&b->tracks, sizeof(struct btrack));
	kmap_init(&b->track_map);
	ss_init(&b->ss);
	ss_spill_to(&b->ss, sorter_scratch(so), sorter_budget_bytes(so));
	rs_init(&b->flows, sizeof(struct bflow), flow_from_cmp);
	rs_spill_to(&b->flows, sorter_scratch(so), sorter_run_bytes(so));
	rs_init(&b->flows_by_id, sizeof(struct bflow), flow_id_cmp);
	rs_spill_to(&b->flows_by_id, sorter_scratch(so), sorter_run_bytes(so));
	rs_init(&b->points, sizeof(struct bpoint), point_cmp);
	rs_spill_to(&b->points, sorter_scratch(so), sorter_run_bytes(so));
	vec_init(&b->point_ids, sizeof(struct id_group));
	vec_init(&b->track_marks, 1);
}

/* Resolve, then match the events in order. */
static int build_memory(struct build *b)
{
	if (build_kobjs(b) != 0 || build_threads(b) != 0)
		return -1;
	return build_match(b);
}

/* Why matching failed (writing during it included: model.h, by_thread). */
static int match_error(struct build *b)
{
	if (sorter_failed(b->so, NULL))
		return INGEST_EIO;
	if (b->cancel)
		return INGEST_ECANCEL;
	return b->write_failed && !b->oom ? INGEST_EDB : INGEST_ENOMEM;
}

int model_build(struct model *m, struct sorter *so, struct dbwriter *s, struct ingest_result *res,
		const struct ingest_opts *o)
{
	ingest_progress_fn fn = o ? o->progress : NULL;
	void *ctx = o ? o->progress_ctx : NULL;
	struct ingest_opts_view pv = { fn, ctx, 0, 0 };
	struct build b;
	int rc = INGEST_OK;

	build_init(&b, m, so, s, res);
	if (o && o->extent_rows) {
		b.extent_rows = o->extent_rows;
		b.point_chunks.rows = o->extent_rows;
		b.point_chunks.next = 1;
		ss_extents(&b.ss, o->extent_rows);
	}
	if (o && o->extent_rows && o->commit_every && !m->by_thread) {
		if ((b.commit = commit_new(&b)) == NULL)
			rc = INGEST_ENOMEM;
		b.commit_every = o->commit_every;
	}
	res->counts.events = m->events_total;
	b.pv = &pv;
	pv.total = m->events_total; /* by_thread: writing begins before the slices are counted */
	if (rc != INGEST_OK)
		;
	else if (fn && fn(ctx, INGEST_PHASE_BUILD, 0, m->events_total, m->events_total) != 0)
		rc = INGEST_ECANCEL;
	else if (argw_open(&b.args, s, m) != 0)
		rc = INGEST_EDB;
	else if (build_memory(&b) != 0)
		rc = match_error(&b);
	if (rc == INGEST_OK && b.commit != NULL && commit_write(b.commit) != 0) /* the last: every slice is final */
		rc = b.oom ? INGEST_ENOMEM : INGEST_EDB;
	if (rc == INGEST_OK) {
		b.strings_written = b.commit != NULL ? m->soff.len : 0;
		pv.total = b.ss.count + b.points.count;
		if (build_write(&b, &pv) != 0)
			rc = sorter_failed(so, NULL) ? INGEST_EIO : b.oom ? INGEST_ENOMEM : INGEST_EDB;
		else if (b.cancel)
			rc = INGEST_ECANCEL;
	}
	res->counts.args = b.args.count;
	commit_free(b.commit);
	build_fini(&b);
	return rc;
}
