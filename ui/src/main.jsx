// sparkprof's web UI: one page, routed by the URL hash.
import React from 'react';
import { createRoot } from 'react-dom/client';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { useRoute, navigate } from './router';
import { AppsPage } from './pages/Apps';
import { AppPage } from './pages/App';
import { StagePage } from './pages/Stage';
import { FlamePage } from './pages/Flame';
import { DiffPage } from './pages/Diff';
import { LatencyPage } from './pages/Latency';
import { HeapPage } from './pages/Heap';
import { AgentsPage } from './pages/Agents';
import { JobsPage, ComparePage } from './pages/Runs';
import { RefreshProvider } from './common';

const nav = [
  ['/', 'Applications'],
  ['/jobs', 'Jobs'],
  ['/flame', 'Flame graph'],
  ['/diff', 'Diff'],
  ['/latency', 'Latency'],
  ['/heap', 'Heap'],
  ['/agents', 'Agents'],
];

function Page() {
  const { path, params } = useRoute();
  const setParams = (p) => navigate(path, p);
  let page;
  const m = path.match(/^\/apps\/([^/]+)$/);
  const st = path.match(/^\/apps\/([^/]+)\/stages\/(\d+)$/);
  if (m) page = <AppPage id={decodeURIComponent(m[1])} params={params} setParams={setParams} />;
  else if (st) page = <StagePage app={decodeURIComponent(st[1])} stage={Number(st[2])} params={params} setParams={setParams} />;
  else if (path === '/flame') page = <FlamePage params={params} setParams={setParams} />;
  else if (path === '/diff') page = <DiffPage params={params} setParams={setParams} />;
  else if (path === '/latency') page = <LatencyPage params={params} setParams={setParams} />;
  else if (path === '/heap') page = <HeapPage params={params} setParams={setParams} />;
  else if (path === '/agents') page = <AgentsPage />;
  else if (path === '/jobs') page = <JobsPage />;
  else if (path === '/compare') page = <ComparePage params={params} />;
  else page = <AppsPage />;
  const section = m || st ? '/' : path === '/compare' ? '/jobs' : path;
  return (
    <>
      <header>
        <a className="brand" href="#/">
          sparkprof
        </a>
        <nav>
          {nav.map(([p, title]) => (
            <a key={p} href={`#${p}`} className={section === p ? 'active' : ''}>
              {title}
            </a>
          ))}
        </nav>
      </header>
      <main key={path}>{page}</main>
    </>
  );
}

createRoot(document.getElementById('root')).render(
  <RefreshProvider>
    <Page />
  </RefreshProvider>,
);
