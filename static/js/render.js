// Canvas drawing of the timeline: slices, counters, CPU runs, logs, the
// time axis and the overview. Everything a trace names is drawn with
// fillText; nothing here touches the DOM.
//
// Drawing is bounded by pixels, not by items: items are found by binary
// search from the view start, and runs of sub-pixel items are coalesced into
// one rectangle per pixel column.

import { fmtTick, hashString, tickStep } from './format.js';
import { lowerBound, upperBound } from './data.js';
import { ROW_H, TRACK_PAD, sliceRow, visibleRows } from './tracks.js';

export const FONT = '11px system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif';
export const FONT_BOLD = 'bold 11px system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif';

const textWidth = new Map(); // string -> px at FONT

function measure(ctx, s) {
  let w = textWidth.get(s);
  if (w === undefined) {
    w = ctx.measureText(s).width;
    if (textWidth.size > 20000) textWidth.clear();
    textWidth.set(s, w);
  }
  return w;
}

// The longest prefix of s (with an ellipsis) that fits in maxW px, or ''.
export function fitText(ctx, s, maxW) {
  if (maxW < 8 || !s) return '';
  const w = measure(ctx, s);
  if (w <= maxW) return s;
  const avg = w / s.length;
  let n = Math.floor((maxW - 8) / avg);
  if (n < 1) return '';
  let t = s.slice(0, n) + '…';
  while (n > 1 && measure(ctx, t) > maxW) {
    n--;
    t = s.slice(0, n) + '…';
  }
  return n >= 1 ? t : '';
}

const SUMMARY_FILL = '#c9ced6'; // summaries of many CPU runs: no thread's colour
let hatch = null;

function hatchPattern(ctx) {
  if (hatch) return hatch;
  const c = document.createElement('canvas');
  c.width = 6;
  c.height = 6;
  const g = c.getContext('2d');
  g.strokeStyle = 'rgba(40,40,40,0.35)';
  g.lineWidth = 1;
  g.beginPath();
  g.moveTo(-1, 7);
  g.lineTo(7, -1);
  g.stroke();
  hatch = ctx.createPattern(c, 'repeat');
  return hatch;
}

export const MIN_SPAN = 50; // ns: the narrowest view

// The view transform shared by every drawing function.
// vs, ve: visible ns; W: width in css px.
export function makeView(vs, ve, W) {
  const k = W / Math.max(ve - vs, 1e-9);
  return { vs, ve, W, k, x: (t) => (t - vs) * k, t: (x) => vs + x / k };
}

const LABEL_MIN_W = 22; // px: a box narrower than this is not named

