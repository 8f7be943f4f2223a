/*
 * Flame graph of an area selection: the call stacks of the chosen tracks
 * inside [start, end], merged by name path (root name, child name, ...).
 * A slice without a parent is a root whatever its depth: an async track's
 * lane is a layout row, not a call depth, so each operation on it starts a
 * stack of its own (as in Perfetto's slice flame graph).
 * A node's total is the wall time its slices spend inside the range, its
 * self the total less its children's totals. Built in one pass over the
 * slices (qry_area_scan): each slice is tagged with its node, so a child
 * finds its path through the parent's tag.
 *
 * Over the whole trace, each track's stacks were merged at ingest
 * (track_stacks, nodes in the order a scan meets them), and merging the
 * tracks' nodes in that order builds the same graph node by node as the
 * scan of their slices would. A track may keep only its first depths; once
 * the graph is full, deeper nodes can add nothing (on a thread track: on an
 * async one a deeper slice may be a root), else that track's slices are
 * read (and only that track's: the graph is built track by track, each
 * from its nodes or from its slices).
 */
#include "../tracedb/tracedb.h"
#include "cursor.h"
#include "keymap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Frames narrower than 1/FLAME_MIN_PARTS of the selection's time are left out. */
enum { FLAME_MIN_PARTS = 20000 };

struct fnode {
	int64_t name_id;
	int32_t parent; /* -1: a root */
	int32_t depth;
	int64_t total, count;
	int64_t child_total; /* its children's totals: summed by flame_close */
};

struct flame {
	struct fnode *node;
	size_t n, cap;
	struct qkeymap map; /* (parent << 32 | name_id) -> node index + 1 (string
			     * ids are 32 bits: the model's) */
	size_t max_nodes;
	int32_t max_depth; /* the deepest node's depth, -1 before the first */
	int truncated;
};

static uint64_t flame_key(int32_t parent, int64_t name_id)
{
	return (uint64_t)(uint32_t)parent << 32 | (uint32_t)name_id;
}

/* The node of name under parent, made if new; -1 when full, -2 on oom. */
static int32_t flame_node(struct flame *f, int32_t parent, int64_t name_id)
{
	uint64_t key = flame_key(parent, name_id);
	uint32_t i = qkm_find(&f->map, key);

	if (i != 0)
		return (int32_t)i - 1;
	if (f->n == f->max_nodes) {
		f->truncated = 1;
		return -1;
	}
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 1024;
		struct fnode *nodes = realloc(f->node, cap * sizeof(*nodes));

		if (nodes == NULL)
			return -2;
		f->node = nodes;
		f->cap = cap;
	}
	if (f->n >= INT32_MAX - 1 || qkm_intern(&f->map, key, (uint32_t)f->n + 1) == 0)
		return -2;
	f->node[f->n] = (struct fnode){ name_id, parent, parent < 0 ? 0 : f->node[parent].depth + 1, 0, 0, 0 };
	if (f->node[f->n].depth > f->max_depth)
		f->max_depth = f->node[f->n].depth;
	return (int32_t)f->n++;
}

/* The parent node's index for flame_key: -1 for a root. */
static int32_t flame_parent(int32_t parent_tag)
{
	return parent_tag == QRY_AREA_ROOT ? -1 : parent_tag;
}

/* The node of name under the node parent_tag (QRY_AREA_ROOT: a root, at
 * whatever depth its slice lies), made if new; -1 when there is none
 * (cut), -2 on oom. */
static int32_t flame_tag(struct flame *f, int32_t parent_tag, int64_t name_id)
{
	/* a slice whose parent is outside the graph (cut) starts no path */
	if (parent_tag < 0 && parent_tag != QRY_AREA_ROOT)
		return -1;
	return flame_node(f, flame_parent(parent_tag), name_id);
}

/* Adds count slices, wall ns in all, to node (the parents' child_total come
 * once all is added: flame_close). */
static void flame_count(struct flame *f, int32_t node, int64_t count, int64_t wall)
{
	f->node[node].total = tracedb_wrap_add(f->node[node].total, wall);
	f->node[node].count += count;
}

/* Adds count slices of name, wall ns in all, under the node parent_tag
 * (as flame_tag); returns their node, -1 when they are cut, -2 on oom. */
static int32_t flame_add(struct flame *f, int32_t parent_tag, int64_t name_id, int64_t count, int64_t wall)
{
	int32_t node = flame_tag(f, parent_tag, name_id);

	if (node >= 0)
		flame_count(f, node, count, wall);
	return node;
}

