// The bottom panel of the timeline: details of the selected slice (args,
// parent, flows), of a CPU run, log message or counter value, and the
// statistics of a selected area. Text only: every value from the trace goes
// through textContent.

import { api } from './api.js';
import { el, clear } from './dom.js';
import { colorFor, fmtCount, fmtDur, fmtTime } from './format.js';

const COLUMNS = [
  { key: 'name', title: 'Name', num: false },
  { key: 'category', title: 'Category', num: false },
  { key: 'count', title: 'Count', num: true },
  { key: 'total_dur', title: 'Total', num: true, dur: true },
  { key: 'avg', title: 'Average', num: true, dur: true },
  { key: 'max_dur', title: 'Max', num: true, dur: true },
];

export class DetailsPanel {
  constructor(page) {
    this.page = page;
    this.title = el('div', { className: 'panel-title' }, 'Details');
    this.content = el('div', { className: 'panel-content' });
    this.root = el('section', { className: 'panel', 'aria-label': 'Details' }, this.title, this.content);
    this.sort = { key: 'total_dur', desc: true };
    this.areaToken = 0;
    this.showEmpty();
  }

  set(title, ...nodes) {
    this.title.textContent = title;
    clear(this.content);
    this.content.append(...nodes);
  }

  showEmpty() {
    this.areaToken++;
    this.set('Details', el('div', { className: 'panel-empty' },
      'Click a slice to see its details. Shift+drag (or "Select area") selects a time range for statistics.'));
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
    const origin = page.traceStart;
    const track = page.byTrackId.get(Number(info.track_id));
    const rows = [];
    const row = (k, ...v) => rows.push(el('tr', null, el('th', null, k), el('td', null, ...v)));
    const swatch = el('span', { className: 'swatch', style: { background: colorFor(info.name).fill } });
    row('Name', swatch, el('span', { className: 'slice-name' }, info.name));
    row('Category', info.category || '—');
    row('Start', fmtTime(info.ts - origin), el('span', { className: 'raw' }, ` (${info.ts} ns)`));
    row('Duration', fmtDur(info.dur), info.dur >= 0 ? el('span', { className: 'raw' }, ` (${info.dur} ns)`) : '');
    if (info.track_kind === 'async') {
      row('Track', track ? `${track.title} (async, ${track.subtitle})` : `async track ${info.track_id}`);
    } else {
      const tname = track ? track.title : 'thread';
      row('Thread', `${tname} ${info.tid ?? ''}`.trim());
    }
    const pname = track && track.group ? track.group.title : 'process';
    row('Process', info.pid !== null && info.pid !== undefined ? `${pname} ${info.pid}` : '—');
    row('Depth', String(info.depth ?? '—'));
    row('Slice id', String(info.id));
    if (info.parent_id !== null && info.parent_id !== undefined) {
      this.parentCell = el('span', null, this.link(`slice ${info.parent_id}`, () => page.selectSlice(info.parent_id, { reveal: true }), 'parent-link'));
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
    this.set('Slice', el('div', { className: 'panel-cols' },
      el('div', { className: 'col' }, el('table', { className: 'kv slice-info' }, ...rows)),
      el('div', { className: 'col' }, el('h3', null, 'Arguments'), args),
      el('div', { className: 'col' }, el('h3', null, `Flows (${flows.length})`), this.flowsBox)));
  }

  async fillParent(info) {
    const cell = this.parentCell;
    try {
      const p = await api(`${this.page.base}/slices/${info.parent_id}`, { exact: true });
      if (cell !== this.parentCell) return;
      clear(cell);
      cell.append(this.link(p.name, () => this.page.selectSlice(info.parent_id, { reveal: true }), 'parent-link'),
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
        this.link(`slice ${other}`, () => this.page.selectSlice(other, { reveal: true }), 'flow-link')));
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
        this.link(other ? other.name : `slice ${otherId}`, () => this.page.selectSlice(otherId, { reveal: true }), 'flow-link'),
        el('span', { className: 'raw' }, `${where}, flow ${flow.flow_id}`)));
    }
  }

  showItem(kind, it, track) {
    const origin = this.page.traceStart;
    const rows = [];
    const row = (k, v) => rows.push(el('tr', null, el('th', null, k), el('td', null, v)));
    if (kind === 'sched') {
      const name = this.page.threadNames.get(`${it.pid}/${it.tid}`) || 'thread';
      row('Thread', `${name} ${it.tid}`);
      row('Process', String(it.pid));
      row('CPU', String(it.cpu));
      row('Start', fmtTime(it.ts - origin));
      row('Duration', fmtDur(it.dur));
      row('Priority', String(it.priority));
      row('End state', it.end_state || '— (still running at the end of the trace)');
      this.set('CPU run', el('table', { className: 'kv' }, ...rows));
    } else if (kind === 'log') {
      row('Time', fmtTime(it.ts - origin));
      row('Process', String(it.pid));
      row('Thread', String(it.tid));
      row('Message', el('span', { className: 'log-message' }, it.message));
      this.set('Log message', el('table', { className: 'kv' }, ...rows));
    } else if (kind === 'counter') {
      row('Counter', track.title);
      row('Time', fmtTime(it.ts - origin));
      row('Value', String(it.value));
      if (it.merged) {
        row('Summarised', `${it.merged} points up to ${fmtTime(it.last_ts - origin)}`);
        row('Min / max', `${it.min} / ${it.max}`);
      }
      this.set('Counter', el('table', { className: 'kv' }, ...rows));
    }
  }

  async showArea(area) {
    const token = ++this.areaToken;
    const page = this.page;
    const s = Math.round(area.start);
    const e = Math.round(area.end);
    this.set('Area', el('div', { className: 'panel-empty' }, `Aggregating ${fmtDur(e - s)}…`));
    page.areaLoading = true;
    let r;
    try {
      r = await api(`${page.base}/stats?start=${Math.max(s, 0)}&end=${Math.max(e, 0)}&limit=10000`);
    } catch (err) {
      if (token === this.areaToken) this.showError('Could not aggregate: ' + err.message);
      page.areaLoading = false;
      return;
    }
    page.areaLoading = false;
    if (token !== this.areaToken) return;
    this.areaNames = (r.names || []).map((n) => ({ ...n, avg: n.count ? n.total_dur / n.count : 0 }));
    this.areaTruncated = !!r.truncated;
    this.areaRange = { s, e };
    this.renderArea();
  }

  renderArea() {
    const { s, e } = this.areaRange;
    const origin = this.page.traceStart;
    const { key, desc } = this.sort;
    const col = COLUMNS.find((c) => c.key === key);
    const names = [...this.areaNames].sort((a, b) => {
      const x = a[key];
      const y = b[key];
      const c = col.num ? x - y : String(x).localeCompare(String(y));
      return desc ? -c : c;
    });
    const head = el('tr', null, ...COLUMNS.map((c) => el('th', {
      className: (c.num ? 'num ' : '') + 'sortable' + (c.key === key ? (desc ? ' sorted-desc' : ' sorted-asc') : ''),
      title: 'Sort by ' + c.title.toLowerCase(),
      onclick: () => {
        this.sort = { key: c.key, desc: c.key === key ? !desc : c.num };
        this.renderArea();
      },
    }, c.title)));
    const body = names.map((n) => el('tr', null, ...COLUMNS.map((c) => el('td', { className: c.num ? 'num' : '' },
      c.dur ? fmtDur(n[c.key]) : c.num ? fmtCount(n[c.key]) : (c.key === 'name' ? n.name : n.category || '—')))));
    const total = names.reduce((a, n) => a + n.count, 0);
    const note = el('div', { className: 'area-note' },
      `${fmtTime(s - origin)} – ${fmtTime(e - origin)} (${fmtDur(e - s)}): ${fmtCount(total)} slices, ${names.length} names${this.areaTruncated ? ' (list cut)' : ''}. `,
      el('span', { className: 'muted' }, 'All tracks, every slice that overlaps the range; durations are whole slices (not clipped to the range). Click a column to sort.'));
    this.set('Area', note, el('div', { className: 'table-wrap' }, el('table', { className: 'stats' }, el('thead', null, head), el('tbody', null, ...body))));
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
