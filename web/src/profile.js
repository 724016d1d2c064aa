// profile.js - the flame graph panel: loads the profile (CPU, off-CPU or wall-clock) of the selection and window and draws it with its controls, legend and downloads.
import { h, fill } from './dom.js';
import { panel } from './panel.js';
import { latest, isAbort } from './api.js';
import { FlameView } from './flamegraph.js';
import { flameTools } from './flametools.js';
import { profileDownloads } from './downloads.js';
import { KINDS, kindColor } from './colors.js';
import { amount, span } from './format.js';
import { KIND, emptyHint } from './kind.js';
import { filter, merged, who } from './who.js';
import * as S from './state.js';

// The legend of frame colours.
export function legend(entries) {
  return h('div', { class: 'legend' }, entries.map(([color, text]) =>
    h('span', { class: 'legend-item' }, h('i', { class: 'swatch', style: `background:${color}` }), text)));
}

// hooks.onSearch(regexp | null): told what the search highlights (the top table marks it too).
export function profilePanel(root, hooks = {}) {
  const p = panel(root, 'flame-panel', 'Flame graph');
  const details = h('div', { class: 'details', testid: 'flame-details' }, '\u00a0');
  const graph = h('div', { class: 'flamegraph', testid: 'flamegraph' });
  const downloads = h('div', { class: 'downloads' });
  const tools = flameTools(p.tools, details, 'flame', () => view);
  const view = new FlameView(graph, {
    ...tools,
    onSearch: (info) => {
      tools.onSearch(info);
      if (hooks.onSearch) hooks.onSearch(info ? view.re : null);
    },
  });
  const colors = legend(Object.entries(KINDS).map(([k, v]) => [kindColor(k, v.label), v.label])
    .concat([['#E600E6', 'search match']]));
  p.body.append(details, graph, h('div', { class: 'panel-foot' }, colors, downloads));
  profileDownloads(downloads);
  const request = latest();
  let shown = '', shownText = '';

  async function load(st, changed) {
    if (st.mode !== 'profile') return;
    const { from, to } = S.view();
    if (changed && changed.has('inverted')) view.forgetZoom();
    const q = { ...filter(st), merge: merged(st) }; // filter() holds the kind
    const key = JSON.stringify([q, from, to, st.inverted]);
    const title = `${KIND[st.kind].flame} of ${who(st)}${q.merge ? ', as one tree' : ''}`;
    fill(p.title, title, h('span', { class: 'sub' }, span(from, to)));
    p.busy(true);
    if (!view.tree || key !== shown) p.status('loading', 'Loading the profile…');
    try {
      const tree = await request('/api/v1/profile', { format: 'json', ...q, from, to, reverse: st.inverted });
      p.busy(false);
      const text = JSON.stringify(tree);
      if (key === shown && text === shownText && view.tree && view.fits()) return; // a refresh that changed nothing
      shown = key;
      shownText = text;
      if (!tree.value) {
        view.destroy();
        p.status('empty', `No ${KIND[st.kind].noun} of ${who(st)} in this window. Pick a longer range, another window or another ` +
          `process; samples show up after each flush of the daemon.`, emptyHint(st.kind));
        return;
      }
      p.status('');
      fill(p.title, title, h('span', { class: 'sub' }, `${span(from, to)} · ${amount(tree.value, tree.unit)}`));
      view.render(tree, { inverted: st.inverted, minWidth: st.minwidth });
    } catch (e) {
      if (isAbort(e)) return;
      p.busy(false);
      shown = '';
      view.destroy();
      p.status('error', e.message);
    }
  }

  S.subscribe(['kind', 'unit', 'container', 'cgroup', 'pid', 'children', 'merge', 'tid', 'from', 'to', 'wfrom', 'wto', 'inverted', 'tick', 'mode'], load);
  S.subscribe(['minwidth'], (st) => view.setMinWidth(st.minwidth));
  S.subscribe(['mode'], (st) => { p.el.hidden = st.mode !== 'profile'; });
  p.el.hidden = S.get().mode !== 'profile';
  return { load, view, tools, redraw: () => view.redraw() };
}
