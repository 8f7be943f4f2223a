// Per-track data for the visible window, fetched with level of detail and
// cached so that panning and zooming redraw from memory.
//
// For a view [vs, ve] at r ns per pixel we fetch [vs - span, ve + span]
// (three views wide, clipped to the trace) at resolution r. The cached reply
// serves every later view that lies inside the fetched window while the
// resolution stays within 2x of the fetched one. A reply that summarised
// anything (an item with "merged", or a truncated reply) is asked again as
// soon as the view zooms in, so that the server can send the exact slices
// that the new zoom can show; a reply without summaries is exact for its
// window and serves any zoom-in. Anything else
// fetches anew; the old data keeps being drawn until the new data arrives,
// and a fetch that no longer matches the view is aborted.
//
// Slice tracks wanted at the same moment for the same window go in one
// request (GET /slices?tracks=A,B,C, up to BATCH_MAX): a view of 60 threads
// is one round trip, not 60. A batch is aborted only when every track in
// it has been asked again. Slices come in the columnar form (format=columns):
// a third of the JSON, and no object per slice to parse.

import { ApiError, askToken, authHeaders, getToken } from './api.js';
import { colorFor } from './format.js';

const ZOOM_IN = 1.25;       // a summarised reply is asked again past this zoom-in
const SLICE_LIMIT = 400000;
const COUNTER_LIMIT = 200000;
const SCHED_LIMIT = 100000;
const LOG_LIMIT = 20000;
const STATE_LIMIT = 100000;
const DEBOUNCE_MS = 80;
const BATCH_MAX = 64;       // slice tracks asked in one request

