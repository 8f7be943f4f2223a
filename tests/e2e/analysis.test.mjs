// Area analysis as a Perfetto user expects it (issue 43, item 8): the query
// page lists the trace's tables and their columns beside the editor, a
// query's rows with ts and dur become debug tracks on the timeline (kept in
// the URL), and the area panel's pivot table groups the selection by name,
// thread, process, category or an argument, nested. Each figure is checked
// against SQL over the same trace (and the pivot by name against /area).
// Screenshots go to build/e2e-artifacts/.
//
//   node --test tests/e2e/analysis.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import {
  ROOT, buildFixtureTool, buildServer, closeAll, launchBrowser, startServer, tmpDir, waitIdle,
} from './helpers.mjs';

const MS = 1000000;
const ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');

let server;
let browser;
let page;
let work;
let id;
const pageErrors = [];

async function sql(statement) {
  const r = await fetch(`${server.url}/api/traces/${id}/query`, { method: 'POST', body: statement });
  const body = await r.json();
  assert.equal(r.status, 200, statement + ': ' + JSON.stringify(body));
  return body.rows;
}

// The part of each slice of the tracks inside [s, e] (an unterminated one
// runs to the trace's end), the area rules of docs/API.md, written plainly.
function clipped(tracks, s, e) {
  return `(SELECT v.*, th.name AS thread, th.tid AS tid,
      min(CASE WHEN v.dur < 0 THEN (SELECT value FROM meta WHERE key = 'end_ns') ELSE v.ts + v.dur END, ${e}) - max(v.ts, ${s}) AS part
    FROM slice_view v JOIN tracks t ON t.id = v.track_id LEFT JOIN threads th ON th.id = t.thread_id
    WHERE v.track_id IN (${tracks.join(',')}) AND v.ts <= ${e}
      AND CASE WHEN v.dur < 0 THEN (SELECT value FROM meta WHERE key = 'end_ns') ELSE v.ts + v.dur END >= ${s})`;
}

