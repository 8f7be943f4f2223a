// A live trace watched while it is recorded (issue 21, docs/API.md "Live
// traces"): the library shows it LIVE; its timeline opens from the first
// snapshot, keeps the live edge in view while Follow is on, shows tracks
// that appear later without a reload, stops following at the user's first
// pan, and says RECORDED when the stream ends.
//
//   node --test tests/e2e/live.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ROOT, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll, until } from './helpers.mjs';

const ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');

let server;
let browser;
let page;
let work;
let stream;     // the live request, its body still open
let traceId;
let a;          // the first archive: few threads
let b;          // then a second one with more threads, in the same stream
const pageErrors = [];

async function api(p) {
  const r = await fetch(server.url + p);
  return { status: r.status, body: await r.json() };
}

const visible = async () => (await api(`/api/traces/${traceId}`)).body.stream.visible_bytes;
const trackCount = () => page.evaluate(() => window.__viewer.tracks().length);

describe('a live trace in the viewer', { timeout: 240000 }, () => {
  before(async () => {
    work = tmpDir('live-e2e-');
    const bin = buildServer(['build/rel/gen_fxt']);
    const gen = path.join(ROOT, 'build/rel/gen_fxt');
    execFileSync(gen, ['--events', '20000', '--threads', '1', '--seed', '3', path.join(work, 'a.fxt')]);
    execFileSync(gen, ['--events', '20000', '--threads', '9', '--seed', '4', path.join(work, 'b.fxt')]);
    a = fs.readFileSync(path.join(work, 'a.fxt'));
    b = fs.readFileSync(path.join(work, 'b.fxt'));
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    browser = await launchBrowser([], { width: 1600, height: 1000 });
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    // the stream: chunked, kept open between the tests
    const u = new URL(server.url + '/api/traces?live=1&name=watched');
    stream = http.request({ hostname: u.hostname, port: u.port, path: u.pathname + u.search, method: 'POST' });
    stream.on('error', () => {});
    stream.write(a);
    traceId = await until('the live trace', async () => {
      const r = await api('/api/traces?status=live');
      return r.body.traces.length ? r.body.traces[0].id : 0;
    });
    await until('the first snapshot', async () => (await visible()) === a.length);
  });

  after(() => closeAll(browser, server, work));

  it('is listed as LIVE and opens from the library', async () => {
    await page.goto(server.url + '/');
    await page.waitForSelector('.status-live .live-badge');
    assert.equal(await page.textContent('.status-live .live-badge'), 'LIVE');
    await page.click('a.trace-link');
    await page.waitForFunction(() => window.__viewer && window.__viewer.ready);
    await waitIdle(page);
    assert.equal(await page.textContent('.topbar .live-badge'), 'LIVE');
    assert.ok(await page.$('button.follow.on'), 'Follow is on');
    await page.screenshot({ path: path.join(ARTIFACTS, 'live-opened.png') });
  });

  // The badge and the Follow button fit in the top bar at 1400 px: it stays
  // one line, with LIVE and with the longest INGESTING text (an upload's
  // ingest with a preview shows the same badge; preview.test.mjs checks
  // it there too), which used to wrap it.
  it('keeps the top bar on one line while the LIVE or INGESTING badge shows', async () => {
    const lines = () => page.evaluate(() => {
      const kids = [...document.querySelector('.topbar').children].filter((c) => c.getBoundingClientRect().width > 0);
      return new Set(kids.map((c) => { const r = c.getBoundingClientRect(); return Math.round((r.top + r.bottom) / 2 / 8); })).size;
    });
    await page.setViewportSize({ width: 1400, height: 900 });
    try {
      await waitIdle(page);
      assert.equal(await lines(), 1, 'with LIVE');
      await page.evaluate(() => { document.querySelector('.topbar .live-badge').textContent = 'INGESTING 100%'; });
      assert.equal(await lines(), 1, 'with INGESTING');
      await page.screenshot({ path: path.join(ARTIFACTS, 'live-topbar.png'), clip: { x: 0, y: 0, width: 1400, height: 60 } });
      await page.evaluate(() => { document.querySelector('.topbar .live-badge').textContent = 'LIVE'; });
    } finally {
      await page.setViewportSize({ width: 1600, height: 1000 });
    }
  });

  it('grows: new tracks appear and the view follows the live edge', async () => {
    const before = await trackCount();
    stream.write(b);
    await until('the second snapshot', async () => (await visible()) === a.length + b.length);
    const t = (await api(`/api/traces/${traceId}`)).body;
    await until('the new tracks in the page', async () => (await trackCount()) > before, 20000);
    await until('the view at the live edge', async () => {
      const s = await page.evaluate(() => window.__viewer.state());
      return Math.abs(s.end - t.end_ns) < 1e-6 * t.end_ns + 1;
    }, 20000);
    await waitIdle(page);
    await page.screenshot({ path: path.join(ARTIFACTS, 'live-grown.png') });
  });

  it('stops following at a pan, and follows again on the button', async () => {
    await page.mouse.move(800, 500);
    await page.keyboard.down('a');
    await new Promise((r) => setTimeout(r, 300));
    await page.keyboard.up('a');
    await until('Follow off', async () => !(await page.$('button.follow.on')), 5000);
    await page.click('button.follow');
    assert.ok(await page.$('button.follow.on'));
    const t = (await api(`/api/traces/${traceId}`)).body;
    const s = await page.evaluate(() => window.__viewer.state());
    assert.ok(Math.abs(s.end - t.end_ns) <= 1e-6 * t.end_ns + 1, 'back at the live edge');
  });

  it('says RECORDED once the stream ends', async () => {
    await new Promise((r) => stream.end(r));
    await until('the ready trace', async () => (await api(`/api/traces/${traceId}`)).body.status === 'ready');
    await page.waitForFunction(() => document.querySelector('.topbar .live-badge').textContent === 'RECORDED',
      null, { timeout: 20000 });
    assert.deepEqual(pageErrors, []);
  });
});
