// The track tree of a trace and its vertical layout.
//
// GET /tracks gives processes (threads, async and counter tracks) and CPUs.
// We turn that into groups (a "CPUs" group, a "Logs" group, one group per
// process) of tracks, each with a height; layout() flattens what is expanded
// into rows with a y position, which the labels (DOM) and the canvas share.

export const LABEL_W = 250;     // the track labels' column
export const ROW_H = 18;        // one nesting level of slices
export const TRACK_PAD = 4;     // above and below the slice rows
export const GROUP_H = 26;      // a process (group) header
export const COUNTER_H = 46;
export const CPU_H = 24;
export const LOG_H = 24;
export const STATE_H = 16;      // a thread's state track
export const FOLD_ROWS = 8;     // a slice track of more rows opens folded
export const FOLD_PROCESSES = 8; // a trace of more processes opens them collapsed

// Every depth is shown, as Perfetto does: a deep stack is never cut. A
// slice track of more than FOLD_ROWS rows can be folded by its label's
// arrow to one summary row where every depth is drawn over the next,
// depth 0 on top. An async track that tall opens folded, as Perfetto's
// tall track groups do: its lanes are a layout, not a call stack, and the
// demo's 85 of them took 1.5k px that pushed every thread below the fold.
// A thread opens with its whole stack (issue 9: deep stacks are shown).
function rowsOf(t) {
  return (t.maxDepth ?? 0) + 1;
}

export function foldable(t) {
  return (t.kind === 'thread' || t.kind === 'async') && rowsOf(t) > FOLD_ROWS;
}

// The row (from 0) where depth is drawn on track t.
export function sliceRow(t, depth) {
  return t.folded ? 0 : depth;
}

export function trackHeight(t) {
  switch (t.kind) {
    case 'thread':
    case 'async':
    case 'debug': // a query's rows (debugtracks.js), on lanes
      return visibleRows(t) * ROW_H + 2 * TRACK_PAD;
    case 'counter':
      return COUNTER_H;
    case 'cpu':
      return CPU_H;
    case 'log':
      return LOG_H;
    case 'state':
      return STATE_H;
    default:
      return GROUP_H;
  }
}

// The rows track t takes: all its depths, or one when folded.
export function visibleRows(t) {
  return t.folded ? 1 : rowsOf(t);
}

// All the depths track t has (drawn in visibleRows(t) rows).
export function depthCount(t) {
  return rowsOf(t);
}

// Unnamed processes and threads are called by their ids, never "process";
// an XRay process by the binary that named its functions, when there is one.
export function processName(p, trace) {
  if (p.name) return p.name;
  const bin = trace.format === 'xray-fdr' && trace.symbols ? trace.symbols.binary : null;
  return bin || `pid ${p.pid}`;
}

// A thread's state track (thread_states), right under its slices. Under
// them its label says only "thread state" (the thread's is right above it);
// alone (a thread seen only in scheduling records has no slice track) it
// names its thread as a thread row does: the name, or "tid N", then the tid.
// The track filter finds it by the thread's name and tid either way.
function stateTrack(pid, tid, name, alone) {
  const title = !alone ? 'thread state' : name || `tid ${tid}`;
  const subtitle = !alone ? '' : name ? `tid ${tid} · thread state` : 'thread state';
  return { kind: 'state', key: `state:${pid}/${tid}`, title, subtitle, pid, tid, trackId: null,
    also: name ? `${name} ${tid}` : `tid ${tid}` };
}

