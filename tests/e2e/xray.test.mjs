// The viewer and an XRay trace uploaded without symbols: the timeline says
// that function names are missing and takes the symbol map right there;
// afterwards the slices carry the functions' names.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { ROOT, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll } from './helpers.mjs';

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

  after(() => closeAll(browser, server, work));

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

  it('opens an XRay trace on its whole range, and offers its activity in one click; no negative zero', async () => {
    // v5.xray: one call over the whole 2.1 s trace around a burst of calls in its first microsecond
    const up = await json(server.url + '/api/traces?name=burst&wait=1', { method: 'POST', body: fs.readFileSync(LOG) });
    const page = await browser.context.newPage();
    // the activity comes from the overview (exact, from the level of
    // detail), never from SQL reading every slice (seconds on a big log)
    const scans = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/query') && /FROM slices/i.test(r.postData() || '')) scans.push(r.postData());
    });
    await page.goto(`${server.url}/?trace=${up.body.id}`);
    await waitIdle(page);
    let st = await page.evaluate(() => window.__viewer.state());
    assert.equal(st.start, up.body.start_ns, 'opens on the whole trace, as Perfetto does');
    assert.equal(st.end, up.body.end_ns);
    // the overview says where the activity is, and one click shows it
    const zoom = page.locator('button.zoom-activity');
    await zoom.waitFor();
    assert.match(await zoom.innerText(), /activity/i);
    await zoom.click();
    await waitIdle(page);
    st = await page.evaluate(() => window.__viewer.state());
    assert.ok(st.end - st.start < 10000, `the burst, not the whole 2.1 s: ${st.start}..${st.end}`);
    // the burst: calls at 502, 510 and 511..515 ns on the first thread
    assert.ok(st.start <= 502 && st.end >= 515, `the burst is in view: ${st.start}..${st.end}`);
    assert.deepEqual(scans, [], 'no query scans the slices');
    assert.doesNotMatch(await page.locator('.span-label').innerText(), /-0\b/);
    // F: the whole trace again
    await page.keyboard.press('f');
    await waitIdle(page);
    st = await page.evaluate(() => window.__viewer.state());
    assert.equal(st.end - st.start, up.body.end_ns - up.body.start_ns);
    await page.close();
  });

  it('shows a CPU track only for a thread whose CPU changes, and each call\'s CPU in its details', async () => {
    // v1_truncated.xray: tid 1 moves between cpus 1 and 2, tid 2 stays on cpu 1
    const file = path.join(ROOT, 'tests', 'corpus', 'xray', 'v1_truncated.xray');
    const up = await json(server.url + '/api/traces?name=cpus&wait=1', { method: 'POST', body: fs.readFileSync(file) });
    assert.equal(up.status, 201);
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/?trace=${up.body.id}`);
    await waitIdle(page);
    const tracks = await page.evaluate(() => window.__viewer.tracks().map((t) => ({ kind: t.kind, title: t.title, trackId: t.trackId })));
    const cpuTracks = tracks.filter((t) => t.kind === 'counter' && t.title.startsWith('cpu'));
    assert.equal(cpuTracks.length, 1, 'one cpu track, for the thread that moves: ' + JSON.stringify(tracks));
    const threads = tracks.filter((t) => t.kind === 'thread');
    assert.deepEqual(threads.map((t) => t.title).sort(), ['tid 1', 'tid 2']);
    // the cpu track sits under its thread and says whose it is
    const cpuAt = tracks.findIndex((t) => t.trackId === cpuTracks[0].trackId);
    assert.equal(tracks[cpuAt - 1].title, 'tid 1', 'the cpu track follows its thread: ' + JSON.stringify(tracks));
    assert.equal(tracks[cpuAt].title, 'cpu');
    // a call of each thread: its CPU in the details
    const ids = {};
    for (const th of threads) {
      const r = await json(`${server.url}/api/traces/${up.body.id}/slices?track=${th.trackId}`);
      ids[th.title] = r.body.slices[0];
    }
    await page.evaluate((id) => window.__viewer.select(id), ids['tid 2'].id);
    await page.locator('.cpu-of-call', { hasText: /^1$/ }).waitFor();
    const c1 = await json(`${server.url}/api/traces/${up.body.id}/counters?track=${cpuTracks[0].trackId}&start=${ids['tid 1'].ts}&end=${ids['tid 1'].ts}`);
    const at = c1.body.points.filter((p) => p.ts <= ids['tid 1'].ts).pop();
    await page.evaluate((id) => window.__viewer.select(id), ids['tid 1'].id);
    await page.locator('.cpu-of-call', { hasText: new RegExp(`^${at.value}$`) }).waitFor();
    await page.close();
  });

  // A clang-instrumented program and its XRay log (null without clang).
  let built;
  function buildDemo() {
    if (built !== undefined) return built;
    if (!fs.existsSync('/usr/bin/clang')) return (built = null);
    const demo = path.join(work, 'demo');
    execFileSync('clang', ['-O2', '-g', '-fxray-instrument', '-fxray-instruction-threshold=1', '-o', demo,
      path.join(ROOT, 'tests', 'xray', 'demo.c'), '-lpthread']);
    execFileSync(demo, ['300', 'func_duration_threshold_us=0'], {
      env: { ...process.env, XRAY_OPTIONS: `patch_premain=false xray_mode=xray-fdr verbosity=0 xray_logfile_base=${work}/demo-` },
      stdio: 'ignore',
    });
    const log = path.join(work, fs.readdirSync(work).find((f) => f.startsWith('demo-')));
    return (built = { demo, log });
  }

  it('keeps no binary name for a binary refused as symbols', async () => {
    // an ELF binary without an XRay instrumentation map names no function,
    // so it does not name the process either (docs/API.md, Export)
    const form = new FormData();
    form.append('file', new Blob([fs.readFileSync(LOG)]), 'v5.xray');
    form.append('binary', new Blob([fs.readFileSync('/bin/true')]), 'true');
    const up = await json(server.url + '/api/traces?name=refused&wait=1', { method: 'POST', body: form });
    assert.equal(up.status, 201, JSON.stringify(up.body));
    assert.equal(up.body.status, 'ready');
    assert.ok(up.body.symbols.error, 'the refusal says why: ' + JSON.stringify(up.body.symbols));
    assert.equal(up.body.symbols.named, 0);
    assert.equal(up.body.symbols.binary, null);
    const ex = await (await fetch(`${server.url}/api/traces/${up.body.id}/export?format=chrome-json`)).json();
    const names = ex.traceEvents.filter((e) => e.ph === 'M' && e.name === 'process_name').map((e) => e.args.name);
    assert.ok(!names.includes('true'), 'the process is not named after the refused binary: ' + names);
  });

  it('shows a real clang-instrumented program\'s trace by name, on its whole range', async (t) => {
    const b = buildDemo();
    if (!b) {
      t.skip('clang is missing (apt-get install -y clang llvm libclang-rt-dev)');
      return;
    }
    const { demo, log } = b;
    const form = new FormData();
    form.append('file', new Blob([fs.readFileSync(log)]), 'demo.xray');
    form.append('binary', new Blob([fs.readFileSync(demo)]), 'demo');
    const up = await json(server.url + '/api/traces?name=demo&wait=1', { method: 'POST', body: form });
    assert.equal(up.status, 201, JSON.stringify(up.body));
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/?trace=${up.body.id}`);
    await waitIdle(page);
    const st = await page.evaluate(() => window.__viewer.state());
    assert.ok(st.start === up.body.start_ns && st.end === up.body.end_ns, 'the whole trace');
    const titles = (await page.evaluate(() => window.__viewer.tracks())).map((r) => r.title);
    assert.ok(!titles.includes('process') && !titles.includes('thread'), 'no track is called "process" or "thread": ' + titles);
    // the process is called by the binary that named its functions
    assert.equal(up.body.symbols.binary, 'demo');
    assert.ok(titles.includes('demo'), 'the process group is named after the binary: ' + titles);
    const axis = await page.evaluate(() => document.querySelector('.span-label').textContent);
    assert.doesNotMatch(axis, /-0\b/);
    await page.screenshot({ path: path.join(ROOT, 'build', 'e2e-artifacts', 'xray-trace.png') });
    await page.close();
  });

  it('names the process after a binary added later, on the timeline, the info page and in details', async (t) => {
    const b = buildDemo();
    if (!b) {
      t.skip('clang is missing');
      return;
    }
    const up = await json(server.url + '/api/traces?name=later&wait=1', { method: 'POST', body: fs.readFileSync(b.log) });
    assert.equal(up.status, 201, JSON.stringify(up.body));
    const id = up.body.id;
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/?trace=${id}`);
    await waitIdle(page);
    const reloaded = page.waitForEvent('load', { timeout: 20000 });
    await page.setInputFiles('.banner.symbols input.symbols-file', b.demo);
    await reloaded;
    await waitIdle(page);
    const trace = (await json(`${server.url}/api/traces/${id}`)).body;
    assert.equal(trace.symbols.binary, 'demo', 'the binary added later names the trace\'s program');
    const tracks = await page.evaluate(() => window.__viewer.tracks());
    assert.ok(tracks.some((r) => r.kind === 'group' && r.title === 'demo'), 'the process is named after the binary');
    // a call's details: its thread once, with its id once
    const th = tracks.find((r) => r.kind === 'thread');
    const call = (await json(`${server.url}/api/traces/${id}/slices?track=${th.trackId}`)).body.slices[0];
    await page.evaluate((sid) => window.__viewer.select(sid), call.id);
    await waitIdle(page);
    const thread = await page.locator('section.panel tr:has(th:text-is("Thread")) td').innerText();
    const tid = /\d+/.exec(th.subtitle || th.title)[0];
    assert.equal(thread.split(tid).length - 1, 1, `the tid once: "${thread}"`);
    const proc = await page.locator('section.panel tr:has(th:text-is("Process")) td').innerText();
    assert.match(proc, /^demo \d+$/, 'the process by name and pid');
    // the Chrome JSON export names the process after the binary too
    const exported = await (await fetch(`${server.url}/api/traces/${id}/export?format=chrome-json`)).json();
    const names = exported.traceEvents.filter((e) => e.ph === 'M' && e.name === 'process_name').map((e) => e.args.name);
    assert.ok(names.includes('demo'), 'the export names the program: ' + JSON.stringify(names));
    // the info page says the same
    await page.goto(`${server.url}/?trace=${id}&page=info`);
    await page.waitForFunction(() => window.__viewer && window.__viewer.ready);
    assert.match(await page.locator('.info-processes').innerText(), /\bdemo\b/);
    await page.close();
  });

  it('uploads a log and its binary picked together as one trace, with labels and a description', async (t) => {
    const b = buildDemo();
    if (!b) {
      t.skip('clang is missing');
      return;
    }
    const before = (await json(`${server.url}/api/traces`)).body.traces.map((x) => x.id);
    const page = await browser.context.newPage();
    await page.goto(server.url + '/');
    await page.fill('.upload-options .upload-labels', 'build=7\ndevice=Pixel 7 Pro');
    await page.fill('.upload-options .upload-description', 'log and binary together');
    await page.setInputFiles('#file-input', [b.log, b.demo]);
    await page.waitForSelector('.uploads .upload.ready', { timeout: 30000 });
    const now = (await json(`${server.url}/api/traces`)).body.traces.filter((x) => !before.includes(x.id));
    assert.equal(now.length, 1, 'one trace: ' + JSON.stringify(now.map((x) => [x.name, x.status])));
    const tr = now[0];
    assert.equal(tr.status, 'ready');
    assert.equal(tr.format, 'xray-fdr');
    assert.equal(tr.symbols.binary, 'demo');
    assert.ok(tr.symbols.named > 0);
    assert.deepEqual(tr.labels, { build: '7', device: 'Pixel 7 Pro' });
    assert.equal(tr.description, 'log and binary together');
    await page.screenshot({ path: path.join(ROOT, 'build', 'e2e-artifacts', 'library-upload-paired.png') });
    await page.close();
  });
});
