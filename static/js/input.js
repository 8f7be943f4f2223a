// The timeline's input: wheel, mouse (pan, area drag, click to select,
// hover), keyboard (W/S/A/D held, F, /, M, Esc, ?), the overview and the
// axis. These are methods of TimelinePage (mixed into its prototype), kept
// here so that timeline.js holds the view, the data and the drawing.

import { el, clear } from './dom.js';
import { fmtCount, fmtDur, fmtValue } from './format.js';
import { MIN_SPAN, makeView, stateWords } from './render.js';
import { AreaSelection } from './selection.js';

export const inputMethods = {
  bindInput() {
    new ResizeObserver(() => this.resize()).observe(this.body);
    this.scroller.addEventListener('scroll', () => this.invalidate(), { passive: true });
    const cv = this.canvas;
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
    this.searchInput.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        this.stepSearch(e.shiftKey ? -1 : 1);
      } else if (e.key === 'Escape') {
        this.searchInput.blur();
      }
    });
    this.searchInput.addEventListener('input', () => {
      if (this.searchInput.value.trim() === '' && this.search.q) this.clearSearch();
    });
    this.bindOverview();
    this.bindAxis();
  },

  canvasPoint(e) {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  },

  onWheel(e) {
    e.preventDefault();
    const p = this.canvasPoint(e);
    const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.H : 1;
    const dy = e.deltaY * unit;
    const dx = e.deltaX * unit;
    if (e.ctrlKey || e.metaKey) {
      this.zoomAt(Math.exp(Math.max(-2, Math.min(2, dy * 0.003))), p.x);
    } else if (e.shiftKey) {
      this.panBy(dy || dx);
    } else if (Math.abs(dx) > Math.abs(dy)) {
      this.panBy(dx);
    } else {
      this.scroller.scrollTop += dy;
    }
  },

  onMouseDown(e) {
    if (e.button !== 0) return;
    e.preventDefault();
    const p = this.canvasPoint(e);
    const area = e.shiftKey || this.areaMode;
    this.drag = { x0: p.x, y0: p.y, vs: this.vs, ve: this.ve, moved: false, area, shift: e.shiftKey };
    document.activeElement && document.activeElement.blur && document.activeElement !== document.body && document.activeElement.blur();
  },

  onMouseMove(e) {
    const p = this.canvasPoint(e);
    const d = this.drag;
    if (d) {
      if (!d.moved && Math.abs(p.x - d.x0) + Math.abs(p.y - d.y0) > 3) d.moved = true;
      if (!d.moved) return;
      if (d.area) {
        const v = makeView(this.vs, this.ve, this.W);
        const top = this.scroller.scrollTop;
        this.area = new AreaSelection(v.t(d.x0), v.t(p.x), AreaSelection.tracksCrossed(this.rows, d.y0 + top, p.y + top));
        this.selection = null;
        this.invalidate();
      } else {
        const dt = ((p.x - d.x0) / this.W) * (d.ve - d.vs);
        this.setView(d.vs - dt, d.ve - dt);
        this.canvas.style.cursor = 'grabbing';
      }
      return;
    }
    if (p.x < 0 || p.y < 0 || p.x > this.W || p.y > this.H) return;
    this.mouse = p;
    this.setHover(this.hitTest(p.x, p.y), e);
  },

  onMouseUp(e) {
    const d = this.drag;
    if (!d) return;
    this.drag = null;
    this.canvas.style.cursor = this.areaMode ? 'crosshair' : '';
    const p = this.canvasPoint(e);
    if (d.moved) {
      if (d.area && this.area) this.setArea(this.area.start, this.area.end, this.area.ids());
      return;
    }
    const h = this.hitTest(p.x, p.y);
    if (!h || h.kind === 'none' || h.kind === 'group') {
      if (this.selection || this.area) this.clearSelection();
      return;
    }
    if ((h.kind === 'slice' || h.kind === 'sched') && h.item.merged) this.setView(h.item.ts, h.item.ts + Math.max(h.item.dur, MIN_SPAN));
    else if (h.kind === 'slice') this.selectSlice(h.item.id, { reveal: false });
    else this.selectOther(h.kind, h.item, h.track);
  },

  setHover(h, e) {
    const old = this.hover;
    this.hover = h && h.kind !== 'none' && h.kind !== 'group' ? h : null;
    const tip = this.tooltip;
    if (!this.hover) {
      tip.classList.add('hidden');
      if (old) this.invalidate();
      return;
    }
    const lines = hoverLines(this.hover, this.threadNames);
    clear(tip);
    for (const [i, l] of lines.entries()) tip.append(el('div', { className: i === 0 ? 'tip-title' : '' }, l));
    tip.classList.remove('hidden');
    if (e) {
      const br = this.body.getBoundingClientRect();
      let x = e.clientX - br.left + 14;
      const y = e.clientY - br.top + 14;
      if (x + 320 > br.width) x = Math.max(0, e.clientX - br.left - 330);
      tip.style.left = x + 'px';
      tip.style.top = Math.min(y, br.height - 60) + 'px';
    }
    this.invalidate();
  },

  onKeyDown(e) {
    const tgt = e.target;
    const typing = tgt && (tgt.tagName === 'INPUT' || tgt.tagName === 'TEXTAREA' || tgt.isContentEditable);
    if (typing) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const k = e.key.toLowerCase();
    if (k === '/') {
      e.preventDefault();
      this.searchInput.focus();
      this.searchInput.select();
      return;
    }
    if (k === 'w' || k === 's' || k === 'a' || k === 'd') {
      e.preventDefault();
      if (!this.held.has(k)) {
        if (this.held.size === 0) this.lastFrame = 0;
        this.held.add(k);
        this.invalidate();
      }
      return;
    }
    if (k === 'f') {
      this.fitSelection();
    } else if (k === 'escape' && this.helpEl) {
      this.toggleHelp();
    } else if (k === 'escape') {
      this.clearSelection();
    } else if (k === 'm') {
      this.markSelection();
    } else if (e.key === '?') {
      this.toggleHelp();
    }
  },

  onKeyUp(e) {
    this.held.delete(e.key.toLowerCase());
  },

  bindOverview() {
    const oc = this.overviewCanvas;
    const tOf = (e) => {
      const r = oc.getBoundingClientRect();
      return this.traceStart + ((e.clientX - r.left) / r.width) * (this.traceEnd - this.traceStart);
    };
    oc.addEventListener('mousedown', (e) => {
      e.preventDefault();
      const t0 = tOf(e);
      const inside = t0 >= this.vs && t0 <= this.ve;
      const start = { t0, vs: this.vs, ve: this.ve, moved: false };
      const move = (ev) => {
        const t = tOf(ev);
        start.moved = true;
        if (inside) this.setView(start.vs + t - t0, start.ve + t - t0);
        else if (Math.abs(t - t0) > 0) this.setView(Math.min(t, t0), Math.max(t, t0));
      };
      const up = (ev) => {
        window.removeEventListener('mousemove', move);
        window.removeEventListener('mouseup', up);
        if (!start.moved) {
          const t = tOf(ev);
          const span = this.ve - this.vs;
          this.setView(t - span / 2, t + span / 2);
        }
      };
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
  },

  bindAxis() {
    // Dragging on the axis selects an area, as in Perfetto.
    const ac = this.axisCanvas;
    ac.addEventListener('mousedown', (e) => {
      e.preventDefault();
      const r = ac.getBoundingClientRect();
      const v = makeView(this.vs, this.ve, this.W);
      const t0 = v.t(e.clientX - r.left);
      let moved = false;
      const move = (ev) => {
        moved = true;
        const t = v.t(ev.clientX - r.left);
        this.area = new AreaSelection(t, t0, this.sliceTrackIds());
        this.selection = null;
        this.invalidate();
      };
      const up = () => {
        window.removeEventListener('mousemove', move);
        window.removeEventListener('mouseup', up);
        if (moved && this.area) this.setArea(this.area.start, this.area.end, this.area.ids());
      };
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
  },
};

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
    case 'log':
      return [it.message, `pid ${it.pid} tid ${it.tid}`];
    case 'state':
      return [stateWords(it), `${it.dur < 0 ? 'to the end of the trace' : fmtDur(it.dur)} · ${h.track.title}`];
    case 'counter':
      return [h.track.title, fmtValue(Number(it.value)) + (it.merged ? ` (min ${fmtValue(Number(it.min))}, max ${fmtValue(Number(it.max))} over ${it.merged} points)` : '')];
    default:
      return [];
  }
}
