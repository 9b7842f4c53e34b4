// What the end-to-end test's steps share: starting a server, and pointer
// gestures a user makes.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

// startServer runs sparkprof serve (bin) on a free port and resolves with
// its URL once it is ready (preloading done), and a function stopping it,
// however long a busy machine takes: it waits for the server's own
// signals, or its exit.
export async function startServer(bin, extra) {
  const data = mkdtempSync(path.join(tmpdir(), 'sparkprof-e2e-'));
  const proc = spawn(bin, ['serve', '--addr', '127.0.0.1:0', '--data', data, ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  let exited = null;
  const url = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (b) => {
      log += b;
      const m = log.match(/listening on (http:\/\/[\d.:]+)/);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => {
      exited = new Error(`server exited ${code}:\n${log}`);
      reject(exited);
    });
  });
  for (;;) {
    if (exited) throw exited;
    const r = await fetch(`${url}/ready`).catch(() => null);
    if (r && r.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    stop: () => {
      proc.kill('SIGTERM');
      rmSync(data, { recursive: true, force: true });
    },
  };
}

// drag presses the mouse at fraction a of the element's width and
// releases it at fraction b, at height y pixels into it.
export async function drag(page, locator, a, b, y) {
  await locator.scrollIntoViewIfNeeded();
  const box = await locator.boundingBox();
  await page.mouse.move(box.x + box.width * a, box.y + y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * b, box.y + y, { steps: 5 });
  await page.mouse.up();
}

// hover moves the pointer to (x, y) pixels into the element.
export async function hover(page, locator, x, y) {
  await locator.scrollIntoViewIfNeeded();
  const box = await locator.boundingBox();
  await page.mouse.move(box.x + x, box.y + y);
}

// ingest sends a body to /ingest with the query q.
export function ingest(url, q, body, headers) {
  return fetch(`${url}/ingest?${new URLSearchParams(q)}`, { method: 'POST', body, headers });
}

// dataset returns the data-* attributes of the first element matching
// the locator.
export function dataset(locator) {
  return locator.first().evaluate((e) => ({ ...e.dataset }));
}
