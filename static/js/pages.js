// What the trace's own pages (timeline, query, info) share: the top bar
// with the links between them, and the trace's duration as the library
// shows it (same formatter, same start and end).

import { el } from './dom.js';
import { fmtDur } from './format.js';

export const PAGES = [['timeline', 'Timeline'], ['query', 'Query'], ['info', 'Info']];

export function pageUrl(traceId, page) {
  return page === 'timeline' ? `/?trace=${traceId}` : `/?trace=${traceId}&page=${page}`;
}

// The links to the trace's pages, the current one marked.
export function pageLinks(traceId, current) {
  return el('nav', { className: 'page-links' }, ...PAGES.map(([id, title]) => el('a', {
    className: 'page-link' + (id === current ? ' active' : ''), href: pageUrl(traceId, id), dataset: { page: id },
  }, title)));
}

export function traceDuration(t) {
  if (t.start_ns === null || t.start_ns === undefined || t.end_ns === null || t.end_ns === undefined) return '—';
  return fmtDur(t.end_ns - t.start_ns);
}

// A top bar for the query and info pages.
export function topbar(traceId, current, titleEl) {
  return el('header', { className: 'topbar' },
    el('a', { className: 'brand', href: '/', title: 'All traces' }, '← Traces'), titleEl, pageLinks(traceId, current));
}
