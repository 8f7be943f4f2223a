// The captures page (issue 21): a provider (`trace-server stream
// --provider`) is listed; a capture is initialized from the form, started,
// stopped and terminated with the page's buttons; its provider's stats
// show; the terminated capture links to its trace, which opens ready.
//
//   node --test tests/e2e/captures.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ROOT, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll, until } from './helpers.mjs';

const ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');

let server;
let browser;
let page;
let work;
let provider;
const pageErrors = [];

describe('the captures page', { timeout: 180000 }, () => {
  before(async () => {
    work = tmpDir('captures-e2e-');
    const bin = buildServer(['build/rel/gen_fxt']);
    execFileSync(path.join(ROOT, 'build/rel/gen_fxt'), ['--events', '30000', '--threads', '3', '--seed', '8', path.join(work, 'p.fxt')]);
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    provider = spawn(bin, ['stream', '--provider', '--server', server.url, '--name', 'gpu', '--categories', 'gfx,vsync',
      path.join(work, 'p.fxt')], { stdio: 'ignore' });
    browser = await launchBrowser([], { width: 1600, height: 1000 });
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });

  after(() => {
    if (provider && provider.exitCode === null) provider.kill();
    return closeAll(browser, server, work);
  });

  it('lists the provider and records a capture with the buttons', async () => {
    await page.goto(server.url + '/');
    await page.click('a.captures-link');
    await page.waitForSelector('tr.cap-provider');
    assert.match(await page.textContent('tr.cap-provider'), /gpu.*gfx,vsync/);
    await page.selectOption('select.cap-f-mode', 'streaming');
    await page.fill('input.cap-f-name', 'from the page');
    await page.click('button.cap-init');
    await page.waitForSelector('.cap-state.state-initialized');
    await page.click('button.cap-start');
    await page.waitForSelector('.cap-state.state-started');
    await page.waitForSelector('a.cap-trace');
    // the provider sends its file; the stats say so
    await until('the bytes of the provider', async () => {
      const t = await page.textContent('.cap-stats');
      return /yes/.test(t) && !/0 B\s*$/.test(t);
    });
    await page.screenshot({ path: path.join(ARTIFACTS, 'captures-started.png') });
    await page.click('button.cap-stop');
    await page.waitForSelector('.cap-state.state-stopped');
    await page.click('button.cap-terminate');
    await page.waitForSelector('.cap-past a');
    assert.equal(await page.textContent('.cap-past a'), 'from the page');
    assert.match(await page.textContent('.cap-past li'), / · 1 provider$/, 'one provider, in the singular');
    await page.screenshot({ path: path.join(ARTIFACTS, 'captures-done.png') });
  });

  it('opens the capture\'s trace', async () => {
    await page.click('.cap-past a');
    await page.waitForFunction(() => window.__viewer && window.__viewer.ready, null, { timeout: 30000 });
    await waitIdle(page);
    const n = await page.evaluate(() => window.__viewer.tracks().length);
    assert.ok(n > 3, 'the capture\'s tracks are drawn');
    assert.deepEqual(pageErrors, []);
  });
});
