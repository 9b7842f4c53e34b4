// Bundles the UI with esbuild: the web UI into dist/app.js and
// dist/app.css, and the offline report (src/report) into dist/report.js
// and dist/report.css, which report.WriteHTML inlines into each report.
// The output is committed (generated code) so that the Go build needs no
// npm; `make ui` runs this after a change, and `make ui-check` (part of
// `make test`) rebuilds into a temporary directory ($OUTDIR) and compares.
// NOMINIFY=1 keeps names readable for profiling in the browser.
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const outdir = process.env.OUTDIR || 'dist';

// libraryPatches fix @pyroscope/flamegraph 0.35.6 (minified) where it is
// wrong for sparkprof's data. It counted a recursive function's samples once
// per call instead of once per stack: the function table (Yw; its single and
// double bar readers are fr and ir) is swapped for src/functionTable.js, and
// the sandwich view's callees (the outermost call's subtree) and callers (the
// stacks up to it) stop at a function's first call on each stack. Its tooltip
// named every count "Objects in RAM" and every byte "RAM" (a stack sample or
// an allocation is neither), and its wait time "seconds": they get neutral
// names. Each text must be found exactly once: a new version of the library
// fails the build here rather than going back to wrong figures unnoticed.
const tablePath = JSON.stringify(fileURLToPath(new URL('./src/functionTable.js', import.meta.url)));
const libraryPatches = [
  {
    what: 'the function table',
    from:
      'function Yw(e){const t=[];if(!e)return t;const{names:r,levels:n,format:a}=e,o=a!=="double"?fr:ir,s=new Map;' +
      'for(let u=0;u<n.length;u++){const h=n[u];for(let v=0;v<h.length;v+=o.jStep){const _=o.getBarName(h,v),C=r[_];' +
      's.has(C)||s.set(C,{name:C||"<empty>",self:0,total:0});const T=s.get(C);if(!T)break;' +
      'a==="single"?Vw(fr,T,h,v):$w(ir,T,h,v,e.leftTicks,e.rightTicks)}}return Array.from(s.values())}',
    to: 'function Yw(e){return __sparkprofFunctionTable(e,e&&e.format==="double"?ir:fr)}',
  },
  {
    what: "the sandwich view's callees",
    from: 'o=s=>{s.name===t&&(n.numTicks+=s.total[0],a.total=[n.numTicks],a.children=a.children.concat(s.children));for(',
    to: 'o=s=>{if(s.name===t){n.numTicks+=s.total[0],a.total=[n.numTicks],a.children=a.children.concat(s.children);return}for(',
  },
  {
    what: "the sandwich view's callers",
    from: 'v.name===t&&(o.push(C),a.push(v.total[0]),n.numTicks+=v.total[0]);for(',
    to: 'if(v.name===t){o.push(C),a.push(v.total[0]),n.numTicks+=v.total[0];return}for(',
  },
  {
    what: "the tooltip's names of counts",
    from: 'objects:{percent:"% of objects in RAM",formattedValue:"Objects in RAM",total:"% of total RAM"}',
    to: 'objects:{percent:"Share",formattedValue:"Count",total:"% of total"}',
  },
  {
    what: "the tooltip's names of bytes",
    from: 'bytes:{percent:"% of RAM",formattedValue:"RAM",total:"% of total bytes"}',
    to: 'bytes:{percent:"Share of bytes",formattedValue:"Bytes",total:"% of total bytes"}',
  },
  {
    what: "the tooltip's names of wait time",
    from: 'lock_nanoseconds:{percent:"% of Time spent",formattedValue:"Time",total:"% of total seconds"}',
    to: 'lock_nanoseconds:{percent:"Share of time",formattedValue:"Time",total:"% of total time"}',
  },
];

const patchLibrary = {
  name: 'patch-flamegraph',
  setup(b) {
    b.onLoad({ filter: /@pyroscope[\\/]flamegraph[\\/]dist[\\/]index\.js$/ }, async (args) => {
      let text = await readFile(args.path, 'utf8');
      for (const { what, from, to } of libraryPatches) {
        const parts = text.split(from);
        if (parts.length !== 2) {
          throw new Error(`${args.path}: ${what} to patch was found ${parts.length - 1} times, not once; ui/build.mjs expects @pyroscope/flamegraph 0.35.6`);
        }
        text = parts.join(to);
      }
      return { contents: `var __sparkprofFunctionTable=require(${tablePath}).functionTable;${text}`, loader: 'js' };
    });
  },
};

const common = {
  bundle: true,
  minify: process.env.NOMINIFY ? false : true,
  sourcemap: false,
  target: ['chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  loader: { '.svg': 'dataurl', '.png': 'dataurl', '.woff': 'dataurl', '.woff2': 'dataurl', '.ttf': 'dataurl' },
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
};

await build({ ...common, entryPoints: ['src/main.jsx'], outfile: `${outdir}/app.js`, legalComments: 'linked', plugins: [patchLibrary] });

// The report is one file: its libraries' licence notices stay in it.
await build({ ...common, entryPoints: ['src/report/main.jsx'], outfile: `${outdir}/report.js`, legalComments: 'eof' });
