// Shared by the viewer's end-to-end test and benchmark: build what is
// needed, start the real server on a free port, launch Debian's Chromium
// through playwright-core (no browser download).

import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export const CHROME_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export function tmpDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// Builds the server (and gen_fxt) unless TRACE_SERVER names a binary.
// Returns the server binary's path.
export function buildServer(extraTargets = []) {
  if (process.env.TRACE_SERVER && extraTargets.length === 0) return process.env.TRACE_SERVER;
  execFileSync('make', ['-s', '-C', ROOT, 'build/rel/trace-server', ...extraTargets], { stdio: ['ignore', 'ignore', 'inherit'] });
  return process.env.TRACE_SERVER || path.join(ROOT, 'build/rel/trace-server');
}

// Compiles tests/e2e/make_fixture.c into dir; returns the binary's path.
export function buildFixtureTool(dir) {
  const out = path.join(dir, 'make_fixture');
  execFileSync(process.env.CC || 'cc', ['-std=c11', '-O2', '-o', out, path.join(ROOT, 'tests/e2e/make_fixture.c'),
    path.join(ROOT, 'tests/fxt_writer.c')], { stdio: 'inherit' });
  return out;
}

// Starts `trace-server serve --port 0` and resolves with {url, proc, stop()}
// once it prints its address. extra: more command-line arguments.
export function startServer(bin, dataDir, extra = []) {
  return new Promise((resolve, reject) => {
    const proc = spawn(bin, ['serve', '--port', '0', '--data', dataDir, '--static', path.join(ROOT, 'static'), ...extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error('the server did not start in 20 s: ' + out + err));
    }, 20000);
    proc.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/[^/\s]+)\//.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1],
          proc,
          stop: () => new Promise((res) => {
            if (proc.exitCode !== null) return res();
            proc.once('exit', () => res());
            proc.kill('SIGTERM');
            setTimeout(() => proc.kill('SIGKILL'), 5000).unref();
          }),
        });
      }
    });
    proc.stderr.on('data', (d) => {
      err += d;
      if (process.env.E2E_VERBOSE) process.stderr.write(d);
    });
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code} before listening: ${out}${err}`));
    });
  });
}

// A fresh Chromium profile each time; resolves with {context, close()}.
export async function launchBrowser(extraArgs = [], viewport = { width: 1400, height: 900 }) {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM=/path/to/chromium)`);
  }
  const profile = tmpDir('viewer-profile-');
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROME_ARGS, ...extraArgs],
    viewport,
  });
  return {
    context,
    close: async () => {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

// What fn gives once it is truthy (asked every 100 ms); throws, naming
// what, after timeout ms.
export async function until(what, fn, timeout = 30000) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeout) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Waits until the timeline has loaded and drawn everything it asked for.
export async function waitIdle(page, timeout = 20000) {
  await page.waitForFunction(() => window.__viewer && window.__viewer.page === 'timeline' && window.__viewer.idle(),
    null, { timeout, polling: 50 });
  // two more frames so that the last data is on the canvas
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

// The JSON API of a started server: {status, body} (body null for 204).
export async function apiJson(server, p, opts) {
  const r = await fetch(server.url + p, opts);
  return { status: r.status, body: r.status === 204 ? null : await r.json() };
}

// Keeps a page's dialogs (dismissed) and uncaught errors in the arrays
// given, for a test to check that none came; returns the page.
export function watchPage(p, dialogs, pageErrors) {
  p.on('dialog', (d) => {
    dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  p.on('pageerror', (e) => pageErrors.push(e.message));
  return p;
}

// Closes what a test file's before() opened: the browser, the server, the
// work directory (each may be missing when before() failed half-way).
export async function closeAll(browser, server, work) {
  if (browser) await browser.close();
  if (server) await server.stop();
  if (work) fs.rmSync(work, { recursive: true, force: true });
}
