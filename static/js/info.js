// The trace info page (?trace=ID&page=info): what the trace is (format,
// providers and their tick rates, counts, time range, upload time and
// size), every diagnostic with one line on what it means, and for XRay
// traces whether functions are named.

import { api } from './api.js';
import { el, clear } from './dom.js';
import { fmtBytes, fmtCount, fmtDate } from './format.js';
import { isDamage, topbar, traceDuration } from './pages.js';

// One line per diagnostic (docs/API.md, "Meaning").
export const DIAGNOSTICS = {
  unknown_records: 'records of a type this reader does not know; skipped',
  malformed_records: 'records whose fields contradict their size or the format; skipped',
  truncated_bytes: 'bytes after the point where the file was cut; the records before it are kept',
  unresolved_string_refs: 'references to a string index never defined; the name is left empty',
  unresolved_thread_refs: 'references to a thread index never defined; the event has no thread',
  unmatched_ends: 'end events with no open slice on their thread; dropped',
  unterminated_slices: 'slices begun and never ended; they run to the end of the trace',
  flow_no_enclosing_slice: 'flow events outside any slice; the arrow has no end to attach to',
  negative_durations: 'complete events ending before they begin; dropped',
  unknown_args: 'arguments of a type this reader does not know; skipped',
  non_numeric_counter_args: 'counter arguments that are not numbers; not plotted',
  oversized_records: 'records larger than the reader allows; skipped',
  timestamp_overflows: 'times beyond the 64-bit nanosecond range after the tick conversion',
  unmatched_flow_steps: 'flow steps or ends with no flow begin; no arrow',
  unmatched_async_instants: 'async instants or ends with no async begin',
  buffer_overflows: 'the writer\'s buffer was full: events were lost while tracing',
  ignored_records: 'records for the reserved index 0, or XRay arguments with no call; ignored',
};

const FORMATS = { fxt: 'Fuchsia Trace Format (FXT)', 'xray-fdr': 'LLVM XRay flight-data-recorder log' };

export class InfoPage {
  constructor(root, traceId) {
    this.root = root;
    this.traceId = traceId;
    this.titleEl = el('span', { className: 'trace-title' }, 'loading…');
    this.body = el('main', { className: 'info-page' });
    root.append(topbar(traceId, 'info', this.titleEl), this.body);
    window.__viewer = { page: 'info', ready: false };
    this.load();
  }

  async load() {
    let t;
    try {
      t = await api('/api/traces/' + encodeURIComponent(this.traceId), { exact: true });
    } catch (e) {
      this.body.append(el('div', { className: 'fatal' }, 'Could not load the trace: ' + e.message));
      return;
    }
    document.title = (t.name || 'trace') + ' — info';
    this.titleEl.textContent = t.name || 'trace ' + t.id;
    clear(this.body);
    this.body.append(this.summary(t), this.providers(t), this.processes(t), this.counts(t), this.diagnostics(t));
    if (t.format === 'xray-fdr') this.body.append(this.symbols(t));
    window.__viewer.ready = true;
  }

  section(title, cls, ...nodes) {
    return el('section', { className: 'info-section ' + cls }, el('h2', null, title), ...nodes);
  }

  kv(rows) {
    return el('table', { className: 'kv' }, ...rows.map(([k, v]) => el('tr', null, el('th', null, k), el('td', null, v))));
  }

