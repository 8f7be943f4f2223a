-- The server's catalog of traces (one file, catalog.db, under --data).
-- Each trace's own data lives in traces/<id>/: the uploaded bytes (source),
-- for XRay the instrumented binary or symbol map (binary), and the database
-- ingest made of them (trace.db, see trace.sql).
PRAGMA user_version = 1;

CREATE TABLE IF NOT EXISTS traces (
	id INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	format TEXT,                  -- "fxt", "xray-fdr"; NULL until detected
	format_hint TEXT,             -- what the uploader asked for, if anything
	size_bytes INTEGER NOT NULL,
	status TEXT NOT NULL,         -- queued, ingesting, ready, failed
	error_code TEXT,
	error_message TEXT,
	created_at TEXT NOT NULL,     -- RFC 3339, UTC
	start_ns INTEGER,
	end_ns INTEGER,
	summary TEXT,                 -- JSON members "counts", "providers", "diagnostics"
	symbols_named INTEGER,        -- XRay: functions named from a binary or symbol map
	symbols_error TEXT,           -- XRay: why the symbols given could not be used
	binary_name TEXT              -- XRay: the file name of the instrumented binary that named it
);

-- Ids are never reused, even after the newest trace is deleted.
CREATE TABLE IF NOT EXISTS sequence (
	name TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) WITHOUT ROWID;
