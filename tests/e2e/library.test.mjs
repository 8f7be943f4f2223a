// The library page and the compare page in Chromium: labels shown and
// clicked into the filter, the filter box's state in the URL (and back
// after a reload), sorting by a column, editing labels and pinning, the
// space line, search for slice names across traces, and picking two traces
// to compare, then opening both timelines on a row's slowest slice.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ROOT, buildServer, launchBrowser, startServer, tmpDir, closeAll } from './helpers.mjs';

const E2E_ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');

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

async function upload(file, query) {
  const r = await api(`/api/traces?wait=1&${query}`, { method: 'POST', body: fs.readFileSync(file) });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id;
}

async function listedNames() {
  return page.$$eval('table.traces:not(.find-table) tbody tr:not(.edit-row) td.name', (tds) => tds.map((td) => td.textContent));
}

describe('library', { timeout: 180000 }, () => {
  before(async () => {
    work = tmpDir('library-e2e-');
    const bin = buildServer(['build/rel/gen_fxt']);
    const gen = path.join(ROOT, 'build/rel/gen_fxt');
    execFileSync(gen, ['--events', '20000', '--threads', '4', '--seed', '1', path.join(work, 'base.fxt')]);
    execFileSync(gen, ['--events', '30000', '--threads', '4', '--seed', '2', path.join(work, 'new.fxt')]);
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    ids.base = await upload(path.join(work, 'base.fxt'), 'name=base-run&label=build=100&label=device=arm');
    ids.next = await upload(path.join(work, 'new.fxt'), 'name=new-run&label=build=101&label=device=x64&description=after%20the%20change');
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    fs.mkdirSync(E2E_ARTIFACTS, { recursive: true });
  });

  after(() => closeAll(browser, server, work));

  it('shows labels, filters by a clicked label, keeps the filter in the URL', async () => {
    await page.goto(server.url + '/');
    await page.waitForSelector('table.traces td.name');
    assert.deepEqual(await listedNames(), ['new-run', 'base-run']);
    const chips = await page.$$eval(`table.traces tr[data-id="${ids.next}"] .chip`, (b) => b.map((x) => x.textContent));
    assert.deepEqual(chips, ['build=101', 'device=x64']);
    await page.click(`table.traces tr[data-id="${ids.base}"] .chip:text-is("device=arm")`);
    await page.waitForFunction(() => document.querySelectorAll('table.traces:not(.find-table) tbody tr').length === 1);
    assert.equal(await page.inputValue('input.filter'), 'device=arm');
    assert.match(page.url(), /filter=device%3Darm/);
    await page.reload();
    await page.waitForSelector('table.traces td.name');
    assert.equal(await page.inputValue('input.filter'), 'device=arm');
    assert.deepEqual(await listedNames(), ['base-run']);
    // structured words: the server answers them
    await page.fill('input.filter', 'status:ready sort:name');
    await page.waitForFunction(() => /sort%3Aname/.test(location.search));
    await page.waitForFunction(() => [...document.querySelectorAll('table.traces:not(.find-table) td.name')].map((t) => t.textContent).join() === 'base-run,new-run');
    await page.fill('input.filter', 'nothing-like-this');
    await page.waitForFunction(() => document.querySelector('.empty').textContent.includes('No trace matches'));
    await page.fill('input.filter', '');
    await page.waitForFunction(() => document.querySelectorAll('table.traces:not(.find-table) tbody tr').length === 2);
    // a click on a column header sorts by it
    await page.click('table.traces th.sortable:text-is("Size")');
    await page.waitForFunction(() => /sort%3A-size/.test(location.search));
    await page.waitForFunction(() => document.querySelector('table.traces:not(.find-table) td.name').textContent === 'new-run');
  });

  // The rows shown once they are the ones the API's own filter gives
  // (query: GET /api/traces parameters), and the status line has no
  // "Not understood".
  async function shownAsApi(query) {
    const want = (await api('/api/traces?' + query)).body.traces.map((t) => String(t.id)).sort();
    await page.waitForFunction((ids) => {
      const got = [...document.querySelectorAll('table.traces:not(.find-table) tbody tr[data-id]')].map((tr) => tr.dataset.id).sort();
      return got.join() === ids.join() && !/Not understood/.test(document.querySelector('.lib-status').textContent);
    }, want);
    return want;
  }

  it('filters by quoted labels with spaces and markup, status:live and size>N, as the API does', async () => {
    const labels = 'label=' + encodeURIComponent('device=Pixel 7 Pro') + '&label=' + encodeURIComponent('note=<img src=x onerror=alert(1)>');
    const id = await upload(path.join(work, 'base.fxt'), 'name=pixel-7&' + labels);
    const other = await upload(path.join(work, 'base.fxt'), 'name=pixel-8&label=' + encodeURIComponent('device=Pixel 8 Pro'));
    const dialogs = [];
    page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
    try {
      await page.goto(server.url + '/');
      await page.waitForSelector(`table.traces tr[data-id="${id}"] .chip`);
      // the chip writes the quoted form, which finds what the API finds
      await page.click(`table.traces tr[data-id="${id}"] .chip:text-is("device=Pixel 7 Pro")`);
      assert.equal(await page.inputValue('input.filter'), 'device="Pixel 7 Pro"');
      assert.deepEqual(await shownAsApi('label=' + encodeURIComponent('device=Pixel 7 Pro')), [String(id)]);
      await page.waitForFunction(() => document.querySelector('.empty').textContent === '1 trace matches');
      await page.reload(); // and from the URL
      assert.deepEqual(await shownAsApi('label=' + encodeURIComponent('device=Pixel 7 Pro')), [String(id)]);
      // typed, the whole word quoted
      await page.fill('input.filter', '"device=Pixel 7 Pro"');
      assert.deepEqual(await shownAsApi('label=' + encodeURIComponent('device=Pixel 7 Pro')), [String(id)]);
      // typed without quotes: the label device=Pixel and two words, which
      // match nothing; the page offers the quoted form
      await page.fill('input.filter', 'device=Pixel 7 Pro');
      await shownAsApi('label=' + encodeURIComponent('device=Pixel') + '&q=' + encodeURIComponent('7 Pro'));
      await page.waitForSelector('.empty button.quoted-suggestion');
      await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'library-quote-hint.png'), clip: { x: 0, y: 0, width: 1400, height: 330 } });
      await page.click('.empty button.quoted-suggestion:text-is(\'device="Pixel 7 Pro"\')');
      assert.equal(await page.inputValue('input.filter'), 'device="Pixel 7 Pro"');
      assert.deepEqual(await shownAsApi('label=' + encodeURIComponent('device=Pixel 7 Pro')), [String(id)]);
      // markup in a value: found, and inert
      await page.fill('input.filter', '');
      await page.waitForSelector(`table.traces tr[data-id="${other}"]`);
      await page.click(`table.traces tr[data-id="${id}"] .chip:text-is("note=<img src=x onerror=alert(1)>")`);
      assert.equal(await page.inputValue('input.filter'), 'note="<img src=x onerror=alert(1)>"');
      assert.deepEqual(await shownAsApi('label=' + encodeURIComponent('note=<img src=x onerror=alert(1)>')), [String(id)]);
      assert.equal(await page.$$eval('img', (x) => x.length), 0);
      // the API's status and size filters are understood, not searched as text
      await page.fill('input.filter', 'status:live');
      await shownAsApi('status=live');
      await page.fill('input.filter', 'status:ready');
      await shownAsApi('status=ready');
      await page.fill('input.filter', 'size>1MB');
      await shownAsApi('min_size=' + (1024 * 1024 + 1));
      await page.fill('input.filter', 'size<=1k');
      await shownAsApi('max_size=1024');
      await page.fill('input.filter', 'size>lots');
      await page.waitForFunction(() => /Not understood \(left out\): size>lots/.test(document.querySelector('.lib-status').textContent));
      await page.fill('input.filter', 'device="Pixel 8 Pro" pixel');
      assert.deepEqual(await shownAsApi('label=' + encodeURIComponent('device=Pixel 8 Pro') + '&q=pixel'), [String(other)]);
      // the count is the server's for this filter, not the last one's
      await page.waitForFunction(() => document.querySelector('.empty').textContent === '1 trace matches');
      await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'library-filter.png') });
      assert.deepEqual(dialogs, []);
    } finally {
      await api(`/api/traces/${id}`, { method: 'DELETE' });
      await api(`/api/traces/${other}`, { method: 'DELETE' });
    }
  });

  // The Events column counts what the trace recorded: event records, CPU
  // runs and log records (sched.fxt has one event record, a wakeup, and its
  // CPU runs); while a trace is ingested its counts are marked partial.
  it('counts CPU runs and logs in the Events column, and marks partial counts', async () => {
    const id = await upload(path.join(ROOT, 'tests/corpus/fxt/sched.fxt'), 'name=sched');
    try {
      const c = (await api(`/api/traces/${id}`)).body.counts;
      assert.ok(c.sched > 0);
      const cell = `table.traces tr[data-id="${id}"] td.events`;
      await page.goto(server.url + '/');
      await page.waitForSelector(cell);
      assert.equal(await page.textContent(cell), String(c.events + c.sched + c.logs));
      assert.match(await page.getAttribute(cell, 'title'), new RegExp(`${c.sched} CPU runs`));
      // an ingest's preview counts: the same trace shown as still ingesting
      await page.route('**/api/traces?*', async (route) => {
        const r = await route.fetch();
        const body = await r.json();
        for (const t of body.traces) if (t.id === id) Object.assign(t, { status: 'ingesting', progress: { bytes_done: 1, bytes_total: 2 } });
        await route.fulfill({ response: r, json: body });
      });
      await page.reload();
      await page.waitForSelector(cell);
      assert.equal(await page.textContent(cell), `${c.events + c.sched + c.logs} so far`);
      assert.match(await page.getAttribute(cell, 'title'), /partial/);
      await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'library-events.png') });
      // and the info page says so of its counts
      await page.route(`**/api/traces/${id}`, async (route) => {
        const r = await route.fetch();
        await route.fulfill({ response: r, json: { ...(await r.json()), status: 'ingesting' } });
      });
      await page.goto(`${server.url}/?trace=${id}&page=info`);
      await page.waitForFunction(() => window.__viewer && window.__viewer.ready);
      assert.match(await page.textContent('.info-counts h2'), /^Counts \(partial: the part ingested so far\)$/);
    } finally {
      await page.unroute('**/api/traces?*');
      await page.unroute(`**/api/traces/${id}`);
      await api(`/api/traces/${id}`, { method: 'DELETE' });
    }
  });

  it('edits labels and pins a trace; shows the space used', async () => {
    await page.goto(server.url + '/');
    await page.waitForSelector(`table.traces tr[data-id="${ids.base}"] button.edit`);
    await page.click(`table.traces tr[data-id="${ids.base}"] button.edit`);
    await page.fill('tr.edit-row .edit-labels', 'build=100\ndevice=arm\nbranch=main');
    await page.fill('tr.edit-row .edit-description', 'the baseline');
    await page.click('tr.edit-row button.save-edit');
    await page.waitForSelector(`table.traces tr[data-id="${ids.base}"] .chip:text-is("branch=main")`);
    const t = (await api(`/api/traces/${ids.base}`)).body;
    assert.deepEqual(t.labels, { branch: 'main', build: '100', device: 'arm' });
    assert.equal(t.description, 'the baseline');
    // a bad label is refused with the server's sentence, nothing changed
    await page.click(`table.traces tr[data-id="${ids.base}"] button.edit`);
    await page.fill('tr.edit-row .edit-labels', 'bad key=1');
    await page.click('tr.edit-row button.save-edit');
    await page.waitForFunction(() => document.querySelector('tr.edit-row .error-text').textContent.length > 0);
    assert.deepEqual((await api(`/api/traces/${ids.base}`)).body.labels, { branch: 'main', build: '100', device: 'arm' });
    await page.click('tr.edit-row button:text-is("Cancel")');
    await page.click(`table.traces tr[data-id="${ids.base}"] button.pin`);
    await page.waitForSelector(`table.traces tr[data-id="${ids.base}"] button.pin.pinned`);
    assert.equal((await api(`/api/traces/${ids.base}`)).body.pinned, true);
    await page.waitForFunction(() => /1 pinned/.test(document.querySelector('.lib-usage').textContent));
    assert.match(await page.textContent('.lib-usage'), /2 traces · [\d.]+ MiB stored/);
    await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'library.png') });
  });

  it('keeps labels whose values hold spaces, = and markup through an unchanged edit', async () => {
    // every kind of value the API accepts: spaces (leading, inner, trailing),
    // '=', markup, UTF-8, an empty value; a name with two spaces
    const want = {
      'a.b/c:d-e_f': 'x=y=z', device: 'Pixel 7 Pro', empty: '', note: '<img src=x onerror=alert(1)>',
      spaced: '  two  spaces  ', utf: 'naïve — 東京',
    };
    const q = Object.entries(want).map(([k, v]) => 'label=' + encodeURIComponent(`${k}=${v}`)).join('&');
    const id = await upload(path.join(work, 'base.fxt'), `name=${encodeURIComponent('spaced  name')}&description=${encodeURIComponent('line one\nline two')}&${q}`);
    try {
      await editUnchangedThenChange(id, want);
    } finally {
      await api(`/api/traces/${id}`, { method: 'DELETE' });
    }
  });

  async function editUnchangedThenChange(id, want) {
    const before = (await api(`/api/traces/${id}`)).body;
    assert.deepEqual(before.labels, want);
    await page.goto(server.url + '/');
    await page.waitForSelector(`table.traces tr[data-id="${id}"] button.edit`);
    await page.click(`table.traces tr[data-id="${id}"] button.edit`);
    await page.click('tr.edit-row button.save-edit');
    await page.waitForSelector('tr.edit-row', { state: 'detached' });
    const t = (await api(`/api/traces/${id}`)).body;
    assert.deepEqual(t.labels, want);
    assert.equal(t.name, before.name);
    assert.equal(t.description, before.description);
    // one label changed and one added, one per line: the others stay exactly
    await page.click(`table.traces tr[data-id="${id}"] button.edit`);
    const text = await page.inputValue('tr.edit-row .edit-labels');
    await page.fill('tr.edit-row .edit-labels', text.replace('device=Pixel 7 Pro', 'device=Pixel 8 Pro') + '\nbranch=feature x');
    await page.click('tr.edit-row button.save-edit');
    await page.waitForSelector('tr.edit-row', { state: 'detached' });
    assert.deepEqual((await api(`/api/traces/${id}`)).body.labels, { ...want, device: 'Pixel 8 Pro', branch: 'feature x' });
    // a line removed removes its label
    await page.click(`table.traces tr[data-id="${id}"] button.edit`);
    const text2 = await page.inputValue('tr.edit-row .edit-labels');
    await page.fill('tr.edit-row .edit-labels', text2.split('\n').filter((l) => !l.startsWith('note=')).join('\n'));
    await page.click('tr.edit-row button.save-edit');
    await page.waitForSelector('tr.edit-row', { state: 'detached' });
    const after = { ...want, device: 'Pixel 8 Pro', branch: 'feature x' };
    delete after.note;
    assert.deepEqual((await api(`/api/traces/${id}`)).body.labels, after);
  }

  it('shows labels, description and process names on the info page', async () => {
    await page.goto(`${server.url}/?trace=${ids.next}&page=info`);
    await page.waitForFunction(() => window.__viewer && window.__viewer.ready);
    const summary = await page.locator('.info-summary').innerText();
    assert.match(summary, /build=101/);
    assert.match(summary, /after the change/);
    const procs = (await api(`/api/traces/${ids.next}`)).body.processes;
    assert.ok(procs.length > 0);
    const shown = await page.locator('.info-processes').innerText();
    for (const p of procs) if (p.name) assert.ok(shown.includes(p.name), p.name);
  });

  it('finds slices by name across traces', async () => {
    await page.goto(server.url + '/');
    await page.fill('input.find', 'frame');
    await page.press('input.find', 'Enter');
    await page.waitForSelector('.find-table tbody tr');
    const rows = await page.$$eval('.find-table tbody tr', (trs) => trs.map((tr) => tr.dataset.id));
    assert.deepEqual(rows, [String(ids.next), String(ids.base)]);
    assert.match(page.url(), /find=frame/);
    const want = (await api('/api/search?q=frame')).body.traces[0];
    const cells = await page.$$eval('.find-table tbody tr:first-child td', (tds) => tds.map((t) => t.textContent));
    assert.equal(cells[1], want.count.toLocaleString('en-US'));
  });

  it('compares two picked traces and opens both timelines on the slowest slice', async () => {
    await page.goto(server.url + '/');
    await page.waitForSelector(`table.traces tr[data-id="${ids.base}"] input.pick`);
    await page.check(`table.traces tr[data-id="${ids.base}"] input.pick`);
    await page.check(`table.traces tr[data-id="${ids.next}"] input.pick`);
    await page.click('a.compare-go');
    await page.waitForSelector('table.cmp-table tr.cmp-row');
    assert.match(page.url(), new RegExp(`page=compare&a=${ids.base}&b=${ids.next}`));
    const want = (await api(`/api/compare?a=${ids.base}&b=${ids.next}&limit=2000`)).body.rows;
    const names = await page.$$eval('table.cmp-table tr.cmp-row td.name', (tds) => tds.map((t) => t.textContent));
    assert.deepEqual(names, want.map((r) => r.name));
    // the first row is the largest total regression; open it
    const row = want.find((r) => r.a && r.b);
    await page.click(`table.cmp-table tr.cmp-row:nth-child(${want.indexOf(row) + 1})`);
    await page.waitForSelector('iframe.cmp-iframe-a');
    await page.waitForSelector('iframe.cmp-iframe-b');
    for (const side of ['a', 'b']) {
      const frame = await (await page.$(`iframe.cmp-iframe-${side}`)).contentFrame();
      await frame.waitForFunction((id) => {
        const v = window.__viewer;
        if (!v || v.page !== 'timeline' || !v.idle()) return false;
        const s = v.state();
        return s.selection && s.selection.id === id;
      }, row[side].slowest.id, { timeout: 30000, polling: 100 });
      const st = await frame.evaluate(() => window.__viewer.state());
      assert.ok(st.start <= row[side].slowest.ts && st.end >= row[side].slowest.ts + row[side].slowest.dur);
    }
    // per thread, sorted by p95: the URL follows
    await page.selectOption('select.cmp-by', 'thread');
    await page.waitForFunction(() => document.querySelector('table.cmp-table thead th').textContent === 'Thread');
    assert.match(page.url(), /by=thread/);
    await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'compare.png') });
    assert.deepEqual(pageErrors, []);
  });
});
