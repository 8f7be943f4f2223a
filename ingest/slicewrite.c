/*
 * The slices' writing (write.h): every group of the slice store in cluster
 * order (slicestore.h, ss_order), each group's level of detail (lod.h),
 * time marks and stack statistics (stacks.h) and the flows' from-ends as
 * its slices go by, then the track depths and their extents.
 *
 * For a model whose events come thread after thread (model.h, by_thread),
 * each thread's groups are written as soon as the thread is matched
 * (build_write_thread): given their ids, sealed (ss_seal) and queued for a
 * writer thread of their own, which reads them back, hands their rows to
 * the store's queue and frees them while the build's thread matches the
 * next thread. So SQLite writes the slices while matching goes on rather
 * than after it. From its start to its end the writer thread owns the
 * slices' row buffer, level of detail, marks and stack statistics; it
 * shares with the build's thread only the queue of sealed threads (under a
 * mutex), the sealed groups (which the store no longer touches), the count
 * of slices written (for progress) and the cancel flag. A trace with flows
 * or ids reserved as slices come (ss_extents) is written on the build's
 * thread instead.
 *
 * With ids reserved a chunk at a time (ss_extents), a group's rows are not
 * one run of ids: its chunks lie between other groups'. Written group by
 * group, every chunk would be an insert into the middle of the table's
 * b-tree, each row a seek. So then the groups are gone through in cluster
 * order for what is computed group by group (level of detail, time marks,
 * stack statistics, flows' from-ends), and their rows are written
 * afterwards, in id order (write_by_id): SQLite appends them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tracedb/tracedb.h"
#include "extents.h"
#include "lod.h"
#include "stacks.h"
#include "write.h"

/* A (track, depth) group: where its slices go and what they came to. */
struct depth_range {
	uint32_t group;
	uint32_t track, depth;
	uint64_t first, count; /* position of the first slice in writing order, number of slices */
	struct depth_facts facts;
	uint64_t lod_levels;   /* levels of detail stored (lod.h) */
	size_t marks_off, marks_len; /* its time marks in the marks' bytes */
};

/* Flows merged in the order their from-slices are written (build.flows):
 * write_range fills in where each from-slice ends as it passes it, and
 * hands the flow on to be written by id (build.flows_by_id). */
struct flow_cursor {
	const struct bflow *head; /* the next flow, NULL after the last */
};

/* A matched thread's groups, queued for the writer thread. */
struct slice_job {
	struct slice_job *next;
	uint32_t from, n;           /* its groups: from .. from + n - 1, made while it was matched */
	struct ss_group **group;    /* by index - from: a parent's group is among them */
	size_t first_range;         /* where its ranges are in slice_out.ranges */
	size_t bytes;               /* its groups' packed bytes in memory (not spilled) */
	struct depth_range *r;      /* its ranges in order, filled in by the writer thread */
};

/*
 * The slices' writing, open from the first group ordered to the end: all of
 * them after matching, or each thread's while the next is matched. Groups
 * are put in order a set at a time, each set after the tracks of the one
 * before, and written in that order.
 */
struct slice_out {
	struct bins bb;
	struct lod_writer lw;
	struct flow_cursor fc;
	struct vec mb;         /* the groups' time marks, one's after another */
	struct vec ranges;     /* struct depth_range: every group ordered, in order */
	size_t written;        /* ranges written, or queued for the writer thread */
	uint32_t groups;       /* groups of the store ordered (those before it) */
	uint64_t next_id;      /* the first id of the next group ordered */
	uint64_t pos;          /* slices ordered */
	int open;              /* the tables' writers are open (slices_open) */
	int by_id;             /* rows are written in id order after the groups (write_by_id) */
	uint64_t last_id;      /* by_id: the id of the last row written */
	int oom;               /* writing ran out of memory */
	/* the writer thread */
	int threaded;          /* it runs */
	int alone;             /* it could not be started: write on the build's thread */
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;     /* a job came or the end was asked; or the thread ended */
	struct slice_job *head, *tail; /* the jobs queued */
	size_t held;           /* bytes of the jobs queued or being written */
	size_t hold_max;       /* past it, the build's thread waits for the writer thread */
	struct slice_job *done, *done_tail; /* the jobs taken, in order (the thread's until it ends) */
	int closing, ended;
	int stop;              /* the build failed: write nothing more (atomic) */
	uint64_t thread_written; /* slices it wrote, about (atomic) */
	int thread_failed;     /* its writing failed */
	char why[320];         /* a read of the scratch file that failed on it */
	const struct slice_job *job; /* the job it writes: its groups' ids */
};

