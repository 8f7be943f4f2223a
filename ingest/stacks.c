/*
 * The stack statistics of every track (stacks.h; schema/trace.sql,
 * track_names and track_stacks), built as the slices are written.
 *
 * Per name: count, wall, self (wall less the children's) and longest, as
 * query/area.c sums them. Per node, (parent node, name), its parent node
 * being the one of the slice's parent: exactly how query/flame.c merges
 * stacks. A slice without a parent one level up is a root; one at depth > 0
 * is kept apart by its depth (its key's parent is -1 - depth), since a scan
 * finds no parent for it either and the flame graph leaves it out.
 *
 * A track's nodes stop at STACKS_MAX_NODES: once a depth would pass it, no
 * node of that depth or deeper is kept (the reader then reads the slices),
 * so a trace of random stacks costs no more than a few depths' rows.
 *
 * Memory: per track, the names' figures (an index by string id for the
 * whole trace, 4 bytes a string), the nodes and their hash; and the node
 * and name of every slice of the last two depths by ordinal (8 bytes a
 * slice of the two largest adjacent groups), never per slice of the trace.
 */
#include <stdlib.h>
#include <string.h>

#include "../tracedb/tracedb.h"
#include "build.h"
#include "stacks.h"

enum { STACKS_MAX_NODES = 65536 };

struct sk_node {
	int64_t key;   /* the parent node (>= 0), or -1 - depth for a root */
	uint32_t name;
	uint32_t depth;
	int64_t count, total, child, max; /* wall times, ns */
};

struct sk_name {
	uint32_t name;
	int64_t count, wall, self, max;
};

/* What each slice of one depth left for its children, by ordinal. */
struct sk_level {
	int32_t *node;  /* -1: none kept */
	uint32_t *name;
	size_t n;
};

struct stacks {
	struct bins names_rows, stacks_rows; /* track_names, track_stacks */
	struct store *s;       /* where they go */
	uint8_t *buf;          /* the last track's packed nodes, until the writer has them */
	size_t bufcap;
	uint64_t ticket;       /* store_ticket() once the last track's rows went */
	int64_t end_ns;        /* where an unterminated slice ends */
	uint32_t track, depth; /* the group being read */
	uint32_t group;        /* its index in the slice store, MDL_NONE before the first */
	uint32_t prev_group;   /* the group one level up on the track, MDL_NONE: none */
	struct sk_level prev, cur;
	size_t cap;            /* ordinals prev and cur have room for */
	uint32_t stop_depth;   /* no node is kept at this depth or deeper */
	struct sk_name *name;  /* the track's names, in the order met */
	size_t nname, namecap;
	int32_t *name_at;      /* by string id: index in name + 1, 0: not met on this track */
	size_t nstrings;
	struct sk_node *node;  /* the track's tree, nodes in the order met */
	size_t n, ncap;
	int32_t *slot;         /* open addressing on (key, name): node index + 1 */
	size_t slots;          /* a power of two, at least twice n; 0 before the first */
	int oom;
};

static size_t sk_hash(int64_t key, uint32_t name, size_t mask)
{
	uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull ^ (uint64_t)name * 0xC2B2AE3D27D4EB4Full;

	return (size_t)(h ^ h >> 29) & mask;
}

/* Doubles the hash (or makes it); 0, or -1 when out of memory. */
static int sk_rehash(struct stacks *sk)
{
	size_t slots = sk->slots ? sk->slots * 2 : 1024, i, j;
	int32_t *slot = calloc(slots, sizeof(*slot));

	if (slot == NULL)
		return -1;
	for (i = 0; i < sk->n; i++) {
		for (j = sk_hash(sk->node[i].key, sk->node[i].name, slots - 1); slot[j]; j = (j + 1) & (slots - 1))
			;
		slot[j] = (int32_t)i + 1;
	}
	free(sk->slot);
	sk->slot = slot;
	sk->slots = slots;
	return 0;
}

/* The node of (key, name) at the current depth, made if new; -1 when out
 * of memory. */
static int32_t sk_node_get(struct stacks *sk, int64_t key, uint32_t name)
{
	size_t j;

	if ((sk->n + 1) * 2 > sk->slots && sk_rehash(sk) != 0)
		return -1;
	for (j = sk_hash(key, name, sk->slots - 1); sk->slot[j]; j = (j + 1) & (sk->slots - 1)) {
		const struct sk_node *nd = &sk->node[sk->slot[j] - 1];

		if (nd->key == key && nd->name == name)
			return sk->slot[j] - 1;
	}
	if (sk->n == sk->ncap) {
		size_t cap = sk->ncap ? sk->ncap * 2 : 256;
		struct sk_node *grown = realloc(sk->node, cap * sizeof(*grown));

		if (grown == NULL)
			return -1;
		sk->node = grown;
		sk->ncap = cap;
	}
	sk->node[sk->n] = (struct sk_node){ key, name, sk->depth, 0, 0, 0, 0 };
	sk->slot[j] = (int32_t)sk->n + 1;
	return (int32_t)sk->n++;
}

