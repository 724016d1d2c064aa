// dom.js - builds elements from a tag, properties and children; text always goes in as text, never as HTML.

// h('button', { class: 'x', testid: 'y', onclick: fn }, 'text', child, [more]) -> HTMLElement.
// Properties: class, testid (data-testid), on* listeners, dataset (object), boolean and DOM
// properties (checked, value, disabled, hidden) and anything else as an attribute.
export function h(tag, props = {}, ...children) {
  const el = document.createElementNS(props.ns || 'http://www.w3.org/1999/xhtml', tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === null || v === undefined || v === false || k === 'ns') continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'testid') el.dataset.testid = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value' || k === 'checked') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

// Replaces el's children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}
