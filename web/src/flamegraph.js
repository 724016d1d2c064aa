// flamegraph.js - one d3-flame-graph chart in a container: our colours and labels, search with its matched share, click to zoom (kept across reloads), inverted view, minimum frame width.
import { select } from 'd3-selection';
import flamegraph, { colorMapper } from 'd3-flame-graph';
import { frameColor } from './colors.js';
import { amount, percent, signedAmount } from './format.js';

const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// A search term as a case-insensitive regular expression; one that does not compile is taken literally.
export function searchRegExp(term, exact = false) {
  if (!term) return null;
  if (exact) return new RegExp(`^${escapeRegExp(term)}$`);
  try {
    return new RegExp(term, 'i');
  } catch {
    return new RegExp(escapeRegExp(term), 'i');
  }
}

export class FlameView {
  // el: the container; opts.diff: a differential tree (nodes carry "delta"); opts.onSearch({sum,
  // total, frames} | null), opts.onZoom(names of the zoomed frame's path, [] at the root),
  // opts.onHover(text | null).
  constructor(el, opts = {}) {
    this.el = el;
    this.opts = opts;
    this.chart = null;
    this.tree = null;
    this.re = null;
    this.zoomPath = [];
  }

  // Draws tree ({name, value, children[, delta]}) width the container's width.
  render(tree, { inverted = false, minWidth = 0 } = {}) {
    this.destroy();
    this.tree = tree;
    this.inverted = inverted;
    this.minWidth = minWidth;
    const total = tree.value || 1;
    const unit = tree.unit || 'samples'; // "samples", or "microseconds" of off-CPU or wall-clock time
    const diff = !!this.opts.diff;
    const chart = flamegraph()
      .width(Math.max(300, Math.floor(this.el.clientWidth || 960)))
      .cellHeight(18)
      .minHeight(120)
      .transitionDuration(250)
      .inverted(inverted)
      .minFrameSize(minWidth)
      .setColorMapper(diff ? colorMapper.differentialColorMapper : frameColor)
      .setLabelHandler((d) => label(d, total, diff, unit))
      .setSearchMatch((d) => !!this.re && this.re.test(d.data.name))
      .setSearchHandler((results, sum, all) => this.opts.onSearch &&
        this.opts.onSearch(this.re ? { sum, total: all, frames: results.length, unit } : null))
      .setDetailsHandler((text) => this.opts.onHover && this.opts.onHover(text))
      .onClick((d) => {
        this.zoomPath = d.ancestors().reverse().slice(1).map((n) => n.data.name);
        if (this.opts.onZoom) this.opts.onZoom(this.zoomPath);
      });
    this.chart = chart;
    select(this.el).datum(tree).call(chart);
    this.el.dataset.total = String(tree.value);
    this.el.dataset.unit = unit;
    this.el.dataset.inverted = inverted ? '1' : '0';
    this.restoreZoom();
    if (this.re) chart.search('re');
    if (!inverted) this.el.scrollTop = this.el.scrollHeight; // a tall graph: its roots first
  }

  // Whether the chart drawn has the container's width still (it may have been drawn while hidden).
  fits() {
    return !!this.chart && this.chart.width() === Math.max(300, Math.floor(this.el.clientWidth || 960));
  }

  // Draws the same tree again (after a resize), keeping zoom and search.
  redraw() {
    if (this.tree) this.render(this.tree, { inverted: this.inverted, minWidth: this.minWidth });
  }

  // Highlights frames matching term (regular expression, else literal; exact: the whole name).
  search(term, exact = false) {
    this.re = searchRegExp(term, exact);
    if (!this.chart) return;
    if (this.re) this.chart.search('re');
    else this.clearSearch();
  }

  clearSearch() {
    this.re = null;
    if (this.chart) this.chart.clear();
    if (this.opts.onSearch) this.opts.onSearch(null);
  }

  resetZoom() {
    this.zoomPath = [];
    if (this.chart) this.chart.resetZoom();
    if (this.opts.onZoom) this.opts.onZoom([]);
  }

  // Forgets the zoom (for a tree of another shape, as the inverted one is).
  forgetZoom() {
    this.zoomPath = [];
  }

  setMinWidth(px) {
    this.minWidth = px;
    if (this.chart) this.chart.minFrameSize(px).update();
  }

  // Zooms into the frame of the same path in the new tree, when it still has one.
  restoreZoom() {
    let node = select(this.el).datum();
    for (const name of this.zoomPath) {
      node = node && node.children && node.children.find((c) => c.data.name === name);
      if (!node) break;
    }
    if (node && this.zoomPath.length) this.chart.zoomTo(node);
    else if (this.zoomPath.length) {
      this.zoomPath = [];
      if (this.opts.onZoom) this.opts.onZoom([]);
    }
  }

  destroy() {
    if (this.chart) this.chart.destroy();
    this.chart = null;
    this.tree = null;
    this.el.replaceChildren();
    delete this.el.dataset.total;
    delete this.el.dataset.unit;
  }
}

// The text of a frame's tooltip and of the details line while the mouse is over it.
function label(d, total, diff, unit) {
  const v = d.data.value;
  const base = `${d.data.name} — ${amount(v, unit)}, ${percent(v / total)}`;
  return diff ? `${base}, ${signedAmount(d.data.delta || 0, unit)} against the base` : base;
}
