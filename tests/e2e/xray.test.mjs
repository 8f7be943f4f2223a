// The viewer and an XRay trace uploaded without symbols: the timeline says
// that function names are missing and takes the symbol map right there;
// afterwards the slices carry the functions' names.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { ROOT, buildServer, launchBrowser, startServer, tmpDir, waitIdle } from './helpers.mjs';

const LOG = path.join(ROOT, 'tests', 'corpus', 'xray', 'v5.xray');
const MAP = path.join(ROOT, 'tests', 'corpus', 'xray', 'instr_map.yaml');

let work;
let server;
let browser;

async function json(url, opts) {
  const res = await fetch(url, opts);
  return { status: res.status, body: await res.json() };
}

describe('xray symbols in the viewer', { timeout: 120000 }, () => {
  before(async () => {
    work = tmpDir('viewer-xray-');
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(buildServer(), path.join(work, 'data'));
    browser = await launchBrowser();
  });

  after(async () => {
    if (browser) await browser.close();
    if (server) await server.stop();
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('says names are missing, takes the map, and shows the names', async () => {
    const up = await json(server.url + '/api/traces?name=xray&wait=1', { method: 'POST', body: fs.readFileSync(LOG) });
    assert.equal(up.status, 201, JSON.stringify(up.body));
    assert.equal(up.body.format, 'xray-fdr');
    assert.equal(up.body.symbols.named, 0);
    const id = up.body.id;
    const before = await json(`${server.url}/api/traces/${id}/search?q=fn%23`);
    assert.ok(before.body.slices.length > 0, 'unnamed functions are fn#<id>');

    const page = await browser.context.newPage();
    await page.goto(`${server.url}/?trace=${id}`);
    await waitIdle(page);
    const banner = page.locator('.banner.symbols:has-text("Function names are missing")');
    await banner.waitFor({ state: 'visible' });
    const reloaded = page.waitForEvent('load', { timeout: 20000 });
    await page.setInputFiles('.banner.symbols input.symbols-file', MAP);
    await reloaded;
    await waitIdle(page);
    assert.equal(await page.locator('.banner.symbols:has-text("Function names are missing")').count(), 0,
      'the banner is gone once functions have names');

    const trace = await json(`${server.url}/api/traces/${id}`);
    assert.ok(trace.body.symbols.named > 0, JSON.stringify(trace.body.symbols));
    const afterSearch = await json(`${server.url}/api/traces/${id}/search?q=fn%23`);
    assert.ok(afterSearch.body.slices.length < before.body.slices.length, 'named functions are no longer fn#<id>');
    await page.close();
  });
});
