// A large upload viewed while it is ingested (docs/API.md "A trace while
// its bytes arrive"): it grows in place, and its timeline opens with the
// INGESTING badge and a banner saying the view holds the trace from its
// start, with tracks; once ingest ends the page reads the whole trace, says
// INGESTED and drops the banner. The server's ingest is slowed
// (TRACE_SERVER_TEST_INGEST_DELAY_MS, tests only) so that there is time to
// look.
//
//   node --test tests/e2e/preview.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ROOT, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll, until } from './helpers.mjs';

const ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');

let server;
let browser;
let page;
let work;
let traceId;
const pageErrors = [];

async function api(p) {
  const r = await fetch(server.url + p);
  return { status: r.status, body: await r.json() };
}

describe('an upload viewed while it is ingested', { timeout: 240000 }, () => {
  before(async () => {
    work = tmpDir('preview-e2e-');
    const bin = buildServer(['build/rel/gen_fxt']);
    const archive = path.join(work, 'big.fxt');
    execFileSync(path.join(ROOT, 'build/rel/gen_fxt'), ['--events', '400000', '--threads', '4', '--seed', '5', archive]);
    fs.mkdirSync(path.join(work, 'data'));
    process.env.TRACE_SERVER_TEST_INGEST_DELAY_MS = '1000'; // about 10 s of ingest
    server = await startServer(bin, path.join(work, 'data'), ['--preview-min', '4M']);
    delete process.env.TRACE_SERVER_TEST_INGEST_DELAY_MS;
    browser = await launchBrowser([], { width: 1600, height: 1000 });
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const r = await fetch(server.url + '/api/traces?name=big', { method: 'POST', body: fs.readFileSync(archive) });
    assert.equal(r.status, 202);
    traceId = (await r.json()).id;
    await until('the preview', async () => {
      const t = (await api(`/api/traces/${traceId}`)).body;
      return t.status === 'ingesting' && t.preview;
    });
  });

  after(() => closeAll(browser, server, work));

  it('opens while it grows, with a banner and tracks', async () => {
    await page.goto(server.url + '/?trace=' + traceId);
    await page.waitForFunction(() => window.__viewer && window.__viewer.ready);
    await waitIdle(page);
    assert.match(await page.textContent('.topbar .live-badge'), /^INGESTING \d+%$/);
    assert.match(await page.getAttribute('.topbar .live-badge', 'title'), /first [\d.]+ MB of [\d.]+ MB, from the trace's start/);
    assert.match(await page.textContent('.banner.diagnostics'), /being ingested \(\d+%\).*first [\d.]+ MB, from its start/);
    assert.equal((await api(`/api/traces/${traceId}`)).body.preview.from_byte, 0, 'from its first byte');
    // the badge and Follow keep the top bar on one line at 1400 px
    await page.setViewportSize({ width: 1400, height: 900 });
    assert.equal(await page.evaluate(() => new Set([...document.querySelector('.topbar').children]
      .filter((c) => c.getBoundingClientRect().width > 0)
      .map((c) => { const r = c.getBoundingClientRect(); return Math.round((r.top + r.bottom) / 2 / 8); })).size), 1);
    await page.setViewportSize({ width: 1600, height: 1000 });
    assert.ok(!(await page.$('.banner.diagnostics.hidden')), 'the banner shows');
    assert.ok((await page.evaluate(() => window.__viewer.tracks().length)) > 0, 'tracks are drawn');
    assert.equal((await api(`/api/traces/${traceId}`)).body.status, 'ingesting', 'still ingesting when looked at');
    await page.screenshot({ path: path.join(ARTIFACTS, 'preview-opened.png') });
  });

  it('reads the whole trace once ingest ends', async () => {
    await until('the ready trace', async () => (await api(`/api/traces/${traceId}`)).body.status === 'ready', 60000);
    await page.waitForFunction(() => document.querySelector('.topbar .live-badge').textContent === 'INGESTED',
      null, { timeout: 20000 });
    await page.waitForSelector('.banner.diagnostics.hidden', { state: 'attached', timeout: 20000 });
    assert.deepEqual(pageErrors, []);
  });
});
