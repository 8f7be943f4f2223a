// The compare page (/?page=compare&a=A&b=B[&by=thread][&sort=p95]
// [&a_start=&a_end=&b_start=&b_end=]): two
// traces side by side, one row per slice name (or thread and name), their
// count, total, p50, p95 and max and the difference b - a, the largest
// regression first (GET /api/compare). A click on a row opens both
// timelines one above the other, each on that name's slowest slice.

import { api } from './api.js';
import { el, clear } from './dom.js';
import { fmtCount, fmtDur } from './format.js';

const FIGURES = [['count', 'Count'], ['total', 'Total'], ['p50', 'p50'], ['p95', 'p95'], ['max', 'Max']];

function fmtFig(key, v) {
  if (v === null || v === undefined) return '—';
  return key === 'count' ? fmtCount(v) : fmtDur(v);
}

function fmtDelta(key, v) {
  if (!v) return '0';
  const s = key === 'count' ? fmtCount(Math.abs(v)) : fmtDur(Math.abs(v));
  return (v > 0 ? '+' : '−') + s;
}

// Where each track of a trace is: track id -> "process pid › thread tid"
// (or "process pid › name (async)"), from GET /tracks.
function trackPlaces(tracks) {
  const m = new Map();
  for (const p of tracks.processes || []) {
    const proc = p.name ? `${p.name} ${p.pid}` : `pid ${p.pid}`;
    for (const t of p.threads || []) if (t.track_id !== null) m.set(Number(t.track_id), `${proc} › ${t.name ? `${t.name} ${t.tid}` : `tid ${t.tid}`}`);
    for (const a of p.async_tracks || []) m.set(Number(a.track_id), `${proc} › ${a.name || 'async'} (async)`);
  }
  return m;
}

// The processes of a trace by name ({named: Map name -> count, unnamed}),
// from GET /tracks: what two traces' rows per thread are paired by.
function processNames(tracks) {
  const named = new Map();
  let unnamed = 0;
  for (const p of tracks.processes || []) {
    if (p.name) named.set(p.name, (named.get(p.name) || 0) + 1);
    else unnamed++;
  }
  return { named, unnamed };
}

// What differs between a's and b's processes, in words, or '' when they
// have the same names (as many of each, and as many unnamed).
export function processDifference(a, b) {
  const only = (x, y) => [...x.named.keys()].filter((n) => !y.named.has(n));
  const parts = [];
  const onlyA = only(a, b);
  const onlyB = only(b, a);
  if (onlyA.length) parts.push(`only in a: ${onlyA.join(', ')}`);
  if (onlyB.length) parts.push(`only in b: ${onlyB.join(', ')}`);
  const twice = [...a.named].filter(([n, c]) => b.named.has(n) && b.named.get(n) !== c).map(([n, c]) => `${n} (${c} in a, ${b.named.get(n)} in b)`);
  if (twice.length) parts.push(`not as many: ${twice.join(', ')}`);
  if (a.unnamed !== b.unnamed) parts.push(`unnamed: ${a.unnamed} in a, ${b.unnamed} in b`);
  return parts.join('; ');
}

// A window around a slice: the slice in the middle half of the view.
function around(s) {
  const dur = Math.max(s.dur, 1000);
  return { start: Math.floor(s.ts - dur / 2), end: Math.ceil(s.ts + dur * 1.5) };
}

export class ComparePage {
  constructor(root, params) {
    this.root = root;
    this.a = params.get('a');
    this.b = params.get('b');
    this.by = params.get('by') === 'thread' ? 'thread' : 'name';
    this.sort = params.get('sort') || 'total';
    // optional windows: a_start, a_end, b_start, b_end (ns on each trace's clock)
    this.windows = new URLSearchParams();
    for (const k of ['a_start', 'a_end', 'b_start', 'b_end']) {
      if (/^-?\d+$/.test(params.get(k) || '')) this.windows.set(k, params.get(k));
    }
    this.rows = [];
    this.open = null; // the row whose timelines are shown
    this.build();
    this.load();
    window.__viewer = { page: 'compare', rows: () => this.rows };
  }

