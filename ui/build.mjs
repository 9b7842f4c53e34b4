// Bundles the UI into dist/app.js and dist/app.css with esbuild. The
// output is committed (generated code) so that the Go build needs no npm;
// `make ui` runs this after a change, and `make ui-check` (part of `make
// test`) rebuilds into a temporary directory ($OUTDIR) and compares.
// NOMINIFY=1 keeps names readable for profiling in the browser.
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const outdir = process.env.OUTDIR || 'dist';

// functionTable swaps the function table builder of @pyroscope/flamegraph
// 0.35.6 (minified as Yw; its single and double bar readers are fr and ir)
// for src/functionTable.js, which counts a recursive function's total once
// per stack (see there). The library's own text must be found exactly: a
// new version of the library fails the build here rather than keeping the
// wrong totals unnoticed.
const functionTable = {
  name: 'function-table',
  setup(b) {
    b.onLoad({ filter: /@pyroscope[\\/]flamegraph[\\/]dist[\\/]index\.js$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      const from =
        'function Yw(e){const t=[];if(!e)return t;const{names:r,levels:n,format:a}=e,o=a!=="double"?fr:ir,s=new Map;' +
        'for(let u=0;u<n.length;u++){const h=n[u];for(let v=0;v<h.length;v+=o.jStep){const _=o.getBarName(h,v),C=r[_];' +
        's.has(C)||s.set(C,{name:C||"<empty>",self:0,total:0});const T=s.get(C);if(!T)break;' +
        'a==="single"?Vw(fr,T,h,v):$w(ir,T,h,v,e.leftTicks,e.rightTicks)}}return Array.from(s.values())}';
      const parts = text.split(from);
      if (parts.length !== 2) {
        throw new Error(`${args.path}: the function table builder to replace was not found once; ui/build.mjs expects @pyroscope/flamegraph 0.35.6`);
      }
      const src = JSON.stringify(fileURLToPath(new URL('./src/functionTable.js', import.meta.url)));
      const to = 'function Yw(e){return __sparkprofFunctionTable(e,e&&e.format==="double"?ir:fr)}';
      return { contents: `var __sparkprofFunctionTable=require(${src}).functionTable;` + parts.join(to), loader: 'js' };
    });
  },
};

await build({
  entryPoints: ['src/main.jsx'],
  bundle: true,
  minify: process.env.NOMINIFY ? false : true,
  sourcemap: false,
  target: ['chrome100', 'firefox100', 'safari15'],
  outfile: `${outdir}/app.js`,
  jsx: 'automatic',
  loader: { '.svg': 'dataurl', '.png': 'dataurl', '.woff': 'dataurl', '.woff2': 'dataurl', '.ttf': 'dataurl' },
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'linked',
  logLevel: 'warning',
  plugins: [functionTable],
});
