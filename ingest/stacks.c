/*
 * The stack statistics of every track (stacks.h; schema/trace.sql,
 * track_names and track_stacks), built as the slices are written.
 *
 * Per name: count, wall, self (wall less the children's) and longest, as
 * query/area.c sums them. Per node, (parent node, name), its parent node
 * being the one of the slice's parent: exactly how query/flame.c merges
 * stacks. A slice without a parent one level up is a root; one at depth > 0
 * (an async operation on a lower lane) is kept apart by its depth (its
 * key's parent is -1 - depth), and the flame graph merges it with the
 * roots of its name, as a scan does.
 *
 * A track's nodes stop at STACKS_MAX_NODES (build.stack_nodes): once a
 * depth would pass it, no node of that depth or deeper is kept (the reader
 * then reads the slices). That is as many as a flame graph builds (its
 * limit), so that a graph of the whole trace never reads a slice of a
 * thread track: with 65536, a gen_fxt track of 1.4 M slices (450 K paths)
 * kept 6 depths of 7, and the graph as the viewer asks it (a million
 * nodes) read every slice of the 16 tracks asked, 7.6 s against 1.2 to
 * 1.7 s from their nodes; ingest took about 5% more time for it (the
 * seventh depth's lookups and rows) and 40 MB more memory.
 *
 * Memory: per track, the names' figures (an index by string id for the
 * whole trace, 4 bytes a string), the nodes (40 bytes) and their hash
 * (16 bytes a slot, at most 4 a node); and the node
 * and name of every slice of the last two depths by ordinal (8 bytes a
 * slice of the two largest adjacent groups), never per slice of the trace.
 */
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "build.h"
#include "stacks.h"

/* as many as a flame graph builds (its limit, at most 1000000) */
enum { STACKS_MAX_NODES = 1 << 20 };

/* A node's key (the parent node, >= 0, or -1 - depth for a root, as 32
 * bits) and name in one word: what the hash compares. */
#define SK_KN(key, name) ((uint64_t)(uint32_t)(int32_t)(key) << 32 | (uint32_t)(name))

struct sk_node {
	uint64_t kn;    /* SK_KN(key, name) */
	uint32_t depth;
	int64_t count, total, child, max; /* wall times, ns */
};

struct sk_slot {
	uint64_t kn;
	uint32_t node;  /* node + 1; 0: empty */
};

/* A slice whose node is still to be looked up. */
struct sk_pending {
	int32_t parent; /* its parent's node, -1: none */
	uint32_t name;
	int64_t wall;
};

/* Slices looked up together: nearly every lookup of a random trace misses
 * the cache, and fetching a batch's slots at once overlaps the misses. */
enum { SK_BATCH = 16 };

struct sk_name {
	uint32_t name;
	int64_t count, wall, self, max;
};

/* What each slice of one depth left for its children, by ordinal. */
struct sk_level {
	struct vec node; /* int32_t; -1: none kept */
	struct vec name; /* uint32_t */
};

struct stacks {
	struct bins names_rows, stacks_rows; /* track_names, track_stacks */
	struct dbwriter *s;       /* where they go */
	struct vec buf[2];     /* bytes: the last two tracks' packed nodes, until the writer has them */
	uint64_t ticket[2];    /* dbw_ticket() once each one's rows went */
	int next;              /* the buffer the next track takes */
	int64_t end_ns;        /* where an unterminated slice ends */
	uint32_t track, depth; /* the group being read */
	uint32_t group;        /* its index in the slice store, MDL_NONE before the first */
	uint32_t prev_group;   /* the group one level up on the track, MDL_NONE: none */
	struct sk_level prev, cur;
	uint32_t stop_depth;   /* no node is kept at this depth or deeper */
	size_t max_nodes;      /* a track's nodes at most (build.stack_nodes) */
	struct vec names;      /* struct sk_name: the track's names, in the order met */
	int32_t *name_at;      /* by string id: index in names + 1, 0: not met on this track */
	size_t nstrings;
	struct vec nodes;      /* struct sk_node, by node */
	struct sk_slot *slot;  /* open addressing on kn, with the key in the slot: one
				* cache line a probe (most slices are looked up; most
				* nodes of a random trace are met twice) */
	size_t mask;           /* slots - 1; slots, a power of two, at least twice the nodes */
	struct sk_pending pend[SK_BATCH]; /* the group's latest slices, nodes not looked up yet */
	int npend;
	int oom;
};

