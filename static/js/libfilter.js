// The library's filter box: one line of text with the power of
// GET /api/traces' filters (docs/API.md), kept in the page's URL.
//
//   nightly build=1234 label:branch status:ready format:fxt pinned:yes
//   after:2026-11-01 before:2026-11-30 min:10M max:1G sort:-size
//
// Words of the form key=value are labels that must equal; "label:key" asks
// for the key only; "key:value" with a known key is that filter; every
// other word is text the name, description or a label must contain (all
// of them, joined by spaces, as one text).

const SIZE = { k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

function parseSize(s) {
  const m = /^(\d+)([kmg])?i?b?$/i.exec(s);
  if (!m) return null;
  return String(Number(m[1]) * (m[2] ? SIZE[m[2].toLowerCase()] : 1));
}

// Parses the box into API parameters; errors says which words were not
// understood (they are left out, never guessed).
export function parseFilter(text) {
  const params = new URLSearchParams();
  const words = [];
  const errors = [];
  for (const w of text.trim().split(/\s+/).filter(Boolean)) {
    const colon = /^([a-z_]+):(.*)$/i.exec(w);
    if (colon) {
      const [, k, v] = colon;
      const key = k.toLowerCase();
      if (key === 'status' && /^(queued|ingesting|ready|failed)$/.test(v)) params.set('status', v);
      else if (key === 'format' && /^(fxt|xray|xray-fdr)$/.test(v)) params.set('format', v === 'xray' ? 'xray-fdr' : v);
      else if (key === 'pinned' && /^(yes|no|true|false)$/.test(v)) params.set('pinned', /^(yes|true)$/.test(v) ? 'true' : 'false');
      else if ((key === 'after' || key === 'before') && /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}Z)?$/.test(v)) params.set(key === 'after' ? 'uploaded_after' : 'uploaded_before', v);
      else if ((key === 'min' || key === 'max') && parseSize(v) !== null) params.set(key === 'min' ? 'min_size' : 'max_size', parseSize(v));
      else if (key === 'sort' && /^-?(created|name|size|duration)$/.test(v)) params.set('sort', v);
      else if (key === 'label' && v) params.append('label', v);
      else if (/^https?$/.test(key)) words.push(w);
      else errors.push(w);
      continue;
    }
    if (/^[A-Za-z0-9_.\-/:]+=/.test(w)) params.append('label', w);
    else words.push(w);
  }
  if (words.length) params.set('q', words.join(' '));
  return { params, errors };
}

// Whether a trace object passes the parsed filter: the same rules as the
// server's, so that the list can follow typing before the server answers.
export function matchesFilter(t, params) {
  const q = (params.get('q') || '').toLowerCase();
  const labels = t.labels || {};
  if (q) {
    const hay = [t.name || '', t.description || '', ...Object.entries(labels).map(([k, v]) => `${k}=${v}`)];
    if (!hay.some((s) => s.toLowerCase().includes(q))) return false;
  }
  for (const l of params.getAll('label')) {
    const eq = l.indexOf('=');
    if (eq < 0 ? !(l in labels) : labels[l.slice(0, eq)] !== l.slice(eq + 1)) return false;
  }
  if (params.has('status') && t.status !== params.get('status')) return false;
  if (params.has('format') && t.format !== params.get('format')) return false;
  if (params.has('pinned') && Boolean(t.pinned) !== (params.get('pinned') === 'true')) return false;
  return true;
}
