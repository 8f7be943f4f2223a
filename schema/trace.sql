-- The layout of one trace database (one SQLite file per trace).
--
-- This file is the only place the table layout is written down; the code
-- embeds it at build time. Its version (PRAGMA user_version) has one owner,
-- TRACEDB_SCHEMA_VERSION in tracedb/tracedb.h, which also owns the lod
-- record layout. docs/SCHEMA.md explains it for users.
--
-- Bulk tables are located through directory tables instead of secondary
-- indexes, so that loading runs at SQLite's raw insert speed. The rows of a
-- group (slices of one track and depth, points of one counter track, runs
-- of one cpu) are numbered in ts order from 0, their ordinals, and lie in
-- one or more extents of consecutive ids, listed in table extents:
--   slices    groups are (track_id, depth); track_depths has their facts
--   counters  groups are (track_id, 0) of a counter track
--   sched     groups are (track_id, 0) of a cpu track
--   logs      no groups: ordered by ts from id 1
-- Within a group ts never decreases with the ordinal, so a time window is
-- found by binary search on it. An archive read whole gets one extent per
-- group, in (track, depth, ts) order; a capture written while it streams
-- in would get an extent per chunk of ids reserved as its rows come.
-- Either way a group's later extents have greater ids, and an ordinal
-- keeps its meaning: the level of detail (table lod) names rows by it.

-- 64-bit unsigned values (pid, tid, koid, pointers, u64 arguments) are stored
-- as the signed 64-bit integer with the same bits.

CREATE TABLE meta (
	key TEXT PRIMARY KEY,
	value
) WITHOUT ROWID;

-- Every name, category, argument key, string value and log message.
CREATE TABLE strings (
	id INTEGER PRIMARY KEY,
	str TEXT NOT NULL
);

CREATE TABLE providers (
	id INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	ticks_per_second INTEGER NOT NULL,
	buffer_overflows INTEGER NOT NULL
);

CREATE TABLE processes (
	pid INTEGER PRIMARY KEY,
	name TEXT
);

CREATE TABLE threads (
	id INTEGER PRIMARY KEY,
	pid INTEGER NOT NULL,
	tid INTEGER NOT NULL,
	name TEXT
);

-- kind: 'thread' (pid, thread_id), 'async' (pid, name_id, category_id),
-- 'counter' (pid, name_id, series_id, counter_id), 'cpu' (cpu).
CREATE TABLE tracks (
	id INTEGER PRIMARY KEY,
	kind TEXT NOT NULL,
	pid INTEGER,
	thread_id INTEGER,
	name_id INTEGER,
	category_id INTEGER,
	series_id INTEGER,
	counter_id INTEGER,
	cpu INTEGER,
	max_depth INTEGER NOT NULL DEFAULT 0,
	min_value,
	max_value,
	lod_levels INTEGER, -- counter and cpu tracks: bit L set when lod has level L
	marks BLOB          -- counter and cpu tracks: the time marks of their points or runs, as
			    -- track_depths.marks are of a depth's slices
);

CREATE TABLE track_depths (
	track_id INTEGER NOT NULL,
	depth INTEGER NOT NULL,
	max_dur INTEGER NOT NULL, -- an unterminated slice counts up to the trace end
	count INTEGER NOT NULL,
	disjoint INTEGER NOT NULL,   -- 1: every slice ends before the next starts
	lod_levels INTEGER NOT NULL, -- bit L set when lod has level L for this depth
	marks BLOB NOT NULL,         -- the ts of every 1024th slice and of the last, by ordinal
				     -- (the layout: tracedb/tracedb.h, "Time marks")
	PRIMARY KEY (track_id, depth)
) WITHOUT ROWID;

