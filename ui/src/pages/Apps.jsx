// The applications list: searchable, newest first, live apps marked.
import React, { useState } from 'react';
import { getJSON, selector } from '../api';
import { fmtMs, fmtTime } from '../format';
import { href } from '../router';
import { useAsync, ErrorBox, Loading, Table, RefreshControls } from '../common';

export function AppsPage() {
  const { data, error } = useAsync(() => getJSON('/api/v1/apps'), []);
  const [q, setQ] = useState('');
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="applications" />;
  const needle = q.trim().toLowerCase();
  const rows = data.filter((a) => !needle || [a.name, a.id, a.sparkVersion, a.user].some((s) => (s || '').toLowerCase().includes(needle)));
  return (
    <div>
      <h1>Applications</h1>
      <p className="muted">
        Spark applications from imported event logs and container logs (<code>sparkprof import</code>, or{' '}
        <code>POST /api/v1/import</code>), and those whose agents sent profiles but whose event log has not come yet
        (point <code>serve --eventlog-dir</code> at <code>spark.eventLog.dir</code>): these open on the flame graph.
      </p>
      <div className="row">
        <input className="search" placeholder="Search name, id, version, user" value={q} onChange={(e) => setQ(e.target.value)} data-testid="app-search" />
        <RefreshControls />
      </div>
      {data.length === 0 ? (
        <div className="empty">No applications yet: import an event log (sparkprof import --server URL eventlog).</div>
      ) : (
        <Table
          testid="apps"
          rowKey={(a) => a.id}
          initialSort={{ key: 'startMs', desc: true }}
          columns={[
            {
              key: 'name',
              title: 'Name',
              render: (a) => (
                <a href={profilesOnly(a) ? href('/flame', { query: selector({ spark_app_id: a.id }) }) : href(`/apps/${encodeURIComponent(a.id)}`)}>
                  {a.name || '(unnamed)'}
                </a>
              ),
            },
            { key: 'id', title: 'App id', render: (a) => <code>{a.id}</code> },
            { key: 'sparkVersion', title: 'Spark' },
            { key: 'startMs', title: 'Start', render: (a) => fmtTime(a.startMs) },
            { key: 'durationMs', title: 'Duration', align: 'right', render: (a) => fmtMs(a.durationMs) },
            {
              key: 'status',
              title: 'Status',
              render: (a) =>
                profilesOnly(a) ? (
                  <span className="muted" title="the agents' profiles carry this app id; its event log has not been read: no jobs, stages or findings yet">
                    profiles only
                  </span>
                ) : (
                  <span className={a.status === 'running' ? 'live' : ''}>{a.status === 'running' ? '● live' : a.status}</span>
                ),
            },
            {
              key: 'executorCount',
              title: 'Executors',
              align: 'right',
              render: (a) => {
                if (profilesOnly(a)) return '';
                // Local mode: the driver runs the tasks, with no executor of its own.
                if (a.executorCount === 0 && a.taskCount > 0) return <span title="tasks ran on the driver (local mode)">driver</span>;
                return a.executorCount;
              },
            },
            { key: 'taskCount', title: 'Tasks', align: 'right', render: (a) => (profilesOnly(a) ? '' : a.taskCount) },
            {
              key: 'attempts',
              title: 'Attempts',
              align: 'right',
              sort: (a) => (a.attempts || []).length,
              render: (a) =>
                (a.attempts || []).length > 1 ? (
                  <span data-testid="attempt-links">
                    {[...a.attempts].reverse().map((t, i) => (
                      <span key={t.attemptId}>
                        {i > 0 && ' '}
                        <a href={href(`/apps/${encodeURIComponent(a.id)}`, { appAttempt: t.attemptId })} title={`attempt ${t.attemptId}: ${fmtTime(t.startMs)}, ${fmtMs(t.durationMs)}`}>
                          {t.attemptId}
                        </a>
                      </span>
                    ))}
                  </span>
                ) : (
                  ''
                ),
            },
            {
              key: 'findingsCount',
              title: 'Findings',
              align: 'right',
              render: (a) => (
                <span>
                  {profilesOnly(a) ? '' : a.findingsCount}
                  {a.criticalFindings > 0 && <span className="sev sev-critical after-count">{a.criticalFindings} critical</span>}
                </span>
              ),
            },
          ]}
          rows={rows}
        />
      )}
    </div>
  );
}

// profilesOnly reports whether the server knows app a from its profiles
// alone: it has no analysis page yet.
function profilesOnly(a) {
  return a.status === 'profiles';
}