static size_t sk_slot_of(uint64_t kn, size_t mask)
{
	return (size_t)((kn * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* Doubles the slots (or makes them) and puts every node back; 0, or -1
 * when out of memory. */
static int sk_grow(struct stacks *sk)
{
	size_t mask = sk->slot ? sk->mask * 2 + 1 : 4095, i, j;
	struct sk_slot *slot = calloc(mask + 1, sizeof(*slot));

	if (slot == NULL)
		return -1;
	for (i = 0; i < sk->nodes.len; i++) {
		uint64_t kn = VEC_AT(&sk->nodes, struct sk_node, i)->kn;

		for (j = sk_slot_of(kn, mask); slot[j].node; j = (j + 1) & mask)
			;
		slot[j] = (struct sk_slot){ kn, (uint32_t)i + 1 };
	}
	free(sk->slot);
	sk->slot = slot;
	sk->mask = mask;
	return 0;
}

/* The node of (key, name) at the current depth, made if new; -1 when out
 * of memory. */
static int32_t sk_node_get(struct stacks *sk, int64_t key, uint32_t name)
{
	uint64_t kn = SK_KN(key, name);
	struct sk_node *nd;
	size_t j;

	if ((sk->nodes.len + 1) * 2 > sk->mask + 1 && sk_grow(sk) != 0)
		return -1;
	for (j = sk_slot_of(kn, sk->mask); sk->slot[j].node; j = (j + 1) & sk->mask)
		if (sk->slot[j].kn == kn)
			return (int32_t)sk->slot[j].node - 1;
	if ((nd = vec_push(&sk->nodes)) == NULL)
		return -1;
	nd->kn = kn;
	nd->depth = sk->depth;
	sk->slot[j] = (struct sk_slot){ kn, (uint32_t)sk->nodes.len };
	return (int32_t)sk->nodes.len - 1;
}

/* The figures of name on this track, made if new; NULL when out of memory
 * (or, never, when name is no string id). */
static struct sk_name *sk_name_get(struct stacks *sk, uint32_t name)
{
	struct sk_name *x;

	if (name >= sk->nstrings)
		return NULL;
	if (sk->name_at[name] == 0) {
		if ((x = vec_push(&sk->names)) == NULL)
			return NULL;
		x->name = name;
		sk->name_at[name] = (int32_t)sk->names.len;
	}
	return VEC_AT(&sk->names, struct sk_name, sk->name_at[name] - 1);
}

/* A node's words (tracedb/tracedb.h, "stack statistics"). */
static void sk_node_words(const struct sk_node *nd, uint64_t v[STACKS_WORDS])
{
	int32_t key = (int32_t)(nd->kn >> 32);

	v[STACKW_PARENT] = key >= 0 ? (uint64_t)key + 1 : 0;
	v[STACKW_DEPTH] = nd->depth;
	v[STACKW_NAME] = (uint32_t)nd->kn;
	v[STACKW_COUNT] = (uint64_t)nd->count;
	v[STACKW_TOTAL] = (uint64_t)nd->total;
	v[STACKW_CHILD] = (uint64_t)nd->child;
	v[STACKW_MAX] = (uint64_t)nd->max;
}

/* The track's nodes above stop_depth, packed TRACEDB_STACKS_CHUNK to a row
 * in the buffer of the track before the last once the writer has run its
 * rows (long since, as a whole track's slices went after them: waiting for
 * the last one's would empty the writer's queue); 0, or -1 when out of
 * memory or an insert failed. */
static int sk_put_nodes(struct stacks *sk)
{
	uint64_t(*v)[STACKS_WORDS];
	size_t i, n = 0, len = 0, k, packed, chunks;
	uint8_t *buf;
	int rc = -1;

	while (n < sk->nodes.len && VEC_AT(&sk->nodes, struct sk_node, n)->depth < sk->stop_depth)
		n++;
	chunks = (n + TRACEDB_STACKS_CHUNK - 1) / TRACEDB_STACKS_CHUNK;
	if (dbw_wait(sk->s, sk->ticket[sk->next]) != 0 ||
	    vec_reserve(&sk->buf[sk->next], chunks * tracedb_stacks_bound(TRACEDB_STACKS_CHUNK)) != 0 ||
	    (v = malloc(TRACEDB_STACKS_CHUNK * sizeof(*v))) == NULL)
		return -1;
	buf = sk->buf[sk->next].data;
	for (i = 0; i < n; i += k) {
		for (k = 0; k < TRACEDB_STACKS_CHUNK && i + k < n; k++)
			sk_node_words(VEC_AT(&sk->nodes, struct sk_node, i + k), v[k]);
		packed = tracedb_stacks_pack(buf + len, tracedb_stacks_bound(TRACEDB_STACKS_CHUNK), (const uint64_t(*)[STACKS_WORDS])v, k);
		if (packed == 0)
			goto out_free;
		bins_i64(&sk->stacks_rows, (int64_t)sk->track + 1);
		bins_i64(&sk->stacks_rows, (int64_t)i);
		bins_i64(&sk->stacks_rows, (int64_t)k);
		bins_blob(&sk->stacks_rows, buf + len, (int)packed);
		bins_row(&sk->stacks_rows);
		len += packed;
	}
	if (bins_flush(&sk->stacks_rows) != 0)
		goto out_free;
	sk->ticket[sk->next] = dbw_ticket(sk->s);
	sk->next ^= 1;
	rc = 0;
out_free:
	free(v);
	return rc;
}

/* The track's rows, then nothing kept for the next track. */
static void sk_put_track(struct stacks *sk)
{
	size_t i;

	for (i = 0; i < sk->names.len; i++) {
		const struct sk_name *x = VEC_AT(&sk->names, struct sk_name, i);

		bins_i64(&sk->names_rows, (int64_t)sk->track + 1);
		bins_i64(&sk->names_rows, x->name);
		bins_i64(&sk->names_rows, x->count);
		bins_i64(&sk->names_rows, x->wall);
		bins_i64(&sk->names_rows, x->self);
		bins_i64(&sk->names_rows, x->max);
		bins_row(&sk->names_rows);
		sk->name_at[x->name] = 0;
	}
	if (sk_put_nodes(sk) != 0)
		sk->oom = 1;
	if (sk->nodes.len > 0)
		memset(sk->slot, 0, (sk->mask + 1) * sizeof(*sk->slot));
	sk->nodes.len = sk->names.len = 0;
	sk->stop_depth = UINT32_MAX;
}

int stacks_begin(struct build *b)
{
	struct stacks *sk = calloc(1, sizeof(*sk));

	b->stacks = NULL;
	if (sk == NULL || (sk->name_at = calloc(b->m->soff.len + 1, sizeof(*sk->name_at))) == NULL) {
		free(sk);
		b->oom = 1;
		return -1;
	}
	sk->nstrings = b->m->soff.len + 1;
	sk->max_nodes = b->stack_nodes ? b->stack_nodes : STACKS_MAX_NODES;
	if (bins_init(&sk->names_rows, b->s, "track_names", 6) != 0) {
		free(sk->name_at);
		free(sk);
		return -1;
	}
	if (bins_init(&sk->stacks_rows, b->s, TRACEDB_STAGED("track_stacks"), 4) != 0) {
		bins_fini(&sk->names_rows);
		free(sk->name_at);
		free(sk);
		return -1;
	}
	vec_init(&sk->nodes, sizeof(struct sk_node));
	vec_init(&sk->names, sizeof(struct sk_name));
	vec_init(&sk->buf[0], 1);
	vec_init(&sk->buf[1], 1);
	vec_init(&sk->prev.node, sizeof(int32_t));
	vec_init(&sk->prev.name, sizeof(uint32_t));
	vec_init(&sk->cur.node, sizeof(int32_t));
	vec_init(&sk->cur.name, sizeof(uint32_t));
	sk->s = b->s;
	sk->end_ns = b->end_ns;
	sk->group = sk->prev_group = MDL_NONE;
	sk->stop_depth = UINT32_MAX;
	b->stacks = sk;
	return 0;
}

/* The key of a slice at the current depth whose parent is in node parent. */
static int64_t sk_key(const struct stacks *sk, int32_t parent)
{
	return parent >= 0 ? parent : -1 - (int64_t)sk->depth;
}

/* The slice's node, made if new, unless nodes stopped above its depth (-1);
 * -2 when out of memory. */
static int32_t sk_slice_node(struct stacks *sk, int32_t parent, uint32_t name)
{
	int32_t n;

	if (sk->depth >= sk->stop_depth)
		return -1;
	if ((n = sk_node_get(sk, sk_key(sk, parent), name)) < 0)
		return -2;
	/* past the limit: this depth's nodes go too (depth 0's are always kept) */
	if ((size_t)n >= sk->max_nodes && sk->depth > 0) {
		sk->stop_depth = sk->depth;
		return -1;
	}
	return n;
}

/* The pending slices' nodes and their figures, in order. */
static void sk_flush(struct stacks *sk)
{
	int i;

	if (sk->depth < sk->stop_depth && sk->slot != NULL)
		for (i = 0; i < sk->npend; i++)
			__builtin_prefetch(&sk->slot[sk_slot_of(SK_KN(sk_key(sk, sk->pend[i].parent), sk->pend[i].name),
								  sk->mask)]);
	for (i = 0; i < sk->npend && !sk->oom; i++) {
		const struct sk_pending *p = &sk->pend[i];
		int32_t n = sk_slice_node(sk, p->parent, p->name);

		if (n == -2) {
			sk->oom = 1;
			break;
		}
		if (n >= 0) {
			struct sk_node *nd = VEC_AT(&sk->nodes, struct sk_node, n);

			nd->count++;
			nd->total = tracedb_wrap_add(nd->total, p->wall);
			if (p->wall > nd->max)
				nd->max = p->wall;
		}
		if (p->parent >= 0) {
			struct sk_node *up = VEC_AT(&sk->nodes, struct sk_node, p->parent);

			up->child = tracedb_wrap_add(up->child, p->wall);
		}
		/* stacks_group made room for the group's slices */
		VEC_AT(&sk->cur.node, int32_t, sk->cur.node.len++)[0] = n;
	}
	sk->npend = 0;
}

void stacks_group(struct stacks *sk, uint32_t track, uint32_t depth, uint32_t group, uint64_t count)
{
	struct sk_level swap;

	if (sk == NULL || sk->oom)
		return;
	sk_flush(sk);
	if (sk->group != MDL_NONE && track != sk->track)
		sk_put_track(sk);
	/* the group just read holds this one's parents when one level up */
	sk->prev_group = sk->group != MDL_NONE && track == sk->track && depth == sk->depth + 1 ? sk->group : MDL_NONE;
	swap = sk->prev;
	sk->prev = sk->cur;
	sk->cur = swap;
	sk->cur.node.len = sk->cur.name.len = 0;
	sk->track = track;
	sk->depth = depth;
	sk->group = group;
	/* room for the group's slices */
	if (vec_reserve(&sk->cur.node, count) != 0 || vec_reserve(&sk->cur.name, count) != 0)
		sk->oom = 1;
}

void stacks_slice(struct stacks *sk, const struct ss_slice *s)
{
	int found = 0;
	int32_t parent = -1;
	int64_t end, wall;
	struct sk_name *x;

	if (sk == NULL || sk->oom)
		return;
	if (s->parent.group != MDL_NONE && s->parent.group == sk->prev_group && s->parent.ord < sk->prev.node.len) {
		found = 1;
		parent = *VEC_AT(&sk->prev.node, int32_t, s->parent.ord);
	}
	/* a whole-trace selection's part of the slice (query/area.c) */
	end = s->dur < 0 ? sk->end_ns : tracedb_slice_end(s->ts, s->dur);
	wall = tracedb_span(s->ts, end);
	if ((x = sk_name_get(sk, s->name)) == NULL) {
		sk->oom = 1;
		return;
	}
	x->count++;
	x->wall = tracedb_wrap_add(x->wall, wall);
	x->self = tracedb_wrap_add(x->self, wall);
	if (wall > x->max)
		x->max = wall;
	if (found) {
		struct sk_name *up =
			VEC_AT(&sk->names, struct sk_name, sk->name_at[*VEC_AT(&sk->prev.name, uint32_t, s->parent.ord)] - 1);

		up->self = tracedb_wrap_sub(up->self, wall);
	}
	VEC_AT(&sk->cur.name, uint32_t, sk->cur.name.len++)[0] = s->name;
	sk->pend[sk->npend++] = (struct sk_pending){ parent, s->name, wall };
	if (sk->npend == SK_BATCH)
		sk_flush(sk);
}

int stacks_end(struct build *b)
{
	struct stacks *sk = b->stacks;
	int rc;

	if (sk == NULL)
		return 0;
	sk_flush(sk);
	if (!sk->oom && sk->group != MDL_NONE)
		sk_put_track(sk);
	rc = bins_fini(&sk->names_rows);
	rc |= bins_fini(&sk->stacks_rows);
	/* the last two tracks' blobs are read by the writer until then */
	rc |= dbw_wait(sk->s, dbw_ticket(sk->s));
	if (sk->oom) {
		b->oom = 1;
		rc = -1;
	}
	vec_fini(&sk->prev.node);
	vec_fini(&sk->prev.name);
	vec_fini(&sk->cur.node);
	vec_fini(&sk->cur.name);
	vec_fini(&sk->names);
	vec_fini(&sk->nodes);
	vec_fini(&sk->buf[0]);
	vec_fini(&sk->buf[1]);
	free(sk->slot);
	free(sk->name_at);
	free(sk);
	b->stacks = NULL;
	return rc;
}
