// End-to-end test of issue 10's timeline tools and the trace's own pages:
// the trace info page, the query page, markers (M, kept in the URL), the
// keyboard help (?) and every action in it, pinned tracks, the track filter,
// collapse/expand all, and a trace's duration read the same in the library
// and in the viewer. Screenshots go to build/e2e-artifacts/.
//
//   node --test tests/e2e/pages.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import {
  ROOT, buildFixtureTool, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll,
} from './helpers.mjs';

const MS = 1000000;
const ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');

let server;
let browser;
let page;
let work;
const ids = {};
const pageErrors = [];

async function upload(name) {
  const r = await fetch(`${server.url}/api/traces?name=${name}&wait=1`, {
    method: 'POST', body: fs.readFileSync(path.join(work, name)),
  });
  assert.equal(r.status, 201, name);
  return (await r.json()).id;
}

const state = () => page.evaluate(() => window.__viewer.state());

describe('trace pages and timeline tools', { timeout: 180000 }, () => {
  before(async () => {
    work = tmpDir('pages-e2e-');
    const bin = buildServer();
    const tool = buildFixtureTool(work);
    execFileSync(tool, ['--damaged', path.join(work, 'damaged.fxt')]);
    execFileSync(tool, ['--tiny', path.join(work, 'tiny.fxt')]);
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    ids.damaged = await upload('damaged.fxt');
    ids.tiny = await upload('tiny.fxt');
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    fs.mkdirSync(ARTIFACTS, { recursive: true });
  });

  after(() => closeAll(browser, server, work));

  it('shows the trace info page: format, providers, counts, each diagnostic with its meaning', async () => {
    await page.goto(`${server.url}/?trace=${ids.damaged}`);
    await waitIdle(page);
    await page.locator('.topbar .page-link[data-page="info"]').click();
    await page.waitForFunction(() => window.__viewer && window.__viewer.page === 'info' && window.__viewer.ready);
    const summary = await page.locator('.info-summary').innerText();
    assert.match(summary, /Fuchsia Trace Format \(FXT\)/);
    assert.match(summary, /Duration\s+10 ms/);
    assert.match(summary, /Time range\s+0 ns – 10000000 ns/);
    assert.match(summary, /Uploaded\s+\S/);
    assert.match(summary, /Size\s+[\d.]+ (B|KiB) \([\d,]+ bytes\)/);
    assert.match(await page.locator('.info-providers').innerText(), /fixture\s+1\s+1,000,000,000\s+0/);
    assert.match(await page.locator('.info-counts').innerText(), /slices\s+\d+/);
    const bad = page.locator('.info-diagnostics tr[data-diag="unmatched_ends"]');
    assert.match(await bad.innerText(), /unmatched_ends\s+1\s+end events with no open slice/);
    assert.equal(await bad.getAttribute('class'), 'diag-bad');
    const rows = await page.locator('.info-diagnostics tbody tr').count();
    const meanings = await page.locator('.info-diagnostics tbody tr td:nth-child(3)').allTextContents();
    assert.ok(rows >= 17 && meanings.every((m) => m.length > 10), 'every diagnostic has a meaning');
    await page.screenshot({ path: path.join(ARTIFACTS, 'info-page.png'), fullPage: true });
  });

  it('runs SQL on the query page: results, inline errors, last queries, ids linking to the timeline', async () => {
    await page.goto(`${server.url}/?trace=${ids.damaged}&page=query`);
    await page.waitForSelector('.sql-editor');
    await page.fill('.sql-editor', 'SELECT nope FROM slices');
    await page.click('.run-query');
    await page.locator('.query-error:not(.hidden)').waitFor();
    assert.match(await page.locator('.query-error').innerText(), /no such column: nope/);
    await page.fill('.sql-editor', "SELECT id, name, dur FROM slice_view WHERE name = 'KnownSlice'");
    await page.keyboard.press('Control+Enter');
    await page.locator('.query-table tbody tr').first().waitFor();
    assert.ok(await page.locator('.query-error').evaluate((e) => e.classList.contains('hidden')), 'the error goes');
    const row = await page.locator('.query-table tbody tr').first().innerText();
    assert.match(row, /^\d+\s+KnownSlice\s+2000000$/);
    assert.match(await page.locator('.query-status').innerText(), /^1 rows in \d+ ms$/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'query-page.png') });
    // kept across a reload, newest first
    await page.reload();
    await page.waitForSelector('.query-history .history-item');
    const hist = await page.locator('.query-history .history-item').allTextContents();
    assert.match(hist[0], /KnownSlice/);
    assert.match(hist[1], /nope/);
    await page.locator('.query-history .history-item').first().click();
    const link = page.locator('.query-table a.slice-link').first();
    await link.waitFor();
    const id = Number(await link.innerText());
    await link.click();
    await waitIdle(page);
    const st = await state();
    assert.deepEqual(st.selection, { kind: 'slice', id });
    await page.locator('section.panel .slice-name', { hasText: 'KnownSlice' }).waitFor();
  });

  it('marks the selected slice with M; the marks stay in the URL', async () => {
    await page.keyboard.press('m');
    await page.waitForFunction(() => location.search.includes('marks='));
    let st = await state();
    assert.deepEqual(st.marks, [{ start: 1 * MS, end: 3 * MS }]);
    const url = page.url();
    const other = await browser.context.newPage();
    await other.goto(url);
    await waitIdle(other);
    assert.deepEqual((await other.evaluate(() => window.__viewer.state())).marks, [{ start: 1 * MS, end: 3 * MS }]);
    await other.close();
    await page.keyboard.press('m');
    st = await state();
    assert.deepEqual(st.marks, [], 'M again unmarks');
    await page.keyboard.press('m');
  });

  it('? shows the keyboard help, and every action in it works', async () => {
    await page.goto(`${server.url}/?trace=${ids.damaged}&start=0&end=${10 * MS}`);
    await waitIdle(page);
    await page.keyboard.press('?');
    const help = page.locator('.help-overlay');
    await help.waitFor();
    const keys = await help.locator('th').allTextContents();
    assert.deepEqual(keys, ['W / S', 'A / D', 'Ctrl + wheel', 'drag', 'Shift + drag', 'click a track name', 'F', '/', 'M', 'Esc', '?']);
    await page.keyboard.press('Escape');
    assert.equal(await help.count(), 0, 'Esc closes it');
    const cv = await page.locator('canvas.tl-canvas').boundingBox();
    await page.mouse.move(cv.x + cv.width / 2, cv.y + 40);
    const span = async () => { const s = await state(); return s.end - s.start; };
    const hold = async (k, ms = 250) => { await page.keyboard.down(k); await page.waitForTimeout(ms); await page.keyboard.up(k); await waitIdle(page); };
    await hold('w');
    const s1 = await span();
    assert.ok(s1 < 10 * MS * 0.8, 'W zooms in');
    const st1 = await state();
    await hold('d');
    assert.ok((await state()).start > st1.start, 'D pans right');
    const st2 = await state();
    await hold('a');
    assert.ok((await state()).start < st2.start, 'A pans left');
    await hold('s');
    assert.ok(await span() > s1, 'S zooms out');
    const s3 = await span();
    await page.mouse.wheel(0, -300);
    await page.keyboard.down('Control');
    await page.mouse.wheel(0, -300);
    await page.keyboard.up('Control');
    await waitIdle(page);
    assert.ok(await span() < s3, 'Ctrl + wheel zooms');
    const st4 = await state();
    await page.mouse.move(cv.x + 600, cv.y + 40);
    await page.mouse.down();
    await page.mouse.move(cv.x + 500, cv.y + 40, { steps: 4 });
    await page.mouse.up();
    await waitIdle(page);
    assert.ok((await state()).start > st4.start, 'drag pans');
    await page.keyboard.press('f');
    await waitIdle(page);
    assert.equal(await span(), 10 * MS, 'F fits the whole trace');
    await page.keyboard.press('/');
    assert.ok(await page.evaluate(() => document.activeElement.classList.contains('search')), '/ focuses search');
    await page.keyboard.type('Frame');
    await page.keyboard.press('Enter');
    await waitIdle(page);
    const hit1 = (await state()).search.index;
    await page.keyboard.press('Enter');
    await waitIdle(page);
    assert.equal((await state()).search.index, hit1 + 1, 'Enter: next hit');
    await page.keyboard.press('Shift+Enter');
    await waitIdle(page);
    assert.equal((await state()).search.index, hit1, 'Shift+Enter: previous hit');
    await page.keyboard.press('Escape'); // leaves the search box
    await page.locator('canvas.tl-canvas').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('m');
    await page.keyboard.press('Escape');
    assert.equal((await state()).selection, null, 'Esc clears the selection');
    // Shift+drag and "click a track name" are the area tests of viewer.test.mjs;
    // M is the marker test above
    await page.keyboard.press('?');
    await page.keyboard.press('?');
    assert.equal(await help.count(), 0, '? closes it too');
  });

  it('pins a track on top while the rest scrolls; filters tracks by name; collapses and expands all', async () => {
    await page.setViewportSize({ width: 1400, height: 560 });
    await page.goto(`${server.url}/?trace=${ids.damaged}&start=0&end=${10 * MS}`);
    await waitIdle(page);
    const label = page.locator('.labels .label[data-key]').filter({ hasText: 'render-main' });
    await label.hover();
    await label.locator('.pin').click();
    await waitIdle(page);
    let tracks = await page.evaluate(() => window.__viewer.tracks());
    const pinned = tracks.filter((t) => t.pinned);
    assert.deepEqual(pinned.map((t) => t.title), ['render-main']);
    assert.equal(pinned[0].top, 0, 'pinned on top');
    await page.locator('.pinned-labels .label', { hasText: 'render-main' }).waitFor();
    // scroll: the pinned track stays where it is, the others move
    /* as far as 60 px: less when the tracks need less (the empty drawer is small) */
    const scrolled = await page.evaluate(() => { const s = document.querySelector('.tl-scroll'); s.scrollTop = 60; return s.scrollTop; });
    assert.ok(scrolled > 0, 'the tracks scroll');
    await waitIdle(page);
    tracks = await page.evaluate(() => window.__viewer.tracks());
    assert.equal(tracks.find((t) => t.pinned).top, 0);
    const main = tracks.find((t) => t.title === 'main-thread');
    assert.equal(main.top, main.y - scrolled);
    // the pinned track's slices are where it is drawn
    const h = await page.evaluate(() => {
      const cv = document.querySelector('.tl-canvas').getBoundingClientRect();
      const g = window.__viewer.geometry();
      return window.__viewer.hit(cv.left + (0.2 / 10) * g.width, cv.top + g.trackPad + 5);
    });
    assert.equal(h && h.name, 'Frame');
    await page.screenshot({ path: path.join(ARTIFACTS, 'pinned-track.png') });
    await page.evaluate(() => { document.querySelector('.tl-scroll').scrollTop = 0; });
    // the filter keeps matching tracks (and their process headers)
    await page.fill('.track-filter', 'worker');
    await waitIdle(page);
    let titles = (await page.evaluate(() => window.__viewer.tracks())).map((t) => t.title);
    // the thread's state track (it has CPU runs) goes with it
    assert.deepEqual(titles, ['fixture-proc', 'worker-thread', 'thread state']);
    await page.fill('.track-filter', '');
    await waitIdle(page);
    // unpin, then collapse all / expand all
    await page.locator('.pinned-labels .pin').click();
    await page.click('.collapse-all');
    await waitIdle(page);
    titles = (await page.evaluate(() => window.__viewer.tracks())).map((t) => t.kind);
    assert.ok(titles.every((k) => k === 'group'), 'only process headers: ' + titles);
    await page.click('.expand-all');
    await waitIdle(page);
    titles = (await page.evaluate(() => window.__viewer.tracks())).map((t) => t.title);
    assert.ok(titles.includes('render-main') && titles.includes('CPU 0'));
    await page.setViewportSize({ width: 1400, height: 900 });
  });

  // sched.fxt: threads seen only in scheduling records have CPU runs but no
  // slice track; their state row is the only row they have, and it names
  // them (name, tid) like a thread row. A state row under its thread's
  // slice row says only "thread state".
  it('names the state row of a thread seen only on CPUs', async () => {
    fs.copyFileSync(path.join(ROOT, 'tests/corpus/fxt/sched.fxt'), path.join(work, 'sched.fxt'));
    const id = await upload('sched.fxt');
    await page.goto(`${server.url}/?trace=${id}`);
    await waitIdle(page);
    const q = async (sql) => (await (await fetch(`${server.url}/api/traces/${id}/query`, { method: 'POST', body: sql })).json()).rows;
    const names = new Map((await q('SELECT pid, tid, name FROM threads')).map(([pid, tid, name]) => [`${pid}/${tid}`, name]));
    const runs = await q('SELECT DISTINCT pid, tid FROM sched WHERE tid != 0');
    const tracks = await page.evaluate(() => window.__viewer.tracks());
    const labels = await page.$$eval('.labels .track-label', (els) => Object.fromEntries(els.map((e) => [e.dataset.key, e.textContent])));
    let alone = 0;
    for (const [pid, tid] of runs) {
      const i = tracks.findIndex((t) => t.key === `state:${pid}/${tid}`);
      assert.ok(i >= 0, `a state row for ${pid}/${tid}`);
      const above = tracks[i - 1];
      if (above.kind === 'thread' && new RegExp(`\\b${tid}\\b`).test(`${above.title} ${above.subtitle}`)) {
        assert.equal(tracks[i].title, 'thread state');
        continue;
      }
      alone++;
      const name = names.get(`${pid}/${tid}`);
      assert.equal(tracks[i].title, name || `tid ${tid}`);
      assert.match(labels[tracks[i].key], new RegExp(`${name ? name + '.*' : ''}\\btid ${tid}\\b|^tid ${tid}`));
      assert.match(labels[tracks[i].key], /thread state/);
      const group = tracks.slice(0, i).reverse().find((t) => t.kind === 'group');
      assert.match(`${group.title} ${group.subtitle}`, new RegExp(`\\b${pid}\\b`), 'under its process, which names the pid');
    }
    assert.ok(alone >= 2, `sched.fxt has threads seen only on CPUs: ${alone}`);
    await page.screenshot({ path: path.join(ARTIFACTS, 'sched-state-rows.png') });
  });

  // The hover tooltip tells what the mouse is on: nothing when something
  // covers the timeline (the keyboard help), and nothing once the mouse has
  // left. It used to follow the mouse over the help, then stay.
  it('hides the hover tooltip when the mouse leaves the timeline or something covers it', async () => {
    await page.goto(`${server.url}/?trace=${ids.damaged}`);
    await waitIdle(page);
    const tip = () => page.evaluate(() => !document.querySelector('.tl-body .tooltip').classList.contains('hidden'));
    const cv = await page.locator('canvas.tl-canvas').boundingBox();
    let pt = null;
    for (let y = cv.y + 10; y < cv.y + cv.height && !pt; y += 8) {
      for (let x = cv.x + 5; x < cv.x + cv.width && !pt; x += 40) {
        await page.mouse.move(x, y);
        if (await tip()) pt = { x, y };
      }
    }
    assert.ok(pt, 'something to hover');
    await page.keyboard.press('?');
    await page.waitForSelector('.help-overlay');
    await page.mouse.move(pt.x + 2, pt.y);
    await page.mouse.move(pt.x + 1, pt.y);
    assert.equal(await tip(), false, 'no tooltip through the help');
    await page.keyboard.press('Escape');
    await page.mouse.move(pt.x, pt.y);
    await page.waitForFunction(() => !document.querySelector('.tl-body .tooltip').classList.contains('hidden'));
    await page.mouse.move(cv.x - 100, cv.y - 30, { steps: 4 }); // to the toolbar
    assert.equal(await tip(), false, 'no tooltip once the mouse left');
  });

  it('gives a trace the same duration in the library and in the viewer, and starts the view at its start', async () => {
    await page.goto(`${server.url}/`);
    const cell = page.locator(`table.traces tr[data-id="${ids.tiny}"] td:nth-child(7)`);
    await cell.waitFor();
    assert.equal(await cell.innerText(), '300 ns');
    await page.goto(`${server.url}/?trace=${ids.tiny}`);
    await waitIdle(page);
    assert.equal(await page.locator('.overview-label').innerText(), 'Overview · 300 ns');
    assert.match(await page.locator('.span-label').innerText(), /^300 ns from 0 ns$/);
    const st = await state();
    assert.deepEqual([st.start, st.end], [0, 300]);
    assert.deepEqual(pageErrors, []);
  });
});