  build() {
    document.title = 'Compare — trace viewer';
    this.title = el('span', { className: 'topbar-title' }, 'Compare');
    this.bySel = el('select', { className: 'cmp-by', 'aria-label': 'Rows per', onchange: () => this.setOpt('by', this.bySel.value) },
      el('option', { value: 'name' }, 'per slice name'), el('option', { value: 'thread' }, 'per thread and name'));
    this.bySel.value = this.by;
    this.sortSel = el('select', { className: 'cmp-sort', 'aria-label': 'Sort by', onchange: () => this.setOpt('sort', this.sortSel.value) },
      ...FIGURES.map(([k, t]) => el('option', { value: k }, `largest ${t} regression first`)));
    this.sortSel.value = this.sort;
    this.status = el('div', { className: 'cmp-status' });
    this.procNote = el('div', { className: 'cmp-procs-slot' });
    this.tbody = el('tbody');
    this.head = el('tr');
    this.split = el('div', { className: 'cmp-split' });
    this.root.append(
      el('header', { className: 'topbar' }, el('a', { className: 'brand', href: '/', title: 'All traces' }, '← Traces'), this.title),
      el('main', { className: 'compare' },
        el('div', { className: 'lib-toolbar' }, this.bySel, this.sortSel,
          el('span', { className: 'hint' }, 'b − a: red is slower in b. Click a row to open both timelines on its slowest slice.')),
        this.status, this.procNote,
        this.wrap = el('div', { className: 'cmp-table-wrap' }, el('table', { className: 'traces cmp-table' }, el('thead', null, this.head), this.tbody)),
        this.split));
    window.addEventListener('resize', () => this.fit());
  }

  // The table takes the window's height below its top (it was 45% of it,
  // 14 rows of 35 over a blank half); the timelines of a row open under it.
  fit() {
    const top = this.wrap.getBoundingClientRect().top + window.scrollY;
    this.wrap.style.maxHeight = Math.max(200, Math.floor(window.innerHeight - top - 12)) + 'px';
  }

  setOpt(k, v) {
    this[k] = v;
    // the open row's timelines belong to the rows being replaced
    this.open = null;
    clear(this.split);
    const q = new URLSearchParams({ page: 'compare', a: this.a, b: this.b });
    if (this.by !== 'name') q.set('by', this.by);
    if (this.sort !== 'total') q.set('sort', this.sort);
    for (const [k, v] of this.windows) q.set(k, v);
    history.replaceState(null, '', '/?' + q.toString());
    this.load();
  }

  async load() {
    if (!/^\d+$/.test(this.a || '') || !/^\d+$/.test(this.b || '')) {
      this.status.textContent = 'Pick two traces in the library to compare them.';
      return;
    }
    try {
      const [ta, tb] = await Promise.all([api('/api/traces/' + this.a, { exact: true }), api('/api/traces/' + this.b, { exact: true })]);
      this.names = { a: ta.name, b: tb.name };
      clear(this.title);
      this.title.append('Compare ', el('a', { href: '/?trace=' + this.a, className: 'cmp-a' }, ta.name), ' → ',
        el('a', { href: '/?trace=' + this.b, className: 'cmp-b' }, tb.name));
      this.status.textContent = 'Comparing…';
      const w = this.windows.toString();
      const r = await api(`/api/compare?a=${this.a}&b=${this.b}&by=${this.by}&sort=${this.sort}&limit=2000${w ? '&' + w : ''}`, { exact: true });
      this.rows = r.rows;
      await this.loadPlaces();
      this.showProcesses();
      this.status.textContent = r.truncated ? `The first ${fmtCount(r.rows.length)} rows.` : `${fmtCount(r.rows.length)} row${r.rows.length === 1 ? '' : 's'}.`;
      this.status.classList.remove('error-text');
    } catch (e) {
      this.rows = [];
      this.status.textContent = 'Cannot compare: ' + e.message;
      this.status.classList.add('error-text');
    }
    this.render();
  }

