// The timeline page: tracks grouped by process, drawn on one canvas, with
// Perfetto's navigation (W/S zoom, A/D pan, ctrl+wheel, drag, F to fit),
// slice details with flows, search, markers (M), pinned and filtered
// tracks, and the keyboard help (?). The area selection's model is
// selection.js and its panel area.js (table) and flame.js; the trace's
// other pages are query.js and info.js.
//
// The URL holds the trace, the visible window, the selection and the marks
// (?trace=ID&start=NS&end=NS&slice=ID or &area=S,E&tracks=T,T; &marks=S_E),
// so a copied link restores the view. The track labels are DOM (text only);
// the tracks themselves are canvas. hooks.js exposes the view for tests.

import { api } from './api.js';
import { el, clear } from './dom.js';
import { DataStore } from './data.js';
import { fmtCount, fmtDur, fmtTime, fmtValue } from './format.js';
import { damage } from './library.js';
import {
  FONT, MIN_SPAN, counterAt, drawArrow, drawAxis, drawCounter, drawCpu, drawGrid, drawGroupSummary, drawLogs, drawOverview, drawSlices,
  drawStates,
  hitInterval, hitSlice, makeView,
} from './render.js';
import { LABEL_W, ROW_H, TRACK_PAD, buildTracks, layout, rowAt, visibleRows } from './tracks.js';
import { DetailsPanel } from './panels.js';
import { AreaSelection, isSliceTrack } from './selection.js';
import { pageLinks, traceDuration } from './pages.js';
import { activityRange } from './activity.js';
import { exposeHooks } from './hooks.js';
import { inputMethods } from './input.js';
import { LiveFollow } from './live.js';

const AXIS_H = 26;
const OVERVIEW_H = 40;
const KEY_ZOOM_PER_S = 2.8;     // e-folds per second while W/S is held
const KEY_PAN_PER_S = 0.9;      // views per second while A/D is held
const OVERVIEW_BUCKETS = 400;
const SEARCH_PAGE = 500;       // matches a search page holds
const LAST_CURSOR = '9223372036854775807:9223372036854775807'; // before= it: the last page

export class TimelinePage {
  constructor(root, traceId, params) {
    this.root = root;
    this.traceId = traceId;
    this.params = params;
    this.base = '/api/traces/' + encodeURIComponent(traceId);
    this.trace = null;
    this.groups = [];
    this.rows = [];
    this.height = 0;
    this.vs = 0;
    this.ve = 1;
    this.selection = null;   // {kind: 'slice', id, info} | {kind: 'sched'|'log'|'counter', ...}
    this.area = null;        // AreaSelection: a range and the tracks it covers
    this.hover = null;
    this.flowEnds = [];      // [{from, to}] details of both ends of the selected slice's flows
    this.held = new Set();   // keys held for continuous zoom/pan
    this.mouse = null;       // {x, y} over the canvas
    this.drag = null;
    this.dirty = false;
    this.animating = false;
    this.lastFrame = 0;
    this.selToken = 0;
    this.selBusy = false;
    this.overview = null;
    this.perf = { recording: false, draws: [], frames: [], replies: [], lastTs: 0, arrived: 0 };
    this.search = emptySearch('');
    this.searchPending = 0;  // search steps queued on searchChain
    this.searchChain = Promise.resolve();
    this.marks = [];         // [{start, end}] marked spans, kept in the URL
    this.helpEl = null;
    this.urlTimer = 0;
    this.ready = false;
    exposeHooks(this);
    this.start();
  }

  // ---- loading -------------------------------------------------------------

  async start() {
    this.buildShell();
    let trace;
    try {
      trace = await api(this.base, { exact: true });
    } catch (e) {
      this.fatal(e.status === 404 ? 'There is no trace ' + this.traceId + ' on this server.' : 'Could not load the trace: ' + e.message);
      return;
    }
    this.trace = trace;
    document.title = (trace.name || 'trace') + ' — trace viewer';
    this.titleEl.textContent = trace.name || 'trace ' + trace.id;
    this.titleEl.title = this.titleEl.textContent;
    // a live trace (or one whose stream ended and is ingested whole) is read from its snapshot
    const streaming = trace.stream && trace.stream.visible_bytes > 0 && trace.status !== 'failed';
    if (trace.status === 'live' && !streaming) {
      this.fatal('This live trace has received no whole record yet. The page opens it as soon as one arrives.');
      setTimeout(() => location.reload(), 1000);
      return;
    }
    if ((trace.status === 'queued' || trace.status === 'ingesting') && !streaming) {
      const p = trace.progress || {};
      this.fatal(`This trace is still ${trace.status} (${p.bytes_total ? Math.floor((100 * p.bytes_done) / p.bytes_total) : 0}%). The page reloads when it is ready.`);
      setTimeout(() => location.reload(), 1000);
      return;
    }
    if (trace.status === 'failed') {
      this.fatal('This trace could not be read: ' + (trace.error ? trace.error.message || trace.error.code : 'unknown error'));
      return;
    }
    let tr;
    let scheduled;
    try {
      [tr, scheduled] = await Promise.all([api(this.base + '/tracks', { exact: true }), this.scheduledThreads()]);
    } catch (e) {
      this.fatal('Could not load the tracks: ' + e.message);
      return;
    }
    this.traceStart = trace.start_ns ?? 0;
    this.traceEnd = Math.max(trace.end_ns ?? this.traceStart, this.traceStart + 1);
    const built = buildTracks(tr, trace, scheduled);
    this.groups = built.groups;
    this.byTrackId = built.byTrackId;
    this.threadNames = built.threadNames;
    this.processNames = built.processNames;
    this.store = this.makeStore();
    this.overviewLabel.textContent = 'Overview · ' + traceDuration(trace);
    this.showDiagnostics();
    this.showSymbols();
    this.restoreFromUrl();
    this.relayout();
    this.bindInput();
    this.ready = true;
    this.invalidate();
    this.loadOverview();
    if (streaming && trace.status !== 'ready') this.live = new LiveFollow(this);
    if (trace.format === 'xray-fdr') this.offerActivity();
    // ?q=: opened from a search across traces: find it here
    const q = this.params.get('q');
    if (q) {
      this.searchInput.value = q;
      this.stepSearch(1);
    }
  }