// Slices of one thread or async track, top at y. mark: null, or the
// search {q (lower case), ids}: slices whose name holds q are outlined and
// their ids pushed on ids. Returns the names written.
//
// A level-of-detail summary (docs/API.md: the slices under a pixel of one
// depth, named after the longest of them) is drawn as Perfetto draws its
// mipmap buckets: in that name's colour, as a slice. Names go wherever a
// box is wide enough: a slice's or a summary's, or a run of touching boxes
// too narrow for a name of their own that all bear the same one (zoomed
// out, a depth of many short "Layout"s reads "Layout", not a grey wall).
// A folded track (tracks.js) draws every depth in its one row, the
// deepest first, so that depth 0 is on top and only depth 0 is named.
export function drawSlices(ctx, v, track, cache, y, mark) {
  const written = [];
  if (!cache || !cache.data) return written;
  const { depths, names, colors } = cache.data;
  const folded = !!track.folded;
  const rows = folded ? depths.length : Math.min(visibleRows(track), depths.length);
  const { vs, ve, W, k } = v;
  const h = ROW_H - 2;
  const labels = [];
  for (let dd = 0; dd < rows; dd++) {
    const d = folded ? rows - 1 - dd : dd;
    const D = depths[d];
    if (!D) continue;
    const named = !folded || d === 0;
    const yy = y + TRACK_PAD + sliceRow(track, d) * ROW_H;
    let i = lowerBound(D.maxEnd, vs, D.n);
    const stop = upperBound(D.ts, ve, D.n);
    let px0 = -1e9;
    let px1 = -1e9;
    let pcol = null;
    let last = null;
    // the run of touching unnamed boxes of one name: [name, x0, x1, boxes]
    let run = null;
    const endRun = () => {
      if (run && named && run[3] > 1) {
        const lx = Math.max(run[1], 0) + 4;
        const t = fitText(ctx, names[run[0]], Math.min(run[2], W) - lx - 3);
        if (t) labels.push(t, lx, yy + h / 2 + 0.5);
      }
      run = null;
    };
    for (; i < stop; i++) {
      const e = D.end[i];
      if (e < vs) continue;
      const merged = D.merged[i];
      const dur = D.dur[i];
      let x0 = (D.ts[i] - vs) * k;
      let x1 = (e - vs) * k;
      if (x0 < -5) x0 = -5;
      if (x1 > W + 5) x1 = W + 5;
      const w = x1 - x0;
      const nm = D.name[i];
      const col = colors[nm];
      if (dur === 0 && !merged && x0 > px1 + 5 && (i + 1 >= stop || (D.ts[i + 1] - vs) * k > x0 + 5)) {
        // an isolated instant: a diamond
        endRun();
        if (pcol) {
          if (pcol !== last) ctx.fillStyle = last = pcol;
          ctx.fillRect(px0, yy, Math.max(px1 - px0, 1), h);
          pcol = null;
        }
        if (col.dark !== last) ctx.fillStyle = last = col.dark;
        ctx.beginPath();
        ctx.moveTo(x0, yy + 1);
        ctx.lineTo(x0 + 4, yy + h / 2);
        ctx.lineTo(x0, yy + h - 1);
        ctx.lineTo(x0 - 4, yy + h / 2);
        ctx.closePath();
        ctx.fill();
        px1 = x0 + 4;
        continue;
      }
      if (w <= LABEL_MIN_W) {
        if (run && run[0] === nm && x0 <= run[2] + 1) {
          if (x1 > run[2]) run[2] = x1;
          run[3]++;
        } else {
          endRun();
          run = [nm, x0, Math.max(x1, x0 + 1), 1];
        }
      } else {
        endRun();
      }
      if (w < 1.5) {
        // Sub-pixel: extend the pending run when it touches and has the
        // same colour; another colour under the run's last pixel is
        // hidden by it, one past it flushes the run (a run of one colour
        // over many columns of other names would read as a long slice).
        if (x0 <= px1 + 0.5 && (col.fill === pcol || x0 < px1)) {
          if (col.fill === pcol && x0 + 1 > px1) px1 = x0 + 1;
          continue;
        }
        if (pcol) {
          if (pcol !== last) ctx.fillStyle = last = pcol;
          ctx.fillRect(px0, yy, Math.max(px1 - px0, 1), h);
        }
        px0 = x0;
        px1 = x0 + Math.max(w, 1);
        pcol = col.fill;
        continue;
      }
      if (pcol) {
        if (pcol !== last) ctx.fillStyle = last = pcol;
        ctx.fillRect(px0, yy, Math.max(px1 - px0, 1), h);
        pcol = null;
        px1 = -1e9;
      }
      if (col.fill !== last) ctx.fillStyle = last = col.fill;
      ctx.fillRect(x0, yy, w, h);
      if (dur < 0 && !merged) {
        // never ended: a pale right edge says so
        ctx.fillStyle = last = 'rgba(255,255,255,0.6)';
        ctx.fillRect(x1 - 3, yy, 3, h);
      }
      if (w > LABEL_MIN_W && named) {
        const lx = Math.max(x0, 0) + 4;
        const room = Math.min(x1, W) - lx - 3;
        const t = fitText(ctx, names[nm], room);
        if (t) labels.push(t, lx, yy + h / 2 + 0.5);
      }
      px1 = x1;
    }
    endRun();
    if (pcol) {
      if (pcol !== last) ctx.fillStyle = last = pcol;
      ctx.fillRect(px0, yy, Math.max(px1 - px0, 1), h);
    }
  }
  if (labels.length) {
    ctx.fillStyle = '#111';
    for (let i = 0; i < labels.length; i += 3) {
      ctx.fillText(labels[i], labels[i + 1], labels[i + 2]);
      written.push(labels[i]);
    }
  }
  if (mark) drawMatches(ctx, v, track, cache, y, mark);
  if (cache.truncated) drawNote(ctx, W, y, 'data cut at the reply limit: zoom in');
  return written;
}

const MATCH_COLOR = '#ff9800';
const MAX_MATCH_BOXES = 4000; // per track and frame

