// End-to-end test of a big trace's readability (issue 43, items 5 to 7),
// on the demo trace that `make run` serves (gen_fxt, 200,000 events, 12
// threads, seed 7): its 85-lane async track opens folded to one summary
// row that its label's arrow unfolds, so the threads are on the first
// screen; a trace of many processes opens them collapsed; zoomed out, the
// level-of-detail summaries are drawn in their name's colour and named
// where a run of them is wide enough; the compare page's table uses the
// page's height, pairs threads by process and thread, and says when the
// two traces' processes differ. Screenshots go to build/e2e-artifacts.
//
//   node --test tests/e2e/readable.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ROOT, buildFixtureTool, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll, apiJson } from './helpers.mjs';

const ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');
const H = 1000;

let server;
let browser;
let page;
let work;
const ids = {};
const pageErrors = [];

function api(p, opts) {
  return apiJson(server, p, opts);
}

async function upload(name, file) {
  const r = await api(`/api/traces?name=${name}&wait=1`, { method: 'POST', body: fs.readFileSync(file) });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id;
}

const tracks = () => page.evaluate(() => window.__viewer.tracks());

before(async () => {
  work = tmpDir('readable-e2e-');
  const bin = buildServer(['build/rel/gen_fxt']);
  const demo = path.join(work, 'demo.fxt');
  execFileSync(path.join(ROOT, 'build/rel/gen_fxt'), ['--events', '200000', '--threads', '12', '--seed', '7', demo]);
  const tool = buildFixtureTool(work);
  execFileSync(tool, [path.join(work, 'fixture.fxt')]);
  fs.mkdirSync(path.join(work, 'data'));
  server = await startServer(bin, path.join(work, 'data'));
  ids.demo = await upload('demo', demo);
  ids.again = await upload('demo-again', demo);
  ids.fixture = await upload('fixture', path.join(work, 'fixture.fxt'));
  browser = await launchBrowser([], { width: 1600, height: H });
  page = await browser.context.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  fs.mkdirSync(ARTIFACTS, { recursive: true });
});

after(() => closeAll(browser, server, work));

