// The area selection's panel: per-name figures clipped to the range on the
// chosen tracks (count, wall time, self time, average, max; sortable; a
// click on a name lists its slices, a click on a slice selects it), and the
// flame graph of the same selection. Both are computed by the server
// (/area, /flame); this module only shows them. A third tab pivots the
// selection by name, thread, process, category or an argument (pivot.js).

import { api } from './api.js';
import { el, clear } from './dom.js';
import { fmtCount, fmtDur, fmtTime } from './format.js';
import { FlameGraph } from './flame.js';
import { PivotTable } from './pivot.js';

// Nodes of the flame graph's first answer (the server's default limit).
const FLAME_FIRST = 10000;

const COLUMNS = [
  { key: 'name', title: 'Name', num: false },
  { key: 'count', title: 'Count', num: true },
  { key: 'wall', title: 'Wall time', num: true, dur: true },
  { key: 'self', title: 'Self time', num: true, dur: true },
  { key: 'avg', title: 'Average', num: true, dur: true },
  { key: 'max', title: 'Max', num: true, dur: true },
];

export class AreaPanel {
  // page: the timeline page; panel: the DetailsPanel it draws into.
  constructor(page, panel) {
    this.page = page;
    this.panel = panel;
    this.sort = { key: 'wall', desc: true };
    this.tab = 'table';
    this.token = 0;
    this.names = [];
    this.flame = null;
    this.pivot = new PivotTable(page.base, () => { if (this.tab === 'pivot') this.render(); });
  }

  cancel() {
    this.token++;
    this.page.areaLoading = false;
  }

  async show(area) {
    const token = ++this.token;
    const page = this.page;
    this.area = area;
    this.flame = null;
    this.listName = null;
    if (area.tracks.size === 0) {
      this.names = [];
      this.render();
      return;
    }
    this.panel.set('Area', el('div', { className: 'panel-empty' }, `Aggregating ${fmtDur(area.end - area.start)} on ${area.tracks.size} tracks…`));
    page.areaLoading = true;
    try {
      const r = await api(`${page.base}/area?${area.query()}&limit=10000`);
      if (token !== this.token) return;
      this.names = r.names || [];
      this.truncated = !!r.truncated;
      if (this.tab === 'flame') await this.loadFlame(token);
      if (this.tab === 'pivot') await this.pivot.load(area);
      else this.pivot.tree = null; // asked again when its tab opens
    } catch (err) {
      if (token === this.token) this.panel.showError('Could not aggregate: ' + err.message);
      if (token === this.token) page.areaLoading = false;
      return;
    }
    if (token !== this.token) return;
    page.areaLoading = false;
    this.render();
  }

  // The flame graph in two steps: as far as FLAME_FIRST nodes, at once
  // (over the whole trace, from the stacks ingest stored), then, when that
  // one was cut, as far as a million, which may read every slice of the
  // range: a random-stack trace of 23M slices takes 14 s for it, and the
  // first graph shows meanwhile.
  async loadFlame(token) {
    const url = `${this.page.base}/flame?${this.area.query()}`;
    let r = await api(`${url}&limit=${FLAME_FIRST}`);
    if (token !== this.token) return;
    this.flame = new FlameGraph(r.nodes || [], !!r.truncated,
      r.truncated ? `a first graph, cut at ${fmtCount(FLAME_FIRST)} nodes: building the whole one…` : '');
    if (!r.truncated) return;
    this.render();
    r = await api(`${url}&limit=1000000`);
    if (token !== this.token) return;
    this.flame = new FlameGraph(r.nodes || [], !!r.truncated);
  }

  async setTab(tab) {
    this.tab = tab;
    if (tab === 'flame' && !this.flame && this.area.tracks.size) {
      const token = ++this.token;
      this.page.areaLoading = true;
      try {
        await this.loadFlame(token);
      } catch (err) {
        if (token === this.token) this.panel.showError('Could not build the flame graph: ' + err.message);
      }
      if (token !== this.token) return;
      this.page.areaLoading = false;
    }
    if (tab === 'pivot' && !this.pivot.tree && this.area.tracks.size) {
      const token = ++this.token;
      this.page.areaLoading = true;
      this.render();
      await this.pivot.load(this.area);
      if (token !== this.token) return;
      this.page.areaLoading = false;
    }
    this.render();
  }

