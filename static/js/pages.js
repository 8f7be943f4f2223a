// What the trace's own pages (timeline, query, info) share with each
// other and the library: the top bar with the links between them, the
// trace's duration as the library shows it (same formatter, same start and
// end), and which diagnostics are damage.

import { authHeaders, getToken } from './api.js';
import { el } from './dom.js';
import { fmtDur } from './format.js';

export const PAGES = [['timeline', 'Timeline'], ['query', 'Query'], ['info', 'Info']];

export function pageUrl(traceId, page) {
  return page === 'timeline' ? `/?trace=${traceId}` : `/?trace=${traceId}&page=${page}`;
}

// The links to the trace's pages, the current one marked, and the
// downloads: the file as uploaded, and Chrome JSON for Perfetto UI.
export function pageLinks(traceId, current) {
  const base = '/api/traces/' + encodeURIComponent(traceId);
  return el('nav', { className: 'page-links' }, ...PAGES.map(([id, title]) => el('a', {
    className: 'page-link' + (id === current ? ' active' : ''), href: pageUrl(traceId, id), dataset: { page: id },
  }, title)),
  downloadLink(base + '/file', `trace-${traceId}`, '⤓ File', 'download-original', 'Download the file as it was uploaded'),
  downloadLink(base + '/export?format=chrome-json', `trace-${traceId}.json`, '⤓ JSON', 'download-json',
    'Download as Chrome JSON (open it in ui.perfetto.dev or chrome://tracing), CPU scheduling included'));
}

// A download link. With a token the browser cannot send by itself, the
// click fetches the bytes with it and saves them from memory instead.
function downloadLink(href, filename, text, cls, title) {
  return el('a', {
    className: 'page-link download ' + cls, href, download: filename, title,
    onclick: async (e) => {
      if (!getToken()) return;
      e.preventDefault();
      const r = await fetch(href, { headers: authHeaders() });
      if (!r.ok) return;
      const url = URL.createObjectURL(await r.blob());
      const a = el('a', { href: url, download: filename });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    },
  }, text);
}

export function traceDuration(t) {
  if (t.start_ns === null || t.start_ns === undefined || t.end_ns === null || t.end_ns === undefined) return '—';
  return fmtDur(t.end_ns - t.start_ns);
}

// Whether a diagnostic counts damage or loss. Slices still open when the
// trace ended do not: every capture stopped while its program runs has
// them, and every XRay log (main() is on the stack when the log is
// flushed). They are drawn to the trace's end and their details say "did
// not end".
export function isDamage(key) {
  return key !== 'unterminated_slices';
}

// A top bar for the query and info pages.
export function topbar(traceId, current, titleEl) {
  return el('header', { className: 'topbar' },
    el('a', { className: 'brand', href: '/', title: 'All traces' }, '← Traces'), titleEl, pageLinks(traceId, current));
}

// The bytes of a trace still arriving that the database being served holds
// the records of: a growing stream's last commit (stream.committed_bytes; a
// snapshot's visible_bytes), or an ingest's preview; 0 for a whole trace.
export function shownBytes(t) {
  if (t.stream) return t.stream.committed_bytes !== undefined ? t.stream.committed_bytes : t.stream.visible_bytes;
  return t.preview ? t.preview.visible_bytes : 0;
}
