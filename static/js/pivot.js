// The area panel's pivot table: the selection's slices grouped by name,
// thread, process, category or an argument, nested (process > thread >
// name ...), with count, wall, self, average and max per group; a group
// opens on a click to show the next level.
//
// It is one statement over POST /query, not an endpoint of its own: the
// figures follow docs/API.md's area rules (the slices of the tracks that
// overlap [S, E], inclusive; only the part inside counts; an unterminated
// slice runs to the trace's end; self is wall less the children's parts),
// and SQL can group by any of those keys, an argument included, without a
// new route to keep in step. The statement returns the finest groups only
// (at most the endpoint's 10000 rows, said when cut); the coarser levels
// are their sums, made here. It reads the selected tracks' slices by their
// extents (docs/SCHEMA.md), so it costs the slices of those tracks, and
// stops at the endpoint's 5 s on a very big selection, which the panel
// says.

import { api } from './api.js';
import { el } from './dom.js';
import { fmtCount, fmtDur } from './format.js';

export const DIMENSIONS = [
  { key: 'name', title: 'Name' },
  { key: 'thread', title: 'Thread' },
  { key: 'process', title: 'Process' },
  { key: 'category', title: 'Category' },
  { key: 'arg', title: 'Argument…' },
];
const LEVELS = 3;

const sqlText = (s) => `'${String(s).replace(/'/g, "''")}'`;

// The SQL of one grouping key over a row c of the selection (c.name_id,
// c.category_id, c.arg_set_id, c.t_pid, and th, its thread, joined).
function dimension(level) {
  switch (level.key) {
    case 'name':
      return '(SELECT str FROM strings WHERE id = c.name_id)';
    case 'category':
      return '(SELECT str FROM strings WHERE id = c.category_id)';
    case 'thread':
      return "CASE WHEN th.id IS NULL THEN '(no thread)' ELSE coalesce(th.name, 'tid ' || th.tid) END";
    case 'process':
      return "coalesce((SELECT name FROM processes WHERE pid = c.t_pid), 'pid ' || c.t_pid)";
    case 'arg':
      // an arg set's rows are consecutive from its id (docs/SCHEMA.md)
      return `coalesce((SELECT CASE a.type WHEN 5 THEN a.real_value WHEN 6 THEN (SELECT str FROM strings WHERE id = a.string_id)
          WHEN 10 THEN NULL ELSE a.int_value END FROM args a
        WHERE a.id BETWEEN c.arg_set_id AND c.arg_set_id + 511 AND a.arg_set_id = c.arg_set_id
          AND a.key_id = (SELECT id FROM strings WHERE str = ${sqlText(level.arg)}) ORDER BY a.seq LIMIT 1), '(none)')`;
    default:
      throw new Error('no such grouping: ' + level.key);
  }
}

// The statement: per finest group, its keys, then count, wall, self, max.
// area: {start, end, ids()}; levels: [{key, arg?}].
export function pivotSql(area, levels) {
  const S = Math.round(area.start);
  const E = Math.round(area.end);
  const ends = "CASE WHEN s.dur < 0 THEN (SELECT value FROM meta WHERE key = 'end_ns') ELSE s.ts + s.dur END";
  const keys = levels.map((l, i) => `${dimension(l)} AS k${i}`).join(', ');
  const by = levels.map((l, i) => i + 1).join(', ');
  return `WITH sel AS (
  SELECT s.id, s.parent_id, s.name_id, s.category_id, s.arg_set_id, t.pid AS t_pid, t.thread_id AS t_thread,
    max(min(${ends}, ${E}) - max(s.ts, ${S}), 0) AS part
  FROM extents x JOIN slices s ON s.id BETWEEN x.first_id AND x.first_id + x.count - 1 JOIN tracks t ON t.id = x.track_id
  WHERE x.track_id IN (${area.ids().map(Number).join(', ')}) AND s.ts <= ${E} AND ${ends} >= ${S}
), parts AS (
  SELECT sel.*, 1 AS n, part AS wall, part AS self FROM sel
  UNION ALL
  SELECT p.id, p.parent_id, p.name_id, p.category_id, p.arg_set_id, p.t_pid, p.t_thread, 0, 0, 0, -ch.part
  FROM sel ch JOIN sel p ON p.id = ch.parent_id
)
SELECT ${keys}, sum(n) AS count, sum(wall) AS wall, sum(self) AS self, max(CASE WHEN n = 1 THEN wall END) AS max
FROM parts c LEFT JOIN threads th ON th.id = c.t_thread
GROUP BY ${by}`;
}

// The tree of groups from the finest rows [k0..kn-1, count, wall, self, max].
export function buildTree(rows, depth) {
  const root = { key: '', count: 0, wall: 0, self: 0, max: 0, children: new Map() };
  const add = (g, count, wall, self, max) => {
    g.count += count;
    g.wall += wall;
    g.self += self;
    g.max = Math.max(g.max, max);
  };
  for (const r of rows) {
    const [count, wall, self, max] = r.slice(depth).map(Number);
    let g = root;
    add(g, count, wall, self, max);
    for (let i = 0; i < depth; i++) {
      const key = r[i] === null ? 'NULL' : String(r[i]);
      if (!g.children.has(key)) g.children.set(key, { key, count: 0, wall: 0, self: 0, max: 0, children: new Map() });
      g = g.children.get(key);
      add(g, count, wall, self, max);
    }
  }
  return root;
}

