-- The catalog in PostgreSQL (--catalog postgres://...), shared by several
-- servers: the records of catalog.sql, column for column, plus what sharing
-- needs. A server applies this file at start under an advisory lock when
-- schema_version holds less than the version below, so two servers starting
-- at once do not race; every statement is idempotent, and a later version
-- adds its changes below as more such statements (ALTER TABLE ... ADD
-- COLUMN IF NOT EXISTS). A server refuses a database of a newer version.
-- schema_version = 3

CREATE TABLE IF NOT EXISTS schema_version (
	version integer NOT NULL
);

-- Trace ids, never reused (a deleted trace's id is not given again).
CREATE SEQUENCE IF NOT EXISTS trace_ids;
-- One number per save of a record and per deletion. Writers take one under
-- a transaction-scoped advisory lock held to their commit, so versions
-- commit in order: a server that has read version v has every change up to v.
CREATE SEQUENCE IF NOT EXISTS catalog_versions;

CREATE TABLE IF NOT EXISTS traces (
	id bigint PRIMARY KEY,
	name text NOT NULL,
	format text,
	format_hint text,
	size_bytes bigint NOT NULL,
	status text NOT NULL,         -- queued, ingesting, ready, failed, live
	error_code text,
	error_message text,
	created_at text NOT NULL,     -- RFC 3339, UTC
	start_ns bigint,
	end_ns bigint,
	summary text,                 -- JSON members "counts", "providers", "diagnostics"
	symbols_named bigint,
	symbols_error text,
	binary_name text,
	description text,
	pinned boolean NOT NULL DEFAULT false,
	stored_bytes bigint,
	indexed boolean NOT NULL DEFAULT false,
	stream text,
	version bigint NOT NULL       -- catalog_versions at its last save
);
CREATE INDEX IF NOT EXISTS traces_version ON traces (version);

CREATE TABLE IF NOT EXISTS labels (
	trace_id bigint NOT NULL,
	key text NOT NULL,
	value text NOT NULL,
	PRIMARY KEY (trace_id, key)
);

-- A deleted trace leaves its id and the version of its deletion, so that
-- other servers drop their copy of it.
CREATE TABLE IF NOT EXISTS deleted (
	trace_id bigint PRIMARY KEY,
	version bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS deleted_version ON deleted (version);

-- The name index (see catalog.sql).
CREATE TABLE IF NOT EXISTS names (
	id bigserial PRIMARY KEY,
	name text NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS name_stats (
	name_id bigint NOT NULL,
	trace_id bigint NOT NULL,
	count bigint NOT NULL,
	ended bigint NOT NULL,
	total_ns bigint NOT NULL,
	max_ns bigint NOT NULL,
	sketch bytea NOT NULL,
	PRIMARY KEY (name_id, trace_id)
);
CREATE INDEX IF NOT EXISTS name_stats_trace ON name_stats (trace_id);

-- Shared ingest jobs: a trace waiting for ingest, or being ingested by the
-- server holding its lease. A claim takes a new token from job_tokens; the
-- holder's result is kept only while the job still has that token (a
-- server paused past its lease, whose job another claimed, is refused).
-- The catalog's records above do not change for it.
CREATE SEQUENCE IF NOT EXISTS job_tokens;
CREATE TABLE IF NOT EXISTS jobs (
	trace_id bigint PRIMARY KEY,
	owner text,                   -- the server holding the lease; NULL until claimed
	lease_until timestamptz,      -- the lease's end unless renewed; NULL until claimed
	token bigint,                 -- the current claim's fencing token
	attempts integer NOT NULL DEFAULT 0,
	queued_at timestamptz NOT NULL DEFAULT now()
);

-- version 2: the file holding a trace's database (NULL = trace.db); a shared
-- ingest job publishes its result as trace-<token>.db, one object per claim.
ALTER TABLE traces ADD COLUMN IF NOT EXISTS db_file text;

-- version 3: notes on traces (see catalog.sql), read by every server straight
-- from here, so that a note saved through one server shows on all at once.
CREATE TABLE IF NOT EXISTS notes (
	id bigserial PRIMARY KEY,
	trace_id bigint NOT NULL,
	start_ns bigint,
	end_ns bigint,
	track_id bigint,
	slice_id bigint,
	text text NOT NULL,
	author text NOT NULL,
	created_at text NOT NULL,
	edited_at text
);
CREATE INDEX IF NOT EXISTS notes_trace ON notes (trace_id, id);

-- optional: pg_trgm
-- Search finds names that contain the text in any case (ASCII letters, as
-- SQLite's lower() does), by a trigram index on the lowered name. pg_trgm
-- is in Debian's postgresql package; a database where the extension cannot
-- be created works without the index (a scan of the names table).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX IF NOT EXISTS names_name_trgm ON names
	USING gin (translate(name, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz') gin_trgm_ops);
