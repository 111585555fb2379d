// The runs browser's charts (uPlot) in Debian's chromium through Playwright: a training
// run's curves, and a run's returns per episode, where the legend shows the values under
// the pointer, the smoothing slider changes the drawn series (an exponential moving
// average checked here), a drag zooms in and a double-click zooms out. Started by
// web/tests/browser.rs, which records the runs and starts the server.
import assert from 'node:assert/strict';
import path from 'node:path';
import { launch, need } from './launch.mjs';

const url = need('MOSAIC_URL');
const training = need('MOSAIC_TRAINING_RUN');
const run = need('MOSAIC_RUN');
const artifacts = need('MOSAIC_ARTIFACTS');
const log = (...args) => console.log('[browser]', ...args);

const { page, close } = await launch({ width: 1480, height: 1000 });
const pageErrors = [];
const figure = (id) => `#run-plots figure.chart[data-chart="${id}"]`;
/** Index, data value and legend text of series 1 under the pointer of chart `id`. */
const underPointer = (id) => page.$eval(figure(id), (fig) => {
  const idx = fig.chart.cursor.idx;
  const legend = fig.querySelectorAll('.u-legend .u-series');
  return {
    idx,
    x: idx == null ? null : fig.chart.data[0][idx],
    y: idx == null ? null : fig.chart.data[1][idx],
    xText: legend[0].querySelector('.u-value').textContent,
    yText: legend[1].querySelector('.u-value').textContent,
  };
});
const format = (v) => (v == null ? '–' : Number.isInteger(v) ? String(v) : v.toFixed(3));
/** The TensorBoard-style moving average the slider should draw. */
const smoothed = (values, weight) => {
  let last = 0;
  let seen = 0;
  return values.map((y) => {
    if (y == null) return null;
    last = last * weight + (1 - weight) * y;
    seen += 1;
    return last / (1 - weight ** seen);
  });
};
try {
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(url);
  await page.click('.tab[data-tab="runs"]');
  // ---- a training run's curves ------------------------------------------------------------
  await page.click(`tr[data-run="${training}"]`);
  await page.locator(`${figure('returns')} canvas`).waitFor();
  const curves = await page.evaluate(async (run) => (await fetch(`/api/runs/${run}/charts`)).json(), training);
  const drawn = await page.$$eval('#run-plots figure.chart', (figs) => figs.map((f) => f.dataset.chart));
  assert.deepEqual(drawn, [...curves.training.map((c) => c.id), 'returns', 'distribution']);
  assert.match(await page.textContent('#run-plots'), /Training curves/);
  const meanReturn = await page.$eval(figure('mean_return'), (fig) => fig.raw);
  const expected = curves.training.find((c) => c.id === 'mean_return').series[0].points;
  assert.deepEqual(meanReturn[0], expected.map(([x]) => x), 'x: environment steps');
  assert.deepEqual(meanReturn[1], expected.map(([, y]) => y), 'y: the mean returns');
  await page.screenshot({ path: path.join(artifacts, 'training-curves.png'), fullPage: true });
  log(`training run: ${drawn.length} charts (${drawn.join(', ')})`);

  // ---- a run's returns --------------------------------------------------------------------
  await page.click(`tr[data-run="${run}"]`);
  await page.waitForFunction(() => document.querySelectorAll('#run-plots figure.chart').length === 2);
  const charts = await page.evaluate(async (run) => (await fetch(`/api/runs/${run}/charts`)).json(), run);
  assert.equal(charts.training, null, 'not a training run');

  // ---- hover: the legend shows the values under the pointer -------------------------------
  const over = page.locator(`${figure('returns')} .u-over`);
  const box = await over.boundingBox();
  const at = { x: Math.round(box.width * 0.6), y: Math.round(box.height / 2) };
  await over.hover({ position: at });
  const before = await underPointer('returns');
  assert.ok(before.idx != null, 'a point under the pointer');
  assert.equal(before.xText, format(before.x));
  assert.equal(before.yText, format(before.y));
  const returns = charts.returns[0].points;
  assert.deepEqual([before.x, before.y], returns.find(([x]) => x === before.x), 'the recorded return');

  // ---- smoothing: the slider redraws the series as its moving average ---------------------
  const pixels = () => page.locator(`${figure('returns')} canvas`).screenshot();
  const unsmoothed = await pixels();
  await page.focus(`${figure('returns')} input.smoothing`);
  for (let i = 0; i < 60; i += 1) await page.keyboard.press('ArrowRight');
  const weight = Number(await page.inputValue(`${figure('returns')} input.smoothing`));
  assert.ok(Math.abs(weight - 0.6) < 1e-9, `slider at ${weight}`);
  assert.equal(await page.textContent(`${figure('returns')} .smoothing-value`), '0.60');
  const data = await page.$eval(figure('returns'), (fig) => [fig.raw[1], fig.chart.data[1]]);
  const want = smoothed(data[0], weight);
  data[1].forEach((y, i) => assert.ok(Math.abs(y - want[i]) < 1e-9, `smoothed point ${i}: ${y} vs ${want[i]}`));
  assert.ok(data[1].some((y, i) => Math.abs(y - data[0][i]) > 1e-9), 'smoothing changed the values');
  assert.ok(!(await pixels()).equals(unsmoothed), 'and the drawing');
  await over.hover({ position: at });
  const after = await underPointer('returns');
  assert.equal(after.idx, before.idx);
  assert.equal(after.yText, format(want[after.idx]), 'the legend shows the smoothed value');

  // ---- zoom: drag across, double-click back -----------------------------------------------
  const scale = () => page.$eval(figure('returns'), (fig) => [fig.chart.scales.x.min, fig.chart.scales.x.max]);
  const [min, max] = await scale();
  await page.mouse.move(box.x + box.width * 0.3, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.45, box.y + box.height / 2, { steps: 5 });
  await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  const [zoomMin, zoomMax] = await scale();
  assert.ok(zoomMin > min && zoomMax < max, `zoomed in: [${zoomMin}, ${zoomMax}] within [${min}, ${max}]`);
  await over.dblclick({ position: at });
  assert.deepEqual(await scale(), [min, max], 'zoomed out');

  await page.screenshot({ path: path.join(artifacts, 'charts.png'), fullPage: true });
  log(`returns of ${returns.length} episodes: hover, smoothing ${weight} and zoom checked`);
  assert.deepEqual(pageErrors, [], 'no script errors');
} catch (error) {
  await page.screenshot({ path: path.join(artifacts, 'charts-failure.png'), fullPage: true }).catch(() => {});
  throw error;
} finally {
  await close();
}
log('all chart checks passed');
