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
	b->matched_ts = INT64_MIN;
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

/* A build and the progress view it reports to, made and freed together. */
struct build_job {
	struct build b; /* first: a build's address is its job's */
	struct ingest_opts_view pv;
};

/* Why matching failed (writing during it included: model.h, by_thread). */
static int match_error(struct build *b)
{
	if (sorter_failed(b->so, NULL))
		return INGEST_EIO;
	if (b->cancel)
		return INGEST_ECANCEL;
	return b->write_failed && !b->oom ? INGEST_EDB : INGEST_ENOMEM;
}

struct build *model_build_open(struct model *m, struct sorter *so, struct dbwriter *s, struct ingest_result *res,
			       const struct ingest_opts *o, int *rc)
{
	ingest_progress_fn fn = o ? o->progress : NULL;
	void *ctx = o ? o->progress_ctx : NULL;
	struct build_job *j = malloc(sizeof(*j));
	struct build *b;

	*rc = INGEST_ENOMEM;
	if (j == NULL)
		return NULL;
	b = &j->b;
	build_init(b, m, so, s, res);
	if (o && o->extent_rows) {
		b->extent_rows = o->extent_rows;
		b->point_chunks.rows = o->extent_rows;
		b->point_chunks.next = 1;
		ss_extents(&b->ss, o->extent_rows);
	}
	if (build_commits(o) && !m->by_thread) {
		if ((b->commit = commit_new(b)) == NULL) {
			build_fini(b);
			free(j);
			return NULL;
		}
		b->commit_every = o->commit_every;
		b->commit_rows = o->commit_rows;
	}
	if (b->commit == NULL && m->sched_keep) { /* no commit takes them */
		m->sched_keep = 0;
		vec_fini(&m->sched_grown);
		vec_init(&m->sched_grown, sizeof(struct mdl_sched));
	}
	if (o)
		b->stack_nodes = o->stack_nodes;
	j->pv.fn = fn;
	j->pv.ctx = ctx;
	j->pv.total = m->events_total; /* by_thread: writing begins before the slices are counted */
	j->pv.base = 0;
	b->pv = &j->pv;
	*rc = INGEST_OK;
	if (fn && fn(ctx, INGEST_PHASE_BUILD, 0, m->events_total, m->events_total) != 0)
		*rc = INGEST_ECANCEL;
	else if (argw_open(&b->args, s, m) != 0)
		*rc = INGEST_EDB;
	else if (build_kobjs(b) != 0 || build_threads(b) != 0 || build_match_begin(b) != 0)
		*rc = match_error(b);
	if (*rc == INGEST_OK)
		return b;
	build_fini(b);
	free(j);
	return NULL;
}

int model_build_step(struct build *b)
{
	if (build_kobjs(b) != 0 || build_threads(b) != 0 || build_match_more(b) != 0)
		return match_error(b);
	if (argw_settle(&b->args) != 0) /* decoding goes on: m->bytes may move */
		return INGEST_EDB;
	return INGEST_OK;
}

int model_build_close(struct build *b, int *restart)
{
	struct build_job *j = (struct build_job *)b;
	int rc = INGEST_OK, fin;

	*restart = 0;
	b->res->counts.events = b->m->events_total;
	j->pv.total = b->m->events_total;
	if (build_kobjs(b) != 0 || build_threads(b) != 0 ||
	    (!sorter_streaming(b->so) && sorter_finish(b->so) != 0) || build_match_end(b) != 0)
		rc = match_error(b);
	else if ((fin = build_threads_final(b)) != 0)
		rc = fin > 0 ? (*restart = 1, INGEST_OK) : INGEST_ENOMEM;
	if (rc == INGEST_OK && !*restart && b->commit != NULL) { /* the last commit: every slice is final */
		if (commit_write(b->commit, COMMIT_PUBLISH, NULL) != 0)
			rc = b->oom ? INGEST_ENOMEM : INGEST_EDB;
		b->strings_written = b->m->soff.len;
	}
	if (rc == INGEST_OK && !*restart) {
		j->pv.total = b->ss.count + b->points.count;
		if (build_write(b, &j->pv) != 0)
			rc = sorter_failed(b->so, NULL) ? INGEST_EIO : b->oom ? INGEST_ENOMEM : INGEST_EDB;
		else if (b->cancel)
			rc = INGEST_ECANCEL;
	}
	b->res->counts.args = b->args.count;
	model_build_free(b);
	return rc;
}

void model_build_free(struct build *b)
{
	if (b == NULL)
		return;
	build_match_abandon(b);
	commit_free(b->commit);
	build_fini(b);
	free(b); /* its job: the build is its first member */
}

int model_build(struct model *m, struct sorter *so, struct dbwriter *s, struct ingest_result *res,
		const struct ingest_opts *o)
{
	int rc, restart;
	struct build *b = model_build_open(m, so, s, res, o, &rc);

	if (b == NULL)
		return rc;
	rc = model_build_close(b, &restart);
	return rc == INGEST_OK && restart ? INGEST_ENOMEM : rc; /* decoded whole first: nothing is revised */
}
