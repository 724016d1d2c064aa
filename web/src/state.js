// state.js - what the page shows (what is measured, range, window, service, process, thread, view options) and who is told when it changes; kept in the URL's #fragment so a view can be linked.

export const PRESETS = { '5m': 300, '15m': 900, '1h': 3600, '6h': 21600, '24h': 86400 };
// What the views measure, the API's kind=: CPU samples, time off CPU (blocked), or wall-clock time (both).
export const KINDS = ['cpu', 'offcpu', 'wall'];

const state = {
  kind: 'cpu',      // a KINDS entry: every view asks the API for it
  preset: '1h',     // a key of PRESETS, or 'custom'
  from: 0, to: 0,   // the range the timeline spans, unix seconds, [from, to)
  wfrom: null, wto: null, // the window dragged on the timeline (null: the whole range)
  pid: null, comm: '',    // the process selected (null: the whole host)
  unit: '', container: '', cgroup: '', // the service picked: a systemd unit, a container by id, or a cgroup path ('': none)
  children: false,  // the process with its descendants (its children, theirs, ...); a thread picked takes that thread alone
  merge: false,     // with children: the flame graph folds the family into one tree (no root frame per process)
  tid: null, tname: '',   // its thread selected (null: every thread)
  inverted: false,  // icicle view: hot leaves on top, their callers below
  minwidth: 0.5,    // frames narrower than this many pixels are not drawn
  mode: 'profile',  // 'profile' or 'compare'
  bfrom: null, bto: null, nfrom: null, nto: null, // compare: the base and the new window
  target: 'base',   // compare: which window a drag on the timeline sets
  auto: false,      // auto-refresh
  tick: 0,          // bumped by each refresh: everything reloads
};

const subscribers = [];

export const get = () => state;

// The window every view shows: the dragged one, else the whole range.
export const view = () =>
  state.wfrom !== null ? { from: state.wfrom, to: state.wto } : { from: state.from, to: state.to };

// Calls fn(state, changedKeys) after each set() that changes one of keys.
export function subscribe(keys, fn) {
  subscribers.push({ keys, fn });
}

// Changes some keys, records them in the URL and tells the subscribers of what changed, each once.
export function set(patch) {
  const changed = new Set();
  for (const [k, v] of Object.entries(patch)) {
    if (!(k in state)) throw new Error(`state: no key ${k}`);
    if (state[k] !== v) {
      state[k] = v;
      changed.add(k);
    }
  }
  if (!changed.size) return;
  writeHash();
  for (const s of subscribers) if (s.keys.some((k) => changed.has(k))) s.fn(state, changed);
}

// The range of a preset, ending now.
export function presetRange(preset, now = Date.now() / 1000) {
  const to = Math.floor(now) + 1;
  return { from: to - PRESETS[preset], to };
}

const HASHED = ['kind', 'preset', 'from', 'to', 'wfrom', 'wto', 'pid', 'comm', 'unit', 'container', 'cgroup', 'children', 'merge', 'tid', 'tname', 'inverted', 'minwidth', 'mode',
  'bfrom', 'bto', 'nfrom', 'nto', 'auto'];
const NUMERIC = new Set(['from', 'to', 'wfrom', 'wto', 'pid', 'tid', 'minwidth', 'bfrom', 'bto', 'nfrom', 'nto']);
const DEFAULTS = { ...state };

function writeHash() {
  const q = new URLSearchParams();
  for (const k of HASHED) {
    if ((k === 'from' || k === 'to') && state.preset !== 'custom') continue;
    const v = state[k];
    if (v === null || v === DEFAULTS[k]) continue;
    q.set(k, typeof v === 'boolean' ? (v ? '1' : '0') : String(v));
  }
  history.replaceState(null, '', '#' + q.toString());
}

// Reads the state a link carries (ignoring what does not parse), then fills in the range.
export function readHash() {
  const q = new URLSearchParams(location.hash.slice(1));
  const patch = {};
  for (const k of HASHED) {
    if (!q.has(k)) continue;
    const raw = q.get(k);
    if (typeof DEFAULTS[k] === 'boolean') patch[k] = raw === '1';
    else if (NUMERIC.has(k)) {
      const n = Number(raw);
      if (raw !== '' && Number.isFinite(n) && n >= 0) patch[k] = n;
    } else patch[k] = raw;
  }
  if (patch.preset !== 'custom' && !(patch.preset in PRESETS)) delete patch.preset;
  if (patch.mode !== 'compare') delete patch.mode;
  if (!KINDS.includes(patch.kind)) delete patch.kind;
  Object.assign(state, patch);
  if (state.preset !== 'custom' || !(state.from < state.to)) {
    if (state.preset === 'custom') state.preset = '1h';
    Object.assign(state, presetRange(state.preset));
  }
  for (const [a, b] of [['wfrom', 'wto'], ['bfrom', 'bto'], ['nfrom', 'nto']])
    if (!(state[a] !== null && state[b] !== null && state[a] < state[b])) state[a] = state[b] = null;
}