/* Sums each node's children's totals into it, once every slice is added
 * (the sums wrap: in any order, the same). */
static void flame_close(struct flame *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->node[i].parent >= 0)
			f->node[f->node[i].parent].child_total =
				tracedb_wrap_add(f->node[f->node[i].parent].child_total, f->node[i].total);
}

/* A batch of slices in three passes, each fetching ahead what the next
 * reads: the map's slots, then the nodes (both far bigger than the cache
 * on a graph of many paths). Nodes are made in the order of the slices. */
static int flame_visit(void *ctx, const struct qry_area_slice *s, size_t n, int32_t *tag)
{
	struct flame *f = ctx;
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i].parent_tag >= 0 || s[i].parent_tag == QRY_AREA_ROOT)
			qkm_prefetch(&f->map, flame_key(flame_parent(s[i].parent_tag), s[i].name_id));
	for (i = 0; i < n; i++) {
		if ((tag[i] = flame_tag(f, s[i].parent_tag, s[i].name_id)) == -2)
			return -1;
		if (tag[i] >= 0)
			__builtin_prefetch(&f->node[tag[i]], 1);
	}
	for (i = 0; i < n; i++)
		if (tag[i] >= 0)
			flame_count(f, tag[i], 1, s[i].wall);
	return 0;
}

/* What reading one track's stored nodes needs. A read that fails, or a row
 * not as ingest writes them (SQLITE_CORRUPT), is left in its cursor and
 * stops the graph (stored_failed). */
struct stored {
	struct qcur nodes;  /* a track's rows of nodes, in order */
	struct qcur last;   /* its last row */
	struct qcur depth;  /* its deepest slice depth, and whether it is async */
	struct sadded { /* by node of the track: */
		int32_t tag;   /* what flame_add returned */
		int64_t count, total; /* what it added there (stored_undo) */
	} *added;
	size_t cap;
	struct snode {  /* one row's nodes, decoded */
		int64_t parent, depth, name, count, total;
	} row[TRACEDB_STACKS_CHUNK];
	uint64_t rec[TRACEDB_STACKS_CHUNK][STACKS_WORDS]; /* a row's nodes, unpacked */
	int lanes;      /* the track is async: its roots lie on every lane, so a
			 * node's depth in the graph is not its slice's depth */
};

/* Whether the graph can take no node of the track deeper than depth: it is
 * full, and a node was already refused (so nothing new is left to tell).
 * Never on an async track: a deeper slice may be a root, and add to one. */
static int flame_closed_below(const struct flame *f, const struct stored *sd, int64_t depth)
{
	return !sd->lanes && f->n == f->max_nodes && f->truncated && depth >= f->max_depth;
}

/* Adds the nodes of one track_stacks row (first node i, count of them)
 * after the track's nodes before i; moves *i and *depth past them.
 * QRY_OK, or an error; *closed = 1 when the graph can take nothing from
 * the track's later nodes. */
static int stored_row(struct flame *f, struct stored *sd, int64_t *i, int64_t *depth, int *closed)
{
	int len;
	const void *blob = qcur_blob(&sd->nodes, 2, &len);
	int64_t k, n = qcur_int(&sd->nodes, 1);

	if (qcur_int(&sd->nodes, 0) != *i || n < 1 || n > TRACEDB_STACKS_CHUNK ||
	    tracedb_stacks_unpack(blob, (size_t)len, sd->rec) != n)
		return QRY_EDB; /* not as ingest writes them */
	if ((size_t)(*i + n) > sd->cap) {
		size_t cap = (size_t)(*i + n) * 2;
		struct sadded *grown = realloc(sd->added, cap * sizeof(*grown));

		if (grown == NULL)
			return QRY_ENOMEM;
		sd->added = grown;
		sd->cap = cap;
	}
	for (k = 0; k < n; k++) {
		struct snode *d = &sd->row[k];
		const uint64_t *v = sd->rec[k];

		if ((d->parent = (int64_t)v[STACKW_PARENT] - 1) >= *i + k)
			return QRY_EDB;
		d->depth = (int64_t)v[STACKW_DEPTH];
		d->name = (int64_t)v[STACKW_NAME];
		d->count = (int64_t)v[STACKW_COUNT];
		d->total = (int64_t)v[STACKW_TOTAL];
	}
	/* the map's slots of the nodes whose parent's node is known, fetched
	 * ahead (a parent in this row gets its node below) */
	for (k = 0; k < n; k++) {
		const struct snode *d = &sd->row[k];

		if (d->parent < *i && (d->parent < 0 || sd->added[d->parent].tag >= 0))
			qkm_prefetch(&f->map, flame_key(d->parent < 0 ? -1 : sd->added[d->parent].tag, d->name));
	}
	for (k = 0; k < n; k++, ++*i) {
		const struct snode *d = &sd->row[k];
		int32_t tag;

		*depth = d->depth;
		if ((*closed = flame_closed_below(f, sd, *depth - 1)) != 0)
			return QRY_OK; /* and so are the later nodes, deeper still */
		tag = flame_add(f, d->parent >= 0 ? sd->added[d->parent].tag : QRY_AREA_ROOT, d->name, d->count,
				d->total);
		if (tag == -2)
			return QRY_ENOMEM;
		sd->added[*i] = (struct sadded){ tag, d->count, d->total };
	}
	return QRY_OK;
}

