// The timeline page: tracks grouped by process, drawn on one canvas, with
// Perfetto's navigation (W/S zoom, A/D pan, ctrl+wheel, drag, F to fit),
// slice details with flows, search, markers (M), pinned and filtered
// tracks, and the keyboard help (?). The page lays out and draws; what it
// shows is held by objects of their own: the view (view.js: the time
// window and zoom), the selection (selection.js; its area panel area.js
// and flame.js), the search (search.js), the marks (marks.js), and the
// input controller (input.js) that turns the mouse and the keys into
// calls on them. The trace's other pages are query.js and info.js.
//
// The URL holds the trace, the visible window, the selection and the marks
// (?trace=ID&start=NS&end=NS&slice=ID or &area=S,E&tracks=T,T; &marks=S_E),
// so a copied link restores the view; &note=ID opens the trace at one of
// its notes (notes.js), and a slice= without a window is zoomed to. The
// track labels are DOM (text only); the tracks themselves are canvas.
// hooks.js exposes the view for tests.

import { api } from './api.js';
import { el, clear } from './dom.js';
import { DataStore } from './data.js';
import { fmtCount, fmtDur, fmtTime, fmtValue } from './format.js';
import {
  FONT, counterAt, drawArrow, drawAxis, drawCounter, drawCpu, drawGrid, drawGroupSummary, drawLogs, drawOverview, drawSlices,
  drawStates,
  hitInterval, hitSlice,
} from './render.js';
import { LABEL_W, ROW_H, TRACK_PAD, buildTracks, depthCount, foldable, layout, rowAt, sliceRow, visibleRows } from './tracks.js';
import { DetailsPanel } from './panels.js';
import { AreaSelection, Selection, isSliceTrack, sliceEnd } from './selection.js';
import { isDamage, pageLinks, shownBytes, traceDuration } from './pages.js';
import { activityRange } from './activity.js';
import { exposeHooks } from './hooks.js';
import { InputController } from './input.js';
import { Marks } from './marks.js';
import { Notes } from './notes.js';
import { Search } from './search.js';
import { debugHit, keepDebug, loadDebugTracks } from './debugtracks.js';
import { TimeView } from './view.js';
import { LiveFollow } from './live.js';

const AXIS_H = 26;
const OVERVIEW_H = 40;
const OVERVIEW_BUCKETS = 400;
const OVERVIEW_MAX_BUCKETS = 512;

