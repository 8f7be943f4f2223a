// Debug tracks, as Perfetto calls them: the rows of a query drawn as
// slices on the timeline, above every other track.
//
// The query page's "Show on timeline" opens the timeline with
// &debug=<SQL>&debug_group=<column>; the timeline runs the statement
// (POST /query, so at most 10000 rows) and draws each row with a `ts` and
// a `dur` (-1: to the trace's end; NULL: an instant) as a slice, labelled
// by its `name` column when it has one. With a group column, each distinct
// value gets a track of its own (the MAX_TRACKS values with the most rows;
// the rest share one more track); without, one track holds all. Rows that
// overlap go on lanes below one another, each on the first lane free at
// its start. A row whose `id` (or `slice_id`) names a slice is that slice:
// a click selects it (others answer no click yet). The URL keeps the query, so a reload draws it again.
//
// The timeline's hooks are few: loadDebugTracks() once the tracks are
// built, a 'debug' kind that draws like a slice track (tracks.js, the
// drawing and hit test in timeline.js), keepDebug() in its URL, and the
// store (data.js) serving these tracks from the data held here.

import { api } from './api.js';
import { colorFor } from './format.js';
import { hitSlice } from './render.js';
import { ROW_H, TRACK_PAD } from './tracks.js';

const MAX_TRACKS = 32;
const MAX_LANES = 64;

// Copies the debug parameters of the page's URL (params) into q.
export function keepDebug(params, q) {
  for (const k of ['debug', 'debug_group']) if (params.get(k)) q.set(k, params.get(k));
}

// The columns a result needs to be drawn: their indexes, or null. Its
// slice ids: slice_id, or id in a statement over slices (as query.js links them).
export function debugColumns(columns, sql = '') {
  const at = (n) => columns.findIndex((c) => String(c).toLowerCase() === n);
  const ts = at('ts');
  const dur = at('dur');
  if (ts < 0 || dur < 0) return null;
  let id = at('slice_id');
  if (id < 0 && /\bfrom\s+(slices|slice_view)\b/i.test(sql)) id = at('id');
  return { ts, dur, name: at('name'), id };
}

// Typed columns of one lane, as render.js's drawSlices reads them.
function laneColumns(list, d) {
  const n = list.length;
  const D = {
    n, depth: d, ts: new Float64Array(n), end: new Float64Array(n), maxEnd: new Float64Array(n),
    id: new Float64Array(n), dur: new Float64Array(n), merged: new Int32Array(n), name: new Int32Array(n), cat: new Int32Array(n),
  };
  D.cat.fill(-1); // no category
  let m = -Infinity;
  list.forEach((r, i) => {
    D.ts[i] = r.ts;
    D.end[i] = r.end;
    m = Math.max(m, r.end);
    D.maxEnd[i] = m;
    D.id[i] = r.id;
    D.dur[i] = r.dur;
    D.name[i] = r.name;
  });
  return D;
}

// One track's data from its rows ({ts, end, dur, id, label}), sorted by ts.
function trackData(rows) {
  const names = [];
  const index = new Map();
  const lanes = [];
  const ends = [];
  for (const r of rows) {
    let i = index.get(r.label);
    if (i === undefined) {
      i = names.length;
      names.push(r.label);
      index.set(r.label, i);
    }
    r.name = i;
    let lane = ends.findIndex((e) => e <= r.ts);
    if (lane < 0) lane = ends.length < MAX_LANES ? ends.length : MAX_LANES - 1;
    ends[lane] = Math.max(ends[lane] ?? -Infinity, r.end);
    (lanes[lane] || (lanes[lane] = [])).push(r);
  }
  const depths = lanes.map((list, d) => laneColumns(list, d));
  return { depths, names, colors: names.map(colorFor), lanes: depths.length };
}