static int stored_failed(const struct stored *sd)
{
	return sd->nodes.err || sd->last.err || sd->depth.err;
}

/* The track's deepest slice depth (tracks.max_depth), -1 for none; sets
 * sd->lanes. */
static void stored_max_depth(struct stored *sd, int64_t track, int64_t *max_depth)
{
	*max_depth = -1;
	sd->lanes = 0;
	qcur_bind(&sd->depth, 1, track);
	if (qcur_step(&sd->depth)) {
		*max_depth = qcur_int(&sd->depth, 0);
		sd->lanes = qcur_int(&sd->depth, 1) != 0;
	}
	qcur_reset(&sd->depth);
}

/* Adds one track's stored nodes, the first *added of them by the end;
 * *ok = 0 when they do not suffice (the track keeps fewer depths than the
 * graph could use: its slices reach max_depth). QRY_OK, or QRY_ENOMEM; a
 * read error or a damaged row is left in sd->nodes. */
static int stored_track(struct flame *f, struct stored *sd, int64_t track, int64_t max_depth, int *ok,
			int64_t *added)
{
	int64_t i = 0, depth = -1;
	int rc = QRY_OK, closed = 0;

	*ok = 1;
	*added = 0;
	qcur_bind(&sd->nodes, 1, track);
	while (rc == QRY_OK && !closed && qcur_step(&sd->nodes)) {
		rc = stored_row(f, sd, &i, &depth, &closed);
		*added = i;
	}
	qcur_reset(&sd->nodes);
	if (rc == QRY_EDB) { /* not as ingest writes them */
		qcur_fail(&sd->nodes, SQLITE_CORRUPT);
		rc = QRY_OK;
	}
	if (rc != QRY_OK || closed || sd->nodes.err)
		return rc;
	/* no node: no slice (depth 0's nodes are always kept) */
	*ok = i == 0 || depth >= max_depth || flame_closed_below(f, sd, depth);
	return QRY_OK;
}

/* Takes back what a track's first `added` stored nodes gave the graph:
 * their counts and times, the nodes they made (n0 were there before),
 * the truncated flag and the deepest depth as they were. */
static int stored_undo(struct flame *f, const struct stored *sd, int64_t added, size_t n0, int truncated0,
		       int32_t max_depth0)
{
	int64_t i;
	size_t k;

	for (i = 0; i < added; i++) {
		const struct sadded *a = &sd->added[i];

		if (a->tag >= 0 && (size_t)a->tag < n0) {
			f->node[a->tag].total = tracedb_wrap_sub(f->node[a->tag].total, a->total);
			f->node[a->tag].count -= a->count;
		}
	}
	if (f->n > n0) { /* the map has no removal: made again */
		qkm_free(&f->map);
		for (k = 0; k < n0; k++)
			if (qkm_intern(&f->map, flame_key(f->node[k].parent, f->node[k].name_id), (uint32_t)k + 1) == 0)
				return QRY_ENOMEM;
		f->n = n0;
	}
	f->truncated = truncated0;
	f->max_depth = max_depth0;
	return QRY_OK;
}

/* How a track's part of the graph is built (stored_plan). */
enum { PLAN_SLICES, PLAN_NODES, PLAN_TRY_NODES };

/* From the track's stored nodes (PLAN_NODES) when it keeps every depth
 * (its nodes come depth by depth: its last node's depth tells) or the
 * graph can take nothing deeper than they reach; else from its slices
 * (PLAN_SLICES), unless its nodes may fill the graph, which then could
 * take nothing deeper (PLAN_TRY_NODES: known once they are added, and
 * taken back if not). *max_depth: the track's deepest slice depth. A read
 * error or a damaged row is left in sd's cursors. */
