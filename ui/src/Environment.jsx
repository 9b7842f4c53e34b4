// An application's environment, as the History Server's environment page
// lists it: runtime, Spark, Hadoop, system and metrics properties, and
// the classpath, each searchable.
import React, { useState } from 'react';
import { Table } from './common';

const sections = [
  ['runtime', 'Runtime'],
  ['spark', 'Spark properties'],
  ['hadoop', 'Hadoop properties'],
  ['system', 'System properties'],
  ['metrics', 'Metrics properties'],
  ['classpath', 'Classpath entries'],
];

export function Environment({ env }) {
  const [q, setQ] = useState('');
  if (!env) return <p className="muted">The event log has no environment (no SparkListenerEnvironmentUpdate).</p>;
  const needle = q.trim().toLowerCase();
  const match = (p) => !needle || p[0].toLowerCase().includes(needle) || p[1].toLowerCase().includes(needle);
  return (
    <section data-testid="environment">
      <h2>Environment</h2>
      <input className="search" placeholder="Search names and values" value={q} onChange={(e) => setQ(e.target.value)} data-testid="env-search" />
      {sections.map(([k, title]) => {
        const rows = (env[k] || []).filter(match);
        if (!(env[k] || []).length) return null;
        return (
          <details key={k} open={k === 'spark' || k === 'runtime' || Boolean(needle)}>
            <summary>
              {title} ({rows.length}
              {needle ? ` of ${env[k].length}` : ''})
            </summary>
            <Table
              testid={`env-${k}`}
              initialSort={{ key: 'name', desc: false }}
              columns={[
                { key: 'name', title: k === 'classpath' ? 'Path' : 'Name', sort: (p) => p[0], render: (p) => <code>{p[0]}</code> },
                { key: 'value', title: k === 'classpath' ? 'Source' : 'Value', sort: (p) => p[1], render: (p) => <span className="env-value">{p[1]}</span> },
              ]}
              rows={rows}
            />
          </details>
        );
      })}
    </section>
  );
}
