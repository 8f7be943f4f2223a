// Trends and the query over many traces in the viewer (issue 44): a slice
// name charted across the library's traces in a label's numeric order,
// reached from a slice's details; a click on a point opens that trace at
// that name's longest slice (checked against SQL on the trace); the query
// page switched to "traces matching…" shows one result per trace (checked
// against each trace's own query), a bar chart of them, and a trace's error
// as a row of its own.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ROOT, buildServer, closeAll, launchBrowser, startServer, tmpDir, waitIdle, apiJson } from './helpers.mjs';

const E2E_ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');
const NAME = 'Serialize';

let server;
let browser;
let page;
let work;
const ids = {}; // by build label
const pageErrors = [];

function api(p, opts) {
  return apiJson(server, p, opts);
}

async function sql(id, q) {
  const r = await api(`/api/traces/${id}/query`, { method: 'POST', body: q });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body.rows;
}

async function waitPage(p, name) {
  await p.waitForFunction((n) => window.__viewer && window.__viewer.page === n && window.__viewer.idle(), name, { polling: 50 });
}

describe('trends and the query over traces', { timeout: 180000 }, () => {
  before(async () => {
    work = tmpDir('trends-e2e-');
    const bin = buildServer(['build/rel/gen_fxt']);
    const gen = path.join(ROOT, 'build/rel/gen_fxt');
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    // uploaded out of build order: build=10 must come after build=9 (numbers, not text)
    const builds = [[10, 'main'], [9, 'main'], [11, 'main'], [8, 'main'], [12, 'dev']];
    for (const [build, branch] of builds) {
      const file = path.join(work, `b${build}.fxt`);
      execFileSync(gen, ['--events', String(2000 + 1000 * build), '--threads', '2', '--seed', String(build), file]);
      const r = await api(`/api/traces?wait=1&name=build-${build}&label=build=${build}&label=branch=${branch}`,
        { method: 'POST', body: fs.readFileSync(file) });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      ids[build] = r.body.id;
    }
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    fs.mkdirSync(E2E_ARTIFACTS, { recursive: true });
  });

  after(() => closeAll(browser, server, work));

  it('reaches a trend from a slice\'s details and charts the name in the label\'s order', async () => {
    // a slice of NAME, picked in the timeline: its details link to the trend
    const [[sid]] = await sql(ids[9], `SELECT id FROM slice_view WHERE name = '${NAME}' LIMIT 1`);
    await page.goto(`${server.url}/?trace=${ids[9]}&slice=${sid}`);
    await waitIdle(page);
    const link = page.locator('section.panel a.trend-link');
    assert.equal(await link.getAttribute('href'), `/?page=trends&name=${NAME}`);
    await link.click();
    await waitPage(page, 'trends');
    assert.equal(await page.inputValue('input.trend-name'), NAME);
    // only the main branch, by build
    await page.fill('input.trend-filter', 'branch=main');
    await page.selectOption('select.trend-order', 'label:build');
    await page.waitForFunction(() => /order=label%3Abuild/.test(location.search) && /filter=branch/.test(location.search));
    await waitPage(page, 'trends');
    const points = await page.evaluate(() => window.__viewer.points());
    assert.deepEqual(points.map((p) => p.order_value), ['8', '9', '10', '11']);
    const want = (await api(`/api/trends?name=${NAME}&order=label:build&label=branch=main`)).body.points;
    assert.deepEqual(points.map((p) => p.id), want.map((p) => p.id), 'the points the API gives');
    // a p50 and a p95 point per trace, a ring per regression
    const boxes = await page.evaluate(() => window.__viewer.pointBoxes());
    assert.equal(boxes.length, 2 * points.filter((p) => p.p50_ns !== null).length);
    assert.equal(await page.locator('svg.trend-svg circle.regression').count(), want.filter((p) => p.regression).length);
    // a threshold of 0: every rise is a regression
    await page.fill('input.trend-threshold', '0');
    await page.press('input.trend-threshold', 'Enter');
    await page.waitForFunction(() => /threshold=0/.test(location.search));
    await waitPage(page, 'trends');
    const zero = (await api(`/api/trends?name=${NAME}&order=label:build&label=branch=main&threshold=0`)).body.points;
    assert.equal(await page.locator('svg.trend-svg circle.regression').count(), zero.filter((p) => p.regression).length);
    assert.equal(await page.locator('table.trend-table tr.regression').count(), zero.filter((p) => p.regression).length);
    await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'trends.png') });
  });

  it('a click on a point opens that trace at the name\'s longest slice', async () => {
    const box = (await page.evaluate(() => window.__viewer.pointBoxes())).find((b) => b.id === String(ids[10]) && b.series === 'p95');
    assert.ok(box, 'the point of build 10');
    await page.mouse.click(box.x, box.y);
    await page.waitForURL(new RegExp(`\\?trace=${ids[10]}&slice=\\d+`));
    await waitIdle(page);
    const [[longest, dur]] = await sql(ids[10], `SELECT id, dur FROM slice_view WHERE name = '${NAME}' AND dur >= 0 ORDER BY dur DESC LIMIT 1`);
    const st = await page.evaluate(() => window.__viewer.state());
    assert.deepEqual(st.selection, { kind: 'slice', id: longest });
    assert.ok(st.end - st.start < dur * 2, 'the view is zoomed to the slice');
    assert.ok(await page.evaluate((id) => window.__viewer.sliceRect(id), longest), 'the slice is on screen');
  });

  it('runs a query over the library: one result per trace, a bar chart, errors as rows', async () => {
    await page.goto(`${server.url}/?trace=${ids[8]}&page=query`);
    await waitPage(page, 'query');
    await page.click('button.scope-library');
    await page.fill('input.query-filter', 'branch=main');
    await page.fill('textarea.sql-editor', `SELECT count(*) AS n, max(dur) AS longest FROM slice_view WHERE name = '${NAME}'`);
    await page.click('button.run-query');
    await page.locator('table.multi-table tbody tr').first().waitFor();
    await waitPage(page, 'query');
    assert.match(page.url(), /scope=library/);
    const rows = await page.$$eval('table.multi-table tbody tr.trace-row', (trs) => trs.map((tr) => ({
      trace: tr.dataset.trace, name: tr.querySelector('.trace-cell').textContent,
      labels: [...tr.querySelectorAll('.labels-cell .chip')].map((c) => c.textContent),
      cells: [...tr.querySelectorAll('td')].slice(2).map((td) => td.textContent),
    })));
    // newest first, the dev branch left out
    assert.deepEqual(rows.map((r) => r.name), ['build-8', 'build-11', 'build-9', 'build-10']);
    for (const r of rows) {
      const build = r.name.slice(6);
      assert.deepEqual(r.labels, ['branch=main', `build=${build}`]);
      const [[n, longest]] = await sql(ids[build], `SELECT count(*), max(dur) FROM slice_view WHERE name = '${NAME}'`);
      assert.deepEqual(r.cells, [String(n), String(longest)], `the trace's own answer for ${r.name}`);
    }
    // one number per trace: bars
    assert.equal(await page.locator('.query-chart svg.bars rect.bar').count(), 4);
    assert.deepEqual(await page.$$eval('.query-chart .bars-column option', (o) => o.map((x) => x.textContent)), ['n', 'longest']);
    await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'query-traces.png') });
    // a statement that cannot run: a row of its own per trace
    await page.fill('textarea.sql-editor', 'SELECT no_such_column FROM slices');
    await page.click('button.run-query');
    await page.locator('table.multi-table tr.trace-error').first().waitFor();
    await waitPage(page, 'query');
    assert.equal(await page.locator('table.multi-table tr.trace-error').count(), 4);
    assert.match(await page.locator('table.multi-table tr.trace-error').first().textContent(), /bad_query/);
    assert.equal(await page.locator('.query-chart svg').count(), 0);
    // the library's own link: no trace, only "traces matching…"
    await page.goto(server.url + '/');
    await page.click('a.library-query-link');
    await waitPage(page, 'query');
    assert.ok(await page.locator('button.scope-trace').isDisabled());
    await page.fill('textarea.sql-editor', 'SELECT count(*) FROM threads');
    await page.click('button.run-query');
    await page.locator('table.multi-table tbody tr').first().waitFor();
    await waitPage(page, 'query');
    assert.equal(await page.locator('table.multi-table tbody tr.trace-row').count(), 5, 'every trace');
    assert.deepEqual(pageErrors, []);
  });
});