/* The id of a written slice's parent. The writer thread finds it among its
 * job's groups: the store's blocks may grow meanwhile. */
static uint64_t parent_id(const struct build *b, const struct slice_out *so, struct ss_ref p)
{
	if (so->job != NULL)
		return so->job->group[p.group - so->job->from]->first_id + p.ord;
	return ss_id(&b->ss, p);
}

static void write_slice(struct build *b, struct slice_out *so, const struct ss_group *g, uint64_t ord,
			const struct ss_slice *s)
{
	struct bins *sb = &so->bb;

	/* the id: with one extent per group, slices go in id order from 1, so
	 * SQLite's next rowid is it, and taking the next rowid is cheaper than
	 * checking a given one. With chunks they go in id order too
	 * (write_by_id), but for the gap a group's last chunk leaves */
	if (b->ss.ids.rows) {
		uint64_t id = idg_id(&b->ss.ids, &g->ids, ord);

		if (id == so->last_id + 1)
			bins_null(sb);
		else
			bins_i64(sb, (int64_t)id);
		so->last_id = id;
	} else {
		bins_null(sb);
	}
	bins_i64(sb, g->track + 1);
	bins_i64(sb, s->ts);
	bins_i64(sb, s->dur);
	bins_i64(sb, g->depth);
	bins_i64(sb, s->name);
	bins_i64(sb, s->cat);
	if (s->parent.group == MDL_NONE)
		bins_null(sb);
	else
		bins_i64(sb, (int64_t)parent_id(b, so, s->parent));
	if (s->set == 0)
		bins_null(sb);
	else
		bins_i64(sb, s->set);
	bins_row(sb);
}

/* The facts of each (track, depth) group and where its slices lie. The
 * marks' bytes are read until the queue has run: this waits for it. */
static int write_depths(struct build *b, const struct depth_range *r, size_t n, const struct vec *mb)
{
	struct bins db, eb;
	size_t i;
	int rc;

	if (bins_init(&db, b->s, "track_depths", 7) != 0)
		return -1;
	if (bins_init(&eb, b->s, "extents", 5) != 0) {
		bins_fini(&db);
		return -1;
	}
	for (i = 0; i < n; i++) {
		const struct ss_group *g = ss_group(&b->ss, r[i].group);
		struct btrack *t = VEC_AT(&b->tracks, struct btrack, r[i].track);

		if (r[i].depth > t->max_depth)
			t->max_depth = r[i].depth;
		bins_i64(&db, r[i].track + 1);
		bins_i64(&db, r[i].depth);
		bins_i64(&db, r[i].facts.max_dur);
		bins_i64(&db, (int64_t)r[i].count);
		bins_i64(&db, !r[i].facts.overlap);
		bins_i64(&db, (int64_t)r[i].lod_levels);
		bins_blob(&db, (const uint8_t *)mb->data + r[i].marks_off, (int)r[i].marks_len);
		bins_row(&db);
		extents_write(&eb, r[i].track + 1, r[i].depth, &b->ss.ids, &g->ids, g->first_id, r[i].count);
	}
	rc = bins_fini(&db) | bins_fini(&eb);
	return dbw_drain(b->s) | rc;
}

/* The head flow's from-slice is written, and ends at end. */
static void flow_pass(struct build *b, struct flow_cursor *fc, int64_t end)
{
	struct bflow *f = rs_push(&b->flows_by_id);

	if (f == NULL) {
		b->oom = 1; /* or the scratch file failed: sorter_failed() tells */
		fc->head = NULL;
		return;
	}
	*f = *fc->head;
	f->from_ts = end;
	fc->head = rs_next(&b->flows);
}

