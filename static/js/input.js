// The timeline's input: wheel, mouse (pan, area drag, click to select,
// hover), keyboard (W/S/A/D held, F, /, M, Esc, ?), the overview and the
// axis, and the keyboard help. InputController holds what input is under
// way (keys held, the mouse, a drag, the hover) and turns it into calls
// on the objects it was given: the view, the selection, the search, the
// marks, and the page for what is drawn where (hit testing, layout).

import { el, clear } from './dom.js';
import { fmtCount, fmtDur, fmtValue } from './format.js';
import { MIN_SPAN, stateWords } from './render.js';
import { AreaSelection, sliceEnd } from './selection.js';

const KEY_ZOOM_PER_S = 2.8;     // e-folds per second while W/S is held
const KEY_PAN_PER_S = 0.9;      // views per second while A/D is held

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

export class InputController {
  // page: the timeline page (its canvases, body, scroller, rows, hitTest,
  // redraws); the others are the page's own.
  constructor(page, { view, selection, search, marks }) {
    this.page = page;
    this.view = view;
    this.selection = selection;
    this.search = search;
    this.marks = marks;
    this.held = new Set();   // keys held for continuous zoom/pan
    this.lastFrame = 0;      // the time of the last animated frame; 0: none yet
    this.mouse = null;       // {x, y} over the canvas
    this.drag = null;        // {x0, y0, vs, ve, moved, area, shift} while a button is down
    this.hover = null;       // what is under the mouse (a hitTest result), or null
    this.hoverTimer = 0;
    this.areaMode = false;   // a drag selects an area instead of panning
    this.helpEl = null;
  }

  bind() {
    const page = this.page;
    new ResizeObserver(() => page.resize()).observe(page.body);
    page.scroller.addEventListener('scroll', () => page.invalidate(), { passive: true });
    const cv = page.canvas;
    cv.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    cv.addEventListener('mousedown', (e) => this.onMouseDown(e));
    window.addEventListener('mousemove', (e) => this.onMouseMove(e));
    window.addEventListener('mouseup', (e) => this.onMouseUp(e));
    cv.addEventListener('mouseleave', () => {
      this.mouse = null;
      this.setHover(null);
    });
    document.addEventListener('keydown', (e) => this.onKeyDown(e));
    document.addEventListener('keyup', (e) => this.onKeyUp(e));
    window.addEventListener('blur', () => this.held.clear());
    this.search.bind();
    this.bindOverview();
    this.bindAxis();
  }

