/*
 * `trace-server migrate`: moves a library kept under --data (catalog.db and
 * traces/<id>/...) into a shared catalog (PostgreSQL) and store (S3), so
 * that a team that outgrew one server keeps its traces: the same ids,
 * names, labels, descriptions, pins, status and what ingest found. Nothing
 * is ingested again: the trace databases are copied as they are, and the
 * cross-trace name index is rebuilt from them.
 *
 * It goes through the same interfaces as a server (catdb.h, storage.h):
 * each trace's files first, then its record, so that no server ever sees
 * a record whose files are not in the store yet. Run twice, it skips what
 * is already there (objects are immutable, a record with the same id,
 * creation time and size is the same trace) and says so. A target that
 * holds another trace under one of the ids is refused before anything is
 * written. Traces still queued, ingesting or live are left out (the
 * report names them): let the old server finish them, then run it again.
 * The source library is only read: the store's cache lives in a scratch
 * directory in it (files are hard-linked there when they can be, not
 * copied), removed at the end. A ready trace's upload kept as it came (a
 * library written before sources were kept compressed) is compressed on
 * its way, as a server keeps it.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog_internal.h"
#include "storage.h"

/* A trace's files but its source as uploaded (move_source). */
static const char *const mig_files[] = { "source.zst", "binary", "trace.db" };

/* Where the migration is: the source's records, the targets. */
struct migration {
	const char *from;          /* the --data directory migrated */
	struct catdb *src, *dst;
	struct storage store;      /* the target store; its cache in tmp */
	char tmp[4096];            /* a scratch directory, removed at the end */
	struct catdb_batch have;   /* the source's records */
	struct catdb_batch there;  /* the target's records before we began */
	FILE *out;                 /* the report, a line per trace */
	struct cat_migrate_stats st;
};

/* The target's record with r's id, or NULL. */
static const struct trace_rec *target_rec(const struct migration *m, int64_t id)
{
	size_t i;

	for (i = 0; i < m->there.n; i++)
		if (m->there.v[i]->id == id)
			return m->there.v[i];
	return NULL;
}

/* The same trace: what a server never changes after the upload agrees. */
static int same_trace(const struct trace_rec *a, const struct trace_rec *b)
{
	return strcmp(a->state.created_at, b->state.created_at) == 0 && a->state.size == b->state.size;
}

/* 0 when no source trace's id is held by another trace in the target;
 * else CAT_EFAIL with the first such id in err. */
static int check_ids(const struct migration *m, char *err, size_t errlen)
{
	const struct trace_rec *t;
	size_t i;

	for (i = 0; i < m->have.n; i++) {
		t = target_rec(m, m->have.v[i]->id);
		if (t && !same_trace(t, m->have.v[i])) {
			snprintf(err, errlen,
				 "the target catalog already holds another trace with id %" PRId64
				 " (\"%s\", created %s); nothing was migrated",
				 t->id, t->meta.name, t->state.created_at);
			return CAT_EFAIL;
		}
	}
	return 0;
}

