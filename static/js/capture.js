// The captures page ("/?page=captures"): the server as the trace manager
// (docs/API.md "Captures"). It lists the providers connected, initializes a
// capture from a small TraceConfig form, starts, stops and terminates it,
// shows each provider's stats and the alerts as they come (WatchAlert, a
// long poll), and opens the capture's live trace.
import { api } from './api.js';
import { el, clear } from './dom.js';
import { fmtBytes } from './format.js';

const REFRESH_MS = 1500;

export class CapturePage {
  constructor(root) {
    this.root = root;
    this.current = null;   // the capture not yet terminated
    this.watching = 0;     // the capture whose alerts are being watched
    this.alerts = [];
    this.busy = false;
    this.build();
    this.refresh();
  }

  build() {
    this.providersEl = el('div', { className: 'cap-providers' });
    this.currentEl = el('div', { className: 'cap-current' });
    this.pastEl = el('div', { className: 'cap-past' });
    this.msg = el('div', { className: 'cap-msg' });
    this.root.append(
      el('header', { className: 'topbar' }, el('a', { className: 'brand', href: '/' }, '← Traces'),
        el('span', { className: 'topbar-sub' }, 'Captures: record from connected providers')),
      el('main', { className: 'captures' },
        el('h2', null, 'Providers'), this.providersEl,
        el('h2', null, 'Capture'), this.msg, this.currentEl,
        el('h2', null, 'Earlier captures'), this.pastEl));
  }

