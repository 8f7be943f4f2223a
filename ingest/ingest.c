/*
 * The ingest driver: maps (or reads) an archive in chunks, feeds the decoder, builds
 * the database under a temporary name and renames it into place.
 */
/* the session extension (Debian's libsqlite3 has it): a pause's layer undone */
#define SQLITE_ENABLE_SESSION 1
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include <sqlite3.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "behind.h"
#include "build.h"
#include "fxt.h"
#include "sorter.h"
#include "spill.h"
#include "dbwriter.h"
#include "symbols.h"
#include "xray.h"

enum { CHUNK = 1 << 20 };

const char *ingest_strerror(int err)
{
	switch (err) {
	case INGEST_OK:
		return "ok";
	case INGEST_ENOTTRACE:
		return "not a trace";
	case INGEST_EIO:
		return "cannot read the input";
	case INGEST_ENOMEM:
		return "out of memory";
	case INGEST_EDB:
		return "cannot write the database";
	case INGEST_ECANCEL:
		return "cancelled";
	case INGEST_EEMPTY:
		return "the input is empty";
	case INGEST_ECRASH:
		return "the ingest process ended abnormally";
	default:
		return "unknown error";
	}
}

const char *ingest_detect(const uint8_t *buf, size_t n)
{
	if (fxt_detect(buf, n))
		return "fxt";
	if (xray_detect(buf, n))
		return "xray-fdr";
	return NULL;
}

/* One decoder of the formats we read, chosen by content or by the caller. */
struct decoder {
	const char *format;        /* "fxt" or "xray-fdr" */
	struct fxt_decoder fxt;
	struct xray_decoder *xray;
};

/* forced: the caller named the format, which is then not checked. */
static int dec_open(struct decoder *d, struct model *m, const char *format, int forced)
{
	memset(d, 0, sizeof(*d));
	if (strcmp(format, "fxt") == 0) {
		d->format = "fxt";
		fxt_init(&d->fxt, m);
		d->fxt.forced = forced;
		return INGEST_OK;
	}
	if (strcmp(format, "xray-fdr") == 0 || strcmp(format, "xray") == 0) {
		d->format = "xray-fdr";
		d->xray = xray_create(m);
		return d->xray ? INGEST_OK : INGEST_ENOMEM;
	}
	return INGEST_ENOTTRACE;
}

static int dec_feed(struct decoder *d, const uint8_t *p, size_t n)
{
	return d->xray ? xray_feed(d->xray, p, n) : fxt_feed(&d->fxt, p, n);
}

static int dec_finish(struct decoder *d)
{
	return d->xray ? xray_finish(d->xray) : fxt_finish(&d->fxt);
}

static void dec_close(struct decoder *d)
{
	if (d->xray)
		xray_destroy(d->xray);
	else if (d->format)
		fxt_fini(&d->fxt);
	d->xray = NULL;
	d->format = NULL;
}

static int set_error(struct ingest_result *res, int rc, const char *detail)
{
	switch (rc) {
	case INGEST_ENOTTRACE:
		snprintf(res->error, sizeof(res->error),
			 "not a trace: the file is neither a Fuchsia trace (FXT, starting with the magic record "
			 "10 00 04 46 78 54 16 00, a provider or an initialization record) nor an XRay flight-data-recorder log "
			 "(a 32-byte header of version 1 to 5, type 1)");
		break;
	case INGEST_EEMPTY:
		snprintf(res->error, sizeof(res->error), "the file is empty: there is no trace to read");
		break;
	default:
		snprintf(res->error, sizeof(res->error), "%s%s%.200s", ingest_strerror(rc), detail ? ": " : "",
			 detail ? detail : "");
	}
	return rc;
}

/* Reads a whole small file (a symbol map) into memory. */
static uint8_t *read_all(const char *path, size_t max, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL, *p;
	size_t cap = 0, len = 0, k;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			if (cap > max || (p = realloc(buf, cap)) == NULL) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = p;
		}
		if ((k = fread(buf + len, 1, cap - len, f)) == 0)
			break;
		len += k;
	}
	fclose(f);
	*n = len;
	return buf;
}

/* Renames "fn#<id>" strings to the functions' names and notes how many
 * functions are named in meta, in one transaction: all of it or, on any
 * error, nothing (*named 0). Functions that earlier symbols named keep their
 * names (their ids are gone with the "fn#<id>" strings) and stay counted:
 * *named is every named function, not only this map's, so that a later map
 * does not make the trace object say that nothing is named. */
static int apply_names(sqlite3 *db, const struct xray_symbols *sy, uint64_t *named, char *err, size_t errlen)
{
	sqlite3_stmt *sel = NULL, *upd = NULL, *meta = NULL, *prev = NULL;
	int rc = -1, step, begun = 0;

	*named = 0;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'symbols_named'", -1, &prev, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT id, str FROM strings WHERE str GLOB 'fn#[0-9]*'", -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "UPDATE strings SET str = ? WHERE id = ?", -1, &upd, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta VALUES ('symbols_named', ?)", -1, &meta, NULL) !=
		    SQLITE_OK ||
	    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto out_finalize;
	begun = 1;
	if ((step = sqlite3_step(prev)) == SQLITE_ROW && sqlite3_column_int64(prev, 0) > 0)
		*named = (uint64_t)sqlite3_column_int64(prev, 0);
	else if (step != SQLITE_ROW && step != SQLITE_DONE)
		goto out_finalize;
	while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
		unsigned long id = strtoul((const char *)sqlite3_column_text(sel, 1) + 3, NULL, 10);
		const char *name = id <= UINT32_MAX ? xray_symbols_name(sy, (uint32_t)id) : NULL;

		if (name == NULL)
			continue;
		sqlite3_bind_text(upd, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(upd, 2, sqlite3_column_int64(sel, 0));
		if (sqlite3_step(upd) != SQLITE_DONE)
			goto out_finalize;
		sqlite3_reset(upd);
		(*named)++;
	}
	if (step != SQLITE_DONE) /* a read that failed ends the loop as the last row would */
		goto out_finalize;
	sqlite3_bind_int64(meta, 1, (int64_t)*named);
	if (sqlite3_step(meta) != SQLITE_DONE)
		goto out_finalize;
	rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
out_finalize:
	if (rc != 0) {
		snprintf(err, errlen, "cannot rename functions: %s", sqlite3_errmsg(db));
		if (begun)
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		*named = 0;
	}
	sqlite3_finalize(prev);
	sqlite3_finalize(sel);
	sqlite3_finalize(upd);
	sqlite3_finalize(meta);
	return rc;
}