  // The threads with CPU runs ("pid/tid"): each gets a state track.
  async scheduledThreads() {
    try {
      const r = await api(this.base + '/query', { method: 'POST', body: 'SELECT DISTINCT pid, tid FROM sched', exact: true });
      return new Set((r.rows || []).map(([pid, tid]) => `${pid}/${tid}`));
    } catch {
      return new Set(); // no state tracks rather than no timeline
    }
  }

  // The view's data, fetched as the view moves, for the trace as it is now.
  makeStore() {
    return new DataStore({ ...this.trace, end_ns: this.traceEnd }, () => {
      this.perf.arrived++;
      this.invalidate();
      this.refreshHover();
    });
  }

  fatal(msg) {
    clear(this.body);
    this.body.append(el('div', { className: 'fatal' }, msg, el('div', null, el('a', { href: '/' }, 'Back to the trace list'))));
  }

  // ---- DOM -------------------------------------------------------------------

  buildShell() {
    this.titleEl = el('span', { className: 'trace-title' }, 'loading…');
    this.searchInput = el('input', {
      type: 'search', className: 'search', placeholder: 'Search slices  ( / )', 'aria-label': 'Search slice names',
      spellcheck: false,
    });
    this.searchInfo = el('span', { className: 'search-info' });
    this.trackFilter = el('input', {
      type: 'search', className: 'track-filter', placeholder: 'Filter tracks', 'aria-label': 'Filter tracks by name', spellcheck: false,
      oninput: () => { this.relayout(); this.invalidate(); },
    });
    this.areaToggle = el('button', {
      className: 'mode', title: 'Area selection mode: drag selects a time range (or hold Shift while dragging)',
      onclick: () => this.setAreaMode(!this.areaMode),
    }, 'Select area');
    const help = el('button', { className: 'help', title: 'Keyboard help (?)', onclick: () => this.toggleHelp() },
      'W/S zoom · A/D pan · Shift+drag select · F fit · / search · M mark · ? help');
    this.toolbar = el('header', { className: 'topbar' },
      el('a', { className: 'brand', href: '/', title: 'All traces' }, '← Traces'),
      this.titleEl,
      el('div', { className: 'search-box' }, this.searchInput,
        el('button', { className: 'search-prev', title: 'Previous hit (Shift+Enter)', onclick: () => this.stepSearch(-1) }, '‹'),
        el('button', { className: 'search-next', title: 'Next hit (Enter)', onclick: () => this.stepSearch(1) }, '›'),
        this.searchInfo),
      this.areaToggle,
      el('div', { className: 'track-tools' }, this.trackFilter,
        el('button', { className: 'collapse-all', title: 'Collapse every process', onclick: () => this.setAllCollapsed(true) }, 'Collapse all'),
        el('button', { className: 'expand-all', title: 'Expand every process', onclick: () => this.setAllCollapsed(false) }, 'Expand all')),
      pageLinks(this.traceId, 'timeline'), help);
    this.banner = el('div', { className: 'banner diagnostics hidden' });
    this.symbolsBanner = el('div', { className: 'banner symbols hidden' });
    this.overviewCanvas = el('canvas', { className: 'overview-canvas' });
    this.overviewLabel = el('div', { className: 'overview-label' }, 'Overview');
    this.axisCanvas = el('canvas', { className: 'axis-canvas' });
    this.spanLabel = el('div', { className: 'span-label' });
    this.labels = el('div', { className: 'labels' });
    this.pinnedLabels = el('div', { className: 'pinned-labels hidden' });
    this.inner = el('div', { className: 'tl-inner' }, this.labels);
    this.scroller = el('div', { className: 'tl-scroll' }, this.inner);
    this.canvas = el('canvas', { className: 'tl-canvas' });
    this.tooltip = el('div', { className: 'tooltip hidden' });
    this.body = el('div', { className: 'tl-body' }, this.scroller, this.canvas, this.pinnedLabels, this.tooltip);
    this.details = new DetailsPanel(this);
    this.root.append(this.toolbar, this.banner, this.symbolsBanner,
      el('div', { className: 'tl-overview' }, this.overviewLabel, this.overviewCanvas),
      el('div', { className: 'tl-axis' }, this.spanLabel, this.axisCanvas),
      this.body, this.details.root);
  }

  showDiagnostics() {
    const t = this.trace;
    const diag = t.diagnostics || {};
    const parts = [];
    for (const [k, v] of Object.entries(diag)) {
      if (Number(v) > 0) parts.push(`${k.replace(/_/g, ' ')}: ${fmtCount(v)}`);
    }
    for (const p of t.providers || []) {
      if (Number(p.buffer_overflows) > 0 && !diag.buffer_overflows) parts.push(`provider ${p.name}: ${p.buffer_overflows} buffer overflows`);
    }
    if (damage(diag) === 0 && parts.length === 0) return;
    clear(this.banner);
    this.banner.append(el('strong', null, 'This trace has damaged or dropped data. '),
      el('span', null, 'What is shown may be incomplete: '),
      el('span', { className: 'diag-list' }, parts.join(' · ')),
      el('button', { className: 'banner-close', title: 'Hide', onclick: () => { this.banner.classList.add('hidden'); this.resize(); } }, '×'));
    this.banner.classList.remove('hidden');
  }

  // XRay traces name functions fn#<id> until symbols arrive: say so, and
  // take the instrumented binary (or llvm-xray's YAML) right here.
  showSymbols() {
    const t = this.trace;
    const sym = t.symbols;
    if (t.format !== 'xray-fdr' || !sym || Number(sym.named) > 0) return;
    const input = el('input', { type: 'file', className: 'symbols-file' });
    const status = el('span', { className: 'symbols-status' });
    input.addEventListener('change', async () => {
      const file = input.files && input.files[0];
      if (!file) return;
      status.textContent = ' uploading…';
      try {
        // the file's name names the program when it is a binary
        await api(`/api/traces/${t.id}/symbols?filename=${encodeURIComponent(file.name)}`, { method: 'POST', body: file });
        status.textContent = ' names added; reloading…';
        location.reload();
      } catch (e) {
        status.textContent = ' ' + e.message;
      }
    });
    clear(this.symbolsBanner);
    this.symbolsBanner.append(el('strong', null, 'Function names are missing. '),
      el('span', null, 'This XRay trace shows functions as fn#<id>. Add the instrumented binary, or the YAML of '),
      el('code', null, 'llvm-xray extract --symbolize'), el('span', null, ': '), input, status,
      sym.error ? el('span', { className: 'warn-text' }, ' (the symbols given before were not usable: ' + sym.error + ')') : '',
      el('button', { className: 'banner-close', title: 'Hide', onclick: () => { this.symbolsBanner.classList.add('hidden'); this.resize(); } }, '×'));
    this.symbolsBanner.classList.remove('hidden');
  }