/* The figures of name on this track, made if new; NULL when out of memory. */
static struct sk_name *sk_name_get(struct stacks *sk, uint32_t name)
{
	if (name >= sk->nstrings) { /* never: names are string ids */
		size_t n = (size_t)name + 1024;
		int32_t *grown = realloc(sk->name_at, n * sizeof(*grown));

		if (grown == NULL)
			return NULL;
		memset(grown + sk->nstrings, 0, (n - sk->nstrings) * sizeof(*grown));
		sk->name_at = grown;
		sk->nstrings = n;
	}
	if (sk->name_at[name] == 0) {
		if (sk->nname == sk->namecap) {
			size_t cap = sk->namecap ? sk->namecap * 2 : 64;
			struct sk_name *grown = realloc(sk->name, cap * sizeof(*grown));

			if (grown == NULL)
				return NULL;
			sk->name = grown;
			sk->namecap = cap;
		}
		sk->name[sk->nname] = (struct sk_name){ name, 0, 0, 0, 0 };
		sk->name_at[name] = (int32_t)++sk->nname;
	}
	return &sk->name[sk->name_at[name] - 1];
}

/* The track's nodes above stop_depth, packed TRACEDB_STACKS_CHUNK to a row
 * in sk->buf once the writer is done with the last track's; 0, or -1 when
 * out of memory or an insert failed. */
static int sk_put_nodes(struct stacks *sk)
{
	uint64_t prev[STACKS_WORDS], v[STACKS_WORDS];
	size_t i, n = 0, len = 0, start = 0;

	while (n < sk->n && sk->node[n].depth < sk->stop_depth)
		n++;
	if (store_wait(sk->s, sk->ticket) != 0)
		return -1;
	if (n * STACKS_RECORD_MAX > sk->bufcap) {
		uint8_t *grown = realloc(sk->buf, n * STACKS_RECORD_MAX);

		if (grown == NULL)
			return -1;
		sk->buf = grown;
		sk->bufcap = n * STACKS_RECORD_MAX;
	}
	for (i = 0; i < n; i++) {
		const struct sk_node *nd = &sk->node[i];

		if (i % TRACEDB_STACKS_CHUNK == 0)
			memset(prev, 0, sizeof(prev));
		v[STACKW_PARENT] = (uint64_t)(nd->key >= 0 ? nd->key + 1 : 0);
		v[STACKW_DEPTH] = nd->depth;
		v[STACKW_NAME] = nd->name;
		v[STACKW_COUNT] = (uint64_t)nd->count;
		v[STACKW_TOTAL] = (uint64_t)nd->total;
		v[STACKW_CHILD] = (uint64_t)nd->child;
		v[STACKW_MAX] = (uint64_t)nd->max;
		len += tracedb_stacks_put(sk->buf + len, prev, v);
		if (i + 1 == n || (i + 1) % TRACEDB_STACKS_CHUNK == 0) {
			bins_i64(&sk->stacks_rows, (int64_t)sk->track + 1);
			bins_i64(&sk->stacks_rows, (int64_t)(i - i % TRACEDB_STACKS_CHUNK));
			bins_i64(&sk->stacks_rows, (int64_t)(i % TRACEDB_STACKS_CHUNK + 1));
			bins_blob(&sk->stacks_rows, sk->buf + start, (int)(len - start));
			bins_row(&sk->stacks_rows);
			start = len;
		}
	}
	if (bins_flush(&sk->stacks_rows) != 0)
		return -1;
	sk->ticket = store_ticket(sk->s);
	return 0;
}