-- Where the rows of each group lie (see the top of this file): rows
-- first_ord .. first_ord + count - 1 of the group are ids first_id ..
-- first_id + count - 1. A group's extents follow one another without gaps
-- in ordinals, from 0, and in ids.
CREATE TABLE extents (
	track_id INTEGER NOT NULL,
	depth INTEGER NOT NULL,
	first_ord INTEGER NOT NULL,
	first_id INTEGER NOT NULL,
	count INTEGER NOT NULL,
	PRIMARY KEY (track_id, depth, first_ord)
) WITHOUT ROWID;

-- dur is -1 for a slice that never ended.
CREATE TABLE slices (
	id INTEGER PRIMARY KEY,
	track_id INTEGER NOT NULL,
	ts INTEGER NOT NULL,
	dur INTEGER NOT NULL,
	depth INTEGER NOT NULL,
	name_id INTEGER NOT NULL,
	category_id INTEGER NOT NULL,
	parent_id INTEGER,
	arg_set_id INTEGER
);

-- type: 0 null, 1 int32, 2 uint32, 3 int64, 4 uint64, 5 double, 6 string,
-- 7 pointer, 8 koid, 9 bool, 10 blob. Integers and pointers in int_value,
-- doubles in real_value, strings as string_id, blobs in blob_value.
-- An arg set is consecutive rows; its id is the id of its first row, so a
-- set is read as `id BETWEEN set AND set + 511 AND arg_set_id = set` (a
-- set holds at most 255 arguments of a begin and 255 of its end).
CREATE TABLE args (
	id INTEGER PRIMARY KEY,
	arg_set_id INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	key_id INTEGER NOT NULL,
	type INTEGER NOT NULL,
	int_value INTEGER,
	real_value REAL,
	string_id INTEGER,
	blob_value BLOB
);

-- value keeps its type: an integer for integer arguments, a real for doubles.
CREATE TABLE counters (
	id INTEGER PRIMARY KEY,
	track_id INTEGER NOT NULL,
	ts INTEGER NOT NULL,
	value
);

-- An arrow runs from where its from-slice ends (from_ts) to where its to-slice
-- begins (to_ts); from_ts is the from-slice's start when it never ended.
CREATE TABLE flows (
	id INTEGER PRIMARY KEY,
	flow_id INTEGER NOT NULL,
	category_id INTEGER NOT NULL,
	name_id INTEGER NOT NULL,
	from_slice_id INTEGER NOT NULL,
	to_slice_id INTEGER NOT NULL,
	from_ts INTEGER NOT NULL,
	to_ts INTEGER NOT NULL
);

-- end_state: new, running, suspended, blocked, dying, dead; NULL while running
-- at the end of the trace (dur -1).
CREATE TABLE sched (
	id INTEGER PRIMARY KEY,
	cpu INTEGER NOT NULL,
	ts INTEGER NOT NULL,
	dur INTEGER NOT NULL,
	thread_id INTEGER NOT NULL,
	pid INTEGER NOT NULL,
	tid INTEGER NOT NULL,
	priority INTEGER NOT NULL,
	end_state TEXT
);

CREATE TABLE logs (
	id INTEGER PRIMARY KEY,
	ts INTEGER NOT NULL,
	thread_id INTEGER NOT NULL,
	pid INTEGER NOT NULL,
	tid INTEGER NOT NULL,
	message_id INTEGER NOT NULL
);

-- kind: 'blob' (blob record; blob_type set), 'large_blob' (with ts, thread,
-- args), 'large_blob_data' (no metadata). Chunks of one blob name keep their
-- record order by id.
CREATE TABLE blobs (
	id INTEGER PRIMARY KEY,
	kind TEXT NOT NULL,
	blob_type INTEGER,
	ts INTEGER,
	thread_id INTEGER,
	category_id INTEGER,
	name_id INTEGER NOT NULL,
	arg_set_id INTEGER,
	size INTEGER NOT NULL,
	data BLOB
);

-- The last kernel object record for a koid wins (type 1 process, 2 thread, ...).
CREATE TABLE kernel_objects (
	koid INTEGER PRIMARY KEY,
	type INTEGER NOT NULL,
	name TEXT,
	process_koid INTEGER,
	arg_set_id INTEGER
);