// Smallest i with a[i] >= x (a sorted ascending); n if none.
export function lowerBound(a, x, n = a.length) {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Smallest i with a[i] > x.
export function upperBound(a, x, n = a.length) {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// One worker for every track: parsing happens off the main thread.
let worker = null;
let nextId = 1;
const waiting = new Map(); // request id -> {resolve, reject}

function getWorker() {
  if (worker) return worker;
  worker = new Worker('/js/worker.js', { type: 'module' });
  worker.onmessage = (ev) => {
    const m = ev.data;
    const w = waiting.get(m.id);
    if (!w) return;
    waiting.delete(m.id);
    if (m.ok) w.resolve(m);
    else w.reject(Object.assign(new ApiError(m.status, m.code, m.message), { name: m.aborted ? 'AbortError' : 'ApiError' }));
  };
  return worker;
}

// Fetches url in the worker; resolves with {data, truncated}. A 401 asks
// for the token (once for everybody) and tries again.
async function workerFetch(url, kind, traceEnd, signal) {
  for (let attempt = 0; ; attempt++) {
    const id = nextId++;
    const p = new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
    const onAbort = () => getWorker().postMessage({ op: 'cancel', id });
    signal.addEventListener('abort', onAbort);
    getWorker().postMessage({ op: 'fetch', id, url, kind, traceEnd, headers: authHeaders() });
    try {
      return await p;
    } catch (e) {
      if (e.status === 401 && attempt < 5) {
        await askToken(attempt > 0 || !!getToken());
        continue;
      }
      throw e;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

export class DataStore {
  // trace: the trace object; onUpdate(): called when new data arrived.
  constructor(trace, onUpdate) {
    this.trace = trace;
    this.base = '/api/traces/' + encodeURIComponent(trace.id);
    this.start = trace.start_ns ?? 0;
    this.end = trace.end_ns ?? this.start;
    this.onUpdate = onUpdate;
    this.cache = new Map();   // track key -> {start, end, res, data, truncated}
    this.pending = new Map(); // track key -> {start, end, res, ctrl}
    this.wanted = new Map();  // track key -> {track, vs, ve, res}, waiting for the debounce
    this.timer = 0;
    this.errors = 0;
    this.requests = 0;  // replies received, for the benchmark
    this.bytes = 0;      // on the wire
    this.textBytes = 0;  // JSON text, decompressed
    this.timing = { wait: 0, body: 0, parse: 0, maxWait: 0 }; // ms summed over replies, for the benchmark
    this.lastError = '';
  }

  get busy() {
    return this.pending.size + this.wanted.size;
  }

  get(track) {
    if (track.debugData) return track.debugData; // a query's rows, held by debugtracks.js
    return this.cache.get(track.key) || null;
  }

  covers(c, vs, ve, res) {
    const lo = Math.max(vs, this.start);
    const hi = Math.min(ve, this.end);
    if (lo < c.start || hi > c.end) return false;
    if (!c.lod) return true;
    if (res > c.res * 2) return false;
    // (resolutions below 1 ns per pixel are asked as 1: no loop there)
    if (c.summarised && Math.max(1, Math.floor(res)) < c.res / ZOOM_IN) return false;
    return true;
  }

  // Makes sure the track's data will cover [vs, ve] at res ns per pixel.
  request(track, vs, ve, res) {
    if (track.debugData) return;
    const c = this.cache.get(track.key);
    if (c && this.covers(c, vs, ve, res)) {
      this.wanted.delete(track.key);
      return;
    }
    const p = this.pending.get(track.key);
    if (p && this.covers(p, vs, ve, res)) return;
    this.wanted.set(track.key, { track, vs, ve, res });
    if (!c && !p) {
      this.flush();
      return;
    }
    // While the view moves, fetch at most every DEBOUNCE_MS: not on every
    // frame, and not only once the movement stops.
    if (!this.timer) this.timer = setTimeout(() => this.flush(), DEBOUNCE_MS);
  }

  flush() {
    clearTimeout(this.timer);
    this.timer = 0;
    const w = [...this.wanted.values()];
    this.wanted.clear();
    const groups = new Map(); // "start end res" -> [track]
    for (const { track, vs, ve, res } of w) {
      const win = this.window(vs, ve, res);
      if (track.kind !== 'thread' && track.kind !== 'async') {
        this.fetch(track, win);
        continue;
      }
      const k = `${win.start} ${win.end} ${win.res}`;
      if (!groups.has(k)) groups.set(k, { win, tracks: [] });
      groups.get(k).tracks.push(track);
    }
    for (const { win, tracks } of groups.values()) {
      for (let i = 0; i < tracks.length; i += BATCH_MAX) {
        const part = tracks.slice(i, i + BATCH_MAX);
        if (part.length === 1) this.fetch(part[0], win);
        else this.fetchBatch(part, win);
      }
    }
  }

  // The window fetched for a view: three views wide, clipped to the trace.
  window(vs, ve, res) {
    const span = Math.max(ve - vs, 1);
    const start = Math.max(this.start, Math.floor(vs - span));
    const end = Math.min(this.end, Math.ceil(ve + span));
    return { start, end: Math.max(start, end), res: Math.max(1, Math.floor(res)) };
  }

  // Lets go of a track's pending fetch: its own is aborted, a batch's only
  // when no track of it is still waiting for it.
  drop(p) {
    if (!p) return;
    if (!p.batch) p.ctrl.abort();
    else if (--p.batch.live === 0) p.batch.ctrl.abort();
  }

  fetch(track, win) {
    this.drop(this.pending.get(track.key));
    const ctrl = new AbortController();
    const lod = track.kind !== 'log' && track.kind !== 'state'; // both come exact
    const p = { ...win, lod, ctrl };
    this.pending.set(track.key, p);
    this.load(track, p).then((c) => this.done(track, p, c), (e) => this.failed(track, p, e));
  }

  fetchBatch(tracks, win) {
    const batch = { ctrl: new AbortController(), live: tracks.length };
    const ps = tracks.map((track) => {
      this.drop(this.pending.get(track.key));
      const p = { ...win, lod: true, ctrl: batch.ctrl, batch };
      this.pending.set(track.key, p);
      return p;
    });
    const q = `start=${win.start}&end=${win.end}${win.res > 1 ? `&resolution=${win.res}` : ''}`;
    const url = `${this.base}/slices?tracks=${tracks.map((t) => t.trackId).join(',')}&${q}&limit=${SLICE_LIMIT}&format=columns`;
    workerFetch(url, 'slices-batch', this.end, batch.ctrl.signal).then((r) => {
      this.account(r);
      tracks.forEach((track, i) => {
        const one = r.data[i];
        if (!one) this.failed(track, ps[i], new Error('the reply left out a track'));
        else this.done(track, ps[i], this.entry(ps[i], 'slices', one.data, one.truncated));
      });
    }, (e) => tracks.forEach((track, i) => this.failed(track, ps[i], e)));
  }

  done(track, p, c) {
    if (this.pending.get(track.key) !== p) return;
    this.pending.delete(track.key);
    this.cache.set(track.key, c);
    this.onUpdate();
  }

  failed(track, p, e) {
    if (this.pending.get(track.key) !== p) return;
    this.pending.delete(track.key);
    if (e.name === 'AbortError') return;
    this.errors++;
    this.lastError = e.message;
    // Keep something in the cache so that we do not retry in a loop;
    // the next view change asks again.
    const c = this.cache.get(track.key);
    this.cache.set(track.key, { ...(c || { data: null }), start: p.start, end: p.end, res: p.res, lod: p.lod, error: e.message });
    this.onUpdate();
  }

  account(r) {
    this.requests++;
    this.bytes += r.bytes || 0;
    this.textBytes += r.textBytes || 0;
    if (r.timing) {
      const t = this.timing;
      t.wait += r.timing.wait;
      t.body += r.timing.body;
      t.parse += r.timing.parse;
      t.maxWait = Math.max(t.maxWait, r.timing.wait);
    }
  }

  // A cache entry for a reply.
  entry(p, kind, data, truncated) {
    if (kind === 'slices') data.colors = data.names.map(colorFor);
    // A truncated reply is kept for its window like any other (so that we
    // do not fetch the same thing in a loop); the track says it is cut, and
    // zooming in fetches finer, smaller windows.
    const summarised = truncated || hasMerged(kind, data);
    return { start: p.start, end: p.end, res: p.res, lod: p.lod || truncated, summarised, data, truncated, error: null };
  }

  async load(track, p) {
    const q = `start=${p.start}&end=${p.end}`;
    // At 1 ns per pixel or finer nothing may be summarised: ask for the list.
    const res = p.res > 1 ? `&resolution=${p.res}` : '';
    let url;
    let kind;
    switch (track.kind) {
      case 'thread':
      case 'async':
        url = `${this.base}/slices?track=${track.trackId}&${q}${res}&limit=${SLICE_LIMIT}&format=columns`;
        kind = 'slices';
        break;
      case 'counter':
        url = `${this.base}/counters?track=${track.trackId}&${q}${res}&limit=${COUNTER_LIMIT}`;
        kind = 'counters';
        break;
      case 'cpu':
        url = `${this.base}/sched?cpu=${track.cpu}&${q}${res}&limit=${SCHED_LIMIT}`;
        kind = 'sched';
        break;
      case 'log':
        url = `${this.base}/logs?${q}${res}&limit=${LOG_LIMIT}`;
        kind = 'logs';
        break;
      case 'state':
        url = `${this.base}/thread_states?pid=${track.pid}&tid=${track.tid}&${q}&limit=${STATE_LIMIT}`;
        kind = 'states';
        break;
      default:
        return { start: p.start, end: p.end, res: p.res, lod: false, data: null, truncated: false, error: null };
    }
    const r = await workerFetch(url, kind, this.end, p.ctrl.signal);
    this.account(r);
    return this.entry(p, kind, r.data, r.truncated);
  }
}

// Whether a parsed reply holds any summary item.
function hasMerged(kind, data) {
  if (!data) return false;
  if (kind === 'slices') return data.depths.some((D) => D && D.merged.some((m) => m > 0));
  if (kind === 'counters') return data.merged.some((m) => m > 0);
  if (kind === 'sched' || kind === 'logs') return data.items.some((it) => it.merged > 0);
  return false;
}
