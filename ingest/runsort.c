/*
 * The external sort of runsort.h: runs of one buffer each, sorted with
 * qsort and appended to the scratch file, merged with a binary heap on
 * their heads, each run read back a piece at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "runsort.h"

enum { RS_READ = 64 << 10 }; /* bytes read back from a run at a time, about */

/* A run in the scratch file. */
struct rs_run {
	uint64_t off;
	uint64_t n; /* records */
};

void rs_init(struct runsort *rs, size_t size, int (*cmp)(const void *, const void *))
{
	memset(rs, 0, sizeof(*rs));
	rs->size = size;
	rs->cmp = cmp;
	rs->last = MDL_NONE;
	vec_init(&rs->runs, sizeof(struct rs_run));
}

void rs_spill_to(struct runsort *rs, struct spill *sp, size_t bytes)
{
	rs->sp = sp;
	rs->run_max = bytes / rs->size ? bytes / rs->size : 1;
}

/* Sorts the buffer and appends it to the scratch file as a run. */
static int rs_spill(struct runsort *rs)
{
	struct rs_run *r = vec_push(&rs->runs);

	if (r == NULL)
		return -1;
	qsort(rs->buf, rs->len, rs->size, rs->cmp);
	r->n = rs->len;
	if (spill_write(rs->sp, rs->buf, rs->len * rs->size, &r->off) != 0)
		return -1;
	rs->len = 0;
	return 0;
}

/* Room for one more record: the buffer grows (to run_max at most). */
static int rs_grow(struct runsort *rs)
{
	size_t cap = rs->cap ? rs->cap + rs->cap / 2 : 256;
	uint8_t *p;

	if (rs->run_max && cap > rs->run_max)
		cap = rs->run_max;
	if (cap > SIZE_MAX / rs->size || (p = realloc(rs->buf, cap * rs->size)) == NULL)
		return -1;
	rs->buf = p;
	rs->cap = cap;
	return 0;
}

void *rs_push(struct runsort *rs)
{
	uint8_t *p;

	if (rs->failed)
		return NULL;
	if (rs->run_max && rs->len == rs->run_max && rs_spill(rs) != 0)
		goto out_fail;
	if (rs->len == rs->cap && rs_grow(rs) != 0)
		goto out_fail;
	p = rs->buf + rs->len++ * rs->size;
	memset(p, 0, rs->size);
	rs->count++;
	return p;
out_fail:
	rs->failed = 1;
	return NULL;
}

static const void *rs_head(const struct runsort *rs, uint32_t s)
{
	return rs->src[s].buf + rs->src[s].pos * rs->size;
}

/* Whether source a's head comes before b's (ties: the earlier run). */
static int rs_less(const struct runsort *rs, uint32_t a, uint32_t b)
{
	int c = rs->cmp(rs_head(rs, a), rs_head(rs, b));

	return c < 0 || (c == 0 && a < b);
}

/* Restores the heap order from position i down. */
static void rs_heap_down(struct runsort *rs, size_t i)
{
	uint32_t *h = rs->heap, t;
	size_t c;

	for (;;) {
		c = 2 * i + 1;
		if (c >= rs->nheap)
			return;
		if (c + 1 < rs->nheap && rs_less(rs, h[c + 1], h[c]))
			c++;
		if (!rs_less(rs, h[c], h[i]))
			return;
		t = h[i];
		h[i] = h[c];
		h[c] = t;
		i = c;
	}
}

/* Reads a run's next piece into its buffer: 0, or -1 when the read fails. */
static int rs_fill(struct runsort *rs, struct rs_src *s, size_t per)
{
	size_t n = s->left < per ? (size_t)s->left : per;

	if (spill_read(rs->sp, s->buf, n * rs->size, s->off) != 0)
		return -1;
	s->off += n * rs->size;
	s->left -= n;
	s->pos = 0;
	s->len = n;
	return 0;
}

int rs_finish(struct runsort *rs)
{
	size_t k = rs->runs.len, per = RS_READ / rs->size ? RS_READ / rs->size : 1, i;

	if (rs->failed)
		return -1;
	if (rs->len > 1) /* buf is NULL when nothing came */
		qsort(rs->buf, rs->len, rs->size, rs->cmp);
	if ((rs->src = calloc(k + 1, sizeof(*rs->src))) == NULL || (rs->heap = calloc(k + 1, sizeof(*rs->heap))) == NULL)
		goto out_fail;
	for (i = 0; i < k; i++) {
		const struct rs_run *r = VEC_AT(&rs->runs, struct rs_run, i);

		rs->src[i].off = r->off;
		rs->src[i].left = r->n;
		if ((rs->src[i].buf = malloc(per * rs->size)) == NULL || rs_fill(rs, &rs->src[i], per) != 0)
			goto out_fail;
		rs->heap[rs->nheap++] = (uint32_t)i;
	}
	rs->src[k].buf = rs->buf;
	rs->src[k].len = rs->len;
	if (rs->len > 0)
		rs->heap[rs->nheap++] = (uint32_t)k;
	for (i = rs->nheap / 2; i-- > 0;)
		rs_heap_down(rs, i);
	return 0;
out_fail:
	rs->failed = 1;
	return -1;
}

const void *rs_next(struct runsort *rs)
{
	struct rs_src *s;
	size_t per = RS_READ / rs->size ? RS_READ / rs->size : 1;

	if (rs->failed || rs->nheap == 0)
		return NULL;
	if (rs->last != MDL_NONE) { /* the record given last is done with: move its source on */
		s = &rs->src[rs->last];
		rs->last = MDL_NONE;
		if (++s->pos == s->len && s->left > 0 && rs_fill(rs, s, per) != 0) {
			rs->failed = 1;
			return NULL;
		}
		if (s->pos == s->len)
			rs->heap[0] = rs->heap[--rs->nheap];
		rs_heap_down(rs, 0);
		if (rs->nheap == 0)
			return NULL;
	}
	rs->last = rs->heap[0];
	return rs_head(rs, rs->last);
}

void rs_fini(struct runsort *rs)
{
	size_t i;

	if (rs->src != NULL)
		for (i = 0; i < rs->runs.len; i++)
			free(rs->src[i].buf);
	free(rs->src);
	free(rs->heap);
	free(rs->buf);
	vec_fini(&rs->runs);
	memset(rs, 0, sizeof(*rs));
	rs->last = MDL_NONE;
}
