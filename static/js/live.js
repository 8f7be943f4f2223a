// A live trace followed as it grows (docs/API.md "A trace while its bytes arrive"): a badge in
// the top bar, and a poll of the trace object each second. When the server
// serves a newer commit (stream.committed_bytes moved) the tracks are read
// again (new ones appear without a reload, groups keep their folding), the
// view's data and the overview are fetched again, and, while Follow is on,
// the view keeps its span and slides to the live edge. Any move the user
// makes (pan, zoom, drag) turns Follow off; the button turns it back on.
// When the trace is complete (ready) it is read once more and the badge
// says so. A stream's view starts at its first byte (stream.from_byte 0): it
// grows in place (an XRay stream's is a snapshot of every byte received).
// A large upload being ingested grows in place the same way and is followed
// alike (its "preview"), the badge saying how far ingest is.
import { api } from './api.js';
import { el } from './dom.js';
import { buildTracks } from './tracks.js';
import { shownBytes } from './pages.js';

const POLL_MS = 1000;

const shown = shownBytes;

export class LiveFollow {
  constructor(page) {
    this.page = page;
    this.follow = true;
    this.applying = false; // the view moves because we move it, not the user
    this.visible = shown(page.trace);
    this.status = page.trace.status;
    this.preview = !page.trace.stream; // an upload's ingest, not a recording
    this.badge = el('span', { className: 'live-badge', title: 'This trace is being recorded: it grows as it arrives' }, 'LIVE');
    this.button = el('button', {
      className: 'follow on', title: 'Keep the newest data in view (any pan or zoom turns it off)',
      onclick: () => this.setFollow(!this.follow),
    }, 'Follow');
    page.titleEl.after(this.badge, this.button);
    this.showWindow(page.trace);
    this.timer = setTimeout(() => this.poll(), POLL_MS);
    if (this.follow) this.toEdge();
  }

  setFollow(on) {
    this.follow = on;
    this.button.classList.toggle('on', on);
    if (on) this.toEdge();
  }

  // page.viewMoved calls this for every move: ours keep Follow, the user's end it.
  viewMoved() {
    if (!this.applying && this.follow) this.setFollow(false);
  }

  toEdge() {
    const p = this.page;
    const view = p.view;
    const span = Math.min(view.ve - view.vs, view.end - view.start);
    this.applying = true;
    view.set(view.end - span, view.end);
    this.applying = false;
  }

  async poll() {
    let t;
    try {
      t = await api(this.page.base, { exact: true });
    } catch {
      this.timer = setTimeout(() => this.poll(), POLL_MS);
      return;
    }
    const visible = shown(t);
    const ended = t.status === 'ready' || t.status === 'failed';
    this.showWindow(t);
    if (visible !== this.visible || (ended && this.status !== t.status)) {
      this.visible = visible;
      await this.reload(t);
    }
    this.status = t.status;
    if (ended) {
      this.badge.textContent = t.status === 'ready' ? (this.preview ? 'INGESTED' : 'RECORDED') : 'FAILED';
      this.badge.classList.add('ended');
      this.badge.title = t.status === 'ready' ? (this.preview ? 'Ingest ended; this is the whole trace'
        : 'The recording ended; this is the whole trace') : 'The trace failed';
      return;
    }
    this.timer = setTimeout(() => this.poll(), POLL_MS);
  }

  // The badge: LIVE, or how far a growing upload's ingest is.
  showWindow(t) {
    const mb = (b) => (b / 1048576).toFixed(b < 10485760 ? 1 : 0);
    if (t.status === 'ingesting' && t.preview) {
      const p = t.progress || {};
      const pct = p.bytes_total ? Math.floor((100 * p.bytes_done) / p.bytes_total) : 0;
      this.badge.textContent = `INGESTING ${pct}%`; // short: the top bar stays one line (the banner says the rest)
      this.badge.title = `The view holds the first ${mb(t.preview.visible_bytes)} MB of ${mb(t.size_bytes)} MB, ` +
        'from the trace\'s start; it grows until ingest ends';
    } else if (t.status === 'live') {
      this.badge.textContent = 'LIVE';
      this.badge.title = 'This trace is being recorded: it grows as it arrives';
    }
  }

  // A newer snapshot: tracks, extent, data and overview read again.
  async reload(t) {
    const p = this.page;
    if (t.status === 'failed') return;
    let tr;
    let scheduled;
    try {
      [tr, scheduled] = await Promise.all([api(p.base + '/tracks', { exact: true }), p.scheduledThreads()]);
    } catch {
      return; // between snapshots (the trace ingested whole, say): next poll
    }
    const folded = new Map(p.groups.map((g) => [g.key, g.collapsed]));
    p.trace = t;
    p.showDiagnostics(); /* a window of the stream cuts what began before it */
    p.view.setExtent(t.start_ns ?? 0, t.end_ns ?? t.start_ns ?? 0);
    const built = buildTracks(tr, t, scheduled);
    for (const g of built.groups) if (folded.has(g.key)) g.collapsed = folded.get(g.key);
    p.groups = built.groups;
    p.byTrackId = built.byTrackId;
    p.threadNames = built.threadNames;
    p.processNames = built.processNames;
    p.store = p.makeStore();
    p.relayout();
    if (this.follow) this.toEdge();
    else p.view.set(p.view.vs, p.view.ve); // clamps to the new extent
    p.loadOverview();
    p.invalidate();
  }
}