  async refresh() {
    try {
      const [p, c] = await Promise.all([api('/api/providers'), api('/api/captures')]);
      this.renderProviders(p.providers || []);
      const caps = c.captures || [];
      this.current = caps.find((x) => x.state !== 'ready') || null;
      if (!this.busy) this.renderCurrent();
      this.renderPast(caps.filter((x) => x.state === 'ready'));
      if (this.current && this.watching !== this.current.id) this.watchAlerts(this.current.id);
    } catch (e) {
      this.msg.textContent = 'Could not reach the server: ' + e.message;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), REFRESH_MS);
  }

  renderProviders(list) {
    clear(this.providersEl);
    if (list.length === 0) {
      this.providersEl.append(el('p', { className: 'hint' },
        'No provider is connected. A program linking the provider library (docs/PROVIDER.md), ' +
        '`trace-server record -- cmd` or `trace-server stream --provider FILE` connects one.'));
      return;
    }
    this.providersEl.append(el('table', { className: 'cap-table' },
      el('thead', null, el('tr', null, ...['Provider', 'pid', 'categories'].map((h) => el('th', null, h)))),
      el('tbody', null, ...list.map((p) => el('tr', { className: 'cap-provider' },
        el('td', null, p.name), el('td', { className: 'num' }, String(p.pid)), el('td', null, p.categories || '—'))))));
  }

  renderCurrent() {
    clear(this.currentEl);
    const c = this.current;
    if (!c) {
      this.renderForm();
      return;
    }
    const act = (label, cls, fn, enabled) => el('button', { className: cls, disabled: !enabled, onclick: () => this.act(fn) }, label);
    const running = c.state === 'started' || c.state === 'starting';
    this.currentEl.append(
      el('div', { className: 'cap-head' },
        el('strong', { className: 'cap-name' }, c.name), ' ',
        el('span', { className: 'cap-state state-' + c.state }, c.state), ' · ',
        c.config.buffering_mode, ', ', c.config.buffer_size_megabytes_hint + ' MB per provider',
        c.config.categories.length ? ', categories ' + c.config.categories.join(',') : ', every category',
        c.trace_id ? el('a', { className: 'cap-trace', href: '/?trace=' + c.trace_id }, ' · open its trace') : ''),
      el('div', { className: 'cap-actions' },
        act('Start', 'primary cap-start', () => api(`/api/captures/${c.id}/start`, { method: 'POST', body: '{}' }),
          c.state === 'initialized' || c.state === 'stopped'),
        act('Stop', 'cap-stop', () => api(`/api/captures/${c.id}/stop`, { method: 'POST', body: '{"write_results": true}' }), running),
        act('Terminate', 'cap-terminate', () => api(`/api/captures/${c.id}`, { method: 'DELETE' }), true)),
      this.statsTable(c.provider_stats || []),
      el('h3', null, 'Alerts'),
      this.alerts.length ? el('ul', { className: 'cap-alerts' }, ...this.alerts.map((a) => el('li', null, a)))
        : el('p', { className: 'hint' }, 'None so far.'));
  }

  statsTable(stats) {
    if (stats.length === 0) return el('p', { className: 'hint' }, 'No provider has joined this capture.');
    const heads = ['Provider', 'pid', 'started', 'stopped', 'wrapped', 'dropped', 'durable', 'records', 'note'];
    return el('table', { className: 'cap-table cap-stats' },
      el('thead', null, el('tr', null, ...heads.map((h) => el('th', null, h)))),
      el('tbody', null, ...stats.map((s) => el('tr', null,
        el('td', null, s.name), el('td', { className: 'num' }, String(s.pid)),
        el('td', null, s.started ? 'yes' : 'no'), el('td', null, s.stopped ? 'yes' : 'no'),
        el('td', { className: 'num' }, String(s.buffer_wrapped_count)),
        el('td', { className: 'num' + (s.records_dropped ? ' warn-text' : '') }, String(s.records_dropped)),
        el('td', { className: 'num' }, fmtBytes(s.durable_bytes_written)),
        el('td', { className: 'num' }, fmtBytes(s.non_durable_bytes_written)),
        el('td', { className: s.error ? 'error-text' : '' }, s.error || (s.connected ? '' : 'disconnected'))))));
  }

  renderForm() {
    const name = el('input', { className: 'cap-f-name', placeholder: 'name', value: 'capture' });
    const mode = el('select', { className: 'cap-f-mode' },
      ...['streaming', 'circular', 'oneshot'].map((m) => el('option', { value: m }, m)));
    const size = el('input', { className: 'cap-f-size', type: 'number', min: 1, max: 64, value: 4, title: 'MB per provider' });
    const cats = el('input', { className: 'cap-f-cats', placeholder: 'categories (comma-separated; empty: all)' });
    const go = async () => {
      const cfg = { name: name.value || 'capture', buffering_mode: mode.value, buffer_size_megabytes_hint: Number(size.value) || 4 };
      const list = cats.value.split(',').map((s) => s.trim()).filter(Boolean);
      if (list.length) cfg.categories = list;
      await this.act(() => api('/api/captures', { method: 'POST', body: JSON.stringify(cfg) }));
    };
    this.currentEl.append(el('div', { className: 'cap-form' }, name, mode, size, el('span', null, 'MB'), cats,
      el('button', { className: 'primary cap-init', onclick: go }, 'Initialize')));
  }

  renderPast(list) {
    clear(this.pastEl);
    if (list.length === 0) {
      this.pastEl.append(el('p', { className: 'hint' }, 'None yet.'));
      return;
    }
    const providers = (n) => `${n} provider${n === 1 ? '' : 's'}`;
    this.pastEl.append(el('ul', null, ...list.map((c) => el('li', null,
      c.trace_id ? el('a', { href: '/?trace=' + c.trace_id }, c.name) : c.name,
      ` · ${c.config.buffering_mode} · ${providers((c.provider_stats || []).length)}`))));
  }

  async act(fn) {
    this.busy = true;
    this.msg.textContent = '';
    try {
      await fn();
    } catch (e) {
      this.msg.textContent = e.message;
    }
    this.busy = false;
    await this.refresh();
  }

  // WatchAlert: one long poll after another while the capture lives.
  async watchAlerts(id) {
    this.watching = id;
    this.alerts = [];
    while (this.watching === id) {
      let r;
      try {
        r = await api(`/api/captures/${id}/alerts?timeout=25`);
      } catch {
        break; // terminated and gone, or the server away: the next refresh starts again
      }
      if (r.alert) {
        this.alerts.push(`${new Date().toLocaleTimeString()} ${r.alert}`);
        if (!this.busy) this.renderCurrent();
      }
      if (!this.current || this.current.id !== id) break;
    }
    if (this.watching === id) this.watching = 0;
  }
}
