// app.js - the dashboard's entry: reads the state a link carries, builds the panels and wires them together.
import './style.css';
import * as S from './state.js';
import { rangeBar } from './range.js';
import { kindSwitch } from './kind.js';
import { selectionBar, daemonStatus } from './selection.js';
import { processesPanel } from './processes.js';
import { threadsPanel } from './threads.js';
import { timelinePanel } from './timeline.js';
import { profilePanel } from './profile.js';
import { topPanel } from './top.js';
import { comparePanel } from './compare.js';

const $ = (id) => document.getElementById(id);

S.readHash();
rangeBar($('controls'));
$('controls').querySelector('.tabs').after(kindSwitch($('kind-hint')));
daemonStatus($('daemon'), $('banner'));
selectionBar($('selection'));
const processes = processesPanel($('side'));
const threads = threadsPanel($('side'));
const timeline = timelinePanel($('main'));
let top = null;
const profile = profilePanel($('main'), {
  onSearch: (re) => {
    if (!top) return;
    top.mark(re);
    if (!re) top.select(null);
  },
});
const compare = comparePanel($('main'));
top = topPanel($('main'), (name) => profile.tools.highlight(name));

const st = S.get();
processes.load(st);
threads.load(st);
timeline.load(st);
profile.load(st);
top.load(st);
compare.load(st);

// Another link typed or pasted into the address bar: start again from it.
window.addEventListener('hashchange', () => location.reload());

// Charts take the width of their box: draw them again when it changes.
let resizeTimer = null;
let lastWidth = window.innerWidth;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    if (window.innerWidth === lastWidth) return;
    lastWidth = window.innerWidth;
    timeline.redraw();
    profile.redraw();
    compare.redraw();
  }, 150);
});

// "/" searches the flame graph, Escape resets its zoom (as flamed's SVGs do).
document.addEventListener('keydown', (e) => {
  const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement && document.activeElement.tagName);
  if (e.key === '/' && !typing && S.get().mode === 'profile') {
    e.preventDefault();
    profile.tools.focus();
  } else if (e.key === 'Escape' && !typing && S.get().mode === 'profile') {
    profile.view.resetZoom();
  }
});
