// What is selected on the timeline: one thing picked (a slice, with the
// flows that start or end at it, or a CPU run, a log record, a state, a
// counter point), or an area. Selection holds it and tells the details
// panel; AreaSelection is the area's model.
//
// The area, as in Perfetto, is a time range and the tracks it covers. A
// drag selects the slice tracks it crosses (a process header crossed
// brings all of its tracks); a click on a track's label adds or removes
// it. The URL keeps it as area=START,END&tracks=ID,ID.

import { api } from './api.js';

// Slice tracks (thread, async): the ones the area's table and flame graph read.
export function isSliceTrack(t) {
  return t && (t.kind === 'thread' || t.kind === 'async');
}

export class AreaSelection {
  constructor(start, end, trackIds) {
    this.start = Math.min(start, end);
    this.end = Math.max(start, end);
    this.tracks = new Set(trackIds.map(Number));
  }

  // The slice tracks laid out between content y0 and y1 (either order).
  // rows: the layout's [{item, y, h}].
  static tracksCrossed(rows, y0, y1) {
    const lo = Math.min(y0, y1);
    const hi = Math.max(y0, y1);
    const ids = [];
    for (const r of rows) {
      if (r.y + r.h <= lo || r.y > hi) continue;
      if (r.item.kind === 'group') {
        for (const t of r.item.children) if (isSliceTrack(t)) ids.push(Number(t.trackId));
      } else if (isSliceTrack(r.item)) {
        ids.push(Number(r.item.trackId));
      }
    }
    return [...new Set(ids)];
  }

  has(track) {
    return isSliceTrack(track) && this.tracks.has(Number(track.trackId));
  }

  toggle(track) {
    if (!isSliceTrack(track)) return;
    const id = Number(track.trackId);
    if (this.tracks.has(id)) this.tracks.delete(id);
    else this.tracks.add(id);
  }

  ids() {
    return [...this.tracks].sort((a, b) => a - b);
  }

  // The query string of the area endpoints (without limit).
  query() {
    return `tracks=${this.ids().join(',')}&start=${Math.round(this.start)}&end=${Math.round(this.end)}`;
  }

  toUrl(q) {
    q.set('area', `${Math.round(this.start)},${Math.round(this.end)}`);
    if (this.tracks.size) q.set('tracks', this.ids().join(','));
  }

  // From URL parameters, or null. allIds: every slice track (an old link
  // without tracks= selects them all).
  static fromUrl(p, allIds) {
    const area = p.get('area');
    if (!area || !/^-?\d+,-?\d+$/.test(area)) return null;
    const [a, b] = area.split(',').map(Number);
    if (b < a) return null;
    const t = p.get('tracks');
    const ids = t && /^\d+(,\d+)*$/.test(t) ? t.split(',').map(Number) : allIds;
    return new AreaSelection(a, b, ids);
  }
}

// The end of a slice (or a slice-like {ts, dur}): the trace's end for one
// that never ended.
export function sliceEnd(info, traceEnd) {
  return info.dur < 0 ? traceEnd : info.ts + info.dur;
}

// The selection of a timeline page: page is what it shows the selection
// through (details, the view and the layout, the URL, redraws).
export class Selection {
  constructor(page) {
    this.page = page;
    this.current = null;  // {kind: 'slice', id, info} | {kind: 'sched'|'log'|'state'|'counter', item, track}
    this.area = null;     // AreaSelection, or null; never both with a slice picked
    this.flowEnds = [];   // [{flow, from, to}]: both ends of the picked slice's flows
    this.token = 0;       // bumped by every change: a reply for an older one is dropped
    this.busy = false;    // a slice or its flows are loading
  }