static void stored_plan(struct flame *f, struct stored *sd, int64_t track, int *plan, int64_t *max_depth)
{
	int64_t last = -1, nodes = 0;

	qcur_bind(&sd->last, 1, track);
	if (qcur_step(&sd->last)) {
		int len, n;
		const void *blob = qcur_blob(&sd->last, 2, &len);

		nodes = qcur_int(&sd->last, 0) + qcur_int(&sd->last, 1);
		if ((n = tracedb_stacks_unpack(blob, (size_t)len, sd->rec)) < 0)
			qcur_fail(&sd->last, SQLITE_CORRUPT);
		else
			last = (int64_t)sd->rec[n - 1][STACKW_DEPTH];
	}
	qcur_reset(&sd->last);
	stored_max_depth(sd, track, max_depth);
	/* no node: no slice (depth 0's nodes are always kept) */
	if (last < 0 || last >= *max_depth || flame_closed_below(f, sd, last))
		*plan = PLAN_NODES;
	else
		*plan = f->n + (uint64_t)nodes >= f->max_nodes ? PLAN_TRY_NODES : PLAN_SLICES;
}

static int stored_open(struct stored *sd, sqlite3 *db, struct qry_error *err)
{
	if (qcur_open(&sd->nodes, db,
		      "SELECT first_node, count, nodes FROM track_stacks WHERE track_id = ? ORDER BY first_node",
		      err) != QRY_OK ||
	    qcur_open(&sd->last, db,
		      "SELECT first_node, count, nodes FROM track_stacks WHERE track_id = ? "
		      "ORDER BY first_node DESC LIMIT 1",
		      err) != QRY_OK ||
	    qcur_open(&sd->depth, db, "SELECT max_depth, kind = 'async' FROM tracks WHERE id = ?", err) != QRY_OK)
		return err->code;
	return QRY_OK;
}

/* Returns first, or the first error of sd's cursors. */
static int stored_close(struct stored *sd, int first)
{
	first = qcur_close(&sd->nodes, first);
	first = qcur_close(&sd->last, first);
	return qcur_close(&sd->depth, first);
}

/* Builds one track's part of the graph of the whole trace (flame_whole),
 * from its stored nodes or from its slices. QRY_OK (a read error or a
 * damaged row is left in sd's cursors), or an error told in err. */
static int flame_whole_track(sqlite3 *db, struct flame *f, struct stored *sd, int64_t track, int64_t start,
			     int64_t end, struct qry_error *err)
{
	size_t n0 = f->n;
	int plan = PLAN_SLICES, truncated0 = f->truncated, ok = 1, rc = QRY_OK;
	int32_t max_depth0 = f->max_depth;
	int64_t added = 0, max_depth = -1;

	stored_plan(f, sd, track, &plan, &max_depth);
	if (plan != PLAN_SLICES && !stored_failed(sd) &&
	    (rc = stored_track(f, sd, track, max_depth, &ok, &added)) == QRY_OK && !stored_failed(sd) && !ok) {
		if (plan == PLAN_NODES) /* they keep every depth, or the graph was closed */
			qcur_fail(&sd->nodes, SQLITE_CORRUPT);
		else if ((rc = stored_undo(f, sd, added, n0, truncated0, max_depth0)) == QRY_OK)
			plan = PLAN_SLICES;
	}
	if (rc != QRY_OK)
		return qry_fail(err, rc, "out of memory while reading the selection");
	if (stored_failed(sd) || plan != PLAN_SLICES)
		return QRY_OK;
	return qry_area_scan(db, &track, 1, start, end, flame_visit, f, err);
}

/* The graph of a selection of the whole trace, [start, end], track by
 * track: from a track's stored nodes where they make its part, else from
 * its slices (both build the same nodes in the same order). */
static int flame_whole(sqlite3 *db, struct flame *f, const int64_t *tracks, size_t ntracks, int64_t start,
		       int64_t end, struct qry_error *err)
{
	struct stored *sd = calloc(1, sizeof(*sd));
	size_t i;
	int rc;

	if (sd == NULL)
		return qry_fail(err, QRY_ENOMEM, "out of memory while reading the selection");
	rc = stored_open(sd, db, err);
	for (i = 0; i < ntracks && rc == QRY_OK && !stored_failed(sd); i++)
		rc = flame_whole_track(db, f, sd, tracks[i], start, end, err);
	rc = qcur_done(rc, stored_close(sd, 0), err);
	free(sd->added);
	free(sd);
	return rc;
}