  header() {
    const a = this.area;
    const origin = this.page.view.start;
    const tab = (id, title) => el('button', {
      className: 'tab' + (this.tab === id ? ' active' : ''), dataset: { tab: id }, onclick: () => this.setTab(id),
    }, title);
    const total = this.names.reduce((s, n) => s + n.count, 0);
    return el('div', { className: 'area-head' }, tab('table', 'Slices by name'), tab('pivot', 'Pivot'), tab('flame', 'Flame graph'),
      this.noteButton(),
      el('span', { className: 'area-note' },
        `${fmtTime(a.start - origin)} – ${fmtTime(a.end - origin)} (${fmtDur(a.end - a.start)}) on ${a.tracks.size} track${a.tracks.size === 1 ? '' : 's'}: ` +
        `${fmtCount(total)} slices, ${this.names.length} names${this.truncated ? ' (list cut)' : ''}. `),
      el('span', { className: 'muted' }, 'Times count only the part inside the range. Click a track\'s name to add or remove it.'));
  }

  // A note on the area's range (on its track when it has exactly one).
  noteButton() {
    return el('button', {
      className: 'add-area-note', onclick: () => this.page.notes.addForArea(this.area),
      title: 'Write a note on this range (on its track when the area has exactly one), for everyone who opens the trace',
    }, 'Add a note…');
  }

  render() {
    if (this.area.tracks.size === 0) {
      this.panel.set('Area', el('div', { className: 'panel-empty' }, 'No slice track in the selection: click a track\'s name to add it. '),
        this.noteButton());
      return;
    }
    if (this.tab === 'flame' && this.flame) {
      this.panel.set('Area', this.header(), this.flame.root);
      this.flame.draw(Math.max(200, this.panel.content.clientWidth - 24));
      return;
    }
    if (this.tab === 'pivot') {
      this.panel.set('Area', this.header(), this.pivot.view(this.area));
      return;
    }
    const { key, desc } = this.sort;
    const col = COLUMNS.find((c) => c.key === key);
    const names = [...this.names].sort((a, b) => {
      const c = col.num ? a[key] - b[key] : String(a[key]).localeCompare(String(b[key]));
      return desc ? -c : c;
    });
    const head = el('tr', null, ...COLUMNS.map((c) => el('th', {
      className: (c.num ? 'num ' : '') + 'sortable' + (c.key === key ? (desc ? ' sorted-desc' : ' sorted-asc') : ''),
      title: 'Sort by ' + c.title.toLowerCase(), dataset: { key: c.key },
      onclick: () => {
        this.sort = { key: c.key, desc: c.key === key ? !desc : c.num };
        this.render();
      },
    }, c.title)));
    const body = names.map((n) => el('tr', { className: 'name-row' + (n.name === this.listName ? ' open' : ''), onclick: () => this.listSlices(n.name) },
      ...COLUMNS.map((c) => el('td', { className: c.num ? 'num' : '' },
        c.dur ? fmtDur(n[c.key]) : c.num ? fmtCount(n[c.key]) : n.name))));
    this.list = el('div', { className: 'area-slices' });
    this.panel.set('Area', this.header(), el('div', { className: 'area-cols' },
      el('div', { className: 'table-wrap' }, el('table', { className: 'stats area-table' }, el('thead', null, head), el('tbody', null, ...body))),
      this.list));
    if (this.listName) this.fillList();
  }

  listSlices(name) {
    this.listName = name;
    this.render();
  }

  async fillList() {
    const token = this.token;
    const name = this.listName;
    const list = this.list;
    list.append(el('div', { className: 'muted' }, 'loading…'));
    let r;
    try {
      r = await api(`${this.page.base}/area?${this.area.query()}&name=${encodeURIComponent(name)}&limit=500`);
    } catch (e) {
      clear(list);
      list.append(el('div', { className: 'panel-error' }, e.message));
      return;
    }
    if (token !== this.token || list !== this.list) return;
    clear(list);
    const origin = this.page.view.start;
    list.append(el('h3', null, `${name}: ${fmtCount(r.slices.length)}${r.truncated ? '+' : ''} slices`));
    for (const s of r.slices) {
      list.append(el('div', { className: 'area-slice' },
        el('button', { className: 'link slice-link', onclick: () => this.page.selection.selectSlice(s.id, { reveal: true, keepArea: true }) }, `slice ${s.id}`),
        el('span', { className: 'raw' }, ` at ${fmtTime(s.ts - origin)}, ${fmtDur(s.wall)} in range of ${fmtDur(s.dur)}`)));
    }
  }
}
