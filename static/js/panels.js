// The bottom panel of the timeline: details of the selected slice (args,
// parent, flows), of a CPU run, log message or counter value, and the
// figures of a selected area (area.js). Text only: every value from the trace goes
// through textContent.

import { api } from './api.js';
import { el, clear } from './dom.js';
import { colorFor, fmtDur, fmtTime, fmtValue } from './format.js';
import { AreaPanel } from './area.js';
import { stateWords } from './render.js';

const DRAWER_KEY = 'trace-viewer.drawer';
const DRAWER_MIN = 80;      // px: the smallest drawer that is not hidden
const TIMELINE_MIN = 120;   // px the timeline keeps when the drawer is dragged up

// The drawer's size as kept in localStorage: {height, mode: normal|max|hidden}.
// With nothing to show, a normal drawer is only as tall as its hint line:
// it takes its height when something is selected.
function loadDrawer() {
  try {
    const d = JSON.parse(localStorage.getItem(DRAWER_KEY) || '{}');
    return {
      height: Number.isFinite(d.height) && d.height >= DRAWER_MIN ? d.height : 250,
      mode: ['normal', 'max', 'hidden'].includes(d.mode) ? d.mode : 'normal',
    };
  } catch {
    return { height: 250, mode: 'normal' };
  }
}

export class DetailsPanel {
  constructor(page) {
    this.page = page;
    this.drawer = loadDrawer();
    this.heading = el('span', { className: 'panel-heading' }, 'Details');
    this.hideBtn = el('button', { className: 'panel-hide', onclick: () => this.setMode(this.drawer.mode === 'hidden' ? 'normal' : 'hidden') });
    this.maxBtn = el('button', { className: 'panel-max', onclick: () => this.setMode(this.drawer.mode === 'max' ? 'normal' : 'max') });
    this.title = el('div', { className: 'panel-title' }, this.heading,
      el('span', { className: 'panel-buttons' }, this.maxBtn, this.hideBtn));
    this.grip = el('div', { className: 'panel-resize', title: 'Drag to resize the details' });
    this.content = el('div', { className: 'panel-content' });
    this.root = el('section', { className: 'panel', 'aria-label': 'Details' }, this.grip, this.title, this.content);
    this.area = new AreaPanel(page, this);
    this.empty = true;
    this.bindGrip();
    this.showEmpty();
    this.applyDrawer();
  }

  // ---- the drawer: dragged by its top edge, maximised, hidden ---------------