  // A row per thread joins the threads of one name in processes of one
  // name: each side's slowest slice says which thread (pid and tid) it is.
  // The processes' names say whether the two traces can be paired so.
  async loadPlaces() {
    if (this.places) return;
    const [a, b] = await Promise.all([api(`/api/traces/${this.a}/tracks`, { exact: true }), api(`/api/traces/${this.b}/tracks`, { exact: true })]);
    this.places = { a: trackPlaces(a), b: trackPlaces(b) };
    this.processes = { a: processNames(a), b: processNames(b) };
  }

  // Says, over the table, when the traces' processes are not the same.
  showProcesses() {
    clear(this.procNote);
    const diff = this.processes ? processDifference(this.processes.a, this.processes.b) : '';
    if (!diff) return;
    this.procNote.append(el('div', { className: 'cmp-procs' },
      el('strong', null, 'The two traces\' processes differ'), ` (${diff}). `,
      this.by === 'thread' ? 'Threads pair by process and thread name: a process in one trace only has rows of its own.'
        : 'Rows per slice name add up every process\'s slices.'));
  }

  // The thread cell of a row: where a's slowest slice is, and b's when it
  // is elsewhere; the bare thread name when neither side has one.
  threadCell(row) {
    const at = (side) => row[side] && row[side].slowest && this.places ? this.places[side].get(Number(row[side].slowest.track_id)) : null;
    const pa = at('a');
    const pb = at('b');
    if (!pa && !pb) return el('td', null, `${row.process || 'unnamed process'} › ${row.thread || '(async)'}`);
    if (!pa || !pb || pa === pb) return el('td', { className: 'cmp-thread' }, pa || pb);
    return el('td', { className: 'cmp-thread' }, pa, el('div', { className: 'muted' }, 'b: ' + pb));
  }

  render() {
    clear(this.head);
    clear(this.tbody);
    const cols = [this.by === 'thread' ? 'Thread' : null, 'Name'].filter(Boolean);
    this.head.append(...cols.map((c) => el('th', null, c)),
      ...FIGURES.map(([k, t]) => el('th', { className: 'num' + (k === this.sort ? ' sorted' : ''), colSpan: 3 }, t)));
    const sub = el('tr', { className: 'cmp-sub' }, ...cols.map(() => el('th')),
      ...FIGURES.flatMap(() => ['a', 'b', 'b − a'].map((h) => el('th', { className: 'num' }, h))));
    this.head.after(sub);
    if (this.subRow) this.subRow.remove();
    this.subRow = sub;
    for (const row of this.rows) {
      const tr = el('tr', { className: 'cmp-row' + (row === this.open ? ' open' : ''), onclick: () => this.show(row) },
        ...(this.by === 'thread' ? [this.threadCell(row)] : []),
        el('td', { className: 'name' }, row.name),
        ...FIGURES.flatMap(([k]) => {
          const d = row.delta[k];
          return [el('td', { className: 'num' }, fmtFig(k, row.a && row.a[k])), el('td', { className: 'num' }, fmtFig(k, row.b && row.b[k])),
            el('td', { className: 'num delta ' + (d > 0 ? 'worse' : d < 0 ? 'better' : '') }, fmtDelta(k, d))];
        }));
      this.tbody.append(tr);
    }
    this.fit();
  }

  frame(side, trace, row) {
    const s = row[side] && row[side].slowest;
    const label = el('div', { className: 'cmp-frame-label' }, `${side}: ${this.names[side]} — `,
      s ? `slowest ${row.name}: ${fmtDur(s.dur)}` : `no ${row.name} here`);
    if (!s) return el('div', { className: 'cmp-frame' }, label);
    const w = around(s);
    return el('div', { className: 'cmp-frame' }, label,
      el('iframe', { className: 'cmp-iframe cmp-iframe-' + side, title: `${side}: ${this.names[side]}`, src: `/?trace=${trace}&start=${w.start}&end=${w.end}&slice=${s.id}` }));
  }

  show(row) {
    this.open = row;
    clear(this.split);
    this.split.append(this.frame('a', this.a, row), this.frame('b', this.b, row));
    this.render();
    this.split.scrollIntoView({ block: 'nearest' });
  }
}
