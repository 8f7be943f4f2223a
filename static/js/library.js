// The library page: every trace on the server, newest first, with a filter
// box as powerful as GET /api/traces (libfilter.js; its text lives in the
// URL), labels, pins and descriptions edited in place, two traces picked
// for comparison, a search for slice names across every trace, the space
// used and what retention removes next; uploads (button or drag and drop,
// one or many files) with progress for the upload and then for the ingest,
// and deletion with a confirmation.

import { api, uploadFile } from './api.js';
import { el, clear } from './dom.js';
import { fmtBytes, fmtCount, fmtDate, fmtDur } from './format.js';
import { labelWord, matchesFilter, parseFilter, quotedSuggestion } from './libfilter.js';
import { isDamage, shownBytes } from './pages.js';

const POLL_MS = 400;
const PAGE = 200;       // traces per page of the list
const FETCH_DELAY = 150; // ms of quiet typing before the server is asked
const SORTABLE = { Name: 'name', Size: 'size', Uploaded: 'created', Duration: 'duration' };

export class LibraryPage {
  constructor(root) {
    this.root = root;
    this.traces = [];
    const url = new URLSearchParams(location.search);
    this.filterText = url.get('filter') || '';
    this.findText = url.get('find') || '';
    this.filter = parseFilter(this.filterText);
    this.nextCursor = null;
    this.total = 0;
    this.confirming = null; // id of the trace whose delete asks for confirmation
    this.editing = null;    // id of the trace whose metadata is being edited
    this.picked = [];       // ids picked for comparison, oldest pick first
    this.pollTimer = 0;
    this.fetchTimer = 0;
    this.loadError = null;
    this.build();
    this.refresh();
    if (this.findText) this.find();
    window.__viewer = {
      page: 'library',
      traces: () => this.traces.map((t) => ({ id: t.id, name: t.name, status: t.status })),
    };
  }

  build() {
    document.title = 'Traces — trace viewer';
    this.fileInput = el('input', {
      type: 'file', multiple: true, className: 'file-input', id: 'file-input',
      onchange: () => {
        this.uploadAll([...this.fileInput.files]);
        this.fileInput.value = '';
      },
    });
    this.filterInput = el('input', {
      type: 'search', className: 'filter', value: this.filterText,
      placeholder: 'Filter: name  build=1234  status:ready', // the rest in the title: it must fit the box
      title: 'Words: text in the name, description or a label · key=value: a label equals · label:key · ' +
        'key="value with spaces" · status:ready|failed|live|… · format:fxt|xray · pinned:yes|no · ' +
        'after:/before:YYYY-MM-DD · min:/max:10M · size>1MB, size<=10M · "quoted words" · ' +
        'sort:name|size|created|duration (-sort for descending)',
      'aria-label': 'Filter traces',
      oninput: () => this.setFilter(this.filterInput.value, false),
    });
    this.findInput = el('input', {
      type: 'search', className: 'find', value: this.findText, placeholder: 'Find slices named… in every trace',
      'aria-label': 'Find slices by name across traces',
      onkeydown: (e) => { if (e.key === 'Enter') this.find(); },
    });
    this.findBox = el('div', { className: 'find-results' });
    this.compareBar = el('div', { className: 'compare-bar' });
    this.usage = el('div', { className: 'lib-usage' });
    this.more = el('button', { className: 'load-more', onclick: () => this.loadMore() }, 'Show more');
    this.uploads = el('div', { className: 'uploads' });
    this.tbody = el('tbody');
    this.empty = el('div', { className: 'empty' });
    this.status = el('div', { className: 'lib-status' });
    const table = el('table', { className: 'traces' },
      el('thead', null, el('tr', null,
        ...['Name', 'Format', 'Size', 'Status', 'Events', 'Uploaded', 'Duration', 'Labels', ''].map((h) => this.header(h)))),
      this.tbody);
    const uploadBtn = el('button', { className: 'primary', onclick: () => this.fileInput.click() }, 'Upload traces…');
    this.upLabels = el('textarea', {
      className: 'upload-labels', rows: 1, wrap: 'off', 'aria-label': 'Labels for the next uploads, one key=value per line',
      placeholder: 'labels: build=1234 (one per line)', title: 'Labels given to each trace uploaded next: one key=value per line',
      oninput: () => {
        this.upLabels.style.height = 'auto';
        this.upLabels.style.height = Math.min(this.upLabels.scrollHeight + 2, 110) + 'px';
      },
    });
    this.upDesc = el('input', {
      className: 'upload-description', 'aria-label': 'Description for the next uploads', placeholder: 'description',
      title: 'A description given to each trace uploaded next',
    });
    const upOptions = el('div', { className: 'upload-options' }, this.upLabels, this.upDesc,
      el('span', { className: 'hint', title: 'An XRay log picked or dropped with its instrumented binary (or the YAML of llvm-xray extract --symbolize) is uploaded with it as one trace' },
        'an XRay log and its binary picked together make one trace'));
    this.dropHint = el('div', { className: 'drop-overlay' }, el('div', null, 'Drop trace files to upload'));
    this.root.append(
      el('header', { className: 'topbar' }, el('a', { className: 'brand', href: '/' }, 'Trace viewer'),
        el('span', { className: 'topbar-sub' }, 'Fuchsia trace (FXT) and XRay files'),
        el('a', { className: 'captures-link', href: '/?page=captures', title: 'Record a trace from connected providers' }, 'Captures'),
        el('a', { className: 'trends-link', href: '/?page=trends', title: 'One slice name\'s durations across the traces' }, 'Trends'),
        el('a', { className: 'library-query-link', href: '/?page=query', title: 'One SQL query over many traces' }, 'Query traces')),
      el('main', { className: 'library' },
        el('div', { className: 'lib-toolbar' }, this.filterInput, uploadBtn, this.fileInput,
          el('span', { className: 'hint' }, 'or drop files anywhere on this page')),
        upOptions,
        el('div', { className: 'lib-toolbar' }, this.findInput,
          el('button', { className: 'find-go', onclick: () => this.find() }, 'Find'), this.compareBar),
        this.findBox, this.uploads, this.status, this.usage, table, this.empty, this.more),
      this.dropHint);
    this.setupDrop();
  }