// Which of a reply's names hold q: a Uint8Array over its names, kept on
// the reply for the query last asked.
function nameMatches(data, q) {
  if (data.matchQ !== q) {
    data.matchQ = q;
    data.matchOf = Uint8Array.from(data.names, (n) => (String(n).toLowerCase().includes(q) ? 1 : 0));
  }
  return data.matchOf;
}

// Outlines the slices of the view whose name holds mark.q (summaries of
// several slices are not: their name is only the longest's), at least 3
// px wide.
function drawMatches(ctx, v, track, cache, y, mark) {
  const { depths } = cache.data;
  const of = nameMatches(cache.data, mark.q);
  const { vs, ve, W, k } = v;
  const h = ROW_H - 2;
  let n = 0;
  ctx.strokeStyle = MATCH_COLOR;
  ctx.lineWidth = 2;
  ctx.beginPath();
  const rows = track.folded ? depths.length : Math.min(visibleRows(track), depths.length);
  for (let d = 0; d < rows; d++) {
    const D = depths[d];
    if (!D) continue;
    const yy = y + TRACK_PAD + sliceRow(track, d) * ROW_H;
    const stop = upperBound(D.ts, ve, D.n);
    let lastX = -1e9;
    for (let i = lowerBound(D.maxEnd, vs, D.n); i < stop && n < MAX_MATCH_BOXES; i++) {
      if (D.end[i] < vs || D.merged[i] || !of[D.name[i]]) continue;
      const x0 = Math.max((D.ts[i] - vs) * k, -3);
      const x1 = Math.min((D.end[i] - vs) * k, W + 3);
      mark.ids.push(D.id[i]);
      if (x1 < lastX + 1) continue; // one outline a pixel column
      const w = Math.max(x1 - x0, 3);
      ctx.rect(x0 + 1, yy + 1, w - 2, h - 2);
      lastX = x0 + w;
      n++;
    }
  }
  ctx.stroke();
  ctx.lineWidth = 1;
}

// Item i of depth column set D as an object.
export function sliceItem(data, D, i) {
  return {
    id: D.id[i], ts: D.ts[i], dur: D.dur[i], depth: D.depth, name: data.names[D.name[i]],
    category: data.names[D.cat[i]], merged: D.merged[i] || undefined,
  };
}

export function drawNote(ctx, W, y, s) {
  ctx.save();
  ctx.font = FONT;
  const w = measure(ctx, s) + 10;
  ctx.fillStyle = 'rgba(255,243,205,0.95)';
  ctx.fillRect(W - w - 4, y + 2, w, 15);
  ctx.fillStyle = '#7a5a00';
  ctx.fillText(s, W - w + 1, y + 10);
  ctx.restore();
}

// The slice under (x, depth row), preferring a real slice over a merged
// one at the same distance; null if none within tolPx.
export function hitSlice(v, track, cache, depth, x, tolPx) {
  if (!cache || !cache.data || depth < 0 || depth >= visibleRows(track)) return null;
  if (track.folded) {
    // one row for every depth: the lowest depth under x, as drawn on top
    for (let d = 0; d < cache.data.depths.length; d++) {
      const s = hitDepth(v, cache, d, x, tolPx);
      if (s) return s;
    }
    return null;
  }
  return hitDepth(v, cache, depth, x, tolPx);
}

function hitDepth(v, cache, depth, x, tolPx) {
  const D = cache.data.depths[depth];
  if (!D) return null;
  const t = v.t(x);
  const tol = tolPx / v.k;
  let i = lowerBound(D.maxEnd, t - tol, D.n);
  const stop = upperBound(D.ts, t + tol, D.n);
  let best = -1;
  let bestDist = Infinity;
  for (; i < stop; i++) {
    const s = D.ts[i];
    const e = D.end[i];
    const dist = t < s ? s - t : t > e ? t - e : 0;
    if (dist <= tol && (dist < bestDist || (dist === bestDist && best >= 0 && D.merged[best] && !D.merged[i]))) {
      best = i;
      bestDist = dist;
    }
  }
  return best >= 0 ? sliceItem(cache.data, D, best) : null;
}