// Builds the groups from the /tracks reply. trace: the trace object;
// scheduled: the "pid/tid" of every thread with CPU runs (a Set).
export function buildTracks(tr, trace, scheduled = new Set()) {
  const groups = [];
  const byTrackId = new Map();
  const threadNames = new Map(); // "pid/tid" -> thread name
  const processNames = new Map(); // pid -> its name (processName)
  const add = (g, t) => {
    t.group = g;
    t.folded = t.kind === 'async' && foldable(t);
    g.children.push(t);
    if (t.trackId !== null && t.trackId !== undefined) byTrackId.set(Number(t.trackId), t);
  };
  const processes = tr.processes || [];
  for (const p of processes) {
    processNames.set(String(p.pid), processName(p, trace));
    for (const th of p.threads || []) {
      if (th.name) threadNames.set(`${p.pid}/${th.tid}`, th.name);
    }
  }
  if ((tr.cpus || []).length > 0) {
    const g = { kind: 'group', key: 'g:cpus', title: 'CPUs', subtitle: `${tr.cpus.length} cpus`, collapsed: false, children: [] };
    for (const c of tr.cpus) {
      add(g, { kind: 'cpu', key: 'cpu:' + c.cpu, title: 'CPU ' + c.cpu, subtitle: '', cpu: c.cpu, trackId: c.track_id });
    }
    groups.push(g);
  }
  const counts = trace.counts || {};
  if (counts.logs > 0) {
    const g = { kind: 'group', key: 'g:logs', title: 'Logs', subtitle: `${counts.logs} records`, collapsed: false, children: [] };
    add(g, { kind: 'log', key: 'log', title: 'Log messages', subtitle: '', trackId: null });
    groups.push(g);
  }
  const many = processes.length > FOLD_PROCESSES;
  const stated = new Set(); // threads given a state track
  for (const p of processes) {
    const g = {
      kind: 'group', key: 'p:' + p.pid, title: processName(p, trace), subtitle: processName(p, trace) !== `pid ${p.pid}` ? 'pid ' + p.pid : '', pid: p.pid,
      collapsed: many, children: [],
    };
    for (const a of p.async_tracks || []) {
      add(g, {
        kind: 'async', key: 't:' + a.track_id, title: a.name || 'async', subtitle: a.category || '',
        trackId: a.track_id, maxDepth: a.max_depth ?? 0, pid: p.pid,
      });
    }
    // XRay: each thread's "cpu" counter (counter id = tid), drawn under its
    // thread. A CPU that never changes is no track, only a fact shown in a
    // call's details.
    const cpuOf = new Map(); // tid -> {trackId, constant, track}
    const xray = trace.format === 'xray-fdr';
    const counter = (c, title, subtitle) => ({
      kind: 'counter', key: 't:' + c.track_id, title, subtitle, trackId: c.track_id,
      min: Number(c.min ?? 0), max: Number(c.max ?? 0), pid: p.pid,
    });
    for (const c of p.counter_tracks || []) {
      const isCpu = xray && c.name === 'cpu' && c.counter_id !== null && c.counter_id !== undefined;
      if (isCpu) {
        const constant = Number(c.min) === Number(c.max) ? Number(c.min) : null;
        cpuOf.set(String(c.counter_id), { trackId: c.track_id, constant, c });
        continue;
      }
      const title = c.series && c.series !== c.name ? `${c.name}.${c.series}` : c.name;
      add(g, counter(c, title || 'counter', c.counter_id !== null && c.counter_id !== undefined ? 'id ' + c.counter_id : ''));
    }
    const placed = new Set();
    const addCpu = (tid, who) => {
      const cpu = cpuOf.get(String(tid));
      if (!cpu || cpu.constant !== null || placed.has(cpu)) return;
      placed.add(cpu);
      add(g, counter(cpu.c, 'cpu', 'of ' + who));
    };
    for (const th of p.threads || []) {
      const who = th.name ? `${th.name} ${th.tid}` : `tid ${th.tid}`;
      if (th.track_id !== null && th.track_id !== undefined) {
        add(g, {
          kind: 'thread', key: 't:' + th.track_id, title: th.name || `tid ${th.tid}`, subtitle: th.name ? 'tid ' + th.tid : '',
          trackId: th.track_id, maxDepth: th.max_depth ?? 0, pid: p.pid, tid: th.tid, named: !!th.name,
          cpu: cpuOf.get(String(th.tid)) || null,
        });
      }
      addCpu(th.tid, who);
      const key = `${p.pid}/${th.tid}`;
      if (scheduled.has(key)) {
        add(g, stateTrack(p.pid, th.tid, th.name, th.track_id === null || th.track_id === undefined));
        stated.add(key);
      }
    }
    for (const tid of cpuOf.keys()) addCpu(tid, `tid ${tid}`);
    if (g.children.length > 0) groups.push(g);
  }
  // threads seen only on CPUs (in no process's list): a state track each
  for (const key of scheduled) {
    if (stated.has(key)) continue;
    const [pid, tid] = key.split('/');
    let g = groups.find((x) => x.kind === 'group' && String(x.pid) === pid);
    if (!g) {
      g = { kind: 'group', key: 'p:' + pid, title: `pid ${pid}`, subtitle: '', pid, collapsed: many, children: [] };
      groups.push(g);
    }
    add(g, stateTrack(pid, tid, threadNames.get(key), true));
  }
  return { groups, byTrackId, threadNames, processNames };
}

// Whether track t (or its group) matches the filter text (lower case).
function matches(t, g, filter) {
  if (!filter) return true;
  return `${t.title} ${t.subtitle} ${t.also || ''} ${g.title} ${g.subtitle}`.toLowerCase().includes(filter);
}

// Flattens the groups into rows [{item, y, h, pinned}] and returns the
// total height and the pinned height. Pinned tracks come first (they stay
// on top while the rest scrolls) and leave their group; collapsed groups
// show their header only; with a filter, only the tracks whose name (or
// process name) contains it, and the groups that keep a track.
export function layout(groups, opts = {}) {
  const filter = (opts.filter || '').trim().toLowerCase();
  const rows = [];
  let y = 0;
  const place = (t, pinned) => {
    t.y = y;
    t.h = trackHeight(t);
    t.visible = true;
    t.pinned = pinned;
    rows.push({ item: t, y, h: t.h, pinned });
    y += t.h;
  };
  for (const g of groups) for (const t of g.children) if (t.pin && matches(t, g, filter)) place(t, true);
  const pinnedHeight = y;
  for (const g of groups) {
    const kids = g.children.filter((t) => !t.pin && matches(t, g, filter));
    for (const t of g.children) if (!t.pin) t.visible = false;
    if (filter && kids.length === 0) continue;
    g.y = y;
    rows.push({ item: g, y, h: GROUP_H });
    y += GROUP_H;
    if (g.collapsed) continue;
    for (const t of kids) place(t, false);
  }
  return { rows, height: y, pinnedHeight };
}

// The row at content y (binary search over rows sorted by y), or null.
export function rowAt(rows, y) {
  let lo = 0;
  let hi = rows.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = rows[mid];
    if (y < r.y) hi = mid - 1;
    else if (y >= r.y + r.h) lo = mid + 1;
    else return r;
  }
  return null;
}