describe('a big trace reads well', { timeout: 300000 }, () => {
  it('folds the 85-lane async track to a row its arrow unfolds, so the threads are on the first screen', async () => {
    await page.goto(`${server.url}/?trace=${ids.demo}`);
    await waitIdle(page);
    await page.screenshot({ path: path.join(ARTIFACTS, 'readable-demo-folded.png') });
    const rows = await tracks();
    const lanes = (await api(`/api/traces/${ids.demo}/tracks`)).body.processes.flatMap((p) => p.async_tracks || []);
    assert.ok(lanes.some((a) => a.max_depth >= 80), 'the demo has an async track of 80 lanes and more');
    const async = rows.filter((r) => r.kind === 'async');
    assert.equal(async.length, lanes.length);
    for (const a of async) assert.ok(a.h <= 30, `async track ${a.key} is one row tall folded, not ${a.h} px`);
    const threads = rows.filter((r) => r.kind === 'thread');
    assert.ok(threads.length >= 12);
    // the first process's first threads are on the first screen (they were below 1.5k px of lanes)
    const body = await page.evaluate(() => document.querySelector('.tl-body').getBoundingClientRect().height);
    assert.ok(threads[1].top < body, `the 2nd thread starts at ${threads[1].top} px of ${body}`);
    assert.ok(threads[0].top + threads[0].h <= body, `the first thread ends at ${threads[0].top + threads[0].h} px of ${body}`);
    // a folded track still shows its slices: every lane drawn over the first
    const key = async[0].key;
    const label = page.locator(`.labels .track-label[data-key="${key}"]`);
    assert.match(await label.textContent(), /85 lanes|81 lanes/);
    // its arrow unfolds it (and no area selection is made by it), and folds it again
    await label.locator('.fold').click();
    await waitIdle(page);
    let a = (await tracks()).find((r) => r.key === key);
    assert.equal(a.h, (lanes[0].max_depth + 1) * 18 + 8, 'unfolded: every lane');
    assert.equal((await page.evaluate(() => window.__viewer.state())).area, null);
    await page.locator(`.labels .track-label[data-key="${key}"] .fold`).click();
    await waitIdle(page);
    a = (await tracks()).find((r) => r.key === key);
    assert.ok(a.h <= 30);
    // threads open with their whole stack (the demo's have at most 8 depths)
    assert.ok(threads.every((t) => t.h === Math.round(t.h) && t.h > 30));
    assert.deepEqual(pageErrors, []);
  });

  it('collapses the processes of a trace that has more than 8 of them, and folds only tall async tracks', async () => {
    await page.goto(`${server.url}/?trace=${ids.demo}`);
    await waitIdle(page);
    const got = await page.evaluate(async () => {
      const { buildTracks } = await import('/js/tracks.js');
      const reply = (n) => ({
        processes: Array.from({ length: n }, (_, i) => ({
          pid: 100 + i, name: `p${i}`, threads: [{ tid: 1000 + i, name: 'main', track_id: i + 1, max_depth: 2 }], async_tracks: [],
        })),
      });
      const collapsed = (n) => buildTracks(reply(n), { format: 'fxt', counts: {} }).groups.map((g) => g.collapsed);
      // a 25-deep thread opens with its whole stack (issue 9), a 25-lane async track folded
      const tall = buildTracks({ processes: [{ pid: 1, name: 'p', threads: [{ tid: 2, name: 'deep', track_id: 1, max_depth: 24 }],
        async_tracks: [{ track_id: 2, name: 'lanes', max_depth: 24 }, { track_id: 3, name: 'few', max_depth: 7 }] }] },
      { format: 'fxt', counts: {} }).groups[0].children.map((t) => [t.title, t.folded]);
      return { eight: collapsed(8), nine: collapsed(9), tall };
    });
    assert.ok(got.eight.every((c) => !c), '8 processes open expanded');
    assert.ok(got.nine.every((c) => c), '9 processes open collapsed');
    assert.deepEqual(got.tall, [['lanes', true], ['few', false], ['deep', false]]);
  });

  it('draws a zoomed-out trace\'s summaries in their name\'s colour, with names where they are wide enough', async () => {
    await page.goto(`${server.url}/?trace=${ids.demo}`);
    await waitIdle(page);
    // only the threads: the async lanes are folded, the tracks filtered to the first process's
    await page.fill('.track-filter', 'compositor');
    await waitIdle(page);
    await page.screenshot({ path: path.join(ARTIFACTS, 'readable-demo-zoomed-out.png') });
    const sums = await page.evaluate(() => window.__viewer.summaries());
    assert.ok(sums.length > 100, `${sums.length} summaries drawn at the whole trace`);
    // each summary at least 2 px wide is filled with its name's colour at its middle
    const bad = await page.evaluate(async (list) => {
      const { colorFor } = await import('/js/format.js');
      const cv = document.querySelector('.tl-canvas');
      const cr = cv.getBoundingClientRect();
      const scale = cv.width / cr.width;
      const ctx = cv.getContext('2d');
      const probe = document.createElement('canvas').getContext('2d');
      const rgb = (fill) => {
        probe.fillStyle = fill;
        probe.fillRect(0, 0, 1, 1);
        return [...probe.getImageData(0, 0, 1, 1).data].slice(0, 3);
      };
      const out = [];
      let checked = 0;
      for (const s of list) {
        if (s.x1 - s.x0 < 2.5 || checked >= 200) continue;
        const x = Math.floor(((s.x0 + s.x1) / 2 - cr.left) * scale);
        const px = [...ctx.getImageData(x, Math.floor((s.y - cr.top) * scale), 1, 1).data].slice(0, 3);
        const want = rgb(colorFor(s.name).fill);
        checked++;
        if (px.some((c, i) => Math.abs(c - want[i]) > 40)) out.push({ name: s.name, px, want });
      }
      return { checked, out };
    }, sums);
    assert.ok(bad.checked > 50, `${bad.checked} summaries wide enough to check`);
    assert.ok(bad.out.length <= bad.checked / 20, `summaries not in their name's colour: ${JSON.stringify(bad.out.slice(0, 5))} of ${bad.checked}`);
    // no box of one colour is longer than the slices and summaries under
    // it: sub-pixel boxes of other names are never painted in the colour
    // of the first of them (a run of them read as one long slice). In a
    // narrow window, where the demo's summaries touch as a big trace's do.
    await page.setViewportSize({ width: 640, height: H });
    await waitIdle(page);
    const long = await page.evaluate(() => {
      const boxes = window.__viewer.summaries(true).filter((b) => b.x1 > b.x0);
      const cv = document.querySelector('.tl-canvas');
      const cr = cv.getBoundingClientRect();
      const ctx = cv.getContext('2d');
      const byRow = new Map();
      for (const b of boxes) (byRow.get(b.y) || byRow.set(b.y, []).get(b.y)).push(b);
      const out = [];
      for (const [y, row] of byRow) {
        if (y - cr.top < 0 || y - cr.top >= cr.height) continue;
        row.sort((a, b) => a.x0 - b.x0);
        // the longest chain of touching boxes of one name
        let chain = 0;
        for (let i = 0, j = 0; i < row.length; i = j) {
          let x1 = row[i].x1;
          for (j = i + 1; j < row.length && row[j].name === row[i].name && row[j].x0 <= x1 + 1; j++) x1 = Math.max(x1, row[j].x1);
          chain = Math.max(chain, x1 - row[i].x0);
        }
        const px = ctx.getImageData(0, Math.floor(y - cr.top), cv.width, 1).data;
        let run = 0;
        let most = 0;
        for (let x = 1; x < cv.width; x++) {
          const same = px[4 * x] === px[4 * x - 4] && px[4 * x + 1] === px[4 * x - 3] && px[4 * x + 2] === px[4 * x - 2];
          const white = px[4 * x] > 245 && px[4 * x + 1] > 245 && px[4 * x + 2] > 245;
          run = same && !white ? run + 1 : 0;
          most = Math.max(most, run);
        }
        if (most > chain + 4) out.push({ y, most, chain });
      }
      return out;
    });
    await page.screenshot({ path: path.join(ARTIFACTS, 'readable-demo-narrow.png') });
    await page.setViewportSize({ width: 1600, height: H });
    assert.deepEqual(long, [], 'rows with a box of one colour longer than what it stands for');
    await waitIdle(page);
    // names, not counts, are written on the zoomed-out threads
    const labels = Object.values(await page.evaluate(() => window.__viewer.labels())).flat();
    assert.ok(labels.some((t) => /^[A-Z][a-z]/.test(t)), 'names on the zoomed-out tracks: ' + labels.slice(0, 10).join(', '));
    assert.deepEqual(labels.filter((t) => t.startsWith('×')), [], 'a count is no name');
    await page.fill('.track-filter', '');
  });
});