  setupDrop() {
    let depth = 0;
    const hasFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes('Files');
    document.addEventListener('dragenter', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth++;
      this.dropHint.classList.add('visible');
    });
    document.addEventListener('dragover', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    });
    document.addEventListener('dragleave', () => {
      depth = Math.max(0, depth - 1);
      if (depth === 0) this.dropHint.classList.remove('visible');
    });
    document.addEventListener('drop', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth = 0;
      this.dropHint.classList.remove('visible');
      this.uploadAll([...e.dataTransfer.files]);
    });
  }

  header(h) {
    const key = SORTABLE[h];
    if (h === 'Events') return el('th', { title: 'Event records, CPU runs and log records ("so far": counted before ingest ended)' }, h);
    if (!key) return el('th', null, h);
    const th = el('th', {
      className: 'sortable', title: 'Sort by ' + h.toLowerCase(),
      onclick: () => {
        // names go A→Z first; sizes, dates and durations largest first
        const cur = this.filter.params.get('sort') || '-created';
        const next = key === 'name' ? (cur === 'name' ? '-name' : 'name') : cur === '-' + key ? key : '-' + key;
        const text = this.filterText.replace(/(^|\s)sort:\S+/g, '').trim();
        this.setFilter((text ? text + ' ' : '') + 'sort:' + next, true);
      },
    }, h);
    th.dataset.key = key;
    (this.sortHeads ||= []).push(th);
    return th;
  }

  // The sorted column's header says which way.
  markSort() {
    const cur = this.filter.params.get('sort') || '-created';
    for (const th of this.sortHeads || []) {
      const k = th.dataset.key;
      const h = Object.keys(SORTABLE).find((x) => SORTABLE[x] === k);
      th.textContent = h + (cur === k ? ' ▲' : cur === '-' + k ? ' ▼' : '');
    }
  }

  // The filter box changed (or a click changed it): the URL follows, the
  // rows shown follow at once, the server is asked after a pause.
  setFilter(text, now) {
    this.filterText = text;
    if (this.filterInput.value !== text) this.filterInput.value = text;
    this.filter = parseFilter(text);
    this.saveUrl();
    this.renderTable();
    clearTimeout(this.fetchTimer);
    this.fetchTimer = setTimeout(() => this.refresh(), now ? 0 : FETCH_DELAY);
  }

  saveUrl() {
    const q = new URLSearchParams();
    if (this.filterText.trim()) q.set('filter', this.filterText.trim());
    if (this.findText.trim()) q.set('find', this.findText.trim());
    const s = q.toString();
    history.replaceState(null, '', s ? '/?' + s : '/');
  }

  listUrl(cursor) {
    const q = new URLSearchParams(this.filter.params);
    q.set('limit', String(PAGE));
    if (cursor) q.set('cursor', cursor);
    return '/api/traces?' + q.toString();
  }

  async refresh() {
    clearTimeout(this.pollTimer);
    const shown = Math.max(PAGE, this.traces.length);
    const asked = this.filter.params.toString();
    try {
      // the pages already shown are read again, so polling keeps them
      let r = await api(this.listUrl(null), { exact: true });
      let traces = r.traces || [];
      while (r.next_cursor && traces.length < shown) {
        r = await api(this.listUrl(r.next_cursor), { exact: true });
        traces = traces.concat(r.traces || []);
      }
      this.traces = traces;
      this.nextCursor = r.next_cursor || null;
      this.total = r.total ?? traces.length;
      this.totalFor = asked; // the filter the total counts for
      this.loadError = null;
    } catch (e) {
      this.loadError = e.message;
    }
    this.picked = this.picked.filter((id) => this.traces.some((t) => t.id === id && t.status === 'ready'));
    this.renderTable();
    this.loadUsage();
    const busy = this.traces.some((t) => t.status === 'queued' || t.status === 'ingesting' || t.status === 'live');
    if (busy) this.pollTimer = setTimeout(() => this.refresh(), 1000);
  }

  async loadMore() {
    if (!this.nextCursor) return;
    try {
      const r = await api(this.listUrl(this.nextCursor), { exact: true });
      this.traces = this.traces.concat(r.traces || []);
      this.nextCursor = r.next_cursor || null;
    } catch (e) {
      this.status.textContent = 'Could not load more traces: ' + e.message;
    }
    this.renderTable();
  }

  async loadUsage() {
    let u;
    try {
      u = await api('/api/library', { exact: true });
    } catch {
      return;
    }
    clear(this.usage);
    const parts = [plural(u.traces, 'trace'), `${fmtBytes(u.stored_bytes)} stored`];
    if (u.pinned) parts.push(`${fmtCount(u.pinned)} pinned`);
    const bounds = [];
    if (u.retain_days) bounds.push(`${u.retain_days} days`);
    if (u.retain_bytes) bounds.push(fmtBytes(u.retain_bytes));
    parts.push(bounds.length ? 'kept: ' + bounds.join(' and ') : 'kept: forever (no retention bounds)');
    this.usage.append(parts.join(' · '));
    const next = (u.next_removals || [])[0];
    if (next) {
      this.usage.append(el('span', { className: 'next-removal' }, ` · next to go: ${next.name} (${fmtBytes(next.stored_bytes)}` +
        (next.remove_at ? `, on ${fmtDate(next.remove_at)})` : ', when space runs out)')));
    }
  }

  renderTable() {
    clear(this.tbody);
    this.markSort();
    this.status.textContent = this.loadError ? 'Could not load the trace list: ' + this.loadError
      : this.filter.errors.length ? 'Not understood (left out): ' + this.filter.errors.join(' ') : '';
    // once the server has answered this filter its list is the answer (its
    // q also finds the text of notes, which the list does not carry);
    // before that, the rows here that match follow the typing
    const answered = this.totalFor === this.filter.params.toString();
    const shown = answered ? [...this.traces] : this.traces.filter((t) => matchesFilter(t, this.filter.params));
    // The server sorts names in byte order (run-215 before run-99); with
    // the whole list here, the viewer sorts them as people read them.
    const sort = this.filter.params.get('sort');
    if ((sort === 'name' || sort === '-name') && !this.nextCursor) {
      const dir = sort === 'name' ? 1 : -1;
      shown.sort((a, b) => dir * (naturalCompare(a.name || '', b.name || '') || (a.id - b.id)));
    }
    for (const t of shown) {
      this.tbody.append(this.row(t));
      if (this.editing === t.id) this.tbody.append(this.editor(t));
    }
    const filtered = this.filterText.trim() !== '';
    if (this.traces.length === 0 && !filtered) {
      this.empty.textContent = 'No traces yet. Upload an .fxt or XRay file with the button above, or drop files here.';
    } else if (shown.length === 0) {
      this.empty.textContent = 'No trace matches the filter.';
      // device=Pixel 7 Pro is the label device=Pixel and two words: offer the quoted form
      const meant = quotedSuggestion(this.filterText);
      if (meant) {
        this.empty.append(' A label value with spaces needs quotes: ', el('button', {
          className: 'link-button quoted-suggestion', title: 'Filter by this instead',
          onclick: () => this.setFilter(meant, true),
        }, meant));
      }
    } else if (filtered && this.totalFor !== this.filter.params.toString()) {
      // typed, the server not asked yet: the rows here that match, not a total
      this.empty.textContent = `${plural(shown.length, 'trace')} here ${shown.length === 1 ? 'matches' : 'match'}, counting…`;
    } else if (filtered) {
      this.empty.textContent = `${plural(this.total, 'trace')} ${this.total === 1 ? 'matches' : 'match'}` + (this.total > shown.length ? `, ${fmtCount(shown.length)} shown` : '');
    } else {
      this.empty.textContent = this.total > shown.length ? `${fmtCount(shown.length)} of ${fmtCount(this.total)} shown` : '';
    }
    this.more.style.display = this.nextCursor ? '' : 'none';
    this.renderCompareBar();
  }

  renderCompareBar() {
    clear(this.compareBar);
    if (this.picked.length === 0) {
      this.compareBar.append(el('span', { className: 'hint' }, 'tick two ready traces to compare them'));
      return;
    }
    const names = this.picked.map((id) => (this.traces.find((t) => t.id === id) || {}).name || '#' + id);
    if (this.picked.length === 2) {
      this.compareBar.append(el('a', {
        className: 'compare-go primary-link', href: `/?page=compare&a=${this.picked[0]}&b=${this.picked[1]}`,
      }, `Compare ${names[0]} → ${names[1]}`));
    } else {
      this.compareBar.append(el('span', { className: 'hint' }, `${names[0]} picked: tick one more to compare`));
    }
  }

  togglePick(t) {
    const i = this.picked.indexOf(t.id);
    if (i >= 0) this.picked.splice(i, 1);
    else {
      this.picked.push(t.id);
      if (this.picked.length > 2) this.picked.shift();
    }
    this.renderTable();
  }

  // A click on a label chip: the label joins the filter, quoted when its
  // value holds spaces or quotes (labelWord), so it is read back whole.
  addLabelFilter(k, v) {
    if (this.filter.params.getAll('label').includes(`${k}=${v}`)) return;
    this.setFilter((this.filterText.trim() + ' ' + labelWord(k, v)).trim(), true);
  }

  // Search across traces: which traces hold slices named like the text.
  async find() {
    this.findText = this.findInput.value.trim();
    this.saveUrl();
    clear(this.findBox);
    if (!this.findText) return;
    let r;
    try {
      r = await api('/api/search?q=' + encodeURIComponent(this.findText), { exact: true });
    } catch (e) {
      this.findBox.append(el('div', { className: 'error-text' }, 'Search failed: ' + e.message));
      return;
    }
    const head = el('div', { className: 'find-head' },
      `Slices named like “${r.query}”: ${fmtCount(r.traces.length)}${r.truncated ? '+ traces' : r.traces.length === 1 ? ' trace' : ' traces'}`,
      r.unindexed ? ` (${r.unindexed} not indexed yet)` : '',
      el('button', { className: 'find-close', onclick: () => { this.findInput.value = ''; this.find(); } }, '×'));
    const rows = r.traces.map((t) => el('tr', { dataset: { id: t.id } },
      // the trace opens searching for the text, on its first match
      // a trace still growing is searched as it is now (its status says so)
      el('td', { className: 'name' }, el('a', { href: `/?trace=${t.id}&q=${encodeURIComponent(this.findText)}`, className: 'trace-link' }, t.name),
        t.status && t.status !== 'ready' ? el('span', { className: 'find-status' }, ' (' + t.status + ')') : ''),
      el('td', { className: 'num' }, fmtCount(t.count)),
      el('td', { className: 'num' }, fmtDur(t.total_ns)),
      el('td', { className: 'num' }, fmtDur(t.p50_ns)),
      el('td', { className: 'num' }, fmtDur(t.p95_ns)),
      el('td', { className: 'num' }, fmtDur(t.max_ns)),
      el('td', { className: 'find-names' }, t.names.join(', ') + (t.more_names ? ` +${t.more_names}` : ''))));
    this.findBox.append(head, rows.length ? el('table', { className: 'traces find-table' },
      el('thead', null, el('tr', null, ...['Trace', 'Count', 'Total', 'p50 ≈', 'p95 ≈', 'Max', 'Names'].map((h) => el('th', null, h)))),
      el('tbody', null, ...rows)) : el('div', { className: 'empty' }, 'No trace holds a slice named like that.'));
  }

  async patch(t, body) {
    try {
      await api('/api/traces/' + encodeURIComponent(t.id), {
        method: 'PATCH', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' },
      });
      return null;
    } catch (e) {
      return e.message;
    }
  }

  // The inline editor of a trace's name, description and labels. Labels
  // are edited one per line, split at the line's first '=': a value may hold
  // spaces, '=' and anything but control characters (docs/API.md), and a
  // line never does. Only what was changed is sent, so an edit that changes
  // nothing changes nothing (a name the input box cannot hold included).
  editor(t) {
    const name = el('input', { className: 'edit-name', value: t.name || '', 'aria-label': 'Name' });
    const desc = el('textarea', { className: 'edit-description', value: t.description || '', rows: 3, 'aria-label': 'Description' });
    const entries = Object.entries(t.labels || {});
    const labels = el('textarea', {
      className: 'edit-labels', 'aria-label': 'Labels, one key=value per line', wrap: 'off',
      rows: Math.min(8, Math.max(3, entries.length + 1)),
      value: entries.map(([k, v]) => `${k}=${v}`).join('\n'),
      placeholder: 'build=1234\ndevice=Pixel 7 Pro',
      title: 'One label per line: key=value (the value may hold spaces and =)',
    });
    // what the boxes hold before any edit, as the browser reads them back
    const shown = { name: name.value, desc: desc.value };
    const err = el('span', { className: 'error-text' });
    const save = async () => {
      const next = parseLabelLines(labels.value);
      if (next.error) {
        err.textContent = next.error;
        return;
      }
      const patch = labelPatch(t.labels || {}, next.labels);
      if (name.value !== shown.name) patch.name = name.value;
      if (desc.value !== shown.desc) patch.description = desc.value;
      const e = Object.keys(patch).length ? await this.patch(t, patch) : null;
      if (e) {
        err.textContent = e;
        return;
      }
      this.editing = null;
      this.refresh();
    };
    return el('tr', { className: 'edit-row', dataset: { id: t.id } }, el('td', { colSpan: 9 },
      el('div', { className: 'edit-form' },
        el('label', null, 'Name ', name), el('label', null, 'Labels, one per line ', labels), el('label', null, 'Description ', desc),
        el('button', { className: 'primary save-edit', onclick: save }, 'Save'),
        el('button', { onclick: () => { this.editing = null; this.renderTable(); } }, 'Cancel'), err)));
  }

  row(t) {
    const ready = t.status === 'ready';
    // a live trace opens as soon as it has a snapshot, and while its stream is ingested whole;
    // a large upload as soon as its ingest has a preview
    const readable = ready || (t.stream && shownBytes(t) > 0 && t.status !== 'failed') ||
      (t.status === 'ingesting' && t.preview && t.preview.visible_bytes > 0);
    const name = readable ? el('a', { href: '/?trace=' + encodeURIComponent(t.id), className: 'trace-link' }, t.name || '(unnamed)')
      : el('span', null, t.name || '(unnamed)');
    const status = el('td', { className: 'status status-' + t.status }, t.status);
    if (t.status === 'live') {
      status.textContent = '';
      status.append(el('span', { className: 'live-badge', title: 'Being recorded: open it to watch it grow' }, 'LIVE'),
        el('div', { className: 'mini-text' }, fmtBytes(t.size_bytes) + ' received'));
    }
    if (t.status === 'ingesting' || t.status === 'queued') {
      const p = t.progress || {};
      const frac = p.bytes_total ? p.bytes_done / p.bytes_total : 0;
      status.append(el('progress', { max: 1, value: frac, className: 'mini' }));
    }
    if (t.status === 'failed' && t.error) {
      status.append(el('div', { className: 'error-text' }, t.error.message || t.error.code || 'ingest failed'));
    }
    if (ready && t.diagnostics && damage(t.diagnostics) > 0) {
      status.append(el('div', { className: 'warn-text', title: 'See the diagnostics banner in the timeline' },
        'with damaged or dropped data'));
    }
    const dur = ready && t.end_ns !== null && t.end_ns !== undefined && t.start_ns !== null && t.start_ns !== undefined
      ? fmtDur(t.end_ns - t.start_ns) : '—';
    const actions = el('td', { className: 'actions' });
    if (ready) {
      actions.append(el('input', {
        type: 'checkbox', className: 'pick', title: 'Pick for comparison', checked: this.picked.includes(t.id),
        'aria-label': 'Pick ' + (t.name || t.id) + ' for comparison', onchange: () => this.togglePick(t),
      }));
    }
    // a failed upload is only dismissed: nothing of it to pin or describe
    if (t.status !== 'failed') actions.append(el('button', {
      className: 'pin' + (t.pinned ? ' pinned' : ''), title: t.pinned ? 'Pinned: retention keeps it. Click to unpin' : 'Pin: retention never removes it',
      onclick: async () => { const e = await this.patch(t, { pinned: !t.pinned }); if (e) this.status.textContent = e; this.refresh(); },
    }, t.pinned ? 'Pinned' : 'Pin'));
    if (t.status !== 'failed') actions.append(el('button', {
      className: 'edit', title: 'Edit the name, labels and description',
      onclick: () => { this.editing = this.editing === t.id ? null : t.id; this.renderTable(); },
    }, 'Edit'));
    if (t.status === 'failed') {
      // nothing of it is worth keeping: one click, no confirmation (the
      // server also removes failed uploads after --keep-failed)
      actions.append(el('button', {
        className: 'dismiss', title: 'Remove this failed upload from the library',
        onclick: () => this.remove(t),
      }, 'Dismiss'));
    } else if (this.confirming === t.id) {
      actions.append(el('span', { className: 'confirm-text' }, 'Delete this trace?'),
        el('button', { className: 'danger confirm-delete', onclick: () => this.remove(t) }, 'Delete'),
        el('button', { onclick: () => { this.confirming = null; this.renderTable(); } }, 'Cancel'));
    } else {
      actions.append(el('button', {
        className: 'delete', title: 'Delete this trace',
        onclick: () => { this.confirming = t.id; this.renderTable(); },
      }, 'Delete'));
    }
    return el('tr', { dataset: { id: t.id } },
      el('td', { className: 'name' }, name, t.notes > 0 ? el('a', {
        className: 'note-count', href: `/?trace=${encodeURIComponent(t.id)}&notes=1`, title: `${t.notes} note${t.notes === 1 ? '' : 's'} on this trace`,
      }, `✎ ${t.notes}`) : null),
      el('td', null, t.format || '—'),
      el('td', { className: 'num' }, fmtBytes(t.size_bytes)),
      status,
      eventsCell(t),
      el('td', null, fmtDate(t.created_at)),
      el('td', { className: 'num' }, dur),
      el('td', { className: 'labels-cell' }, ...Object.entries(t.labels || {}).map(([k, v]) => el('button', {
        className: 'chip', title: 'Show only traces with ' + k + '=' + v, onclick: () => this.addLabelFilter(k, v),
      }, `${k}=${v}`)), t.description ? el('div', { className: 'description' }, t.description) : null),
      actions);
  }

  async remove(t) {
    this.confirming = null;
    try {
      await api('/api/traces/' + encodeURIComponent(t.id), { method: 'DELETE' });
    } catch (e) {
      this.status.textContent = 'Could not delete: ' + e.message;
    }
    this.refresh();
  }

  async uploadAll(files) {
    // Labels and description from the boxes above, for each of these files.
    const labels = parseLabelLines(this.upLabels.value);
    if (labels.error) {
      this.status.textContent = 'Labels for the upload: ' + labels.error;
      return;
    }
    const meta = {
      labels: Object.entries(labels.labels).map(([k, v]) => `${k}=${v}`),
      description: this.upDesc.value.trim() ? this.upDesc.value : '',
    };
    // One at a time: each file gets the link's whole bandwidth, so its
    // progress bar means something; ingests overlap on the server.
    const { uploads, unpaired } = await pairUploads(files);
    for (const f of unpaired) {
      const it = this.uploadItem(f);
      it.box.classList.add('failed');
      it.label.textContent = 'a binary or symbol map alone is no trace: pick it together with its XRay log';
    }
    const items = uploads.map((u) => ({ ...this.uploadItem(u.file, u.binary), binary: u.binary }));
    for (const it of items) await this.uploadOne(it, { ...meta, binary: it.binary });
  }

  uploadItem(file, binary) {
    const bar = el('progress', { max: 1, value: 0 });
    const label = el('span', { className: 'up-state' }, 'waiting');
    const close = el('button', { className: 'up-close', title: 'Dismiss', onclick: () => box.remove() }, '×');
    const box = el('div', { className: 'upload' },
      el('span', { className: 'up-name' }, file.name + (binary ? ` + ${binary.name}` : '')), bar, label, close);
    this.uploads.append(box);
    return { file, box, bar, label };
  }

  async uploadOne(it, opts) {
    const { file, bar, label, box } = it;
    box.classList.add('active');
    label.textContent = 'uploading 0%';
    let reply;
    try {
      reply = await uploadFile(file, (done, total) => {
        const f = total ? done / total : 0;
        bar.value = f;
        label.textContent = `uploading ${Math.floor(f * 100)}% of ${fmtBytes(total)}`;
      }, opts);
    } catch (e) {
      box.classList.add('failed');
      label.textContent = 'upload failed: ' + e.message;
      return;
    }
    bar.value = 0;
    box.classList.add('ingesting');
    label.textContent = 'ingesting';
    this.refresh();
    const id = reply && reply.id;
    let errors = 0;
    for (;;) {
      let t;
      try {
        t = await api('/api/traces/' + encodeURIComponent(id), { exact: true });
        errors = 0;
      } catch (e) {
        // A passing failure (a bad reply, a restart) is retried a few times.
        if (e.status === 404 || ++errors > 10) {
          box.classList.remove('ingesting');
          box.classList.add('failed');
          label.textContent = 'lost track of the upload: ' + e.message;
          return;
        }
        label.textContent = 'waiting for the server: ' + e.message;
        await new Promise((r) => setTimeout(r, POLL_MS * 2));
        continue;
      }
      const p = t.progress || {};
      const f = p.bytes_total ? p.bytes_done / p.bytes_total : 0;
      bar.value = f;
      if (t.status === 'ready') {
        bar.value = 1;
        box.classList.remove('ingesting');
        box.classList.add('ready');
        clear(label);
        label.append('ready — ', el('a', { href: '/?trace=' + encodeURIComponent(t.id) }, 'open'));
        break;
      }
      if (t.status === 'failed') {
        box.classList.remove('ingesting');
        box.classList.add('failed');
        label.textContent = 'failed: ' + (t.error ? t.error.message || t.error.code : 'unknown error');
        break;
      }
      // the bytes are read before the database is written: no "100%" while it is
      label.textContent = t.status === 'ingesting' && f >= 1 ? 'ingesting: writing the database…' : `${t.status} ${Math.floor(f * 100)}%`;
      const rowBar = this.tbody.querySelector(`tr[data-id="${t.id}"] progress.mini`);
      if (rowBar) rowBar.value = f;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    this.refresh();
  }
}

