// The timeline's view: which window of the trace's time is shown over how
// many pixels. It never leaves the trace (it starts at or after its first
// event and ends at or before its last) and never gets narrower than
// MIN_SPAN. Whoever moves it goes through set(); onMove is called after
// every move (the page then redraws, keeps the URL and the hover).

import { MIN_SPAN, makeView } from './render.js';

export class TimeView {
  constructor(onMove) {
    this.onMove = onMove;
    this.vs = 0;       // the window shown, ns: vs < ve
    this.ve = 1;
    this.start = 0;    // the trace's extent, ns: start < end
    this.end = 1;
    this.W = 0;        // the window's width in css px
  }

  // The trace's extent (a live trace grows); the window is clamped to it
  // at the next move.
  setExtent(start, end) {
    this.start = start;
    this.end = Math.max(end, start + 1);
  }

  set(vs, ve) {
    const dur = this.end - this.start;
    const span = Math.min(Math.max(ve - vs, MIN_SPAN), dur);
    const c = (vs + ve) / 2;
    vs = c - span / 2;
    if (vs < this.start) vs = this.start;
    if (vs + span > this.end) vs = this.end - span;
    this.vs = vs;
    this.ve = vs + span;
    this.onMove();
  }

  // ns per pixel.
  resolution() {
    return (this.ve - this.vs) / this.W;
  }

  // The mapping between time and x (render.js makeView).
  mapping() {
    return makeView(this.vs, this.ve, this.W);
  }

  zoomAt(factor, x) {
    const span = this.ve - this.vs;
    const t = this.vs + (x / this.W) * span;
    const ns = Math.max(span * factor, MIN_SPAN);
    const vs = t - (x / this.W) * ns;
    this.set(vs, vs + ns);
  }

  panBy(px) {
    const d = (px / this.W) * (this.ve - this.vs);
    this.set(this.vs + d, this.ve + d);
  }

  fitAll() {
    this.set(this.start, this.end);
  }

  // [s, e] with a tenth of it as margin on each side.
  fitRange(s, e) {
    if (e <= s) e = s + 1000;
    const pad = (e - s) * 0.1;
    this.set(s - pad, e + pad);
  }

  // Brings [s, e] into the window: fitted when it is wider than most of
  // it, centred when it lies outside, else left where it is.
  show(s, e) {
    const span = this.ve - this.vs;
    if (e - s > span * 0.8) this.fitRange(s, e);
    else if (s < this.vs || e > this.ve) this.set((s + e) / 2 - span / 2, (s + e) / 2 + span / 2);
  }
}