// A counter track: a step line with the area under it, and for merged
// buckets the min-max band.
export function drawCounter(ctx, v, track, cache, y, h) {
  if (!cache || !cache.data) return;
  const C = cache.data;
  if (C.n === 0) return;
  const { vs, ve, W, k } = v;
  const lo = Math.min(0, track.min);
  const hi = track.max > lo ? track.max : lo + 1;
  const top = y + 4;
  const ph = h - 8;
  const Y = (val) => top + ph - ((val - lo) / (hi - lo)) * ph;
  let i = Math.max(0, upperBound(C.ts, vs, C.n) - 1);
  const stop = Math.min(C.n, upperBound(C.ts, ve, C.n) + 1);
  const hue = hashString(track.title) % 360;
  const base = Y(lo);
  // band of merged buckets
  ctx.fillStyle = `hsl(${hue} 55% 55% / 0.25)`;
  for (let j = i; j < stop; j++) {
    if (C.min[j] === C.max[j]) continue;
    const x0 = Math.max((C.ts[j] - vs) * k, -2);
    const x1 = Math.min((C.last[j] - vs) * k, W + 2);
    const y0 = Y(C.max[j]);
    ctx.fillRect(x0, y0, Math.max(x1 - x0, 1), Math.max(Y(C.min[j]) - y0, 1));
  }
  ctx.beginPath();
  let x = Math.max((C.ts[i] - vs) * k, -2);
  let yv = Y(C.val[i]);
  ctx.moveTo(x, base);
  ctx.lineTo(x, yv);
  for (let j = i + 1; j < stop; j++) {
    const nx = Math.min(Math.max((C.ts[j] - vs) * k, -2), W + 2);
    if (C.min[j] !== C.max[j]) {
      // a merged bucket: from the previous value to its max, its min, then its last value
      ctx.lineTo(nx, yv);
      const lx = Math.min(Math.max((C.last[j] - vs) * k, -2), W + 2);
      ctx.lineTo(nx, Y(C.max[j]));
      ctx.lineTo(lx, Y(C.min[j]));
      yv = Y(C.val[j]);
      ctx.lineTo(lx, yv);
      x = lx;
      continue;
    }
    ctx.lineTo(nx, yv);
    yv = Y(C.val[j]);
    ctx.lineTo(nx, yv);
    x = nx;
  }
  const endX = Math.min((Math.min(ve, cache.end) - vs) * k, W + 2);
  if (endX > x) ctx.lineTo(endX, yv);
  ctx.strokeStyle = `hsl(${hue} 60% 35%)`;
  ctx.lineWidth = 1.25;
  ctx.stroke();
  ctx.lineTo(Math.max(x, endX), base);
  ctx.closePath();
  ctx.fillStyle = `hsl(${hue} 55% 55% / 0.3)`;
  ctx.fill();
  ctx.lineWidth = 1;
}

// The counter value at time t: {ts, value, min, max, merged} or null.
export function counterAt(cache, t) {
  if (!cache || !cache.data || cache.data.n === 0) return null;
  const C = cache.data;
  const i = upperBound(C.ts, t, C.n) - 1;
  if (i < 0) return null;
  const p = { ts: C.ts[i], value: C.val[i] };
  if (C.merged[i]) Object.assign(p, { min: C.min[i], max: C.max[i], last_ts: C.last[i], merged: C.merged[i] });
  return p;
}

function threadColor(tid) {
  const h = hashString(String(tid));
  return `hsl(${h % 360} ${45 + ((h >>> 9) % 20)}% ${60 + ((h >>> 17) % 12)}%)`;
}

// A CPU track: one run per context switch, coloured by thread.
export function drawCpu(ctx, v, cache, y, h, threadNames) {
  if (!cache || !cache.data) return;
  const D = cache.data;
  const { vs, ve, W, k } = v;
  let i = lowerBound(D.maxEnd, vs, D.n);
  const stop = upperBound(D.ts, ve, D.n);
  const yy = y + 3;
  const hh = h - 6;
  let last = null;
  let px1 = -1e9;
  const labels = [];
  for (; i < stop; i++) {
    const e = D.end[i];
    if (e < vs) continue;
    const s = D.items[i];
    let x0 = Math.max((D.ts[i] - vs) * k, -2);
    const x1 = Math.min((e - vs) * k, W + 2);
    if (x1 - x0 < 1 && x0 < px1) continue;
    if (x1 - x0 < 1) x0 = Math.floor(x0);
    // a summary of runs under a pixel is grey and hatched, never one thread's
    const fill = s.merged ? SUMMARY_FILL : threadColor(s.tid);
    if (fill !== last) ctx.fillStyle = last = fill;
    ctx.fillRect(x0, yy, Math.max(x1 - x0, 1), hh);
    if (s.merged && x1 - x0 >= 3) {
      ctx.fillStyle = last = hatchPattern(ctx);
      ctx.fillRect(x0, yy, x1 - x0, hh);
    }
    px1 = Math.max(x1, x0 + 1);
    if (x1 - x0 > 30) {
      const name = threadNames.get(`${s.pid}/${s.tid}`) || `tid ${s.tid}`;
      const t = fitText(ctx, s.merged ? `×${s.merged}` : `${name} ${s.tid}`, Math.min(x1, W) - Math.max(x0, 0) - 8);
      if (t) labels.push(t, Math.max(x0, 0) + 4, yy + hh / 2 + 0.5);
    }
  }
  ctx.fillStyle = '#111';
  for (let j = 0; j < labels.length; j += 3) ctx.fillText(labels[j], labels[j + 1], labels[j + 2]);
  if (cache.truncated) drawNote(ctx, W, y, 'runs cut at the reply limit: zoom in');
}

