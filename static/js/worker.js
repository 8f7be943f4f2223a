// The data worker: fetches timeline data, parses the JSON and turns it into
// typed columns off the main thread, so that a large reply never stalls a
// frame. The columns are transferred, not copied.
//
// Messages in:  {op: 'fetch', id, url, kind, traceEnd, headers}
//               {op: 'cancel', id}
// Messages out: {id, ok: true, data, truncated}
//               {id, ok: false, status, code, message}

const inflight = new Map(); // id -> AbortController

// Columns of one list of intervals sorted by ts; maxEnd is the running
// maximum of end, so that the first item reaching x is a binary search even
// where intervals overlap.
function intervalColumns(n, tsOf, endOf) {
  const ts = new Float64Array(n);
  const end = new Float64Array(n);
  const maxEnd = new Float64Array(n);
  let m = -Infinity;
  for (let i = 0; i < n; i++) {
    ts[i] = tsOf(i);
    end[i] = endOf(i);
    if (end[i] > m) m = end[i];
    maxEnd[i] = m;
  }
  return { ts, end, maxEnd };
}

// Slices split by depth, each depth as columns; names and categories as
// indexes into one string table.
function sliceData(slices, traceEnd, transfer) {
  const names = [];
  const index = new Map();
  const intern = (s) => {
    let i = index.get(s);
    if (i === undefined) {
      i = names.length;
      names.push(s);
      index.set(s, i);
    }
    return i;
  };
  const byDepth = [];
  for (const s of slices) (byDepth[s.depth] || (byDepth[s.depth] = [])).push(s);
  const depths = [];
  for (let d = 0; d < byDepth.length; d++) {
    const list = byDepth[d];
    if (!list) {
      depths.push(null);
      continue;
    }
    const n = list.length;
    const c = intervalColumns(n, (i) => list[i].ts, (i) => (list[i].dur < 0 ? traceEnd : list[i].ts + list[i].dur));
    const id = new Float64Array(n);
    const dur = new Float64Array(n);
    const merged = new Int32Array(n);
    const name = new Int32Array(n);
    const cat = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const s = list[i];
      id[i] = s.id;
      dur[i] = s.dur;
      merged[i] = s.merged || 0;
      name[i] = intern(s.name);
      cat[i] = intern(s.category || '');
    }
    depths.push({ n, depth: d, ...c, id, dur, merged, name, cat });
    transfer.push(c.ts.buffer, c.end.buffer, c.maxEnd.buffer, id.buffer, dur.buffer, merged.buffer, name.buffer, cat.buffer);
  }
  return { depths, names };
}

// The same from a columnar reply (format=columns): no object per slice,
// and the strings come as one table already.
function sliceColumns(b, traceEnd, transfer) {
  const n = b.id.length;
  const count = [];
  for (let i = 0; i < n; i++) count[b.depth[i]] = (count[b.depth[i]] || 0) + 1;
  const depths = [];
  const at = [];
  for (let d = 0; d < count.length; d++) {
    const m = count[d] || 0;
    if (!m) {
      depths.push(null);
      continue;
    }
    depths.push({
      n: m, depth: d, ts: new Float64Array(m), end: new Float64Array(m), maxEnd: new Float64Array(m),
      id: new Float64Array(m), dur: new Float64Array(m), merged: new Int32Array(m), name: new Int32Array(m), cat: new Int32Array(m),
    });
    at[d] = 0;
  }
  for (let i = 0; i < n; i++) {
    const D = depths[b.depth[i]];
    const k = at[b.depth[i]]++;
    const dur = b.dur[i];
    D.ts[k] = b.ts[i];
    D.end[k] = dur < 0 ? traceEnd : b.ts[i] + dur;
    D.maxEnd[k] = k > 0 && D.maxEnd[k - 1] > D.end[k] ? D.maxEnd[k - 1] : D.end[k];
    D.id[k] = b.id[i];
    D.dur[k] = dur;
    D.merged[k] = b.merged[i];
    D.name[k] = b.name[i];
    D.cat[k] = b.category[i];
  }
  for (const D of depths) {
    if (D) transfer.push(D.ts.buffer, D.end.buffer, D.maxEnd.buffer, D.id.buffer, D.dur.buffer, D.merged.buffer, D.name.buffer, D.cat.buffer);
  }
  return { depths, names: b.strings };
}