int ingest_symbolize(const char *db_path, const char *symbols_path, uint64_t *named, char *err, size_t errlen)
{
	struct xray_symbols *sy = NULL;
	sqlite3 *db = NULL;
	const char *why;
	uint8_t *buf;
	size_t n = 0;
	int rc = -1;

	*named = 0;
	if ((buf = read_all(symbols_path, (size_t)1 << 31, &n)) == NULL) {
		snprintf(err, errlen, "cannot read the symbol file (missing, unreadable or over 2 GiB)");
		return -1;
	}
	if (xray_symbols_load(buf, n, &sy, err, errlen) != 0)
		goto out_free;
	if ((db = tracedb_open_readwrite(db_path, &why)) == NULL) {
		snprintf(err, errlen, "%s", why);
		goto out_free;
	}
	rc = apply_names(db, sy, named, err, errlen);
out_free:
	sqlite3_close(db);
	xray_symbols_free(sy);
	free(buf);
	return rc;
}

static void symbolize_result(const char *db, const char *symbols, struct ingest_result *res)
{
	uint64_t named = 0;

	if (ingest_symbolize(db, symbols, &named, res->symbols_error, sizeof(res->symbols_error)) == 0)
		res->symbols_named = named;
}


/* The sorter's spill file failed: its sentence says which and why (the
 * input itself was read). */
static int spill_error(struct ingest_result *res, const char *why)
{
	snprintf(res->error, sizeof(res->error), "%s", why);
	return INGEST_EIO;
}

/* The directory of path, where the spill file goes: next to the database,
 * on the disk meant to hold the trace. */
static void dir_of(const char *path, char *dir, size_t n)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		snprintf(dir, n, ".");
	else if (slash == path)
		snprintf(dir, n, "/");
	else
		snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* ---- the stream: one ingest, fed in pieces (ingest.h) ----------------- */

enum { DETECT = 64 }; /* bytes the format is told from (ingest_detect needs 33) */

/* A growing database's page size (stream_open_db). */
#define GROW_PAGE_SIZE 16384u

/* The window B a stream starts with (sorter.h); widened at each restart
 * (stream_restart). */
#define STREAM_WINDOW ((uint64_t)4 << 20)

struct ingest_stream {
	struct ingest_opts o;      /* the caller's (progress may be NULL) */
	struct ingest_result *res;
	char tmp[4096];            /* out_db + INGEST_TMP_SUFFIX; "" when only decoding (ingest_info) */
	char out[4096];            /* out_db */
	char dir[4096];            /* scratch files go here: out_db's directory */
	struct decoder d;          /* d.format NULL until the format is known */
	struct model m;            /* valid while so is, or when only decoding */
	struct sorter *so;         /* NULL when only decoding */
	struct dbwriter s;         /* the database under tmp, while s_open */
	int s_open;
	uint64_t db_opened;        /* times s was opened: a commit queued on a
				    * connection closed since is in the file
				    * (dbw_close runs what was queued) */
	uint64_t queued_on;        /* db_opened when the last commit was queued */
	struct build *b;           /* matching so far: from the first ingest_stream_match
				    * of an FXT input on, until the end */
	uint64_t fed;              /* input bytes decoded */
	uint64_t size;             /* the whole input's size when known (progress,
				    * page size); 0 when not */
	uint64_t window;           /* B (sorter.h) */
	const uint8_t *stable;     /* the input is this mapped file (XRay reads it in place) */
	int keep_fd;               /* every byte fed, copied, to start again from (or the
				    * input itself, o.follows: nothing copied); -1: none */
	int layer;                 /* a pause's copy (ingest_stream_pause): build.h's layer */
	int batch;                 /* ingest_file: never matched before the end, so never
				    * started again, and no copy kept */
	int forced;                /* the caller named the format */
	uint8_t head[DETECT];      /* the first bytes, while fewer than DETECT came */
	size_t head_len;
	int rc;                    /* sticky: the first error, or INGEST_ECANCEL after the end */
	int unsettled;             /* the last start again took a window that may not hold
				    * the disorder that made it (doubled only, or a pid
				    * revised): it may start again (ingest_stream_settled) */
	int regrow;                /* growing, started again since the last commit: its
				    * open transaction empties the tables (stream_drop) */
	int reclear;               /* ... which a pause rolled back: to be done again */
	int end_fresh;             /* growing, started again at the end of its input: the
				    * rest is written whole into a new database under the
				    * temporary name, renamed over out_db at the end, while
				    * readers keep the last commit (stream_restart) */
	int64_t layer_version;     /* data_version when a pause's layer began */
};

/* A fresh model and sorter for the stream; INGEST_OK or INGEST_ENOMEM. */
static int stream_begin(struct ingest_stream *s)
{
	if (model_init(&s->m) != 0) {
		model_fini(&s->m);
		return INGEST_ENOMEM;
	}
	s->m.sched_keep = build_commits(&s->o);
	if (!s->tmp[0])
		return INGEST_OK;
	s->so = sorter_attach(&s->m, s->dir, s->o.sort_budget ? s->o.sort_budget : SORTER_BUDGET);
	if (s->so == NULL) {
		model_fini(&s->m);
		return INGEST_ENOMEM;
	}
	if (!s->batch)
		sorter_window(s->so, s->window);
	return INGEST_OK;
}

/* Opens the decoder of format (forced: the caller named it). */
static int stream_decoder(struct ingest_stream *s, const char *format, int forced)
{
	int rc;

	if (format == NULL)
		return INGEST_ENOTTRACE;
	if ((rc = dec_open(&s->d, &s->m, format, forced)) != INGEST_OK)
		return rc;
	s->res->format = s->d.format;
	if (s->d.xray && s->stable) /* its buffers are read in place, until dec_finish */
		xray_stable_file(s->d.xray, s->stable);
	return INGEST_OK;
}

/* Feeds the decoder, cut where the sorter's window slots end so that each
 * event is noted in the slot where its record ends (sorter_mark). */
