// The runs list in Debian's chromium through Playwright (playwright-core): sorting,
// filtering, the compare view of selected runs or of two operators of one run, the empty
// and error states, and the time a list of many runs takes to appear. Started by
// web/tests/browser.rs, which records the runs and starts one server per runs directory.
import assert from 'node:assert/strict';
import path from 'node:path';
import { launch, need } from './launch.mjs';

const url = need('MOSAIC_URL');
const manyUrl = need('MOSAIC_MANY_URL');
const manyCount = Number(need('MOSAIC_MANY_COUNT'));
const otherStarted = Number(need('MOSAIC_OTHER_STARTED_MS'));
const emptyUrl = need('MOSAIC_EMPTY_URL');
const emptyDir = need('MOSAIC_EMPTY_DIR');
const noDirUrl = need('MOSAIC_NO_DIR_URL');
const artifacts = need('MOSAIC_ARTIFACTS');
const log = (...args) => console.log('[browser]', ...args);

const { page, close } = await launch({ width: 1480, height: 1000 });
const pageErrors = [];
/** The names of the runs shown, top to bottom. */
const shown = () => page.$$eval('#runs-list tr[data-run]', (rows) => rows.map((r) => r.dataset.run));
const shownCount = async (n, timeout) =>
  page.waitForFunction((n) => document.querySelectorAll('#runs-list tr[data-run]').length === n, n, { timeout });
