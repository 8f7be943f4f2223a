// The query page's side list of a trace database's tables and views, each
// with its columns (a click on a column writes its name at the editor's
// cursor) and the one line docs/SCHEMA.md says about it.
//
// Asked of the trace itself through POST /query: sqlite_master names the
// tables, and `SELECT * FROM T LIMIT 0` answers T's columns with no rows.
// (pragma_table_info would be one statement, but the SQL endpoint's
// authorizer refuses pragmas, and reading a column list is no reason to
// open that door.) The lists are asked in parallel, a few at a time.

import { api } from './api.js';
import { el, clear } from './dom.js';

// What a row of each table is, from docs/SCHEMA.md's table of tables.
const ABOUT = {
  meta: 'fact about the trace (format, start_ns, end_ns, events)',
  strings: 'interned string; *_id columns point here',
  providers: 'trace provider',
  processes: 'process',
  threads: 'thread',
  tracks: 'timeline track (thread, async, counter, cpu)',
  track_depths: '(track, depth): its counts and lod levels',
  extents: 'run of consecutive ids of one (track, depth)',
  slices: 'slice; dur -1 when it never ended',
  args: 'argument of an arg set',
  counters: 'counter point',
  flows: 'flow arrow',
  sched: 'cpu run of a thread',
  logs: 'log record',
  blobs: 'blob record',
  kernel_objects: 'koid (the last record wins)',
  userspace_objects: 'userspace object record',
  profiler: 'profiler record',
  diagnostics: 'damage counter',
  slice_view: 'slice, with its name and category joined',
  arg_view: 'argument, with its key and value joined',
  name_index: 'chunk of up to 256 slices of one name (search reads it)',
  name_stats: 'slice name: count, total, max, sketch',
  track_names: '(track, slice name) over the whole trace',
  track_stacks: 'chunk of a track\'s call paths, packed',
  lod: 'chunk of level-of-detail summaries',
};

const PARALLEL = 4;

export class SchemaList {
  // base: the trace's API path; onPick(column name): a column was clicked.
  constructor(base, onPick) {
    this.base = base;
    this.onPick = onPick;
    this.root = el('div', { className: 'schema-list' }, el('div', { className: 'muted' }, 'loading the tables…'));
  }

  async load() {
    let names;
    try {
      const r = await this.ask("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') ORDER BY type = 'view' DESC, name");
      names = r.rows;
    } catch (e) {
      clear(this.root);
      this.root.append(el('div', { className: 'panel-error' }, 'Could not list the tables: ' + e.message));
      return;
    }
    clear(this.root);
    const items = names.map(([name, type]) => this.item(name, type));
    this.root.append(...items.map((x) => x.node));
    let next = 0;
    const worker = async () => {
      while (next < items.length) {
        const x = items[next++];
        try {
          x.fill((await this.ask(`SELECT * FROM "${x.name.replace(/"/g, '""')}" LIMIT 0`)).columns || []);
        } catch {
          x.fill(null);
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
  }

  ask(sql) {
    return api(`${this.base}/query`, { method: 'POST', body: sql, exact: true });
  }

  // One table: a <details> whose summary is its name and what a row is.
  item(name, type) {
    const cols = el('ul', { className: 'schema-columns' });
    const node = el('details', { className: 'schema-table', dataset: { table: name } },
      el('summary', null, el('code', null, name), type === 'view' ? el('span', { className: 'muted' }, ' view') : null,
        el('div', { className: 'schema-about muted' }, ABOUT[name] ? 'one row per ' + ABOUT[name] : '')),
      cols);
    const fill = (columns) => {
      if (!columns) {
        cols.append(el('li', { className: 'muted' }, 'could not read its columns'));
        return;
      }
      for (const c of columns) {
        cols.append(el('li', null, el('button', {
          className: 'link schema-column', title: `Write ${c} in the editor`, onclick: () => this.onPick(c),
        }, c)));
      }
    };
    return { name, node, fill };
  }
}

// Writes text at the textarea's cursor (over its selection) and puts the
// cursor after it.
export function insertAtCursor(ta, text) {
  const s = ta.selectionStart ?? ta.value.length;
  const e = ta.selectionEnd ?? s;
  ta.value = ta.value.slice(0, s) + text + ta.value.slice(e);
  ta.focus();
  ta.setSelectionRange(s + text.length, s + text.length);
}