CREATE TABLE userspace_objects (
	id INTEGER PRIMARY KEY,
	pid INTEGER NOT NULL,
	pointer INTEGER NOT NULL,
	name TEXT,
	arg_set_id INTEGER
);

-- kind: 'module' (module_id, name, build_id), 'mmap' (module_id, flags,
-- start_address, address_range, vaddr), 'backtrace' (frames: little-endian
-- 64-bit addresses).
CREATE TABLE profiler (
	id INTEGER PRIMARY KEY,
	kind TEXT NOT NULL,
	ts INTEGER NOT NULL,
	thread_id INTEGER NOT NULL,
	module_id INTEGER,
	name TEXT,
	build_id BLOB,
	flags INTEGER,
	start_address INTEGER,
	address_range INTEGER,
	vaddr INTEGER,
	frames BLOB
);

CREATE TABLE diagnostics (
	name TEXT PRIMARY KEY,
	value INTEGER NOT NULL
) WITHOUT ROWID;

-- Conveniences for people writing SQL.
CREATE VIEW slice_view AS
SELECT s.id, s.track_id, s.ts, s.dur, s.depth, n.str AS name, c.str AS category, s.parent_id, s.arg_set_id
FROM slices s JOIN strings n ON n.id = s.name_id JOIN strings c ON c.id = s.category_id;

CREATE VIEW arg_view AS
SELECT a.arg_set_id, a.seq, k.str AS key, a.type,
       CASE a.type WHEN 5 THEN a.real_value WHEN 6 THEN v.str WHEN 10 THEN a.blob_value ELSE a.int_value END AS value
FROM args a JOIN strings k ON k.id = a.key_id LEFT JOIN strings v ON v.id = a.string_id;

-- Ingest writes lod, track_stacks and name_index into a stage beside the
-- database and moves them in whole once every row is in (tracedb.h,
-- TRACEDB_STAGED), so that their pages are full.

-- The name index, which search by name reads: for each slice name, every
-- slice of that name in (ts, id) order, in chunks of up to 256. first_ts
-- and first_id are the chunk's first slice; the others are packed in data
-- as varint pairs (ts minus the previous ts, id minus the previous id,
-- zigzag); the codec has one owner, tracedb/tracedb.h.
CREATE TABLE name_index (
	name_id INTEGER NOT NULL,
	first_ts INTEGER NOT NULL,
	first_id INTEGER NOT NULL,
	count INTEGER NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY (name_id, first_ts, first_id)
) WITHOUT ROWID;

-- Per slice name, what search across traces reads (the server copies these
-- rows into its catalog when the trace is ready): how many slices carry the
-- name, how many of them ended, their total and longest duration in ns
-- (ended ones only; total stops at 2^63 - 1), and a sketch of the ended
-- ones' durations whose layout and encoding have one owner,
-- tracedb/sketch.h.
CREATE TABLE name_stats (
	name_id INTEGER PRIMARY KEY,
	count INTEGER NOT NULL,
	ended INTEGER NOT NULL,
	total_ns INTEGER NOT NULL,
	max_ns INTEGER NOT NULL,
	sketch BLOB NOT NULL
);