  bindGrip() {
    let drag = null;
    this.grip.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      e.preventDefault();
      drag = { y: e.clientY, h: this.root.getBoundingClientRect().height };
      document.body.classList.add('resizing-drawer');
    });
    window.addEventListener('mousemove', (e) => {
      if (!drag) return;
      const max = this.maxHeight();
      this.drawer.height = Math.round(Math.min(Math.max(drag.h + drag.y - e.clientY, DRAWER_MIN), max));
      this.drawer.mode = 'normal';
      this.empty = false; /* sized by hand: shown at that size, hint or not */
      this.applyDrawer();
    });
    window.addEventListener('mouseup', () => {
      if (!drag) return;
      drag = null;
      document.body.classList.remove('resizing-drawer');
      this.saveDrawer();
    });
    window.addEventListener('resize', () => this.applyDrawer());
    this.title.addEventListener('dblclick', (e) => {
      if (e.target.closest('button')) return;
      this.setMode(this.drawer.mode === 'max' ? 'normal' : 'max');
    });
  }

  // The tallest drawer: the page below the top bar less the timeline's minimum.
  maxHeight() {
    const top = this.root.parentElement ? this.root.parentElement.getBoundingClientRect().top : 0;
    return Math.max(DRAWER_MIN, window.innerHeight - top - TIMELINE_MIN - 60);
  }

  setMode(mode) {
    this.drawer.mode = mode;
    this.applyDrawer();
    this.saveDrawer();
  }

  applyDrawer() {
    const { mode, height } = this.drawer;
    const compact = this.empty && mode === 'normal';
    this.root.classList.toggle('hidden-drawer', mode === 'hidden');
    this.root.classList.toggle('max-drawer', mode === 'max');
    this.root.classList.toggle('empty-drawer', compact);
    this.root.style.height = mode === 'hidden' || compact ? '' : (mode === 'max' ? this.maxHeight() : Math.min(height, this.maxHeight())) + 'px';
    this.hideBtn.textContent = mode === 'hidden' ? '▴' : '▾';
    this.hideBtn.title = mode === 'hidden' ? 'Show the details' : 'Hide the details';
    this.maxBtn.textContent = mode === 'max' ? '❐' : '□';
    this.maxBtn.title = mode === 'max' ? 'Back to its size' : 'Maximise the details (or double-click the title)';
  }

  saveDrawer() {
    try {
      localStorage.setItem(DRAWER_KEY, JSON.stringify(this.drawer));
    } catch {
      /* private mode: the size lasts for this page */
    }
  }

  set(title, ...nodes) {
    this.fill(false, title, nodes);
  }

  // The drawer's content; empty: only the hint, and the drawer that small.
  fill(empty, title, nodes) {
    if (title !== 'Area') this.area.cancel();
    this.heading.textContent = title;
    clear(this.content);
    this.content.append(...nodes);
    if (empty !== this.empty) {
      this.empty = empty;
      this.applyDrawer();
    }
  }

  // Above a slice picked from the area's list: the way back to the area.
  backToArea(area) {
    this.content.prepend(el('div', { className: 'back-to-area' },
      this.link('← the area\'s figures', () => this.showArea(area), 'area-back')));
  }

  showEmpty() {
    this.fill(true, 'Details', [el('div', { className: 'panel-empty' },
      'Click a slice to see its details. Shift+drag (or "Select area") selects a time range for statistics.')]);
  }

  showLoading(what) {
    this.set('Details', el('div', { className: 'panel-empty' }, 'Loading ' + what + '…'));
  }

  showError(msg) {
    this.set('Details', el('div', { className: 'panel-error' }, msg));
  }

  link(text, onclick, cls) {
    return el('button', { className: 'link' + (cls ? ' ' + cls : ''), onclick }, text);
  }

  showSlice(info) {
    const page = this.page;
    const origin = page.view.start;
    const track = page.byTrackId.get(Number(info.track_id));
    const rows = [];
    const row = (k, ...v) => rows.push(el('tr', null, el('th', null, k), el('td', null, ...v)));
    const swatch = el('span', { className: 'swatch', style: { background: colorFor(info.name).fill } });
    row('Name', swatch, el('span', { className: 'slice-name' }, info.name));
    row('Category', info.category || '—');
    row('Start', fmtTime(info.ts - origin), el('span', { className: 'raw' }, ` (${info.ts} ns)`));
    row('Duration', fmtDur(info.dur), info.dur >= 0 ? el('span', { className: 'raw' }, ` (${info.dur} ns)`) : '');
    if (info.track_kind === 'async') {
      // "AsyncLoad (async track, category net)": the category named as such,
      // never "(async, async)" when the category is the word itself
      const cat = track && track.subtitle ? `, category ${track.subtitle}` : '';
      row('Track', track ? `${track.title} (async track${cat})` : `async track ${info.track_id}`);
    } else {
      row('Thread', this.threadText(info.pid, info.tid, track));
    }
    if (track && track.cpu) {
      // XRay: the CPU the call started on
      const cell = el('span', { className: 'cpu-of-call' }, track.cpu.constant !== null ? String(track.cpu.constant) : '…');
      row('CPU', cell);
      if (track.cpu.constant === null) this.fillCpu(cell, track.cpu.trackId, info.ts);
    }
    row('Process', this.processText(info.pid));
    row('Depth', String(info.depth ?? '—'));
    row('Slice id', String(info.id));
    if (info.parent_id !== null && info.parent_id !== undefined) {
      this.parentCell = el('span', null, this.link(`slice ${info.parent_id}`, () => page.selection.selectSlice(info.parent_id, { reveal: true }), 'parent-link'));
      row('Parent', this.parentCell);
      this.fillParent(info);
    } else {
      row('Parent', '— (top level)');
    }
    const args = el('table', { className: 'kv args' });
    const entries = Object.entries(info.args || {});
    if (entries.length === 0) args.append(el('tr', null, el('td', { className: 'muted' }, 'no arguments')));
    for (const [k, v] of entries) args.append(el('tr', null, el('th', null, k), el('td', null, fmtArg(v))));
    this.flowsBox = el('div', { className: 'flows' });
    const flows = info.flows || [];
    if (flows.length === 0) this.flowsBox.append(el('div', { className: 'muted' }, 'no flows'));
    else this.showFlowIds(flows, info.id);
    // a note on it; the same name in the other traces of the library (trends.js)
    const actions = el('div', { className: 'slice-actions' },
      el('button', { className: 'add-slice-note', title: 'Write a note on this slice, for everyone who opens the trace', onclick: () => page.notes.addForSlice(info) }, 'Add a note…'),
      el('a', { className: 'trend-link', href: '/?page=trends&name=' + encodeURIComponent(info.name), title: 'A chart of this name\'s durations across the traces of the library' }, 'this name across traces'));
    this.set('Slice', el('div', { className: 'panel-cols' },
      el('div', { className: 'col' }, el('table', { className: 'kv slice-info' }, ...rows), actions),
      el('div', { className: 'col' }, el('h3', null, 'Arguments'), args),
      el('div', { className: 'col' }, el('h3', null, `Flows (${flows.length})`), this.flowsBox)));
  }

  // The value of the thread's cpu counter at ts: the last point at or before it.
  async fillCpu(cell, trackId, ts) {
    try {
      const r = await api(`${this.page.base}/counters?track=${trackId}&start=${ts}&end=${ts}`, { exact: true });
      const pts = (r.points || []).filter((q) => q.ts <= ts);
      cell.textContent = pts.length ? String(pts[pts.length - 1].value) : '—';
    } catch {
      cell.textContent = '—';
    }
  }

  // An integer point's value in full (a count, a byte total), read exactly
  // (a uint64 counter is beyond a double's 2^53), next to its short form
  // when they differ. A fraction keeps its short form alone: its last
  // digits are rounding noise (0.3176000000000018).
  async fillCounterValue(cell, trackId, ts) {
    try {
      const r = await api(`${this.page.base}/counters?track=${trackId}&start=${ts}&end=${ts}`, { exact: true });
      const p = (r.points || []).find((q) => Number(q.ts) === ts);
      const full = p ? String(p.value) : '';
      if (/^-?\d+$/.test(full) && full !== fmtValue(Number(full))) cell.textContent = ` (${full})`;
    } catch {
      /* the short form stays */
    }
  }

  async fillParent(info) {
    const cell = this.parentCell;
    try {
      const p = await api(`${this.page.base}/slices/${info.parent_id}`, { exact: true });
      if (cell !== this.parentCell) return;
      clear(cell);
      cell.append(this.link(p.name, () => this.page.selection.selectSlice(info.parent_id, { reveal: true }), 'parent-link'),
        el('span', { className: 'raw' }, ` (${fmtDur(p.dur)})`));
    } catch {
      /* keep the id */
    }
  }

  showFlowIds(flows, selfId) {
    clear(this.flowsBox);
    for (const f of flows) {
      const out = f.from_slice === selfId;
      const other = out ? f.to_slice : f.from_slice;
      this.flowsBox.append(el('div', { className: 'flow' }, out ? 'to → ' : 'from ← ',
        this.link(`slice ${other}`, () => this.page.selection.selectSlice(other, { reveal: true }), 'flow-link')));
    }
  }

  // Called once both ends of every flow are known: names and threads.
  showFlowNames(ends, selfId) {
    if (!this.flowsBox || ends.length === 0) return;
    clear(this.flowsBox);
    for (const { flow, from, to } of ends) {
      const out = flow.from_slice === selfId;
      const other = out ? to : from;
      const otherId = out ? flow.to_slice : flow.from_slice;
      const track = other ? this.page.byTrackId.get(Number(other.track_id)) : null;
      const where = track ? ` on ${track.title}${track.group ? ' (' + track.group.title + ')' : ''}` : '';
      this.flowsBox.append(el('div', { className: 'flow' }, out ? 'to → ' : 'from ← ',
        this.link(other ? other.name : `slice ${otherId}`, () => this.page.selection.selectSlice(otherId, { reveal: true }), 'flow-link'),
        el('span', { className: 'raw' }, `${where}, flow ${flow.flow_id}`)));
    }
  }

  // "name tid", or "tid N" for a thread without a name (never the id twice).
  threadText(pid, tid, track) {
    if (tid === null || tid === undefined) return track ? track.title : '—';
    const name = this.page.threadNames.get(`${pid}/${tid}`);
    return name ? `${name} ${tid}` : `tid ${tid}`;
  }

  // "name pid", or "pid N" for a process without a name.
  processText(pid) {
    if (pid === null || pid === undefined) return '—';
    const name = this.page.processNames.get(String(pid));
    return name && name !== `pid ${pid}` ? `${name} ${pid}` : `pid ${pid}`;
  }

  showItem(kind, it, track) {
    const origin = this.page.view.start;
    const rows = [];
    const row = (k, v) => rows.push(el('tr', null, el('th', null, k), el('td', null, v)));
    if (kind === 'sched') {
      row('Thread', this.threadText(it.pid, it.tid));
      row('Process', this.processText(it.pid));
      row('CPU', String(it.cpu));
      row('Start', fmtTime(it.ts - origin));
      row('Duration', fmtDur(it.dur));
      row('Priority', String(it.priority));
      row('End state', it.end_state || '— (still running at the end of the trace)');
      this.set('CPU run', el('table', { className: 'kv' }, ...rows));
    } else if (kind === 'state') {
      row('State', stateWords(it));
      row('Start', fmtTime(it.ts - origin));
      row('Duration', it.dur < 0 ? 'to the end of the trace' : fmtDur(it.dur));
      row('Thread', this.threadText(track.pid, track.tid));
      row('Process', this.processText(track.pid));
      this.set('Thread state', el('table', { className: 'kv' }, ...rows));
    } else if (kind === 'log') {
      row('Time', fmtTime(it.ts - origin));
      row('Process', this.processText(it.pid));
      row('Thread', this.threadText(it.pid, it.tid));
      row('Message', el('span', { className: 'log-message' }, it.message));
      this.set('Log message', el('table', { className: 'kv' }, ...rows));
    } else if (kind === 'counter') {
      row('Counter', track.title);
      row('Time', fmtTime(it.ts - origin));
      const exact = el('span', { className: 'raw counter-exact' });
      row('Value', el('span', null, el('span', { className: 'counter-value' }, fmtValue(Number(it.value))), exact));
      if (!it.merged) this.fillCounterValue(exact, track.trackId, it.ts);
      if (it.merged) {
        row('Summarised', `${it.merged} points up to ${fmtTime(it.last_ts - origin)}`);
        row('Min / max', `${fmtValue(Number(it.min))} / ${fmtValue(Number(it.max))}`);
      }
      this.set('Counter', el('table', { className: 'kv' }, ...rows));
    }
  }

  showArea(area) {
    this.area.show(area);
  }
}

function fmtArg(v) {
  if (v === null) return 'null';
  if (typeof v === 'object') {
    if ('blob_bytes' in v) return `blob, ${v.blob_bytes} bytes`;
    return JSON.stringify(v);
  }
  return String(v);
}