const COLUMNS = [
  { key: 'count', title: 'Count' },
  { key: 'wall', title: 'Wall time', dur: true },
  { key: 'self', title: 'Self time', dur: true },
  { key: 'avg', title: 'Average', dur: true },
  { key: 'max', title: 'Max', dur: true },
];

export class PivotTable {
  // base: the trace's API path; onChange(): the table wants to be drawn again.
  constructor(base, onChange) {
    this.base = base;
    this.onChange = onChange;
    this.levels = [{ key: 'name' }];
    this.open = new Set(); // paths ("k0\u0000k1") of the groups opened
    this.tree = null;
    this.error = '';
    this.truncated = false;
    this.token = 0;
  }

  // Asks for area's groups; resolves when they are in (or failed).
  async load(area) {
    const token = ++this.token;
    this.tree = null;
    this.error = '';
    try {
      const r = await api(`${this.base}/query`, { method: 'POST', body: pivotSql(area, this.levels), exact: true });
      if (token !== this.token) return;
      this.tree = buildTree(r.rows || [], this.levels.length);
      this.truncated = !!r.truncated;
    } catch (e) {
      if (token !== this.token) return;
      this.error = e.message;
    }
  }

  // The "group by" choosers: LEVELS selects, an argument key beside "arg".
  controls(area) {
    const changed = () => {
      const levels = [];
      for (const s of selects) {
        if (!s.value) break;
        levels.push(s.value === 'arg' ? { key: 'arg', arg: argInputs[levels.length].value.trim() } : { key: s.value });
      }
      this.levels = levels.length ? levels : [{ key: 'name' }];
      this.open.clear();
      this.load(area).then(() => this.onChange());
      this.onChange();
    };
    const argInputs = [];
    const selects = [];
    const parts = [el('span', { className: 'muted' }, 'Group by ')];
    for (let i = 0; i < LEVELS; i++) {
      const level = this.levels[i];
      const sel = el('select', { className: 'pivot-level', dataset: { level: String(i) }, onchange: changed },
        i > 0 ? el('option', { value: '' }, '—') : null, ...DIMENSIONS.map((d) => el('option', { value: d.key }, d.title)));
      sel.value = level ? level.key : '';
      const arg = el('input', {
        className: 'pivot-arg' + (level && level.key === 'arg' ? '' : ' hidden'), dataset: { level: String(i) },
        placeholder: 'argument key', value: level && level.arg ? level.arg : '', onchange: changed,
      });
      selects.push(sel);
      argInputs.push(arg);
      parts.push(i > 0 ? el('span', { className: 'muted' }, ' › ') : null, sel, arg);
      if (!level) break; // one empty chooser after the last level
    }
    return el('div', { className: 'pivot-controls' }, ...parts);
  }

  // The table: the total, then the top groups, each opened one's children under it.
  table() {
    if (this.error) return el('div', { className: 'panel-error' }, 'Could not pivot: ' + this.error);
    if (!this.tree) return el('div', { className: 'panel-empty' }, 'Grouping…');
    const depth = this.levels.length;
    const body = [];
    const cells = (g) => COLUMNS.map((c) => {
      const v = c.key === 'avg' ? (g.count ? g.wall / g.count : 0) : g[c.key];
      return el('td', { className: 'num' }, c.dur ? fmtDur(v) : fmtCount(v));
    });
    const data = (g) => ({ key: g.key, count: String(g.count), wall: String(g.wall), self: String(g.self), max: String(g.max) });
    body.push(el('tr', { className: 'pivot-total', dataset: data(this.tree) }, el('td', null, 'Total'), ...cells(this.tree)));
    const walk = (g, level, path) => {
      const kids = [...g.children.values()].sort((a, b) => b.wall - a.wall || a.key.localeCompare(b.key));
      for (const k of kids) {
        const p = path ? path + '\u0000' + k.key : k.key;
        const leaf = level + 1 >= depth;
        const isOpen = !leaf && this.open.has(p);
        body.push(el('tr', {
          className: 'pivot-row' + (leaf ? '' : isOpen ? ' open' : ' closed'), dataset: { level: String(level), ...data(k) },
          onclick: leaf ? null : () => {
            if (this.open.has(p)) this.open.delete(p);
            else this.open.add(p);
            this.onChange();
          },
        }, el('td', { style: { paddingLeft: `${6 + level * 16}px` } },
          el('span', { className: 'pivot-toggle' }, leaf ? '' : isOpen ? '▾ ' : '▸ '), k.key), ...cells(k)));
        if (isOpen) walk(k, level + 1, p);
      }
    };
    walk(this.tree, 0, '');
    const title = this.levels.map((l) => (l.key === 'arg' ? `arg ${l.arg}` : l.key)).join(' › ');
    return el('div', { className: 'table-wrap' },
      this.truncated ? el('div', { className: 'warn-text' }, 'More than 10,000 groups: the table is cut.') : null,
      el('table', { className: 'stats pivot-table' },
        el('thead', null, el('tr', null, el('th', null, title), ...COLUMNS.map((c) => el('th', { className: 'num' }, c.title)))),
        el('tbody', null, ...body)));
  }

  view(area) {
    return el('div', { className: 'pivot' }, this.controls(area), this.table());
  }
}
