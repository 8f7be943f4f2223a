// Where a trace has activity: XRay logs often hold one long call (main)
// around a burst of short ones in a sliver of the trace, so opening on the
// whole trace shows almost nothing. activityRange narrows [start, end] to
// the shortest run of buckets holding ACTIVE_SHARE of the slice starts, and
// again inside it, while that cuts the range by 4x or more.

import { api } from './api.js';

const BUCKETS = 1024;
const ACTIVE_SHARE = 0.8;
const MIN_SPAN = 2000; // ns: no point narrowing further

// The shortest [i, j] whose counts sum to at least share of the total.
export function densestRun(counts, share) {
  const total = counts.reduce((a, b) => a + b, 0);
  const need = total * share;
  let best = [0, counts.length - 1];
  let sum = 0;
  let i = 0;
  for (let j = 0; j < counts.length; j++) {
    sum += counts[j];
    while (i < j && sum - counts[i] >= need) sum -= counts[i++];
    if (sum >= need && j - i < best[1] - best[0]) best = [i, j];
  }
  return best;
}

// Resolves with {start, end}, the range with activity (the whole one when
// nothing narrower holds it, or when the trace cannot be asked). The counts
// are the overview's (slice starts per bucket, exact, read from the level of
// detail): a GROUP BY over slices read every row, seconds on a big trace.
export async function activityRange(base, start, end) {
  let lo = start;
  let hi = end;
  for (let round = 0; round < 4 && hi - lo > MIN_SPAN; round++) {
    let r;
    try {
      r = await api(`${base}/overview?start=${lo}&end=${hi}&buckets=${BUCKETS}`);
    } catch {
      break;
    }
    const counts = new Array(BUCKETS).fill(0);
    for (const p of r.processes || []) p.counts.forEach((c, i) => { counts[i] += Number(c); });
    if (counts.every((c) => c === 0)) break;
    const [i, j] = densestRun(counts, ACTIVE_SHARE);
    // bucket k holds [lo + k * w, lo + (k + 1) * w), w = (hi - lo + 1) / BUCKETS
    const w = (hi - lo + 1) / BUCKETS;
    const nlo = Math.floor(lo + i * w);
    const nhi = Math.ceil(lo + (j + 1) * w);
    if ((nhi - nlo) * 4 > hi - lo) break;
    lo = nlo;
    hi = nhi;
  }
  return { start: lo, end: hi };
}