/* The track's rows, then nothing kept for the next track. */
static void sk_put_track(struct stacks *sk)
{
	size_t i;

	for (i = 0; i < sk->nname; i++) {
		const struct sk_name *x = &sk->name[i];

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
	if (sk->n > 0)
		memset(sk->slot, 0, sk->slots * sizeof(*sk->slot));
	sk->n = sk->nname = 0;
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
	if (bins_init(&sk->names_rows, b->s, "track_names", 6) != 0) {
		free(sk->name_at);
		free(sk);
		return -1;
	}
	if (bins_init(&sk->stacks_rows, b->s, "track_stacks", 4) != 0) {
		bins_fini(&sk->names_rows);
		free(sk->name_at);
		free(sk);
		return -1;
	}
	sk->s = b->s;
	sk->end_ns = b->end_ns;
	sk->group = sk->prev_group = MDL_NONE;
	sk->stop_depth = UINT32_MAX;
	b->stacks = sk;
	return 0;
}

/* Room for count ordinals in prev (keeping what it holds) and cur. */
static int sk_level_room(struct stacks *sk, uint64_t count)
{
	struct sk_level *l[2] = { &sk->prev, &sk->cur };
	int i;

	for (i = 0; i < 2 && count > sk->cap; i++) {
		int32_t *node = realloc(l[i]->node, count * sizeof(*node));
		uint32_t *name;

		if (node == NULL)
			return -1;
		l[i]->node = node;
		if ((name = realloc(l[i]->name, count * sizeof(*name))) == NULL)
			return -1;
		l[i]->name = name;
	}
	if (count > sk->cap)
		sk->cap = count;
	return 0;
}

void stacks_group(struct stacks *sk, uint32_t track, uint32_t depth, uint32_t group, uint64_t count)
{
	struct sk_level swap;

	if (sk == NULL || sk->oom)
		return;
	if (sk->group != MDL_NONE && track != sk->track)
		sk_put_track(sk);
	/* the group just read holds this one's parents when one level up */
	sk->prev_group = sk->group != MDL_NONE && track == sk->track && depth == sk->depth + 1 ? sk->group : MDL_NONE;
	swap = sk->prev;
	sk->prev = sk->cur;
	sk->cur = swap;
	sk->cur.n = 0;
	sk->track = track;
	sk->depth = depth;
	sk->group = group;
	if (sk_level_room(sk, count) != 0)
		sk->oom = 1;
}

/* The slice's node, made if new, unless nodes stopped above its depth (-1);
 * -2 when out of memory. */
static int32_t sk_slice_node(struct stacks *sk, int32_t parent, uint32_t name)
{
	int32_t n;

	if (sk->depth >= sk->stop_depth)
		return -1;
	if ((n = sk_node_get(sk, parent >= 0 ? parent : -1 - (int64_t)sk->depth, name)) < 0)
		return -2;
	/* past the limit: this depth's nodes go too (depth 0's are always kept) */
	if ((size_t)n >= STACKS_MAX_NODES && sk->depth > 0) {
		sk->stop_depth = sk->depth;
		return -1;
	}
	return n;
}

void stacks_slice(struct stacks *sk, const struct ss_slice *s)
{
	int found = 0;
	int32_t parent = -1, n;
	int64_t end, wall;
	struct sk_name *x;

	if (sk == NULL || sk->oom)
		return;
	if (s->parent.group != MDL_NONE && s->parent.group == sk->prev_group && s->parent.ord < sk->prev.n) {
		found = 1;
		parent = sk->prev.node[s->parent.ord];
	}
	/* a whole-trace selection's part of the slice (query/area.c) */
	end = s->dur < 0 ? sk->end_ns : s->ts + s->dur;
	wall = end > s->ts ? end - s->ts : 0;
	if ((x = sk_name_get(sk, s->name)) == NULL || (n = sk_slice_node(sk, parent, s->name)) == -2) {
		sk->oom = 1;
		return;
	}
	x->count++;
	x->wall += wall;
	x->self += wall;
	if (wall > x->max)
		x->max = wall;
	if (found)
		sk->name[sk->name_at[sk->prev.name[s->parent.ord]] - 1].self -= wall;
	if (n >= 0) {
		struct sk_node *nd = &sk->node[n];

		nd->count++;
		nd->total += wall;
		if (wall > nd->max)
			nd->max = wall;
	}
	if (parent >= 0)
		sk->node[parent].child += wall;
	sk->cur.node[sk->cur.n] = n;
	sk->cur.name[sk->cur.n++] = s->name;
}

int stacks_end(struct build *b)
{
	struct stacks *sk = b->stacks;
	int rc;

	if (sk == NULL)
		return 0;
	if (!sk->oom && sk->group != MDL_NONE)
		sk_put_track(sk);
	rc = bins_fini(&sk->names_rows);
	rc |= bins_fini(&sk->stacks_rows);
	/* the last track's blobs are read by the writer until then */
	rc |= store_wait(sk->s, store_ticket(sk->s));
	if (sk->oom) {
		b->oom = 1;
		rc = -1;
	}
	free(sk->prev.node);
	free(sk->prev.name);
	free(sk->cur.node);
	free(sk->cur.name);
	free(sk->name);
	free(sk->name_at);
	free(sk->node);
	free(sk->slot);
	free(sk->buf);
	free(sk);
	b->stacks = NULL;
	return rc;
}
