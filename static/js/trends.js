// The trends page (/?page=trends&name=NAME[&filter=TEXT][&order=label:KEY]
// [&stat=p95][&threshold=PCT]): one slice name across the traces of the
// library (GET /api/trends, answered from the catalog's name index): a
// chart of its p50 and p95 per trace against the upload order or a
// label's value (a build number), with the traces whose figure rose more
// than the threshold above the median of those before flagged as
// regressions, and the same figures as a table. A click on a point opens
// that trace at that name's longest slice.
//
// The filter box takes the library's syntax (libfilter.js).

import { api } from './api.js';
import { el, clear, svg } from './dom.js';
import { fmtCount, fmtDate, fmtDur, tickStep } from './format.js';
import { parseFilter } from './libfilter.js';

const STATS = [['p50', 'p50'], ['p95', 'p95'], ['max', 'max'], ['avg', 'average']];
const CHART_H = 300;
const PAD = { left: 70, right: 16, top: 14, bottom: 46 };

// A string as an SQL literal.
export function sqlString(s) {
  return "'" + String(s).replace(/'/g, "''") + "'";
}

// A point's figure for stat (ns), or null when it has no ended slice.
function statOf(p, stat) {
  if (stat === 'avg') return Number(p.ended) > 0 ? Number(p.total_ns) / Number(p.ended) : null;
  const v = p[stat + '_ns'];
  return v === null || v === undefined ? null : Number(v);
}

export class TrendsPage {
  constructor(root, params) {
    this.root = root;
    this.points = [];
    this.loading = false;
    this.token = 0;
    const threshold = Number(params.get('threshold'));
    this.nameInput = el('input', {
      type: 'search', className: 'trend-name', placeholder: 'Slice name (exact)', 'aria-label': 'Slice name', value: params.get('name') || '',
      onchange: () => this.changed(),
    });
    this.filterInput = el('input', {
      type: 'search', className: 'filter trend-filter', value: params.get('filter') || '', 'aria-label': 'Which traces',
      placeholder: 'Which traces: build=1234 branch=main after:2026-11-01 …',
      oninput: () => { clearTimeout(this.filterTimer); this.filterTimer = setTimeout(() => this.changed(), 300); },
    });
    this.order = params.get('order') || 'created';
    this.orderSel = el('select', { className: 'trend-order', 'aria-label': 'Order', onchange: () => { this.order = this.orderSel.value; this.changed(); } });
    this.statSel = el('select', { className: 'trend-stat', 'aria-label': 'Figure for regressions', onchange: () => this.changed() },
      ...STATS.map(([k, t]) => el('option', { value: k }, `regressions by ${t}`)));
    this.statSel.value = STATS.some(([k]) => k === params.get('stat')) ? params.get('stat') : 'p50';
    this.thresholdInput = el('input', {
      type: 'number', className: 'trend-threshold', min: 0, max: 100000, step: 1, 'aria-label': 'Threshold, percent',
      value: Number.isFinite(threshold) && params.has('threshold') ? threshold : 10, onchange: () => this.changed(),
    });
    this.status = el('div', { className: 'trend-status' });
    this.chart = el('div', { className: 'trend-chart' });
    this.table = el('div', { className: 'table-wrap' });
    this.fillOrders([]);
    document.title = 'Trends — trace viewer';
    root.append(
      el('header', { className: 'topbar' }, el('a', { className: 'brand', href: '/', title: 'All traces' }, '← Traces'),
        el('span', { className: 'topbar-title' }, 'Trends: one slice name across traces')),
      el('main', { className: 'library trends' },
        el('div', { className: 'lib-toolbar' }, this.nameInput, this.filterInput),
        el('div', { className: 'lib-toolbar' }, this.orderSel, this.statSel,
          el('label', { className: 'hint' }, 'flag a rise of more than ', this.thresholdInput, ' % over the median before it')),
        this.status, this.chart, this.table));
    window.__viewer = {
      page: 'trends',
      idle: () => !this.loading,
      points: () => this.points,
      // each drawn point's centre in page px: {id, series, x, y}
      pointBoxes: () => [...this.chart.querySelectorAll('circle.pt')].map((c) => {
        const r = c.getBoundingClientRect();
        return { id: c.dataset.id, series: c.dataset.series, x: r.left + r.width / 2, y: r.top + r.height / 2 };
      }),
    };
    if (this.nameInput.value.trim()) this.load();
    else this.status.textContent = 'Name a slice (as in a slice\'s details: "this name across traces").';
  }

  // The order select: upload order, and each label key the points have.
  fillOrders(points) {
    const keys = new Set();
    for (const p of points) for (const k of Object.keys(p.labels || {})) keys.add(k);
    if (this.order.startsWith('label:')) keys.add(this.order.slice(6));
    clear(this.orderSel);
    this.orderSel.append(el('option', { value: 'created' }, 'in upload order'),
      ...[...keys].sort().map((k) => el('option', { value: 'label:' + k }, `by label ${k}`)));
    this.orderSel.value = this.order;
  }

  changed() {
    const q = new URLSearchParams({ page: 'trends' });
    if (this.nameInput.value.trim()) q.set('name', this.nameInput.value.trim());
    if (this.filterInput.value.trim()) q.set('filter', this.filterInput.value.trim());
    if (this.order !== 'created') q.set('order', this.order);
    if (this.statSel.value !== 'p50') q.set('stat', this.statSel.value);
    if (Number(this.thresholdInput.value) !== 10) q.set('threshold', this.thresholdInput.value);
    history.replaceState(null, '', '/?' + q.toString());
    this.load();
  }

  async load() {
    const name = this.nameInput.value.trim();
    if (!name) return;
    const token = ++this.token;
    const { params, errors } = parseFilter(this.filterInput.value);
    params.delete('sort'); // the order is the trend's own
    params.set('name', name);
    params.set('order', this.order);
    params.set('stat', this.statSel.value);
    params.set('threshold', String(Math.max(0, Number(this.thresholdInput.value) || 0) / 100));
    this.loading = true;
    this.status.textContent = 'Loading…';
    let r;
    try {
      r = await api('/api/trends?' + params.toString(), { exact: true });
    } catch (e) {
      if (token !== this.token) return;
      this.loading = false;
      this.points = [];
      this.status.textContent = 'Cannot chart: ' + e.message;
      this.status.classList.add('error-text');
      clear(this.chart);
      clear(this.table);
      return;
    }
    if (token !== this.token) return;
    this.status.classList.remove('error-text');
    this.name = name;
    this.stat = r.stat;
    this.points = r.points || [];
    this.fillOrders(this.points);
    const withSlices = this.points.filter((p) => statOf(p, 'p50') !== null).length;
    const regressions = this.points.filter((p) => p.regression).length;
    this.status.textContent = `${fmtCount(this.points.length)} traces, ${fmtCount(withSlices)} with ended slices named "${name}"` +
      `, ${fmtCount(regressions)} regression${regressions === 1 ? '' : 's'}` +
      (r.unindexed ? ` (${fmtCount(r.unindexed)} traces not indexed yet)` : '') +
      (errors.length ? '. Not understood (left out): ' + errors.join(' ') : '.');
    this.drawChart();
    this.drawTable();
    this.loading = false;
  }

  drawChart() {
    clear(this.chart);
    const pts = this.points;
    if (pts.length === 0) return;
    const W = Math.max(400, this.chart.clientWidth || 900);
    const H = CHART_H;
    const iw = W - PAD.left - PAD.right;
    const ih = H - PAD.top - PAD.bottom;
    let max = 0;
    for (const p of pts) max = Math.max(max, statOf(p, 'p95') ?? 0, statOf(p, this.stat) ?? 0);
    // the scale in 1-2-5 steps, at most about five lines
    const step = tickStep(Math.max(max, 1) / 4);
    max = Math.max(step, Math.ceil((max * 1.04) / step) * step);
    const x = (i) => PAD.left + (pts.length === 1 ? iw / 2 : (i * iw) / (pts.length - 1));
    const y = (v) => PAD.top + ih - (v / max) * ih;
    const g = svg('svg', { width: W, height: H, class: 'trend-svg', role: 'img', 'aria-label': `p50 and p95 of ${this.name} per trace` });
    // the scale: four lines
    for (let v = 0; v <= max; v += step) {
      g.append(svg('line', { x1: PAD.left, x2: W - PAD.right, y1: y(v), y2: y(v), class: 'grid' }),
        svg('text', { x: PAD.left - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick' }, fmtDur(v)));
    }
    // the order's values under some of the points (as many as fit)
    const every = Math.max(1, Math.ceil(pts.length / Math.floor(iw / 70)));
    pts.forEach((p, i) => {
      if (i % every) return;
      const label = this.order === 'created' ? fmtDate(p.created_at) : String(p.order_value ?? '—');
      g.append(svg('text', { x: x(i), y: H - PAD.bottom + 16, 'text-anchor': 'middle', class: 'tick' },
        label.length > 14 ? label.slice(0, 13) + '…' : label));
    });
    g.append(svg('text', { x: PAD.left + iw / 2, y: H - 6, 'text-anchor': 'middle', class: 'axis-title' },
      this.order === 'created' ? 'upload order' : this.order.slice(6)));
    for (const [series, cls] of [['p95', 'p95'], ['p50', 'p50']]) {
      let d = '';
      let pen = false;
      pts.forEach((p, i) => {
        const v = statOf(p, series);
        if (v === null) {
          pen = false;
          return;
        }
        d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`;
        pen = true;
      });
      if (d) g.append(svg('path', { d, class: 'line ' + cls }));
    }
    // regressions: a ring at the figure that rose
    pts.forEach((p, i) => {
      const v = statOf(p, this.stat);
      if (!p.regression || v === null) return;
      g.append(svg('circle', { cx: x(i), cy: y(v), r: 8, class: 'regression', 'data-id': p.id }));
    });
    pts.forEach((p, i) => {
      for (const series of ['p95', 'p50']) {
        const v = statOf(p, series);
        if (v === null) continue;
        g.append(svg('circle', {
          cx: x(i), cy: y(v), r: 4, class: `pt ${series}${p.regression ? ' flagged' : ''}`, 'data-id': p.id, 'data-series': series,
          onclick: () => this.openPoint(p),
        }, svg('title', null, this.pointText(p))));
      }
    });
    const legend = el('div', { className: 'trend-legend' },
      el('span', { className: 'key p50' }, 'p50'), el('span', { className: 'key p95' }, 'p95'),
      el('span', { className: 'key regression' }, `regression (${this.stat} more than ${this.thresholdInput.value}% over the median before)`),
      el('span', { className: 'hint' }, 'Click a point to open that trace at its longest ' + this.name + '.'));
    this.chart.append(legend, g);
  }

  pointText(p) {
    const fig = (k) => (p[k] === null || p[k] === undefined ? '—' : fmtDur(Number(p[k])));
    return `${p.name} (${this.order === 'created' ? fmtDate(p.created_at) : this.order.slice(6) + '=' + (p.order_value ?? '—')})\n` +
      `${fmtCount(p.count)} slices · p50 ${fig('p50_ns')} · p95 ${fig('p95_ns')} · max ${fig('max_ns')}` +
      (p.regression ? `\nregression: ${this.stat} over ${fig('baseline_ns')}, the median before` : '');
  }

  drawTable() {
    clear(this.table);
    const fig = (v) => (v === null || v === undefined ? '—' : fmtDur(Number(v)));
    const head = ['Trace', this.order === 'created' ? 'Uploaded' : this.order.slice(6), 'Count', 'p50', 'p95', 'Max', 'Baseline', ''];
    this.table.append(el('table', { className: 'stats trend-table' },
      el('thead', null, el('tr', null, ...head.map((h, i) => el('th', { className: i >= 2 && i <= 6 ? 'num' : '' }, h)))),
      el('tbody', null, ...this.points.map((p) => el('tr', { dataset: { id: p.id }, className: p.regression ? 'regression' : '' },
        el('td', null, el('button', { className: 'link open-point', title: 'Open at its longest ' + this.name, onclick: () => this.openPoint(p) }, p.name)),
        el('td', null, this.order === 'created' ? fmtDate(p.created_at) : String(p.order_value ?? '—')),
        el('td', { className: 'num' }, fmtCount(p.count)),
        el('td', { className: 'num' }, fig(p.p50_ns)), el('td', { className: 'num' }, fig(p.p95_ns)),
        el('td', { className: 'num' }, fig(p.max_ns)), el('td', { className: 'num' }, fig(p.baseline_ns)),
        el('td', { className: 'regression-cell' }, p.regression ? 'regression' : ''))))));
  }

  // Opens trace p at the name's longest ended slice (one query on that trace).
  async openPoint(p) {
    const sql = `SELECT id FROM slice_view WHERE name = ${sqlString(this.name)} AND dur >= 0 ORDER BY dur DESC LIMIT 1`;
    this.status.textContent = `Opening ${p.name}…`;
    try {
      const r = await api(`/api/traces/${encodeURIComponent(p.id)}/query`, { method: 'POST', body: sql, exact: true });
      const row = (r.rows || [])[0];
      if (!row) {
        this.status.textContent = `${p.name} has no ended slice named "${this.name}".`;
        return;
      }
      location.href = `/?trace=${encodeURIComponent(p.id)}&slice=${row[0]}`;
    } catch (e) {
      this.status.textContent = `Cannot open ${p.name}: ${e.message}`;
    }
  }
}
