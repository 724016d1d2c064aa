// colors.js - the kind of a frame from its name (the FlameGraph suffixes) and the colour each kind is drawn in.

// 'kernel' (name_[k]), 'jit' (_[j]), 'inlined' (_[i]), 'unknown' ([unknown], module+0xOFF), 'python'
// ("QUALNAME (FILE)", no parenthesis in FILE: native names never hold " (") or 'user' (native code).
export function frameKind(name) {
  if (!name) return 'unknown';
  if (name.startsWith('[unknown]') || /\+0x[0-9a-f]+(_\[[kji]\])?$/i.test(name)) return 'unknown';
  if (name.endsWith('_[k]')) return 'kernel';
  if (name.endsWith('_[j]')) return 'jit';
  if (name.endsWith('_[i]')) return 'inlined';
  if (/. \([^()]+\)$/.test(name)) return 'python';
  return 'user';
}

// Hue range, saturation, lightness of each kind; a frame's name picks its hue within the range so
// neighbours differ but a function keeps its colour from one graph to the next.
export const KINDS = {
  user: { label: 'native', hue: [0, 48], s: 78, l: 62 },
  python: { label: 'Python', hue: [262, 285], s: 55, l: 70 },
  kernel: { label: 'kernel _[k]', hue: [205, 235], s: 60, l: 70 },
  jit: { label: 'JIT _[j]', hue: [95, 135], s: 55, l: 60 },
  inlined: { label: 'inlined _[i]', hue: [170, 190], s: 55, l: 62 },
  unknown: { label: 'unknown', hue: [0, 0], s: 0, l: 76 },
};

function hash(name) {
  let x = 2166136261;
  for (let i = 0; i < name.length && i < 24; i++) x = Math.imul(x ^ name.charCodeAt(i), 16777619);
  return (x >>> 0) / 4294967296;
}

export function kindColor(kind, name = '') {
  const k = KINDS[kind];
  const v = hash(name);
  return `hsl(${Math.round(k.hue[0] + (k.hue[1] - k.hue[0]) * v)} ${k.s}% ${Math.round(k.l - 6 + 12 * v)}%)`;
}

// d3-flame-graph colour hook for profiles: highlighted (search) frames keep the library's colour.
export function frameColor(d, highlighted) {
  if (d.highlight) return highlighted;
  const name = d.data.name;
  if (d.depth === 0) return 'hsl(30 10% 82%)';
  return kindColor(frameKind(name), name);
}
