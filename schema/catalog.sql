-- The server's catalog of traces (one file, catalog.db, under --data).
-- Each trace's own data lives in traces/<id>/: the uploaded bytes (source),
-- for XRay the instrumented binary or symbol map (binary), and the database
-- ingest made of them (trace.db, see trace.sql).
PRAGMA user_version = 4;

CREATE TABLE IF NOT EXISTS traces (
	id INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	format TEXT,                  -- "fxt", "xray-fdr"; NULL until detected
	format_hint TEXT,             -- what the uploader asked for, if anything
	size_bytes INTEGER NOT NULL,
	status TEXT NOT NULL,         -- queued, ingesting, ready, failed, live
	error_code TEXT,
	error_message TEXT,
	created_at TEXT NOT NULL,     -- RFC 3339, UTC
	start_ns INTEGER,
	end_ns INTEGER,
	summary TEXT,                 -- JSON members "counts", "providers", "diagnostics"
	symbols_named INTEGER,        -- XRay: functions named from a binary or symbol map
	symbols_error TEXT,           -- XRay: why the symbols given could not be used
	binary_name TEXT,             -- XRay: the file name of the instrumented binary that named it
	description TEXT,             -- free text the team wrote about it
	pinned INTEGER NOT NULL DEFAULT 0, -- 1: retention never removes it
	stored_bytes INTEGER,         -- every file of the trace on disk
	indexed INTEGER NOT NULL DEFAULT 0, -- 1: names/name_stats hold it
	stream TEXT,                  -- a live trace's stream: receiving, complete, dropped, interrupted
	db_file TEXT                  -- the file holding its database; NULL = trace.db (a shared
				      -- ingest job's result is trace-<token>.db, one per claim)
);

-- Free-form key=value labels (build=1234, device=x64).
CREATE TABLE IF NOT EXISTS labels (
	trace_id INTEGER NOT NULL,
	key TEXT NOT NULL,
	value TEXT NOT NULL,
	PRIMARY KEY (trace_id, key)
) WITHOUT ROWID;

-- The name index, copied from each ready trace's own name_stats (which
-- ingest writes): for each slice name of each ready trace, how many slices
-- carry it and how long they ran. Search
-- across traces reads only these tables, never a trace's own database.
CREATE TABLE IF NOT EXISTS names (
	id INTEGER PRIMARY KEY,
	name TEXT NOT NULL UNIQUE
);

-- count: slices of that name; durations cover those that ended (dur >= 0).
-- sketch: the durations' histogram (tracedb/sketch.h: log-linear buckets,
-- 32 per power of two), from which p50 and p95 are estimated.
CREATE TABLE IF NOT EXISTS name_stats (
	name_id INTEGER NOT NULL,
	trace_id INTEGER NOT NULL,
	count INTEGER NOT NULL,
	ended INTEGER NOT NULL,
	total_ns INTEGER NOT NULL,
	max_ns INTEGER NOT NULL,
	sketch BLOB NOT NULL,
	PRIMARY KEY (name_id, trace_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS name_stats_trace ON name_stats(trace_id);

-- Ids are never reused, even after the newest trace is deleted.
CREATE TABLE IF NOT EXISTS sequence (
	name TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) WITHOUT ROWID;

-- Notes a team writes on a trace (docs/API.md, Notes): on the whole trace
-- (start_ns NULL), on a time range [start_ns, end_ns] of the trace's
-- clock, optionally on one track, or on one slice (slice_id, with the
-- slice's range and track). Removed with their trace.
CREATE TABLE IF NOT EXISTS notes (
	id INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused
	trace_id INTEGER NOT NULL,
	start_ns INTEGER,
	end_ns INTEGER,
	track_id INTEGER,
	slice_id INTEGER,
	text TEXT NOT NULL,
	author TEXT NOT NULL,
	created_at TEXT NOT NULL,     -- RFC 3339, UTC
	edited_at TEXT                -- NULL: never edited
);
CREATE INDEX IF NOT EXISTS notes_trace ON notes(trace_id, id);
