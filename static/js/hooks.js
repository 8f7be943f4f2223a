// window.__viewer: what the browser tests and the viewer benchmark read and
// drive (state, geometry, tracks, what is drawn where, timing records).
// Nothing in the drawing path calls into this module.

import { fmtDur } from './format.js';
import { sliceItem } from './render.js';
import { GROUP_H, LABEL_W, ROW_H, TRACK_PAD } from './tracks.js';

export function exposeHooks(self) {
  window.__viewer = {
    page: 'timeline',
    get ready() {
      return self.ready;
    },
    // true when nothing is loading and nothing waits to be drawn
    idle() {
      return self.ready && !self.dirty && self.store && self.store.busy === 0 && !self.selection.busy &&
        self.search.pending === 0 && !self.summaryWant && !self.areaLoading && self.input.held.size === 0 && self.notes.busy === 0;
    },
    state() {
      const sel = self.selection.current;
      const area = self.selection.area;
      const search = self.search.result;
      return {
        traceId: self.traceId,
        start: self.view.vs,
        end: self.view.ve,
        selection: sel ? { kind: sel.kind, id: sel.id ?? null } : null,
        area: area ? { start: area.start, end: area.end, tracks: area.ids() } : null,
        marks: self.marks.list.map((m) => ({ ...m })),
        url: self.urlFor(),
        search: { q: search.q, count: search.total, index: search.idx },
      };
    },
    // The notes' flags on the axis as drawn: {id, x, y} in page px.
    noteFlags() {
      const r = self.axisCanvas.getBoundingClientRect();
      return self.notes.flags(self.view.mapping(), self.W).map((f) => ({ id: f.note.id, x: r.left + f.x, y: r.top + 5 }));
    },
    // The query's tracks (debugtracks.js): {ready, error, tracks: [{title, slices}]}, or null.
    debugTracks() {
      return self.debugTracks || null;
    },
    geometry() {
      return { labelWidth: LABEL_W, rowHeight: ROW_H, trackPad: TRACK_PAD, groupHeight: GROUP_H, width: self.W, height: self.H };
    },
    tracks() {
      return self.rows.map((r) => ({
        kind: r.item.kind, key: r.item.key, title: r.item.title, subtitle: r.item.subtitle,
        trackId: r.item.trackId ?? null, y: r.y, h: r.h, pinned: !!r.pinned, top: self.rowTop(r),
      }));
    },
    // The slice's rectangle in page (client) coordinates, if it is in the
    // loaded data and on screen; else null.
    sliceRect(id) {
      if (!self.ready) return null;
      const v = self.view.mapping();
      const top = self.scroller.scrollTop;
      let info = null;
      const sel = self.selection.current;
      if (sel && sel.kind === 'slice' && sel.id === id && sel.info) info = sel.info;
      for (const t of self.byTrackId.values()) {
        if (info) break;
        const c = self.store.get(t);
        if (!c || !c.data || !(t.kind === 'thread' || t.kind === 'async')) continue;
        for (const D of c.data.depths) {
          if (!D) continue;
          const i = D.id.findIndex((x, j) => x === id && !D.merged[j]);
          if (i >= 0) {
            info = { ...sliceItem(c.data, D, i), track_id: t.trackId };
            break;
          }
        }
      }
      if (!info) return null;
      const b = self.sliceBox(info, v, top);
      if (!b) return null;
      const cr = self.canvas.getBoundingClientRect();
      const x0 = Math.max(b.x, 0);
      const x1 = Math.min(b.x + b.w, self.W);
      if (x1 <= x0 || b.y + b.h < 0 || b.y > self.H) return null;
      return { x: cr.left + x0, y: cr.top + b.y, width: x1 - x0, height: b.h };
    },
    // What the last frame drew of the search: the ids of the matching
    // slices outlined, the overview's ticks and the counts they stand for.
    searchMarks() {
      const m = self.searchMarks;
      return { slices: m ? [...new Set(m.ids)] : [], ticks: m ? m.ticks : 0, overview: self.search.result.histogram ? [...self.search.result.histogram] : [] };
    },
    // The level-of-detail summaries ("merged") of the slice tracks on
    // screen, as drawn: {trackId, name, merged, x0, x1, y} in page px (y:
    // the middle of the summary's row); with all, the slices too.
    summaries(all = false) {
      const v = self.view.mapping();
      const cr = self.canvas.getBoundingClientRect();
      const out = [];
      for (const r of self.rows) {
        const t = r.item;
        const c = (t.kind === 'thread' || t.kind === 'async') && self.store.get(t);
        const top = self.rowTop(r);
        if (!c || !c.data || top + r.h < 0 || top > self.H) continue;
        for (const D of c.data.depths) {
          if (!D || (t.folded ? 0 : D.depth) * ROW_H >= r.h) continue;
          for (let i = 0; i < D.n; i++) {
            if (!D.merged[i] && !all) continue;
            const x0 = Math.max(v.x(D.ts[i]), 0);
            const x1 = Math.min(v.x(D.end[i]), self.W);
            if (x1 <= x0) continue;
            out.push({ trackId: t.trackId, name: c.data.names[D.name[i]], merged: D.merged[i], x0: cr.left + x0, x1: cr.left + x1,
              y: cr.top + top + TRACK_PAD + (t.folded ? 0 : D.depth) * ROW_H + ROW_H / 2 - 1 });
          }
        }
      }
      return out;
    },
    // The names written on slice tracks in the last frame, per track id.
    labels() {
      return Object.fromEntries([...(self.drawnLabels || new Map())].map(([k, v]) => [k, [...v]]));
    },
    // Folds (true) or unfolds a tall slice track, as its label's arrow does.
    fold(trackId, on) {
      const t = self.byTrackId.get(Number(trackId));
      if (t) self.setFolded(t, on);
    },
    // A collapsed process's summary as drawn: {start, end, counts} or null.
    groupSummary(key) {
      const g = self.groups.find((x) => x.key === key);
      return g ? self.groupSummary(g) : null;
    },
    // The durations written over the marks and the area on the axis.
    spanLabels() {
      return (self.spanBoxes || []).map((b) => b.text);
    },
    // Where the axis's tick labels and the duration labels over it lie,
    // in CSS pixels: {ticks: [{x0, x1, text}], spans: [{x0, x1, text}]}.
    axisLabels() {
      return {
        ticks: [...(self.tickTexts || [])],
        spans: (self.spanBoxes || []).map((b) => ({ x0: b.x, x1: b.x + b.w, text: b.text })),
      };
    },
    fmtDur,
    setView(s, e) {
      self.view.set(s, e);
    },
    // What the timeline shows at page point (x, y): a slice (or a
    // summary) with its name, depth and merged count, or null.
    hit(x, y) {
      const cr = self.canvas.getBoundingClientRect();
      const h = self.hitTest(x - cr.left, y - cr.top);
      if (h && h.kind === 'state') return { state: h.item.state, cpu: h.item.cpu, ts: h.item.ts, dur: h.item.dur };
      if (!h || h.kind !== 'slice') return null;
      const s = h.item;
      return { id: s.id, name: s.name, depth: s.depth, ts: s.ts, dur: s.dur, merged: s.merged || 0 };
    },
    setArea(s, e, tracks) {
      self.selection.setArea(s, e, tracks);
    },
    // The flame graph's frames as drawn: {name, depth, x, y, w} in page px.
    flameBoxes() {
      const f = self.details.area.flame;
      if (!f) return [];
      const r = f.canvas.getBoundingClientRect();
      return f.boxes.filter((b) => b.node).map((b) => ({ name: b.node.name, depth: b.node.depth, x: r.left + b.x, y: r.top + b.y, w: b.w }));
    },
    select(id) {
      return self.selection.selectSlice(id, { reveal: true });
    },
    perf: self.perf,
    startRecording() {
      self.perf.draws.length = 0;
      self.perf.frames.length = 0;
      self.perf.replies.length = 0;
      self.perf.lastTs = 0;
      self.perf.recording = true;
    },
    stopRecording() {
      self.perf.recording = false;
      return { draws: [...self.perf.draws], frames: [...self.perf.frames], replies: [...self.perf.replies] };
    },
    dataStats() {
      const st = self.store;
      return st ? { requests: st.requests, bytes: st.bytes, textBytes: st.textBytes, timing: { ...st.timing }, errors: st.errors, lastError: st.lastError } : null;
    },
    forceDraw() {
      const t0 = performance.now();
      self.draw();
      return performance.now() - t0;
    },
  };
}