  relayout() {
    const { rows, height, pinnedHeight } = layout(this.groups, { filter: this.trackFilter.value });
    this.rows = rows;
    this.pinnedRows = rows.filter((r) => r.pinned);
    this.pinnedHeight = pinnedHeight;
    this.height = height;
    this.inner.style.height = height + 'px';
    clear(this.labels);
    clear(this.pinnedLabels);
    this.pinnedLabels.style.height = pinnedHeight + 'px';
    this.pinnedLabels.classList.toggle('hidden', pinnedHeight === 0);
    for (const r of rows) (r.pinned ? this.pinnedLabels : this.labels).append(this.labelFor(r.item, r.y, r.h));
    this.resize();
  }

  // Where a laid-out row's top is on the canvas: pinned rows do not scroll.
  rowTop(r) {
    return r.pinned ? r.y : r.y - this.scroller.scrollTop;
  }

  togglePin(t) {
    t.pin = !t.pin;
    this.relayout();
  }

  setAllCollapsed(on) {
    for (const g of this.groups) g.collapsed = on;
    this.relayout();
  }

  labelFor(it, y, h) {
    const style = { top: y + 'px', height: h + 'px' };
    if (it.kind === 'group') {
      const arrow = el('span', { className: 'arrow' }, it.collapsed ? '▸' : '▾');
      return el('div', {
        className: 'label group-label' + (it.collapsed ? ' collapsed' : ''), style, title: it.subtitle ? `${it.title} (${it.subtitle})` : it.title,
        dataset: { key: it.key }, role: 'button', tabIndex: 0,
        onclick: () => { it.collapsed = !it.collapsed; this.relayout(); this.invalidate(); },
        onkeydown: (e) => {
          if (e.key !== 'Enter' && e.key !== ' ') return;
          e.preventDefault();
          it.collapsed = !it.collapsed;
          this.relayout();
          this.invalidate();
        },
      }, arrow, el('span', { className: 'name' }, it.title), el('span', { className: 'sub' }, it.subtitle));
    }
    const kids = [el('span', { className: 'name' }, it.title), el('span', { className: 'sub' }, it.subtitle),
      el('button', {
        className: 'pin' + (it.pin ? ' pinned' : ''), title: it.pin ? 'Unpin this track' : 'Pin this track to the top',
        onclick: (e) => { e.stopPropagation(); this.togglePin(it); },
      }, it.pin ? 'unpin' : 'pin')];
    const inArea = this.area && this.area.has(it);
    return el('div', {
      className: 'label track-label kind-' + it.kind + (inArea ? ' in-area' : ''), style, title: `${it.title} ${it.subtitle}`,
      dataset: { key: it.key, trackId: it.trackId ?? '' },
      onclick: () => this.toggleAreaTrack(it),
    }, ...kids);
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const bodyRect = this.body.getBoundingClientRect();
    const sbw = this.scroller.offsetWidth - this.scroller.clientWidth;
    const W = Math.max(50, Math.floor(bodyRect.width - LABEL_W - sbw));
    const H = Math.max(50, Math.floor(bodyRect.height));
    this.W = W;
    this.H = H;
    this.canvas.style.left = LABEL_W + 'px';
    this.canvas.style.width = W + 'px';
    this.canvas.style.height = H + 'px';
    this.canvas.width = Math.round(W * dpr);
    this.canvas.height = Math.round(H * dpr);
    this.ctx = this.canvas.getContext('2d', { alpha: false });
    this.axisCanvas.style.width = W + 'px';
    this.axisCanvas.style.height = AXIS_H + 'px';
    this.axisCanvas.width = Math.round(W * dpr);
    this.axisCanvas.height = Math.round(AXIS_H * dpr);
    this.overviewCanvas.style.width = W + 'px';
    this.overviewCanvas.style.height = OVERVIEW_H + 'px';
    this.overviewCanvas.width = Math.round(W * dpr);
    this.overviewCanvas.height = Math.round(OVERVIEW_H * dpr);
    this.dpr = dpr;
    this.invalidate();
  }

  // ---- the view --------------------------------------------------------------

  // The view never leaves the trace: it starts at or after its first event
  // and ends at or before its last.
  setView(vs, ve) {
    const dur = this.traceEnd - this.traceStart;
    let span = Math.min(Math.max(ve - vs, MIN_SPAN), dur);
    const c = (vs + ve) / 2;
    vs = c - span / 2;
    if (vs < this.traceStart) vs = this.traceStart;
    if (vs + span > this.traceEnd) vs = this.traceEnd - span;
    this.vs = vs;
    this.ve = vs + span;
    if (this.live) this.live.viewMoved();
    this.scheduleUrl();
    this.invalidate();
    this.refreshHover();
  }

  // The view moved under a still mouse: the tooltip tells what is under it
  // now (after this frame's data, when it arrives).
  refreshHover() {
    if (!this.mouse || this.drag || this.hoverTimer) return;
    this.hoverTimer = requestAnimationFrame(() => {
      this.hoverTimer = 0;
      if (this.mouse && !this.drag) this.setHover(this.hitTest(this.mouse.x, this.mouse.y));
    });
  }

  zoomAt(factor, x) {
    const span = this.ve - this.vs;
    const t = this.vs + (x / this.W) * span;
    const ns = Math.max(span * factor, MIN_SPAN);
    const vs = t - (x / this.W) * ns;
    this.setView(vs, vs + ns);
  }

  panBy(px) {
    const d = (px / this.W) * (this.ve - this.vs);
    this.setView(this.vs + d, this.ve + d);
  }

  fitAll() {
    this.setView(this.traceStart, this.traceEnd);
  }

  fitRange(s, e) {
    if (e <= s) e = s + 1000;
    const pad = (e - s) * 0.1;
    this.setView(s - pad, e + pad);
  }