  // Picks slice id. opts: reveal (move the view to it), scroll (to its
  // track), fit (zoom the view to it), keepArea (a slice picked from the
  // area's own list leaves the area as it is).
  async selectSlice(id, opts = {}) {
    const page = this.page;
    const token = ++this.token;
    this.busy = true;
    if (!opts.keepArea) this.area = null;
    page.markAreaLabels();
    this.current = { kind: 'slice', id, info: null };
    this.flowEnds = [];
    page.details.showLoading('slice ' + id);
    page.scheduleUrl();
    page.invalidate();
    let info;
    try {
      info = await api(`${page.base}/slices/${id}`, { exact: true });
    } catch (e) {
      if (token !== this.token) return;
      page.details.showError(e.status === 404 ? `There is no slice ${id} in this trace.` : 'Could not load the slice: ' + e.message);
      this.busy = false;
      return;
    }
    if (token !== this.token) return;
    this.current = { kind: 'slice', id, info };
    if (opts.fit) page.view.fitRange(info.ts, sliceEnd(info, page.view.end));
    if (opts.reveal) page.reveal(info);
    else if (opts.scroll) page.scrollToTrack(info.track_id);
    page.details.showSlice(info);
    if (!opts.reveal && !opts.scroll) page.keepSelectionVisible();
    if (this.area) page.details.backToArea(this.area);
    page.invalidate();
    await this.loadFlows(info, token);
    if (token === this.token) this.busy = false;
  }

  async loadFlows(info, token) {
    const page = this.page;
    const ends = [];
    const cache = new Map([[info.id, info]]);
    const get = async (id) => {
      if (!cache.has(id)) {
        try {
          cache.set(id, await api(`${page.base}/slices/${id}`, { exact: true }));
        } catch {
          cache.set(id, null);
        }
      }
      return cache.get(id);
    };
    for (const f of (info.flows || []).slice(0, 64)) {
      const from = await get(f.from_slice);
      const to = await get(f.to_slice);
      if (token !== this.token) return;
      ends.push({ flow: f, from, to });
    }
    this.flowEnds = ends;
    page.details.showFlowNames(ends, info.id);
    page.invalidate();
  }

  // Picks something that is not a slice (a CPU run, a log record, ...).
  selectOther(kind, item, track) {
    this.token++;
    this.busy = false;
    this.area = null;
    this.page.markAreaLabels();
    this.current = { kind, item, track };
    this.flowEnds = [];
    this.page.details.showItem(kind, item, track);
    this.page.keepSelectionVisible();
    this.page.scheduleUrl();
    this.page.invalidate();
  }

  clear() {
    this.token++;
    this.busy = false;
    this.current = null;
    this.area = null;
    this.page.markAreaLabels();
    this.flowEnds = [];
    this.page.details.showEmpty();
    this.page.scheduleUrl();
    this.page.invalidate();
  }

  // The area [a, b] on the tracks trackIds (every slice track if omitted).
  setArea(a, b, trackIds = this.page.sliceTrackIds()) {
    this.token++;
    this.busy = false;
    this.current = null;
    this.flowEnds = [];
    this.area = new AreaSelection(a, b, trackIds);
    this.page.markAreaLabels();
    this.page.scheduleUrl();
    this.page.invalidate();
    clearTimeout(this.areaTimer);
    this.areaTimer = setTimeout(() => this.page.details.showArea(this.area), 0);
  }

  // An area being dragged: drawn as it goes, told to the panel when the
  // drag ends (setArea).
  dragArea(area) {
    this.area = area;
    this.current = null;
    this.page.invalidate();
  }

  // A click on a track's label adds it to the area or removes it.
  toggleAreaTrack(track) {
    if (!this.area || !isSliceTrack(track)) return;
    this.area.toggle(track);
    this.setArea(this.area.start, this.area.end, this.area.ids());
  }

  // The span of time selected: the area's, the slice's, or the picked
  // item's; null when there is none.
  span(traceEnd) {
    const sel = this.current;
    if (sel && sel.kind === 'slice' && sel.info) return { start: sel.info.ts, end: sliceEnd(sel.info, traceEnd) };
    if (this.area) return { start: this.area.start, end: this.area.end };
    if (sel && sel.item && sel.item.ts !== undefined) return { start: sel.item.ts, end: sel.item.ts + Math.max(sel.item.dur, 0) };
    return null;
  }
}