// Thread states: their colours (as Perfetto's: running dark green,
// runnable light green, blocked orange, sleeping grey) and words.
export const STATE_STYLE = {
  running: ['#2e7d32', 'Running'],
  runnable: ['#9ccc65', 'Runnable'],
  blocked: ['#ef6c00', 'Blocked'],
  suspended: ['#b0bec5', 'Suspended'],
  dying: ['#8d6e63', 'Dying'],
  dead: ['#5d4037', 'Dead'],
};

export function stateWords(s) {
  const st = STATE_STYLE[s.state];
  const what = st ? st[1] : String(s.state).replace(/^./, (c) => c.toUpperCase());
  return s.state === 'running' && s.cpu !== null && s.cpu !== undefined ? `${what} on CPU ${s.cpu}` : what;
}

// A thread's state track: one box per state, coalesced under a pixel.
export function drawStates(ctx, v, cache, y, h) {
  if (!cache || !cache.data) return;
  const D = cache.data;
  const { vs, ve, W, k } = v;
  let i = lowerBound(D.maxEnd, vs, D.n);
  const stop = upperBound(D.ts, ve, D.n);
  const yy = y + 2;
  const hh = h - 5;
  let px1 = -1e9;
  let last = null;
  const labels = [];
  for (; i < stop; i++) {
    if (D.end[i] < vs) continue;
    const s = D.items[i];
    let x0 = Math.max((D.ts[i] - vs) * k, -2);
    const x1 = Math.min((D.end[i] - vs) * k, W + 2);
    if (x1 - x0 < 1 && x0 < px1) continue;
    if (x1 - x0 < 1) x0 = Math.floor(x0);
    const fill = (STATE_STYLE[s.state] || ['#d7ccc8'])[0];
    if (fill !== last) ctx.fillStyle = last = fill;
    ctx.fillRect(x0, yy, Math.max(x1 - x0, 1), hh);
    px1 = Math.max(x1, x0 + 1);
    if (x1 - x0 > 40) {
      const t = fitText(ctx, stateWords(s), Math.min(x1, W) - Math.max(x0, 0) - 8);
      if (t) labels.push(t, Math.max(x0, 0) + 4, yy + hh / 2 + 0.5, s.state === 'running' || s.state === 'dead');
    }
  }
  for (let j = 0; j < labels.length; j += 4) {
    ctx.fillStyle = labels[j + 3] ? '#fff' : '#111';
    ctx.fillText(labels[j], labels[j + 1], labels[j + 2]);
  }
  if (cache.truncated) drawNote(ctx, W, y, 'states cut at the reply limit: zoom in');
}

// A collapsed process's summary: its threads' slices per pixel column of
// the view (sum: {start, end, counts} from GET /overview), as bars.
export function drawGroupSummary(ctx, v, sum, y, h, key) {
  if (!sum || !sum.counts) return;
  const n = sum.counts.length;
  const span = sum.end - sum.start + 1;
  let max = 1;
  for (const c of sum.counts) if (c > max) max = c;
  const hue = hashString(String(key)) % 360;
  ctx.fillStyle = `hsl(${hue} 50% 45% / 0.75)`;
  const top = y + 4;
  const hh = h - 8;
  for (let b = 0; b < n; b++) {
    const c = sum.counts[b];
    if (!c) continue;
    const x0 = v.x(sum.start + (b * span) / n);
    const x1 = v.x(sum.start + ((b + 1) * span) / n);
    if (x1 < 0 || x0 > v.W) continue;
    const bh = Math.max(1, Math.sqrt(c / max) * hh);
    ctx.fillRect(x0, top + hh - bh, Math.max(x1 - x0 - 0.5, 0.5), bh);
  }
}