describe('schema list, debug tracks, pivot table', { timeout: 180000 }, () => {
  before(async () => {
    work = tmpDir('analysis-e2e-');
    const bin = buildServer();
    const tool = buildFixtureTool(work);
    execFileSync(tool, [path.join(work, 'f.fxt')]);
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    const r = await fetch(`${server.url}/api/traces?name=f.fxt&wait=1`, { method: 'POST', body: fs.readFileSync(path.join(work, 'f.fxt')) });
    assert.equal(r.status, 201);
    id = (await r.json()).id;
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });

  after(() => closeAll(browser, server, work));

  it('lists the tables and their columns beside the editor; a click on a column writes it in', async () => {
    await page.goto(`${server.url}/?trace=${id}&page=query`);
    const slices = page.locator('.schema-table[data-table="slices"]');
    await slices.waitFor();
    assert.match(await slices.locator('.schema-about').innerText(), /slice/);
    await slices.locator('summary').click();
    await slices.locator('.schema-column').first().waitFor();
    const cols = await slices.locator('.schema-column').allTextContents();
    const r = await fetch(`${server.url}/api/traces/${id}/query`, { method: 'POST', body: 'SELECT * FROM slices LIMIT 0' });
    assert.deepEqual(cols, (await r.json()).columns);
    await page.fill('.sql-editor', 'SELECT  FROM slices');
    await page.locator('.sql-editor').evaluate((t) => t.setSelectionRange(7, 7));
    await slices.locator('.schema-column', { hasText: /^arg_set_id$/ }).click();
    assert.equal(await page.inputValue('.sql-editor'), 'SELECT arg_set_id FROM slices');
    // the views too, and the other scope still works
    await page.locator('.schema-table[data-table="slice_view"]').waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'query-schema.png') });
    await page.locator('.scope-library').click();
    await page.fill('.sql-editor', 'SELECT count(*) AS n FROM slices');
    await page.click('.run-query');
    await page.locator('.multi-table tbody tr').first().waitFor();
  });

  it('draws a query with ts and dur as debug tracks, one per group, and keeps them over a reload', async () => {
    const statement = 'SELECT ts, dur, name, category FROM slice_view WHERE depth <= 1';
    await page.goto(`${server.url}/?trace=${id}&page=query`);
    await page.fill('.sql-editor', statement);
    await page.click('.run-query');
    await page.locator('.query-table tbody tr').first().waitFor();
    await page.selectOption('.debug-group', 'category');
    await page.locator('.show-debug').click();
    await waitIdle(page);
    assert.match(page.url(), /[?&]debug=/);
    assert.match(page.url(), /[?&]debug_group=category/);
    const want = await sql(`SELECT category, count(*) FROM (${statement}) GROUP BY category ORDER BY category`);
    const check = async () => {
      await page.waitForFunction(() => window.__viewer.debugTracks && window.__viewer.debugTracks().ready, null, { timeout: 20000 });
      const got = await page.evaluate(() => window.__viewer.debugTracks());
      assert.equal(got.error, null);
      assert.deepEqual(got.tracks.map((t) => [t.title, t.slices]).sort(), want.map(([c, n]) => [c, n]).sort());
      // on top of every other track, each with a label
      const rows = await page.evaluate(() => window.__viewer.tracks());
      assert.equal(rows[0].kind, 'group');
      assert.match(rows[0].title, /^Debug/);
      for (let i = 1; i <= want.length; i++) assert.equal(rows[i].kind, 'debug', JSON.stringify(rows[i]));
      await page.locator('.track-label.kind-debug', { hasText: 'test' }).waitFor();
    };
    await check();
    await page.screenshot({ path: path.join(ARTIFACTS, 'debug-tracks.png') });
    await page.reload();
    await waitIdle(page);
    await check();
    // a row whose id is a slice's is that slice: a click selects it
    const known = `SELECT id, ts, dur, name FROM slice_view WHERE name = 'KnownSlice'`;
    await page.goto(`${server.url}/?trace=${id}&debug=${encodeURIComponent(known)}`);
    await waitIdle(page);
    await page.waitForFunction(() => window.__viewer.debugTracks() && window.__viewer.debugTracks().ready);
    const [[sliceId]] = await sql(known);
    const track = (await page.evaluate(() => window.__viewer.tracks())).find((t) => t.kind === 'debug');
    const { start, end } = await page.evaluate(() => window.__viewer.state());
    const { width } = await page.evaluate(() => window.__viewer.geometry());
    const box = await page.locator('canvas.tl-canvas').boundingBox();
    await page.mouse.click(box.x + ((2 * MS - start) * width) / (end - start), box.y + track.top + 10);
    await waitIdle(page);
    assert.deepEqual((await page.evaluate(() => window.__viewer.state())).selection, { kind: 'slice', id: sliceId });
    assert.deepEqual(pageErrors, []);
  });

  it('pivots an area by name and by thread > name, with the totals SQL gives', async () => {
    const tracks = [1, 2, 4, 5];
    const [s, e] = [1500000, 6500000];
    await page.goto(`${server.url}/?trace=${id}`);
    await waitIdle(page);
    await page.evaluate(([a, b, t]) => window.__viewer.setArea(a, b, t), [s, e, tracks]);
    await waitIdle(page);
    await page.locator('section.panel .tab[data-tab="pivot"]').click();
    await page.locator('.pivot-table tbody tr').first().waitFor();
    const rowsOf = (sel) => page.$$eval(sel, (trs) => trs.map((tr) => ({
      key: tr.dataset.key, count: Number(tr.dataset.count), wall: Number(tr.dataset.wall), self: Number(tr.dataset.self), max: Number(tr.dataset.max),
    })));
    // by name: the SQL of the rules, and the server's own /area
    const byName = new Map((await rowsOf('.pivot-table tr.pivot-row[data-level="0"]')).map((r) => [r.key, r]));
    const want = await sql(`SELECT name, count(*), sum(part), max(part) FROM ${clipped(tracks, s, e)} GROUP BY name`);
    assert.equal(byName.size, want.length);
    for (const [name, count, wall, max] of want) {
      assert.deepEqual(byName.get(name) && [byName.get(name).count, byName.get(name).wall, byName.get(name).max], [count, wall, max], name);
    }
    const area = await (await fetch(`${server.url}/api/traces/${id}/area?tracks=${tracks}&start=${s}&end=${e}`)).json();
    for (const n of area.names) {
      const g = byName.get(n.name);
      assert.deepEqual([g.count, g.wall, g.self, g.max], [n.count, n.wall, n.self, n.max], n.name);
    }
    const total = await page.$eval('.pivot-table tr.pivot-total', (tr) => [Number(tr.dataset.count), Number(tr.dataset.wall)]);
    const [all] = await sql(`SELECT count(*), sum(part) FROM ${clipped(tracks, s, e)}`);
    assert.deepEqual(total, all);
    // by thread, then name
    await page.selectOption('.pivot-level[data-level="0"]', 'thread');
    await page.selectOption('.pivot-level[data-level="1"]', 'name');
    await page.locator('.pivot-table tr.pivot-row[data-level="0"][data-key="main-thread"]').waitFor();
    const threads = await rowsOf('.pivot-table tr.pivot-row[data-level="0"]');
    const wantThreads = await sql(`SELECT coalesce(thread, '(no thread)'), count(*), sum(part), max(part) FROM ${clipped(tracks, s, e)} GROUP BY 1`);
    assert.deepEqual(threads.map((r) => [r.key, r.count, r.wall, r.max]).sort(), wantThreads.sort());
    await page.locator('.pivot-table tr.pivot-row[data-level="0"][data-key="main-thread"]').click();
    await page.locator('.pivot-table tr.pivot-row[data-level="1"]').first().waitFor();
    const inMain = await rowsOf('.pivot-table tr.pivot-row[data-level="1"]');
    const wantMain = await sql(`SELECT name, count(*), sum(part), max(part) FROM ${clipped(tracks, s, e)} WHERE thread = 'main-thread' GROUP BY name`);
    assert.deepEqual(inMain.map((r) => [r.key, r.count, r.wall, r.max]).sort(), wantMain.sort());
    // self: the main thread's by name, as /area has it for its track alone
    const mainArea = await (await fetch(`${server.url}/api/traces/${id}/area?tracks=1&start=${s}&end=${e}`)).json();
    for (const n of mainArea.names) assert.equal(inMain.find((r) => r.key === n.name).self, n.self, n.name);
    await page.screenshot({ path: path.join(ARTIFACTS, 'pivot.png') });
    assert.deepEqual(pageErrors, []);
  });
});
