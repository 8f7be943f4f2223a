/*
 * Notes on traces: what a team writes about a trace ("this stall is the
 * GC; see bug 1234"), on the whole trace, on a time range (optionally of
 * one track), or on one slice, for everyone who opens it (docs/API.md,
 * Notes).
 *
 * A note lives in the catalog's database (catdb.h), not in the trace's:
 * it is kept across restarts, shared by every server of a PostgreSQL
 * catalog (read from the database each time, never copied in memory, so a
 * note saved through one server shows through all at once), removed with
 * its trace, and found by the library's `q`. The catalog checks what it
 * knows (the trace, its state and time range, the text); the slice or
 * track a note names is looked up in the trace's database by the caller
 * (server/notes.c), which hands the catalog the range it found.
 */
#ifndef CATALOG_NOTES_H
#define CATALOG_NOTES_H

#include <stddef.h>
#include <stdint.h>

#include "../json/jbuf.h"

struct catalog;

enum {
	CAT_MAX_NOTE = 4096,   /* bytes of a note's text */
	CAT_MAX_AUTHOR = 100,  /* bytes of its author's name */
	CAT_NOTES_LIMIT = 100, /* notes a listing of every trace's gives by default */
	CAT_NOTES_MAX = 1000,  /* ... and at most */
};

/* A note call returns 0 or the catalog's errors (catalog.h, enum cat_err):
 * CAT_ENOTRACE, CAT_ENOTREADY, CAT_EINVAL (err says what), CAT_ENONOTE,
 * CAT_EFAIL (the database failed) and CAT_EUNAVAILABLE. */

/* A new note. has_range 0: on the whole trace; else [start_ns, end_ns]
 * of the trace's clock, on track (0: none) and slice (0: none). */
struct cat_note_in {
	const char *text;   /* 1 to CAT_MAX_NOTE bytes of UTF-8, newlines allowed */
	const char *author; /* up to CAT_MAX_AUTHOR bytes, one line; NULL = "" */
	int has_range;
	int64_t start_ns, end_ns;
	int64_t track, slice;
};

/* Which notes a listing gives: all fields 0/NULL give every note. */
struct cat_note_query {
	int64_t id;            /* this note only */
	int64_t trace;         /* this trace's; 0: every trace's */
	int by_time;           /* in (start_ns, id) order, whole-trace notes first; 0:
				* newest (highest id) first, paged by before */
	const char *author;    /* equal */
	const char *q;         /* the text contains it (ASCII letters in any case) */
	int64_t before;        /* ids below it (the next page, newest first) */
	int64_t limit;         /* rows at most; 0: no bound */
};

/* The trace's status and time range, for a note about to be added: 0,
 * CAT_ENOTRACE or CAT_ENOTREADY. */
int cat_note_target(struct catalog *c, int64_t trace, int64_t *start_ns, int64_t *end_ns);
/* Adds a note on trace (checked: text, author, the range within the
 * trace) and appends it as JSON. 0 or an error, err saying why. */
int cat_note_add(struct catalog *c, int64_t trace, const struct cat_note_in *n, struct jbuf *out, char *err,
		 size_t errlen);
/* Changes a note's text and/or author (NULL: kept) and appends it. */
int cat_note_edit(struct catalog *c, int64_t id, const char *text, const char *author, struct jbuf *out, char *err,
		  size_t errlen);
int cat_note_delete(struct catalog *c, int64_t id, char *err, size_t errlen);
/* One note as JSON: 0 or CAT_ENONOTE. */
int cat_note_json(struct catalog *c, int64_t id, struct jbuf *out, char *err, size_t errlen);
/* {"notes": [...], "next_before"}: the notes q selects (a trace's, or
 * the library's newest first, paged by next_before). */
int cat_notes_json(struct catalog *c, const struct cat_note_query *q, struct jbuf *out, char *err, size_t errlen);

#endif