export function hitInterval(v, cache, x, tolPx) {
  if (!cache || !cache.data) return null;
  const D = cache.data;
  const t = v.t(x);
  const tol = tolPx / v.k;
  let i = lowerBound(D.maxEnd, t - tol, D.n);
  const stop = upperBound(D.ts, t + tol, D.n);
  let best = null;
  let bestDist = Infinity;
  for (; i < stop; i++) {
    const dist = t < D.ts[i] ? D.ts[i] - t : t > D.end[i] ? t - D.end[i] : 0;
    if (dist <= tol && dist < bestDist) {
      best = D.items[i];
      bestDist = dist;
    }
  }
  return best;
}

// The log track: a tick per message, darker where they pile up (a summary
// of a pixel column's messages is drawn darker still, over its span).
export function drawLogs(ctx, v, cache, y, h) {
  if (!cache || !cache.data) return;
  const D = cache.data;
  const { vs, ve, k } = v;
  const i0 = lowerBound(D.maxEnd, vs, D.n);
  const stop = upperBound(D.ts, ve, D.n);
  let lastPx = -1;
  for (let i = i0; i < stop; i++) {
    const px = Math.floor((D.ts[i] - vs) * k);
    const merged = D.items[i].merged;
    if (px === lastPx && !merged) continue;
    lastPx = px;
    ctx.fillStyle = merged ? 'rgba(40,60,130,0.8)' : 'rgba(60,90,160,0.55)';
    ctx.fillRect(px, y + 4, Math.max(1.5, (D.end[i] - D.ts[i]) * k), h - 8);
  }
  if (cache.truncated) drawNote(ctx, v.W, y, 'logs cut at the reply limit: zoom in');
}

// Axis ticks for the view: {step, first} so that labels are ~100 px apart.
export function axisTicks(v, origin) {
  const step = tickStep((v.ve - v.vs) / Math.max(v.W / 110, 1));
  const first = Math.ceil((v.vs - origin) / step) * step + origin;
  return { step, first };
}

// The time axis: labels relative to origin (the trace start). A tick's
// label that would run under one of `covered` ({x, w}: the marks' and the
// area's duration labels, drawn over the axis after it) is left out, so
// that neither is drawn through the other. Returns the labels drawn, as
// {x0, x1, text}.
export function drawAxis(ctx, v, origin, h, area, covered = []) {
  const { W, k } = v;
  ctx.fillStyle = '#f7f8fa';
  ctx.fillRect(0, 0, W, h);
  if (area) {
    const x0 = (area.start - v.vs) * k;
    const x1 = (area.end - v.vs) * k;
    ctx.fillStyle = 'rgba(66,133,244,0.25)';
    ctx.fillRect(x0, 0, Math.max(x1 - x0, 1), h);
  }
  const { step, first } = axisTicks(v, origin);
  const ref = Math.max(Math.abs(v.vs - origin), Math.abs(v.ve - origin));
  ctx.strokeStyle = '#9aa3ad';
  ctx.fillStyle = '#333';
  ctx.font = FONT;
  ctx.textBaseline = 'middle';
  const drawn = [];
  ctx.beginPath();
  for (let t = first; t <= v.ve; t += step) {
    const x = Math.round((t - v.vs) * k) + 0.5;
    ctx.moveTo(x, h - 8);
    ctx.lineTo(x, h);
    const text = fmtTick(t - origin, step, ref);
    const x0 = x + 3;
    const x1 = x0 + ctx.measureText(text).width;
    if (!covered.some((c) => x1 + 2 > c.x && x0 - 2 < c.x + c.w)) {
      ctx.fillText(text, x0, h / 2 - 2);
      drawn.push({ x0, x1, text });
    }
    // minor ticks
    for (let m = 1; m < 5; m++) {
      const mx = Math.round((t + (m * step) / 5 - v.vs) * k) + 0.5;
      ctx.moveTo(mx, h - 4);
      ctx.lineTo(mx, h);
    }
  }
  ctx.moveTo(0, h - 0.5);
  ctx.lineTo(W, h - 0.5);
  ctx.stroke();
  return drawn;
}

