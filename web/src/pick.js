// pick.js - picking a process from the list: it comes with its children when it has any, and the window every view shows zooms to when it (and they) ran; un-picking puts back the window the pick replaced.
import { latest, isAbort } from './api.js';
import * as S from './state.js';

const PAD = 0.05, MIN_PAD = 1; // seconds added each side of a lifetime: 5% of it, 1 s at least
const WHOLE = 0.8; // a padded lifetime covering this share of the range or more: no zoom (it would hardly magnify)

// The window the last pick zoomed to: { pid, comm, children, wfrom, wto, before: the window it replaced }, or null.
let zoom = null;
const request = latest();

// The window of a lifetime (first to last, unix seconds, last included) padded and clamped to range ({from, to}):
// { wfrom, wto }, or null when it spans (nearly) the whole range.
export function lifetimeWindow(first, last, range) {
  const pad = Math.max(MIN_PAD, Math.round(PAD * (last + 1 - first)));
  const wfrom = Math.max(range.from, Math.floor(first) - pad), wto = Math.min(range.to, Math.ceil(last) + 1 + pad);
  if (!(wto > wfrom) || wto - wfrom >= WHOLE * (range.to - range.from)) return null;
  return { wfrom, wto };
}

// The zoom of the last pick while it is the window shown (for the words that say whose lifetime it is), else null.
export function pickZoom(st = S.get()) {
  return zoom && st.pid === zoom.pid && st.wfrom === zoom.wfrom && st.wto === zoom.wto ? zoom : null;
}

// "when python3 (1234) and its children ran": whose lifetime the window shown is, or '' when no pick zoomed to it.
export function zoomedTo(st = S.get()) {
  const z = pickZoom(st);
  return z ? `when ${z.comm ? `${z.comm} (${z.pid})` : z.pid}${z.children ? ' and its children' : ''} ran` : '';
}

// The window to go back to when a pick's zoom goes: the one it replaced while it shows, else the one shown.
function before(st) {
  return zoom && st.wfrom === zoom.wfrom && st.wto === zoom.wto ? zoom.before : { wfrom: st.wfrom, wto: st.wto };
}

// When node's process (with children: and its subtree) ran over the range: [first, last] (unix seconds), or null.
// The list shows the view's window: when that is the whole range its node says; else the API, over the range.
async function lifetime(node, children, st) {
  if (st.wfrom === null) return children ? [node.tfirst, node.tlast] : [node.first_seen, node.last_seen];
  const r = await request('/api/v1/processes', { kind: st.kind, pid: node.pid, children: true, from: st.from, to: st.to });
  const fam = (r.processes || []).filter((p) => children || p.pid === node.pid);
  return fam.length ? [Math.min(...fam.map((p) => p.first_seen)), Math.max(...fam.map((p) => p.last_seen))] : null;
}

// Picks node (a proctree node: its row with kids, tfirst, tlast): with its children when it has any, zoomed to its lifetime.
export async function pickProcess(node) {
  const st = S.get();
  const children = node.kids.length > 0;
  const range = { from: st.from, to: st.to };
  let life = null;
  try {
    life = await lifetime(node, children, st);
  } catch (e) {
    if (isAbort(e)) return; // another pick came after
    // No lifetime (the API failed; the views will say why): picked without a zoom.
  }
  const now = S.get();
  if (now.from !== range.from || now.to !== range.to) life = null; // the range moved on meanwhile
  const back = before(now);
  const win = life && lifetimeWindow(life[0], life[1], range);
  zoom = win ? { pid: node.pid, comm: node.comm, children, ...win, before: back } : null;
  S.set({ pid: node.pid, comm: node.comm, children, merge: false, tid: null, tname: '', ...(win || back) });
}

// Back to the whole host, and to the window the pick's zoom replaced.
export function unpick() {
  const back = before(S.get());
  zoom = null;
  S.set({ pid: null, comm: '', children: false, merge: false, tid: null, tname: '', ...back });
}