describe('compare reads well', { timeout: 300000 }, () => {
  it('pairs threads by process and thread name, as SQL counts them', async () => {
    const r = await api(`/api/compare?a=${ids.demo}&b=${ids.again}&by=thread&limit=5000`);
    assert.equal(r.status, 200);
    const rows = r.body.rows;
    const count = async (proc, thread, name) => (await api(`/api/traces/${ids.demo}/query`, {
      method: 'POST',
      body: 'SELECT count(*) FROM slices s JOIN tracks k ON k.id = s.track_id JOIN threads t ON t.id = k.thread_id ' +
        `JOIN processes p ON p.pid = t.pid JOIN strings n ON n.id = s.name_id WHERE p.name = '${proc}' AND t.name = '${thread}' ` +
        `AND n.str = '${name}'`,
    })).body.rows[0][0];
    // "main" is a thread of both compositor and app-1: two rows, each its own process's
    for (const proc of ['compositor', 'app-1']) {
      const row = rows.find((x) => x.process === proc && x.thread === 'main' && x.name === 'Frame');
      assert.ok(row, `a row for ${proc} › main › Frame: ` + JSON.stringify(rows.slice(0, 3)));
      assert.equal(row.a.count, await count(proc, 'main', 'Frame'));
      assert.equal(row.b.count, row.a.count);
    }
    assert.equal(new Set(rows.map((x) => `${x.process}\u001f${x.thread}\u001f${x.name}`)).size, rows.length, 'one row per place and name');
  });

  it('gives the table the page\'s height', async () => {
    await page.goto(`${server.url}/?page=compare&a=${ids.demo}&b=${ids.again}`);
    await page.waitForSelector('table.cmp-table tr.cmp-row');
    const got = await page.evaluate(() => {
      const w = document.querySelector('.cmp-table-wrap');
      const r = w.getBoundingClientRect();
      const rows = [...w.querySelectorAll('tr.cmp-row')];
      const shown = rows.filter((tr) => tr.getBoundingClientRect().bottom <= r.bottom).length;
      return { bottom: r.bottom, inner: innerHeight, rows: rows.length, shown };
    });
    await page.screenshot({ path: path.join(ARTIFACTS, 'readable-compare.png') });
    assert.ok(got.rows >= 30, `${got.rows} rows`);
    // the box ends at the foot of the window (it was 45% of it: 14 rows of 35)
    assert.ok(got.bottom >= got.inner - 40 && got.bottom <= got.inner + 1, `the table ends at ${got.bottom} px of ${got.inner}`);
    assert.ok(got.shown >= Math.min(got.rows, 25), `${got.shown} of ${got.rows} rows shown`);
    assert.equal(await page.locator('.cmp-procs').count(), 0, 'the same processes: nothing said');
  });

  it('says when the two traces\' processes differ', async () => {
    await page.goto(`${server.url}/?page=compare&a=${ids.demo}&b=${ids.fixture}&by=thread`);
    await page.waitForSelector('.cmp-procs');
    const text = await page.textContent('.cmp-procs');
    assert.match(text, /processes differ/);
    assert.match(text, /compositor/);
    assert.match(text, /app-1/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'readable-compare-processes.png') });
    assert.deepEqual(pageErrors, []);
  });
});