// Vertical grid lines at the axis ticks, over the track area.
export function drawGrid(ctx, v, origin, h) {
  const { step, first } = axisTicks(v, origin);
  ctx.strokeStyle = 'rgba(0,0,0,0.06)';
  ctx.beginPath();
  for (let t = first; t <= v.ve; t += step) {
    const x = Math.round((t - v.vs) * v.k) + 0.5;
    ctx.moveTo(x, 0);
    ctx.lineTo(x, h);
  }
  ctx.stroke();
}

// The overview: slice density of each process over the whole trace, the
// search's matches (ticks: matches per bucket over the same range, or
// null) and the visible window. ov: {rows, buckets, start, width, max},
// its buckets of width ns from start. Returns the ticks drawn.
export function drawOverview(ctx, W, h, ov, traceStart, traceEnd, vs, ve, ticks) {
  ctx.fillStyle = '#eef1f5';
  ctx.fillRect(0, 0, W, h);
  const dur = Math.max(traceEnd - traceStart, 1);
  if (ov && ov.rows.length) {
    const n = ov.rows.length;
    const rh = (h - 4) / n;
    for (let r = 0; r < n; r++) {
      const row = ov.rows[r];
      const hue = hashString(String(row.key)) % 360;
      for (let b = 0; b < row.counts.length; b++) {
        const c = row.counts[b];
        if (!c) continue;
        const a = Math.min(1, 0.12 + 0.88 * Math.sqrt(c / ov.max));
        ctx.fillStyle = `hsl(${hue} 55% 45% / ${a.toFixed(2)})`;
        // bucket b covers [ov.start + b * ov.width, + ov.width): clipped to the trace
        const t0 = Math.max(ov.start + b * ov.width, traceStart);
        const t1 = Math.min(ov.start + (b + 1) * ov.width, traceStart + dur);
        const x0 = ((t0 - traceStart) / dur) * W;
        ctx.fillRect(x0, 2 + r * rh, Math.max(((t1 - t0) / dur) * W, 1), Math.max(rh - 1, 1));
      }
    }
  }
  let drawn = 0;
  if (ticks) {
    ctx.fillStyle = MATCH_COLOR;
    for (let b = 0; b < ticks.length; b++) {
      if (!ticks[b]) continue;
      ctx.fillRect(Math.floor((b / ticks.length) * W), 0, Math.max(Math.ceil(W / ticks.length) - 1, 2), 9);
      drawn++;
    }
  }
  const x0 = ((vs - traceStart) / dur) * W;
  const x1 = ((ve - traceStart) / dur) * W;
  ctx.fillStyle = 'rgba(20,30,45,0.28)';
  if (x0 > 0) ctx.fillRect(0, 0, x0, h);
  if (x1 < W) ctx.fillRect(x1, 0, W - x1, h);
  ctx.strokeStyle = '#1a73e8';
  ctx.lineWidth = 1.5;
  ctx.strokeRect(Math.max(x0, 0.75), 0.75, Math.max(Math.min(x1, W - 0.75) - Math.max(x0, 0.75), 1), h - 1.5);
  ctx.lineWidth = 1;
  return drawn;
}

// An arrow from (x0, y0) to (x1, y1) along a cubic curve: horizontal
// when the ends are far apart in time, vertical when they are not.
export function drawArrow(ctx, x0, y0, x1, y1, color) {
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  let cx;
  let cy;
  if (x1 - x0 > 40) {
    const dx = (x1 - x0) / 2;
    cx = x1 - dx;
    cy = y1;
    ctx.bezierCurveTo(x0 + dx, y0, cx, cy, x1, y1);
  } else {
    const dy = (y1 - y0) / 2;
    cx = x1;
    cy = y1 - dy;
    ctx.bezierCurveTo(x0, y0 + dy, cx, cy, x1, y1);
  }
  ctx.stroke();
  const a = Math.atan2(y1 - cy, x1 - cx);
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - 9 * Math.cos(a - 0.45), y1 - 9 * Math.sin(a - 0.45));
  ctx.lineTo(x1 - 9 * Math.cos(a + 0.45), y1 - 9 * Math.sin(a + 0.45));
  ctx.closePath();
  ctx.fill();
  ctx.beginPath();
  ctx.arc(x0, y0, 2.5, 0, Math.PI * 2);
  ctx.fill();
  ctx.lineWidth = 1;
}