static int stream_decode(struct ingest_stream *s, const uint8_t *p, size_t n)
{
	uint64_t slot = s->so ? sorter_slot_bytes(s->so) : 0;
	size_t k;
	int rc;

	while (n > 0) {
		k = n;
		if (slot && k > slot - s->fed % slot)
			k = (size_t)(slot - s->fed % slot);
		if ((rc = dec_feed(&s->d, p, k)) != INGEST_OK)
			return rc;
		s->fed += k;
		if (slot)
			sorter_mark(s->so, s->fed);
		p += k;
		n -= k;
	}
	return INGEST_OK;
}

/* Decodes a piece, telling the format from the first DETECT bytes (held
 * back until that many came) unless it is known. */
static int stream_take(struct ingest_stream *s, const uint8_t *p, size_t n)
{
	size_t k;
	int rc;

	if (s->d.format != NULL)
		return stream_decode(s, p, n);
	if (s->head_len == 0 && n >= DETECT) {
		rc = stream_decoder(s, s->o.format ? s->o.format : ingest_detect(p, n), s->forced);
		return rc != INGEST_OK ? rc : stream_decode(s, p, n);
	}
	k = n < DETECT - s->head_len ? n : DETECT - s->head_len;
	memcpy(s->head + s->head_len, p, k);
	s->head_len += k;
	if (s->head_len < DETECT)
		return INGEST_OK;
	rc = stream_decoder(s, s->o.format ? s->o.format : ingest_detect(s->head, DETECT), s->forced);
	if (rc == INGEST_OK)
		rc = stream_decode(s, s->head, s->head_len);
	s->head_len = 0;
	return rc != INGEST_OK ? rc : stream_decode(s, p + k, n - k);
}

/* Decodes a piece and reports progress; INGEST_OK or an error. */
static int stream_piece(struct ingest_stream *s, const uint8_t *p, size_t n)
{
	int rc = stream_take(s, p, n);

	if (rc == INGEST_OK && s->o.progress &&
	    s->o.progress(s->o.progress_ctx, INGEST_PHASE_DECODE, s->fed + s->head_len, s->size,
			  s->m.events_total) != 0)
		rc = INGEST_ECANCEL;
	return rc;
}

/* Records the error rc in res (the sentence for the sorter's or the
 * database's failures from them) and makes it the stream's. */
static int stream_fail(struct ingest_stream *s, int rc)
{
	const char *why = NULL;

	if (s->rc != INGEST_OK)
		return s->rc;
	if (rc == INGEST_EIO && s->so && sorter_failed(s->so, &why))
		spill_error(s->res, why);
	else if (s->res->error[0] == '\0') /* else a sentence of its own was given */
		set_error(s->res, rc, rc == INGEST_EDB && s->s_open ? s->s.error : NULL);
	return s->rc = rc;
}

/* Opens the database under its temporary name, sized for the input. */
static int stream_open_db(struct ingest_stream *s)
{
	if (s->s_open)
		return INGEST_OK;
	s->s_open = 1;
	s->db_opened++;
	/* a growing trace's pages are at most GROW_PAGE_SIZE, smaller for
	 * an upload known to be small (expect_bytes; a live stream's size is
	 * not known). Each commit writes again every page it touched: the
	 * last pages of each group's slices and of each group's levels of
	 * detail, about a thousand pages per commit on a 64-thread trace
	 * (and more as levels are added), whatever it added. With a file's
	 * 64 KB pages that was some 64 MB of log per commit, three times
	 * what the commit added. The 4 GB 64-thread archive grew in 280 s
	 * with them, 266 s with 16 KB pages in the same hour (the batch took
	 * 121 s); the 500 MB one logged and read back 0.8 and 2.0 GB less */
	int grows = (s->o.growing || s->o.commit_every) && !s->end_fresh;
	unsigned page = tracedb_page_size(s->size ? s->size : s->fed);

	if (grows && s->o.growing && !s->batch) {
		page = s->o.expect_bytes ? tracedb_page_size(s->o.expect_bytes) : GROW_PAGE_SIZE;
		page = page < GROW_PAGE_SIZE ? page : GROW_PAGE_SIZE;
	}

	if ((grows ? dbw_open_growing : dbw_open)(&s->s, s->tmp, page) != 0)
		return INGEST_EDB;
	return INGEST_OK;
}

/* Empties every table of the database being written, in its open
 * transaction (a growing stream started again); 0, or -1. */