  canvasPoint(e) {
    const r = this.page.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  onWheel(e) {
    e.preventDefault();
    const p = this.canvasPoint(e);
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.page.H : 1;
    const dy = e.deltaY * unit;
    const dx = e.deltaX * unit;
    if (e.ctrlKey || e.metaKey) {
      this.view.zoomAt(Math.exp(Math.max(-2, Math.min(2, dy * 0.003))), p.x);
    } else if (e.shiftKey) {
      this.view.panBy(dy || dx);
    } else if (Math.abs(dx) > Math.abs(dy)) {
      this.view.panBy(dx);
    } else {
      this.page.scroller.scrollTop += dy;
    }
  }

  onMouseDown(e) {
    if (e.button !== 0) return;
    e.preventDefault();
    const p = this.canvasPoint(e);
    const area = e.shiftKey || this.areaMode;
    this.drag = { x0: p.x, y0: p.y, vs: this.view.vs, ve: this.view.ve, moved: false, area, shift: e.shiftKey };
    document.activeElement && document.activeElement.blur && document.activeElement !== document.body && document.activeElement.blur();
  }

  onMouseMove(e) {
    const page = this.page;
    const p = this.canvasPoint(e);
    const d = this.drag;
    if (d) {
      if (!d.moved && Math.abs(p.x - d.x0) + Math.abs(p.y - d.y0) > 3) d.moved = true;
      if (!d.moved) return;
      if (d.area) {
        const v = this.view.mapping();
        const top = page.scroller.scrollTop;
        this.selection.dragArea(new AreaSelection(v.t(d.x0), v.t(p.x), AreaSelection.tracksCrossed(page.rows, d.y0 + top, p.y + top)));
      } else {
        const dt = ((p.x - d.x0) / this.view.W) * (d.ve - d.vs);
        this.view.set(d.vs - dt, d.ve - dt);
        page.canvas.style.cursor = 'grabbing';
      }
      return;
    }
    // only what the mouse is on: not through something over the canvas
    // (the help, a menu), which would leave the tooltip up once the mouse
    // left it, since the canvas never saw the mouse come in or go
    if (e.target !== page.canvas || p.x < 0 || p.y < 0 || p.x > page.W || p.y > page.H) {
      if (this.mouse || this.hover) {
        this.mouse = null;
        this.setHover(null);
      }
      return;
    }
    this.mouse = p;
    this.setHover(page.hitTest(p.x, p.y), e);
  }

  onMouseUp(e) {
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    this.page.canvas.style.cursor = this.areaMode ? 'crosshair' : '';
    const p = this.canvasPoint(e);
    const sel = this.selection;
    if (d.moved) {
      if (d.area && sel.area) sel.setArea(sel.area.start, sel.area.end, sel.area.ids());
      return;
    }
    const h = this.page.hitTest(p.x, p.y);
    if (!h || h.kind === 'none' || h.kind === 'group') {
      if (sel.current || sel.area) sel.clear();
      return;
    }
    if ((h.kind === 'slice' || h.kind === 'sched' || h.kind === 'log') && h.item.merged) this.view.set(h.item.ts, h.item.ts + Math.max(h.item.dur, MIN_SPAN));
    else if (h.kind === 'slice') sel.selectSlice(h.item.id, { reveal: false });
    else sel.selectOther(h.kind, h.item, h.track);
  }

  setHover(h, e) {
    const page = this.page;
    const old = this.hover;
    this.hover = h && h.kind !== 'none' && h.kind !== 'group' ? h : null;
    const tip = page.tooltip;
    if (!this.hover) {
      tip.classList.add('hidden');
      if (old) page.invalidate();
      return;
    }
    const lines = hoverLines(this.hover, page.threadNames);
    clear(tip);
    for (const [i, l] of lines.entries()) tip.append(el('div', { className: i === 0 ? 'tip-title' : '' }, l));
    tip.classList.remove('hidden');
    if (e) {
      const br = page.body.getBoundingClientRect();
      let x = e.clientX - br.left + 14;
      const y = e.clientY - br.top + 14;
      if (x + 320 > br.width) x = Math.max(0, e.clientX - br.left - 330);
      tip.style.left = x + 'px';
      tip.style.top = Math.min(y, br.height - 60) + 'px';
    }
    page.invalidate();
  }

  // The view moved under a still mouse: the tooltip tells what is under it
  // now (after this frame's data, when it arrives).
  refreshHover() {
    if (!this.mouse || this.drag || this.hoverTimer) return;
    this.hoverTimer = requestAnimationFrame(() => {
      this.hoverTimer = 0;
      if (this.mouse && !this.drag) this.setHover(this.page.hitTest(this.mouse.x, this.mouse.y));
    });
  }

  onKeyDown(e) {
    const tgt = e.target;
    const typing = tgt && (tgt.tagName === 'INPUT' || tgt.tagName === 'TEXTAREA' || tgt.isContentEditable);
    if (typing) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.toLowerCase();
    if (k === '/') {
      e.preventDefault();
      this.search.focus();
      return;
    }
    if (k === 'w' || k === 's' || k === 'a' || k === 'd') {
      e.preventDefault();
      if (!this.held.has(k)) {
        if (this.held.size === 0) this.lastFrame = 0;
        this.held.add(k);
        this.page.invalidate();
      }
      return;
    }
    if (k === 'f') {
      this.fitSelection();
    } else if (k === 'escape' && this.helpEl) {
      this.toggleHelp();
    } else if (k === 'escape') {
      this.selection.clear();
    } else if (k === 'm') {
      this.markSelection();
    } else if (e.key === '?') {
      this.toggleHelp();
    }
  }

  onKeyUp(e) {
    this.held.delete(e.key.toLowerCase());
  }

  // W/S/A/D held: zooms and pans by how long the last frame took.
  animate(ts) {
    const dt = this.lastFrame ? Math.min(ts - this.lastFrame, 100) / 1000 : 1 / 60;
    this.lastFrame = ts;
    const x = this.mouse ? this.mouse.x : this.view.W / 2;
    let zoom = 0;
    let pan = 0;
    if (this.held.has('w')) zoom -= 1;
    if (this.held.has('s')) zoom += 1;
    if (this.held.has('a')) pan -= 1;
    if (this.held.has('d')) pan += 1;
    if (zoom) this.view.zoomAt(Math.exp(zoom * KEY_ZOOM_PER_S * dt), x);
    if (pan) this.view.panBy(pan * KEY_PAN_PER_S * dt * this.view.W);
  }

  // F: the area, the slice, the item picked, or the whole trace.
  fitSelection() {
    const view = this.view;
    const area = this.selection.area;
    const sel = this.selection.current;
    if (area) view.fitRange(area.start, area.end);
    else if (sel && sel.kind === 'slice' && sel.info) view.fitRange(sel.info.ts, sliceEnd(sel.info, view.end));
    else if (sel && sel.item && sel.item.ts !== undefined) view.fitRange(sel.item.ts, sel.item.dur > 0 ? sel.item.ts + sel.item.dur : sel.item.ts + 1000);
    else view.fitAll();
  }

  // M: marks the selected slice's span (or the area's, or a CPU run's);
  // marking the same span again removes the mark.
  markSelection() {
    const span = this.selection.span(this.view.end);
    if (!span) return;
    this.marks.toggle(span);
    this.page.scheduleUrl();
    this.page.invalidate();
  }

  setAreaMode(on) {
    this.areaMode = on;
    this.page.areaToggle.classList.toggle('active', on);
    this.page.canvas.style.cursor = on ? 'crosshair' : '';
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

  bindOverview() {
    const view = this.view;
    const oc = this.page.overviewCanvas;
    const tOf = (e) => {
      const r = oc.getBoundingClientRect();
      return view.start + ((e.clientX - r.left) / r.width) * (view.end - view.start);
    };
    oc.addEventListener('mousedown', (e) => {
      e.preventDefault();
      const t0 = tOf(e);
      const inside = t0 >= view.vs && t0 <= view.ve;
      const start = { t0, vs: view.vs, ve: view.ve, moved: false };
      const move = (ev) => {
        const t = tOf(ev);
        start.moved = true;
        if (inside) view.set(start.vs + t - t0, start.ve + t - t0);
        else if (Math.abs(t - t0) > 0) view.set(Math.min(t, t0), Math.max(t, t0));
      };
      const up = (ev) => {
        window.removeEventListener('mousemove', move);
        window.removeEventListener('mouseup', up);
        if (!start.moved) {
          const t = tOf(ev);
          const span = view.ve - view.vs;
          view.set(t - span / 2, t + span / 2);
        }
      };
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
  }

  bindAxis() {
    // Dragging on the axis selects an area, as in Perfetto.
    const ac = this.page.axisCanvas;
    const sel = this.selection;
    this.page.notes.bindAxis(ac);
    ac.addEventListener('mousedown', (e) => {
      e.preventDefault();
      const r = ac.getBoundingClientRect();
      // a note's flag: a click goes to the note
      const note = this.page.notes.flagAt(e.clientX - r.left);
      if (note) {
        this.page.notes.open();
        this.page.notes.go(note);
        return;
      }
      const v = this.view.mapping();
      const t0 = v.t(e.clientX - r.left);
      let moved = false;
      const move = (ev) => {
        moved = true;
        const t = v.t(ev.clientX - r.left);
        sel.dragArea(new AreaSelection(t, t0, this.page.sliceTrackIds()));
      };
      const up = () => {
        window.removeEventListener('mousemove', move);
        window.removeEventListener('mouseup', up);
        if (moved && sel.area) sel.setArea(sel.area.start, sel.area.end, sel.area.ids());
      };
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
  }
}

function hoverLines(h, threadNames) {
  const it = h.item;
  switch (h.kind) {
    case 'slice': {
      if (it.merged) {
        return [`${fmtCount(it.merged)} slices`, `summarised over ${fmtDur(it.dur)} (each shorter than a pixel)`,
          `longest: ${it.name}`, 'click or zoom in to see them'];
      }
      return [it.name, `${fmtDur(it.dur)}${it.category ? ' · ' + it.category : ''}`];
    }
    case 'sched': {
      if (it.merged) return [`${fmtCount(it.merged)} CPU runs`, `summarised over ${fmtDur(it.dur)} (each shorter than a pixel)`, 'zoom in to see them'];
      const name = threadNames.get(`${it.pid}/${it.tid}`) || 'thread';
      return [`${name} ${it.tid}`, `pid ${it.pid} · ${fmtDur(it.dur)}${it.end_state ? ' · then ' + it.end_state : ''}`];
    }
    case 'log': {
      if (it.merged) return [`${fmtCount(it.merged)} log messages`, `over ${fmtDur(it.dur)}, the first: ${it.message}`, 'click or zoom in to read them'];
      const name = threadNames.get(`${it.pid}/${it.tid}`);
      return [it.message, `${name ? `${name} ${it.tid}` : `tid ${it.tid}`} · pid ${it.pid}`];
    }
    case 'state':
      return [stateWords(it), `${it.dur < 0 ? 'to the end of the trace' : fmtDur(it.dur)} · ${h.track.title}`];
    case 'counter':
      return [h.track.title, fmtValue(Number(it.value)) + (it.merged ? ` (min ${fmtValue(Number(it.min))}, max ${fmtValue(Number(it.max))} over ${it.merged} points)` : '')];
    default:
      return [];
  }
}
