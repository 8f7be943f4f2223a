// The library page: every trace on the server, newest first, with a filter,
// uploads (button or drag and drop, one or many files) with progress for the
// upload and then for the ingest, and deletion with a confirmation.

import { api, uploadFile } from './api.js';
import { el, clear } from './dom.js';
import { fmtBytes, fmtCount, fmtDate, fmtDur } from './format.js';

const POLL_MS = 400;

export class LibraryPage {
  constructor(root) {
    this.root = root;
    this.traces = [];
    this.filter = '';
    this.confirming = null; // id of the trace whose delete asks for confirmation
    this.pollTimer = 0;
    this.loadError = null;
    this.build();
    this.refresh();
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
      type: 'search', className: 'filter', placeholder: 'Filter by name, format or status',
      'aria-label': 'Filter traces',
      oninput: () => {
        this.filter = this.filterInput.value.trim().toLowerCase();
        this.renderTable();
      },
    });
    this.uploads = el('div', { className: 'uploads' });
    this.tbody = el('tbody');
    this.empty = el('div', { className: 'empty' });
    this.status = el('div', { className: 'lib-status' });
    const table = el('table', { className: 'traces' },
      el('thead', null, el('tr', null,
        ...['Name', 'Format', 'Size', 'Status', 'Events', 'Uploaded', 'Duration', ''].map((h) => el('th', null, h)))),
      this.tbody);
    const uploadBtn = el('button', { className: 'primary', onclick: () => this.fileInput.click() }, 'Upload traces…');
    this.dropHint = el('div', { className: 'drop-overlay' }, el('div', null, 'Drop trace files to upload'));
    this.root.append(
      el('header', { className: 'topbar' }, el('a', { className: 'brand', href: '/' }, 'Trace viewer'),
        el('span', { className: 'topbar-sub' }, 'Fuchsia trace (FXT) and XRay files')),
      el('main', { className: 'library' },
        el('div', { className: 'lib-toolbar' }, this.filterInput, uploadBtn, this.fileInput,
          el('span', { className: 'hint' }, 'or drop files anywhere on this page')),
        this.uploads, this.status, table, this.empty),
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

  async refresh() {
    clearTimeout(this.pollTimer);
    try {
      const r = await api('/api/traces', { exact: true });
      this.traces = r.traces || [];
      this.loadError = null;
    } catch (e) {
      this.loadError = e.message;
    }
    this.renderTable();
    const busy = this.traces.some((t) => t.status === 'queued' || t.status === 'ingesting');
    if (busy) this.pollTimer = setTimeout(() => this.refresh(), 1000);
  }

  renderTable() {
    clear(this.tbody);
    this.status.textContent = this.loadError ? 'Could not load the trace list: ' + this.loadError : '';
    const f = this.filter;
    const shown = this.traces.filter((t) => !f || [t.name, t.format, t.status, String(t.id)]
      .some((s) => s && String(s).toLowerCase().includes(f)));
    for (const t of shown) this.tbody.append(this.row(t));
    if (this.traces.length === 0) {
      this.empty.textContent = 'No traces yet. Upload an .fxt or XRay file with the button above, or drop files here.';
    } else if (shown.length === 0) {
      this.empty.textContent = 'No trace matches the filter.';
    } else {
      this.empty.textContent = '';
    }
  }

  row(t) {
    const ready = t.status === 'ready';
    const name = ready ? el('a', { href: '/?trace=' + encodeURIComponent(t.id), className: 'trace-link' }, t.name || '(unnamed)')
      : el('span', null, t.name || '(unnamed)');
    const status = el('td', { className: 'status status-' + t.status }, t.status);
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
      el('td', { className: 'name' }, name),
      el('td', null, t.format || '—'),
      el('td', { className: 'num' }, fmtBytes(t.size_bytes)),
      status,
      el('td', { className: 'num' }, t.counts ? fmtCount(t.counts.events ?? t.counts.slices) : '—'),
      el('td', null, fmtDate(t.created_at)),
      el('td', { className: 'num' }, dur),
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
    // One at a time: each file gets the link's whole bandwidth, so its
    // progress bar means something; ingests overlap on the server.
    const items = files.map((f) => this.uploadItem(f));
    for (const it of items) await this.uploadOne(it);
  }

  uploadItem(file) {
    const bar = el('progress', { max: 1, value: 0 });
    const label = el('span', { className: 'up-state' }, 'waiting');
    const close = el('button', { className: 'up-close', title: 'Dismiss', onclick: () => box.remove() }, '×');
    const box = el('div', { className: 'upload' },
      el('span', { className: 'up-name' }, file.name), bar, label, close);
    this.uploads.append(box);
    return { file, box, bar, label };
  }

  async uploadOne(it) {
    const { file, bar, label, box } = it;
    box.classList.add('active');
    label.textContent = 'uploading 0%';
    let reply;
    try {
      reply = await uploadFile(file, (done, total) => {
        const f = total ? done / total : 0;
        bar.value = f;
        label.textContent = `uploading ${Math.floor(f * 100)}% of ${fmtBytes(total)}`;
      });
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
      label.textContent = `${t.status} ${Math.floor(f * 100)}%`;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    this.refresh();
  }
}

// The sum of a diagnostics object's damage counters.
export function damage(diag) {
  let n = 0;
  for (const v of Object.values(diag || {})) {
    if (typeof v === 'number') n += v;
    else if (typeof v === 'string' && /^\d+$/.test(v)) n += Number(v);
  }
  return n;
}
