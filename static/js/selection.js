// The area selection model: a time range and the tracks it covers, as in
// Perfetto. A drag selects the slice tracks it crosses (a process header
// crossed brings all of its tracks); a click on a track's label adds or
// removes it. The URL keeps it as area=START,END&tracks=ID,ID.

// Slice tracks (thread, async): the ones the area's table and flame graph read.
export function isSliceTrack(t) {
  return t && (t.kind === 'thread' || t.kind === 'async');
}

export class AreaSelection {
  constructor(start, end, trackIds) {
    this.start = Math.min(start, end);
    this.end = Math.max(start, end);
    this.tracks = new Set(trackIds.map(Number));
  }

  // The slice tracks laid out between content y0 and y1 (either order).
  // rows: the layout's [{item, y, h}].
  static tracksCrossed(rows, y0, y1) {
    const lo = Math.min(y0, y1);
    const hi = Math.max(y0, y1);
    const ids = [];
    for (const r of rows) {
      if (r.y + r.h <= lo || r.y > hi) continue;
      if (r.item.kind === 'group') {
        for (const t of r.item.children) if (isSliceTrack(t)) ids.push(Number(t.trackId));
      } else if (isSliceTrack(r.item)) {
        ids.push(Number(r.item.trackId));
      }
    }
    return [...new Set(ids)];
  }

  has(track) {
    return isSliceTrack(track) && this.tracks.has(Number(track.trackId));
  }

  toggle(track) {
    if (!isSliceTrack(track)) return;
    const id = Number(track.trackId);
    if (this.tracks.has(id)) this.tracks.delete(id);
    else this.tracks.add(id);
  }

  ids() {
    return [...this.tracks].sort((a, b) => a - b);
  }

  // The query string of the area endpoints (without limit).
  query() {
    return `tracks=${this.ids().join(',')}&start=${Math.round(this.start)}&end=${Math.round(this.end)}`;
  }

  toUrl(q) {
    q.set('area', `${Math.round(this.start)},${Math.round(this.end)}`);
    if (this.tracks.size) q.set('tracks', this.ids().join(','));
  }

  // From URL parameters, or null. allIds: every slice track (an old link
  // without tracks= selects them all).
  static fromUrl(p, allIds) {
    const area = p.get('area');
    if (!area || !/^-?\d+,-?\d+$/.test(area)) return null;
    const [a, b] = area.split(',').map(Number);
    if (b < a) return null;
    const t = p.get('tracks');
    const ids = t && /^\d+(,\d+)*$/.test(t) ? t.split(',').map(Number) : allIds;
    return new AreaSelection(a, b, ids);
  }
}
