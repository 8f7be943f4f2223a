// The query page (?trace=ID&page=query): an SQL editor over the trace's
// tables (docs/SCHEMA.md), the results as a table, errors inline under the
// editor, the last queries kept (localStorage, per browser), and slice ids
// linking to the slice in the timeline (columns named id in a query over
// slices, slice_id, parent_id, from_slice_id, to_slice_id).
//
// It switches from "this trace" to "traces matching…" (&scope=library, or
// /?page=query with no trace): the same statement on every ready trace a
// filter in the library's syntax selects (POST /api/query), each row with
// its trace's name and labels in front, a trace's error a row of its own,
// and a bar chart when every trace answers one row with a number in it.
//
// Beside the editor, the trace's tables and their columns (schemalist.js).

import { api } from './api.js';
import { el, clear, svg } from './dom.js';
import { fmtCount } from './format.js';
import { parseFilter } from './libfilter.js';
import { pageUrl, topbar } from './pages.js';
import { SchemaList, insertAtCursor } from './schemalist.js';
import { debugColumns } from './debugtracks.js';

const HISTORY_KEY = 'trace-viewer.queries';
const HISTORY_MAX = 20;
const SLICE_COLUMNS = new Set(['slice_id', 'parent_id', 'from_slice_id', 'to_slice_id']);
const EXAMPLE = 'SELECT id, ts, dur, name FROM slice_view ORDER BY dur DESC LIMIT 20';

export function loadHistory() {
  try {
    const h = JSON.parse(localStorage.getItem(HISTORY_KEY) || '[]');
    return Array.isArray(h) ? h.filter((q) => typeof q === 'string').slice(0, HISTORY_MAX) : [];
  } catch {
    return [];
  }
}

function saveHistory(sql) {
  const h = [sql, ...loadHistory().filter((q) => q !== sql)].slice(0, HISTORY_MAX);
  try {
    localStorage.setItem(HISTORY_KEY, JSON.stringify(h));
  } catch {
    /* private mode: no history */
  }
}

// Whether column `name` of a query holds slice ids.
function isSliceColumn(name, sql) {
  const n = name.toLowerCase();
  if (SLICE_COLUMNS.has(n)) return true;
  return n === 'id' && /\bfrom\s+(slices|slice_view)\b/i.test(sql);
}

// The columns whose every value (in the rows given) is a number.
function numericColumns(columns, rows) {
  return columns.map((c, i) => i).filter((i) => rows.length > 0 &&
    rows.every((r) => typeof r[i] === 'number' || (typeof r[i] === 'string' && /^-?\d+(\.\d+)?$/.test(r[i]))));
}

