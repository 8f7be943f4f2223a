/*
 * gen_xray: writes a synthetic XRay FDR log, as the runtime would for a
 * busy multi-threaded program, from a seed. It feeds the benchmark
 * (bench/xray/run.sh) and larger tests.
 *
 *   gen_xray [--version V] [--threads T] [--records N] [--buffer-size B]
 *            [--freq HZ] [--seed S] [--drop K] [--no-rotate] OUT
 *
 * Each thread runs a random call tree (at most 24 deep, 2000 functions
 * with a skewed popularity), one record a step, its clock moving 5..300
 * ticks a record; now and then an entry with arguments, a tail call, a
 * custom or typed event, a CPU migration, or a pause long enough to need a
 * TSCWrap. Records go into per-thread buffers of B bytes (16 KiB, the
 * runtime's default), started as the runtime starts them; a full buffer
 * is queued and a new one begun. The file holds the header, then the
 * queued buffers in ring order: rotated by a third, so that each thread's
 * buffers are out of time order (--no-rotate keeps them in order); --drop
 * K leaves out the K oldest buffers, as a ring that wrapped overwrites
 * them, so threads begin mid-stack. Generation stops after N function
 * records (default 1000000); calls still open stay open.
 *
 * Defaults: version 5, 8 threads, 2.4 GHz, seed 1. Exits 0, 1 when OUT
 * cannot be written, 2 on usage.
 */
#include "../xray_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 24, NFUNCS = 2000, MAX_THREADS = 1024, MARGIN = 96 };

struct gen_opts {
	uint16_t version;
	unsigned threads;
	uint64_t records, bufsize, freq, seed, drop;
	int rotate;
	const char *out;
};

struct gthread {
	struct xrw w;              /* the buffer being filled */
	uint64_t tsc;
	uint32_t stack[MAX_DEPTH];
	unsigned depth;
	uint16_t cpu;
};

/* The queued buffers, in the order they were filled. */
struct queue {
	uint8_t **data;
	size_t *len;
	size_t n, cap;
};

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static void queue_push(struct queue *q, struct xrw *w)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 1024;
		q->data = realloc(q->data, q->cap * sizeof(*q->data));
		q->len = realloc(q->len, q->cap * sizeof(*q->len));
		if (q->data == NULL || q->len == NULL)
			abort();
	}
	q->data[q->n] = w->buf;
	q->len[q->n++] = w->len;
	w->buf = NULL;
	w->len = w->cap = 0;
}

static void begin_buffer(const struct gen_opts *o, struct gthread *t, unsigned i)
{
	xrw_init(&t->w, o->version, o->bufsize);
	xrw_buffer_begin(&t->w, 1000 + i, 4242, t->tsc / o->freq, (uint32_t)(t->tsc % o->freq * 1000000 / o->freq),
			 t->cpu, t->tsc);
}

static void end_buffer(struct gthread *t, struct queue *q)
{
	xrw_buffer_end(&t->w);
	queue_push(q, &t->w);
	xrw_fini(&t->w);
}

/* A skewed function id: a few functions are called most of the time. */
static uint32_t pick_function(void)
{
	uint64_t r = rnd() % NFUNCS;

	return (uint32_t)(1 + (r * r) / NFUNCS);
}

static void step_enter(struct gthread *t)
{
	uint64_t args[2];
	uint32_t fid = pick_function();

	if (rnd() % 50 == 0) {
		args[0] = rnd();
		args[1] = rnd() % 1000;
		xrw_enter_args(&t->w, fid, t->tsc, args, 1 + (unsigned)(rnd() % 2));
	} else {
		xrw_enter(&t->w, fid, t->tsc);
	}
	t->stack[t->depth++] = fid;
}

static void step_exit(struct gthread *t)
{
	uint32_t fid = t->stack[--t->depth];

	if (rnd() % 20 == 0)
		xrw_tail_exit(&t->w, fid, t->tsc);
	else
		xrw_exit(&t->w, fid, t->tsc);
}

/* Occasional records other than calls. */
static void step_other(const struct gen_opts *o, struct gthread *t)
{
	static const char payload[] = "request=42 status=ok";
	uint64_t r = rnd() % 20000;

	if (r == 0) {
		xrw_custom(&t->w, t->tsc, t->cpu, payload, sizeof(payload) - 1);
	} else if (r == 1) {
		xrw_typed(&t->w, t->tsc, 3, payload, 8);
	} else if (r == 2) {
		t->cpu = (uint16_t)(rnd() % 64);
		xrw_new_cpu(&t->w, t->cpu, t->tsc);
	} else if (r == 3) {
		t->tsc += (UINT64_C(1) << 32) + rnd() % 1000; /* a long pause: TSCWrap */
	}
	(void)o;
}

