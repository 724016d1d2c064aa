// build.mjs - bundles src/app.js (with d3-flame-graph) and src/style.css into one self-contained
// HTML file: node build.mjs OUT.html
import { build } from 'esbuild';
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

const out = process.argv[2];
if (!out) {
  console.error('usage: node build.mjs OUT.html');
  process.exit(2);
}
const bundle = async (entry, loader) => {
  const r = await build({ entryPoints: [entry], bundle: true, minify: true, write: false, format: 'iife',
    target: ['chrome100', 'firefox100', 'safari15'], loader, legalComments: 'none', logLevel: 'error' });
  return r.outputFiles[0].text;
};
const js = await bundle('src/app.js');
const css = await bundle('src/style.css', { '.css': 'css' });
const html = (await readFile('src/index.html', 'utf8'))
  .replace('/*STYLE*/', () => css.replace(/<\/style/gi, '<\\/style'))
  .replace('/*SCRIPT*/', () => js.replace(/<\/script/gi, '<\\/script'));
await mkdir(dirname(out), { recursive: true });
await writeFile(out, html);