export class QueryPage {
  // traceId: the trace of "this trace", or null (only "traces matching…").
  constructor(root, traceId, params) {
    this.root = root;
    this.traceId = traceId;
    this.base = traceId ? '/api/traces/' + encodeURIComponent(traceId) : null;
    this.scope = !traceId || params.get('scope') === 'library' ? 'library' : 'trace';
    this.titleEl = el('span', { className: 'trace-title' }, traceId ? 'trace ' + traceId : 'Query across traces');
    this.editor = el('textarea', {
      className: 'sql-editor', spellcheck: false, rows: 6, 'aria-label': 'SQL',
      placeholder: 'SELECT ... (one read-only statement; Ctrl+Enter runs it)',
    });
    this.editor.value = params.get('sql') || loadHistory()[0] || EXAMPLE;
    this.editor.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        this.run();
      }
    });
    this.runBtn = el('button', { className: 'run-query', onclick: () => this.run() }, 'Run (Ctrl+Enter)');
    this.status = el('span', { className: 'query-status muted' });
    this.error = el('div', { className: 'query-error hidden', role: 'alert' });
    this.results = el('div', { className: 'query-results table-wrap' });
    this.history = el('ul', { className: 'query-history' });
    this.chart = el('div', { className: 'query-chart' });
    this.filterInput = el('input', {
      type: 'search', className: 'filter query-filter', value: params.get('filter') || '', 'aria-label': 'Which traces',
      placeholder: 'Which traces (the library\'s filter): build=1234 branch=main after:2026-11-01 … (empty: all)',
      onkeydown: (e) => { if (e.key === 'Enter') this.run(); },
    });
    this.scopeBar = el('div', { className: 'query-scope' });
    const bar = traceId ? topbar(traceId, 'query', this.titleEl)
      : el('header', { className: 'topbar' }, el('a', { className: 'brand', href: '/', title: 'All traces' }, '← Traces'), this.titleEl);
    root.append(bar, el('main', { className: 'query-page' },
      el('div', { className: 'query-main' },
        this.scopeBar,
        el('div', { className: 'muted' }, 'Tables: see docs/SCHEMA.md (slice_view joins names; slices, threads, tracks, args, counters, sched, flows ...).'),
        this.editor, el('div', { className: 'query-bar' }, this.runBtn, this.status), this.error, this.chart, this.results),
      el('aside', { className: 'query-side' }, el('h3', null, 'Last queries'), this.history, this.schemaSide())));
    this.running = false;
    window.__viewer = { page: 'query', idle: () => !this.running };
    this.showHistory();
    this.showScope();
    if (traceId) {
      api(this.base, { exact: true }).then((t) => {
        this.titleEl.textContent = t.name || 'trace ' + t.id;
        document.title = (t.name || 'trace') + ' — query';
      }, () => {});
    } else {
      document.title = 'Query across traces — trace viewer';
    }
    this.editor.focus();
  }

  // The tables and their columns (of this trace: every trace has the same).
  schemaSide() {
    if (!this.traceId) return null;
    this.schema = new SchemaList(this.base, (c) => insertAtCursor(this.editor, c));
    this.schema.load();
    return el('div', { className: 'query-schema' }, el('h3', null, 'Tables'), this.schema.root);
  }

  // "This trace" | "Traces matching…" [filter], kept in the URL.
  showScope() {
    clear(this.scopeBar);
    const tab = (id, title) => el('button', {
      className: 'tab scope-' + id + (this.scope === id ? ' active' : ''), disabled: id === 'trace' && !this.traceId,
      onclick: () => { this.scope = id; this.showScope(); clear(this.results); clear(this.chart); this.status.textContent = ''; },
    }, title);
    this.scopeBar.append(tab('trace', 'This trace'), tab('library', 'Traces matching…'));
    if (this.scope === 'library') this.scopeBar.append(this.filterInput);
    const q = new URLSearchParams(location.search);
    if (this.scope === 'library' && this.traceId) q.set('scope', 'library');
    else q.delete('scope');
    if (this.scope === 'library' && this.filterInput.value.trim()) q.set('filter', this.filterInput.value.trim());
    else q.delete('filter');
    history.replaceState(null, '', '/?' + q.toString());
  }

  showHistory() {
    clear(this.history);
    for (const q of loadHistory()) {
      this.history.append(el('li', null, el('button', {
        className: 'link history-item', title: q,
        onclick: () => {
          this.editor.value = q;
          this.run();
        },
      }, q.length > 90 ? q.slice(0, 90) + '…' : q)));
    }
  }

  async run() {
    const sql = this.editor.value.trim();
    if (!sql || this.running) return;
    this.running = true;
    saveHistory(sql); // kept even when it fails: it is the one to fix
    this.showHistory();
    this.status.textContent = 'running…';
    this.error.classList.add('hidden');
    clear(this.chart);
    if (this.scope === 'library') {
      await this.runLibrary(sql);
      this.running = false;
      return;
    }
    const t0 = performance.now();
    let r;
    try {
      r = await api(`${this.base}/query`, { method: 'POST', body: sql, exact: true });
    } catch (e) {
      // the old table would read as this statement's answer: it goes
      clear(this.results);
      this.error.textContent = e.message;
      this.error.classList.remove('hidden');
      this.status.textContent = '';
      this.running = false;
      return;
    }
    const ms = performance.now() - t0;
    const rows = r.rows || [];
    this.status.textContent = `${fmtCount(rows.length)} rows${r.truncated ? ' (cut at the row limit)' : ''} in ${ms.toFixed(0)} ms`;
    this.renderTable(r.columns || [], rows, sql);
    this.offerDebugTracks(r.columns || [], sql);
    this.running = false;
  }

  // A result with ts and dur can be drawn on the timeline (debugtracks.js):
  // a track per value of the chosen column, or one track.
  offerDebugTracks(columns, sql) {
    if (!debugColumns(columns)) return;
    const pick = el('select', { className: 'debug-group', 'aria-label': 'One track per value of' },
      el('option', { value: '' }, '(one track)'),
      ...columns.filter((c) => !['ts', 'dur'].includes(String(c).toLowerCase())).map((c) => el('option', { value: c }, c)));
    const go = el('button', {
      className: 'show-debug', title: 'Open the timeline with these rows drawn as tracks on top (the link keeps the query)',
      onclick: () => {
        const q = new URLSearchParams({ debug: sql });
        if (pick.value) q.set('debug_group', pick.value);
        location.href = `${pageUrl(this.traceId, 'timeline')}&${q.toString()}`;
      },
    }, 'Show on timeline');
    this.chart.append(el('div', { className: 'debug-offer' }, go, ' one track per ', pick));
  }

  // The cells of a result's row in trace traceId: ts opens the timeline
  // on the row's span, slice ids the slice. Returns cell(v, i, row).
  cellMaker(traceId, columns, sql) {
    const links = columns.map((c) => isSliceColumn(c, sql));
    // a row with ts (and dur) opens the timeline on that span
    const tsAt = columns.findIndex((c) => c.toLowerCase() === 'ts');
    const durAt = columns.findIndex((c) => c.toLowerCase() === 'dur');
    const spanLink = (row) => {
      const ts = Number(row[tsAt]);
      const dur = durAt >= 0 && Number(row[durAt]) > 0 ? Number(row[durAt]) : 0;
      const pad = Math.max(dur * 0.15, 1000);
      return `${pageUrl(traceId, 'timeline')}&start=${Math.floor(ts - pad)}&end=${Math.ceil(ts + dur + pad)}`;
    };
    return (v, i, row) => {
      if (i === tsAt && Number.isFinite(Number(v)) && v !== null) {
        return el('td', { className: 'num' }, el('a', { className: 'ts-link', href: spanLink(row), title: 'Open the timeline here' }, String(v)));
      }
      if (links[i] && (typeof v === 'number' || typeof v === 'bigint' || /^\d+$/.test(String(v)))) {
        const href = `${pageUrl(traceId, 'timeline')}&slice=${v}`;
        return el('td', { className: 'num' }, el('a', { className: 'slice-link', href }, String(v)));
      }
      if (v === null) return el('td', { className: 'muted' }, 'NULL');
      if (typeof v === 'object') return el('td', null, JSON.stringify(v));
      return el('td', { className: typeof v === 'number' || typeof v === 'bigint' ? 'num' : '' }, String(v));
    };
  }

  renderTable(columns, rows, sql) {
    clear(this.results);
    const cell = this.cellMaker(this.traceId, columns, sql);
    this.results.append(el('table', { className: 'stats query-table' },
      el('thead', null, el('tr', null, ...columns.map((c) => el('th', null, c)))),
      el('tbody', null, ...rows.map((row) => el('tr', null, ...row.map((v, i) => cell(v, i, row)))))));
  }

  // ---- traces matching… -------------------------------------------------------

  async runLibrary(sql) {
    const { params, errors } = parseFilter(this.filterInput.value);
    params.delete('sort'); // the reply is newest first
    this.showScope(); // the filter into the URL
    const t0 = performance.now();
    let r;
    try {
      r = await api('/api/query?' + params.toString(), { method: 'POST', body: sql, exact: true });
    } catch (e) {
      clear(this.results);
      this.error.textContent = e.message;
      this.error.classList.remove('hidden');
      this.status.textContent = '';
      return;
    }
    const ms = performance.now() - t0;
    const traces = r.traces || [];
    const failed = traces.filter((t) => t.error).length;
    const rows = traces.reduce((n, t) => n + (t.rows ? t.rows.length : 0), 0);
    this.status.textContent = `${fmtCount(traces.length)} traces, ${fmtCount(rows)} rows` +
      (failed ? `, ${fmtCount(failed)} failed` : '') + ` in ${ms.toFixed(0)} ms` +
      (errors.length ? ' · not understood (left out): ' + errors.join(' ') : '');
    this.renderMulti(traces, sql);
    this.renderBars(traces);
  }

  // One table: each row after its trace's name and labels; a trace's error a row.
  renderMulti(traces, sql) {
    clear(this.results);
    const first = traces.find((t) => t.columns);
    const columns = first ? first.columns : [];
    const lead = (t) => [
      el('td', { className: 'trace-cell' }, el('a', { className: 'trace-link', href: pageUrl(t.id, 'timeline') }, t.name || 'trace ' + t.id)),
      el('td', { className: 'labels-cell' }, ...Object.entries(t.labels || {}).map(([k, v]) => el('span', { className: 'chip' }, `${k}=${v}`))),
    ];
    const body = [];
    for (const t of traces) {
      if (t.error) {
        body.push(el('tr', { className: 'trace-error', dataset: { trace: t.id } }, ...lead(t),
          el('td', { className: 'error-text', colSpan: Math.max(columns.length, 1) }, `${t.error.code}: ${t.error.message}`)));
        continue;
      }
      const cell = this.cellMaker(t.id, t.columns, sql);
      if (t.rows.length === 0) {
        body.push(el('tr', { className: 'trace-row', dataset: { trace: t.id } }, ...lead(t),
          el('td', { className: 'muted', colSpan: Math.max(columns.length, 1) }, 'no rows')));
      }
      for (const row of t.rows) {
        body.push(el('tr', { className: 'trace-row', dataset: { trace: t.id } }, ...lead(t), ...row.map((v, i) => cell(v, i, row))));
      }
      if (t.truncated) {
        body.push(el('tr', { className: 'trace-row' }, ...lead(t), el('td', { className: 'muted', colSpan: columns.length }, 'cut at the row limit')));
      }
    }
    this.results.append(el('table', { className: 'stats query-table multi-table' },
      el('thead', null, el('tr', null, el('th', null, 'Trace'), el('th', null, 'Labels'), ...columns.map((c) => el('th', null, c)))),
      el('tbody', null, ...body)));
  }

  // A bar per trace when each answered one row with a numeric column (the
  // first such; a select picks another).
  renderBars(traces, pick) {
    clear(this.chart);
    const ok = traces.filter((t) => !t.error);
    if (ok.length === 0 || !ok.every((t) => t.rows.length === 1)) return;
    const columns = ok[0].columns;
    if (!ok.every((t) => t.columns.length === columns.length)) return;
    const nums = numericColumns(columns, ok.map((t) => t.rows[0]));
    if (nums.length === 0) return;
    const col = nums.includes(pick) ? pick : nums[0];
    const vals = ok.map((t) => Number(t.rows[0][col]));
    const max = Math.max(...vals.map(Math.abs), 1e-300);
    const LABEL = 220;
    const W = Math.max(420, Math.min(900, this.results.clientWidth || 900));
    const BAR = 18;
    const g = svg('svg', { width: W, height: ok.length * (BAR + 6) + 4, class: 'bars', role: 'img', 'aria-label': `${columns[col]} per trace` });
    ok.forEach((t, i) => {
      const y = 2 + i * (BAR + 6);
      const w = Math.max(1, (Math.abs(vals[i]) / max) * (W - LABEL - 90));
      const name = t.name || 'trace ' + t.id;
      g.append(svg('text', { x: LABEL - 8, y: y + BAR / 2 + 4, 'text-anchor': 'end', class: 'bar-label' }, name.length > 30 ? name.slice(0, 29) + '…' : name),
        svg('rect', { x: LABEL, y, width: w, height: BAR, class: 'bar', 'data-trace': t.id }, svg('title', null, `${name}: ${t.rows[0][col]}`)),
        svg('text', { x: LABEL + w + 6, y: y + BAR / 2 + 4, class: 'bar-value' }, String(t.rows[0][col])));
    });
    const head = el('div', { className: 'bars-head' }, 'Per trace: ');
    if (nums.length > 1) {
      const sel = el('select', { className: 'bars-column', onchange: () => this.renderBars(traces, Number(sel.value)) },
        ...nums.map((i) => el('option', { value: i }, columns[i])));
      sel.value = String(col);
      head.append(sel);
    } else {
      head.append(el('strong', null, columns[col]));
    }
    this.chart.append(head, g);
  }
}
