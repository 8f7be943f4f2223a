// The library's filter box: one line of text with the power of
// GET /api/traces' filters (docs/API.md), kept in the page's URL.
//
//   nightly build=1234 label:branch status:ready format:fxt pinned:yes
//   after:2026-11-01 before:2026-11-30 min:10M max:1G size>1MB sort:-size
//   device="Pixel 7 Pro"  "device=Pixel 7 Pro"  "two words"
//
// Words of the form key=value are labels that must equal; "label:key" asks
// for the key only; "key:value" with a known key is that filter, and
// size>N, size>=N, size<N, size<=N bound the upload's size; every other
// word is text the name, description or a label must contain (all of them,
// joined by spaces, as one text). Double quotes keep spaces in a word,
// wherever they stand in it (a label's value or the whole word); inside
// them \" is a quote and \\ a backslash. A word that looks like a filter
// but is not one is reported, never searched as text.

const SIZE = { k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

function parseSize(s) {
  const m = /^(\d+(?:\.\d+)?)([kmg])?i?b?$/i.exec(s);
  if (!m) return null;
  return Math.round(Number(m[1]) * (m[2] ? SIZE[m[2].toLowerCase()] : 1));
}

// The box's words: split at spaces outside double quotes, the quotes taken
// out. quoted: the word began with a quote (so it is a label or text, never
// a key:value filter); start, end: where it lies in text.
export function splitWords(text) {
  const words = [];
  let cur = null;
  let inQuote = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (!inQuote && /\s/.test(c)) {
      if (cur) words.push(cur);
      cur = null;
      continue;
    }
    cur ||= { text: '', quoted: c === '"', start: i };
    cur.end = i + 1;
    if (c === '"') inQuote = !inQuote;
    else if (inQuote && c === '\\' && i + 1 < text.length) cur.text += text[++i];
    else cur.text += c;
  }
  if (cur) words.push(cur);
  return words;
}

// A label as the box writes it: key=value, the value quoted when it holds
// a space, a quote or a backslash (or is empty after a quote would be
// needed), so that splitWords gives it back whole.
export function labelWord(k, v) {
  return /^[^\s"\\]*$/.test(v) ? `${k}=${v}` : `${k}="${v.replace(/["\\]/g, '\\$&')}"`;
}

// The box as it was likely meant when a label's value goes on past a space
// unquoted (device=Pixel 7 Pro: the label device=Pixel, then the words 7
// and Pro): the label with the plain words after it as its quoted value;
// null when there is no such label.
export function quotedSuggestion(text) {
  const words = splitWords(text);
  const i = words.findIndex((w) => !w.quoted && /^[A-Za-z0-9_.\-/:]+=/.test(w.text));
  if (i < 0) return null;
  let j = i + 1;
  while (j < words.length && !words[j].quoted && !/[:=<>"]/.test(words[j].text)) j++;
  if (j === i + 1) return null;
  const w = words[i].text;
  const eq = w.indexOf('=');
  const value = [w.slice(eq + 1), ...words.slice(i + 1, j).map((x) => x.text)].join(' ');
  return text.slice(0, words[i].start) + labelWord(w.slice(0, eq), value) + text.slice(words[j - 1].end);
}

// size>N and the like: the API's min_size/max_size (inclusive); false when
// the word is not a size bound.
function sizeBound(params, op, v) {
  const n = parseSize(v);
  if (n === null) return false;
  if (op === '>') params.set('min_size', String(n + 1));
  else if (op === '>=') params.set('min_size', String(n));
  else if (op === '<' && n > 0) params.set('max_size', String(n - 1));
  else if (op === '<=') params.set('max_size', String(n));
  else return false;
  return true;
}

// key:value: sets the filter and returns true, or false when not one.
function keyFilter(params, key, v) {
  if (key === 'status' && /^(queued|ingesting|ready|failed|live)$/.test(v)) params.set('status', v);
  else if (key === 'format' && /^(fxt|xray|xray-fdr)$/.test(v)) params.set('format', v === 'xray' ? 'xray-fdr' : v);
  else if (key === 'pinned' && /^(yes|no|true|false)$/.test(v)) params.set('pinned', /^(yes|true)$/.test(v) ? 'true' : 'false');
  else if ((key === 'after' || key === 'before') && /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}Z)?$/.test(v)) params.set(key === 'after' ? 'uploaded_after' : 'uploaded_before', v);
  else if ((key === 'min' || key === 'max') && parseSize(v) !== null) params.set(key === 'min' ? 'min_size' : 'max_size', String(parseSize(v)));
  else if (key === 'sort' && /^-?(created|name|size|duration)$/.test(v)) params.set('sort', v);
  else if (key === 'label' && v) params.append('label', v);
  else return false;
  return true;
}

// Parses the box into API parameters; errors says which words were not
// understood (they are left out, never guessed).
export function parseFilter(text) {
  const params = new URLSearchParams();
  const words = [];
  const errors = [];
  for (const { text: w, quoted } of splitWords(text)) {
    const colon = quoted ? null : /^([a-z_]+):(.*)$/i.exec(w);
    const cmp = quoted ? null : /^([a-z_]+)(<=|>=|<|>)(.*)$/i.exec(w);
    if (colon && /^https?$/i.test(colon[1])) {
      words.push(w);
      continue;
    }
    if (colon && keyFilter(params, colon[1].toLowerCase(), colon[2])) continue;
    if (/^[A-Za-z0-9_.\-/:]+=/.test(w)) params.append('label', w);
    else if (colon || (cmp && !(cmp[1].toLowerCase() === 'size' && sizeBound(params, cmp[2], cmp[3])))) errors.push(w);
    else if (!cmp) words.push(w);
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
  if (params.has('min_size') && t.size_bytes < Number(params.get('min_size'))) return false;
  if (params.has('max_size') && t.size_bytes > Number(params.get('max_size'))) return false;
  return true;
}
