// downloads.js - links that download what the page shows (CPU, off-CPU or wall-clock) as folded text, SVG or pprof, straight from the API.
import { h, fill } from './dom.js';
import { apiUrl, authFetch, token } from './api.js';
import { family, filter, merged } from './who.js';
import { KIND } from './kind.js';
import * as S from './state.js';

// "flamed-pid123-1700000000-1700000600.svg" ("pid123-children": with its children, "pid123-merged": as one tree); a time kind is named: "flamed-offcpu-pid123-...".
const kindPart = (st) => (st.kind === 'cpu' ? '' : `${st.kind}-`);

function name(st, from, to, ext) {
  const who = st.pid === null ? 'host' : st.tid !== null ? `pid${st.pid}-tid${st.tid}` : `pid${st.pid}${merged(st) ? '-merged' : family(st) ? '-children' : ''}`;
  return `flamed-${kindPart(st)}${who}-${from}-${to}.${ext}`;
}

// With an API token, a plain link cannot send it: such a click fetches with the token and saves the blob.
async function saveWithToken(ev) {
  if (!token()) return;
  ev.preventDefault();
  const a = ev.currentTarget;
  const res = await authFetch(a.href, { cache: 'no-store' });
  if (!res.ok) return;
  const url = URL.createObjectURL(await res.blob());
  const tmp = h('a', { href: url, download: a.getAttribute('download') });
  document.body.append(tmp);
  tmp.click();
  tmp.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

const LINK = (testid, text, href, download) => {
  const a = h('a', { class: 'button', testid, href, download, title: `Download ${text}` }, text);
  a.addEventListener('click', saveWithToken);
  return a;
};

// The profile's download links (folded, SVG, pprof) in el, kept up to date.
export function profileDownloads(el) {
  const draw = (st) => {
    const { from, to } = S.view();
    const q = { ...filter(st), merge: merged(st), from, to }; // filter() holds the kind
    const svg = { ...q, format: 'svg', reverse: st.inverted, minwidth: st.minwidth, title: `${KIND[st.kind].label}: ${name(st, from, to, 'svg')}` };
    fill(el, h('span', { class: 'muted' }, 'Download'),
      LINK('download-folded', 'folded', apiUrl('/api/v1/profile', { ...q, format: 'folded' }), name(st, from, to, 'folded')),
      LINK('download-svg', 'SVG', apiUrl('/api/v1/profile', svg), name(st, from, to, 'svg')),
      LINK('download-pprof', 'pprof', apiUrl('/api/v1/profile', { ...q, format: 'pprof' }), name(st, from, to, 'pb.gz')));
  };
  S.subscribe(['kind', 'unit', 'container', 'cgroup', 'pid', 'children', 'merge', 'tid', 'from', 'to', 'wfrom', 'wto', 'inverted', 'minwidth'], draw);
  draw(S.get());
}

// The differential profile's download links (folded "stack base new" lines, SVG) in el.
export function diffDownloads(el) {
  const draw = (st) => {
    if (st.bfrom === null || st.nfrom === null) return fill(el);
    const q = { kind: st.kind, pid: st.pid, children: family({ ...st, tid: null }), base_from: st.bfrom, base_to: st.bto,
      from: st.nfrom, to: st.nto };
    const base = `diff-${kindPart(st)}${st.pid ?? 'host'}${q.children ? '-children' : ''}-${st.bfrom}-${st.nfrom}`;
    fill(el, h('span', { class: 'muted' }, 'Download'),
      LINK('download-diff-folded', 'folded', apiUrl('/api/v1/diff', { ...q, format: 'folded' }), `flamed-${base}.folded`),
      LINK('download-diff-svg', 'SVG', apiUrl('/api/v1/diff', { ...q, format: 'svg', reverse: st.inverted }), `flamed-${base}.svg`));
  };
  S.subscribe(['kind', 'pid', 'children', 'bfrom', 'bto', 'nfrom', 'nto', 'inverted'], draw);
  draw(S.get());
}
