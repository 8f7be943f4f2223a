// The flame graph (icicle) of an area selection, drawn from the server's
// /flame reply: the call stacks merged by name path, roots on top, each
// frame as wide as its time inside the range. Hover shows total and self;
// a click zooms into a frame (its ancestors stay above it, full width); a
// click on the top bar ("all") zooms back out.

import { el } from './dom.js';
import { colorFor, fmtCount, fmtDur } from './format.js';
import { FONT, fitText } from './render.js';

const ROW = 18;

export class FlameGraph {
  // nodes: the /flame reply's nodes (parents before children).
  // note: what the graph says besides its figures (a first, partial one
  // says that the whole one is coming).
  constructor(nodes, truncated, note = '') {
    this.nodes = nodes.map((n) => ({ ...n, kids: [] }));
    this.byId = new Map(this.nodes.map((n) => [n.id, n]));
    this.roots = [];
    for (const n of this.nodes) {
      const p = n.parent >= 0 ? this.byId.get(n.parent) : null;
      if (p) p.kids.push(n);
      else this.roots.push(n);
    }
    for (const n of this.nodes) n.kids.sort((a, b) => b.total - a.total || a.name.localeCompare(b.name));
    this.roots.sort((a, b) => b.total - a.total || a.name.localeCompare(b.name));
    this.all = this.roots.reduce((a, n) => a + n.total, 0);
    this.maxDepth = this.nodes.reduce((a, n) => Math.max(a, n.depth), 0);
    this.truncated = truncated;
    this.note = note;
    this.focus = null;
    this.boxes = [];
    this.canvas = el('canvas', { className: 'flame-canvas' });
    this.tip = el('div', { className: 'tooltip flame-tip hidden' });
    this.info = el('div', { className: 'flame-info' });
    this.root = el('div', { className: 'flame' }, this.info, el('div', { className: 'flame-wrap' }, this.canvas, this.tip));
    this.canvas.addEventListener('mousemove', (e) => this.onMove(e));
    this.canvas.addEventListener('mouseleave', () => this.tip.classList.add('hidden'));
    this.canvas.addEventListener('click', (e) => this.onClick(e));
  }

  // Frames as {node|null (the "all" bar), x, y, w} in css px for width W.
  layout(W) {
    const boxes = [{ node: null, x: 0, y: 0, w: W }];
    let y = ROW;
    let top = this.roots;
    let total = this.all;
    if (this.focus) {
      const chain = [];
      for (let n = this.focus; n; n = n.parent >= 0 ? this.byId.get(n.parent) : null) chain.unshift(n);
      for (const n of chain.slice(0, -1)) {
        boxes.push({ node: n, x: 0, y, w: W, ancestor: true });
        y += ROW;
      }
      top = [this.focus];
      total = this.focus.total;
    }
    const k = total > 0 ? W / total : 0;
    const place = (list, x0, yy) => {
      let x = x0;
      for (const n of list) {
        const w = n.total * k;
        if (w >= 0.5) {
          boxes.push({ node: n, x, y: yy, w });
          place(n.kids, x, yy + ROW);
        }
        x += w;
      }
    };
    place(top, 0, y);
    return boxes;
  }

  draw(W) {
    this.W = W;
    const dpr = window.devicePixelRatio || 1;
    this.boxes = this.layout(W);
    const H = (this.boxes.reduce((a, b) => Math.max(a, b.y), 0) + ROW) + 2;
    this.canvas.style.width = W + 'px';
    this.canvas.style.height = H + 'px';
    this.canvas.width = Math.round(W * dpr);
    this.canvas.height = Math.round(H * dpr);
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    for (const b of this.boxes) {
      const name = b.node ? b.node.name : 'all';
      ctx.fillStyle = b.node ? (b.ancestor ? '#d9dde3' : colorFor(name).fill) : '#bfc6cf';
      ctx.fillRect(b.x, b.y, Math.max(b.w - 1, 0.5), ROW - 1);
      const s = fitText(ctx, name, b.w - 6);
      if (s) {
        ctx.fillStyle = '#111';
        ctx.fillText(s, b.x + 3, b.y + ROW / 2);
      }
    }
    this.info.textContent = `${fmtCount(this.nodes.length)} frame${this.nodes.length === 1 ? '' : 's'}, ${fmtDur(this.all)} in the range` +
      (this.focus ? ` · zoomed into ${this.focus.name} (click "all" to zoom out)` : ' · click a frame to zoom into it') +
      (this.note ? ` · ${this.note}` : this.truncated ? ' · graph cut at the node limit' : '');
  }

  boxAt(x, y) {
    for (let i = this.boxes.length - 1; i >= 0; i--) {
      const b = this.boxes[i];
      if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + ROW) return b;
    }
    return null;
  }

  point(e) {
    const r = this.canvas.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  }

  onMove(e) {
    const p = this.point(e);
    const b = this.boxAt(p.x, p.y);
    if (!b) {
      this.tip.classList.add('hidden');
      return;
    }
    const n = b.node;
    this.tip.textContent = '';
    const lines = n ? [n.name, `total ${fmtDur(n.total)} (${pctOf(n.total, this.all)})`, `self ${fmtDur(n.self)}`, `${fmtCount(n.count)} slices`]
      : ['all', `total ${fmtDur(this.all)}`];
    lines.forEach((l, i) => this.tip.append(el('div', { className: i === 0 ? 'tip-title' : '' }, l)));
    this.tip.classList.remove('hidden');
    this.tip.style.left = Math.min(p.x + 12, Math.max(0, this.W - 260)) + 'px';
    this.tip.style.top = p.y + 14 + 'px';
  }

  onClick(e) {
    const p = this.point(e);
    const b = this.boxAt(p.x, p.y);
    if (!b) return;
    this.zoom(b.node);
  }

  zoom(node) {
    this.focus = node;
    this.draw(this.W);
  }
}

function pctOf(x, all) {
  return all > 0 ? ((100 * x) / all).toFixed(1) + '%' : '—';
}