// The rows of a reply grouped: [{title, rows}], the biggest groups first.
function groupRows(r, cols, groupAt, traceEnd) {
  const groups = new Map();
  for (const row of r.rows || []) {
    const ts = Number(row[cols.ts]);
    if (row[cols.ts] === null || !Number.isFinite(ts)) continue;
    const dur = row[cols.dur] === null ? 0 : Number(row[cols.dur]);
    const end = dur < 0 ? Math.max(ts, traceEnd) : ts + (Number.isFinite(dur) ? dur : 0);
    const id = cols.id >= 0 && /^\d+$/.test(String(row[cols.id])) ? Number(row[cols.id]) : -1;
    const label = cols.name >= 0 && row[cols.name] !== null ? String(row[cols.name]) : '';
    const key = groupAt >= 0 ? (row[groupAt] === null ? 'NULL' : String(row[groupAt])) : 'query';
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push({ ts, end, dur: Number.isFinite(dur) ? dur : 0, id, label });
  }
  let list = [...groups.entries()].map(([title, rows]) => ({ title, rows }));
  list.sort((a, b) => b.rows.length - a.rows.length || a.title.localeCompare(b.title));
  if (list.length > MAX_TRACKS) {
    const rest = list.slice(MAX_TRACKS - 1);
    list = list.slice(0, MAX_TRACKS - 1);
    list.push({ title: `${rest.length} more values`, rows: rest.flatMap((g) => g.rows) });
  }
  for (const g of list) g.rows.sort((a, b) => a.ts - b.ts);
  return list;
}

// Runs the URL's debug query for the timeline page and puts its tracks on
// top. Sets page.debugTracks = {ready, error, tracks: [{title, slices}]}.
export async function loadDebugTracks(page) {
  const sql = page.params.get('debug');
  if (!sql) return;
  const state = { ready: false, error: null, tracks: [] };
  page.debugTracks = state;
  const group = { kind: 'group', key: 'g:debug', title: 'Debug tracks', subtitle: 'loading the query…', collapsed: false, children: [] };
  page.groups.unshift(group);
  page.relayout();
  try {
    const r = await api(page.base + '/query', { method: 'POST', body: sql, exact: true });
    const cols = debugColumns(r.columns || [], sql);
    if (!cols) throw new Error('the query has no ts and dur columns');
    const groupBy = page.params.get('debug_group') || '';
    const groupAt = groupBy ? (r.columns || []).indexOf(groupBy) : -1;
    if (groupBy && groupAt < 0) throw new Error(`the query has no column ${groupBy}`);
    const groups = groupRows(r, cols, groupAt, page.view.end);
    groups.forEach((g, i) => {
      const data = trackData(g.rows);
      const t = {
        kind: 'debug', key: 'debug:' + i, title: g.title, subtitle: groupBy ? `${groupBy} · ${g.rows.length} rows` : `${g.rows.length} rows`,
        trackId: null, maxDepth: data.lanes - 1, group,
        debugData: { start: -Infinity, end: Infinity, res: 1, lod: false, data, truncated: false },
      };
      group.children.push(t);
      state.tracks.push({ title: g.title, slices: g.rows.length });
    });
    group.subtitle = `${(r.rows || []).length} rows${r.truncated ? ' (cut at the row limit)' : ''}` + (groupBy ? ` by ${groupBy}` : '');
  } catch (e) {
    state.error = e.message;
    group.subtitle = 'the query failed: ' + e.message;
  }
  state.ready = true;
  page.relayout();
  page.invalidate();
}

// What is under x at content offset dy from the track's top: a row that
// is a slice (it has a slice id) reads as that slice; others hit nothing.
export function debugHit(v, it, x, dy) {
  const depth = Math.floor((dy - TRACK_PAD) / ROW_H);
  const s = hitSlice(v, it, it.debugData, depth, x, 3);
  if (!s || !(s.id >= 0)) return { kind: 'none', track: it };
  return { kind: 'slice', track: it, item: s, info: { id: s.id, ts: s.ts, dur: s.dur, depth: s.depth, track_id: null } };
}