-- Per track, what an area selection of the whole trace ([meta start_ns,
-- end_ns]) reads instead of every slice (query/area.c, query/flame.c). Wall
-- times are the slices' ns inside the trace, an unterminated slice running
-- to end_ns; a slice's children are the slices one level deeper whose parent
-- it is.
--
-- track_names: per slice name of the track, its slices' count, the sum of
-- their wall times, that sum less their children's (self_ns) and the
-- longest.
--
-- track_stacks: the call stacks merged by name path, as the flame graph
-- merges them. A node is (parent, name_id): the slices of that name whose
-- parent slice is in node parent; parent -1 is a slice without one (depth
-- 0, or a deeper slice whose parent is not one level up, e.g. an async
-- operation in a lane below the first: such a root at depth > 0 is not in
-- a flame graph, nor are its callees). Nodes are numbered from 0 in the
-- order a whole-trace scan meets them: depth by depth, then by ts, so a
-- parent comes before its children. Each node has its parent, depth,
-- name_id, count, total wall time, the children's part of it and the
-- longest, as in track_names; they are packed, up to 1024 nodes a row
-- from node first_node on, column by column and zstd-compressed, in a
-- layout and encoding that have one owner, tracedb/tracedb.h ("Packed
-- rows"; a trace of random stacks has about a node for every two slices,
-- and a row each cost ingest about a tenth more time).
-- A track keeps the nodes of depths 0 .. D:
-- every depth (D = tracks.max_depth) unless they are more than 1048576, then
-- the first depths that fit (depth 0 always); a reader needing deeper ones
-- reads the slices.
CREATE TABLE track_names (
	track_id INTEGER NOT NULL,
	name_id INTEGER NOT NULL,
	count INTEGER NOT NULL,
	wall_ns INTEGER NOT NULL,
	self_ns INTEGER NOT NULL,
	max_ns INTEGER NOT NULL,
	PRIMARY KEY (track_id, name_id)
) WITHOUT ROWID;

CREATE TABLE track_stacks (
	track_id INTEGER NOT NULL,
	first_node INTEGER NOT NULL,
	count INTEGER NOT NULL,
	nodes BLOB NOT NULL,
	PRIMARY KEY (track_id, first_node)
) WITHOUT ROWID;

-- Level of detail (mipmaps), built at ingest. For every (track, depth) and
-- some levels L in 10, 12, 14 ..., the slices starting in one bucket
-- [bucket << L, (bucket + 1) << L) ns are summarised when there are at least
-- two of them. A level is stored only when, over the group's first P
-- slices (P the greatest power of two at or below its count, at least 2),
-- it halves the items of the last stored one (track_depths.lod_levels,
-- tracks.lod_levels say which): the set changes only when the count
-- doubles, wherever the commits of a growing trace fall (ingest/lod.c). A
-- reader at level L uses the finest stored level at or below L. Buckets
-- holding one slice are not stored; a reader takes that slice from `slices`.
--
-- Summaries are packed, up to 256 per row, in bucket order, as records of
-- ten 64-bit words, column by column and zstd-compressed; the layout and
-- its encoding have one owner, the table and "Packed rows" in
-- tracedb/tracedb.h (slices and cpu runs: ordinal range, start, end,
-- longest, whether one never ended, names; counters: ordinal range, first
-- and last point, min and max).
-- Counter tracks use depth 0; so do cpu tracks, whose runs (sched) are
-- summarised as slices with the thread row id in place of name_id.
CREATE TABLE lod (
	track_id INTEGER NOT NULL,
	depth INTEGER NOT NULL,
	level INTEGER NOT NULL,
	first_bucket INTEGER NOT NULL,
	last_bucket INTEGER NOT NULL,
	buckets BLOB NOT NULL,
	PRIMARY KEY (track_id, depth, level, first_bucket)
) WITHOUT ROWID;

-- @indexes: what follows is created once every row is in (tracedb_index),
-- since an index built at the end costs less than one kept up row by row;
-- but at once in a database read while it grows (tracedb_index_early), whose
-- commits write flows: each is made if not there yet.
-- flows by time: a window's arrows, and a slice's (from_ts is where its
-- from-slice ends, to_ts where its to-slice begins: tracedb_flow_from_ts)
CREATE INDEX IF NOT EXISTS flows_from_ts ON flows(from_ts);
CREATE INDEX IF NOT EXISTS flows_to_ts ON flows(to_ts);
CREATE INDEX IF NOT EXISTS userspace_objects_ptr ON userspace_objects(pid, pointer);
-- a thread's CPU runs in time order (GET /thread_states)
CREATE INDEX IF NOT EXISTS sched_thread ON sched(pid, tid, ts);
