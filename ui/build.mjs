// Bundles the UI with esbuild: the web UI into dist/app.js and
// dist/app.css; the offline report (src/report) into dist/report.js and
// dist/report.css, which report.WriteHTML inlines into each report; and
// the offline flame graph page (src/flamepage) into dist/flame.js and
// dist/flame.css, which flamegraph.HTML inlines into each page.
// The output is committed (generated code) so that the Go build needs no
// npm; `make ui` runs this after a change, and `make ui-check` (part of
// `make test`) rebuilds into a temporary directory ($OUTDIR) and compares.
// NOMINIFY=1 keeps names readable for profiling in the browser.
import { build } from 'esbuild';

const outdir = process.env.OUTDIR || 'dist';

const common = {
  bundle: true,
  minify: process.env.NOMINIFY ? false : true,
  sourcemap: false,
  target: ['chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
};

await build({ ...common, entryPoints: ['src/main.jsx'], outfile: `${outdir}/app.js`, legalComments: 'linked' });

// The report and the flame graph page are one file each: their libraries'
// licence notices stay in them.
await build({ ...common, entryPoints: ['src/report/main.jsx'], outfile: `${outdir}/report.js`, legalComments: 'eof' });
await build({ ...common, entryPoints: ['src/flamepage/main.jsx'], outfile: `${outdir}/flame.js`, legalComments: 'eof' });
