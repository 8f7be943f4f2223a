// End-to-end test of the bundled viewer (static/) against the real server.
//
// Starts trace-server on a free port with a temporary --data dir, writes the
// fixture traces with tests/e2e/make_fixture.c, uploads them through the
// library page's file input, and checks the timeline in headless Chromium:
// track names, a known slice at a known place with its arguments, flows,
// search, area statistics, a copied URL restoring the view, the
// diagnostics banner, the token form, and that names from the trace stay
// text. Screenshots go to tests/artifacts/.
//
//   npm run test:e2e        (TRACE_SERVER=path to skip `make`; CHROMIUM=path)

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import {
  ROOT, buildFixtureTool, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll,
} from './helpers.mjs';

const MS = 1000000;
const XSS_SLICE = '<img src=x onerror=alert(1)>';
const XSS_FILE = '<img src=x onerror=alert(2)>.fxt';
const ARTIFACTS = path.join(ROOT, 'tests', 'artifacts');
const E2E_ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');

let server;
let browser;
let page;
let work;
const dialogs = [];
const pageErrors = [];
const ids = {}; // trace ids by file name

async function api(p, opts) {
  const r = await fetch(server.url + p, opts);
  return { status: r.status, body: r.status === 204 ? null : await r.json() };
}

function watch(p) {
  p.on('dialog', (d) => {
    dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  p.on('pageerror', (e) => pageErrors.push(e.message));
  return p;
}

async function labelTexts(p) {
  return p.$$eval('.labels .label .name', (els) => els.map((e) => e.textContent));
}

async function knownSliceId() {
  const r = await api(`/api/traces/${ids.fixture}/search?q=KnownSlice`);
  assert.equal(r.body.slices.length, 1);
  return r.body.slices[0].id;
}

describe('viewer', { timeout: 180000 }, () => {
  before(async () => {
    work = tmpDir('viewer-e2e-');
    const bin = buildServer();
    const tool = buildFixtureTool(work);
    execFileSync(tool, [path.join(work, 'fixture.fxt')]);
    execFileSync(tool, ['--damaged', path.join(work, 'damaged.fxt')]);
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    browser = await launchBrowser();
    page = watch(await browser.context.newPage());
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    fs.mkdirSync(E2E_ARTIFACTS, { recursive: true });
  });

  after(() => closeAll(browser, server, work));

  it('uploads two traces through the file input and lists them', async () => {
    await page.goto(server.url + '/');
    await page.waitForSelector('.lib-toolbar');
    await page.setInputFiles('#file-input', [
      { name: 'fixture.fxt', mimeType: 'application/octet-stream', buffer: fs.readFileSync(path.join(work, 'fixture.fxt')) },
      { name: XSS_FILE, mimeType: 'application/octet-stream', buffer: fs.readFileSync(path.join(work, 'damaged.fxt')) },
    ]);
    await page.waitForFunction(() => document.querySelectorAll('.upload.ready').length === 2, null, { timeout: 30000 });
    await page.waitForFunction(() => [...document.querySelectorAll('table.traces td.status')]
      .filter((td) => td.textContent.startsWith('ready')).length === 2, null, { timeout: 10000 });
    const list = await api('/api/traces');
    for (const t of list.body.traces) ids[t.name === 'fixture.fxt' ? 'fixture' : 'damaged'] = t.id;
    assert.ok(ids.fixture && ids.damaged, 'both traces are on the server');
    const names = await page.$$eval('table.traces td.name', (tds) => tds.map((td) => td.textContent));
    assert.deepEqual(names, [XSS_FILE, 'fixture.fxt'], 'newest first, names as text');
    assert.equal(await page.locator('img').count(), 0, 'a trace name never becomes markup');
    // the filter box
    await page.fill('input.filter', 'fixture');
    assert.deepEqual(await page.$$eval('table.traces td.name', (tds) => tds.map((td) => td.textContent)), ['fixture.fxt']);
    await page.fill('input.filter', '');
    await page.screenshot({ path: path.join(ARTIFACTS, 'library.png') });
  });

  it('opens the trace and shows its processes, threads and other tracks by name', async () => {
    await page.click('a.trace-link:text-is("fixture.fxt")');
    await page.waitForURL(/\?trace=\d+/);
    await waitIdle(page);
    const names = await labelTexts(page);
    for (const n of ['CPUs', 'CPU 0', 'CPU 1', 'Logs', 'fixture-proc', 'main-thread', 'worker-thread', 'Download',
      'queue_depth.items', 'render-proc', 'render-main']) {
      assert.ok(names.includes(n), `track "${n}" in ${JSON.stringify(names)}`);
    }
    assert.ok(await page.locator('.banner.diagnostics').isHidden(), 'no diagnostics banner for a clean trace');
  });

  it('draws a known slice at its place; clicking it shows its args and flows', async () => {
    const id = await knownSliceId();
    await page.goto(`${server.url}/?trace=${ids.fixture}&start=0&end=${10 * MS}`);
    await waitIdle(page);
    const st = await page.evaluate(() => window.__viewer.state());
    assert.equal(st.start, 0);
    assert.equal(st.end, 10 * MS);
    // Where KnownSlice [1 ms, 3 ms) at depth 1 of main-thread must be.
    const canvas = await page.locator('canvas.tl-canvas').boundingBox();
    const label = await page.locator('.label[data-key]').filter({ hasText: 'main-thread' }).boundingBox();
    const geo = await page.evaluate(() => window.__viewer.geometry());
    const want = {
      x: canvas.x + (1 * MS / (10 * MS)) * canvas.width,
      y: label.y + geo.trackPad + 1 * geo.rowHeight,
      width: (2 * MS / (10 * MS)) * canvas.width,
    };
    const got = await page.evaluate((i) => window.__viewer.sliceRect(i), id);
    assert.ok(got, 'KnownSlice is on screen');
    assert.ok(Math.abs(got.x - want.x) < 1.5 && Math.abs(got.y - want.y) < 1.5 && Math.abs(got.width - want.width) < 1.5,
      `rect ${JSON.stringify(got)} near ${JSON.stringify(want)}`);
    // The canvas pixel there has KnownSlice's fill, not the background.
    await page.mouse.click(want.x + want.width / 2, want.y + geo.rowHeight / 2);
    await waitIdle(page);
    assert.deepEqual((await page.evaluate(() => window.__viewer.state())).selection, { kind: 'slice', id });
    const panel = page.locator('section.panel');
    await assert.doesNotReject(panel.locator('.slice-name', { hasText: 'KnownSlice' }).waitFor());
    const args = await panel.locator('table.args').innerText();
    for (const s of ['answer', '42', 'label', 'hello', 'ratio', '0.5', 'big', '18446744073709551615']) {
      assert.ok(args.includes(s), `args show ${s}: ${args}`);
    }
    const info = await panel.locator('table.slice-info').innerText();
    assert.match(info, /Category\s+test/);
    assert.match(info, /Duration\s+2 ms/);
    assert.match(info, /Thread\s+main-thread 101/);
    assert.match(info, /Process\s+fixture-proc 100/);
    assert.match(info, /Parent\s+Outer/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'timeline-selected.png') });
    // Its flow leads to the slice on worker-thread; following it selects that end.
    const flow = panel.locator('button.flow-link');
    await flow.waitFor();
    assert.equal(await flow.textContent(), XSS_SLICE);
    await flow.click();
    await waitIdle(page);
    await panel.locator('.slice-name', { hasText: XSS_SLICE }).waitFor();
    // And the parent link goes up.
    await page.evaluate((i) => window.__viewer.select(i), id);
    await waitIdle(page);
    await panel.locator('button.parent-link', { hasText: 'Outer' }).click();
    await waitIdle(page);
    await panel.locator('.slice-name', { hasText: 'Outer' }).waitFor();
  });

  it('finds slices with / search and steps through the hits', async () => {
    const id = await knownSliceId();
    await page.keyboard.press('Escape');
    await page.mouse.move(700, 400);
    await page.keyboard.press('/');
    assert.ok(await page.evaluate(() => document.activeElement.classList.contains('search')), '/ focuses search');
    await page.keyboard.type('knownslice');
    await page.keyboard.press('Enter');
    await waitIdle(page);
    let st = await page.evaluate(() => window.__viewer.state());
    assert.deepEqual(st.selection, { kind: 'slice', id });
    assert.ok(st.start <= 1 * MS && st.end >= 3 * MS, 'the view shows the hit');
    assert.equal(await page.locator('.search-info').textContent(), '1 / 1');
    await page.locator('section.panel .slice-name', { hasText: 'KnownSlice' }).waitFor();
    // ten Frames: Enter and Shift+Enter step
    await page.fill('input.search', 'frame');
    await page.press('input.search', 'Enter');
    await waitIdle(page);
    assert.equal(await page.locator('.search-info').textContent(), '1 / 10');
    await page.press('input.search', 'Enter');
    await waitIdle(page);
    assert.equal(await page.locator('.search-info').textContent(), '2 / 10');
    const second = (await page.evaluate(() => window.__viewer.state())).selection.id;
    await page.press('input.search', 'Shift+Enter');
    await page.press('input.search', 'Shift+Enter');
    await waitIdle(page);
    assert.equal(await page.locator('.search-info').textContent(), '10 / 10');
    st = await page.evaluate(() => window.__viewer.state());
    assert.notEqual(st.selection.id, second);
    assert.ok(st.start <= 9 * MS && st.end >= 9.4 * MS, 'the view moved to the last frame');
  });

  it('restores the window and the selection from a copied URL', async () => {
    const id = await knownSliceId();
    await page.goto(`${server.url}/?trace=${ids.fixture}&start=0&end=${10 * MS}`);
    await waitIdle(page);
    // zoom in with W around the middle, pan with D, then select by search
    await page.mouse.move(700, 300);
    await page.keyboard.down('w');
    await page.waitForTimeout(250);
    await page.keyboard.up('w');
    await page.keyboard.down('d');
    await page.waitForTimeout(120);
    await page.keyboard.up('d');
    await waitIdle(page);
    await page.evaluate((i) => window.__viewer.select(i), id);
    await waitIdle(page);
    const st = await page.evaluate(() => window.__viewer.state());
    assert.ok(st.end - st.start < 9 * MS, 'W zoomed in');
    await page.waitForFunction(() => location.pathname + location.search === window.__viewer.state().url);
    const url = page.url();
    assert.match(url, new RegExp(`slice=${id}`));
    const other = watch(await browser.context.newPage());
    await other.goto(url);
    await waitIdle(other);
    const st2 = await other.evaluate(() => window.__viewer.state());
    assert.ok(Math.abs(st2.start - st.start) <= 1 && Math.abs(st2.end - st.end) <= 1,
      `same window: ${st.start}..${st.end} vs ${st2.start}..${st2.end}`);
    assert.deepEqual(st2.selection, { kind: 'slice', id });
    await other.locator('section.panel .slice-name', { hasText: 'KnownSlice' }).waitFor();
    await other.close();
  });

  it('shows names from the trace as text, never as markup', async () => {
    await page.fill('input.search', '<img');
    await page.press('input.search', 'Enter');
    await waitIdle(page);
    const panel = page.locator('section.panel');
    await panel.locator('.slice-name', { hasText: XSS_SLICE }).waitFor();
    assert.ok((await panel.locator('table.args').innerText()).includes('<b>bold</b>'));
    assert.equal(await page.locator('img').count(), 0, 'no img element');
    assert.equal(await page.locator('section.panel b').count(), 0, 'no b element from an argument');
    // hover it: the tooltip is text too
    const r = await page.evaluate(() => window.__viewer.sliceRect(window.__viewer.state().selection.id));
    await page.mouse.move(r.x + r.width / 2, r.y + r.height / 2);
    await page.locator('.tooltip .tip-title', { hasText: XSS_SLICE }).waitFor();
    assert.equal(await page.locator('img').count(), 0);
    assert.deepEqual(dialogs, [], 'no alert');
    await page.screenshot({ path: path.join(ARTIFACTS, 'timeline-xss.png') });
  });

  it('aggregates an area selection on the tracks it crosses, clipped to the range, sortable', async () => {
    await page.goto(`${server.url}/?trace=${ids.fixture}&start=0&end=${10 * MS}`);
    await waitIdle(page);
    const canvas = await page.locator('canvas.tl-canvas').boundingBox();
    const label = await page.locator('.label[data-key]').filter({ hasText: 'render-main' }).boundingBox();
    const x = (t) => canvas.x + (t / (10 * MS)) * canvas.width;
    await page.keyboard.down('Shift');
    await page.mouse.move(x(0.2 * MS), label.y + 8);
    await page.mouse.down();
    await page.mouse.move(x(5 * MS), label.y + 8, { steps: 5 });
    await page.mouse.move(x(9.9 * MS), label.y + 8, { steps: 5 });
    await page.mouse.up();
    await page.keyboard.up('Shift');
    await waitIdle(page);
    const st = await page.evaluate(() => window.__viewer.state());
    assert.ok(st.area && Math.abs(st.area.start - 0.2 * MS) < 0.05 * MS && Math.abs(st.area.end - 9.9 * MS) < 0.05 * MS);
    const renderId = (await page.evaluate(() => window.__viewer.tracks().find((t) => t.title === 'render-main'))).trackId;
    assert.deepEqual(st.area.tracks, [renderId], 'only the track the drag crossed');
    // exact figures: put the range at known places
    await page.evaluate(() => {
      const s = window.__viewer.state();
      window.__viewer.setArea(200000, 9900000, s.area.tracks);
    });
    await waitIdle(page);
    const table = page.locator('section.panel table.area-table');
    await table.waitFor();
    const rowOf = async (name) => table.locator('tbody tr').filter({ has: page.locator('td:first-child', { hasText: new RegExp(`^${name}$`) }) }).innerText();
    // Frame 0 [0, 0.4 ms) counts 0.2 ms of itself; nine more count 0.4 ms each
    assert.match(await rowOf('Frame'), /^Frame\s+10\s+3.8 ms\s+3.8 ms\s+380 µs\s+400 µs$/);
    assert.equal(await table.locator('tbody tr').count(), 1, 'nothing from the other tracks');
    // a click on main-thread's label adds it: Outer [0, 8 ms) counts 7.8 ms,
    // 3.8 ms of it its own; KnownSlice 2 ms, 1.5 ms of it its own
    await page.locator('.label[data-key]').filter({ hasText: 'main-thread' }).click();
    await waitIdle(page);
    await table.locator('tbody tr', { hasText: 'KnownSlice' }).waitFor();
    assert.match(await rowOf('Outer'), /^Outer\s+1\s+7.8 ms\s+3.8 ms\s+7.8 ms\s+7.8 ms$/);
    assert.match(await rowOf('KnownSlice'), /^KnownSlice\s+1\s+2 ms\s+1.5 ms\s+2 ms\s+2 ms$/);
    // sort by count, descending: Frame (10) first; by name, ascending
    await table.locator('th', { hasText: 'Count' }).click();
    assert.match(await table.locator('tbody tr').first().innerText(), /^Frame/);
    await table.locator('th', { hasText: 'Name' }).click();
    const first = await table.locator('tbody tr td:first-child').allTextContents();
    assert.deepEqual(first, [...first].sort((a, b) => a.localeCompare(b)), 'sorted by name, ascending');
    // a click on a name lists its slices; a click on one selects it
    await table.locator('tbody tr', { hasText: 'Frame' }).click();
    await page.locator('.area-slices .slice-link').first().waitFor();
    assert.equal(await page.locator('.area-slices .slice-link').count(), 10);
    await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'area-selection.png') });
    // the URL keeps the tracks
    await page.waitForFunction(() => location.search.includes('tracks='));
    await page.locator('.area-slices .slice-link').first().click();
    await waitIdle(page);
    assert.equal((await page.evaluate(() => window.__viewer.state())).selection.kind, 'slice');
  });

  it('draws the flame graph of an area; hover tells total and self; a click zooms', async () => {
    const main = (await page.evaluate(() => window.__viewer.tracks().find((t) => t.title === 'main-thread'))).trackId;
    await page.evaluate((t) => window.__viewer.setArea(200000, 9900000, [t]), main);
    await waitIdle(page);
    await page.locator('section.panel .tab[data-tab="flame"]').click();
    await waitIdle(page);
    const boxes = await page.evaluate(() => window.__viewer.flameBoxes());
    const outer = boxes.find((b) => b.name === 'Outer');
    const known = boxes.find((b) => b.name === 'KnownSlice');
    assert.ok(outer && known, JSON.stringify(boxes));
    assert.equal(outer.depth, 0);
    assert.equal(known.depth, 1);
    assert.ok(Math.abs(known.w / outer.w - 2 / 7.8) < 0.01, 'width is time in range');
    await page.mouse.move(known.x + known.w / 2, known.y + 8);
    const tip = page.locator('.flame-tip');
    await tip.waitFor({ state: 'visible' });
    const text = await tip.innerText();
    assert.match(text, /KnownSlice/);
    assert.match(text, /total 2 ms/);
    assert.match(text, /self 1.5 ms/);
    await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'flame-graph.png') });
    await page.mouse.click(known.x + known.w / 2, known.y + 8);
    const zoomed = await page.evaluate(() => window.__viewer.flameBoxes());
    const k2 = zoomed.find((b) => b.name === 'KnownSlice');
    const child = zoomed.find((b) => b.name === 'ChildA');
    assert.ok(Math.abs(k2.w - outer.w) < 2, 'the zoomed frame fills the width');
    assert.ok(Math.abs(child.w / k2.w - 0.25) < 0.01, 'ChildA is a quarter of KnownSlice');
    assert.equal(zoomed.find((b) => b.name === 'After'), undefined, 'siblings leave');
  });

  it('shows the diagnostics banner for a damaged trace', async () => {
    await page.goto(`${server.url}/?trace=${ids.damaged}`);
    await waitIdle(page);
    const banner = page.locator('.banner.diagnostics');
    assert.ok(await banner.isVisible());
    assert.match(await banner.innerText(), /unmatched ends: 1/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'timeline-damaged.png') });
  });

  it('asks for the token once when the server wants one', async () => {
    const tokenFile = path.join(work, 'token');
    fs.writeFileSync(tokenFile, 's3cret-token-0123456789\n');
    fs.mkdirSync(path.join(work, 'data2'));
    const guarded = await startServer(buildServer(), path.join(work, 'data2'), ['--token-file', tokenFile]);
    try {
      const p = watch(await browser.context.newPage());
      await p.goto(guarded.url + '/');
      await p.locator('form.token-form').waitFor();
      await p.fill('form.token-form input', 's3cret-token-0123456789');
      await p.click('form.token-form button');
      await p.locator('.empty', { hasText: 'No traces yet' }).waitFor();
      assert.equal(await p.locator('form.token-form').count(), 0);
      assert.equal(await p.evaluate(() => localStorage.getItem('trace-viewer.token')), 's3cret-token-0123456789');
      await p.reload();
      await p.locator('.empty', { hasText: 'No traces yet' }).waitFor();
      assert.equal(await p.locator('form.token-form').count(), 0, 'the kept token is sent');
      await p.close();
    } finally {
      await guarded.stop();
    }
  });

  it('deletes a trace after a confirmation', async () => {
    await page.goto(server.url + '/');
    const row = page.locator(`tr[data-id="${ids.damaged}"]`);
    await row.locator('button.delete').click();
    await row.locator('button.confirm-delete').click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await api(`/api/traces/${ids.damaged}`)).status, 404);
  });

  it('takes dropped files, and shows why a file that is not a trace failed', async () => {
    await page.goto(server.url + '/');
    await page.waitForSelector('.lib-toolbar');
    await page.evaluate(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['these are my notes, not a trace\n'.repeat(20)], 'notes.txt'));
      for (const type of ['dragenter', 'dragover', 'drop']) {
        document.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
      }
    });
    const box = page.locator('.upload.failed', { hasText: 'notes.txt' });
    await box.waitFor({ timeout: 30000 });
    assert.match(await box.innerText(), /failed: \S+/);
    const row = page.locator('table.traces tr', { hasText: 'notes.txt' });
    await row.locator('td.status-failed .error-text').waitFor();
    assert.ok((await row.locator('.error-text').innerText()).length > 5, 'the error says something');
    await page.screenshot({ path: path.join(ARTIFACTS, 'library-failed.png') });
    // one click dismisses it: no confirmation, gone from the server too
    const id = await row.getAttribute('data-id');
    assert.equal(await row.locator('button.delete').count(), 0, 'a failed upload has no two-step delete');
    await row.locator('button.dismiss').click();
    await row.waitFor({ state: 'detached' });
    assert.equal((await api(`/api/traces/${id}`)).status, 404);
    assert.deepEqual(pageErrors, [], 'no uncaught errors in the pages');
    assert.deepEqual(dialogs, [], 'no dialogs');
  });
});
