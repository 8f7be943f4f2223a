// The viewer in daily use (issue 23), on the demo trace that `make run`
// serves (gen_fxt, 200,000 events, seed 7): in-trace search that counts
// every match and steps from the view through all of them, with the
// matches marked on the tracks and the overview.
//
//   node --test tests/e2e/daily.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ROOT, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll } from './helpers.mjs';

const MS = 1000000;
const ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');

let server;
let browser;
let page;
let work;
const ids = {};
const pageErrors = [];

async function api(p, opts) {
  const r = await fetch(server.url + p, opts);
  return { status: r.status, body: r.status === 204 ? null : await r.json() };
}

// Rows of one SQL statement on a trace: the oracle the viewer is held to.
async function sql(trace, statement) {
  const r = await api(`/api/traces/${trace}/query`, { method: 'POST', body: statement });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.rows;
}

const state = () => page.evaluate(() => window.__viewer.state());

describe('the viewer in daily use', { timeout: 300000 }, () => {
  before(async () => {
    work = tmpDir('daily-e2e-');
    const bin = buildServer(['build/rel/gen_fxt']);
    execFileSync(path.join(ROOT, 'build/rel/gen_fxt'),
      ['--events', '200000', '--threads', '12', '--seed', '7', path.join(work, 'demo.fxt')]);
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    const r = await api('/api/traces?name=demo&wait=1', { method: 'POST', body: fs.readFileSync(path.join(work, 'demo.fxt')) });
    assert.equal(r.status, 201);
    ids.demo = r.body.id;
    browser = await launchBrowser([], { width: 1600, height: 1000 });
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });

  after(() => closeAll(browser, server, work));

  it('search counts every match and steps from the view through all of them', async () => {
    const matches = (await sql(ids.demo, "SELECT s.id, s.ts, s.dur FROM slices s JOIN strings n ON n.id = s.name_id " +
      "WHERE instr(lower(n.str), 'serialize') > 0 ORDER BY s.ts, s.id")).map(([id, ts, dur]) => ({ id, ts, dur }));
    assert.ok(matches.length > 5000, `${matches.length} matches`);
    const t = (await api(`/api/traces/${ids.demo}`)).body;
    const vs = t.start_ns + 300 * MS;
    await page.goto(`${server.url}/?trace=${ids.demo}&start=${vs}&end=${vs + 20 * MS}`);
    await waitIdle(page);
    await page.keyboard.press('/');
    await page.keyboard.type('Serialize');
    await page.keyboard.press('Enter');
    await waitIdle(page);
    // the first match at or after the view's start, counted among all
    let k = matches.findIndex((m) => m.ts >= vs);
    let st = await state();
    assert.equal(st.search.count, matches.length);
    assert.equal(st.search.index, k);
    assert.deepEqual(st.selection, { kind: 'slice', id: matches[k].id });
    assert.equal(await page.locator('.search-info').textContent(), `${(k + 1).toLocaleString('en-US')} / ${matches.length.toLocaleString('en-US')}`);
    // matches are marked where they are drawn, and on the overview
    const marks = await page.evaluate(() => window.__viewer.searchMarks());
    assert.ok(marks.slices.length > 0, 'matching slices are highlighted');
    const inView = new Set(matches.filter((m) => m.ts <= st.end && (m.dur < 0 || m.ts + m.dur >= st.start)).map((m) => m.id));
    for (const id of marks.slices) assert.ok(inView.has(id), `highlighted slice ${id} is a match in view`);
    assert.equal(marks.overview.reduce((a, b) => a + b, 0), matches.length, 'the overview ticks count every match');
    assert.ok(marks.ticks > 10, 'ticks are drawn on the overview');
    await page.screenshot({ path: path.join(ARTIFACTS, 'search.png') });
    // Shift+Enter: the match before the view
    await page.keyboard.press('Shift+Enter');
    await waitIdle(page);
    st = await state();
    assert.equal(st.search.index, k - 1);
    assert.deepEqual(st.selection, { kind: 'slice', id: matches[k - 1].id });
    // Enter, many times without waiting: every step lands, across pages
    k -= 1;
    const steps = 1100;
    for (let i = 0; i < steps; i++) await page.keyboard.press('Enter');
    await waitIdle(page, 60000);
    k = (k + steps) % matches.length;
    st = await state();
    assert.equal(st.search.index, k);
    assert.deepEqual(st.selection, { kind: 'slice', id: matches[k].id });
    assert.equal(await page.locator('.search-info').textContent(), `${(k + 1).toLocaleString('en-US')} / ${matches.length.toLocaleString('en-US')}`);
    // the view moved away from the hit: Enter searches from the view again;
    // past the last match it wraps to the first, and Shift+Enter back to the last
    const last = matches[matches.length - 1];
    await page.evaluate(([s, e]) => window.__viewer.setView(s, e), [last.ts - MS, last.ts + 1000]);
    await page.focus('input.search');
    await page.keyboard.press('Enter');
    await waitIdle(page);
    assert.equal((await state()).search.index, matches.findIndex((m) => m.ts >= last.ts - MS));
    await page.evaluate(([s, e]) => window.__viewer.setView(s, e), [t.end_ns - 1000, t.end_ns]);
    await page.keyboard.press('Enter');
    await waitIdle(page);
    st = await state();
    assert.equal(st.search.index, 0, 'past the last match: the first');
    assert.deepEqual(st.selection, { kind: 'slice', id: matches[0].id });
    await page.keyboard.press('Shift+Enter');
    await waitIdle(page);
    st = await state();
    assert.equal(st.search.index, matches.length - 1, 'before the first: the last');
    assert.deepEqual(st.selection, { kind: 'slice', id: last.id });
    assert.deepEqual(pageErrors, []);
  });

  it('the details drawer resizes by dragging, maximises, hides, and keeps its size', async () => {
    await page.goto(`${server.url}/?trace=${ids.demo}`);
    await waitIdle(page);
    const height = async (sel) => (await page.locator(sel).boundingBox()).height;
    const h0 = await height('section.panel');
    const body0 = await height('.tl-body');
    const g = await page.locator('.panel-resize').boundingBox();
    await page.mouse.move(g.x + 200, g.y + g.height / 2);
    await page.mouse.down();
    await page.mouse.move(g.x + 200, g.y + g.height / 2 - 300, { steps: 6 });
    await page.mouse.up();
    await waitIdle(page);
    const h1 = await height('section.panel');
    assert.ok(Math.abs(h1 - (h0 + 300)) <= 2, `dragged 300 px up: ${h0} -> ${h1}`);
    assert.ok(Math.abs(await height('.tl-body') - (body0 - 300)) <= 2, 'the timeline gives the room');
    // remembered across a reload
    await page.reload();
    await waitIdle(page);
    assert.ok(Math.abs(await height('section.panel') - h1) <= 2, 'the height is remembered');
    // maximised: the drawer takes most of the window; again: back
    await page.click('section.panel button.panel-max');
    await waitIdle(page);
    assert.ok(await height('section.panel') > 700, 'maximised');
    await page.click('section.panel button.panel-max');
    await waitIdle(page);
    assert.ok(Math.abs(await height('section.panel') - h1) <= 2, 'restored');
    // hidden: only its title bar stays, and stays so after a reload
    await page.click('section.panel button.panel-hide');
    await waitIdle(page);
    assert.ok(await height('section.panel') < 40, 'hidden');
    assert.equal(await page.locator('section.panel .panel-content').isVisible(), false);
    await page.reload();
    await waitIdle(page);
    assert.ok(await height('section.panel') < 40, 'still hidden after a reload');
    await page.click('section.panel button.panel-hide');
    await waitIdle(page);
    assert.ok(Math.abs(await height('section.panel') - h1) <= 2, 'shown again at its height');
    await page.screenshot({ path: path.join(ARTIFACTS, 'drawer.png') });
    assert.deepEqual(pageErrors, []);
  });

  it('the query page clears the old table when a statement fails', async () => {
    await page.goto(`${server.url}/?trace=${ids.demo}&page=query`);
    const run = async (statement) => {
      await page.fill('textarea.sql-editor', statement);
      await page.click('button.run-query');
      await page.waitForFunction(() => window.__viewer.idle());
    };
    await run('SELECT id, name FROM slice_view LIMIT 5');
    assert.equal(await page.locator('.query-table tbody tr').count(), 5);
    await run('DELETE FROM slices');
    assert.ok(await page.locator('.query-error').isVisible());
    assert.equal(await page.locator('.query-table').count(), 0, 'a refused statement leaves no old table');
    assert.equal(await page.locator('.query-status').textContent(), '');
    await run('SELECT id, name FROM slice_view LIMIT 3');
    assert.equal(await page.locator('.query-table tbody tr').count(), 3);
    assert.equal(await page.locator('.query-error').isVisible(), false);
    // the 5 s limit
    await run('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c');
    assert.match(await page.locator('.query-error').textContent(), /5|limit|time/i);
    assert.equal(await page.locator('.query-table').count(), 0, 'a timed-out statement leaves no old table');
  });

  it('compare per thread tells threads apart by process and thread, names and ids', async () => {
    const r = await api('/api/traces?name=demo-again&wait=1', { method: 'POST', body: fs.readFileSync(path.join(work, 'demo.fxt')) });
    assert.equal(r.status, 201);
    ids.again = r.body.id;
    // the oracle: each track's process and thread (or async track) by id
    const where = new Map();
    for (const p of (await api(`/api/traces/${ids.demo}/tracks`)).body.processes) {
      for (const t of p.threads) if (t.track_id !== null) where.set(t.track_id, { p, t });
      for (const a of p.async_tracks) where.set(a.track_id, { p, a });
    }
    await page.goto(`${server.url}/?page=compare&a=${ids.demo}&b=${ids.again}&by=thread`);
    await page.waitForSelector('table.cmp-table tr.cmp-row');
    const rows = (await api(`/api/compare?a=${ids.demo}&b=${ids.again}&by=thread&limit=2000`)).body.rows;
    const cells = await page.$$eval('table.cmp-table tr.cmp-row', (trs) => trs.map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent]));
    assert.equal(cells.length, rows.length);
    const seen = new Set();
    for (let i = 0; i < rows.length; i++) {
      const s = (rows[i].a || rows[i].b).slowest;
      if (!s) continue;
      const w = where.get(s.track_id);
      const want = w.t ? `${w.p.name} ${w.p.pid} › ${w.t.name} ${w.t.tid}` : `${w.p.name} ${w.p.pid} › ${w.a.name} (async)`;
      assert.equal(cells[i][0], want, `row ${i}: ${rows[i].thread} ${rows[i].name}`);
      const key = cells[i].join('|');
      assert.ok(!seen.has(key), 'two rows read the same: ' + key);
      seen.add(key);
    }
    await page.screenshot({ path: path.join(ARTIFACTS, 'compare-threads.png') });
  });
});