// The window of at most `most` buckets of 2^L ns (L >= 10, the finest
// level of detail), the first starting at a multiple of 2^L, that holds
// [start, end]: {start, end} as exact decimal strings for the request,
// first (a number) and width (2^L) for drawing, buckets.
export function alignedWindow(start, end, most) {
  const s = BigInt(Math.floor(start));
  const e = BigInt(Math.max(Math.ceil(end), Math.floor(start)));
  let level = 10n;
  while (((e >> level) - (s >> level) + 1n) > BigInt(most)) level++;
  const first = (s >> level) << level;
  const buckets = (e >> level) - (s >> level) + 1n;
  const width = 1n << level;
  return {
    start: first.toString(), end: (first + buckets * width - 1n).toString(),
    first: Number(first), width: Number(width), buckets: Number(buckets),
  };
}

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
    this.view = new TimeView(() => this.viewMoved());
    this.selection = new Selection(this);
    this.search = new Search(this, OVERVIEW_BUCKETS);
    this.marks = new Marks();
    this.notes = new Notes(this);
    this.input = new InputController(this, { view: this.view, selection: this.selection, search: this.search, marks: this.marks });
    this.dirty = false;
    this.overview = null;
    this.perf = { recording: false, draws: [], frames: [], replies: [], lastTs: 0, arrived: 0 };
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
    // a live trace (or one whose stream ended and is ingested whole) is read from its snapshot,
    // a large upload being ingested from its preview (docs/API.md "A trace while its bytes arrive", Previews)
    const streaming = (trace.stream && shownBytes(trace) > 0 && trace.status !== 'failed') ||
      (trace.status === 'ingesting' && trace.preview && trace.preview.visible_bytes > 0);
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
    this.view.setExtent(trace.start_ns ?? 0, trace.end_ns ?? trace.start_ns ?? 0);
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
    this.input.bind();
    this.ready = true;
    this.invalidate();
    this.loadOverview();
    this.notes.load();
    loadDebugTracks(this);
    if (streaming && trace.status !== 'ready') this.live = new LiveFollow(this);
    if (trace.format === 'xray-fdr') this.offerActivity();
    // ?q=: opened from a search across traces: find it here
    const q = this.params.get('q');
    if (q) this.search.open(q);
  }

  // The threads with CPU runs ("pid/tid"): each gets a state track.
  async scheduledThreads() {
    try {
      // one probe of sched's (pid, tid, ts) index per thread (every sched
      // row's thread has a row in threads): a DISTINCT reads all of sched
      const sql = 'SELECT pid, tid FROM threads t WHERE EXISTS (SELECT 1 FROM sched s WHERE s.pid = t.pid AND s.tid = t.tid)';
      const r = await api(this.base + '/query', { method: 'POST', body: sql, exact: true });
      return new Set((r.rows || []).map(([pid, tid]) => `${pid}/${tid}`));
    } catch {
      return new Set(); // no state tracks rather than no timeline
    }
  }

  // The view's data, fetched as the view moves, for the trace as it is now.
  makeStore() {
    return new DataStore({ ...this.trace, end_ns: this.view.end }, () => {
      this.perf.arrived++;
      this.invalidate();
      this.input.refreshHover();
    });
  }

  fatal(msg) {
    clear(this.body);
    this.body.append(el('div', { className: 'fatal' }, msg, el('div', null, el('a', { href: '/' }, 'Back to the trace list'))));
  }

  // ---- DOM -------------------------------------------------------------------

  buildShell() {
    this.titleEl = el('span', { className: 'trace-title' }, 'loading…');
    this.trackFilter = el('input', {
      type: 'search', className: 'track-filter', placeholder: 'Filter tracks', 'aria-label': 'Filter tracks by name', spellcheck: false,
      oninput: () => { this.relayout(); this.invalidate(); },
    });
    this.areaToggle = el('button', {
      className: 'mode', title: 'Area selection mode: drag selects a time range (or hold Shift while dragging)',
      onclick: () => this.input.setAreaMode(!this.input.areaMode),
    }, 'Select area');
    const help = el('button', { className: 'help', title: 'Keyboard help (?)', onclick: () => this.input.toggleHelp() },
      'W/S zoom · A/D pan · Shift+drag select · F fit · / search · M mark · ? help');
    this.toolbar = el('header', { className: 'topbar' },
      el('a', { className: 'brand', href: '/', title: 'All traces' }, '← Traces'),
      this.titleEl,
      this.search.box(),
      this.areaToggle,
      this.notes.button,
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
    this.body = el('div', { className: 'tl-body' }, this.scroller, this.canvas, this.pinnedLabels, this.tooltip, this.notes.root);
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
    // only damage (pages.js, isDamage); while a trace is recorded (or
    // ingested) its last record may still be arriving, not cut: that
    // counts once it is whole
    const growing = t.status === 'live' || t.status === 'ingesting';
    for (const [k, v] of Object.entries(diag)) {
      if (!isDamage(k) || (growing && k === 'truncated_bytes')) continue;
      if (Number(v) > 0) parts.push(`${k.replace(/_/g, ' ')}: ${fmtCount(v)}`);
    }
    for (const p of t.providers || []) {
      if (Number(p.buffer_overflows) > 0 && !diag.buffer_overflows) parts.push(`provider ${p.name}: ${p.buffer_overflows} buffer overflows`);
    }
    // a big upload growing while it is ingested (docs/API.md "A trace while its bytes arrive")
    const preview = t.status === 'ingesting' && t.preview;
    if (parts.length === 0 && !preview) {
      this.banner.classList.add('hidden'); // a growing upload's, once the trace is whole
      return;
    }
    const p = t.progress || {};
    const pct = p.bytes_total ? Math.floor((100 * p.bytes_done) / p.bytes_total) : 0;
    const held = preview ? `${(Number(t.preview.visible_bytes) / 1048576).toFixed(1)} MB` : '';
    clear(this.banner);
    this.banner.append(el('strong', null,
      preview ? `This trace is being ingested (${pct}%): the view holds its first ${held}, from its start. `
        : 'This trace has damaged or dropped data. '),
    el('span', null, preview ? 'It grows as ingest goes on; slices still open show as open' + (parts.length ? ': ' : '.')
      : 'What is shown may be incomplete: '),
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
    if (rows.length === 0) {
      const q = this.trackFilter.value.trim();
      this.labels.append(el('div', { className: 'tracks-empty' },
        q ? `No track matches "${q}".` : 'This trace has no tracks: it holds no events.'));
    }
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

  // Folds a tall slice track to its summary row (on) or shows every depth.
  setFolded(t, on) {
    t.folded = on;
    this.relayout();
    this.invalidate();
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
    const kids = [el('span', { className: 'name' }, it.title), el('span', { className: 'sub' }, it.subtitle + this.foldNote(it)),
      el('button', {
        className: 'pin' + (it.pin ? ' pinned' : ''), title: it.pin ? 'Unpin this track' : 'Pin this track to the top',
        onclick: (e) => { e.stopPropagation(); this.togglePin(it); },
      }, it.pin ? 'unpin' : 'pin')];
    if (foldable(it)) {
      kids.unshift(el('button', {
        className: 'fold', title: it.folded ? 'Show every row of this track' : 'Fold this track to one summary row',
        'aria-expanded': String(!it.folded),
        onclick: (e) => { e.stopPropagation(); this.setFolded(it, !it.folded); },
      }, it.folded ? '▸' : '▾'));
    }
    const area = this.selection.area;
    const inArea = area && area.has(it);
    return el('div', {
      className: 'label track-label kind-' + it.kind + (inArea ? ' in-area' : ''), style, title: `${it.title} ${it.subtitle}`,
      dataset: { key: it.key, trackId: it.trackId ?? '' },
      onclick: () => this.selection.toggleAreaTrack(it),
    }, ...kids);
  }

  // How many rows a tall track holds, on its label: " · 85 lanes".
  foldNote(it) {
    if (!foldable(it)) return '';
    const n = depthCount(it);
    return `${it.subtitle ? ' · ' : ''}${n} ${it.kind === 'async' ? 'lanes' : 'depths'}`;
  }

  resize() {
    const dpr = window.devicePixelRatio || 1;
    const bodyRect = this.body.getBoundingClientRect();
    // the notes panel, when open, takes the right of the tracks: nothing is drawn under it
    const side = this.notes.isOpen ? this.notes.root.offsetWidth : 0;
    this.scroller.style.right = side + 'px';
    const sbw = this.scroller.offsetWidth - this.scroller.clientWidth;
    const W = Math.max(50, Math.floor(bodyRect.width - LABEL_W - sbw - side));
    const H = Math.max(50, Math.floor(bodyRect.height));
    this.W = W;
    this.H = H;
    this.view.W = W;
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

  // After every move of the view: follow mode, URL, redraw, hover.
  viewMoved() {
    if (this.live) this.live.viewMoved();
    this.scheduleUrl();
    this.invalidate();
    this.input.refreshHover();
  }

  // Every trace opens on its whole range, as Perfetto does. XRay logs
  // often hold one long call around a burst of short ones in a sliver of
  // the trace: the overview's label then says where, and shows it in one
  // click (F brings the whole trace back).
  async offerActivity() {
    const view = this.view;
    const r = await activityRange(this.base, view.start, view.end);
    if ((r.end - r.start) * 4 > view.end - view.start) return;
    this.overviewLabel.append(el('button', {
      className: 'zoom-activity link-button',
      title: `Most calls start between ${fmtTime(r.start - view.start)} and ${fmtTime(r.end - view.start)}: show that (F: the whole trace)`,
      onclick: () => view.fitRange(r.start, r.end),
    }, `zoom to the activity (${fmtDur(r.end - r.start)})`));
  }

  // ---- URL -------------------------------------------------------------------

  restoreFromUrl() {
    const p = this.params;
    const s = Number(p.get('start'));
    const e = Number(p.get('end'));
    const windowed = p.has('start') && p.has('end') && Number.isFinite(s) && Number.isFinite(e) && e > s;
    if (windowed) this.view.set(s, e);
    else this.view.fitAll();
    this.marks.fromUrl(p);
    const area = AreaSelection.fromUrl(p, this.sliceTrackIds());
    if (area) this.selection.setArea(area.start, area.end, area.ids());
    const slice = p.get('slice');
    // a link without a window (a trend's point, a query's slice id) shows the slice
    if (slice && /^\d+$/.test(slice)) this.selection.selectSlice(Number(slice), { fit: !windowed, scroll: true });
    const note = p.get('note');
    if (note && /^\d+$/.test(note)) this.notes.pendingId = note;
    else if (p.get('notes') === '1') this.notes.open(); // from the library's count
  }

  urlFor() {
    const q = new URLSearchParams();
    q.set('trace', this.traceId);
    q.set('start', String(Math.round(this.view.vs)));
    q.set('end', String(Math.round(this.view.ve)));
    const sel = this.selection.current;
    if (sel && sel.kind === 'slice') q.set('slice', String(sel.id));
    if (this.selection.area) this.selection.area.toUrl(q);
    this.marks.toUrl(q);
    keepDebug(this.params, q);
    return '/?' + q.toString();
  }

  scheduleUrl() {
    if (this.urlTimer) return;
    this.urlTimer = setTimeout(() => {
      this.urlTimer = 0;
      history.replaceState(null, '', this.urlFor());
    }, 200);
  }

  // ---- where the selection is -------------------------------------------------

  // Moves the view (and vertical scroll) so that the slice is visible.
  reveal(info) {
    this.view.show(info.ts, sliceEnd(info, this.view.end));
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

  // The selected slice's row (or the selected item's track) is scrolled
  // back into view when it is under the foot of the timeline: the details
  // drawer grows over it when it gets something to show.
  keepSelectionVisible() {
    const c = this.selection.current;
    if (!c) return;
    const t = this.byTrackId.get(Number(c.kind === 'slice' ? c.info && c.info.track_id : c.track && c.track.trackId));
    if (!t || !t.visible || t.pinned || t.group.collapsed) return;
    const H = Math.floor(this.body.getBoundingClientRect().height);
    const y0 = c.kind === 'slice' ? t.y + TRACK_PAD + Math.min(c.info.depth ?? 0, visibleRows(t) - 1) * ROW_H : t.y;
    const y1 = c.kind === 'slice' ? y0 + ROW_H : t.y + Math.min(t.h, 120);
    const top = this.scroller.scrollTop;
    if (y0 >= top + this.pinnedHeight && y1 <= top + H) return;
    this.scroller.scrollTop = Math.max(0, y1 + ROW_H - H);
    this.invalidate();
  }

  // Every slice track's id.
  sliceTrackIds() {
    return [...this.byTrackId.values()].filter(isSliceTrack).map((t) => Number(t.trackId));
  }

  // The labels of the area's tracks are highlighted.
  markAreaLabels() {
    for (const lab of [...this.labels.children, ...this.pinnedLabels.children]) {
      const t = lab.dataset.trackId ? this.byTrackId.get(Number(lab.dataset.trackId)) : null;
      lab.classList.toggle('in-area', !!(t && this.selection.area && this.selection.area.has(t)));
    }
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

  // About one bucket per two pixels. Buckets of 2^L ns from a multiple of
  // 2^L (alignedWindow, as the minimap's), so that the server reads no
  // slice row (docs/API.md): buckets cut at the view's own edges cost it a
  // row read per level-of-detail group across an edge, 0.47 s a request on
  // a trace of 500 threads. A view of under 1024 ns a bucket keeps the
  // view's edges (few rows lie in it).
  summaryWindow() {
    const start = Math.floor(this.view.vs);
    const end = Math.ceil(this.view.ve);
    const most = Math.max(1, Math.min(4096, Math.round(this.W / 2)));
    if ((end - start + 1) / most < 1024) {
      const query = `start=${start}&end=${end}&buckets=${most}`;
      return { start, end, buckets: most, query, key: query };
    }
    const win = alignedWindow(start, end, most);
    const query = `start=${win.start}&end=${win.end}&buckets=${win.buckets}`;
    return { start: win.first, end: win.first + win.buckets * win.width - 1, buckets: win.buckets, query, key: query };
  }

  requestSummary(want) {
    if (this.summaryWant && this.summaryWant.key === want.key) return;
    this.summaryWant = want;
    clearTimeout(this.summaryTimer);
    this.summaryTimer = setTimeout(async () => {
      let r;
      try {
        r = await this.overviewOf(want.query);
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

  // GET /overview?query: one request for every caller asking the same while
  // it is in flight (the minimap and the collapsed processes' summaries ask
  // for the same buckets while the view holds the whole trace).
  overviewOf(query) {
    if (this.overviewFetch && this.overviewFetch.query === query) return this.overviewFetch.promise;
    const f = { query, promise: api(`${this.base}/overview?${query}`, { exact: true }) };
    const done = () => { if (this.overviewFetch === f) this.overviewFetch = null; };
    this.overviewFetch = f;
    f.promise.then(done, done);
    return f.promise;
  }

  async loadOverview() {
    // The slice density of each process over the trace, counted by the
    // server from its level of detail (GET /overview: no scan of slices).
    // The buckets are 2^L ns starting at a multiple of 2^L, so that the
    // server's level-of-detail groups each fall in one bucket and no row
    // is read (docs/API.md); the window is the trace widened to them.
    const win = alignedWindow(this.view.start, this.view.end, OVERVIEW_MAX_BUCKETS);
    let r;
    try {
      r = await this.overviewOf(`start=${win.start}&end=${win.end}&buckets=${win.buckets}`);
    } catch {
      this.overview = { rows: [], buckets: win.buckets, start: win.first, width: win.width, max: 1 };
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
    this.overview = { rows, buckets: win.buckets, start: win.first, width: win.width, max };
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
    if (this.input.held.size) this.input.animate(ts);
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
    if (this.input.held.size) this.invalidate();
  }

  draw() {
    if (!this.ready) return;
    const ctx = this.ctx;
    const dpr = this.dpr;
    const W = this.W;
    const H = this.H;
    const view = this.view;
    const v = view.mapping();
    const res = view.resolution();
    const top = this.scroller.scrollTop;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, W, H);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    drawGrid(ctx, v, view.start, H);
    // matches of the search are outlined where slices are drawn
    this.searchMarks = this.search.marksForDraw();
    this.drawnLabels = new Map(); // track id -> the names written on it (for tests)
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
    const xs = v.x(view.start);
    const xe = v.x(view.end);
    if (xs > 0) ctx.fillRect(0, 0, xs, H);
    if (xe < W) ctx.fillRect(xe, 0, W - xe, H);
    this.marks.draw(ctx, v, W, H);
    this.notes.drawBand(ctx, v, W, H);
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
    this.store.request(it, this.view.vs, this.view.ve, res);
    const c = this.store.get(it);
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, y, W, r.h - 1);
    ctx.clip();
    if (it.kind === 'thread' || it.kind === 'async' || it.kind === 'debug') {
      const labels = drawSlices(ctx, v, it, c, y, this.searchMarks);
      if (labels.length && it.trackId != null) this.drawnLabels.set(it.trackId, labels);
    }
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
    // the scale's top, on a light backing: a dense plot runs under it
    const top = fmtValue(it.max);
    ctx.fillStyle = 'rgba(255,255,255,0.85)';
    ctx.fillRect(1, y + 2, ctx.measureText(top).width + 6, 14);
    ctx.fillStyle = '#555';
    ctx.fillText(top, 4, y + 9);
    const { hover, mouse } = this.input;
    if (hover && hover.track === it && hover.point) {
      const p = hover.point;
      const s = fmtValue(Number(p.value));
      ctx.fillStyle = 'rgba(255,255,255,0.85)';
      ctx.fillRect(mouse.x + 6, y + 2, ctx.measureText(s).width + 8, 16);
      ctx.fillStyle = '#111';
      ctx.fillText(s, mouse.x + 10, y + 10);
    }
  }

  // Where a slice (from details or search) is on the canvas, or null if
  // its track is not laid out. {x, y, w, h} in canvas css px.
  sliceBox(info, v, top) {
    const t = this.byTrackId.get(Number(info.track_id));
    if (!t || !t.visible) return null;
    const row = sliceRow(t, info.depth ?? 0);
    if (row >= visibleRows(t)) return null;
    const x0 = v.x(info.ts);
    const x1 = v.x(sliceEnd(info, this.view.end));
    return { x: x0, y: this.rowTop(t) + TRACK_PAD + row * ROW_H, w: Math.max(x1 - x0, 1), h: ROW_H - 2 };
  }

  drawSelection(ctx, v, top) {
    const W = this.W;
    const H = this.H;
    const area = this.selection.area;
    if (area) {
      const x0 = v.x(area.start);
      const x1 = v.x(area.end);
      ctx.fillStyle = 'rgba(66,133,244,0.07)';
      ctx.fillRect(x0, 0, x1 - x0, H);
      ctx.fillStyle = 'rgba(66,133,244,0.22)';
      for (const r of this.rows) {
        const y = this.rowTop(r);
        if (r.item.kind !== 'group' && area.has(r.item) && y + r.h > 0 && y < H) ctx.fillRect(x0, y, x1 - x0, r.h - 1);
      }
      ctx.fillStyle = 'rgba(26,115,232,0.9)';
      ctx.fillRect(Math.round(x0), 0, 1, H);
      ctx.fillRect(Math.round(x1), 0, 1, H);
    }
    const hv = this.input.hover;
    const sel = this.selection.current;
    if (hv && hv.info && !(sel && sel.id === hv.info.id)) {
      const b = this.sliceBox(hv.info, v, top);
      if (b) {
        ctx.strokeStyle = 'rgba(0,0,0,0.55)';
        ctx.lineWidth = 1;
        ctx.strokeRect(b.x + 0.5, b.y + 0.5, b.w - 1, b.h - 1);
      }
    }
    if (sel && sel.kind === 'slice' && sel.info) {
      const b = this.sliceBox(sel.info, v, top);
      if (b) {
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 2;
        ctx.strokeRect(b.x, b.y, Math.max(b.w, 2), b.h);
        ctx.lineWidth = 1;
      }
      for (const f of this.selection.flowEnds) {
        if (!f.from || !f.to) continue;
        const a = this.sliceBox(f.from, v, top);
        const z = this.sliceBox(f.to, v, top);
        if (!a || !z) continue;
        // The flow's own event times are not in the API: the arrow leaves
        // the source slice at its end (or where the target starts, if that
        // is earlier) and enters the target slice at its start.
        const fromEnd = sliceEnd(f.from, this.view.end);
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
      const x1 = it.dur > 0 ? v.x(it.ts + it.dur) : it.dur < 0 ? v.x(this.view.end) : x0 + 2;
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
    const view = this.view;
    a.font = FONT;
    const spans = this.spanLabelBoxes(a, v);
    this.tickTexts = drawAxis(a, v, view.start, AXIS_H, this.selection.area, spans);
    this.drawSpanLabels(a, spans);
    this.notes.drawFlags(a, v, AXIS_H);
    const o = this.overviewCanvas.getContext('2d', { alpha: false });
    o.setTransform(dpr, 0, 0, dpr, 0, 0);
    const ticks = drawOverview(o, this.W, OVERVIEW_H, this.overview, view.start, view.end, view.vs, view.ve,
      this.search.histogram());
    if (this.searchMarks) this.searchMarks.ticks = ticks;
    const span = `${fmtDur(view.ve - view.vs)} from ${fmtTime(view.vs - view.start)}`;
    if (this.spanLabel.textContent !== span) {
      this.spanLabel.textContent = span;
      this.spanLabel.title = `${fmtTime(view.vs - view.start)} – ${fmtTime(view.ve - view.start)} from the trace start`;
    }
  }

  // How long each mark and the area (while dragged too) are: a label on
  // the axis over the middle of the span, as {x, w, text, color} (ctx
  // measures in the axis font).
  spanLabelBoxes(ctx, v) {
    const spans = this.marks.spans();
    const area = this.selection.area;
    if (area) spans.push({ start: area.start, end: area.end, color: '#1a73e8' });
    const boxes = [];
    for (const sp of spans) {
      const x0 = Math.max(v.x(sp.start), 0);
      const x1 = Math.min(v.x(sp.end), this.W);
      if (x1 < 0 || x0 > this.W) continue;
      const text = fmtDur(sp.end - sp.start);
      const w = ctx.measureText(text).width + 10;
      const x = Math.min(Math.max((x0 + x1) / 2 - w / 2, 0), this.W - w);
      boxes.push({ x, w, text, color: sp.color });
    }
    return boxes;
  }

  drawSpanLabels(ctx, boxes) {
    this.spanBoxes = boxes;
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    for (const b of boxes) {
      ctx.fillStyle = b.color;
      ctx.fillRect(b.x, 1, b.w, 14);
      ctx.fillStyle = '#fff';
      ctx.fillText(b.text, b.x + 5, 8.5);
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
    const v = this.view.mapping();
    const c = this.store.get(it);
    if (it.kind === 'debug') return debugHit(v, it, x, y - rowY);
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