  // Every trace opens on its whole range, as Perfetto does. XRay logs
  // often hold one long call around a burst of short ones in a sliver of
  // the trace: the overview's label then says where, and shows it in one
  // click (F brings the whole trace back).
  async offerActivity() {
    const r = await activityRange(this.base, this.traceStart, this.traceEnd);
    if ((r.end - r.start) * 4 > this.traceEnd - this.traceStart) return;
    this.overviewLabel.append(el('button', {
      className: 'zoom-activity link-button',
      title: `Most calls start between ${fmtTime(r.start - this.traceStart)} and ${fmtTime(r.end - this.traceStart)}: show that (F: the whole trace)`,
      onclick: () => this.fitRange(r.start, r.end),
    }, `zoom to the activity (${fmtDur(r.end - r.start)})`));
  }

  fitSelection() {
    const sel = this.selection;
    if (this.area) this.fitRange(this.area.start, this.area.end);
    else if (sel && sel.kind === 'slice' && sel.info) this.fitRange(sel.info.ts, sliceEnd(sel.info, this.traceEnd));
    else if (sel && sel.item && sel.item.ts !== undefined) this.fitRange(sel.item.ts, sel.item.dur > 0 ? sel.item.ts + sel.item.dur : sel.item.ts + 1000);
    else this.fitAll();
  }

  // ---- URL -------------------------------------------------------------------

  restoreFromUrl() {
    const p = this.params;
    const s = Number(p.get('start'));
    const e = Number(p.get('end'));
    if (p.has('start') && p.has('end') && Number.isFinite(s) && Number.isFinite(e) && e > s) this.setView(s, e);
    else this.fitAll();
    const marks = p.get('marks');
    if (marks && /^-?\d+_-?\d+(,-?\d+_-?\d+)*$/.test(marks)) {
      this.marks = marks.split(',').slice(0, 100).map((m) => m.split('_').map(Number)).filter(([a, b]) => b >= a)
        .map(([a, b]) => ({ start: a, end: b }));
    }
    const area = AreaSelection.fromUrl(p, this.sliceTrackIds());
    if (area) this.setArea(area.start, area.end, area.ids());
    const slice = p.get('slice');
    if (slice && /^\d+$/.test(slice)) this.selectSlice(Number(slice), { reveal: false, scroll: true });
  }

  urlFor() {
    const q = new URLSearchParams();
    q.set('trace', this.traceId);
    q.set('start', String(Math.round(this.vs)));
    q.set('end', String(Math.round(this.ve)));
    if (this.selection && this.selection.kind === 'slice') q.set('slice', String(this.selection.id));
    if (this.area) this.area.toUrl(q);
    if (this.marks.length) q.set('marks', this.marks.map((m) => `${Math.round(m.start)}_${Math.round(m.end)}`).join(','));
    return '/?' + q.toString();
  }

  scheduleUrl() {
    if (this.urlTimer) return;
    this.urlTimer = setTimeout(() => {
      this.urlTimer = 0;
      history.replaceState(null, '', this.urlFor());
    }, 200);
  }

  // ---- selection -------------------------------------------------------------

  // opts: reveal (move the view to it), scroll (to its track), keepArea
  // (a slice picked from the area's own list leaves the area as it is).
  async selectSlice(id, opts = {}) {
    const token = ++this.selToken;
    this.selBusy = true;
    if (!opts.keepArea) this.area = null;
    this.markAreaLabels();
    this.selection = { kind: 'slice', id, info: null };
    this.flowEnds = [];
    this.details.showLoading('slice ' + id);
    this.scheduleUrl();
    this.invalidate();
    let info;
    try {
      info = await api(`${this.base}/slices/${id}`, { exact: true });
    } catch (e) {
      if (token !== this.selToken) return;
      this.details.showError(e.status === 404 ? `There is no slice ${id} in this trace.` : 'Could not load the slice: ' + e.message);
      this.selBusy = false;
      return;
    }
    if (token !== this.selToken) return;
    this.selection = { kind: 'slice', id, info };
    if (opts.reveal) this.reveal(info);
    else if (opts.scroll) this.scrollToTrack(info.track_id);
    this.details.showSlice(info);
    if (this.area) this.details.backToArea(this.area);
    this.invalidate();
    await this.loadFlows(info, token);
    if (token === this.selToken) this.selBusy = false;
  }

  async loadFlows(info, token) {
    const ends = [];
    const cache = new Map([[info.id, info]]);
    const get = async (id) => {
      if (!cache.has(id)) {
        try {
          cache.set(id, await api(`${this.base}/slices/${id}`, { exact: true }));
        } catch {
          cache.set(id, null);
        }
      }
      return cache.get(id);
    };
    for (const f of (info.flows || []).slice(0, 64)) {
      const from = await get(f.from_slice);
      const to = await get(f.to_slice);
      if (token !== this.selToken) return;
      ends.push({ flow: f, from, to });
    }
    this.flowEnds = ends;
    this.details.showFlowNames(ends, info.id);
    this.invalidate();
  }

  // Moves the view (and vertical scroll) so that the slice is visible.
  reveal(info) {
    const s = info.ts;
    const e = sliceEnd(info, this.traceEnd);
    const span = this.ve - this.vs;
    if (e - s > span * 0.8) this.fitRange(s, e);
    else if (s < this.vs || e > this.ve) this.setView((s + e) / 2 - span / 2, (s + e) / 2 + span / 2);
    this.scrollToTrack(info.track_id);
  }

  scrollToTrack(trackId) {
    const t = this.byTrackId.get(Number(trackId));
    if (!t) return;
    if (t.group.collapsed) {
      t.group.collapsed = false;
      this.relayout();
    }
    const top = this.scroller.scrollTop;
    if (t.y < top || t.y + Math.min(t.h, 120) > top + this.H) {
      this.scroller.scrollTop = Math.max(0, t.y - this.H / 3);
    }
    this.invalidate();
  }

  selectOther(kind, item, track) {
    this.selToken++;
    this.selBusy = false;
    this.area = null;
    this.markAreaLabels();
    this.selection = { kind, item, track };
    this.flowEnds = [];
    this.details.showItem(kind, item, track);
    this.scheduleUrl();
    this.invalidate();
  }

