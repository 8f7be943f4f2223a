// Talks to the trace server's /api: JSON requests, the bearer token, errors.
//
// Every request goes through api() so that a 401 anywhere asks for the token
// once (one shared form, however many requests were refused at the same
// time), keeps it in localStorage and retries. Replies are parsed with a
// reviver that keeps 64-bit integers exact: any integer beyond 2^53 (a koid,
// a pid, a u64 argument) becomes a decimal string, except for the time
// fields, which stay numbers so the timeline can do arithmetic on them.

const TOKEN_KEY = 'trace-viewer.token';
const TIME_KEYS = new Set(['ts', 'dur', 'start_ns', 'end_ns', 'from_ts', 'to_ts', 'last_ts',
  'bytes_done', 'bytes_total', 'size_bytes', 'total_dur', 'max_dur']);

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function getToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

function setToken(t) {
  try {
    localStorage.setItem(TOKEN_KEY, t);
  } catch {
    /* private mode: the token lives for this page only */
  }
  memToken = t;
}

let memToken = '';

export function authHeaders() {
  const t = getToken() || memToken;
  return t ? { Authorization: 'Bearer ' + t } : {};
}

// Parses JSON, keeping integers beyond 2^53 exact as strings.
export function parseExact(text) {
  return JSON.parse(text, function (key, value, ctx) {
    if (typeof value === 'number' && !Number.isSafeInteger(value) && ctx && typeof ctx.source === 'string' &&
        /^-?\d+$/.test(ctx.source) && !TIME_KEYS.has(key)) {
      return ctx.source;
    }
    return value;
  });
}

let tokenPromise = null;

// Shows the token form; resolves when the user has entered a token.
// retry: the token we had was refused.
export function askToken(retry) {
  if (tokenPromise) return tokenPromise;
  tokenPromise = new Promise((resolve) => {
    const back = document.createElement('div');
    back.className = 'modal-back';
    const form = document.createElement('form');
    form.className = 'modal token-form';
    const h = document.createElement('h2');
    h.textContent = 'Access token';
    const p = document.createElement('p');
    p.textContent = retry ? 'The server refused that token. Enter the token from the server\'s --token-file.'
      : 'This server needs an access token (the content of its --token-file).';
    const input = document.createElement('input');
    input.type = 'password';
    input.name = 'token';
    input.autocomplete = 'current-password';
    input.placeholder = 'token';
    input.required = true;
    const ok = document.createElement('button');
    ok.type = 'submit';
    ok.textContent = 'Use token';
    form.append(h, p, input, ok);
    back.append(form);
    document.body.append(back);
    input.focus();
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      setToken(input.value.trim());
      back.remove();
      tokenPromise = null;
      resolve();
    });
  });
  return tokenPromise;
}

// Fetches /api/... and returns the parsed JSON (null for an empty body).
// Throws ApiError with the server's error code and message on 4xx/5xx.
// opts: method, body, signal, exact (keep 64-bit integers exact).
export async function api(path, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(path, {
      method: opts.method || 'GET',
      body: opts.body,
      headers: authHeaders(),
      signal: opts.signal,
    });
    if (res.status === 401 && attempt < 5) {
      await askToken(attempt > 0 || !!getToken());
      continue;
    }
    const text = await res.text();
    let data = null;
    if (text) {
      try {
        data = opts.exact ? parseExact(text) : JSON.parse(text);
      } catch (e) {
        if (res.ok) throw new ApiError(res.status, 'bad_reply', `the server sent a reply that is not JSON (${e.message})`);
        data = null;
      }
    }
    if (!res.ok) {
      const err = data && data.error;
      throw new ApiError(res.status, err ? err.code : 'http_' + res.status,
        err && err.message ? err.message : `${res.status} ${res.statusText}`);
    }
    return data;
  }
}

// Uploads one file with progress. onProgress(loaded, total) during the
// upload. opts: labels (["k=v"]), description, binary (a File naming an
// XRay log's functions, sent with it as one multipart upload). Resolves
// with the server's reply (the 202 body: {id, status}).
export function uploadFile(file, onProgress, opts = {}) {
  const q = new URLSearchParams({ name: file.name });
  for (const l of opts.labels || []) q.append('label', l);
  if (opts.description) q.set('description', opts.description);
  let body = file;
  if (opts.binary) {
    // multipart: the log and the binary (or symbol map) that names its
    // functions; the binary's file name names the program
    body = new FormData();
    body.append('file', file, file.name);
    body.append('binary', opts.binary, opts.binary.name);
  }
  const size = file.size + (opts.binary ? opts.binary.size : 0);
  return new Promise((resolve, reject) => {
    const send = (attempt) => {
      const xhr = new XMLHttpRequest();
      xhr.open('POST', '/api/traces?' + q.toString());
      const h = authHeaders();
      for (const k of Object.keys(h)) xhr.setRequestHeader(k, h[k]);
      if (!opts.binary) xhr.setRequestHeader('Content-Type', 'application/octet-stream');
      xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : size);
      xhr.onerror = () => reject(new ApiError(0, 'network', 'the upload failed: the server could not be reached'));
      xhr.onload = async () => {
        if (xhr.status === 401 && attempt < 5) {
          await askToken(attempt > 0 || !!getToken());
          send(attempt + 1);
          return;
        }
        let data = null;
        try {
          data = xhr.responseText ? parseExact(xhr.responseText) : null;
        } catch {
          data = null;
        }
        if (xhr.status >= 400) {
          const err = data && data.error;
          reject(new ApiError(xhr.status, err ? err.code : 'http_' + xhr.status,
            err && err.message ? err.message : 'upload failed with status ' + xhr.status));
          return;
        }
        resolve(data);
      };
      xhr.send(body);
    };
    send(0);
  });
}