/* The slices of one (track, depth) group g, their summaries (level of
 * detail) and the facts readers need about the run: longest slice,
 * overlap. pv NULL: on the writer thread, which counts in
 * so->thread_written instead of reporting progress. */
static int write_range(struct build *b, struct slice_out *so, struct depth_range *r, struct ss_group *g,
		       struct ingest_opts_view *pv)
{
	/* a growing trace's commits made its rows, facts and level of detail
	 * (commit.h): only the stack statistics and the arrows' ends are left */
	struct lod_item *it = b->committed ? NULL : lod_items(&so->lw, r->count);
	struct lod_key key = { r->track + 1, r->depth };
	struct ss_reader rd;
	struct ss_slice s;
	uint64_t i;

	if (it == NULL && !b->committed)
		return -1;
	if (so->job != NULL)
		ss_read_group_apart(&rd, &b->ss, g, so->why, sizeof(so->why));
	else
		ss_read_group(&rd, &b->ss, g);
	stacks_group(b->stacks, r->track, r->depth, r->group, r->count);
	depth_facts_init(&r->facts);
	for (i = 0; i < r->count; i++) {
		if (!ss_read(&rd, &s)) {
			ss_read_done(&rd);
			return -1;
		}
		if (it != NULL)
			it[i] = depth_facts_add(&r->facts, b, s.ts, s.dur, s.name, s.cat);
		while (so->fc.head != NULL && so->fc.head->from.group == r->group && so->fc.head->from.ord == i)
			flow_pass(b, &so->fc, tracedb_flow_from_ts(s.ts, s.dur));
		if (!b->committed && !so->by_id) /* else a growing trace's commits wrote it
						   * (commit.h), or write_by_id will */
			write_slice(b, so, g, i, &s);
		stacks_slice(b->stacks, &s);
		if (((r->first + i) & 0xffff) == 0) {
			/* by_id: this pass is the first half of the work */
			if (pv != NULL)
				write_progress(b, pv, so->by_id ? (r->first + i) / 2 : r->first + i);
			else
				__atomic_store_n(&so->thread_written, r->first + i, __ATOMIC_RELAXED);
		}
	}
	ss_read_done(&rd);
	if (!so->by_id)
		ss_drop(&b->ss, g);
	if (b->committed) /* its facts and level of detail too */
		return 0;
	if (write_marks(&so->mb, it, r->count, &r->marks_off, &r->marks_len) != 0) {
		so->oom = 1;
		return -1;
	}
	if (lod_build(&so->lw, &key, it, r->count, 0, &r->lod_levels) != 0) {
		/* the builder's own refusal (the store's failure says why first) */
		dbw_fail(b->s, "the level of detail could not be built: a group's slices are out of time order, "
			       "or memory ran out");
		return -1;
	}
	return 0;
}

int slices_order(struct build *b)
{
	struct slice_out *so = b->out;
	uint32_t *order;
	size_t k, n = b->ss.ngroups - (so ? so->groups : 0);

	if (so == NULL) {
		if ((so = b->out = calloc(1, sizeof(*so))) == NULL) {
			b->oom = 1;
			return -1;
		}
		vec_init(&so->mb, 1);
		vec_init(&so->ranges, sizeof(struct depth_range));
		so->next_id = 1;
	}
	if ((order = ss_order(&b->ss, so->groups, &so->next_id)) == NULL) {
		b->oom = 1;
		return -1;
	}
	for (k = 0; k < n; k++) {
		const struct ss_group *g = ss_group(&b->ss, order[k]);
		struct depth_range *r = vec_push(&so->ranges);

		if (r == NULL) {
			free(order);
			b->oom = 1;
			return -1;
		}
		r->group = order[k];
		r->track = g->track;
		r->depth = g->depth;
		r->first = so->pos;
		r->count = g->count;
		so->pos += g->count;
	}
	so->groups = b->ss.ngroups;
	free(order);
	return 0;
}

int slices_begun(const struct build *b)
{
	return b->out != NULL && b->out->open;
}