  clearSelection() {
    this.selToken++;
    this.selBusy = false;
    this.selection = null;
    this.area = null;
    this.markAreaLabels();
    this.flowEnds = [];
    this.details.showEmpty();
    this.scheduleUrl();
    this.invalidate();
  }

  // Every slice track's id.
  sliceTrackIds() {
    return [...this.byTrackId.values()].filter(isSliceTrack).map((t) => Number(t.trackId));
  }

  // The area [a, b] on the tracks trackIds (every slice track if omitted).
  setArea(a, b, trackIds = this.sliceTrackIds()) {
    this.selToken++;
    this.selBusy = false;
    this.selection = null;
    this.flowEnds = [];
    this.area = new AreaSelection(a, b, trackIds);
    this.markAreaLabels();
    this.scheduleUrl();
    this.invalidate();
    clearTimeout(this.areaTimer);
    this.areaTimer = setTimeout(() => this.details.showArea(this.area), 0);
  }

  // The labels of the area's tracks are highlighted.
  markAreaLabels() {
    for (const lab of [...this.labels.children, ...this.pinnedLabels.children]) {
      const t = lab.dataset.trackId ? this.byTrackId.get(Number(lab.dataset.trackId)) : null;
      lab.classList.toggle('in-area', !!(t && this.area && this.area.has(t)));
    }
  }

  // A click on a track's label adds it to the area or removes it.
  toggleAreaTrack(track) {
    if (!this.area || !isSliceTrack(track)) return;
    this.area.toggle(track);
    this.setArea(this.area.start, this.area.end, this.area.ids());
  }

  // M: marks the selected slice's span (or the area's, or a CPU run's);
  // marking the same span again removes the mark.
  markSelection() {
    const sel = this.selection;
    let span = null;
    if (sel && sel.kind === 'slice' && sel.info) span = { start: sel.info.ts, end: sliceEnd(sel.info, this.traceEnd) };
    else if (this.area) span = { start: this.area.start, end: this.area.end };
    else if (sel && sel.item && sel.item.ts !== undefined) span = { start: sel.item.ts, end: sel.item.ts + Math.max(sel.item.dur, 0) };
    if (!span) return;
    const i = this.marks.findIndex((m) => m.start === span.start && m.end === span.end);
    if (i >= 0) this.marks.splice(i, 1);
    else this.marks.push(span);
    this.scheduleUrl();
    this.invalidate();
  }

  // ?: the keyboard help, every action in it working on this page.
  toggleHelp() {
    if (this.helpEl) {
      this.helpEl.remove();
      this.helpEl = null;
      return;
    }
    const rows = HELP.map(([k, what]) => el('tr', null, el('th', null, k), el('td', null, what)));
    this.helpEl = el('div', { className: 'help-overlay', role: 'dialog', 'aria-label': 'Keyboard help', onclick: (e) => { if (e.target === this.helpEl) this.toggleHelp(); } },
      el('div', { className: 'help-box' }, el('h2', null, 'Keyboard and mouse'), el('table', { className: 'kv help-table' }, ...rows),
        el('div', { className: 'muted' }, 'Press ? or Esc to close.')));
    document.body.append(this.helpEl);
  }

  setAreaMode(on) {
    this.areaMode = on;
    this.areaToggle.classList.toggle('active', on);
    this.canvas.style.cursor = on ? 'crosshair' : '';
  }

  // ---- search ----------------------------------------------------------------
  //
  // The server counts every match and pages through them with cursors
  // (GET /search: total, index, next_cursor, prev_cursor, from=, before=);
  // the viewer holds one page around the current hit. A new search, or a
  // step once the view has moved away from the hit, starts from the view:
  // Enter goes to the first match at or after its start, Shift+Enter to
  // the one before. Steps queue, so every key press lands in order; only
  // the last one queued moves the view and selects.

  stepSearch(dir) {
    const q = this.searchInput.value.trim();
    if (!q) return;
    this.searchPending++;
    this.searchChain = this.searchChain.then(() => this.searchStep(q, dir)).catch((e) => {
      this.searchInfo.textContent = 'search failed: ' + e.message;
    }).finally(() => {
      this.searchPending--;
    });
  }

  async searchStep(q, dir) {
    const s = this.search;
    if (q !== s.q || s.total === 0 || this.searchViewMoved()) {
      await this.searchFromView(q, dir);
      return;
    }
    await this.gotoHit((s.idx + dir + s.total) % s.total);
  }

  // Has the view moved away from the current hit since the search showed
  // it? Then the next step starts from the view.
  searchViewMoved() {
    const s = this.search;
    const h = s.hit;
    if (!h) return true;
    if (s.view && s.view[0] === this.vs && s.view[1] === this.ve) return false;
    return !(h.ts <= this.ve && sliceEnd(h, this.traceEnd) >= this.vs);
  }

  searchUrl(q, extra) {
    return `${this.base}/search?q=${encodeURIComponent(q)}&limit=${SEARCH_PAGE}${extra}`;
  }

  async searchFromView(q, dir) {
    const fresh = q !== this.search.q;
    if (fresh) this.searchInfo.textContent = 'searching…';
    const hist = fresh ? `&buckets=${OVERVIEW_BUCKETS}&start=${this.traceStart}&end=${this.traceEnd}` : '';
    let r;
    try {
      r = await api(this.searchUrl(q, `&from=${Math.ceil(this.vs)}${hist}`));
    } catch (e) {
      this.search = emptySearch(q);
      this.searchInfo.textContent = 'search failed: ' + e.message;
      this.invalidate();
      return;
    }
    if (fresh) this.search = { ...emptySearch(q), histogram: r.histogram || null };
    this.setSearchPage(r);
    this.invalidate();
    if (r.total === 0) {
      this.searchInfo.textContent = 'no match';
      return;
    }
    // r.index: the first match at or after the view's start
    await this.gotoHit(dir > 0 ? r.index % r.total : (r.index - 1 + r.total) % r.total);
  }

  setSearchPage(r) {
    this.search.total = r.total;
    this.search.page = { index: r.index, hits: r.slices || [], next: r.next_cursor, prev: r.prev_cursor };
  }

