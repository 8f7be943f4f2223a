// Notes in the viewer (issue 44): a note written on an area selection is
// seen by a second browser (its own profile: another person) as a flag on
// the time axis and an entry in the notes panel; a note's text stays text
// (an <img onerror> note draws no image and runs nothing) with its links
// made clickable; an open page shows what others write meanwhile; ?note=ID
// opens the trace at the note; edit and delete from the panel; the library
// counts each trace's notes and finds a trace by the text of its notes.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { ROOT, buildFixtureTool, buildServer, closeAll, launchBrowser, startServer, tmpDir, until, waitIdle, apiJson, watchPage } from './helpers.mjs';

const MS = 1000000;
const XSS = '<img src=x onerror=alert(1)>';
const E2E_ARTIFACTS = path.join(ROOT, 'build', 'e2e-artifacts');

let server;
let browser;
let other; // a second browser profile: another viewer
let page;
let work;
let traceId;
const dialogs = [];
const pageErrors = [];

function api(p, opts) {
  return apiJson(server, p, opts);
}

function watch(p) {
  return watchPage(p, dialogs, pageErrors);
}

async function notesOnServer() {
  return (await api(`/api/traces/${traceId}/notes`)).body.notes;
}

async function trackId(p, title) {
  return (await p.evaluate((t) => window.__viewer.tracks().find((r) => r.title === t), title)).trackId;
}