/* Names by string id, looked up once each (a direct-mapped cache). */
struct name_cache {
	int64_t id[4096];
	char *str[4096];
};

/* The text of string id through c ("" when there is none); a read error
 * is left in c. */
static const char *name_get(struct name_cache *nc, struct qcur *c, int64_t id)
{
	size_t k = (size_t)id & 4095;

	if (nc->str[k] != NULL && nc->id[k] == id)
		return nc->str[k];
	qcur_bind(c, 1, id);
	free(nc->str[k]);
	nc->str[k] = strdup(qcur_step(c) ? qcur_text(c, 0) : "");
	nc->id[k] = id;
	qcur_reset(c);
	return nc->str[k] != NULL ? nc->str[k] : "";
}

static int put_flame(sqlite3 *db, const struct flame *f, struct jbuf *out, struct qry_error *err)
{
	struct name_cache *nc = calloc(1, sizeof(*nc));
	uint8_t *gone = calloc(f->n + 1, 1); /* by node: left out */
	struct qcur c;
	int64_t all = 0;
	size_t i, hidden = 0;
	int rc;

	if (nc == NULL || gone == NULL) {
		free(nc);
		free(gone);
		err->code = QRY_ENOMEM;
		snprintf(err->msg, sizeof(err->msg), "out of memory while writing the flame graph");
		return QRY_ENOMEM;
	}
	for (i = 0; i < f->n; i++)
		if (f->node[i].parent < 0)
			all = tracedb_wrap_add(all, f->node[i].total);

	if ((rc = qcur_open(&c, db, "SELECT str FROM strings WHERE id = ?", err)) != QRY_OK) {
		free(nc);
		free(gone);
		return rc;
	}
	jb_obj(out);
	jb_key(out, "nodes");
	jb_arr(out);
	for (i = 0; i < f->n && !c.err; i++) {
		const struct fnode *nd = &f->node[i];
		const char *name;

		/* too narrow to see: under 1/FLAME_MIN_PARTS of the range, in 128
		 * bits, since a total of 5.3 days (2^63 / 20000 ns) would
		 * overflow 64; and so are its children, even one longer than its
		 * parent (a slice begun where a zero-length one ends nests in it) */
		if ((__int128)nd->total * FLAME_MIN_PARTS < (__int128)all || (nd->parent >= 0 && gone[nd->parent])) {
			gone[i] = 1;
			hidden++;
			continue;
		}
		name = name_get(nc, &c, nd->name_id);
		jb_obj(out);
		jb_key(out, "id");
		jb_i64(out, (int64_t)i);
		jb_key(out, "parent");
		jb_i64(out, nd->parent);
		jb_key(out, "depth");
		jb_i64(out, nd->depth);
		jb_key(out, "name");
		jb_str(out, name);
		jb_key(out, "total");
		jb_i64(out, nd->total);
		jb_key(out, "self");
		jb_i64(out, tracedb_wrap_sub(nd->total, nd->child_total));
		jb_key(out, "count");
		jb_i64(out, nd->count);
		jb_obj_end(out);
	}
	jb_arr_end(out);
	jb_key(out, "hidden");
	jb_u64(out, hidden);
	jb_key(out, "truncated");
	jb_bool(out, f->truncated);
	jb_obj_end(out);
	rc = qcur_done(QRY_OK, qcur_close(&c, 0), err);
	for (i = 0; i < 4096; i++)
		free(nc->str[i]);
	free(nc);
	free(gone);
	return rc;
}

int qry_flame(sqlite3 *db, const int64_t *tracks, size_t ntracks, const struct qry_window *w, struct jbuf *out,
	      struct qry_error *err)
{
	struct flame f = { 0 };
	int rc, whole;

	f.max_nodes = w->limit;
	f.max_depth = -1;
	if ((rc = qry_area_whole(db, w->start, w->end, &whole, err)) == QRY_OK)
		rc = whole ? flame_whole(db, &f, tracks, ntracks, w->start, w->end, err)
			   : qry_area_scan(db, tracks, ntracks, w->start, w->end, flame_visit, &f, err);
	if (rc == QRY_OK) {
		flame_close(&f);
		rc = put_flame(db, &f, out, err);
	}
	free(f.node);
	qkm_free(&f.map);
	return rc;
}