  // Goes to match i (of all): from the page held, or the page next to it,
  // the first or the last page.
  async gotoHit(i) {
    const s = this.search;
    const p = s.page;
    if (!p || i < p.index || i >= p.index + p.hits.length) {
      let at = null;
      if (p && i === p.index + p.hits.length && p.next) at = '&cursor=' + p.next;
      else if (p && i === p.index - 1 && p.prev) at = '&before=' + p.prev;
      else if (i === 0) at = '';
      else if (i === s.total - 1) at = '&before=' + LAST_CURSOR;
      if (at === null) return;
      const r = await api(this.searchUrl(s.q, at));
      if (this.search !== s) return;
      this.setSearchPage(r);
      if (i >= r.total) return;
    }
    const pg = s.page;
    const h = pg.hits[i - pg.index];
    if (!h) return;
    s.idx = i;
    s.hit = h;
    this.searchInfo.textContent = `${fmtCount(i + 1)} / ${fmtCount(s.total)}`;
    if (this.searchPending > 1) return; // more steps queued: only the last one shows
    this.reveal({ ts: h.ts, dur: h.dur, track_id: h.track_id });
    s.view = [this.vs, this.ve];
    this.selectSlice(h.id, { reveal: false, scroll: true });
  }

  clearSearch() {
    this.search = emptySearch('');
    this.searchInfo.textContent = '';
    this.invalidate();
  }

  // ---- collapsed processes ---------------------------------------------------
  //
  // A collapsed process's header shows its threads' slices per pixel
  // column of the view, from GET /overview (the level of detail, never a
  // scan): one request for every process, asked again when the view has
  // settled elsewhere; the last one is drawn meanwhile, at its own times.

  groupSummary(g) {
    const want = this.summaryWindow();
    const sum = this.summary;
    if (!sum || sum.key !== want.key) this.requestSummary(want);
    return sum ? { start: sum.start, end: sum.end, counts: sum.byPid.get(String(g.pid)) || null } : null;
  }

  summaryWindow() {
    const start = Math.floor(this.vs);
    const end = Math.ceil(this.ve);
    const buckets = Math.max(1, Math.min(4096, Math.round(this.W / 2)));
    return { start, end, buckets, key: `${start} ${end} ${buckets}` };
  }

  requestSummary(want) {
    if (this.summaryWant && this.summaryWant.key === want.key) return;
    this.summaryWant = want;
    clearTimeout(this.summaryTimer);
    this.summaryTimer = setTimeout(async () => {
      let r;
      try {
        r = await api(`${this.base}/overview?start=${want.start}&end=${want.end}&buckets=${want.buckets}`, { exact: true });
      } catch {
        r = { processes: [] };
      }
      if (this.summaryWant !== want) return;
      this.summaryWant = null;
      this.summary = { ...want, byPid: new Map((r.processes || []).map((p) => [String(p.pid), p.counts])) };
      this.invalidate();
    }, 120);
  }

  // ---- overview --------------------------------------------------------------

  async loadOverview() {
    // The slice density of each process over the trace, counted by the
    // server from its level of detail (GET /overview: no scan of slices).
    let r;
    try {
      r = await api(`${this.base}/overview?start=${this.traceStart}&end=${this.traceEnd}&buckets=${OVERVIEW_BUCKETS}`, { exact: true });
    } catch {
      this.overview = { rows: [], buckets: OVERVIEW_BUCKETS, max: 1 };
      return;
    }
    const byPid = new Map();
    let max = 1;
    for (const p of r.processes || []) {
      const counts = Uint32Array.from(p.counts);
      byPid.set(p.pid, counts);
      for (const c of counts) if (c > max) max = c;
    }
    const rows = [...byPid.entries()].sort((a, b) => String(a[0]).localeCompare(String(b[0]), 'en', { numeric: true }))
      .slice(0, 12).map(([pid, counts]) => ({ key: pid, counts }));
    this.overview = { rows, buckets: OVERVIEW_BUCKETS, max };
    this.invalidate();
  }

  // ---- drawing ---------------------------------------------------------------

  invalidate() {
    if (this.dirty || !this.ctx) return;
    this.dirty = true;
    requestAnimationFrame((ts) => this.frame(ts));
  }

  frame(ts) {
    this.dirty = false;
    if (this.held.size) this.animate(ts);
    const t0 = performance.now();
    this.draw();
    const t1 = performance.now();
    if (this.perf.recording) {
      this.perf.draws.push(t1 - t0);
      if (this.perf.lastTs) {
        this.perf.frames.push(ts - this.perf.lastTs);
        this.perf.replies.push(this.perf.arrived); // data replies taken in since the last frame
      }
      this.perf.arrived = 0;
      this.perf.lastTs = ts;
    }
    if (this.held.size) this.invalidate();
  }

  animate(ts) {
    const dt = this.lastFrame ? Math.min(ts - this.lastFrame, 100) / 1000 : 1 / 60;
    this.lastFrame = ts;
    const x = this.mouse ? this.mouse.x : this.W / 2;
    let zoom = 0;
    let pan = 0;
    if (this.held.has('w')) zoom -= 1;
    if (this.held.has('s')) zoom += 1;
    if (this.held.has('a')) pan -= 1;
    if (this.held.has('d')) pan += 1;
    if (zoom) this.zoomAt(Math.exp(zoom * KEY_ZOOM_PER_S * dt), x);
    if (pan) this.panBy(pan * KEY_PAN_PER_S * dt * this.W);
  }