function slicesOf(b, traceEnd, transfer) {
  return b.columns ? sliceColumns(b, traceEnd, transfer) : sliceData(b.slices || [], traceEnd, transfer);
}

function counterData(points, transfer) {
  const n = points.length;
  const ts = new Float64Array(n);
  const last = new Float64Array(n);
  const val = new Float64Array(n);
  const min = new Float64Array(n);
  const max = new Float64Array(n);
  const merged = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const p = points[i];
    const v = Number(p.value);
    ts[i] = p.ts;
    last[i] = p.last_ts ?? p.ts;
    val[i] = v;
    min[i] = p.min !== undefined ? Number(p.min) : v;
    max[i] = p.max !== undefined ? Number(p.max) : v;
    merged[i] = p.merged || 0;
  }
  transfer.push(ts.buffer, last.buffer, val.buffer, min.buffer, max.buffer, merged.buffer);
  return { n, ts, last, val, min, max, merged };
}

// Sched runs and log records are few enough to travel as objects.
function itemData(items, traceEnd, transfer) {
  const n = items.length;
  const c = intervalColumns(n, (i) => items[i].ts, (i) => (items[i].dur > 0 ? items[i].ts + items[i].dur : items[i].dur < 0 ? traceEnd : items[i].ts));
  transfer.push(c.ts.buffer, c.end.buffer, c.maxEnd.buffer);
  return { n, ...c, items };
}

async function run(msg) {
  const ctrl = new AbortController();
  inflight.set(msg.id, ctrl);
  try {
    const t0 = performance.now();
    const res = await fetch(msg.url, { headers: msg.headers, signal: ctrl.signal });
    const t1 = performance.now();
    const text = await res.text();
    const t2 = performance.now();
    let body = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch (e) {
      if (res.ok) throw Object.assign(new Error(`the server sent a reply that is not JSON (${e.message})`), { status: res.status, code: 'bad_reply' });
    }
    if (!res.ok) {
      const err = body && body.error;
      throw Object.assign(new Error(err && err.message ? err.message : `${res.status} ${res.statusText}`), {
        status: res.status, code: err ? err.code : 'http_' + res.status,
      });
    }
    const transfer = [];
    let data;
    switch (msg.kind) {
      case 'slices':
        data = slicesOf(body, msg.traceEnd, transfer);
        break;
      case 'slices-batch': // several tracks in one reply, in the order asked
        data = (body.tracks || []).map((t) => ({ data: slicesOf(t, msg.traceEnd, transfer), truncated: !!t.truncated }));
        break;
      case 'counters':
        data = counterData(body.points || [], transfer);
        break;
      case 'sched':
        data = itemData(body.slices || [], msg.traceEnd, transfer);
        break;
      case 'logs':
        // a summary of a pixel column's logs spans its first to its last
        data = itemData((body.logs || []).map((l) => ({ ...l, dur: l.merged ? l.last_ts - l.ts : 0 })), msg.traceEnd, transfer);
        break;
      case 'states':
        data = itemData(body.states || [], msg.traceEnd, transfer);
        break;
      default:
        data = null;
    }
    // bytes on the wire (compressed when the server gzipped the reply) and
    // the JSON text they decode to
    const wire = Number(res.headers.get('Content-Length')) || text.length;
    // where the time of a reply went: waiting for the server's headers,
    // receiving the body, parsing it into columns
    const timing = { wait: t1 - t0, body: t2 - t1, parse: performance.now() - t2 };
    postMessage({ id: msg.id, ok: true, data, truncated: !!body.truncated, bytes: wire, textBytes: text.length, timing }, transfer);
  } catch (e) {
    postMessage({ id: msg.id, ok: false, aborted: e.name === 'AbortError', status: e.status || 0, code: e.code || 'network', message: e.message });
  } finally {
    inflight.delete(msg.id);
  }
}

onmessage = (ev) => {
  const msg = ev.data;
  if (msg.op === 'fetch') run(msg);
  else if (msg.op === 'cancel') {
    const c = inflight.get(msg.id);
    if (c) c.abort();
  }
};
