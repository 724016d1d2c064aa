// timeline.js - samples per second of the host, process or thread across the range, drawn in SVG; dragging across it picks the window every view shows (comparing: the base or the new window).
import { select } from 'd3-selection';
import { scaleLinear, scaleTime } from 'd3-scale';
import { axisBottom, axisLeft } from 'd3-axis';
import { brushX } from 'd3-brush';
import { timeFormat } from 'd3-time-format';
import { h, fill } from './dom.js';
import { panel } from './panel.js';
import { latest, isAbort } from './api.js';
import { count, span } from './format.js';
import { filter, who } from './who.js';
import * as S from './state.js';

const HEIGHT = 150;
const M = { top: 10, right: 30, bottom: 24, left: 48 };
const MAX_POINTS = 600;

// Seconds per point: 1 up to MAX_POINTS seconds, coarser beyond so the chart stays readable.
export const stepFor = (from, to) => Math.max(1, Math.ceil((to - from) / MAX_POINTS));

export function timelinePanel(root) {
  const p = panel(root, 'timeline-panel', 'Timeline');
  const chartEl = h('div', { class: 'timeline', testid: 'timeline' });
  const hint = h('div', { class: 'muted small hint', testid: 'timeline-hint' });
  p.body.append(chartEl, hint);
  const request = latest();
  let data = null; // { from, to, step, points }
  let brush = null, brushG = null, x = null;


  async function load(st) {
    const { from, to } = st;
    const step = stepFor(from, to);
    p.busy(true);
    if (!data) p.status('loading', 'Loading the timeline…');
    try {
      const r = await request('/api/v1/timeline', { ...filter(st), from, to, step });
      p.busy(false);
      data = { from, to, step: r.step || step, points: r.points };
      const total = r.points.reduce((s, q) => s + q.count, 0);
      fill(p.title, `Samples per second of ${who(st)}`,
        h('span', { class: 'sub' }, `${span(from, to)} · ${count(total)} samples${data.step > 1 ? ` · ${data.step} s per bar` : ''}`));
      p.status(total ? '' : 'empty', total ? '' : `No samples of ${who(st)} in this range.`);
      draw();
    } catch (e) {
      if (isAbort(e)) return;
      p.busy(false);
      data = null;
      chartEl.replaceChildren();
      p.status('error', e.message);
    }
  }

  function draw() {
    if (!data) return;
    const st = S.get();
    const width = Math.max(320, Math.floor(chartEl.clientWidth || 800));
    const w = width - M.left - M.right, hgt = HEIGHT - M.top - M.bottom;
    x = scaleTime().domain([new Date(data.from * 1000), new Date(data.to * 1000)]).range([0, w]);
    const rate = (q) => q.count / data.step;
    const max = Math.max(5, ...data.points.map(rate));
    const y = scaleLinear().domain([0, max]).nice(4).range([hgt, 0]);
    chartEl.replaceChildren();
    const svg = select(chartEl).append('svg')
      .attr('width', width).attr('height', HEIGHT).attr('role', 'img')
      .attr('aria-label', `samples per second of ${who(st)}`)
      .attr('data-points', data.points.length)
      .attr('data-total', data.points.reduce((s, q) => s + q.count, 0));
    const g = svg.append('g').attr('transform', `translate(${M.left},${M.top})`);
    g.append('g').attr('class', 'axis').attr('transform', `translate(0,${hgt})`)
      .call(axisBottom(x).ticks(Math.max(2, Math.floor(w / 110))).tickFormat(tickFormat(data.to - data.from)));
    g.append('g').attr('class', 'axis').call(axisLeft(y).ticks(4).tickSize(-w))
      .call((a) => a.selectAll('.tick line').attr('class', 'gridline'));
    g.append('text').attr('class', 'axis-label').attr('transform', 'rotate(-90)').attr('x', -hgt / 2).attr('y', -38)
      .attr('text-anchor', 'middle').text('samples/s');
    const bands = g.append('g').attr('class', 'bands');
    const barW = Math.max(1, x(new Date((data.from + data.step) * 1000)) - x(new Date(data.from * 1000)) - (w / ((data.to - data.from) / data.step) > 4 ? 1 : 0));
    g.append('g').attr('class', 'bars').selectAll('rect').data(data.points).join('rect')
      .attr('x', (q) => x(new Date(q.t * 1000))).attr('width', barW)
      .attr('y', (q) => y(rate(q))).attr('height', (q) => hgt - y(rate(q)))
      .append('title').text((q) => `${new Date(q.t * 1000).toLocaleTimeString()}: ${count(q.count)} samples`);
    brush = brushX().extent([[0, 0], [w, hgt]]).on('end', ended);
    brushG = g.append('g').attr('class', 'brush').attr('data-testid', 'timeline-brush').call(brush);
    drawBands(bands, hgt);
  }

  // The windows picked, as bands: the window every view shows, or comparing, the base and the new one.
  // The brush itself only shows while dragging, so every drag starts a new window.
  function drawBands(bands, hgt) {
    const st = S.get();
    const windows = st.mode === 'compare'
      ? [['base', st.bfrom, st.bto, 'base'], ['new', st.nfrom, st.nto, 'new']]
      : [['window', st.wfrom, st.wto, '']];
    for (const [cls, a, b, text] of windows) {
      if (a === null) continue;
      const x0 = Math.max(0, x(new Date(a * 1000))), x1 = Math.min(x.range()[1], x(new Date(b * 1000)));
      if (x1 <= x0) continue;
      bands.append('rect').attr('class', `band ${cls}`).attr('data-testid', `timeline-band-${cls}`)
        .attr('x', x0).attr('width', x1 - x0).attr('y', 0).attr('height', hgt);
      if (text) bands.append('text').attr('class', `band-label ${cls}`).attr('y', 12)
        .attr('x', cls === 'new' ? x1 - 3 : x0 + 3).attr('text-anchor', cls === 'new' ? 'end' : 'start').text(text);
    }
    hintText();
  }

  function hintText() {
    const st = S.get();
    if (st.mode === 'compare') fill(hint, `Drag across the timeline to set the ${st.target} window.`);
    else if (st.wfrom !== null) fill(hint, `Window ${span(st.wfrom, st.wto)}: every view shows it. Drag again for another, click the chart for the whole range.`);
    else fill(hint, 'Drag across the timeline to show a window of the range in every view.');
  }

  // A drag ended: the window it covers, whole seconds, at least one.
  function ended(event) {
    if (!event.sourceEvent) return; // our own brush.move
    const st = S.get();
    let patch;
    if (!event.selection) {
      patch = st.mode === 'compare' ? null : { wfrom: null, wto: null };
    } else {
      const [a, b] = event.selection.map((v) => x.invert(v).getTime() / 1000);
      let from = Math.max(data.from, Math.floor(a)), to = Math.min(data.to, Math.ceil(b));
      if (to <= from) to = from + 1;
      patch = st.mode !== 'compare' ? { wfrom: from, wto: to }
        : st.target === 'base' ? { bfrom: from, bto: to, target: 'new' } : { nfrom: from, nto: to };
    }
    brushG.call(brush.move, null);
    if (patch) S.set(patch);
  }

  S.subscribe(['pid', 'tid', 'from', 'to', 'tick'], load);
  S.subscribe(['wfrom', 'wto', 'mode', 'bfrom', 'bto', 'nfrom', 'nto', 'target'], draw);
  return { load, redraw: draw };
}

// Tick labels: times of day, with the date when the range spans days.
function tickFormat(seconds) {
  const f = seconds > 2 * 86400 ? timeFormat('%b %d %H:%M') : seconds > 600 ? timeFormat('%H:%M') : timeFormat('%H:%M:%S');
  return (d) => f(d);
}
