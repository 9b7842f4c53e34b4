// Bundles the UI into dist/app.js and dist/app.css with esbuild. The
// output is committed (generated code) so that the Go build needs no npm;
// `make ui` runs this after a change, and `make ui-check` (part of `make
// test`) rebuilds into a temporary directory ($OUTDIR) and compares.
// NOMINIFY=1 keeps names readable for profiling in the browser.
import { build } from 'esbuild';

const outdir = process.env.OUTDIR || 'dist';

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
});
