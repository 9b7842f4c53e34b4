// Connected agents: who sent what, when, and what failed.
import React from 'react';
import { getJSON } from '../api';
import { fmtBytes, fmtTime, fmtMs } from '../format';
import { useAsync, ErrorBox, Loading, Table, RefreshControls } from '../common';

// quietMs is how long without an upload marks an agent as quiet.
const quietMs = 60000;

// skewMs is how far from its arrival an upload's window may end before the
// sender's clock looks off: a live agent's window ends seconds before.
const skewMs = 5 * 60000;

export function AgentsPage() {
  const { data, error } = useAsync(() => getJSON('/api/v1/agents'), []);
  if (error) return <ErrorBox error={error} />;
  if (!data) return <Loading what="agents" />;
  return (
    <div>
      <h1>Agents</h1>
      <p className="muted">
        Every sender of profiles since the server started. Nothing here? Check that the agent's <code>server</code> setting
        points at this server (<code>spark.sparkprof.server</code> or <code>SPARKPROF_SERVER</code>) and that the executors can
        reach it; the agent jar is served at <a href="/agent.jar">/agent.jar</a>. Recordings that Spark's profiler plugin copies to
        a directory the server watches (<code>serve --profile-dir</code>) show here too, as client <code>spark-profiler</code>.
      </p>
      <div className="row">
        <RefreshControls />
      </div>
      {data.length === 0 ? (
        <div className="empty" data-testid="agents-empty">
          No agent has sent anything yet.
        </div>
      ) : (
        <Table
          testid="agents"
          initialSort={{ key: 'lastUploadMs', desc: true }}
          columns={[
            { key: 'app', title: 'App' },
            { key: 'appId', title: 'App id', render: (a) => <code>{a.appId}</code> },
            { key: 'executorId', title: 'Executor' },
            { key: 'host', title: 'Host' },
            { key: 'remote', title: 'From' },
            { key: 'spyName', title: 'Client' },
            { key: 'firstUploadMs', title: 'First upload', render: (a) => fmtTime(a.firstUploadMs) },
            {
              key: 'lastUploadMs',
              title: 'Last upload',
              render: (a) => {
                // The agent sends every 10 s by default: a minute of silence
                // means the JVM ended, or cannot reach this server.
                const ago = Date.now() - a.lastUploadMs;
                return (
                  <span className={ago > quietMs ? 'muted' : ''} title={ago > quietMs ? 'nothing for over a minute' : ''}>
                    {fmtTime(a.lastUploadMs)} ({fmtMs(Math.max(0, ago))} ago)
                  </span>
                );
              },
            },
            { key: 'uploads', title: 'Uploads', align: 'right' },
            { key: 'bytes', title: 'Bytes', align: 'right', render: (a) => fmtBytes(a.bytes) },
            { key: 'dropped', title: 'Dropped', align: 'right', render: (a) => a.dropped || 0 },
            {
              key: 'retried',
              title: 'Retried',
              align: 'right',
              render: (a) => (
                <span title="uploads sent again after they were stored, their answers lost (timeouts): stored once" data-testid="retried">
                  {a.retried || 0}
                </span>
              ),
            },
            {
              key: 'windowLagMs',
              title: 'Window lag',
              align: 'right',
              render: (a) => {
                if (a.windowLagMs == null) return '';
                const off = Math.abs(a.windowLagMs) > skewMs;
                const why = off
                  ? "the last upload's window ended far from when it arrived: the sender's clock is likely off, and its samples show that far from now"
                  : "how long before it arrived the last upload's window ended";
                return (
                  <span className={off ? 'bad' : ''} title={why} data-testid="window-lag">
                    {a.windowLagMs < 0 ? '-' : ''}
                    {fmtMs(Math.abs(a.windowLagMs))}
                    {off ? ' (clock off?)' : ''}
                  </span>
                );
              },
            },
            { key: 'errors', title: 'Errors', align: 'right', render: (a) => <span className={a.errors ? 'bad' : ''}>{a.errors}</span> },
            { key: 'lastError', title: 'Last error', render: (a) => <span className="bad">{a.lastError}</span> },
          ]}
          rows={data}
        />
      )}
    </div>
  );
}
