// timeline.js - what is measured per second of the host, process or thread across the range, drawn in SVG:
// CPU samples, off-CPU time (waiting), or wall-clock time as its two parts stacked, running (CPU samples
// as time) under waiting; dragging across it picks the window every view shows (comparing: the base or the new window).
import { select } from 'd3-selection';
import { scaleLinear, scaleTime } from 'd3-scale';
import { axisBottom, axisLeft } from 'd3-axis';
import { brushX } from 'd3-brush';
import { timeFormat } from 'd3-time-format';
import { h, fill } from './dom.js';
import { panel } from './panel.js';
import { latest, isAbort } from './api.js';
import { count, span, time } from './format.js';
import { filter, who } from './who.js';
import { KIND, emptyHint } from './kind.js';
import { legend } from './profile.js';
import { pickZoom, zoomedTo } from './pick.js';
import * as S from './state.js';

const HEIGHT = 150;
const M = { top: 10, right: 30, bottom: 24, left: 48 }; // left: 66 for times ("500 ms") on the axis
const RUNNING = '#e8590c', WAITING = '#3b82c4'; // style.css draws the bars in these

// Wall-clock points as their parts: waiting is the off-CPU time of the step, running the rest (CPU
// samples counted as time by the daemon). [{t, run, wait, total}] by t.
export function wallParts(wall, off) {
  const waits = new Map(off.map((q) => [q.t, q.count]));
  const byT = new Map();
  for (const q of wall) {
    const wait = Math.min(q.count, waits.get(q.t) || 0);
    byT.set(q.t, { t: q.t, run: q.count - wait, wait, total: q.count });
  }
  for (const [t, wait] of waits) if (!byT.has(t)) byT.set(t, { t, run: 0, wait, total: wait });
  return [...byT.values()].sort((a, b) => a.t - b.t);
}

// What the timeline of kind shows per second, for its title.
const PER_SECOND = { cpu: 'Samples per second', offcpu: 'Off-CPU time per second', wall: 'Running and waiting per second' };
const MAX_POINTS = 600;

// Seconds per point: 1 up to MAX_POINTS seconds, coarser beyond so the chart stays readable.
export const stepFor = (from, to) => Math.max(1, Math.ceil((to - from) / MAX_POINTS));

