/*
 * The name index and the name statistics (build.h): per slice name, every
 * slice by (ts, id) in chunks (table name_index, codec in tracedb.h), and
 * the name's count, total and longest duration and duration sketch (table
 * name_stats, sketch.h), which search across traces reads instead of every
 * slice. Both come from the notes the slice store took as slices finished
 * (slicestore.h), one name at a time, on a thread of their own while the
 * slices are written.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../tracedb/sketch.h"
#include "../tracedb/tracedb.h"
#include "build.h"

/* A slice of the name being indexed. */
struct name_ent {
	int64_t ts;
	uint64_t id;
	int64_t dur; /* -1: never ended */
};

static int name_ent_cmp(const void *a, const void *c)
{
	const struct name_ent *x = a, *y = c;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* How far back the insertion sort moves a note, and how many sorted runs
 * it may leave for merging. */
enum { NAME_MOVES = 32, NAME_RUNS = 1024 };

/* Merges the sorted runs v[a..b) and v[b..c) through tmp. */
static void merge_runs(struct name_ent *v, size_t a, size_t b, size_t c, struct name_ent *tmp)
{
	size_t i = 0, j = b, k = a, n = b - a;

	if (name_ent_cmp(&v[b - 1], &v[b]) <= 0)
		return;
	memcpy(tmp, v + a, n * sizeof(*v));
	while (i < n && j < c)
		v[k++] = name_ent_cmp(&v[j], &tmp[i]) < 0 ? v[j++] : tmp[i++];
	memcpy(v + k, tmp + i, (n - i) * sizeof(*v));
}

/*
 * Orders v[0..n) by (ts, id); *tmp (of *tmpcap entries) is grown for the
 * merges, if any, and kept for the next name. 0, or -1 when out of memory.
 * The store noted slices as they finished: about time order within a
 * thread, and (model.h, by_thread) thread after thread. An insertion sort
 * puts each note in place while that takes a few moves, and starts a new
 * sorted run where a note would go further back (a new thread, or a call
 * that encloses many of its name); then the runs are merged in pairs. A
 * name that leaves too many runs is handed to qsort instead.
 */
static int order_name(struct name_ent *v, size_t n, struct name_ent **tmp, size_t *tmpcap)
{
	size_t start[NAME_RUNS + 1], nruns = 1, i, j, k, w;
	struct name_ent *grown;

	start[0] = 0;
	for (i = 1; i < n; i++) {
		struct name_ent x = v[i];
		size_t lo = start[nruns - 1];

		for (k = i; k > lo && k + NAME_MOVES > i && name_ent_cmp(&v[k - 1], &x) > 0; k--)
			;
		if (k > lo && k + NAME_MOVES == i && name_ent_cmp(&v[k - 1], &x) > 0) {
			if (nruns == NAME_RUNS) {
				qsort(v, n, sizeof(*v), name_ent_cmp);
				return 0;
			}
			start[nruns++] = i; /* too far back: a run of its own begins */
			continue;
		}
		memmove(v + k + 1, v + k, (i - k) * sizeof(*v));
		v[k] = x;
	}
	if (nruns > 1 && *tmpcap < n) { /* most names need no merge, and no room for one */
		if ((grown = realloc(*tmp, n * sizeof(*grown))) == NULL)
			return -1;
		*tmp = grown;
		*tmpcap = n;
	}
	while (nruns > 1) {
		start[nruns] = n;
		for (j = 0, w = 0; j < nruns; j += 2) {
			if (j + 1 < nruns)
				merge_runs(v, start[j], start[j + 1], start[j + 2], *tmp);
			start[w++] = start[j];
		}
		nruns = w;
	}
	return 0;
}

/* Bytes of each of the two buffers rows' blobs go through; durations a name
 * keeps as they are before a dense sketch is worth its 15 KB. */
enum { NAME_BUF = 4 << 20, NAME_DENSE = 1024 };

/* What writing the names needs besides the build. */
struct name_out {
	struct build *b;
	struct bins index, stats;
	struct name_ent *v;  /* the name's slices, grown to the most used name */
	size_t cap;
	struct name_ent *tmp;/* order_name's room for merging */
	size_t tmpcap;
	int64_t *durs;       /* NAME_DENSE durations, for a small sketch */
	struct sketch *sk;   /* for a large one */
	uint8_t *buf[2];     /* blob bytes, until the writer has them */
	uint64_t ticket[2];  /* dbw_ticket() once each buffer's last row went */
	int cur;
	size_t used;         /* bytes of buf[cur] taken */
};

/* Room for need bytes of blobs: when the buffer in use is full, its rows go
 * to the writer, and the other one is taken once the writer has run the
 * rows that used it. NULL when an insert failed. */
static uint8_t *name_room(struct name_out *o, size_t need)
{
	if (NAME_BUF - o->used >= need)
		return o->buf[o->cur] + o->used;
	if (bins_flush(&o->index) != 0 || bins_flush(&o->stats) != 0)
		return NULL;
	o->ticket[o->cur] = dbw_ticket(o->b->s);
	o->cur ^= 1;
	if (dbw_wait(o->b->s, o->ticket[o->cur]) != 0)
		return NULL;
	o->used = 0;
	return o->buf[o->cur];
}

/* The name's slices v[0..n), in (ts, id) order, as name_index rows. */
static int put_index(struct name_out *o, uint32_t name, const struct name_ent *v, size_t n)
{
	size_t c, j;

	for (c = 0; c < n; c += TRACEDB_NAMES_CHUNK) {
		size_t m = n - c < TRACEDB_NAMES_CHUNK ? n - c : TRACEDB_NAMES_CHUNK;
		uint8_t *start = name_room(o, m * TRACEDB_NAMES_PAIR_MAX), *p = start;

		if (start == NULL)
			return -1;
		for (j = 1; j < m; j++)
			p += tracedb_names_put(p, v[c + j - 1].ts, (int64_t)v[c + j - 1].id, v[c + j].ts,
					       (int64_t)v[c + j].id);
		bins_i64(&o->index, name);
		bins_i64(&o->index, v[c].ts);
		bins_i64(&o->index, (int64_t)v[c].id);
		bins_i64(&o->index, (int64_t)m);
		bins_blob(&o->index, start, (int)(p - start));
		o->used += (size_t)(p - start);
		if (bins_row(&o->index) != 0)
			return -1;
	}
	return 0;
}

/* The name's statistics from its slices v[0..n) as a name_stats row: the
 * ended ones' total (stopping at INT64_MAX), longest and sketch. */
static int put_stats(struct name_out *o, uint32_t name, const struct name_ent *v, size_t n)
{
	uint8_t *start = name_room(o, SKETCH_MAX_BYTES);
	uint64_t ended = 0;
	int64_t total = 0, max = 0;
	size_t i, len;

	if (start == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		int64_t d = v[i].dur;

		if (d < 0)
			continue;
		total = d > INT64_MAX - total ? INT64_MAX : total + d;
		if (d > max)
			max = d;
		if (ended < NAME_DENSE)
			o->durs[ended] = d;
		ended++;
	}
	if (ended <= NAME_DENSE) {
		len = sketch_encode_values(o->durs, (size_t)ended, start);
	} else {
		memset(o->sk, 0, sizeof(*o->sk));
		for (i = 0; i < n; i++)
			if (v[i].dur >= 0)
				sketch_add(o->sk, v[i].dur);
		len = sketch_encode(o->sk, start);
	}
	bins_i64(&o->stats, name);
	bins_i64(&o->stats, (int64_t)n);
	bins_i64(&o->stats, (int64_t)ended);
	bins_i64(&o->stats, total);
	bins_i64(&o->stats, max);
	bins_blob(&o->stats, start, (int)len);
	o->used += len;
	return bins_row(&o->stats);
}

/* Reads name k's notes into o->v, their ids known now; the number read, or
 * -1 when out of memory or the scratch file could not be read. */
static long read_name(struct name_out *o, struct name_index *ni, uint32_t k, size_t n)
{
	struct ss_reader rd;
	struct ss_ref ref;
	size_t j;

	if (n > o->cap) {
		struct name_ent *grown = realloc(o->v, n * sizeof(*grown));

		if (grown == NULL) {
			ni->oom = 1;
			return -1;
		}
		o->v = grown;
		o->cap = n;
	}
	ss_read_name(&rd, &o->b->ss, k);
	for (j = 0; j < n && ss_read_note(&rd, &o->v[j].ts, &o->v[j].dur, &ref); j++)
		o->v[j].id = ss_id(&o->b->ss, ref);
	ss_read_done(&rd);
	return j < n ? -1 : (long)j;
}

/*
 * Every name's index rows and statistics row. The slice store noted each
 * name's slices as they finished; their ids are known now, and order_name
 * finishes each name's order. Blobs go through two buffers in turn: a full
 * one is handed on whole, and refilled once the writer has run its rows.
 */
static int write_names(struct name_index *ni)
{
	struct name_out o;
	struct build *b = ni->b;
	size_t k;
	int rc = -1, failed = 0, index_ok, stats_ok;

	memset(&o, 0, sizeof(o));
	o.b = b;
	if ((o.buf[0] = malloc(NAME_BUF)) == NULL || (o.buf[1] = malloc(NAME_BUF)) == NULL ||
	    (o.durs = malloc(NAME_DENSE * sizeof(*o.durs))) == NULL || (o.sk = malloc(sizeof(*o.sk))) == NULL) {
		ni->oom = 1;
		goto out_free;
	}
	index_ok = bins_init(&o.index, b->s, TRACEDB_STAGED("name_index"), 5) == 0;
	stats_ok = index_ok && bins_init(&o.stats, b->s, "name_stats", 6) == 0;
	if (!stats_ok) {
		if (index_ok)
			bins_fini(&o.index);
		goto out_free;
	}
	for (k = 0; k < b->ss.nnames && !failed && !__atomic_load_n(&b->cancel, __ATOMIC_RELAXED); k++) {
		size_t n = b->ss.names[k].count;

		if (n == 0)
			continue;
		if (read_name(&o, ni, (uint32_t)k, n) < 0) {
			failed = 1;
			break;
		}
		if (order_name(o.v, n, &o.tmp, &o.tmpcap) != 0) {
			ni->oom = 1;
			failed = 1;
			break;
		}
		failed = put_index(&o, (uint32_t)k, o.v, n) != 0 || put_stats(&o, (uint32_t)k, o.v, n) != 0;
	}
	rc = bins_fini(&o.index);
	rc |= bins_fini(&o.stats);
	/* both buffers are free once the writer has run every row of them */
	if (dbw_wait(b->s, dbw_ticket(b->s)) != 0)
		rc = -1;
out_free:
	free(o.v);
	free(o.tmp);
	free(o.durs);
	free(o.sk);
	free(o.buf[0]);
	free(o.buf[1]);
	return rc || failed || ni->oom ? -1 : 0;
}

static void *name_index_main(void *ctx)
{
	struct name_index *ni = ctx;

	/* the writer is the bottleneck while slices are written: this thread
	 * should take the time the build's thread leaves, not the writer's */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
	ni->rc = write_names(ni);
	heap_release(); /* what the names' sort held (util.h) */
	return NULL;
}

void name_index_start(struct name_index *ni, struct build *b)
{
	memset(ni, 0, sizeof(*ni));
	ni->b = b;
	ni->started = pthread_create(&ni->th, NULL, name_index_main, ni) == 0;
}

int name_index_end(struct name_index *ni)
{
	if (ni->started)
		pthread_join(ni->th, NULL);
	else
		ni->rc = write_names(ni);
	if (ni->oom)
		ni->b->oom = 1;
	return ni->rc;
}