static int stream_clear_db(struct ingest_stream *s)
{
	sqlite3_stmt *st;
	int rc = 0;

	if (dbw_drain(&s->s) != 0 ||
	    sqlite3_prepare_v2(s->s.db, "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
			       -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
		char *sql = sqlite3_mprintf("DELETE FROM main.\"%w\"", (const char *)sqlite3_column_text(st, 0));

		rc = sql != NULL && sqlite3_exec(s->s.db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
		sqlite3_free(sql);
	}
	sqlite3_finalize(st);
	return rc;
}

/* Throws away everything made from the input: the build, the database
 * (removed), the sorter, the model and the decoder. */
static void stream_drop(struct ingest_stream *s)
{
	model_build_free(s->b);
	s->b = NULL;
	if (s->s_open && s->o.growing && !s->batch && !s->end_fresh && s->rc == INGEST_OK && stream_clear_db(s) == 0) {
		/* a growing trace is read while it is made again: its
		 * database stays, emptied in the transaction that writes it
		 * anew, and readers see its last commit until the next */
		s->regrow = 1;
	} else if (s->s_open) {
		dbw_close(&s->s);
		tracedb_remove(s->tmp);
		s->s_open = 0;
	}
	sorter_free(s->so);
	s->so = NULL;
	dec_close(&s->d);
	model_fini(&s->m);
}

/* Decodes the copy of the input again, from its first byte. */
static int stream_refeed(struct ingest_stream *s, uint64_t upto)
{
	enum { PIECE = 1 << 20 };
	uint8_t *buf = malloc(PIECE);
	uint64_t off;
	ssize_t got;
	int rc = INGEST_OK;

	if (buf == NULL)
		return INGEST_ENOMEM;
	for (off = 0; rc == INGEST_OK && off < upto; off += (uint64_t)got) {
		size_t want = upto - off < PIECE ? (size_t)(upto - off) : PIECE;

		if ((got = pread(s->keep_fd, buf, want, (off_t)off)) <= 0) {
			rc = INGEST_EIO;
			break;
		}
		rc = stream_decode(s, buf, (size_t)got);
	}
	free(buf);
	return rc;
}

/* A growing stream at the end of its input, started again (not a pause's
 * layer): its database is left as its last commit made it, for its
 * readers, and the rest goes whole into a new one under the temporary
 * name (end_fresh), as a batch writes it (no log, no commits, no table
 * emptied row by row: twice as fast as in place), renamed over it at the
 * end (stream_end_write). INGEST_OK or an error. */
static int stream_fresh(struct ingest_stream *s)
{
	if (!s->o.growing || s->batch || s->end_fresh)
		return INGEST_OK;
	model_build_free(s->b); /* its statements are the connection's */
	s->b = NULL;
	if (s->s_open) { /* its open transaction rolls back: the last commit stays */
		dbw_close(&s->s);
		s->s_open = 0;
	}
	s->regrow = 0;
	s->end_fresh = 1;
	if ((size_t)snprintf(s->tmp, sizeof(s->tmp), "%s%s", s->out, INGEST_TMP_SUFFIX) >= sizeof(s->tmp))
		return set_error(s->res, INGEST_EIO, "output path too long");
	tracedb_remove(s->tmp); /* one a killed ingest left */
	return INGEST_OK;
}

/*
 * Late events (sorter.h), or a thread's pid revised under slices already
 * matched (build.h): starts again from the input's first byte, with the
 * window doubled, or widened to what the late events needed with a
 * quarter more (sorter_late_window), into a fresh model, sorter and database, counted in
 * res->order_restarts. The bytes come from the copy kept of them; nothing
 * is handed on until the next release. final: the input has ended (it is
 * finished decoding too); fresh: so has the stream (not a pause's layer),
 * which then writes the rest into a new database (stream_fresh). INGEST_OK
 * or an error.
 */
static int stream_restart(struct ingest_stream *s, uint64_t late, int final, int fresh)
{
	const char *format = s->d.format;
	uint64_t upto = s->fed, need = 0;
	int rc;

	if (s->keep_fd < 0) /* a batch never hands on early */
		return INGEST_EIO;
	s->res->order_restarts++;
	s->res->order_late += late;
	if (late > 0 && s->so != NULL)
		need = sorter_late_window(s->so);
	if (fresh && (rc = stream_fresh(s)) != INGEST_OK)
		return rc;
	stream_drop(s);
	if (s->window < UINT64_MAX / 2)
		s->window *= 2;
	if (need > s->window) /* a quarter more: the next scopes may be wider */
		s->window = need + need / 4;
	s->unsettled = need == 0;
	s->fed = 0;
	if ((rc = stream_begin(s)) != INGEST_OK)
		return rc;
	if (final) /* written at once, without commits (stream_write): nothing keeps the switches for them */
		s->m.sched_keep = 0;
	if ((rc = stream_decoder(s, format, 1)) != INGEST_OK || (rc = stream_refeed(s, upto)) != INGEST_OK)
		return rc;
	return final ? dec_finish(&s->d) : INGEST_OK;
}

/* A new stream; NULL with *rc the error (and res->error) on failure. */
static struct ingest_stream *stream_create(const char *out_db, const struct ingest_opts *o,
					   struct ingest_result *res, int batch, int *rc)
{
	struct ingest_stream *s;

	*rc = INGEST_ENOMEM;
	memset(res, 0, sizeof(*res));
	res->format = "unknown";
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		set_error(res, INGEST_ENOMEM, NULL);
		return NULL;
	}
	if (o)
		s->o = *o;
	s->res = res;
	s->keep_fd = -1;
	s->batch = batch;
	s->forced = s->o.format != NULL;
	s->window = s->o.order_window ? s->o.order_window : STREAM_WINDOW;
	if (out_db != NULL) {
		dir_of(out_db, s->dir, sizeof(s->dir));
		snprintf(s->out, sizeof(s->out), "%s", out_db);
		/* a growing trace is read where it is written */
		if ((size_t)snprintf(s->tmp, sizeof(s->tmp), "%s%s", out_db,
				     s->o.growing && !batch ? "" : INGEST_TMP_SUFFIX) >= sizeof(s->tmp)) {
			*rc = set_error(res, INGEST_EIO, "output path too long");
			free(s);
			return NULL;
		}
	}
	if (!batch && out_db != NULL && s->o.follows != NULL) {
		if ((s->keep_fd = open(s->o.follows, O_RDONLY | O_CLOEXEC)) < 0) {
			*rc = set_error(res, INGEST_EIO, strerror(errno));
			free(s);
			return NULL;
		}
	} else if (!batch && out_db != NULL && (s->keep_fd = spill_tmpfile(s->dir)) < 0) {
		*rc = set_error(res, INGEST_EIO, strerror(errno));
		free(s);
		return NULL;
	}
	if (stream_begin(s) != INGEST_OK) {
		if (s->keep_fd >= 0)
			close(s->keep_fd);
		free(s);
		set_error(res, INGEST_ENOMEM, NULL);
		return NULL;
	}
	*rc = INGEST_OK;
	return s;
}

struct ingest_stream *ingest_stream_open(const char *out_db, const struct ingest_opts *o, struct ingest_result *res)
{
	int rc;

	return stream_create(out_db, o, res, 0, &rc);
}

/* Appends a piece to the copy kept for a restart; 0, or -1. */
static int stream_keep(struct ingest_stream *s, const uint8_t *p, size_t n)
{
	ssize_t k;

	while (n > 0) {
		if ((k = write(s->keep_fd, p, n)) < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int ingest_stream_feed(struct ingest_stream *s, const uint8_t *p, size_t n)
{
	int rc;

	if (s->rc != INGEST_OK)
		return s->rc;
	if (s->keep_fd >= 0 && s->o.follows == NULL && stream_keep(s, p, n) != 0)
		return stream_fail(s, INGEST_EIO);
	if ((rc = stream_piece(s, p, n)) != INGEST_OK)
		return stream_fail(s, rc);
	return INGEST_OK;
}

/*
 * XRay stays one batch: its model is ordered thread after thread (model.h,
 * by_thread), and a thread's events are only whole once every buffer of
 * the log is read (buffers of one thread come anywhere in the file, and a
 * call's end patches the event of its start, m->ends); no watermark on
 * time says when a thread is complete. So ingest_stream_match does nothing
 * for it, and all of it is matched at the end.
 */
int ingest_stream_match(struct ingest_stream *s)
{
	uint64_t late;
	int rc;

	if (s->rc != INGEST_OK)
		return s->rc;
	if (s->batch || s->so == NULL || s->d.format == NULL || s->d.xray)
		return INGEST_OK;
	while ((rc = sorter_release(s->so, 0, &late)) > 0)
		if ((rc = stream_restart(s, late, 0, 0)) != INGEST_OK)
			return stream_fail(s, rc);
	if (rc < 0)
		return stream_fail(s, INGEST_EIO);
	if (s->b == NULL && (rc = stream_open_db(s)) == INGEST_OK &&
	    (s->b = model_build_open(&s->m, s->so, &s->s, s->res, &s->o, &rc)) != NULL)
		s->b->layer = s->layer;
	if (rc == INGEST_OK)
		rc = model_build_step(s->b);
	if (s->so != NULL)
		s->res->order_streamed = sorter_handed(s->so);
	return rc == INGEST_OK ? rc : stream_fail(s, rc);
}

int ingest_stream_settled(const struct ingest_stream *s)
{
	return !s->unsettled;
}

/* ingest_stream_commit, and its queued form (*ticket not NULL). */
static int stream_commit(struct ingest_stream *s, int *committed, uint64_t *ticket)
{
	int rc;

	*committed = 0;
	if (!s->o.growing || s->batch)
		return s->rc;
	if ((rc = ingest_stream_match(s)) != INGEST_OK || s->b == NULL)
		return rc;
	/* nothing matched yet (the order's window holds every event, or the
	 * stream started again and has matched nothing yet): no commit, so
	 * that readers see a trace that holds something (a pause shows it
	 * whole before that: ingest_stream_pause). Once it started again, each
	 * commit shows the trace made again so far: it holds less than the
	 * last one did for a while, every commit whole. */
	if (s->res->order_streamed == 0)
		return INGEST_OK;
	if (build_commit(s->b, ticket ? COMMIT_QUEUED : COMMIT_PUBLISH, ticket) != 0)
		return stream_fail(s, s->b->oom ? INGEST_ENOMEM : INGEST_EDB);
	s->regrow = 0;
	s->res->bytes = s->fed;
	s->res->counts.events = s->m.events_total;
	*committed = 1;
	return INGEST_OK;
}

int ingest_stream_commit(struct ingest_stream *s, int *committed)
{
	return stream_commit(s, committed, NULL);
}

int ingest_stream_commit_queued(struct ingest_stream *s, int *committed, uint64_t *ticket)
{
	int rc;

	*ticket = 0; /* a pause's layer waits for its commits itself: reached at once */
	rc = stream_commit(s, committed, ticket);
	s->queued_on = s->db_opened;
	return rc;
}

int ingest_stream_published(struct ingest_stream *s, uint64_t ticket, int wait, int *seen)
{
	int r;

	*seen = 0;
	if (s->rc != INGEST_OK)
		return s->rc;
	if (!s->s_open || s->queued_on != s->db_opened) /* its connection closed since */
		return *seen = 1, INGEST_OK;
	if (wait && dbw_wait(&s->s, ticket) != 0)
		return stream_fail(s, INGEST_EDB);
	if ((r = dbw_reached(&s->s, ticket)) < 0)
		return stream_fail(s, INGEST_EDB);
	*seen = r;
	return INGEST_OK;
}

/* The input has ended: the format is told from what came, and the decoder
 * finishes. INGEST_OK or an error. */
static int stream_end_decode(struct ingest_stream *s)
{
	const char *why;
	int rc = INGEST_OK;

	if (s->d.format == NULL && s->head_len == 0)
		rc = INGEST_EEMPTY;
	else if (s->d.format == NULL &&
		 (rc = stream_decoder(s, s->o.format ? s->o.format : ingest_detect(s->head, s->head_len),
				      s->forced)) == INGEST_OK)
		rc = stream_decode(s, s->head, s->head_len);
	s->head_len = 0;
	if (rc == INGEST_OK)
		rc = dec_finish(&s->d);
	s->res->bytes = s->fed;
	if (s->so && sorter_failed(s->so, &why)) /* a spill while decoding */
		return spill_error(s->res, why);
	return rc;
}

/* Matches what is left and writes every table: through the build already
 * streaming, or the batch's model_build; the late and the revised start
 * again and end as a batch. INGEST_OK or an error. */
static int stream_write(struct ingest_stream *s, int layer)
{
	int rc = INGEST_OK, restart = 0, written = 0;
	uint64_t late;

	if (s->b != NULL) {
		if ((rc = sorter_release(s->so, 1, &late)) > 0) {
			rc = stream_restart(s, late, 1, !layer);
		} else if (rc < 0) {
			rc = INGEST_EIO;
		} else {
			rc = model_build_close(s->b, &restart);
			s->b = NULL;
			written = rc == INGEST_OK && !restart;
			if (rc == INGEST_OK && restart)
				rc = stream_restart(s, 0, 1, !layer);
		}
	}
	/* started again and matched nothing since: at the end, into a new
	 * database rather than the one emptied in place */
	if (rc == INGEST_OK && !written && !layer && s->regrow)
		rc = stream_fresh(s);
	if (rc == INGEST_OK && !written && (rc = stream_open_db(s)) == INGEST_OK) {
		/* the batch's writing: a growing stream started again at its end
		 * writes the rest at once, without commits (they would hold it
		 * all in memory first) */
		struct ingest_opts bo = s->o;

		bo.growing = 0;
		bo.commit_every = 0;
		rc = model_build(&s->m, s->so, &s->s, s->res, &bo);
	}
	if (rc == INGEST_OK && s->o.progress && s->o.progress(s->o.progress_ctx, INGEST_PHASE_INDEX, 0, 1, 0) != 0)
		rc = INGEST_ECANCEL;
	if (layer) /* a pause's: the staged tables in, no index (ingest_stream_pause) */
		return rc == INGEST_OK && (dbw_drain(&s->s) != 0 || tracedb_unstage(s->s.db) != 0) ? INGEST_EDB : rc;
	if (rc == INGEST_OK && (dbw_index(&s->s) != 0 || dbw_commit(&s->s) != 0))
		rc = INGEST_EDB;
	return rc;
}

/* ingest_stream_end in two halves, so that ingest_file can unmap its
 * input between them. */
static int stream_end_write(struct ingest_stream *s)
{
	int rc = stream_write(s, 0);

	if (rc != INGEST_OK)
		stream_fail(s, rc);
	if (s->s_open) {
		dbw_close(&s->s);
		s->s_open = 0;
	}
	sorter_free(s->so); /* the scratch files go before the rename */
	s->so = NULL;
	model_fini(&s->m);
	dec_close(&s->d);
	if (rc == INGEST_OK && s->o.symbols)
		symbolize_result(s->tmp, s->o.symbols, s->res);
	if (rc == INGEST_OK && strcmp(s->tmp, s->out) != 0)
		tracedb_remove(s->out); /* the one that was there, and WAL mode's files beside it */
	if (rc == INGEST_OK && rename(s->tmp, s->out) != 0)
		rc = stream_fail(s, set_error(s->res, INGEST_EDB, strerror(errno)));
	if (rc != INGEST_OK)
		tracedb_remove(s->tmp);
	if (rc == INGEST_OK)
		s->rc = INGEST_ECANCEL; /* nothing more: it ended */
	return rc;
}

/* ---- a growing stream's pause (ingest.h) -------------------------------- */

/* PRAGMA data_version of the stream's connection: it changes when another
 * connection commits (a pause's layer), and only then. -1 on failure. */
static int64_t data_version(struct ingest_stream *s)
{
	sqlite3_stmt *st = NULL;
	int64_t v = -1;

	if (dbw_drain(&s->s) == 0 && sqlite3_prepare_v2(s->s.db, "PRAGMA main.data_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

int ingest_stream_pause_mark(struct ingest_stream *s)
{
	if (s->rc != INGEST_OK || !s->s_open)
		return s->rc != INGEST_OK ? s->rc : INGEST_EIO;
	/* out of its transaction (empty: a commit just ran), so that no read
	 * of this connection's holds the database as it was while the layer
	 * commits; ingest_stream_unpause begins the next */
	/* (started again with nothing matched since, its transaction holds
	 * only the emptying of the tables: rolled back, the readers keep the
	 * last commit, and the unpause empties them again) */
	if (dbw_drain(&s->s) != 0 ||
	    sqlite3_exec(s->s.db, s->regrow ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) != SQLITE_OK ||
	    (s->layer_version = data_version(s)) < 0)
		return stream_fail(s, set_error(s->res, INGEST_EDB, sqlite3_errmsg(s->s.db)));
	s->reclear = s->regrow;
	return INGEST_OK;
}

/* Writes the n bytes at p to path whole (through a temporary name); 0 or -1. */
static int write_whole(const char *path, const void *p, size_t n)
{
	char tmp[4200];
	FILE *f;
	int rc;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((f = fopen(tmp, "wb")) == NULL)
		return -1;
	rc = (n == 0 || fwrite(p, 1, n, f) == n) ? 0 : -1;
	rc |= fclose(f) == 0 ? 0 : -1;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -1;
	if (rc != 0)
		remove(tmp);
	return rc;
}

int ingest_stream_pause(struct ingest_stream *s, const char *undo)
{
	sqlite3_session *sess = NULL;
	void *cs = NULL, *inv = NULL;
	int ncs = 0, ninv = 0, rc;

	if (s->rc != INGEST_OK || !s->o.growing || s->batch || !s->s_open)
		return s->rc != INGEST_OK ? s->rc : INGEST_EIO;
	if (dbw_reopen_child(&s->s, s->tmp) != 0 || dbw_drain(&s->s) != 0)
		return stream_fail(s, INGEST_EDB);
	s->layer = 1; /* its commits do not COMMIT: it does, once, below */
	if (s->b != NULL)
		s->b->layer = 1;
	/* every change of the layer is recorded, to be undone */
	if (sqlite3session_create(s->s.db, "main", &sess) != SQLITE_OK || sqlite3session_attach(sess, NULL) != SQLITE_OK) {
		sqlite3session_delete(sess);
		return stream_fail(s, set_error(s->res, INGEST_EDB, "cannot record a pause's changes"));
	}
	/* started again (ingest_stream_pause_mark): the emptying, again */
	if (s->reclear && stream_clear_db(s) != 0)
		rc = set_error(s->res, INGEST_EDB, sqlite3_errmsg(s->s.db));
	else if ((rc = stream_end_decode(s)) == INGEST_OK)
		rc = stream_write(s, 1);
	if (rc == INGEST_OK && dbw_drain(&s->s) != 0)
		rc = INGEST_EDB;
	if (rc == INGEST_OK &&
	    (sqlite3session_changeset(sess, &ncs, &cs) != SQLITE_OK || sqlite3changeset_invert(ncs, cs, &ninv, &inv) != SQLITE_OK ||
	     write_whole(undo, inv, (size_t)ninv) != 0))
		rc = set_error(s->res, INGEST_EDB, "cannot keep what undoes a pause's changes");
	sqlite3session_delete(sess);
	sqlite3_free(cs);
	sqlite3_free(inv);
	/* the undo is on disk before the layer commits: a layer that
	 * committed can always be undone */
	if (rc == INGEST_OK && dbw_commit(&s->s) != 0)
		rc = INGEST_EDB;
	return rc == INGEST_OK ? rc : stream_fail(s, rc);
}

/* What undoing a layer met: the first conflict's table and kind. */
struct undo_seen {
	char table[64];
	const char *why;
};

/* Refuses what cannot be: a change the layer made that is not there. */
static int undo_conflict(void *ctx, int why, sqlite3_changeset_iter *it)
{
	static const char *const whys[] = { [SQLITE_CHANGESET_DATA] = "a row differs",
					    [SQLITE_CHANGESET_NOTFOUND] = "a row is missing",
					    [SQLITE_CHANGESET_CONFLICT] = "a row is there already",
					    [SQLITE_CHANGESET_CONSTRAINT] = "a constraint fails",
					    [SQLITE_CHANGESET_FOREIGN_KEY] = "a foreign key fails" };
	struct undo_seen *u = ctx;
	const char *table = NULL;
	int ncol, op, indirect;

	if (u->why == NULL) {
		u->why = why >= 0 && why < (int)(sizeof(whys) / sizeof(whys[0])) && whys[why] ? whys[why] : "a conflict";
		if (sqlite3changeset_op(it, &table, &ncol, &op, &indirect) == SQLITE_OK && table != NULL)
			snprintf(u->table, sizeof(u->table), "%s", table);
	}
	return SQLITE_CHANGESET_ABORT;
}

/*
 * Undoes a layer that committed. Should its changes not be there as it
 * made them (which no known path does: the stream's connection writes
 * nothing while a layer runs), the stream is not failed: it starts again
 * from its first byte (stream_restart), which empties every table in this
 * transaction, so that what readers see next is made from the input
 * alone; the server's log says so.
 */
int ingest_stream_unpause(struct ingest_stream *s, const char *undo)
{
	struct undo_seen seen = { "", NULL };
	uint8_t *buf = NULL;
	size_t n = 0;
	int64_t v;
	int rc = INGEST_OK;

	if (s->rc != INGEST_OK || !s->s_open)
		return s->rc;
	if ((v = data_version(s)) < 0 || sqlite3_exec(s->s.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return stream_fail(s, set_error(s->res, INGEST_EDB, sqlite3_errmsg(s->s.db)));
	if (v != s->layer_version) { /* the layer committed: its undo was written before */
		if ((buf = read_all(undo, (size_t)1 << 40, &n)) == NULL && n != 0) {
			rc = set_error(s->res, INGEST_EIO, "cannot read what undoes a pause's changes");
		} else if (sqlite3changeset_apply(s->s.db, (int)n, buf, NULL, undo_conflict, &seen) != SQLITE_OK) {
			fprintf(stderr,
				"trace-server: a paused trace's layer cannot be undone (%s%s%s): "
				"its stream is ingested again from the first byte\n",
				seen.why ? seen.why : sqlite3_errmsg(s->s.db), seen.table[0] ? " in " : "", seen.table);
			s->reclear = 0;
			free(buf);
			remove(undo);
			if ((rc = stream_restart(s, 0, 0, 0)) != INGEST_OK)
				return stream_fail(s, rc);
			return INGEST_OK;
		}
		free(buf);
	}
	remove(undo);
	if (rc == INGEST_OK && s->reclear && stream_clear_db(s) != 0)
		rc = set_error(s->res, INGEST_EDB, sqlite3_errmsg(s->s.db));
	s->reclear = 0;
	return rc == INGEST_OK ? rc : stream_fail(s, rc);
}

int ingest_stream_end(struct ingest_stream *s)
{
	int rc;

	if (s->rc != INGEST_OK)
		return s->rc;
	if ((rc = stream_end_decode(s)) != INGEST_OK)
		return stream_fail(s, rc);
	return stream_end_write(s);
}

void ingest_stream_free(struct ingest_stream *s)
{
	if (s == NULL)
		return;
	if (s->rc == INGEST_OK || s->s_open || s->so) { /* not ended: nothing is left behind */
		stream_drop(s);
		s->so = NULL;
	} else {
		dec_close(&s->d);
	}
	if (s->keep_fd >= 0)
		close(s->keep_fd);
	free(s);
}

/*
 * Feeds a regular file through a read-only mapping, CHUNK bytes at a time,
 * without copying it: the decoders read the mapped pages directly, and the
 * pages decoded are dropped behind them so that the input never sits in
 * memory whole. The format is told from the mapping's (or the prefix's)
 * first chunk. Returns INGEST_OK or an error; -1 when the file cannot be
 * mapped (then it is read instead). *map is left mapped (XRay reads it
 * until its decoder finishes): the caller unmaps *map_len bytes.
 */
static int feed_mapped(struct ingest_stream *s, FILE *f, uint64_t size, uint8_t **mapp, size_t *map_len)
{
	const struct ingest_opts *o = &s->o;
	const char *format = o->format;
	uint64_t off, dropped = 0;
	int whole = !o->max_bytes; /* a live trace's snapshots read it again */
	uint8_t *map;
	int rc = INGEST_OK;

	if (size == 0 || size > SIZE_MAX ||
	    (map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fileno(f), 0)) == MAP_FAILED)
		return -1;
	*mapp = map;
	*map_len = (size_t)size;
	madvise(map, (size_t)size, MADV_SEQUENTIAL);
	if (format == NULL)
		format = ingest_detect(map, size < CHUNK ? (size_t)size : CHUNK);
	s->stable = map;
	rc = stream_decoder(s, format, s->forced);
	for (off = 0; rc == INGEST_OK && off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;

		rc = stream_piece(s, map + off, n);
		if (!s->d.xray && off - dropped >= 4 * (uint64_t)CHUNK) { /* the FXT decoder copies what it keeps */
			madvise(map + dropped, (size_t)(off - dropped), MADV_DONTNEED);
			if (whole) /* read once: out of the page cache too (behind.h) */
				behind_forget(fileno(f), dropped, off);
			dropped = off;
		}
	}
	return rc;
}

/* Feeds the whole file; a regular file is mapped, anything else (a pipe, a
 * file that cannot be mapped) read in chunks. */
static int feed_file(struct ingest_stream *s, FILE *f, uint64_t size, uint8_t **map, size_t *map_len)
{
	uint8_t *buf;
	size_t n;
	int rc;

	if ((rc = feed_mapped(s, f, size, map, map_len)) != -1)
		return rc;
	if ((buf = malloc(CHUNK)) == NULL)
		return INGEST_ENOMEM;
	rc = INGEST_OK;
	n = fread(buf, 1, CHUNK, f);
	if (n > 0)
		rc = stream_decoder(s, s->o.format ? s->o.format : ingest_detect(buf, n), s->forced);
	else if (ferror(f))
		rc = INGEST_EIO;
	while (rc == INGEST_OK && n > 0) {
		rc = stream_piece(s, buf, n);
		if (rc == INGEST_OK)
			n = fread(buf, 1, CHUNK, f);
	}
	if (rc == INGEST_OK && ferror(f))
		rc = INGEST_EIO;
	free(buf);
	return rc;
}
/* Times the phases as they are reported, for res->phase_seconds, and
 * hands every report on to the caller's progress function. */
struct phase_clock {
	ingest_progress_fn fn; /* the caller's; may be NULL */
	void *ctx;
	struct ingest_result *res;
	int phase;             /* the phase being timed, -1 before the first */
	double t0;             /* when it began */
};

double ingest_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A report of a new phase (INGEST_PHASES: the ingest returned) closes the one before. */
static void clock_phase(struct phase_clock *c, int phase)
{
	double t;

	if (phase == c->phase)
		return;
	t = ingest_now_s();
	if (c->phase >= 0 && c->phase < INGEST_PHASES)
		c->res->phase_seconds[c->phase] += t - c->t0;
	c->phase = phase;
	c->t0 = t;
}

static int timed_progress(void *ctx, enum ingest_phase phase, uint64_t done, uint64_t total, uint64_t events)
{
	struct phase_clock *c = ctx;

	if (phase >= 0 && phase < INGEST_PHASES)
		clock_phase(c, (int)phase);
	return c->fn ? c->fn(c->ctx, phase, done, total, events) : 0;
}

/* ingest_file's work, through a stream fed the file and ended (one path
 * with ingest_stream_*); ingest_file times its phases. */
static int ingest_timed(const char *in_path, const char *out_db, const struct ingest_opts *opts,
			struct ingest_result *res)
{
	struct ingest_stream *s;
	struct stat st;
	uint8_t *map = NULL;
	size_t map_len = 0;
	FILE *f;
	int rc;

	if ((s = stream_create(out_db, opts, res, 1, &rc)) == NULL)
		return rc;
	if ((f = fopen(in_path, "rb")) == NULL || fstat(fileno(f), &st) != 0) {
		snprintf(res->error, sizeof(res->error), "cannot open %s: %s", in_path, strerror(errno));
		if (f)
			fclose(f);
		ingest_stream_free(s);
		return INGEST_EIO;
	}
	if (!(opts && opts->max_bytes)) /* an archive read whole, maybe just uploaded */
		behind_settle(fileno(f), 0);
	s->size = (uint64_t)st.st_size;
	if (opts && opts->max_bytes && opts->max_bytes < s->size)
		s->size = opts->max_bytes;
	rc = feed_file(s, f, s->size, &map, &map_len);
	if (rc == INGEST_OK)
		rc = stream_end_decode(s);
	if (map != NULL)
		munmap(map, map_len);
	fclose(f);
	if (rc != INGEST_OK) {
		rc = stream_fail(s, rc);
	} else {
		rc = stream_end_write(s);
	}
	ingest_stream_free(s);
	return rc;
}

int ingest_file(const char *in_path, const char *out_db, const struct ingest_opts *opts, struct ingest_result *res)
{
	struct ingest_opts o = { 0 };
	struct phase_clock c = { NULL, NULL, res, -1, 0 };
	int rc;

	if (opts)
		o = *opts;
	c.fn = o.progress;
	c.ctx = o.progress_ctx;
	o.progress = timed_progress;
	o.progress_ctx = &c;
	rc = ingest_timed(in_path, out_db, &o, res);
	clock_phase(&c, INGEST_PHASES);
	return rc;
}

static void info_counts(FILE *out, const char *title, const char *const *names, const uint64_t *v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (v[i])
			fprintf(out, "  %-10s %-22s %" PRIu64 "\n", title, names[i] ? names[i] : "unknown", v[i]);
}

static const char *const record_names[16] = { "metadata", "initialization", "string", "thread", "event", "blob",
					      "userspace object", "kernel object", "scheduling", "log", "profiler",
					      NULL, NULL, NULL, NULL, "large" };
static const char *const event_names[16] = { "instant", "counter", "duration begin", "duration end",
					     "duration complete", "async begin", "async instant", "async end",
					     "flow begin", "flow step", "flow end" };
static const char *const meta_names[16] = { NULL, "provider info", "provider section", "provider event",
					    "trace info" };
static const char *const sched_names[16] = { "legacy switch", "context switch", "wakeup" };
static const char *const prof_names[16] = { "module", "mmap", "backtrace" };

static void info_print(FILE *out, const struct decoder *dec, const struct model *m, uint64_t bytes)
{
	const struct fxt_decoder *d = &dec->fxt;
	size_t i;

	if (dec->xray) {
		fprintf(out, "format     xray-fdr\nbytes      %" PRIu64 "\nevents     %" PRIu64 "\nthreads    %zu\n"
			     "arguments  %zu\n",
			bytes, m->events_total, m->threads.len, m->args.len);
		goto out_diag;
	}
	fprintf(out, "format     fxt (%s-endian)\nbytes      %" PRIu64 "\n", d->big_endian ? "big" : "little",
		d->st.bytes);
	info_counts(out, "record", record_names, d->st.records, 16);
	info_counts(out, "event", event_names, d->st.events, 16);
	info_counts(out, "metadata", meta_names, d->st.metadata, 16);
	info_counts(out, "sched", sched_names, d->st.sched, 16);
	info_counts(out, "profiler", prof_names, d->st.profiler, 16);
	fprintf(out, "arguments  %" PRIu64 "\nstrings    %zu distinct\nthreads    %zu\n", d->st.args, m->soff.len,
		m->threads.len);
	for (i = 0; i < m->providers.len; i++) {
		const struct mdl_provider *p = *VEC_AT(&m->providers, struct mdl_provider *, i);

		fprintf(out, "provider   %u \"%s\" ticks/s %" PRIu64 " buffer overflows %" PRIu64 "\n", p->id,
			model_str(m, p->name), p->ticks_per_second, p->overflows);
	}
out_diag:
#define X(n)                                                                                                           \
	if (m->diag.n)                                                                                                 \
		fprintf(out, "diagnostic %-26s %" PRIu64 "\n", #n, m->diag.n);
	MDL_DIAG_LIST(X)
#undef X
}

int ingest_info(const char *in_path, void *out_file, char *err, size_t errlen)
{
	struct ingest_result res;
	struct ingest_stream *s;
	uint8_t *map = NULL;
	size_t map_len = 0;
	FILE *f;
	int rc;

	if ((s = stream_create(NULL, NULL, &res, 1, &rc)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return INGEST_ENOMEM;
	}
	if ((f = fopen(in_path, "rb")) == NULL) {
		snprintf(err, errlen, "cannot open %s: %s", in_path, strerror(errno));
		ingest_stream_free(s);
		return INGEST_EIO;
	}
	rc = feed_file(s, f, 0, &map, &map_len); /* size 0: read, not mapped */
	if (rc == INGEST_OK)
		rc = stream_end_decode(s);
	fclose(f);
	if (rc == INGEST_OK)
		info_print(out_file, &s->d, &s->m, res.bytes);
	else
		snprintf(err, errlen, "%s", res.error[0] ? res.error : ingest_strerror(rc));
	s->rc = INGEST_ECANCEL; /* ended: free drops what is left */
	stream_drop(s);
	ingest_stream_free(s);
	return rc;
}