  summary(t) {
    const rows = [
      ['Name', t.name || '—'],
      ['Format', FORMATS[t.format] || t.format || '—'],
      ['Status', t.status + (t.error ? ': ' + (t.error.message || t.error.code) : '')],
      ['Duration', traceDuration(t)],
      ['Time range', t.start_ns !== null && t.start_ns !== undefined ? `${t.start_ns} ns – ${t.end_ns} ns (trace clock)` : '—'],
      ['Uploaded', fmtDate(t.created_at)],
      ['Size', `${fmtBytes(t.size_bytes)} (${fmtCount(t.size_bytes)} bytes)`],
      ['Labels', Object.keys(t.labels || {}).length
        ? el('span', { className: 'info-labels' }, ...Object.entries(t.labels).map(([k, v]) => el('span', { className: 'chip' }, `${k}=${v}`)))
        : '—'],
      ['Description', t.description ? el('span', { className: 'description' }, t.description) : '—'],
      ['Pinned', t.pinned ? 'yes: retention keeps it' : 'no'],
    ];
    return this.section('Trace', 'info-summary', this.kv(rows));
  }

  providers(t) {
    const list = t.providers || [];
    if (list.length === 0) return this.section('Providers', 'info-providers', el('div', { className: 'muted' }, 'none recorded'));
    return this.section('Providers', 'info-providers', el('table', { className: 'stats' },
      el('thead', null, el('tr', null, el('th', null, 'Provider'), el('th', null, 'Id'), el('th', { className: 'num' }, 'Ticks per second'),
        el('th', { className: 'num' }, 'Buffer overflows'))),
      el('tbody', null, ...list.map((p) => el('tr', null, el('td', null, p.name || '—'), el('td', null, String(p.id)),
        el('td', { className: 'num' }, fmtCount(p.ticks_per_second)), el('td', { className: 'num' }, fmtCount(p.buffer_overflows)))))));
  }

  // The trace's own process names (the first 64 by pid).
  processes(t) {
    const list = t.processes || [];
    if (list.length === 0) return this.section('Processes', 'info-processes', el('div', { className: 'muted' }, 'none named'));
    return this.section('Processes', 'info-processes', el('table', { className: 'stats' },
      el('thead', null, el('tr', null, el('th', null, 'Process'), el('th', { className: 'num' }, 'pid'))),
      el('tbody', null, ...list.map((p) => el('tr', null, el('td', null, p.name || (t.format === 'xray-fdr' && t.symbols && t.symbols.binary) || '—'), el('td', { className: 'num' }, String(p.pid)))))));
  }

  counts(t) {
    const c = t.counts || {};
    // before ingest ends they come from a preview or a live snapshot
    const partial = t.counts && t.status !== 'ready'
      ? (t.status === 'live' ? ' (partial: what the recording has committed so far)' : ' (partial: the part ingested so far)') : '';
    return this.section('Counts' + partial, 'info-counts', this.kv(Object.entries(c).map(([k, v]) => [k.replace(/_/g, ' '), fmtCount(v)])));
  }

  diagnostics(t) {
    const d = t.diagnostics || {};
    const rows = Object.entries(d).map(([k, v]) => el('tr', { className: Number(v) > 0 && isDamage(k) ? 'diag-bad' : '', dataset: { diag: k } },
      el('td', null, k), el('td', { className: 'num' }, fmtCount(v)), el('td', { className: 'muted' }, DIAGNOSTICS[k] || '')));
    const bad = Object.entries(d).filter(([k, v]) => Number(v) > 0 && isDamage(k)).length;
    return this.section('Diagnostics', 'info-diagnostics',
      el('div', null, bad ? `${bad} kind${bad === 1 ? '' : 's'} of damage or loss: what the timeline shows may be incomplete.` : 'No damage or loss found.'),
      el('table', { className: 'stats' }, el('thead', null, el('tr', null, el('th', null, 'Counter'), el('th', { className: 'num' }, 'Value'),
        el('th', null, 'Meaning'))), el('tbody', null, ...rows)));
  }

  symbols(t) {
    const s = t.symbols || {};
    const named = Number(s.named || 0);
    const rows = [
      ['Functions named', named > 0 ? fmtCount(named) : 'none: functions show as fn#<id>'],
      ['Symbols error', s.error || '—'],
    ];
    if (s.hint) rows.push(['How to name them', s.hint]);
    return this.section('XRay symbols', 'info-symbols', this.kv(rows));
  }
}