// The sum of a diagnostics object's damage counters (pages.js, isDamage).
export function damage(diag) {
  let n = 0;
  for (const [k, v] of Object.entries(diag || {})) {
    if (!isDamage(k)) continue;
    if (typeof v === 'number') n += v;
    else if (typeof v === 'string' && /^\d+$/.test(v)) n += Number(v);
  }
  return n;
}

// Labels from the editor's text, one key=value per line: {labels} or
// {error}. A key never holds spaces, so blanks around it go; the value is
// kept exactly, blanks included. Blank lines are skipped; a key given twice
// keeps its last value, as at upload.
export function parseLabelLines(text) {
  const labels = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const eq = line.indexOf('=');
    const key = eq < 0 ? line.trim() : line.slice(0, eq).trim();
    if (eq < 0 || key === '') return { error: `“${line.trim()}” is not key=value` };
    labels[key] = line.slice(eq + 1);
  }
  return { labels };
}

// The PATCH labels member that turns labels `from` into `to`: only the
// labels set or changed, null for those removed; {} when they are equal.
export function labelPatch(from, to) {
  const set = {};
  for (const [k, v] of Object.entries(to)) if (from[k] !== v) set[k] = v;
  for (const k of Object.keys(from)) if (!(k in to)) set[k] = null;
  return Object.keys(set).length ? { labels: set } : {};
}