/* Opens the slices' tables, once every flow is made. */
static int slices_open(struct build *b)
{
	struct slice_out *so = b->out;

	so->open = 1;
	so->by_id = b->ss.ids.rows != 0 && !b->committed;
	if (rs_finish(&b->flows) != 0) {
		write_sorted_failed(b, &b->flows);
		return -1;
	}
	so->fc.head = rs_next(&b->flows);
	if (bins_init(&so->bb, b->s, "slices", 9) != 0 || lod_writer_init(&so->lw, b->s) != 0 || stacks_begin(b) != 0)
		return -1;
	return 0;
}

/* A group's rows as write_by_id goes through them. */
struct by_id_group {
	struct ss_reader rd;
	uint64_t done;         /* rows written */
};

/*
 * Writes the rows of every group gone through (by_id), in id order: the
 * chunks of ids in the order they were reserved, each its group's next
 * rows, read on from where its last chunk stopped. Only the groups whose
 * chunks are under way hold a reader. 0, or -1 (out of memory, or the
 * scratch file).
 */
static int write_by_id(struct build *b, struct slice_out *so, struct ingest_opts_view *pv)
{
	const struct id_chunks *c = &b->ss.ids;
	uint64_t k, nchunks = idc_count(c), pos = 0;
	uint32_t *owner = malloc((nchunks ? nchunks : 1) * sizeof(*owner));
	struct by_id_group **at = calloc(so->ranges.len ? so->ranges.len : 1, sizeof(*at));
	size_t i;
	int rc = 0;

	if (owner == NULL || at == NULL) {
		free(owner);
		free(at);
		b->oom = 1;
		return -1;
	}
	for (k = 0; k < nchunks; k++)
		owner[k] = UINT32_MAX;
	for (i = 0; i < so->ranges.len; i++) {
		const struct depth_range *r = VEC_AT(&so->ranges, struct depth_range, i);
		const struct ss_group *g = ss_group(&b->ss, r->group);
		const uint64_t *first = g->ids.first.data;
		size_t j;

		for (j = 0; j < g->ids.first.len; j++)
			owner[idc_of(c, first[j])] = (uint32_t)i;
	}
	for (k = 0; k < nchunks && rc == 0 && !b->cancel; k++) {
		const struct depth_range *r;
		struct ss_group *g;
		struct by_id_group *w;
		uint64_t n;

		if (owner[k] == UINT32_MAX)
			continue; /* a chunk of groups not gone through (none, but for a failure) */
		r = VEC_AT(&so->ranges, struct depth_range, owner[k]);
		g = ss_group(&b->ss, r->group);
		if ((w = at[owner[k]]) == NULL) {
			if ((w = at[owner[k]] = calloc(1, sizeof(*w))) == NULL) {
				b->oom = 1;
				rc = -1;
				break;
			}
			ss_read_group(&w->rd, &b->ss, g);
		}
		n = r->count - w->done < c->rows ? r->count - w->done : c->rows;
		for (; n > 0; n--, w->done++, pos++) {
			struct ss_slice s;

			if (!ss_read(&w->rd, &s)) {
				rc = -1;
				break;
			}
			write_slice(b, so, g, w->done, &s);
			if ((pos & 0xffff) == 0 && pv != NULL) /* the second half (write_range) */
				write_progress(b, pv, (so->pos + pos) / 2);
		}
		if (rc == 0 && w->done == r->count) {
			ss_read_done(&w->rd);
			free(w);
			at[owner[k]] = NULL;
			ss_drop(&b->ss, g);
		}
	}
	for (i = 0; i < so->ranges.len; i++) { /* after a failure */
		if (at[i] != NULL) {
			ss_read_done(&at[i]->rd);
			free(at[i]);
		}
	}
	free(owner);
	free(at);
	return rc;
}

/* Writes, on the build's thread, the groups ordered and not yet written. */
static int slices_write(struct build *b, struct ingest_opts_view *pv)
{
	struct slice_out *so = b->out;
	int rc = 0;

	if (!so->open && slices_open(b) != 0)
		return -1;
	for (; so->written < so->ranges.len && rc == 0 && !b->cancel; so->written++) {
		struct depth_range *r = VEC_AT(&so->ranges, struct depth_range, so->written);

		rc = write_range(b, so, r, ss_group(&b->ss, r->group), pv);
	}
	return rc;
}