const openRuns = async (address) => {
  await page.goto(address);
  await page.click('.tab[data-tab="runs"]');
};
try {
  page.on('pageerror', (error) => pageErrors.push(error.message));

  // ---- sort -------------------------------------------------------------------------------
  await openRuns(url);
  await shownCount(3);
  const listed = await page.evaluate(async () => (await (await fetch('/api/runs')).json()).runs);
  const started = new Map(listed.map((r) => [r.name, r.started]));
  let order = await shown();
  assert.equal(await page.getAttribute('th[data-sort="started"]', 'aria-sort'), 'descending', 'newest first');
  for (let i = 1; i < order.length; i += 1) {
    assert.ok(started.get(order[i - 1]) >= started.get(order[i]), `newest first: ${order}`);
  }
  await page.click('th[data-sort="experiment"]');
  assert.equal(await page.getAttribute('th[data-sort="experiment"]', 'aria-sort'), 'ascending');
  assert.deepEqual(await shown(), ['run-other', 'run-a', 'run-b'], 'by experiment, then name');
  await page.click('th[data-sort="experiment"]');
  assert.equal(await page.getAttribute('th[data-sort="experiment"]', 'aria-sort'), 'descending');
  assert.equal((await shown())[2], 'run-other', 'by experiment, descending');
  await page.click('th[data-sort="episodes"]');
  assert.equal(await page.getAttribute('th[data-sort="episodes"]', 'aria-sort'), 'descending');

  // ---- filter -----------------------------------------------------------------------------
  await page.fill('#runs-filter', 'walks');
  await shownCount(2);
  assert.match(await page.textContent('#runs-count'), /2 of 3 runs/);
  await page.fill('#runs-filter', 'WALK run-b');
  assert.deepEqual(await shown(), ['run-b'], 'every word matches: environment and run id');
  await page.fill('#runs-filter', '');
  await page.selectOption('#runs-status', 'interrupted');
  await shownCount(0);
  assert.match(await page.textContent('[data-testid="no-match"]'), /No run matches/);
  await page.selectOption('#runs-status', 'complete');
  await shownCount(3);
  await page.selectOption('#runs-status', '');

  // ---- date filter: days in the browser's time zone, both ends included --------------------
  const day = (ms, days = 0) => {
    const d = new Date(ms);
    const shifted = new Date(d.getFullYear(), d.getMonth(), d.getDate() + days);
    const two = (n) => String(n).padStart(2, '0');
    return `${shifted.getFullYear()}-${two(shifted.getMonth() + 1)}-${two(shifted.getDate())}`;
  };
  await page.fill('#runs-from', day(otherStarted, 1));
  await shownCount(2);
  assert.deepEqual((await shown()).sort(), ['run-a', 'run-b'], 'started after run-other\'s day');
  await page.fill('#runs-from', day(otherStarted));
  await page.fill('#runs-to', day(otherStarted));
  await shownCount(1);
  assert.deepEqual(await shown(), ['run-other'], 'that day only, its last second included');
  assert.match(await page.textContent('#runs-count'), /1 of 3 runs/);
  await page.fill('#runs-filter', 'walks');
  await shownCount(0);
  assert.match(await page.textContent('[data-testid="no-match"]'), /No run matches/);
  await page.fill('#runs-filter', '');
  await page.fill('#runs-from', '');
  await page.fill('#runs-to', day(otherStarted, -1));
  await shownCount(0);
  await page.fill('#runs-to', '');
  await shownCount(3);

  // ---- compare two runs -------------------------------------------------------------------
  assert.ok(await page.isDisabled('#runs-compare'), 'nothing selected, nothing to compare');
  await page.check('tr[data-run="run-a"] input[type="checkbox"]');
  await page.check('tr[data-run="run-b"] input[type="checkbox"]');
  assert.ok(await page.isHidden('#run-detail'), 'a checkbox does not open the run');
  assert.match(await page.textContent('#runs-compare'), /Compare selected \(2\)/);
  await page.click('#runs-compare');
  await page.waitForSelector('#compare-table tr[data-compare]');
  const expected = await page.evaluate(async () => (await (await fetch('/api/compare?runs=run-a,run-b')).json()).paired);
  for (const c of expected) {
    const row = page.locator(`#compare-table tr[data-compare="${c.a}|${c.b}|return"]`);
    const d = c.returns.difference;
    const signed = (v) => `${v >= 0 ? '+' : ''}${v.toFixed(3)}`;
    assert.equal(await row.locator('td[data-col="difference"]').textContent(), signed(d.difference.mean), `${c.a} difference`);
    assert.equal(await row.locator('td[data-col="interval"]').textContent(),
      `[${signed(d.difference.low)}, ${signed(d.difference.high)}]`, `${c.a} interval`);
    assert.match(await row.locator('td[data-col="p"]').textContent(), /^(< 0\.001|[01]\.\d{3})$/);
    assert.equal(await row.locator('td[data-col="seeds-needed"]').textContent(),
      d.power.seeds_for_observed == null ? '–' : String(d.power.seeds_for_observed));
  }
  assert.deepEqual(expected.map((c) => c.a), ['run-a:pair', 'run-a:still']);
  for (const selector of ['#runs-list', '#compare']) {
    assert.doesNotMatch(await page.textContent(selector), /null|undefined|NaN/, `${selector} shows no missing value`);
  }
  await page.screenshot({ path: path.join(artifacts, 'runs-compare.png'), fullPage: true });

  // Runs of another experiment: said where the compare view is.
  await page.check('tr[data-run="run-other"] input[type="checkbox"]');
  await page.click('#runs-compare');
  await page.waitForSelector('#compare-error:not([hidden])');
  assert.match(await page.textContent('#compare-error'), /different experiments/);
  assert.equal(await page.locator('#compare-table tr').count(), 0, 'no stale table under the error');

  // ---- two operators of one run -----------------------------------------------------------
  await page.uncheck('tr[data-run="run-other"] input[type="checkbox"]');
  await page.uncheck('tr[data-run="run-b"] input[type="checkbox"]');
  assert.match(await page.textContent('#runs-compare'), /operators of the selected run/);
  await page.click('#runs-compare');
  await page.waitForSelector('#compare-table tr[data-compare="pair|still|return"]');
  await page.selectOption('#compare-a', 'still');
  await page.selectOption('#compare-b', 'pair');
  await page.click('#compare-operators button');
  await page.waitForSelector('#compare-table tr[data-compare="still|pair|return"]');
  assert.ok(await page.isHidden('#compare-error'));

  // Selections survive sorting and filtering; a row click still opens the run.
  await page.click('th[data-sort="name"]');
  assert.ok(await page.isChecked('tr[data-run="run-a"] input[type="checkbox"]'));
  await page.click('tr[data-run="run-b"] td:nth-child(3)');
  await page.waitForSelector('#run-detail:not([hidden])');

  // ---- empty and error states -------------------------------------------------------------
  await openRuns(emptyUrl);
  const empty = await page.waitForSelector('[data-testid="no-runs"]');
  const emptyText = await empty.textContent();
  assert.ok(emptyText.includes(`No runs in ${emptyDir} yet`) && emptyText.includes('mosaic run'), emptyText);
  await openRuns(noDirUrl);
  await page.waitForSelector('#runs-error:not([hidden])');
  assert.match(await page.textContent('#runs-error'), /--runs/);

  // ---- a thousand runs: the time from the click to the table ------------------------------
  await page.goto(manyUrl);
  const clicked = Date.now();
  await page.click('.tab[data-tab="runs"]');
  // Measured, not bounded: a slow machine waits longer.
  await shownCount(manyCount, 300000);
  const listMs = Date.now() - clicked;
  const fetchMs = await page.evaluate(async () => {
    const t = performance.now();
    await (await fetch('/api/runs')).json();
    return performance.now() - t;
  });
  const resorted = Date.now();
  await page.click('th[data-sort="started"]');
  await page.waitForFunction(() => document.querySelector('#runs-list tr[data-run]').dataset.run === 'run-0000');
  const sortMs = Date.now() - resorted;
  const filtered = Date.now();
  await page.fill('#runs-filter', 'sweep-3');
  await shownCount(manyCount / 5);
  const filterMs = Date.now() - filtered;
  // Five runs of one experiment compared: the time from the click to the table.
  const five = (await shown()).slice(0, 5);
  for (const name of five) await page.check(`tr[data-run="${name}"] input[type="checkbox"]`);
  const compared = Date.now();
  await page.click('#runs-compare');
  await page.waitForSelector('#compare-table tr[data-compare]');
  const compareMs = Date.now() - compared;
  for (const name of five.slice(1)) {
    assert.equal(await page.locator(`#compare-table tr[data-compare="${five[0]}:solo|${name}:solo|return"]`).count(), 1, name);
  }
  const renderMs = await page.getAttribute('#runs-list', 'data-render-ms');
  log(`compare view of ${five.length} runs in ${compareMs} ms from the click`);
  log(`${manyCount} runs: listed in ${listMs} ms from the click (laid out in ${renderMs} ms once fetched; /api/runs again: ${Math.round(fetchMs)} ms), re-sorted in ${sortMs} ms, filtered in ${filterMs} ms`);

  assert.deepEqual(pageErrors, [], 'no script errors');
} catch (error) {
  for (const selector of ['#runs-error', '#compare-error']) {
    const text = await page.textContent(selector).catch(() => null);
    if (text) log(`${selector}:`, text);
  }
  await page.screenshot({ path: path.join(artifacts, 'runs-failure.png'), fullPage: true }).catch(() => {});
  throw error;
} finally {
  await close();
}
log('all runs-browser checks passed');