const FXT_MAGIC = [0x10, 0x00, 0x04, 0x46, 0x78, 0x54, 0x16, 0x00];

// What a picked file is, from its first bytes and name: 'fxt', 'symbols'
// (an ELF binary, or llvm-xray's YAML symbol map) or 'log' (anything else:
// an XRay log, or a file the server will judge).
async function fileKind(file) {
  const b = new Uint8Array(await file.slice(0, 8).arrayBuffer());
  if (b.length >= 4 && b[0] === 0x7f && b[1] === 0x45 && b[2] === 0x4c && b[3] === 0x46) return 'symbols';
  if (/\.ya?ml$/i.test(file.name)) return 'symbols';
  if (b.length === 8 && FXT_MAGIC.every((x, i) => b[i] === x)) return 'fxt';
  return 'log';
}

// The uploads a set of picked files makes: [{file, binary}]. An XRay log
// goes with the binary (or symbol map) picked with it: the one whose name
// is in the log's name (xray-log.<binary>.XXXX), else the only one picked.
// Binaries that no log takes are returned as unpaired.
export async function pairUploads(files) {
  const kinds = await Promise.all(files.map(fileKind));
  const symbols = files.filter((f, i) => kinds[i] === 'symbols');
  const used = new Set();
  const uploads = [];
  files.forEach((f, i) => {
    if (kinds[i] === 'symbols') return;
    let binary = null;
    if (kinds[i] === 'log' && symbols.length) {
      const base = (s) => s.name.replace(/\.ya?ml$/i, '');
      binary = symbols.find((s) => f.name.includes(base(s))) || (symbols.length === 1 ? symbols[0] : null);
    }
    if (binary) used.add(binary);
    uploads.push({ file: f, binary });
  });
  return { uploads, unpaired: symbols.filter((s) => !used.has(s)) };
}

