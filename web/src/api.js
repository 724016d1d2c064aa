// api.js - the daemon's HTTP API: URLs with their query parameters, and JSON requests whose failures carry the API's "error" text.

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
  }
}

// path?k=v&... leaving out parameters that are null, undefined, false or ''.
export function apiUrl(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === false || v === '') continue;
    q.set(k, v === true ? '1' : String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

// The API token, for a flamed started with --auth-token-file: asked for once, kept for this tab.
const TOKEN_KEY = 'flamed-token';
export const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
const authHeaders = () => (token() ? { Authorization: `Bearer ${token()}` } : {});

// Asks for the token after a 401 with token `sent` (one prompt at a time; none when a newer token came
// meanwhile); true when there is a token to try.
let asking = null;
function askToken(sent) {
  if (token() !== sent) return Promise.resolve(true);
  if (!asking) {
    asking = Promise.resolve().then(() => {
      const t = window.prompt('This flamed needs its API token (the first line of its --auth-token-file):');
      if (t) sessionStorage.setItem(TOKEN_KEY, t.trim());
      asking = null;
      return !!t;
    });
  }
  return asking;
}

// fetch() with the token; on a 401 asks for it, up to three times while the token tried is refused.
export async function authFetch(url, init = {}) {
  const get = () => fetch(url, { ...init, headers: { ...init.headers, ...authHeaders() } });
  let sent = token();
  let res = await get();
  for (let tries = 0; res.status === 401 && tries < 3 && (await askToken(sent)); tries++) {
    sent = token();
    res = await get();
  }
  return res;
}

// GETs path and parses its JSON; throws ApiError with the daemon's {"error"} text (or what went wrong
// on the way), or the AbortError of signal.
export async function getJSON(path, params, signal) {
  let res;
  try {
    res = await authFetch(apiUrl(path, params), { signal, cache: 'no-store' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(`cannot reach flamed (${e.message}): is it still running?`, 0);
  }
  const text = await res.text();
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: reported below */
  }
  if (!res.ok) {
    const why = body && typeof body.error === 'string' ? body.error : `${res.status} ${res.statusText}`;
    throw new ApiError(`${path}: ${why}`, res.status);
  }
  if (body === null) throw new ApiError(`${path}: the answer is not JSON`, res.status);
  return body;
}

// A requester that keeps only its latest request: starting one aborts the one before, so a slow
// answer never overwrites a newer one. Aborted requests reject with an AbortError (see isAbort).
export function latest() {
  let ctl = null;
  return (path, params) => {
    if (ctl) ctl.abort();
    ctl = new AbortController();
    return getJSON(path, params, ctl.signal);
  };
}

export const isAbort = (e) => e && e.name === 'AbortError';
