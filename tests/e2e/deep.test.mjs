// End-to-end test of issue 9's viewer rules on a 25-deep stack
// (make_fixture --deep): every depth is drawn, the whole-trace view shows
// summaries as summaries, a zoom into one stack fetches the exact slices
// and each row then names its real slice at known places, and the view
// never leaves the trace's time range.
//
//   node --test tests/e2e/deep.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import {
  ROOT, buildFixtureTool, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll,
} from './helpers.mjs';

const ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');
const K = 1234;             // the stack the test zooms into
const BASE = K * 1000;

let server;
let browser;
let page;
let work;
let traceId;
let trace;
const pageErrors = [];

// Page point of time t (ns) on slice row `depth` of the only thread track.
async function pointAt(t, depth) {
  return page.evaluate(([tt, d]) => {
    const v = window.__viewer;
    const g = v.geometry();
    const st = v.state();
    const tr = v.tracks().find((r) => r.kind === 'thread');
    const cv = document.querySelector('.tl-canvas').getBoundingClientRect();
    const top = document.querySelector('.tl-scroll').scrollTop;
    return {
      x: cv.left + ((tt - st.start) / (st.end - st.start)) * g.width,
      y: cv.top + tr.y - top + g.trackPad + d * g.rowHeight + g.rowHeight / 2,
    };
  }, [t, depth]);
}

async function hitAt(t, depth) {
  const p = await pointAt(t, depth);
  return page.evaluate(([x, y]) => window.__viewer.hit(x, y), [p.x, p.y]);
}

describe('deep stacks', { timeout: 120000 }, () => {
  before(async () => {
    work = tmpDir('deep-e2e-');
    const bin = buildServer();
    const tool = buildFixtureTool(work);
    execFileSync(tool, ['--deep', path.join(work, 'deep.fxt')]);
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    const r = await fetch(server.url + '/api/traces?name=deep.fxt&wait=1', {
      method: 'POST', body: fs.readFileSync(path.join(work, 'deep.fxt')),
    });
    assert.ok(r.ok, 'upload: ' + r.status);
    traceId = (await r.json()).id;
    trace = await (await fetch(`${server.url}/api/traces/${traceId}`)).json();
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });

  after(() => closeAll(browser, server, work));

  it('opens on the trace itself, with all 25 rows of the stack', async () => {
    await page.goto(`${server.url}/?trace=${traceId}`);
    await waitIdle(page);
    const st = await page.evaluate(() => window.__viewer.state());
    assert.equal(st.start, trace.start_ns, 'the default view starts at the first event');
    assert.equal(st.end, trace.end_ns, 'and ends at the last');
    const tr = await page.evaluate(() => window.__viewer.tracks().find((r) => r.kind === 'thread'));
    const g = await page.evaluate(() => window.__viewer.geometry());
    assert.equal(tr.h, 25 * g.rowHeight + 2 * g.trackPad, 'the track is 25 rows tall');
    assert.equal(await page.$$eval('.label .expand', (e) => e.length), 0, 'no "+N rows" button');
  });

  it('draws summaries as summaries: a count on hover, not one slice\'s name', async () => {
    const h = await hitAt(BASE + 250, 0);
    assert.ok(h && h.merged > 1, 'the whole-trace view holds summaries: ' + JSON.stringify(h));
    const p = await pointAt(BASE + 250, 0);
    await page.mouse.move(p.x, p.y);
    await page.waitForSelector('.tooltip:not(.hidden)');
    const title = await page.$eval('.tooltip .tip-title', (e) => e.textContent);
    assert.match(title, /^[\d,]+ slices$/);
    await page.mouse.move(0, 0);
    // CPU runs under a pixel too: a summary, not one thread's run
    const cpu = await page.evaluate(() => {
      const r = window.__viewer.tracks().find((t) => t.kind === 'cpu');
      const cv = document.querySelector('.tl-canvas').getBoundingClientRect();
      return { x: cv.left + cv.width / 2, y: cv.top + r.top + r.h / 2 };
    });
    await page.mouse.move(cpu.x, cpu.y);
    await page.locator('.tooltip .tip-title', { hasText: /^[\d,]+ CPU runs$/ }).waitFor();
    await page.mouse.move(0, 0);
  });

  it('zoomed to a 220 ns window, every row names its real slice', async () => {
    // zoom in two steps: the second crosses into exact territory from a
    // view that already holds data
    await page.evaluate(([s, e]) => window.__viewer.setView(s, e), [BASE - 20000, BASE + 20000]);
    await waitIdle(page);
    await page.evaluate(([s, e]) => window.__viewer.setView(s, e), [BASE + 90, BASE + 310]);
    await waitIdle(page);
    for (let d = 0; d < 24; d++) {
      const h = await hitAt(BASE + 200, d);
      assert.ok(h, `a slice at depth ${d}`);
      assert.equal(h.merged, 0, `depth ${d} is exact`);
      assert.equal(h.name, `s${K}_d${d}`);
      assert.equal(h.depth, d);
    }
    for (const [t, name] of [[BASE + 125, 'leaf_a'], [BASE + 185, 'leaf_b'], [BASE + 260, 'leaf_c']]) {
      const h = await hitAt(t, 24);
      assert.ok(h && h.merged === 0, `${name} is drawn as itself: ${JSON.stringify(h)}`);
      assert.equal(h.name, name);
    }
    await page.screenshot({ path: path.join(ARTIFACTS, 'deep-stack-zoomed.png') });
  });

  it('never shows time before the first event or past the last (F then W, S)', async () => {
    await page.keyboard.press('f');
    await page.keyboard.down('w');
    await page.waitForTimeout(300);
    await page.keyboard.up('w');
    await waitIdle(page);
    let st = await page.evaluate(() => window.__viewer.state());
    assert.ok(st.start >= trace.start_ns && st.end <= trace.end_ns, JSON.stringify(st));
    await page.evaluate(([s, e]) => window.__viewer.setView(s, e), [trace.start_ns - 5000, trace.start_ns + 1000]);
    st = await page.evaluate(() => window.__viewer.state());
    assert.equal(st.start, trace.start_ns);
    await page.keyboard.down('s');
    await page.waitForTimeout(1500);
    await page.keyboard.up('s');
    await waitIdle(page);
    st = await page.evaluate(() => window.__viewer.state());
    assert.ok(st.start >= trace.start_ns && st.end <= trace.end_ns, JSON.stringify(st));
    const axis = await page.evaluate(() => document.querySelector('.span-label').textContent);
    assert.doesNotMatch(axis, /-0\b/);
    assert.deepEqual(pageErrors, []);
  });
});
