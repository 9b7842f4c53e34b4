// Recommendations lists the costly code patterns an app's profiles show
// (analysis.Recommendation): each with its share of the app's or a
// stage's samples, its frames and the code that called them, a suggestion,
// and the flame graph focused on the pattern's frames — a link on the
// server's app page, the command line in the offline report.
import React from 'react';
import { href } from './router';
import { selector } from './api';
import { Severity } from './common';
import { readableText } from './names';

// flameParams are the flame graph page's parameters of recommendation r of
// app appId: the app's samples of r's type, focused on r's frames.
export function flameParams(appId, r) {
  const blocked = r.type === 'blocked';
  return {
    query: selector({ spark_app_id: appId }),
    type: blocked ? 'samples' : r.type,
    state: blocked ? 'BLOCKED' : undefined,
    focus: r.focus,
  };
}

// flameCommand is the command line that draws r's flame graph offline.
function flameCommand(r) {
  const type = r.type === 'blocked' ? 'samples --state BLOCKED' : r.type === 'lock_delay' ? 'lock' : r.type;
  return `sparkprof flame --type ${type} --focus '${r.focus}' PROFILES...`;
}

export function Recommendations({ recommendations, appId, offline }) {
  const rs = recommendations || [];
  if (rs.length === 0) return null;
  return (
    <section data-testid="recommendations">
      <h2>Recommendations from the profiles</h2>
      <ul className="findings">
        {rs.map((r) => (
          <li key={`${r.pattern}-${r.stageId ?? ''}`} data-testid="recommendation">
            <Severity level={r.severity} /> <span className="kind">{r.pattern}</span> {readableText(r.message)}
            <div className="suggestion">{r.suggestion}</div>
            <table className="frames">
              <tbody>
                {(r.frames || []).map((f) => (
                  <tr key={`${f.frame} ${f.caller || ''}`}>
                    <td className="num">{Math.round(100 * f.share)}%</td>
                    <td>
                      <code>{f.frame}</code>
                      {f.caller && (
                        <span className="muted">
                          {' '}
                          ← <code>{f.caller}</code>
                        </span>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {offline ? (
              <code className="muted">{flameCommand(r)}</code>
            ) : (
              <a href={href('/flame', flameParams(appId, r))} data-testid="recommendation-flame">
                flame graph focused on these frames
              </a>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}
