// The query page (?trace=ID&page=query): an SQL editor over the trace's
// tables (docs/SCHEMA.md), the results as a table, errors inline under the
// editor, the last queries kept (localStorage, per browser), and slice ids
// linking to the slice in the timeline (columns named id in a query over
// slices, slice_id, parent_id, from_slice_id, to_slice_id).

import { api } from './api.js';
import { el, clear } from './dom.js';
import { fmtCount } from './format.js';
import { pageUrl, topbar } from './pages.js';

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

export class QueryPage {
  constructor(root, traceId, params) {
    this.root = root;
    this.traceId = traceId;
    this.base = '/api/traces/' + encodeURIComponent(traceId);
    this.titleEl = el('span', { className: 'trace-title' }, 'trace ' + traceId);
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
    root.append(topbar(traceId, 'query', this.titleEl), el('main', { className: 'query-page' },
      el('div', { className: 'query-main' },
        el('div', { className: 'muted' }, 'Tables: see docs/SCHEMA.md (slice_view joins names; slices, threads, tracks, args, counters, sched, flows ...).'),
        this.editor, el('div', { className: 'query-bar' }, this.runBtn, this.status), this.error, this.results),
      el('aside', { className: 'query-side' }, el('h3', null, 'Last queries'), this.history)));
    this.running = false;
    window.__viewer = { page: 'query', idle: () => !this.running };
    this.showHistory();
    api(this.base, { exact: true }).then((t) => {
      this.titleEl.textContent = t.name || 'trace ' + t.id;
      document.title = (t.name || 'trace') + ' — query';
    }, () => {});
    this.editor.focus();
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
    this.running = false;
  }

  renderTable(columns, rows, sql) {
    clear(this.results);
    const links = columns.map((c) => isSliceColumn(c, sql));
    // a row with ts (and dur) opens the timeline on that span
    const tsAt = columns.findIndex((c) => c.toLowerCase() === 'ts');
    const durAt = columns.findIndex((c) => c.toLowerCase() === 'dur');
    const spanLink = (row) => {
      const ts = Number(row[tsAt]);
      const dur = durAt >= 0 && Number(row[durAt]) > 0 ? Number(row[durAt]) : 0;
      const pad = Math.max(dur * 0.15, 1000);
      return `${pageUrl(this.traceId, 'timeline')}&start=${Math.floor(ts - pad)}&end=${Math.ceil(ts + dur + pad)}`;
    };
    const cell = (v, i, row) => {
      if (i === tsAt && Number.isFinite(Number(v)) && v !== null) {
        return el('td', { className: 'num' }, el('a', { className: 'ts-link', href: spanLink(row), title: 'Open the timeline here' }, String(v)));
      }
      if (links[i] && (typeof v === 'number' || typeof v === 'bigint' || /^\d+$/.test(String(v)))) {
        const href = `${pageUrl(this.traceId, 'timeline')}&slice=${v}`;
        return el('td', { className: 'num' }, el('a', { className: 'slice-link', href }, String(v)));
      }
      if (v === null) return el('td', { className: 'muted' }, 'NULL');
      if (typeof v === 'object') return el('td', null, JSON.stringify(v));
      return el('td', { className: typeof v === 'number' || typeof v === 'bigint' ? 'num' : '' }, String(v));
    };
    this.results.append(el('table', { className: 'stats query-table' },
      el('thead', null, el('tr', null, ...columns.map((c) => el('th', null, c)))),
      el('tbody', null, ...rows.map((row) => el('tr', null, ...row.map((v, i) => cell(v, i, row)))))));
  }
}
