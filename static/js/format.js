// Formatting shared by the pages: durations and times in readable units,
// byte sizes, dates, and the colour of a slice name.

const UNITS = [
  [1e9, 's'],
  [1e6, 'ms'],
  [1e3, 'µs'],
  [1, 'ns'],
];

function trim(x, digits) {
  let s = x.toFixed(digits);
  if (s.indexOf('.') >= 0) s = s.replace(/\.?0+$/, '');
  return s === '-0' ? '0' : s; // a value that rounds to zero has no sign

}

// A duration in ns as "1.25 ms"; -1 (never ended) as "did not end".
export function fmtDur(ns) {
  if (ns === null || ns === undefined) return '—';
  if (ns < 0) return 'did not end';
  if (ns === 0) return '0 ns';
  for (const [scale, unit] of UNITS) {
    if (ns >= scale) return trim(ns / scale, ns / scale >= 100 ? 1 : 3) + ' ' + unit;
  }
  return trim(ns, 3) + ' ns';
}

// A time relative to the trace start, precise to the ns: "12.345 678 ms".
export function fmtTime(ns) {
  ns = Math.round(ns);
  const neg = ns < 0;
  ns = Math.abs(ns);
  let out;
  if (ns >= 1e9) out = trim(ns / 1e9, 9) + ' s';
  else if (ns >= 1e6) out = trim(ns / 1e6, 6) + ' ms';
  else if (ns >= 1e3) out = trim(ns / 1e3, 3) + ' µs';
  else out = ns + ' ns';
  return (neg ? '-' : '') + out;
}

// The step between axis ticks: the 1-2-5 value nearest to target ns.
export function tickStep(targetNs) {
  if (!(targetNs > 1)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(targetNs)));
  for (const m of [1, 2, 5, 10]) {
    if (p * m >= targetNs) return p * m;
  }
  return p * 10;
}

// An axis label for t (ns from trace start) with ticks step ns apart. The
// unit follows ref, the largest time on the axis, so that every label of
// one axis has the same unit ("1.0002 s", not "1000200 µs"); the digits
// follow the step.
export function fmtTick(t, step, ref = step) {
  const m = Math.max(Math.abs(ref), step);
  let scale = 1;
  let unit = 'ns';
  for (const [s, u] of UNITS) {
    if (m >= s) {
      scale = s;
      unit = u;
      break;
    }
  }
  const digits = Math.min(9, Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9)));
  return trim(t / scale, digits) + ' ' + unit;
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return '—';
  n = Number(n);
  if (n < 1024) return n + ' B';
  if (n < 1024 * 1024) return trim(n / 1024, 1) + ' KiB';
  if (n < 1024 * 1024 * 1024) return trim(n / 1048576, 1) + ' MiB';
  return trim(n / 1073741824, 2) + ' GiB';
}

export function fmtDate(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
  });
}

export function fmtCount(n) {
  if (n === null || n === undefined) return '—';
  return Number(n).toLocaleString('en-US');
}

// FNV-1a over the UTF-16 code units: a stable hash for colours.
export function hashString(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const colorCache = new Map();

// The colours of a slice name: {fill, merged, text, line}. Names hash to a hue;
// pastel fills keep dark text readable on every hue.
export function colorFor(name) {
  let c = colorCache.get(name);
  if (c) return c;
  const h = hashString(name || '');
  const hue = h % 360;
  const sat = 45 + ((h >>> 9) % 25);
  const light = 62 + ((h >>> 17) % 12);
  c = {
    fill: `hsl(${hue} ${sat}% ${light}%)`,
    merged: `hsl(${hue} 12% ${light + 4}%)`,
    dark: `hsl(${hue} ${sat}% ${light - 30}%)`,
    text: '#111',
  };
  if (colorCache.size > 5000) colorCache.clear();
  colorCache.set(name, c);
  return c;
}

const VALUE_UNITS = [
  [1e18, 'E'],
  [1e15, 'P'],
  [1e12, 'T'],
  [1e9, 'G'],
  [1e6, 'M'],
];

// A counter value in short form: 1.5 M, 12.3 k, 0.1235, 9e-9; never more
// than about five digits (a uint64 counter near 2^64 is "18.45 E").
export function fmtValue(v) {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e21) return dropZeros(v.toPrecision(4));
  for (const [scale, unit] of VALUE_UNITS) {
    if (a >= scale) return (v / scale).toFixed(2).replace(/\.?0+$/, '') + ' ' + unit;
  }
  if (a >= 1e4) return (v / 1e3).toFixed(1).replace(/\.?0+$/, '') + ' k';
  if (Number.isInteger(v)) return String(v);
  return dropZeros(v.toPrecision(4));
}

// "9.000e-9" as "9e-9", "0.1200" as "0.12"; digits before the point stay.
function dropZeros(s) {
  return s.replace(/\.(\d*?)0+(?=e|$)/, (m, d) => (d ? '.' + d : ''));
}