describe('notes', { timeout: 180000 }, () => {
  before(async () => {
    work = tmpDir('notes-e2e-');
    const bin = buildServer();
    const tool = buildFixtureTool(work);
    execFileSync(tool, [path.join(work, 'fixture.fxt')]);
    fs.mkdirSync(path.join(work, 'data'));
    server = await startServer(bin, path.join(work, 'data'));
    const r = await api('/api/traces?wait=1&name=fixture', { method: 'POST', body: fs.readFileSync(path.join(work, 'fixture.fxt')) });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    traceId = r.body.id;
    browser = await launchBrowser();
    other = await launchBrowser();
    page = watch(await browser.context.newPage());
    fs.mkdirSync(E2E_ARTIFACTS, { recursive: true });
  });

  after(async () => {
    if (other) await other.close();
    await closeAll(browser, server, work);
  });

  it('adds a note from an area selection; a second viewer sees its flag and its entry', async () => {
    await page.goto(`${server.url}/?trace=${traceId}&start=0&end=${10 * MS}`);
    await waitIdle(page);
    assert.equal(await page.locator('button.notes-toggle').textContent(), '✎ 0');
    // shift+drag across render-main from 2 ms to 4 ms
    const canvas = await page.locator('canvas.tl-canvas').boundingBox();
    const label = await page.locator('.label[data-key]').filter({ hasText: 'render-main' }).boundingBox();
    const x = (t) => canvas.x + (t / (10 * MS)) * canvas.width;
    await page.keyboard.down('Shift');
    await page.mouse.move(x(2 * MS), label.y + 8);
    await page.mouse.down();
    await page.mouse.move(x(4 * MS), label.y + 8, { steps: 5 });
    await page.mouse.up();
    await page.keyboard.up('Shift');
    await waitIdle(page);
    await page.locator('button.add-area-note').click();
    // the first note asks for the author's name
    const form = page.locator('.notes-panel form.note-compose');
    await form.waitFor();
    await form.locator('textarea').fill('GC stall here: see https://bugs.example.com/1234.');
    await form.locator('input[name=author]').fill('ana');
    await form.locator('button.save-note').click();
    await page.locator('.notes-panel .note-item').first().waitFor();
    await waitIdle(page);
    const notes = await notesOnServer();
    assert.equal(notes.length, 1);
    const n = notes[0];
    const renderId = await trackId(page, 'render-main');
    assert.equal(n.kind, 'range');
    assert.equal(n.track_id, renderId, 'the area\'s one track');
    assert.equal(n.author, 'ana');
    assert.ok(Math.abs(n.start_ns - 2 * MS) < 0.05 * MS && Math.abs(n.end_ns - 4 * MS) < 0.05 * MS, JSON.stringify(n));

    // this browser, reloaded: the flag and the count
    await page.reload();
    await waitIdle(page);
    assert.equal(await page.locator('button.notes-toggle').textContent(), '✎ 1');
    assert.equal((await page.evaluate(() => window.__viewer.noteFlags())).length, 1);

    // another viewer (its own profile)
    const p2 = watch(await other.context.newPage());
    await p2.goto(`${server.url}/?trace=${traceId}&start=0&end=${10 * MS}`);
    await waitIdle(p2);
    const flags = await p2.evaluate(() => window.__viewer.noteFlags());
    assert.equal(flags.length, 1);
    assert.equal(flags[0].id, n.id);
    const axis = await p2.locator('canvas.axis-canvas').boundingBox();
    const want = axis.x + (n.start_ns / (10 * MS)) * axis.width;
    assert.ok(Math.abs(flags[0].x - want) < 2, `the flag at the note's start: ${flags[0].x} vs ${want}`);
    // the flag is drawn in the notes' colour
    const px = await p2.evaluate(([fx]) => {
      const c = document.querySelector('canvas.axis-canvas');
      const r = c.getBoundingClientRect();
      const d = c.getContext('2d').getImageData(Math.round((fx - r.left + 3) * devicePixelRatio), Math.round(5 * devicePixelRatio), 1, 1).data;
      return [d[0], d[1], d[2]];
    }, [flags[0].x]);
    assert.deepEqual(px, [0x8e, 0x24, 0xaa], 'a purple flag');
    // a note written meanwhile shows up without a reload, and goes when deleted
    const extra = await api(`/api/traces/${traceId}/notes`, { method: 'POST', body: JSON.stringify({ text: 'meanwhile', start_ns: 6 * MS, end_ns: 7 * MS }) });
    assert.equal(extra.status, 201, JSON.stringify(extra.body));
    const t0 = Date.now();
    await until('the new flag', () => p2.evaluate(() => window.__viewer.noteFlags().length === 2), 5000);
    assert.ok(Date.now() - t0 < 4000, 'within a poll or two');
    assert.equal(await p2.locator('button.notes-toggle').textContent(), '✎ 2');
    assert.equal((await api(`/api/notes/${extra.body.id}`, { method: 'DELETE' })).status, 204);
    await until('the flag gone', () => p2.evaluate(() => window.__viewer.noteFlags().length === 1), 5000);
    await p2.locator('button.notes-toggle').click();
    const item = p2.locator(`.notes-panel .note-item[data-id="${n.id}"]`);
    await item.waitFor();
    assert.equal(await item.locator('.note-text').textContent(), 'GC stall here: see https://bugs.example.com/1234.');
    assert.equal(await item.locator('.note-text a').getAttribute('href'), 'https://bugs.example.com/1234', 'the link, without the full stop');
    assert.match(await item.locator('.note-where').textContent(), /render-main/);
    assert.match(await item.locator('.note-meta').textContent(), /^ana · /);
    // a click on the flag moves the view to the note and picks it
    await p2.locator('button.notes-toggle').click(); // closed: the panel is not over the tracks
    await p2.evaluate(() => window.__viewer.setView(5 * 1000000, 10 * 1000000));
    await waitIdle(p2);
    assert.equal((await p2.evaluate(() => window.__viewer.noteFlags())).length, 0, 'out of view: no flag');
    await p2.evaluate(() => window.__viewer.setView(0, 10 * 1000000));
    await waitIdle(p2);
    const f = (await p2.evaluate(() => window.__viewer.noteFlags()))[0];
    await p2.mouse.move(f.x + 3, f.y);
    await p2.mouse.down();
    await p2.mouse.up();
    await waitIdle(p2);
    const st = await p2.evaluate(() => window.__viewer.state());
    assert.ok(st.start <= n.start_ns && st.end >= n.end_ns && st.end - st.start < 3 * (n.end_ns - n.start_ns),
      `the view shows the note's range: ${st.start} ${st.end}`);
    assert.ok(await p2.locator(`.notes-panel .note-item.current[data-id="${n.id}"]`).isVisible());
    await p2.screenshot({ path: path.join(E2E_ARTIFACTS, 'notes-panel.png') });
    await p2.close();
  });

  it('shows a note\'s text as text: an <img onerror> note draws no image and runs nothing', async () => {
    const known = (await api(`/api/traces/${traceId}/search?q=KnownSlice`)).body.slices[0];
    await page.goto(`${server.url}/?trace=${traceId}&slice=${known.id}`);
    await waitIdle(page);
    await page.locator('button.add-slice-note').click();
    const form = page.locator('.notes-panel form.note-compose');
    await form.waitFor();
    assert.equal(await form.locator('input[name=author]').count(), 0, 'the name is remembered');
    assert.match(await form.locator('.note-as').textContent(), /as ana/);
    await form.locator('textarea').fill(XSS);
    await form.locator('button.save-note').click();
    await until('the note is saved', async () => (await notesOnServer()).length === 2);
    await waitIdle(page);
    const n = (await notesOnServer()).find((x) => x.kind === 'slice');
    assert.equal(n.slice_id, known.id);
    assert.equal(n.text, XSS);
    // a second viewer reads it
    const p2 = watch(await other.context.newPage());
    await p2.goto(`${server.url}/?trace=${traceId}&notes=1`);
    await waitIdle(p2);
    const text = p2.locator(`.notes-panel .note-item[data-id="${n.id}"] .note-text`);
    await text.waitFor();
    assert.equal(await text.textContent(), XSS);
    assert.equal(await p2.locator('img').count(), 0, 'no img element');
    await p2.locator(`.notes-panel .note-item[data-id="${n.id}"] .note-where`, { hasText: /^KnownSlice · / }).waitFor();
    await p2.close();
    await page.screenshot({ path: path.join(E2E_ARTIFACTS, 'notes-slice.png') });
    assert.equal(await page.locator('img').count(), 0);
    assert.deepEqual(dialogs, [], 'no alert');
    assert.deepEqual(pageErrors, []);
  });

  it('opens the trace at a note from ?note=ID: its range in view, the panel open with it picked', async () => {
    const notes = await notesOnServer();
    const range = notes.find((x) => x.kind === 'range');
    await page.goto(`${server.url}/?trace=${traceId}&note=${range.id}`);
    await waitIdle(page);
    const item = page.locator(`.notes-panel .note-item.current[data-id="${range.id}"]`);
    await item.waitFor();
    let st = await page.evaluate(() => window.__viewer.state());
    assert.ok(st.start <= range.start_ns && st.end >= range.end_ns && st.end - st.start < 3 * (range.end_ns - range.start_ns),
      `the view shows the note's range: ${st.start} ${st.end}`);
    // a slice note selects its slice
    const slice = notes.find((x) => x.kind === 'slice');
    await page.goto(`${server.url}/?trace=${traceId}&note=${slice.id}`);
    await waitIdle(page);
    await page.locator(`.notes-panel .note-item.current[data-id="${slice.id}"]`).waitFor();
    st = await page.evaluate(() => window.__viewer.state());
    assert.deepEqual(st.selection, { kind: 'slice', id: slice.slice_id });
    assert.ok(st.start <= slice.start_ns && st.end >= slice.end_ns);
  });

  it('writes a note on the whole trace, edits it and deletes it from the panel', async () => {
    await page.goto(`${server.url}/?trace=${traceId}`);
    await waitIdle(page);
    await page.locator('button.notes-toggle').click();
    await page.locator('.notes-panel button.add-trace-note').click();
    const form = page.locator('.notes-panel form.note-compose');
    await form.locator('textarea').fill('first look: nothing odd');
    await form.locator('button.save-note').click();
    await until('the note is saved', async () => (await notesOnServer()).some((x) => x.kind === 'trace'));
    await waitIdle(page);
    const n = (await notesOnServer()).find((x) => x.kind === 'trace');
    assert.equal(n.author, 'ana');
    assert.equal((await page.evaluate(() => window.__viewer.noteFlags())).length, 2, 'no flag for a whole-trace note');
    const item = page.locator(`.notes-panel .note-item[data-id="${n.id}"]`);
    assert.equal(await page.locator('.notes-panel .note-item').first().getAttribute('data-id'), String(n.id), 'whole-trace notes first');
    await item.locator('button.edit-note').click();
    await item.locator('textarea').fill('second look: the GC');
    await item.locator('button.save-edit').click();
    await until('the edit is saved', async () => (await api(`/api/notes/${n.id}`)).body.text === 'second look: the GC');
    await page.locator(`.notes-panel .note-item[data-id="${n.id}"] .note-text`, { hasText: 'second look: the GC' }).waitFor();
    assert.match(await page.locator(`.notes-panel .note-item[data-id="${n.id}"] .note-meta`).textContent(), /\(edited\)/);
    await page.locator(`.notes-panel .note-item[data-id="${n.id}"] button.delete-note`).click();
    await page.locator(`.notes-panel .note-item[data-id="${n.id}"] button.confirm-delete`).click();
    await until('the note is deleted', async () => (await api(`/api/notes/${n.id}`)).status === 404);
    await page.locator(`.notes-panel .note-item[data-id="${n.id}"]`).waitFor({ state: 'detached' });
    assert.equal(await page.locator('button.notes-toggle').textContent(), '✎ 2');
  });

  it('the library counts each trace\'s notes and finds a trace by a note\'s text', async () => {
    await page.goto(server.url + '/');
    const count = page.locator(`table.traces tr[data-id="${traceId}"] .note-count`);
    await count.waitFor();
    assert.equal(await count.textContent(), '✎ 2');
    // "stall" is only in a note: the server's q finds it, and the list shows what the server found
    await page.fill('input.filter', 'stall');
    await page.waitForFunction(() => /filter=stall/.test(location.search));
    await page.locator(`table.traces tr[data-id="${traceId}"]`).waitFor();
    await page.waitForFunction(() => /1 trace matches/.test(document.querySelector('.empty').textContent));
  });
});