/* Copies the file at from to a new file at to; 0 or CAT_EFAIL with err. */
static int copy_file(const char *from, const char *to, char *err, size_t errlen)
{
	char buf[1 << 16];
	int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = CAT_EFAIL;
	ssize_t n;

	if (in < 0 || (out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		goto out_close;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			goto out_close;
	rc = n == 0 ? 0 : CAT_EFAIL;
out_close:
	if (rc != 0)
		snprintf(err, errlen, "copying %s: %s", from, strerror(errno));
	if (out >= 0 && close(out) != 0)
		rc = CAT_EFAIL;
	if (in >= 0)
		close(in);
	return rc;
}

/*
 * Sends file of trace id from the source library to the store unless the
 * store has it. *sent counts what went. 0, or CAT_EFAIL / CAT_ESTOREDOWN
 * with err.
 */
static int move_file(struct migration *m, int64_t id, const char *file, int *sent, char *err, size_t errlen)
{
	char from[4400], spool[4400];
	struct stat st;
	int rc;

	snprintf(from, sizeof(from), "%s/traces/%" PRId64 "/%s", m->from, id, file);
	if (stat(from, &st) != 0)
		return 0; /* a trace has no binary unless XRay symbols came with it */
	if ((rc = m->store.ops->has(&m->store, id, file)) == 1)
		return 0;
	if (rc == STORAGE_EDOWN) {
		snprintf(err, errlen, "the store cannot be reached");
		return CAT_ESTOREDOWN;
	}
	m->store.ops->spool_dir(&m->store, spool, sizeof(spool));
	snprintf(spool + strlen(spool), sizeof(spool) - strlen(spool), "/migrate-%" PRId64 "-%s", id, file);
	unlink(spool);
	if (link(from, spool) != 0 && copy_file(from, spool, err, errlen) != 0)
		return CAT_EFAIL;
	if ((rc = m->store.ops->put(&m->store, id, file, spool, err, errlen)) != 0) {
		unlink(spool);
		return rc == STORAGE_EDOWN ? CAT_ESTOREDOWN : CAT_EFAIL;
	}
	(*sent)++;
	m->st.bytes += (uint64_t)st.st_size;
	return 0;
}

/*
 * The source as uploaded ("source") of trace r: a ready trace's is sent
 * compressed, as "source.zst", the way a server keeps it once ingested
 * (source.c), unless the store holds either already; another's is sent as
 * it is. 0, or CAT_EFAIL / CAT_ESTOREDOWN with err.
 */
static int move_source(struct migration *m, const struct trace_rec *r, int *sent, char *err, size_t errlen)
{
	char from[4400], spool[4400], dir[4096];
	uint64_t in, out;
	int rc;

	snprintf(from, sizeof(from), "%s/traces/%" PRId64 "/source", m->from, r->id);
	if (r->state.status != TS_READY || access(from, F_OK) != 0)
		return move_file(m, r->id, "source", sent, err, errlen);
	if ((rc = m->store.ops->has(&m->store, r->id, "source.zst")) == 0)
		rc = m->store.ops->has(&m->store, r->id, "source");
	if (rc == 1)
		return 0;
	if (rc == STORAGE_EDOWN) {
		snprintf(err, errlen, "the store cannot be reached");
		return CAT_ESTOREDOWN;
	}
	m->store.ops->spool_dir(&m->store, dir, sizeof(dir));
	if (cat_source_compress_file(from, dir, spool, sizeof(spool), NULL, NULL, &in, &out, err, errlen) != 0)
		return CAT_EFAIL;
	if ((rc = m->store.ops->put(&m->store, r->id, "source.zst", spool, err, errlen)) != 0) {
		unlink(spool);
		return rc == STORAGE_EDOWN ? CAT_ESTOREDOWN : CAT_EFAIL;
	}
	(*sent)++;
	m->st.bytes += out;
	return 0;
}

/* The reason a trace is left out, or NULL when it moves. */
static const char *left_out(const struct trace_rec *r)
{
	if (r->state.status == TS_QUEUED || r->state.status == TS_INGESTING)
		return "not ingested yet: let the old server ingest it, then migrate again";
	if (r->state.status == TS_LIVE)
		return "a live stream: let it end, then migrate again";
	return NULL;
}

/* A note of the source, added to the target (where it takes a new id). */
struct note_move {
	struct migration *m;
	char *err;
	size_t errlen;
	int rc;
	unsigned moved;
};

static int move_note(void *ctx, const struct catdb_note *n)
{
	struct note_move *nm = ctx;
	struct catdb_note copy = *n;

	nm->rc = nm->m->dst->ops->note_add(nm->m->dst, &copy, nm->err, nm->errlen);
	nm->moved += nm->rc == CATDB_OK;
	return nm->rc != CATDB_OK;
}

/* Files, then the record and its notes, then the name index, of one trace. */
static int move_trace(struct migration *m, struct trace_rec *r, char *err, size_t errlen)
{
	const struct trace_rec *t = target_rec(m, r->id);
	char db[4400];
	size_t i;
	int sent = 0, rc;

	if ((rc = move_source(m, r, &sent, err, errlen)) != 0)
		return rc;
	for (i = 0; i < sizeof(mig_files) / sizeof(mig_files[0]); i++)
		if ((rc = move_file(m, r->id, mig_files[i], &sent, err, errlen)) != 0)
			return rc;
	if (t) {
		fprintf(m->out, "trace %" PRId64 " \"%s\": skipped, already in the catalog%s\n", r->id, r->meta.name,
			sent ? " (its missing files were sent)" : "");
		m->st.skipped++;
		return 0;
	}
	rec_stored(r, m->store.ops->usage(&m->store, r->id));
	snprintf(db, sizeof(db), "%s/traces/%" PRId64 "/trace.db", m->from, r->id);
	rec_indexed(r, r->state.indexed && r->state.status == TS_READY);
	if (r->state.indexed && (rc = m->dst->ops->index(m->dst, r->id, db, err, errlen)) != CATDB_OK)
		return rc == CATDB_EDOWN ? CAT_EUNAVAILABLE : CAT_EFAIL;
	if ((rc = m->dst->ops->save(m->dst, r, CATDB_ALL, NULL, err, errlen)) != CATDB_OK)
		return rc == CATDB_EDOWN ? CAT_EUNAVAILABLE : CAT_EFAIL;
	{
		struct cat_note_query q = { .trace = r->id, .by_time = 1 };
		struct note_move nm = { m, err, errlen, CATDB_OK, 0 };

		rc = m->src->ops->note_list(m->src, &q, move_note, &nm, err, errlen);
		if (rc == CATDB_OK)
			rc = nm.rc;
		if (rc != CATDB_OK)
			return rc == CATDB_EDOWN ? CAT_EUNAVAILABLE : CAT_EFAIL;
		fprintf(m->out, "trace %" PRId64 " \"%s\": migrated (%s, %d files sent, %u notes)\n", r->id, r->meta.name,
			cat_status_name(r->state.status), sent, nm.moved);
	}
	m->st.migrated++;
	return 0;
}

/* Moves the target's id sequence past every id migrated, so that a new
 * upload never takes one: ids are only taken through next_id. */
static int reserve_ids(struct migration *m, char *err, size_t errlen)
{
	int64_t max = 0, id = 0;
	size_t i;

	for (i = 0; i < m->have.n; i++)
		if (m->have.v[i]->id > max)
			max = m->have.v[i]->id;
	while (id < max)
		if (m->dst->ops->next_id(m->dst, &id, err, errlen) != CATDB_OK)
			return CAT_EFAIL;
	return 0;
}

static int open_all(struct migration *m, const char *catalog_url, const char *store_url, char *err, size_t errlen)
{
	char path[4400], cache[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/catalog.db", m->from);
	if (stat(path, &st) != 0) {
		snprintf(err, errlen, "%s: no library there (no catalog.db)", m->from);
		return CAT_EFAIL;
	}
	if ((m->src = catdb_sqlite_open(m->from, err, errlen)) == NULL ||
	    (m->dst = catdb_pg_open(catalog_url, err, errlen)) == NULL)
		return CAT_EFAIL;
	snprintf(m->tmp, sizeof(m->tmp), "%s/.migrate-XXXXXX", m->from);
	if (mkdtemp(m->tmp) == NULL) {
		snprintf(err, errlen, "cannot make a scratch directory in %s: %s", m->from, strerror(errno));
		m->tmp[0] = '\0';
		return CAT_EFAIL;
	}
	snprintf(cache, sizeof(cache), "%s/cache", m->tmp);
	if (storage_open(&m->store, m->tmp, store_url, cache, 0, 0, err, errlen) != 0)
		return CAT_EFAIL;
	if (m->store.ops->check(&m->store, err, errlen) != 0)
		return CAT_EFAIL;
	if (m->src->ops->load(m->src, 0, &m->have, err, errlen) != CATDB_OK ||
	    m->dst->ops->load(m->dst, 0, &m->there, err, errlen) != CATDB_OK)
		return CAT_EFAIL;
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void close_all(struct migration *m)
{
	catdb_batch_free(&m->have);
	catdb_batch_free(&m->there);
	if (m->store.ops)
		m->store.ops->close(&m->store);
	if (m->dst)
		m->dst->ops->close(m->dst);
	if (m->src)
		m->src->ops->close(m->src);
	if (m->tmp[0])
		nftw(m->tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int cat_migrate(const char *from, const char *catalog_url, const char *store_url, FILE *out,
		struct cat_migrate_stats *st, char *err, size_t errlen)
{
	struct migration m;
	const char *why;
	size_t i;
	int rc = CAT_EFAIL;

	memset(&m, 0, sizeof(m));
	m.from = from;
	m.out = out;
	if (open_all(&m, catalog_url, store_url, err, errlen) != 0 || check_ids(&m, err, errlen) != 0)
		goto out_close;
	for (i = 0; i < m.have.n; i++) {
		if ((why = left_out(m.have.v[i])) != NULL) {
			fprintf(out, "trace %" PRId64 " \"%s\": left out, %s\n", m.have.v[i]->id, m.have.v[i]->meta.name, why);
			m.st.left_out++;
		} else if (move_trace(&m, m.have.v[i], err, errlen) != 0) {
			goto out_close;
		}
	}
	rc = reserve_ids(&m, err, errlen);
out_close:
	*st = m.st;
	close_all(&m);
	return rc;
}
