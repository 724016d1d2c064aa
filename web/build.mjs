// build.mjs - bundles src/app.js (with d3-flame-graph, its CSS and src/style.css, which app.js imports)
// into one self-contained HTML file from src/index.html: node build.mjs OUT.html
import { build } from 'esbuild';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

const out = process.argv[2];
if (!out) {
  console.error('usage: node build.mjs OUT.html');
  process.exit(2);
}
// One bundle: the JavaScript, and the CSS its imports gather (esbuild writes it beside as app.css).
const r = await build({ entryPoints: ['src/app.js'], bundle: true, minify: true, write: false, format: 'iife',
  outdir: 'bundle', target: ['chrome100', 'firefox100', 'safari15'], legalComments: 'none', logLevel: 'error' });
const output = (ext) => r.outputFiles.filter((f) => f.path.endsWith(ext)).map((f) => f.text).join('\n');
const js = output('.js'), css = output('.css');
if (!js || !css) {
  console.error('build.mjs: the bundle lacks its JavaScript or its CSS');
  process.exit(1);
}
const html = (await readFile('src/index.html', 'utf8'))
  .replace('/*STYLE*/', () => css.replace(/<\/style/gi, '<\\/style'))
  .replace('/*SCRIPT*/', () => js.replace(/<\/script/gi, '<\\/script'));
await mkdir(dirname(out), { recursive: true });
await writeFile(out, html);