  draw() {
    if (!this.ready) return;
    const ctx = this.ctx;
    const dpr = this.dpr;
    const W = this.W;
    const H = this.H;
    const v = makeView(this.vs, this.ve, W);
    const res = (this.ve - this.vs) / W;
    const top = this.scroller.scrollTop;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, W, H);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    drawGrid(ctx, v, this.traceStart, H);
    // matches of the search are outlined where slices are drawn
    this.searchMarks = this.search.total > 0 ? { q: this.search.q.toLowerCase(), ids: [], ticks: 0 } : null;
    // tracks
    let i = 0;
    while (i < this.rows.length && this.rows[i].y + this.rows[i].h < top) i++;
    for (; i < this.rows.length; i++) {
      const r = this.rows[i];
      if (r.y - top > H) break;
      // pinned rows, and what scrolls under them, are drawn below
      if (!r.pinned && r.y - top + r.h > this.pinnedHeight) this.drawRow(ctx, v, res, W, r, r.y - top);
    }
    this.drawPinned(ctx, v, res, W);
    // trace bounds
    ctx.fillStyle = 'rgba(0,0,0,0.05)';
    const xs = v.x(this.traceStart);
    const xe = v.x(this.traceEnd);
    if (xs > 0) ctx.fillRect(0, 0, xs, H);
    if (xe < W) ctx.fillRect(xe, 0, W - xe, H);
    this.drawMarks(ctx, v);
    this.drawSelection(ctx, v, top);
    this.drawAxisAndOverview(v);
  }

  // One track or group row whose top is at canvas y.
  drawRow(ctx, v, res, W, r, y) {
    const it = r.item;
    if (it.kind === 'group') {
      ctx.fillStyle = '#eef1f5';
      ctx.fillRect(0, y, W, r.h);
      ctx.fillStyle = '#d5dae1';
      ctx.fillRect(0, y + r.h - 1, W, 1);
      if (it.collapsed && it.pid !== undefined) drawGroupSummary(ctx, v, this.groupSummary(it), y, r.h, it.pid);
      return;
    }
    ctx.fillStyle = '#e8ebef';
    ctx.fillRect(0, y + r.h - 1, W, 1);
    this.store.request(it, this.vs, this.ve, res);
    const c = this.store.get(it);
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, y, W, r.h - 1);
    ctx.clip();
    if (it.kind === 'thread' || it.kind === 'async') drawSlices(ctx, v, it, c, y, this.searchMarks);
    else if (it.kind === 'counter') this.drawCounterTrack(ctx, v, it, c, y, r.h);
    else if (it.kind === 'cpu') drawCpu(ctx, v, c, y, r.h, this.threadNames);
    else if (it.kind === 'log') drawLogs(ctx, v, c, y, r.h);
    else if (it.kind === 'state') drawStates(ctx, v, c, y, r.h);
    if (c && c.error) {
      ctx.fillStyle = '#b00020';
      ctx.fillText('could not load: ' + c.error, 6, y + 10);
    }
    ctx.restore();
  }

  // The pinned tracks, over the top of the scrolled ones.
  drawPinned(ctx, v, res, W) {
    if (!this.pinnedHeight) return;
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, W, this.pinnedHeight);
    for (const r of this.pinnedRows) this.drawRow(ctx, v, res, W, r, r.y);
    ctx.fillStyle = '#9aa5b1';
    ctx.fillRect(0, this.pinnedHeight - 1, W, 1);
  }

  drawCounterTrack(ctx, v, it, c, y, h) {
    drawCounter(ctx, v, it, c, y, h);
    ctx.fillStyle = '#555';
    ctx.fillText(fmtValue(it.max), 4, y + 9);
    if (this.hover && this.hover.track === it && this.hover.point) {
      const p = this.hover.point;
      const s = fmtValue(Number(p.value));
      ctx.fillStyle = 'rgba(255,255,255,0.85)';
      ctx.fillRect(this.mouse.x + 6, y + 2, ctx.measureText(s).width + 8, 16);
      ctx.fillStyle = '#111';
      ctx.fillText(s, this.mouse.x + 10, y + 10);
    }
  }

  // Where a slice (from details or search) is on the canvas, or null if
  // its track is not laid out. {x, y, w, h} in canvas css px.
  sliceBox(info, v, top) {
    const t = this.byTrackId.get(Number(info.track_id));
    if (!t || !t.visible) return null;
    const depth = info.depth ?? 0;
    if (depth >= visibleRows(t)) return null;
    const x0 = v.x(info.ts);
    const x1 = v.x(sliceEnd(info, this.traceEnd));
    return { x: x0, y: this.rowTop(t) + TRACK_PAD + depth * ROW_H, w: Math.max(x1 - x0, 1), h: ROW_H - 2 };
  }

  drawMarks(ctx, v) {
    for (const m of this.marks) {
      const x0 = v.x(m.start);
      const x1 = v.x(m.end);
      if (x1 < -2 || x0 > this.W + 2) continue;
      ctx.fillStyle = 'rgba(255,167,38,0.13)';
      ctx.fillRect(x0, 0, Math.max(x1 - x0, 1), this.H);
      ctx.fillStyle = '#f57c00';
      ctx.fillRect(Math.round(x0), 0, 1, this.H);
      ctx.fillRect(Math.round(x1), 0, 1, this.H);
    }
  }

  drawSelection(ctx, v, top) {
    const W = this.W;
    const H = this.H;
    if (this.area) {
      const x0 = v.x(this.area.start);
      const x1 = v.x(this.area.end);
      ctx.fillStyle = 'rgba(66,133,244,0.07)';
      ctx.fillRect(x0, 0, x1 - x0, H);
      ctx.fillStyle = 'rgba(66,133,244,0.22)';
      for (const r of this.rows) {
        const y = this.rowTop(r);
        if (r.item.kind !== 'group' && this.area.has(r.item) && y + r.h > 0 && y < H) ctx.fillRect(x0, y, x1 - x0, r.h - 1);
      }
      ctx.fillStyle = 'rgba(26,115,232,0.9)';
      ctx.fillRect(Math.round(x0), 0, 1, H);
      ctx.fillRect(Math.round(x1), 0, 1, H);
    }
    const hv = this.hover;
    if (hv && hv.info && !(this.selection && this.selection.id === hv.info.id)) {
      const b = this.sliceBox(hv.info, v, top);
      if (b) {
        ctx.strokeStyle = 'rgba(0,0,0,0.55)';
        ctx.lineWidth = 1;
        ctx.strokeRect(b.x + 0.5, b.y + 0.5, b.w - 1, b.h - 1);
      }
    }
    const sel = this.selection;
    if (sel && sel.kind === 'slice' && sel.info) {
      const b = this.sliceBox(sel.info, v, top);
      if (b) {
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 2;
        ctx.strokeRect(b.x, b.y, Math.max(b.w, 2), b.h);
        ctx.lineWidth = 1;
      }
      for (const f of this.flowEnds) {
        if (!f.from || !f.to) continue;
        const a = this.sliceBox(f.from, v, top);
        const z = this.sliceBox(f.to, v, top);
        if (!a || !z) continue;
        // The flow's own event times are not in the API: the arrow leaves
        // the source slice at its end (or where the target starts, if that
        // is earlier) and enters the target slice at its start.
        const fromEnd = sliceEnd(f.from, this.traceEnd);
        const clampX = (x) => Math.min(Math.max(x, -50), W + 50);
        const ax = clampX(v.x(Math.min(fromEnd, Math.max(f.from.ts, f.to.ts))));
        const zx = clampX(z.x);
        const color = f.from.id === sel.id ? '#c2185b' : '#1565c0';
        if (zx - ax > 40) drawArrow(ctx, ax, a.y + a.h / 2, zx, z.y + z.h / 2, color);
        else if (z.y > a.y) drawArrow(ctx, ax, a.y + a.h, zx + 3, z.y, color);
        else drawArrow(ctx, ax, a.y, zx + 3, z.y + z.h, color);
      }
    } else if (sel && (sel.kind === 'sched' || sel.kind === 'log') && sel.track && sel.track.visible) {
      const it = sel.item;
      const x0 = v.x(it.ts);
      const x1 = it.dur > 0 ? v.x(it.ts + it.dur) : it.dur < 0 ? v.x(this.traceEnd) : x0 + 2;
      const y = this.rowTop(sel.track);
      ctx.strokeStyle = '#000';
      ctx.lineWidth = 2;
      ctx.strokeRect(x0, y + 2, Math.max(x1 - x0, 2), sel.track.h - 5);
      ctx.lineWidth = 1;
    }
  }

  drawAxisAndOverview(v) {
    const dpr = this.dpr;
    const a = this.axisCanvas.getContext('2d', { alpha: false });
    a.setTransform(dpr, 0, 0, dpr, 0, 0);
    drawAxis(a, v, this.traceStart, AXIS_H, this.area);
    this.drawSpanLabels(a, v);
    const o = this.overviewCanvas.getContext('2d', { alpha: false });
    o.setTransform(dpr, 0, 0, dpr, 0, 0);
    const ticks = drawOverview(o, this.W, OVERVIEW_H, this.overview, this.traceStart, this.traceEnd, this.vs, this.ve,
      this.search.total > 0 ? this.search.histogram : null);
    if (this.searchMarks) this.searchMarks.ticks = ticks;
    const span = `${fmtDur(this.ve - this.vs)} from ${fmtTime(this.vs - this.traceStart)}`;
    if (this.spanLabel.textContent !== span) {
      this.spanLabel.textContent = span;
      this.spanLabel.title = `${fmtTime(this.vs - this.traceStart)} – ${fmtTime(this.ve - this.traceStart)} from the trace start`;
    }
  }

  // How long each mark and the area (while dragged too) are: a label on
  // the axis over the middle of the span.
  drawSpanLabels(ctx, v) {
    const spans = this.marks.map((m) => ({ ...m, color: '#f57c00' }));
    if (this.area) spans.push({ start: this.area.start, end: this.area.end, color: '#1a73e8' });
    this.spanTexts = [];
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    for (const sp of spans) {
      const x0 = Math.max(v.x(sp.start), 0);
      const x1 = Math.min(v.x(sp.end), this.W);
      if (x1 < 0 || x0 > this.W) continue;
      const text = fmtDur(sp.end - sp.start);
      const w = ctx.measureText(text).width + 10;
      const x = Math.min(Math.max((x0 + x1) / 2 - w / 2, 0), this.W - w);
      ctx.fillStyle = sp.color;
      ctx.fillRect(x, 1, w, 14);
      ctx.fillStyle = '#fff';
      ctx.fillText(text, x + 5, 8.5);
      this.spanTexts.push(text);
    }
  }

  // ---- hit testing -----------------------------------------------------------

  // What is under canvas point (x, y): {track, item, kind, info?, point?}.
  hitTest(x, y) {
    const top = this.scroller.scrollTop;
    const r = y < this.pinnedHeight ? rowAt(this.pinnedRows, y) : rowAt(this.rows, y + top);
    if (!r) return null;
    const it = r.item;
    if (it.kind === 'group') return { kind: 'group', track: it };
    const rowY = this.rowTop(r);
    const v = makeView(this.vs, this.ve, this.W);
    const c = this.store.get(it);
    if (it.kind === 'thread' || it.kind === 'async') {
      const depth = Math.floor((y - rowY - TRACK_PAD) / ROW_H);
      const s = hitSlice(v, it, c, depth, x, 3);
      if (!s) return { kind: 'none', track: it };
      return { kind: 'slice', track: it, item: s, info: { id: s.id, ts: s.ts, dur: s.dur, depth: s.depth, track_id: it.trackId } };
    }
    if (it.kind === 'cpu') {
      const s = hitInterval(v, c, x, 2);
      return s ? { kind: 'sched', track: it, item: s } : { kind: 'none', track: it };
    }
    if (it.kind === 'log') {
      const s = hitInterval(v, c, x, 4);
      return s ? { kind: 'log', track: it, item: s } : { kind: 'none', track: it };
    }
    if (it.kind === 'state') {
      const s = hitInterval(v, c, x, 2);
      return s ? { kind: 'state', track: it, item: s } : { kind: 'none', track: it };
    }
    if (it.kind === 'counter') {
      const p = counterAt(c, v.t(x));
      return p ? { kind: 'counter', track: it, point: p, item: p } : { kind: 'none', track: it };
    }
    return null;
  }

}

// The keyboard help (?): every line here is an action of this page.
const HELP = [
  ['W / S', 'zoom in / out at the mouse (hold)'],
  ['A / D', 'pan left / right (hold)'],
  ['Ctrl + wheel', 'zoom at the mouse'],
  ['drag', 'pan'],
  ['Shift + drag', 'select an area on the tracks crossed'],
  ['click a track name', 'add it to the area or remove it'],
  ['F', 'fit the selection (or the whole trace)'],
  ['/', 'search slices; Enter / Shift+Enter: next / previous hit'],
  ['M', 'mark the selected slice\'s span (again: unmark)'],
  ['Esc', 'clear the selection'],
  ['?', 'this help'],
];

Object.assign(TimelinePage.prototype, inputMethods);

// A search with nothing found yet: q searched, total matches, idx the
// current hit among them (hit its slice, view the view that showed it),
// page the matches held around it
// ({index, hits, next, prev}), histogram the matches per overview bucket.
function emptySearch(q) {
  return { q, total: 0, idx: -1, hit: null, view: null, page: null, histogram: null };
}

export function sliceEnd(info, traceEnd) {
  return info.dur < 0 ? traceEnd : info.ts + info.dur;
}



