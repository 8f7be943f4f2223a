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
import { ROOT, buildFixtureTool, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll } from './helpers.mjs';

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
    const again = await api('/api/traces?name=demo-again&wait=1', { method: 'POST', body: fs.readFileSync(path.join(work, 'demo.fxt')) });
    assert.equal(again.status, 201);
    ids.again = again.body.id;
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
    assert.ok(h0 < 100, `with nothing to show the drawer is only its hint: ${h0}`);
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
    // remembered across a reload: the drawer takes it with something to show
    await page.reload();
    await waitIdle(page);
    assert.ok(await height('section.panel') < 100, 'empty again after the reload');
    await page.evaluate(() => window.__viewer.select(1));
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
    await page.evaluate(() => window.__viewer.select(1));
    await waitIdle(page);
    await page.click('section.panel button.panel-hide');
    await waitIdle(page);
    assert.ok(Math.abs(await height('section.panel') - h1) <= 2, 'shown again at its height');
    await page.screenshot({ path: path.join(ARTIFACTS, 'drawer.png') });
    assert.deepEqual(pageErrors, []);
  });

  it('the empty drawer is small; a slice clicked where the drawer grows stays in view', async () => {
    await page.setViewportSize({ width: 1280, height: 700 });
    try {
      await page.goto(`${server.url}/?trace=${ids.demo}`);
      await page.evaluate(() => localStorage.removeItem('trace-viewer.drawer')); /* the default size */
      await page.reload();
      await waitIdle(page);
      const panel0 = await page.locator('section.panel').boundingBox();
      assert.ok(panel0.height < 100, `the empty drawer at 700 px: ${panel0.height}`);
      // a slice in the timeline's last 120 px, which the drawer will cover
      const body = await page.locator('.tl-body').boundingBox();
      const cv = await page.locator('canvas.tl-canvas').boundingBox();
      let hit = null;
      for (let y = body.y + body.height - 8; y > body.y + body.height - 120 && !hit; y -= 6)
        for (let x = cv.x + 20; x < cv.x + cv.width - 20 && !hit; x += 25) {
          const h = await page.evaluate(([px, py]) => window.__viewer.hit(px, py), [x, y]);
          if (h && !h.merged) hit = { ...h, x, y };
        }
      assert.ok(hit, 'a slice at the foot of the timeline');
      await page.mouse.click(hit.x, hit.y);
      await waitIdle(page);
      const panel1 = await page.locator('section.panel').boundingBox();
      assert.ok(panel1.height >= 200, `the drawer takes its height: ${panel1.height}`);
      assert.equal((await state()).selection.id, hit.id);
      const r = await page.evaluate((id) => window.__viewer.sliceRect(id), hit.id);
      assert.ok(r && r.y + r.height <= panel1.y, `the selected slice is above the drawer: ${JSON.stringify(r)} ${JSON.stringify(panel1)}`);
      await page.screenshot({ path: path.join(ARTIFACTS, 'drawer-foot.png') });
      // Esc: nothing selected, the drawer small again
      await page.keyboard.press('Escape');
      await waitIdle(page);
      assert.ok((await page.locator('section.panel').boundingBox()).height < 100, 'small again with nothing to show');
      assert.deepEqual(pageErrors, []);
    } finally {
      await page.setViewportSize({ width: 1600, height: 1000 });
    }
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

  it('library: natural name order A→Z first, counts, a long label, failed uploads, find links to the match', async () => {
    const tool = buildFixtureTool(work);
    execFileSync(tool, ['--tiny', path.join(work, 'tiny.fxt')]);
    execFileSync(tool, [path.join(work, 'fixture.fxt')]);
    const tiny = fs.readFileSync(path.join(work, 'tiny.fxt'));
    const added = [];
    for (const n of ['run-99', 'run-215', 'run-3']) {
      const r = await api(`/api/traces?name=${n}&wait=1`, { method: 'POST', body: tiny });
      added.push(r.body.id);
    }
    const long = 'v'.repeat(256);
    const withLong = (await api(`/api/traces?name=long-label&wait=1&label=long=${long}`, { method: 'POST', body: tiny })).body.id;
    const fixture = (await api('/api/traces?name=fixture&wait=1', { method: 'POST', body: fs.readFileSync(path.join(work, 'fixture.fxt')) })).body.id;
    const failed = (await api('/api/traces?name=not-a-trace&wait=1', { method: 'POST', body: 'this is no trace at all' })).body.id;
    added.push(withLong, fixture, failed);
    try {
      await page.goto(server.url + '/?filter=run-');
      await page.waitForFunction(() => document.querySelectorAll('table.traces:not(.find-table) tbody tr').length === 3);
      // a filtered list says how many match
      assert.match(await page.locator('.empty').textContent(), /^3 traces match/);
      // the first click on Name sorts A→Z, and naturally
      await page.click('table.traces th.sortable:text-is("Name")');
      await page.waitForFunction(() => /sort%3Aname/.test(location.search));
      const names = () => page.$$eval('table.traces:not(.find-table) tbody tr td.name', (tds) => tds.map((t) => t.textContent));
      await page.waitForFunction(() => document.querySelector('table.traces:not(.find-table) td.name').textContent === 'run-3');
      assert.deepEqual(await names(), ['run-3', 'run-99', 'run-215']);
      await page.click('table.traces th.sortable:has-text("Name")');
      await page.waitForFunction(() => /sort%3A-name/.test(location.search));
      await page.waitForFunction(() => document.querySelector('table.traces:not(.find-table) td.name').textContent === 'run-215');
      assert.deepEqual(await names(), ['run-215', 'run-99', 'run-3']);
      // a 256-byte label stays in its cell, clear of the buttons
      await page.goto(server.url + '/?filter=long-label');
      await page.waitForSelector(`tr[data-id="${withLong}"] .chip`);
      const chip = await page.locator(`tr[data-id="${withLong}"] .chip`).boundingBox();
      const actions = await page.locator(`tr[data-id="${withLong}"] td.actions`).boundingBox();
      assert.ok(chip.x + chip.width <= actions.x + 1, `the label (to ${chip.x + chip.width}) ends before the buttons (${actions.x})`);
      // a failed upload offers neither Pin nor Edit
      await page.goto(server.url + '/?filter=not-a-trace');
      await page.waitForSelector(`tr[data-id="${failed}"] button.dismiss`);
      assert.equal(await page.locator(`tr[data-id="${failed}"] button.pin`).count(), 0);
      assert.equal(await page.locator(`tr[data-id="${failed}"] button.edit`).count(), 0);
      // find across traces: "1 trace", and the link opens the trace on the match
      await page.goto(server.url + '/');
      await page.fill('input.find', 'KnownSlice');
      await page.press('input.find', 'Enter');
      await page.waitForSelector('.find-table tbody tr');
      assert.match(await page.locator('.find-head').textContent(), /: 1 trace(?!s)/);
      await page.click('.find-table tbody tr a.trace-link');
      await waitIdle(page);
      await page.waitForFunction(() => window.__viewer.state().search.count === 1 && window.__viewer.state().selection);
      await waitIdle(page);
      const known = (await api(`/api/traces/${fixture}/search?q=KnownSlice`)).body.slices[0];
      const st = await state();
      assert.equal(await page.inputValue('input.search'), 'KnownSlice');
      assert.deepEqual(st.selection, { kind: 'slice', id: known.id });
      assert.ok(st.start <= known.ts && st.end >= known.ts + known.dur, 'the match is in view');
    } finally {
      for (const id of added) await api(`/api/traces/${id}`, { method: 'DELETE' });
      for (const id of added) await api(`/api/traces/${id}`, { method: 'DELETE' });
    }
  });

  it('timeline: the whole title, counter values rounded, named processes in CPU runs, a live tooltip, the area kept', async () => {
    await page.goto(`${server.url}/?trace=${ids.demo}`);
    await page.evaluate(() => localStorage.removeItem('trace-viewer.drawer')); // the drawer at its first size
    await page.reload();
    await waitIdle(page);
    // the title is never cut short, and says itself in a tooltip
    const title = page.locator('.topbar .trace-title');
    assert.equal(await title.textContent(), 'demo');
    assert.equal(await title.getAttribute('title'), 'demo');
    assert.ok(await title.evaluate((e) => e.scrollWidth <= e.clientWidth), 'not cut');
    const cv = await page.locator('canvas.tl-canvas').boundingBox();
    const rowY = (t) => cv.y + t.top + t.h / 2;
    // only the tracks named like this, at the top
    const only = async (name) => {
      await page.fill('input.track-filter', name);
      await waitIdle(page);
      return page.evaluate(() => window.__viewer.tracks());
    };
    // a counter's value, rounded, in the details
    const counter = (await only('cpu_load')).find((t) => t.kind === 'counter');
    await page.mouse.click(cv.x + cv.width / 2, rowY(counter));
    await waitIdle(page);
    const value = await page.locator('section.panel tr:has(th:text-is("Value")) td').innerText();
    assert.doesNotMatch(value, /\d{6,}/, `rounded: ${value}`);
    // a CPU run names its process and thread
    const cpu = (await only('CPU 0')).find((t) => t.kind === 'cpu');
    const t0 = (await api(`/api/traces/${ids.demo}`)).body.start_ns;
    await page.evaluate(([s, e]) => window.__viewer.setView(s, e), [t0 + 100 * MS, t0 + 100.5 * MS]);
    await waitIdle(page);
    const run = (await api(`/api/traces/${ids.demo}/sched?cpu=0&start=${t0 + 100.2 * MS}&end=${t0 + 100.3 * MS}`)).body.slices[0];
    const runX = cv.x + ((Math.max(run.ts, t0 + 100.2 * MS) - (t0 + 100 * MS)) / (0.5 * MS)) * cv.width + 2;
    await page.mouse.click(runX, rowY(cpu));
    await waitIdle(page);
    assert.match(await page.locator('section.panel tr:has(th:text-is("Process")) td').innerText(), /^\S.* \d+$/);
    assert.doesNotMatch(await page.locator('section.panel tr:has(th:text-is("Process")) td').innerText(), /^\d+$/);
    // the tooltip follows the view moving under a still mouse
    await page.evaluate(([s, e]) => window.__viewer.setView(s, e), [t0 + 100 * MS, t0 + 120 * MS]);
    await waitIdle(page);
    const main = (await only('main')).find((t) => t.kind === 'thread');
    const mx = cv.x + cv.width / 2;
    const my = cv.y + main.top + 4 + 18 + 9; // depth 1: under whole-run
    await page.mouse.move(mx, my);
    await waitIdle(page);
    const under = () => page.evaluate(([x, y]) => window.__viewer.hit(x, y), [mx, my]);
    const tip = () => page.evaluate(() => {
      const t = document.querySelector('.tooltip');
      return t.classList.contains('hidden') ? null : t.querySelector('.tip-title').textContent;
    });
    const h1 = await under();
    assert.ok(h1, 'a slice under the mouse');
    assert.equal(await tip(), h1.name);
    let now = h1;
    for (let k = 1; k < 40 && now && now.id === h1.id; k++) {
      await page.evaluate(([s, e]) => window.__viewer.setView(s, e), [t0 + 100 * MS + k * 3 * MS, t0 + 120 * MS + k * 3 * MS]);
      await waitIdle(page);
      now = await under();
    }
    assert.ok(!now || now.id !== h1.id, 'the view moved another slice (or none) under the mouse');
    assert.equal(await tip(), now ? now.name : null, 'the tooltip tells what is under the mouse now');
    await page.fill('input.track-filter', '');
    // a slice picked from the area's list leaves the area as it was
    await page.evaluate(([s, e]) => window.__viewer.setArea(s, e), [t0 + 100 * MS, t0 + 110 * MS]);
    await waitIdle(page);
    await page.locator('section.panel .name-row').first().click();
    await page.locator('section.panel .area-slice .slice-link').first().click();
    await waitIdle(page);
    const after = await state();
    assert.equal(after.selection.kind, 'slice');
    assert.ok(after.area && after.area.start === t0 + 100 * MS && after.area.end === t0 + 110 * MS, 'the area stays: ' + JSON.stringify(after.area));
  });

  it('compare: a plain status, a header that stays, no old timelines after a switch', async () => {
    await page.goto(`${server.url}/?page=compare&a=${ids.demo}&b=${ids.again}`);
    await page.waitForSelector('table.cmp-table tr.cmp-row');
    const color = await page.locator('.cmp-status').evaluate((e) => getComputedStyle(e).color);
    assert.notEqual(color, 'rgb(179, 38, 30)', 'the row count is not drawn as an error');
    assert.match(await page.locator('.cmp-status').textContent(), /rows/);
    // the header stays while the rows scroll
    await page.locator('.cmp-table-wrap').evaluate((e) => { e.scrollTop = 2000; });
    const wrap = await page.locator('.cmp-table-wrap').boundingBox();
    const th = await page.locator('table.cmp-table thead th').first().boundingBox();
    assert.ok(th.y >= wrap.y - 1 && th.y < wrap.y + 40, `the header is in view: ${th.y} in ${wrap.y}`);
    await page.locator('.cmp-table-wrap').evaluate((e) => { e.scrollTop = 0; });
    await page.click('table.cmp-table tr.cmp-row:nth-child(2)');
    await page.waitForSelector('iframe.cmp-iframe-a');
    await page.selectOption('select.cmp-by', 'thread');
    await page.waitForFunction(() => document.querySelector('table.cmp-table thead th').textContent === 'Thread');
    assert.equal(await page.locator('iframe.cmp-iframe-a').count(), 0, 'the old row\'s timelines go with the switch');
  });

  it('span readout: a mark, an area and a drag say how long they are; query rows with ts and dur open there', async () => {
    const t = (await api(`/api/traces/${ids.demo}`)).body;
    const a = t.start_ns + 50 * MS;
    await page.goto(`${server.url}/?trace=${ids.demo}&start=${t.start_ns}&end=${t.start_ns + 100 * MS}&marks=${a}_${a + 12345678}`);
    await waitIdle(page);
    const spans = () => page.evaluate(() => window.__viewer.spanLabels());
    assert.ok((await spans()).includes('12.346 ms'), 'the mark: ' + JSON.stringify(await spans()));
    // a mark's label over a tick of the axis: the tick's label gives way
    // (the axis ticks every 10 ms here; this mark is centred on 60 ms)
    const b = t.start_ns + 55 * MS;
    await page.goto(`${server.url}/?trace=${ids.demo}&start=${t.start_ns}&end=${t.start_ns + 100 * MS}&marks=${b}_${b + 10 * MS}`);
    await waitIdle(page);
    const axis = await page.evaluate(() => window.__viewer.axisLabels());
    assert.equal(axis.spans.length, 1, JSON.stringify(axis));
    assert.ok(axis.ticks.length >= 5, 'the other ticks keep their labels: ' + JSON.stringify(axis.ticks));
    for (const tk of axis.ticks)
      for (const sp of axis.spans)
        assert.ok(tk.x1 <= sp.x0 || tk.x0 >= sp.x1, `tick ${tk.text} is drawn under the label ${sp.text}: ${JSON.stringify(axis)}`);
    assert.ok(!axis.ticks.some((tk) => tk.text === '60 ms'), 'the covered tick is left out: ' + JSON.stringify(axis.ticks));
    // a Shift+drag says its length while it is dragged
    const cv = await page.locator('canvas.tl-canvas').boundingBox();
    await page.keyboard.down('Shift');
    await page.mouse.move(cv.x + cv.width * 0.2, cv.y + 40);
    await page.mouse.down();
    await page.mouse.move(cv.x + cv.width * 0.45, cv.y + 60, { steps: 5 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const during = await page.evaluate(() => window.__viewer.state().area);
    assert.ok(during, 'an area while dragging');
    const want = await page.evaluate((d) => window.__viewer.fmtDur(d), during.end - during.start);
    assert.ok((await spans()).includes(want), `the drag's length ${want}: ${JSON.stringify(await spans())}`);
    await page.mouse.up();
    await page.keyboard.up('Shift');
    await waitIdle(page);
    const area = (await state()).area;
    assert.ok((await spans()).includes(await page.evaluate((d) => window.__viewer.fmtDur(d), area.end - area.start)));
    // the query page: a row's ts (and dur) opens the timeline there
    await page.goto(`${server.url}/?trace=${ids.demo}&page=query`);
    await page.fill('textarea.sql-editor', 'SELECT ts, dur, name FROM slice_view WHERE depth > 2 ORDER BY dur DESC LIMIT 3');
    await page.click('button.run-query');
    await page.waitForSelector('.query-table a.ts-link');
    const row = (await sql(ids.demo, 'SELECT ts, dur FROM slice_view WHERE depth > 2 ORDER BY dur DESC LIMIT 1'))[0];
    await page.locator('.query-table a.ts-link').first().click();
    await waitIdle(page);
    const st = await state();
    assert.ok(st.start <= row[0] && st.end >= row[0] + row[1], `the row's span is in view: ${JSON.stringify(st)}`);
    assert.ok(st.end - st.start < 3 * row[1], 'and fills it');
  });

  it('downloads the original file and the Chrome JSON, which carries the CPU scheduling', async () => {
    await page.goto(`${server.url}/?trace=${ids.demo}`);
    await waitIdle(page);
    const save = async (sel) => {
      const [dl] = await Promise.all([page.waitForEvent('download'), page.click(sel)]);
      const file = path.join(work, 'dl-' + dl.suggestedFilename());
      await dl.saveAs(file);
      return { name: dl.suggestedFilename(), bytes: fs.readFileSync(file) };
    };
    const orig = await save('a.download-original');
    assert.ok(orig.bytes.equals(fs.readFileSync(path.join(work, 'demo.fxt'))), 'the original bytes');
    const json = await save('a.download-json');
    assert.match(json.name, /\.json$/);
    const events = JSON.parse(json.bytes.toString()).traceEvents;
    const runs = (await sql(ids.demo, 'SELECT count(*) FROM sched'))[0][0];
    assert.ok(runs > 1000, `${runs} CPU runs`);
    const proc = events.find((e) => e.ph === 'M' && e.name === 'process_name' && e.args.name === 'CPU scheduling');
    assert.ok(proc, 'a process holds the CPUs');
    assert.equal(events.filter((e) => e.pid === proc.pid && e.ph !== 'M').length, runs, 'every CPU run is in the export');
    const cpus = (await sql(ids.demo, 'SELECT count(DISTINCT cpu) FROM sched'))[0][0];
    assert.equal(events.filter((e) => e.pid === proc.pid && e.ph === 'M' && e.name === 'thread_name' && /^CPU \d+$/.test(e.args.name)).length, cpus);
  });

  // Issue 43: the flame graph of a whole async track said "1 frames" and
  // the time of lane 0's operations only. Every operation, on every lane,
  // is a root of its own: the graph's time is theirs, as SQL sums it.
  it('the flame graph of an async track counts the operations on every lane', async () => {
    await page.goto(`${server.url}/?trace=${ids.demo}`);
    await waitIdle(page);
    const t = (await api(`/api/traces/${ids.demo}`)).body;
    const [[track, lanes]] = await sql(ids.demo, "SELECT id, max_depth FROM tracks WHERE kind = 'async' ORDER BY max_depth DESC LIMIT 1");
    assert.ok(lanes > 2, `${lanes} lanes`);
    const [[roots, wall, all]] = await sql(ids.demo, `SELECT sum(parent_id IS NULL), sum(CASE WHEN parent_id IS NOT NULL THEN 0 WHEN dur < 0 ` +
      `THEN ${t.end_ns} - ts ELSE dur END), count(*) FROM slices WHERE track_id = ${track}`);
    await page.evaluate(([s, e, tr]) => window.__viewer.setArea(s, e, [tr]), [t.start_ns, t.end_ns, track]);
    await waitIdle(page);
    await page.locator('section.panel .tab[data-tab="flame"]').click();
    await waitIdle(page);
    const want = await page.evaluate((w) => window.__viewer.fmtDur(w), wall);
    await page.waitForFunction((w) => (document.querySelector('.flame-info') || {}).textContent?.includes(`${w} in the range`), want);
    assert.doesNotMatch(await page.textContent('.flame-info'), /^1 frames/);
    const fl = (await api(`/api/traces/${ids.demo}/flame?tracks=${track}&start=${t.start_ns}&end=${t.end_ns}`)).body;
    const rootNodes = fl.nodes.filter((n) => n.parent < 0);
    assert.equal(rootNodes.reduce((a, n) => a + n.count, 0), roots, 'every parentless slice is under a root');
    const area = (await api(`/api/traces/${ids.demo}/area?tracks=${track}&start=${t.start_ns}&end=${t.end_ns}`)).body;
    assert.equal(area.names.reduce((a, n) => a + n.count, 0), all, 'the area table counts every slice too');
    await page.screenshot({ path: path.join(ARTIFACTS, 'async-flame.png') });
  });

  it('thread state tracks under each thread with runs, and a collapsed process sums up its threads', async () => {
    await page.goto(`${server.url}/?trace=${ids.demo}`);
    await page.evaluate(() => localStorage.removeItem('trace-viewer.drawer'));
    await page.reload();
    await waitIdle(page);
    const withRuns = await sql(ids.demo, 'SELECT pid, tid, count(*) FROM sched GROUP BY pid, tid');
    assert.ok(withRuns.length >= 10);
    const tracks = await page.evaluate(() => window.__viewer.tracks());
    const states = tracks.filter((t) => t.kind === 'state');
    assert.equal(states.length, withRuns.length, 'a state track for each thread with runs: ' + JSON.stringify(states.map((t) => t.key)));
    for (const [pid, tid] of withRuns) {
      const i = tracks.findIndex((t) => t.kind === 'state' && t.key === `state:${pid}/${tid}`);
      assert.ok(i >= 0, `state track of ${pid}/${tid}`);
      // under the thread's slices when it has a slice track
      if (tracks[i - 1].kind === 'thread') assert.match(tracks[i - 1].subtitle + ' ' + tracks[i - 1].title, new RegExp(`\\b${tid}\\b`));
    }
    // what is drawn is what the server says
    const st0 = tracks.find((t) => t.kind === 'state' && tracks[tracks.indexOf(t) - 1].kind === 'thread');
    const [, pid, tid] = /^state:(\d+)\/(\d+)$/.exec(st0.key);
    const t = (await api(`/api/traces/${ids.demo}`)).body;
    const want = (await api(`/api/traces/${ids.demo}/thread_states?pid=${pid}&tid=${tid}`)).body.states;
    const run = want.find((s) => s.state === 'running' && s.dur > 2 * MS);
    const gap = want.find((s) => s.state !== 'running' && s.dur > 2 * MS);
    const cv = await page.locator('canvas.tl-canvas').boundingBox();
    await page.fill('input.track-filter', tid); // the thread's tracks at the top
    for (const s of [run, gap]) {
      await page.evaluate(([a, b]) => window.__viewer.setView(a, b), [s.ts - s.dur, s.ts + 2 * s.dur]);
      await waitIdle(page);
      const tr = (await page.evaluate(() => window.__viewer.tracks())).find((x) => x.key === st0.key);
      const h = await page.evaluate(([x, y]) => window.__viewer.hit(x, y), [cv.x + cv.width / 2, cv.y + tr.top + tr.h / 2]);
      assert.deepEqual({ state: h.state, cpu: h.cpu, ts: h.ts, dur: h.dur }, { state: s.state, cpu: s.cpu, ts: s.ts, dur: s.dur });
    }
    // a click tells it in the details
    const tr = (await page.evaluate(() => window.__viewer.tracks())).find((x) => x.key === st0.key);
    await page.mouse.click(cv.x + cv.width / 2, cv.y + tr.top + tr.h / 2);
    await waitIdle(page);
    assert.match(await page.locator('section.panel').innerText(), new RegExp(`Thread state[\\s\\S]*${gap.state}`, 'i'));
    await page.fill('input.track-filter', '');
    await waitIdle(page);
    await page.screenshot({ path: path.join(ARTIFACTS, 'thread-states.png') });
    // a collapsed process: a summary of its threads' slices in the view
    await page.evaluate(([a, b]) => window.__viewer.setView(a, b), [t.start_ns, t.end_ns]);
    await waitIdle(page);
    const group = (await page.evaluate(() => window.__viewer.tracks())).find((x) => x.kind === 'group' && x.title === 'app-1');
    await page.click(`.labels .group-label[data-key="${group.key}"]`);
    await waitIdle(page);
    const sum = await page.evaluate((k) => window.__viewer.groupSummary(k), group.key);
    assert.ok(sum && sum.counts.length > 100, 'a summary is drawn: ' + JSON.stringify(sum && sum.counts.length));
    const ov = (await api(`/api/traces/${ids.demo}/overview?start=${sum.start}&end=${sum.end}&buckets=${sum.counts.length}`)).body;
    const mine = ov.processes.find((p) => String(p.pid) === String(group.key).replace(/^p:/, ''));
    assert.deepEqual(sum.counts, mine.counts, 'the slices of its threads per pixel column');
    await page.screenshot({ path: path.join(ARTIFACTS, 'collapsed-summary.png') });
  });
});