/* ---- the writer thread --------------------------------------------------- */

/* Appends job to the list from *head to *tail. */
static void job_append(struct slice_job **head, struct slice_job **tail, struct slice_job *job)
{
	job->next = NULL;
	if (*tail != NULL)
		(*tail)->next = job;
	else
		*head = job;
	*tail = job;
}

static void *writer_main(void *arg)
{
	struct build *b = arg;
	struct slice_out *so = b->out;
	struct slice_job *job;
	uint32_t k;

	for (;;) {
		pthread_mutex_lock(&so->mu);
		while (so->head == NULL && !so->closing)
			pthread_cond_wait(&so->cv, &so->mu);
		if ((job = so->head) != NULL && (so->head = job->next) == NULL)
			so->tail = NULL;
		pthread_mutex_unlock(&so->mu);
		if (job == NULL)
			break;
		so->job = job;
		for (k = 0; k < job->n && !so->thread_failed && !__atomic_load_n(&b->cancel, __ATOMIC_RELAXED) &&
			    !__atomic_load_n(&so->stop, __ATOMIC_RELAXED);
		     k++) {
			struct depth_range *r = &job->r[k];

			if (write_range(b, so, r, job->group[r->group - job->from], NULL) != 0)
				so->thread_failed = 1;
		}
		for (k = 0; k < job->n; k++) /* those not written (a failure, a cancel) go too */
			ss_drop(&b->ss, job->group[k]);
		so->job = NULL;
		job_append(&so->done, &so->done_tail, job);
		pthread_mutex_lock(&so->mu);
		so->held -= job->bytes;
		pthread_cond_broadcast(&so->cv);
		pthread_mutex_unlock(&so->mu);
	}
	pthread_mutex_lock(&so->mu);
	so->ended = 1;
	pthread_cond_broadcast(&so->cv);
	pthread_mutex_unlock(&so->mu);
	heap_release(); /* what this thread held (util.h) */
	return NULL;
}

/* Starts the writer thread; 0, or -1 (then the build's thread writes). */
static int writer_start(struct build *b)
{
	struct slice_out *so = b->out;

	if (pthread_mutex_init(&so->mu, NULL) != 0)
		return -1;
	if (pthread_cond_init(&so->cv, NULL) != 0) {
		pthread_mutex_destroy(&so->mu);
		return -1;
	}
	if (pthread_create(&so->th, NULL, writer_main, b) != 0) {
		pthread_cond_destroy(&so->cv);
		pthread_mutex_destroy(&so->mu);
		return -1;
	}
	so->threaded = 1;
	so->hold_max = b->ss.budget ? b->ss.budget / 2 : SIZE_MAX;
	return 0;
}

static void job_free(struct slice_job *job)
{
	free(job->group);
	free(job->r);
	free(job);
}

/* Seals the groups ordered since `from` (the store's group index; their
 * ranges from `first` on) and queues them; 0, or -1 when out of memory. */
static int writer_queue(struct build *b, uint32_t from, size_t first)
{
	struct slice_out *so = b->out;
	struct slice_job *job = calloc(1, sizeof(*job));
	uint32_t k, n = so->groups - from;

	if (job == NULL || (job->group = malloc((n ? n : 1) * sizeof(*job->group))) == NULL ||
	    (job->r = malloc((n ? n : 1) * sizeof(*job->r))) == NULL) {
		if (job != NULL)
			job_free(job);
		b->oom = 1;
		return -1;
	}
	job->from = from;
	job->n = n;
	job->first_range = first;
	if (n > 0) /* a thread of counters alone makes no group: ranges may have no array yet */
		memcpy(job->r, VEC_AT(&so->ranges, struct depth_range, first), n * sizeof(*job->r));
	for (k = 0; k < n; k++) {
		ss_seal(&b->ss, from + k);
		job->group[k] = ss_group(&b->ss, from + k);
		job->bytes += job->group[k]->data.len;
	}
	so->written = so->ranges.len;
	pthread_mutex_lock(&so->mu);
	/* sealed slices are not spilled: memory stays bounded by waiting */
	while (so->held > 0 && so->held + job->bytes > so->hold_max && !so->ended)
		pthread_cond_wait(&so->cv, &so->mu);
	so->held += job->bytes;
	job_append(&so->head, &so->tail, job);
	pthread_cond_broadcast(&so->cv);
	pthread_mutex_unlock(&so->mu);
	return 0;
}

