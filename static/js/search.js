// The search of slice names inside a trace, and the toolbar box it reads.
//
// The server counts every match and pages through them with cursors
// (GET /search: total, index, next_cursor, prev_cursor, from=, before=);
// the viewer holds one page around the current hit. A new search, or a
// step once the view has moved away from the hit, starts from the view:
// Enter goes to the first match at or after its start, Shift+Enter to
// the one before. Steps queue, so every key press lands in order; only
// the last one queued moves the view and selects.

import { api } from './api.js';
import { el } from './dom.js';
import { fmtCount } from './format.js';
import { sliceEnd } from './selection.js';

const SEARCH_PAGE = 500;       // matches a search page holds
const LAST_CURSOR = '9223372036854775807:9223372036854775807'; // before= it: the last page

// A search with nothing found yet: q searched, total matches, idx the
// current hit among them (hit its slice, view the view that showed it),
// page the matches held around it
// ({index, hits, next, prev}), histogram the matches per overview bucket.
function emptySearch(q) {
  return { q, total: 0, idx: -1, hit: null, view: null, page: null, histogram: null };
}

// page: the timeline page it searches (base, view, reveal, selection,
// invalidate); buckets: the overview's, which the histogram matches.
export class Search {
  constructor(page, buckets) {
    this.page = page;
    this.buckets = buckets;
    this.result = emptySearch('');  // replaced whole by a new search: a reply for an older one is dropped
    this.pending = 0;               // steps queued on chain
    this.chain = Promise.resolve();
    this.input = el('input', {
      type: 'search', className: 'search', placeholder: 'Search slices  ( / )', 'aria-label': 'Search slice names',
      spellcheck: false,
    });
    this.info = el('span', { className: 'search-info' });
  }

  // The box's keys, once the trace is loaded (the input controller binds
  // the page's).
  bind() {
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        this.step(e.shiftKey ? -1 : 1);
      } else if (e.key === 'Escape') {
        this.input.blur();
      }
    });
    this.input.addEventListener('input', () => {
      if (this.input.value.trim() === '' && this.result.q) this.clear();
    });
  }

  // The search box with its buttons, for the toolbar.
  box() {
    return el('div', { className: 'search-box' }, this.input,
      el('button', { className: 'search-prev', title: 'Previous hit (Shift+Enter)', onclick: () => this.step(-1) }, '‹'),
      el('button', { className: 'search-next', title: 'Next hit (Enter)', onclick: () => this.step(1) }, '›'),
      this.info);
  }

  focus() {
    this.input.focus();
    this.input.select();
  }

  // Searches q from the view (a link from a search across traces).
  open(q) {
    this.input.value = q;
    this.step(1);
  }

  step(dir) {
    const q = this.input.value.trim();
    if (!q) return;
    this.pending++;
    this.chain = this.chain.then(() => this.runStep(q, dir)).catch((e) => {
      this.info.textContent = 'search failed: ' + e.message;
    }).finally(() => {
      this.pending--;
    });
  }

  async runStep(q, dir) {
    const s = this.result;
    if (q !== s.q || s.total === 0 || this.viewMoved()) {
      await this.fromView(q, dir);
      return;
    }
    await this.gotoHit((s.idx + dir + s.total) % s.total);
  }

  // Has the view moved away from the current hit since the search showed
  // it? Then the next step starts from the view.
  viewMoved() {
    const s = this.result;
    const h = s.hit;
    const view = this.page.view;
    if (!h) return true;
    if (s.view && s.view[0] === view.vs && s.view[1] === view.ve) return false;
    return !(h.ts <= view.ve && sliceEnd(h, view.end) >= view.vs);
  }

  url(q, extra) {
    return `${this.page.base}/search?q=${encodeURIComponent(q)}&limit=${SEARCH_PAGE}${extra}`;
  }

  async fromView(q, dir) {
    const view = this.page.view;
    const fresh = q !== this.result.q;
    if (fresh) this.info.textContent = 'searching…';
    const hist = fresh ? `&buckets=${this.buckets}&start=${view.start}&end=${view.end}` : '';
    let r;
    try {
      r = await api(this.url(q, `&from=${Math.ceil(view.vs)}${hist}`));
    } catch (e) {
      this.result = emptySearch(q);
      this.info.textContent = 'search failed: ' + e.message;
      this.page.invalidate();
      return;
    }
    if (fresh) this.result = { ...emptySearch(q), histogram: r.histogram || null };
    this.setPage(r);
    this.page.invalidate();
    if (r.total === 0) {
      this.info.textContent = 'no match';
      return;
    }
    // r.index: the first match at or after the view's start
    await this.gotoHit(dir > 0 ? r.index % r.total : (r.index - 1 + r.total) % r.total);
  }

  setPage(r) {
    this.result.total = r.total;
    this.result.page = { index: r.index, hits: r.slices || [], next: r.next_cursor, prev: r.prev_cursor };
  }

  // Goes to match i (of all): from the page held, or the page next to it,
  // the first or the last page.
  async gotoHit(i) {
    const s = this.result;
    const p = s.page;
    if (!p || i < p.index || i >= p.index + p.hits.length) {
      let at = null;
      if (p && i === p.index + p.hits.length && p.next) at = '&cursor=' + p.next;
      else if (p && i === p.index - 1 && p.prev) at = '&before=' + p.prev;
      else if (i === 0) at = '';
      else if (i === s.total - 1) at = '&before=' + LAST_CURSOR;
      if (at === null) return;
      const r = await api(this.url(s.q, at));
      if (this.result !== s) return;
      this.setPage(r);
      if (i >= r.total) return;
    }
    const pg = s.page;
    const h = pg.hits[i - pg.index];
    if (!h) return;
    s.idx = i;
    s.hit = h;
    this.info.textContent = `${fmtCount(i + 1)} / ${fmtCount(s.total)}`;
    if (this.pending > 1) return; // more steps queued: only the last one shows
    this.page.reveal({ ts: h.ts, dur: h.dur, track_id: h.track_id });
    s.view = [this.page.view.vs, this.page.view.ve];
    this.page.selection.selectSlice(h.id, { reveal: false, scroll: true });
  }

  clear() {
    this.result = emptySearch('');
    this.info.textContent = '';
    this.page.invalidate();
  }

  // What the tracks outline as matches while drawing (null: no search).
  marksForDraw() {
    return this.result.total > 0 ? { q: this.result.q.toLowerCase(), ids: [], ticks: 0 } : null;
  }

  // Matches per overview bucket to draw, or null.
  histogram() {
    return this.result.total > 0 ? this.result.histogram : null;
  }
}
