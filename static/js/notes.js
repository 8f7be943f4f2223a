// Notes on the timeline (docs/API.md "Notes"): what a team writes on a
// whole trace, a time range (on one track or all of them) or one slice,
// kept by the server for everyone who opens the trace. This module holds
// the trace's notes, draws a flag on the time axis at the start of each
// range or slice note (and a light band over the one hovered or picked),
// and keeps the notes panel: the list, a click on a note to go to it, the
// form that writes a new one, edit and delete.
//
// A note's text is plain text and stays so: it is put on the page through
// text nodes only, and the http(s) links in it become <a> elements built
// with el(), so `<img src=x onerror=...>` in a note reads as those letters.
// The author is a name the browser remembers (localStorage), asked the
// first time a note is written.

import { api } from './api.js';
import { el, clear } from './dom.js';
import { fmtDate, fmtDur, fmtTime } from './format.js';

const AUTHOR_KEY = 'trace-viewer.author';
const FLAG_COLOR = '#8e24aa';
const BAND = 'rgba(142,36,170,0.10)';
const BAND_TRACK = 'rgba(142,36,170,0.22)';
const FLAG_W = 9;      // px: the flag's cloth, right of its pole
const FLAG_SLOP = 3;   // px either side of a flag that still hit it
const POLL_MS = 500;   // how often an open page reads the notes again: a note saved
                      // elsewhere shows within a second (issue 44), for 0.2 ms a read

export function loadAuthor() {
  try {
    return localStorage.getItem(AUTHOR_KEY) || '';
  } catch {
    return '';
  }
}

function saveAuthor(name) {
  try {
    localStorage.setItem(AUTHOR_KEY, name);
  } catch {
    /* private mode: asked again next time */
  }
}