export function timelinePanel(root) {
  const p = panel(root, 'timeline-panel', 'Timeline');
  const chartEl = h('div', { class: 'timeline', testid: 'timeline' });
  const hint = h('div', { class: 'muted small hint', testid: 'timeline-hint' });
  const key = h('div', { class: 'timeline-legend', testid: 'timeline-legend' });
  p.body.append(chartEl, hint);
  p.tools.append(key);
  const request = latest(), requestOff = latest();
  // { from, to, step, kind, unit, tid (the thread it is of, or ''), split (running and waiting apart),
  //   points: [{t, total[, run, wait]}] }
  let data = null;
  let brush = null, brushG = null, x = null;


  async function load(st) {
    const { from, to } = st;
    const step = stepFor(from, to);
    const q = { ...filter(st), from, to, step }; // filter() holds the kind
    p.busy(true);
    if (!data) p.status('loading', 'Loading the timeline…');
    try {
      // Wall-clock time comes apart as the off-CPU time of each step and the rest, running.
      const [r, off] = await Promise.all([request('/api/v1/timeline', q),
        st.kind === 'wall' ? requestOff('/api/v1/timeline', { ...q, kind: 'offcpu' }) : null]);
      p.busy(false);
      const unit = r.unit || 'samples';
      data = { from, to, step: r.step || step, kind: st.kind, unit, tid: q.tid ?? '', split: !!off,
        points: off ? wallParts(r.points, off.points) : r.points.map((x) => ({ t: x.t, total: x.count })) };
      const sum = (f) => data.points.reduce((s, x) => s + (x[f] || 0), 0);
      const total = sum('total');
      const what = data.split ? `${time(sum('run'))} running, ${time(sum('wait'))} waiting`
        : unit === 'microseconds' ? `${time(total)}${st.kind === 'offcpu' ? ' waiting' : ''}` : `${count(total)} samples`;
      fill(p.title, `${PER_SECOND[st.kind] || PER_SECOND.cpu} of ${who(st)}`,
        h('span', { class: 'sub' }, `${span(from, to)} · ${what}${data.step > 1 ? ` · ${data.step} s per bar` : ''}`));
      fill(key, data.split ? legend([[RUNNING, 'running (on CPU)'], [WAITING, 'waiting (off CPU)']])
        : st.kind === 'offcpu' ? legend([[WAITING, 'waiting (off CPU)']]) : null);
      p.status(total ? '' : 'empty', total ? '' : `No ${KIND[st.kind].noun} of ${who(st)} in this range.`, emptyHint(st.kind));
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
    const timed = data.unit === 'microseconds';
    const left = timed ? 66 : M.left;
    const width = Math.max(320, Math.floor(chartEl.clientWidth || 800));
    const w = width - left - M.right, hgt = HEIGHT - M.top - M.bottom;
    x = scaleTime().domain([new Date(data.from * 1000), new Date(data.to * 1000)]).range([0, w]);
    const rate = (v) => v / data.step;
    // Per second: samples, or microseconds of time (a second of it per thread at most).
    const max = Math.max(timed ? 100000 : 5, ...data.points.map((q) => rate(q.total)));
    const y = scaleLinear().domain([0, max]).nice(4).range([hgt, 0]);
    const sum = (f) => data.points.reduce((s, q) => s + (q[f] || 0), 0);
    chartEl.replaceChildren();
    const svg = select(chartEl).append('svg')
      .attr('width', width).attr('height', HEIGHT).attr('role', 'img')
      .attr('aria-label', `${(PER_SECOND[data.kind] || PER_SECOND.cpu).toLowerCase()} of ${who(st)}`)
      .attr('data-kind', data.kind).attr('data-unit', data.unit).attr('data-tid', data.tid)
      .attr('data-points', data.points.length)
      .attr('data-total', sum('total'));
    if (data.split) svg.attr('data-running', sum('run')).attr('data-waiting', sum('wait'));
    const g = svg.append('g').attr('transform', `translate(${left},${M.top})`);
    g.append('g').attr('class', 'axis').attr('transform', `translate(0,${hgt})`)
      .call(axisBottom(x).ticks(Math.max(2, Math.floor(w / 110))).tickFormat(tickFormat(data.to - data.from)));
    g.append('g').attr('class', 'axis').call(axisLeft(y).ticks(4).tickSize(-w).tickFormat(timed ? (v) => (v ? time(v) : '0') : null))
      .call((a) => a.selectAll('.tick line').attr('class', 'gridline'));
    g.append('text').attr('class', 'axis-label').attr('transform', 'rotate(-90)').attr('x', -hgt / 2).attr('y', 10 - left)
      .attr('text-anchor', 'middle').text(timed ? 'time/s' : 'samples/s');
    const bands = g.append('g').attr('class', 'bands');
    const barW = Math.max(1, x(new Date((data.from + data.step) * 1000)) - x(new Date(data.from * 1000)) - (w / ((data.to - data.from) / data.step) > 4 ? 1 : 0));
    const when = (q) => new Date(q.t * 1000).toLocaleTimeString() + (data.step > 1 ? ` (${data.step} s)` : '');
    const tip = (q) => data.split ? `${when(q)}: ${time(q.run)} running, ${time(q.wait)} waiting`
      : timed ? `${when(q)}: ${time(q.total)}${data.kind === 'offcpu' ? ' waiting' : ''}` : `${when(q)}: ${count(q.total)} samples`;
    // Stacked from the axis up: [class, bottom, top] of each series.
    const series = data.split ? [['running', () => 0, (q) => q.run], ['waiting', (q) => q.run, (q) => q.total]]
      : [[data.kind === 'offcpu' ? 'waiting' : data.kind === 'wall' ? 'wall' : 'running', () => 0, (q) => q.total]];
    for (const [cls, lo, hi] of series) {
      g.append('g').attr('class', `bars ${cls}`).attr('data-testid', `timeline-bars-${cls}`)
        .selectAll('rect').data(data.points.filter((q) => hi(q) > lo(q))).join('rect')
        .attr('x', (q) => x(new Date(q.t * 1000))).attr('width', barW).attr('data-t', (q) => q.t)
        .attr('data-value', (q) => hi(q) - lo(q))
        .attr('y', (q) => y(rate(hi(q)))).attr('height', (q) => y(rate(lo(q))) - y(rate(hi(q))))
        .append('title').text(tip);
    }
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
      : [['window', st.wfrom, st.wto, pickZoom(st) ? `${st.comm || st.pid}${pickZoom(st).children ? ' and its children' : ''}` : '']];
    for (const [cls, a, b, text] of windows) {
      if (a === null) continue;
      const x0 = Math.max(0, x(new Date(a * 1000))), x1 = Math.min(x.range()[1], x(new Date(b * 1000)));
      if (x1 <= x0) continue;
      bands.append('rect').attr('class', `band ${cls}`).attr('data-testid', `timeline-band-${cls}`)
        .attr('x', x0).attr('width', x1 - x0).attr('y', 0).attr('height', hgt);
      const end = cls === 'new' || (cls === 'window' && x0 > x.range()[1] / 2); // the label inside the chart
      if (text) bands.append('text').attr('class', `band-label ${cls}`).attr('y', 12)
        .attr('x', end ? x1 - 3 : x0 + 3).attr('text-anchor', end ? 'end' : 'start').text(text);
    }
    hintText();
  }

  function hintText() {
    const st = S.get();
    if (st.mode === 'compare') fill(hint, `Drag across the timeline to set the ${st.target} window.`);
    else if (st.wfrom !== null) fill(hint, `Window ${span(st.wfrom, st.wto)}${zoomedTo(st) ? `, ${zoomedTo(st)}` : ''}: every view shows it. ` +
      'Drag again for another, click the chart for the whole range.');
    else fill(hint, 'Drag across the timeline to show a window of the range in every view.' +
      (st.kind !== 'wall' && st.pid !== null ? ' Wall shows waiting (off CPU) beside running.' : ''));
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

  S.subscribe(['kind', 'unit', 'container', 'cgroup', 'pid', 'children', 'tid', 'from', 'to', 'tick'], load);
  S.subscribe(['wfrom', 'wto', 'mode', 'bfrom', 'bto', 'nfrom', 'nto', 'target'], draw);
  return { load, redraw: draw };
}

// Tick labels: times of day, with the date when the range spans days.
function tickFormat(seconds) {
  const f = seconds > 2 * 86400 ? timeFormat('%b %d %H:%M') : seconds > 600 ? timeFormat('%H:%M') : timeFormat('%H:%M:%S');
  return (d) => f(d);
}