// "1 trace", "2 traces".
// The Events column: what the trace recorded, each kind as the API counts
// it: `events` (FXT event records: slice begins, ends and instants,
// counters, flows; XRay entries), `sched` (CPU runs, which FXT writes as
// scheduling records, not events) and `logs`. Before ingest ends the counts
// come from a preview or a live snapshot, and say so.
function eventsCell(t) {
  const c = t.counts;
  if (!c) return el('td', { className: 'num events' }, '—');
  const events = c.events ?? c.slices ?? 0;
  const partial = t.status !== 'ready';
  const title = `${fmtCount(events)} event records + ${fmtCount(c.sched || 0)} CPU runs + ${fmtCount(c.logs || 0)} log records` +
    (partial ? (t.status === 'live' ? ' — partial: what a trace still being recorded has committed so far'
      : ' — partial: counted in the part ingested so far') : '');
  return el('td', { className: 'num events' + (partial ? ' partial' : ''), title },
    fmtCount(events + (c.sched || 0) + (c.logs || 0)) + (partial ? ' so far' : ''));
}

function plural(n, word) {
  return `${fmtCount(n)} ${word}${n === 1 ? '' : 's'}`;
}

// Names as people read them: digits by value (run-99 before run-215).
const collator = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
export function naturalCompare(a, b) {
  return collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);
}
