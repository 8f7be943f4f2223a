// End-to-end test of what the viewer looks like in daily use, mostly on
// the fixture trace (make_fixture), in a small window (1024x700): every
// control of the top bar stays on screen and the library's placeholders
// fit their boxes; each track's label fits inside its track; a track
// filter that matches nothing says so; counter values of any size are
// written short, readable over their plot and given in full in the
// details; a live trace's slices still open are not called damage; the
// page preloads every module the viewer imports, so that its scripts load
// in one round.
//
//   node --test tests/e2e/looks.test.mjs

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import {
  ROOT, buildFixtureTool, buildServer, launchBrowser, startServer, tmpDir, waitIdle, closeAll, until,
} from './helpers.mjs';

let server;
let browser;
let page;
let work;
let traceId;
const pageErrors = [];

describe('looks', { timeout: 120000 }, () => {
  before(async () => {
    work = tmpDir('looks-e2e-');
    const bin = buildServer(['build/rel/gen_fxt']);
    const tool = buildFixtureTool(work);
    execFileSync(tool, [path.join(work, 'fixture.fxt')]);
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    const r = await fetch(server.url + '/api/traces?name=fixture.fxt&wait=1', {
      method: 'POST', body: fs.readFileSync(path.join(work, 'fixture.fxt')),
    });
    assert.ok(r.ok, 'upload: ' + r.status);
    traceId = (await r.json()).id;
    browser = await launchBrowser([], { width: 1024, height: 700 });
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
  });

  after(() => closeAll(browser, server, work));

  it('keeps every control of the top bar on screen in a 1024 px window', async () => {
    await page.goto(`${server.url}/?trace=${traceId}`);
    await waitIdle(page);
    const out = await page.evaluate(() => {
      const W = document.documentElement.clientWidth;
      const bar = document.querySelector('header.topbar');
      return [...bar.querySelectorAll('a, button, input')]
        .filter((e) => !e.classList.contains('help'))
        .map((e) => ({ text: e.textContent || e.placeholder, r: e.getBoundingClientRect() }))
        .filter(({ r }) => r.width === 0 || r.right > W + 0.5 || r.left < 0)
        .map(({ text }) => text);
    });
    assert.deepEqual(out, [], 'controls off screen or squeezed to nothing');
    const links = await page.$$eval('header.topbar .page-link', (els) => els.map((e) => e.textContent));
    assert.ok(links.some((t) => t.includes('Info')), 'the page links are there: ' + links.join(', '));
    assert.deepEqual(pageErrors, []);
  });

  it('fits the library\'s placeholders inside their boxes', async () => {
    await page.goto(server.url + '/');
    await page.waitForSelector('.lib-toolbar .filter');
    const cut = await page.$$eval('.library input[placeholder], .library textarea[placeholder]', (els) => els.map((e) => {
      const cs = getComputedStyle(e);
      const c = document.createElement('canvas').getContext('2d');
      c.font = cs.font;
      const line = e.placeholder.split('\n')[0];
      const room = e.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      return c.measureText(line).width <= room ? null : line;
    }).filter(Boolean));
    // the filter's said 'Filter: name  build=1234  status:ready  form', cut
    assert.deepEqual(cut, [], 'placeholders cut at the box\'s edge');
  });

  it('writes each track\'s name inside its track, thread states included', async () => {
    await page.goto(`${server.url}/?trace=${traceId}`);
    await waitIdle(page);
    const out = await page.$$eval('.labels .track-label', (els) => els.map((e) => {
      const r = e.getBoundingClientRect();
      const n = e.querySelector('.name').getBoundingClientRect();
      return { key: e.dataset.key, text: e.textContent, inside: n.top >= r.top - 0.5 && n.bottom <= r.bottom + 0.5 };
    }));
    assert.ok(out.some((l) => l.text.startsWith('thread state')), 'the fixture has thread state tracks');
    assert.deepEqual(out.filter((l) => !l.inside).map((l) => l.key), [], 'labels that spill out of their track');
  });

  it('says so when the track filter matches no track', async () => {
    await page.goto(`${server.url}/?trace=${traceId}`);
    await waitIdle(page);
    await page.fill('.track-filter', 'no-such-track');
    await page.waitForFunction(() => window.__viewer.tracks().length === 0);
    assert.equal((await page.textContent('.tracks-empty')).trim(), 'No track matches "no-such-track".');
    await page.fill('.track-filter', '');
    await page.waitForFunction(() => window.__viewer.tracks().length > 0);
    assert.equal(await page.$('.tracks-empty'), null, 'the message goes with the filter');
  });

  it('writes counter values of any size short', async () => {
    const got = await page.evaluate(async () => {
      const { fmtValue } = await import('/js/format.js');
      return [18446744073709551615, 1.5e12, -4e9, 12345, 999, 0.5, 1 / 3, 9e-9, 1000.5, 1e21].map(fmtValue);
    });
    // a uint64 counter near 2^64 was "18446744073.71 G"; 9e-9 was "9.000e-9"
    assert.deepEqual(got, ['18.45 E', '1.5 T', '-4 G', '12.3 k', '999', '0.5', '0.3333', '9e-9', '1001', '1e+21']);
  });

  it('writes a counter\'s scale over a light backing, not under its plot', async () => {
    await page.goto(`${server.url}/?trace=${traceId}`);
    await waitIdle(page);
    // queue_depth is at its maximum (5) over [7 ms, 8 ms): there the plot's
    // top line runs right through the scale's label
    await page.evaluate(() => window.__viewer.setView(7100000, 7900000));
    await waitIdle(page);
    const px = await page.evaluate(() => {
      const tr = window.__viewer.tracks().find((t) => t.kind === 'counter');
      const cv = document.querySelector('.tl-canvas');
      const dpr = window.devicePixelRatio || 1;
      const ctx = cv.getContext('2d');
      const out = [];
      for (let y = tr.top + 3; y <= tr.top + 6; y++) {
        const d = ctx.getImageData(Math.round(2 * dpr), Math.round(y * dpr), 1, 1).data;
        out.push(Math.min(d[0], d[1], d[2]));
      }
      return out;
    });
    assert.ok(px.every((c) => c > 190), 'dark pixels where the label is written: ' + px.join(', '));
  });

  it('gives a counter point\'s value in full in the details', async () => {
    const file = path.join(work, 'counters.fxt');
    execFileSync(path.join(ROOT, 'build/rel/gen_fxt'), ['--events', '5000', '--threads', '2', '--seed', '5', file]);
    const up = await fetch(server.url + '/api/traces?name=counters&wait=1', { method: 'POST', body: fs.readFileSync(file) });
    const t = await up.json();
    await page.goto(`${server.url}/?trace=${t.id}`);
    await waitIdle(page);
    // a view narrow enough that the points are single, not summaries
    const mid = (t.start_ns + t.end_ns) / 2;
    await page.evaluate((m) => window.__viewer.setView(m - 20000, m + 20000), mid);
    const find = () => page.evaluate(() => window.__viewer.tracks().find((r) => r.title === 'memory_usage.allocated'));
    assert.ok(await find(), 'gen_fxt writes memory_usage.allocated');
    await page.evaluate((y) => { document.querySelector('.tl-scroll').scrollTop = y; }, (await find()).y);
    await waitIdle(page);
    const tr = await find();
    const cv = await page.locator('.tl-canvas').boundingBox();
    await page.mouse.click(cv.x + cv.width / 2, cv.y + tr.top + tr.h / 2);
    await page.waitForSelector('.counter-exact:not(:empty)', { timeout: 5000 });
    const short = await page.textContent('.counter-value');
    const exact = await page.textContent('.counter-exact');
    // the byte count is millions: "14.2 M" alone hid the last six digits
    assert.match(short, /^\d+(\.\d+)? M$/);
    assert.match(exact, /^ \(\d{7,}\)$/);
  });

  it('shows a first flame graph at once, then the whole one', async () => {
    // random stacks: more call paths than the first answer's 10000 nodes
    const file = path.join(work, 'paths.fxt');
    execFileSync(path.join(ROOT, 'build/rel/gen_fxt'), ['--events', '200000', '--threads', '4', '--seed', '3', file]);
    const up = await (await fetch(server.url + '/api/traces?name=paths&wait=1', { method: 'POST', body: fs.readFileSync(file) })).json();
    const asked = [];
    const onRequest = (r) => { if (r.url().includes('/flame?')) asked.push(new URL(r.url()).searchParams.get('limit')); };
    page.on('request', onRequest);
    try {
      await page.goto(`${server.url}/?trace=${up.id}`);
      await waitIdle(page);
      const tracks = (await page.evaluate(() => window.__viewer.tracks())).filter((t) => t.kind === 'thread').map((t) => t.trackId);
      await page.evaluate(([s, e, t]) => window.__viewer.setArea(s, e, t), [up.start_ns, up.end_ns, tracks]);
      await waitIdle(page);
      await page.locator('section.panel .tab[data-tab="flame"]').click();
      await waitIdle(page);
      assert.deepEqual(asked, ['10000', '1000000'], 'the first graph was cut: the whole one follows');
      const info = await page.locator('section.panel .flame-info').innerText();
      assert.doesNotMatch(info, /first graph|cut at/, 'the whole graph replaced the first: ' + info);
      const whole = await (await fetch(`${server.url}/api/traces/${up.id}/flame?tracks=${tracks.join(',')}&start=${up.start_ns}&end=${up.end_ns}&limit=1000000`)).json();
      assert.equal(whole.truncated, false);
      assert.equal(await page.evaluate(() => window.__viewer.flameBoxes().length) > 0, true);
      assert.match(info, new RegExp(`^${whole.nodes.length.toLocaleString('en-US')} frames`));
    } finally {
      page.off('request', onRequest);
    }
  });

  it('names an async slice\'s track and its category once each', async () => {
    const slices = await (await fetch(`${server.url}/api/traces/${traceId}/search?q=Download`)).json();
    assert.ok(slices.slices.length > 0, 'the fixture has its async "Download"');
    await page.goto(`${server.url}/?trace=${traceId}`);
    await waitIdle(page);
    await page.evaluate((id) => window.__viewer.select(id), slices.slices[0].id);
    await waitIdle(page);
    const track = page.locator('section.panel tr', { has: page.locator('th', { hasText: /^Track$/ }) }).locator('td');
    await track.waitFor();
    assert.equal(await track.textContent(), 'Download (async track, category net)');
  });

  it('draws every log of a long trace at any zoom, a pixel column\'s logs as one tick', async () => {
    // 20000 log records (FXT type 9, inline thread) 50 us apart: a second
    const words = [0x0016547846040010n];
    for (let i = 0; i < 20000; i++) {
      const msg = Buffer.from(`log ${i}`);
      const pad = Math.ceil(msg.length / 8);
      words.push(9n | BigInt(4 + pad) << 4n | BigInt(msg.length) << 16n, BigInt(1000 + i * 50000), 7n, 8n);
      const b = Buffer.alloc(pad * 8);
      msg.copy(b);
      for (let k = 0; k < pad; k++) words.push(b.readBigUInt64LE(k * 8));
    }
    const body = Buffer.alloc(words.length * 8);
    words.forEach((w, i) => body.writeBigUInt64LE(w, i * 8));
    const up = await (await fetch(server.url + '/api/traces?name=logs&wait=1', { method: 'POST', body })).json();
    assert.equal(up.counts.logs, 20000);
    const replies = [];
    page.on('response', async (r) => {
      if (r.url().includes('/logs?')) replies.push({ url: r.url(), body: await r.json() });
    });
    await page.goto(`${server.url}/?trace=${up.id}`);
    await waitIdle(page);
    const whole = replies.find((r) => r.url.includes('resolution='));
    assert.ok(whole, 'the log track asks at its resolution: ' + replies.map((r) => r.url).join(' '));
    assert.equal(whole.body.truncated, false, 'the whole second, not its first 20000 logs cut');
    assert.equal(whole.body.logs.reduce((n, l) => n + (l.merged || 1), 0), 20000);
    assert.ok(whole.body.logs.length <= 1024, `an item a column at most: ${whole.body.logs.length}`);
    // a summary under the mouse says what it holds; a click zooms into it
    const log = (await page.evaluate(() => window.__viewer.tracks())).find((t) => t.kind === 'log');
    const canvas = await page.locator('canvas.tl-canvas').boundingBox();
    const box = await page.locator('.tl-body').boundingBox();
    const scrollTop = await page.evaluate(() => document.querySelector('.tl-body > *').scrollTop || 0);
    const x = canvas.x + canvas.width * 0.75;
    const y = box.y + log.y - scrollTop + log.h / 2;
    await page.mouse.move(x, y);
    const title = page.locator('.tooltip:not(.hidden) .tip-title');
    await title.waitFor();
    assert.match(await title.textContent(), /^\d+ log messages$/);
    const before = await page.evaluate(() => window.__viewer.state());
    await page.mouse.click(x, y);
    await waitIdle(page);
    const st = await page.evaluate(() => window.__viewer.state());
    assert.ok(st.end - st.start < (before.end - before.start) / 100, `zoomed into the column: ${st.start}..${st.end}`);
    await page.mouse.move(0, 0);
  });

  it('does not call a finished trace damaged for slices still open at its end', async () => {
    // an XRay log flushed while main() runs, a capture stopped mid-call: a
    // slice begun and never ended, and nothing else wrong
    const words = [0x0016547846040010n];
    const name = Buffer.alloc(8);
    name.write('open');
    // duration begin (event type 2) and an instant, inline thread and strings
    for (const [type, ts] of [[2, 1000n], [0, 5000n]]) {
      words.push(4n | 6n << 4n | BigInt(type) << 16n | 0x8004n << 32n | 0x8004n << 48n, ts, 1n, 2n,
        name.readBigUInt64LE(0), name.readBigUInt64LE(0));
    }
    const body = Buffer.alloc(words.length * 8);
    words.forEach((w, i) => body.writeBigUInt64LE(w, i * 8));
    const up = await (await fetch(server.url + '/api/traces?name=open-at-end&wait=1', { method: 'POST', body })).json();
    assert.equal(up.status, 'ready');
    assert.equal(Number(up.diagnostics.unterminated_slices), 1);
    const others = Object.entries(up.diagnostics).filter(([k, v]) => k !== 'unterminated_slices' && Number(v) > 0);
    assert.deepEqual(others, []);
    await page.goto(`${server.url}/?trace=${up.id}`);
    await waitIdle(page);
    assert.ok(await page.$eval('.banner.diagnostics', (e) => e.classList.contains('hidden')), 'no damage banner');
    await page.goto(`${server.url}/`);
    const row = page.locator('tr', { has: page.locator('a', { hasText: /^open-at-end$/ }) });
    await row.waitFor();
    assert.doesNotMatch(await row.innerText(), /damaged/);
    await page.goto(`${server.url}/?trace=${up.id}&page=info`);
    await page.waitForFunction(() => window.__viewer && window.__viewer.page === 'info' && window.__viewer.ready);
    assert.match(await page.locator('.info-diagnostics').innerText(), /No damage or loss found/);
    assert.equal(await page.locator('.info-diagnostics tr[data-diag="unterminated_slices"]').getAttribute('class'), '');
  });

  it('does not call a live trace damaged for the slices it has not ended yet', async () => {
    const file = path.join(work, 'live.fxt');
    execFileSync(path.join(ROOT, 'build/rel/gen_fxt'), ['--events', '20000', '--threads', '2', '--seed', '5', file]);
    const bytes = fs.readFileSync(file);
    const u = new URL(server.url + '/api/traces?live=1&name=recording');
    const stream = http.request({ hostname: u.hostname, port: u.port, path: u.pathname + u.search, method: 'POST' });
    stream.on('error', () => {});
    try {
      stream.write(bytes.subarray(0, bytes.length >> 1));
      const t = await until('a snapshot with slices still open', async () => {
        const r = await (await fetch(server.url + '/api/traces?status=live')).json();
        const live = r.traces.find((x) => x.name === 'recording');
        if (!live) return null;
        const d = await (await fetch(`${server.url}/api/traces/${live.id}`)).json();
        return d.diagnostics && Number(d.diagnostics.unterminated_slices) > 0 ? d : null;
      });
      // half a good trace: slices begun and not yet ended, and maybe the
      // start of a record whose rest has not come
      const others = Object.entries(t.diagnostics)
        .filter(([k, v]) => k !== 'unterminated_slices' && k !== 'truncated_bytes' && Number(v) > 0);
      assert.deepEqual(others, [], 'the first half of a good trace has no other diagnostic');
      await page.goto(`${server.url}/?trace=${t.id}`);
      await waitIdle(page);
      const banner = await page.$eval('.banner.diagnostics', (e) => ({ hidden: e.classList.contains('hidden'), text: e.textContent }));
      assert.ok(banner.hidden, 'no diagnostics banner while recording: ' + banner.text);
    } finally {
      stream.end();
    }
  });
});

// Every module app.js imports, directly or not, has its modulepreload link
// in index.html: a module found only when its importer is parsed costs one
// more round trip before the first view (read from the files, no browser).
describe('module preloads', () => {
  it('index.html preloads every module of the viewer', () => {
    const dir = path.join(ROOT, 'static', 'js');
    const html = fs.readFileSync(path.join(ROOT, 'static', 'index.html'), 'utf8');
    const preloaded = new Set([...html.matchAll(/<link rel="modulepreload" href="\/js\/([\w.-]+)">/g)].map((m) => m[1]));
    const seen = new Set();
    const walk = (file) => {
      if (seen.has(file)) return;
      seen.add(file);
      const src = fs.readFileSync(path.join(dir, file), 'utf8');
      for (const m of src.matchAll(/^import [^;]*? from '\.\/([\w.-]+)';/gms)) walk(m[1]);
    };
    walk('app.js');
    seen.delete('app.js');
    assert.ok(seen.size > 20, 'the import graph is read: ' + [...seen]);
    assert.deepEqual([...seen].filter((f) => !preloaded.has(f)).sort(), [], 'modules without a preload');
    assert.deepEqual([...preloaded].filter((f) => !seen.has(f)).sort(), [], 'preloads of modules nothing imports');
  });
});