/* One record of thread t; returns 1 for a function record. */
static int step(const struct gen_opts *o, struct gthread *t, unsigned i, struct queue *q)
{
	if (t->w.len + MARGIN > o->bufsize) {
		end_buffer(t, q);
		begin_buffer(o, t, i);
	}
	t->tsc += 5 + rnd() % 296;
	step_other(o, t);
	if (t->depth == 0 || (t->depth < MAX_DEPTH && rnd() % 2 == 0))
		step_enter(t);
	else
		step_exit(t);
	return 1;
}

static int write_log(const struct gen_opts *o, struct queue *q)
{
	FILE *f = fopen(o->out, "wb");
	struct xrw h;
	size_t i, first = (size_t)(o->drop < q->n ? o->drop : q->n), kept = q->n - first, k;
	int rc = 0;

	if (f == NULL)
		return -1;
	xrw_init(&h, o->version, o->bufsize);
	xrw_header(&h, o->freq);
	if (fwrite(h.buf, 1, h.len, f) != h.len)
		rc = -1;
	xrw_fini(&h);
	for (k = 0; k < kept && rc == 0; k++) {
		i = first + (o->rotate ? (k + kept / 3) % kept : k);
		if (fwrite(q->data[i], 1, q->len[i], f) != q->len[i])
			rc = -1;
	}
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static int parse(int argc, char **argv, struct gen_opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->version = 5;
	o->threads = 8;
	o->records = 1000000;
	o->bufsize = 16384;
	o->freq = 2400000000u;
	o->seed = 1;
	o->rotate = 1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--no-rotate") == 0) {
			o->rotate = 0;
			continue;
		}
		if (a[0] != '-') {
			o->out = a;
			continue;
		}
		if (v == NULL)
			return -1;
		i++;
		if (strcmp(a, "--version") == 0)
			o->version = (uint16_t)strtoul(v, NULL, 10);
		else if (strcmp(a, "--threads") == 0)
			o->threads = (unsigned)strtoul(v, NULL, 10);
		else if (strcmp(a, "--records") == 0)
			o->records = strtoull(v, NULL, 10);
		else if (strcmp(a, "--buffer-size") == 0)
			o->bufsize = strtoull(v, NULL, 10);
		else if (strcmp(a, "--freq") == 0)
			o->freq = strtoull(v, NULL, 10);
		else if (strcmp(a, "--seed") == 0)
			o->seed = strtoull(v, NULL, 10);
		else if (strcmp(a, "--drop") == 0)
			o->drop = strtoull(v, NULL, 10);
		else
			return -1;
	}
	if (o->out == NULL || o->version < 1 || o->version > 5 || o->threads < 1 || o->threads > MAX_THREADS ||
	    o->bufsize < 4 * MARGIN || o->freq == 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static struct gthread th[MAX_THREADS];
	struct queue q = { 0 };
	struct gen_opts o;
	uint64_t done = 0;
	unsigned i, best;
	int rc;

	if (parse(argc, argv, &o) != 0) {
		fprintf(stderr, "usage: gen_xray [--version V] [--threads T] [--records N] [--buffer-size B] "
				"[--freq HZ] [--seed S] [--drop K] [--no-rotate] OUT\n");
		return 2;
	}
	rng_state = o.seed;
	for (i = 0; i < o.threads; i++) {
		th[i].tsc = UINT64_C(1) << 40 | (uint64_t)i * 1000;
		th[i].cpu = (uint16_t)i;
		begin_buffer(&o, &th[i], i);
	}
	while (done < o.records) { /* the thread whose clock is behind runs */
		for (best = 0, i = 1; i < o.threads; i++)
			if (th[i].tsc < th[best].tsc)
				best = i;
		done += (uint64_t)step(&o, &th[best], best, &q);
	}
	for (i = 0; i < o.threads; i++)
		end_buffer(&th[i], &q);
	rc = write_log(&o, &q);
	for (i = 0; i < q.n; i++)
		free(q.data[i]);
	free(q.data);
	free(q.len);
	if (rc != 0) {
		perror(o.out);
		return 1;
	}
	return 0;
}
