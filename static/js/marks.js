// The marks: spans of time the user marked (M), drawn over the tracks and
// labelled with their length on the axis, kept in the URL (&marks=S_E,S_E).

const MAX_MARKS = 100;

export class Marks {
  constructor() {
    this.list = []; // [{start, end}] in ns, start <= end, in the order marked
  }

  // From the URL's marks= (ignored unless well formed).
  fromUrl(p) {
    const marks = p.get('marks');
    if (!marks || !/^-?\d+_-?\d+(,-?\d+_-?\d+)*$/.test(marks)) return;
    this.list = marks.split(',').slice(0, MAX_MARKS).map((m) => m.split('_').map(Number)).filter(([a, b]) => b >= a)
      .map(([a, b]) => ({ start: a, end: b }));
  }

  toUrl(q) {
    if (this.list.length) q.set('marks', this.list.map((m) => `${Math.round(m.start)}_${Math.round(m.end)}`).join(','));
  }

  // Marks span, or removes the mark of the same span.
  toggle(span) {
    const i = this.list.findIndex((m) => m.start === span.start && m.end === span.end);
    if (i >= 0) this.list.splice(i, 1);
    else this.list.push(span);
  }

  // Over the tracks: a shade between two lines, each mark in view.
  draw(ctx, v, W, H) {
    for (const m of this.list) {
      const x0 = v.x(m.start);
      const x1 = v.x(m.end);
      if (x1 < -2 || x0 > W + 2) continue;
      ctx.fillStyle = 'rgba(255,167,38,0.13)';
      ctx.fillRect(x0, 0, Math.max(x1 - x0, 1), H);
      ctx.fillStyle = '#f57c00';
      ctx.fillRect(Math.round(x0), 0, 1, H);
      ctx.fillRect(Math.round(x1), 0, 1, H);
    }
  }

  // The spans the axis labels with their length, in the marks' colour.
  spans() {
    return this.list.map((m) => ({ ...m, color: '#f57c00' }));
  }
}
