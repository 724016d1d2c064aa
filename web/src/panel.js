// panel.js - a titled box on the page with a visible status line: loading, error (the API's text), empty, or nothing.
import { h, fill } from './dom.js';

// Builds a panel inside root. name gives the data-testid of the panel ("name") and of its status
// line ("name-status"). Returns { el, title, tools, body, status(kind, ...text), busy(on) }.
export function panel(root, name, titleText) {
  const title = h('h2', { class: 'panel-title', testid: `${name}-title` }, titleText);
  const tools = h('div', { class: 'panel-tools' });
  const statusEl = h('div', { class: 'status', testid: `${name}-status`, hidden: true, role: 'status' });
  const body = h('div', { class: 'panel-body' });
  const el = h('section', { class: 'panel', testid: name }, h('header', { class: 'panel-head' }, title, tools),
    statusEl, body);
  root.append(el);
  return {
    el, title, tools, body,
    // kind: 'loading' | 'error' | 'empty' | '' (hidden).
    status(kind, ...text) {
      statusEl.hidden = !kind;
      statusEl.className = `status ${kind}`;
      statusEl.dataset.kind = kind;
      fill(statusEl, kind === 'error' ? h('strong', {}, 'Error: ') : null, text);
    },
    // Marks the panel as waiting for an answer while it keeps showing what it has.
    busy(on) {
      el.classList.toggle('busy', on);
      el.setAttribute('aria-busy', on ? 'true' : 'false');
    },
  };
}