/* Waits for the writer thread to write what it was given, reporting its
 * progress, and takes back its ranges and failures; 0, or -1 when its
 * writing failed. */
static int writer_end(struct build *b, struct ingest_opts_view *pv)
{
	struct slice_out *so = b->out;
	struct slice_job *job, *next;
	int rc;

	pthread_mutex_lock(&so->mu);
	so->closing = 1;
	pthread_cond_broadcast(&so->cv);
	while (!so->ended) {
		cond_wait_ms(&so->cv, &so->mu, 100);
		if (pv != NULL && !so->ended) {
			pthread_mutex_unlock(&so->mu);
			write_progress(b, pv, __atomic_load_n(&so->thread_written, __ATOMIC_RELAXED));
			pthread_mutex_lock(&so->mu);
		}
	}
	pthread_mutex_unlock(&so->mu);
	pthread_join(so->th, NULL);
	pthread_cond_destroy(&so->cv);
	pthread_mutex_destroy(&so->mu);
	so->threaded = 0;
	for (job = so->done; job != NULL; job = next) {
		next = job->next;
		if (job->n > 0)
			memcpy(VEC_AT(&so->ranges, struct depth_range, job->first_range), job->r,
			       job->n * sizeof(*job->r));
		job_free(job);
	}
	so->done = so->done_tail = NULL;
	rc = so->thread_failed ? -1 : 0;
	if (so->why[0] != '\0' && b->ss.spill != NULL)
		spill_fail_apart(b->ss.spill, so->why);
	return rc;
}

int build_write_thread(struct build *b)
{
	uint32_t from = b->out != NULL ? b->out->groups : 0;
	size_t first = b->out != NULL ? b->out->ranges.len : 0;
	struct slice_out *so;

	if (slices_order(b) != 0)
		return -1;
	so = b->out;
	if (!so->open && slices_open(b) != 0)
		return -1;
	if (!so->threaded && !so->alone &&
	    (b->ss.ids.rows != 0 || b->flows.count != 0 || writer_start(b) != 0))
		so->alone = 1;
	if (so->alone)
		return slices_write(b, b->pv);
	return writer_queue(b, from, first);
}

/* Ends the slices' writing (the track depths' table once every group is
 * written, when rc is 0) and frees it; rc, or -1 when closing failed. */
static int slices_close(struct build *b, struct ingest_opts_view *pv, int rc)
{
	struct slice_out *so = b->out;

	if (so == NULL)
		return rc;
	if (rc != 0)
		__atomic_store_n(&so->stop, 1, __ATOMIC_RELAXED);
	if (so->threaded && writer_end(b, pv) != 0)
		rc = -1;
	if (rc == 0)
		rc = slices_write(b, pv); /* what was ordered but not given to it */
	if (rc == 0 && so->by_id)
		rc = write_by_id(b, so, pv);
	if (so->open) {
		rc |= write_sorted_failed(b, &b->flows);
		if (bins_fini(&so->bb) != 0)
			rc = -1;
		if (lod_writer_fini(&so->lw) != 0)
			rc = -1;
		if (stacks_end(b) != 0)
			rc = -1;
	}
	if (so->oom)
		b->oom = 1;
	if (rc == 0 && !b->committed)
		rc = write_depths(b, so->ranges.data, so->ranges.len, &so->mb);
	if (pv != NULL)
		pv->base += b->ss.count;
	b->res->counts.slices = b->ss.count;
	vec_fini(&so->mb);
	vec_fini(&so->ranges);
	free(so);
	b->out = NULL;
	return rc;
}

int write_slices(struct build *b, struct ingest_opts_view *pv)
{
	return slices_close(b, pv, 0);
}

void build_write_abandon(struct build *b)
{
	slices_close(b, NULL, -1);
}