// The links in a text: http(s) URLs up to a space, less the punctuation
// that usually ends a sentence after one.
const LINK = /https?:\/\/[^\s<>"]+/g;

// The note's text as DOM: text nodes, and an <a> for each link.
export function noteText(text) {
  const out = el('div', { className: 'note-text' });
  let at = 0;
  for (const m of text.matchAll(LINK)) {
    const url = m[0].replace(/[.,;:!?)\]']+$/, '');
    if (m.index > at) out.append(document.createTextNode(text.slice(at, m.index)));
    out.append(el('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, url));
    at = m.index + url.length;
  }
  if (at < text.length) out.append(document.createTextNode(text.slice(at)));
  return out;
}

export class Notes {
  // page: the timeline page (its view, selection, tracks and base URL).
  constructor(page) {
    this.page = page;
    this.list = [];          // the trace's notes, as GET .../notes orders them
    this.hover = null;       // the note whose flag is under the mouse
    this.current = null;     // the note picked (highlighted in the panel, banded)
    this.compose = null;     // {target, where}: the new note being written
    this.editing = null;     // the id of the note whose text is being edited
    this.confirming = null;  // the id of the note whose delete awaits a yes
    this.pendingId = null;   // ?note=ID: gone to once the notes are loaded
    this.error = '';
    this.loaded = false;
    this.busy = 0;           // requests in flight (the tests wait for none)
    this.sliceNames = new Map(); // slice id -> its name, or null while asked
    this.button = el('button', {
      className: 'notes-toggle', title: 'The notes on this trace', 'aria-label': 'Notes', onclick: () => this.toggle(),
    }, '✎');
    this.root = el('aside', { className: 'notes-panel hidden', 'aria-label': 'Notes' });
  }

  get isOpen() {
    return !this.root.classList.contains('hidden');
  }

  async load() {
    this.busy++;
    let changed = true;
    try {
      const r = await api(this.page.base + '/notes', { exact: true });
      const list = r.notes || [];
      changed = !this.loaded || !!this.error || JSON.stringify(list) !== JSON.stringify(this.list);
      this.list = list;
      this.error = '';
    } catch (e) {
      this.error = 'Could not load the notes: ' + e.message;
    } finally {
      this.busy--;
    }
    this.loaded = true;
    this.schedulePoll();
    if (!changed && this.pendingId === null) return;
    if (this.current) this.current = this.list.find((n) => n.id === this.current.id) || null;
    // short: the top bar holds one line at 1400 px with a LIVE or INGESTING badge
    this.button.textContent = `✎ ${this.list.length}`;
    this.button.title = `Notes: ${this.list.length} on this trace`;
    if (this.pendingId !== null) this.goToPending();
    if (!this.compose && this.editing === null && this.confirming === null) this.render();
    this.page.invalidate();
  }

  // What others write shows up while the page is open: the notes are read
  // again every POLL_MS while the tab is visible. A form being filled in is
  // not redrawn under the typing (render() waits for it to close).
  schedulePoll() {
    clearTimeout(this.pollTimer);
    this.pollTimer = setTimeout(() => {
      if (document.hidden || this.busy) this.schedulePoll();
      else this.load();
    }, POLL_MS);
  }

  goToPending() {
    const id = this.pendingId;
    this.pendingId = null;
    const n = this.list.find((x) => String(x.id) === id);
    this.open();
    if (n) this.go(n);
    else this.error = `There is no note ${id} on this trace.`;
  }

  // The panel takes the right of the tracks (the page's resize() makes room).
  open() {
    if (this.isOpen) return;
    this.root.classList.remove('hidden');
    this.button.classList.add('active');
    this.page.resize();
  }

  toggle() {
    if (this.isOpen) {
      this.root.classList.add('hidden');
      this.button.classList.remove('active');
      this.page.resize();
      return;
    }
    this.open();
    this.load(); // what others wrote since the page opened
  }

  // ---- going to a note -------------------------------------------------------

  // Picks note n: highlighted, its range in view, its slice selected.
  go(n) {
    const page = this.page;
    this.current = n;
    if (n.kind === 'slice') {
      page.view.fitRange(n.start_ns, n.end_ns);
      page.selection.selectSlice(n.slice_id, { scroll: true });
    } else if (n.kind === 'range') {
      page.view.fitRange(n.start_ns, n.end_ns);
      if (n.track_id !== null) page.scrollToTrack(n.track_id);
    }
    this.render();
    const item = this.root.querySelector(`.note-item[data-id="${n.id}"]`);
    if (item) item.scrollIntoView({ block: 'nearest' });
    page.invalidate();
  }

  // ---- writing ---------------------------------------------------------------

  addForTrace() {
    this.startCompose({}, 'the whole trace');
  }

  // The area [start, end] (clamped to the trace), on its track when it has exactly one.
  addForArea(area) {
    const t = this.page.trace;
    const start = Math.round(Math.max(area.start, t.start_ns));
    const end = Math.round(Math.min(area.end, t.end_ns));
    const target = { start_ns: start, end_ns: Math.max(start, end) };
    const ids = area.ids();
    let where = this.rangeText(target.start_ns, target.end_ns);
    if (ids.length === 1) {
      target.track_id = ids[0];
      where += ' on ' + this.trackTitle(ids[0]);
    }
    this.startCompose(target, where);
  }

  addForSlice(info) {
    this.sliceNames.set(String(info.id), info.name);
    this.startCompose({ slice_id: info.id }, `the slice ${info.name} (${fmtDur(info.dur)})`);
  }

  startCompose(target, where) {
    this.compose = { target, where };
    this.editing = null;
    this.error = '';
    this.open();
    this.render();
    const box = this.root.querySelector('.note-compose textarea');
    if (box) box.focus();
  }

  async create(text, author) {
    // ids are sent as written (a 64-bit id stays exact as a decimal string)
    const parts = [`"text":${JSON.stringify(text)}`, `"author":${JSON.stringify(author)}`];
    for (const [k, v] of Object.entries(this.compose.target)) parts.push(`"${k}":${String(v)}`);
    const n = await this.send('Could not save the note: ', this.page.base + '/notes', 'POST', '{' + parts.join(',') + '}');
    if (!n) return;
    this.compose = null;
    this.current = n;
    await this.load();
  }

  async patch(n, text) {
    if (!await this.send('Could not save the note: ', '/api/notes/' + n.id, 'PATCH', JSON.stringify({ text }))) return;
    this.editing = null;
    await this.load();
  }

  async remove(n) {
    this.confirming = null;
    if (await this.send('Could not delete the note: ', '/api/notes/' + n.id, 'DELETE') && this.current && this.current.id === n.id) {
      this.current = null;
    }
    await this.load();
  }

  // One change to the server's notes: true (or the reply) when it was made;
  // else the panel says why (what: the start of that sentence).
  async send(what, path, method, body) {
    this.busy++;
    try {
      return (await api(path, { method, body, exact: true })) || true;
    } catch (e) {
      this.error = what + e.message;
      this.render();
      return false;
    } finally {
      this.busy--;
    }
  }

  // ---- the panel -------------------------------------------------------------

  render() {
    const root = this.root;
    clear(root);
    root.append(el('div', { className: 'notes-head' },
      el('span', { className: 'notes-title' }, `Notes (${this.list.length})`),
      el('button', { className: 'link add-trace-note', title: 'Write a note on the whole trace', onclick: () => this.addForTrace() }, '+ on the whole trace'),
      el('button', { className: 'notes-close', title: 'Close the notes', onclick: () => this.toggle() }, '×')));
    if (this.error) root.append(el('div', { className: 'notes-error', role: 'alert' }, this.error));
    if (this.compose) root.append(this.composeForm());
    if (this.loaded && this.list.length === 0 && !this.compose) {
      root.append(el('div', { className: 'muted notes-empty' },
        'No notes yet. Write one on the whole trace (above), on an area (select it, then "Add a note") or on a slice (its details).'));
    }
    root.append(el('ul', { className: 'notes-list' }, ...this.list.map((n) => this.item(n))));
  }

  composeForm() {
    const text = el('textarea', { name: 'text', rows: 4, placeholder: 'What is here? Links (https://…) become clickable.', required: true });
    const known = loadAuthor();
    const author = el('input', { type: 'text', name: 'author', placeholder: 'Your name (remembered)', value: known, maxLength: 100 });
    const who = known ? el('div', { className: 'muted note-as' }, `as ${known} · `,
      el('button', { type: 'button', className: 'link', onclick: () => { who.replaceWith(author); author.focus(); } }, 'change')) : author;
    const form = el('form', {
      className: 'note-compose',
      onsubmit: (e) => {
        e.preventDefault();
        const name = author.value.trim();
        if (!name) {
          author.focus();
          return;
        }
        if (name !== known) saveAuthor(name);
        if (text.value.trim()) this.create(text.value, name);
      },
    }, el('div', { className: 'note-where' }, 'New note on ', this.compose.where), text, who,
    el('div', { className: 'note-buttons' }, el('button', { type: 'submit', className: 'primary save-note' }, 'Save note'),
      el('button', { type: 'button', onclick: () => { this.compose = null; this.render(); } }, 'Cancel')));
    return form;
  }

  item(n) {
    const li = el('li', { className: 'note-item' + (this.current && this.current.id === n.id ? ' current' : ''), dataset: { id: n.id, kind: n.kind } });
    const where = el('button', { className: 'link note-where', title: n.kind === 'trace' ? '' : 'Show it', onclick: () => this.go(n) }, this.whereText(n));
    const meta = el('div', { className: 'note-meta muted' }, `${n.author || 'anonymous'} · ${fmtDate(n.created_at)}${n.edited_at ? ' (edited)' : ''} · `,
      el('a', { className: 'note-link', href: `/?trace=${this.page.traceId}&note=${n.id}`, title: 'A link that opens the trace at this note' }, 'link'));
    li.append(where);
    if (this.editing === n.id) {
      const box = el('textarea', { rows: 4, value: n.text });
      li.append(box, el('div', { className: 'note-buttons' },
        el('button', { className: 'primary save-edit', onclick: () => this.patch(n, box.value) }, 'Save'),
        el('button', { onclick: () => { this.editing = null; this.render(); } }, 'Cancel')));
      return li;
    }
    li.append(noteText(n.text), meta);
    const buttons = el('div', { className: 'note-buttons' });
    if (this.confirming === n.id) {
      buttons.append(el('span', null, 'Delete this note? '),
        el('button', { className: 'danger confirm-delete', onclick: () => this.remove(n) }, 'Delete'),
        el('button', { onclick: () => { this.confirming = null; this.render(); } }, 'Cancel'));
    } else {
      buttons.append(el('button', { className: 'link edit-note', onclick: () => { this.editing = n.id; this.compose = null; this.render(); } }, 'edit'),
        el('button', { className: 'link delete-note', onclick: () => { this.confirming = n.id; this.render(); } }, 'delete'));
    }
    li.append(buttons);
    return li;
  }

  whereText(n) {
    if (n.kind === 'trace') return 'the whole trace';
    const range = this.rangeText(n.start_ns, n.end_ns);
    if (n.kind === 'slice') return `${this.sliceName(n.slice_id)} · ${range}`;
    return n.track_id !== null ? `${range} on ${this.trackTitle(n.track_id)}` : range;
  }

  // A slice note's slice by name: asked once, the panel redrawn when it comes.
  sliceName(id) {
    const key = String(id);
    if (this.sliceNames.get(key)) return this.sliceNames.get(key);
    if (!this.sliceNames.has(key)) {
      this.sliceNames.set(key, null);
      api(`${this.page.base}/slices/${key}`, { exact: true }).then((s) => {
        this.sliceNames.set(key, s.name);
        if (!this.compose && this.editing === null && this.confirming === null) this.render();
      }, () => {});
    }
    return `slice ${key}`;
  }

  rangeText(start, end) {
    const origin = this.page.view.start;
    return end > start ? `${fmtTime(start - origin)} – ${fmtTime(end - origin)} (${fmtDur(end - start)})` : `at ${fmtTime(start - origin)}`;
  }

  trackTitle(id) {
    const t = this.page.byTrackId.get(Number(id));
    return t ? (t.group && t.group.title ? `${t.title} (${t.group.title})` : t.title) : `track ${id}`;
  }

  // ---- the axis and the tracks -----------------------------------------------

  // The range and slice notes whose flag is in view: [{note, x}].
  flags(v, W) {
    const out = [];
    for (const n of this.list) {
      if (n.kind === 'trace') continue;
      const x = Math.round(v.x(n.start_ns));
      if (x >= -FLAG_W && x <= W) out.push({ note: n, x });
    }
    return out;
  }

  // The note whose flag is at axis x, or null.
  flagAt(x) {
    const v = this.page.view.mapping();
    let best = null;
    for (const f of this.flags(v, this.page.W)) {
      if (x >= f.x - FLAG_SLOP && x <= f.x + FLAG_W + FLAG_SLOP) best = f.note; // the last drawn is on top
    }
    return best;
  }

  // A flag per note on the axis (height h): a pole and a cloth.
  drawFlags(ctx, v, h) {
    for (const { note, x } of this.flags(v, this.page.W)) {
      const on = note === this.hover || (this.current && this.current.id === note.id);
      ctx.fillStyle = FLAG_COLOR;
      ctx.fillRect(x, 0, on ? 2 : 1, h);
      ctx.beginPath();
      ctx.moveTo(x + 1, 1);
      ctx.lineTo(x + 1 + FLAG_W, 5);
      ctx.lineTo(x + 1, 9);
      ctx.closePath();
      ctx.fill();
    }
  }

  // Over the tracks: the hovered (or picked) note's range, its track darker.
  drawBand(ctx, v, W, H) {
    const n = this.hover || this.current;
    if (!n || n.kind === 'trace') return;
    const x0 = v.x(n.start_ns);
    const x1 = Math.max(v.x(n.end_ns), x0 + 1);
    if (x1 < 0 || x0 > W) return;
    ctx.fillStyle = BAND;
    ctx.fillRect(x0, 0, x1 - x0, H);
    const t = n.track_id !== null ? this.page.byTrackId.get(Number(n.track_id)) : null;
    if (t && t.visible) {
      ctx.fillStyle = BAND_TRACK;
      ctx.fillRect(x0, this.page.rowTop(t), x1 - x0, t.h - 1);
    }
    ctx.fillStyle = FLAG_COLOR;
    ctx.fillRect(Math.round(x0), 0, 1, H);
  }

  // Hover over the axis: the flag's note is banded, named in the title.
  bindAxis(canvas) {
    canvas.addEventListener('mousemove', (e) => {
      const n = this.flagAt(e.clientX - canvas.getBoundingClientRect().left);
      if (n === this.hover) return;
      this.hover = n;
      canvas.style.cursor = n ? 'pointer' : '';
      canvas.title = n ? `${n.author ? n.author + ': ' : ''}${n.text.length > 200 ? n.text.slice(0, 200) + '…' : n.text}` : '';
      this.page.invalidate();
    });
    canvas.addEventListener('mouseleave', () => {
      if (!this.hover) return;
      this.hover = null;
      canvas.style.cursor = '';
      this.page.invalidate();
    });
  }
}
