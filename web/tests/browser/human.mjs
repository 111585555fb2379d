// A person playing a game whose moves are relative to the way the agent faces (soccer:
// forward and turns): the card names the person's agent and its frame outlines it, the
// page says how the arrow keys move the agent and ↑ moves it forward; with on-screen
// arrows (remembered), → turns an agent facing up to the right, then moves it forward.
// Started by web/tests/browser.rs, which serves the experiment with green_0 facing up.
import assert from 'node:assert/strict';
import { launch, need } from './launch.mjs';

const url = need('MOSAIC_URL');
const log = (...args) => console.log('[human]', ...args);
const { page, close } = await launch({ width: 1280, height: 900 });
const pageErrors = [];
try {
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${url}/`);
  const card = page.locator('.viewport[data-op="pitch"]');
  const stepsAre = (n) => page.waitForFunction(
    (k) => document.querySelector('.viewport[data-op="pitch"]').dataset.steps === String(k), n);
  const lastAction = () => card.locator('tr[data-agent="0"] .last').textContent();
  /** Which way the awaited agent faces, as the server says. */
  const waitingFacing = async () => {
    const state = await (await page.request.get(`${url}/api/live/state`)).json();
    return state.viewports[0].waiting[0].facing;
  };
  await page.waitForFunction(() => document.querySelector('.viewport[data-op="pitch"]')?.dataset.steps === '0');
  assert.equal(await card.locator('.steps').textContent(), 'step 0 / 30', 'the step limit is shown');

  await page.click('#step-all');
  await card.locator('.waiting').waitFor({ state: 'visible' });
  const hint = await card.locator('.waiting .key-hint').textContent();
  assert.match(hint, /relative to the way it faces/, hint);
  assert.match(hint, /↑ forward/, hint);
  const arrowUp = await card.locator('.waiting button[data-action="3"] kbd').textContent();
  assert.equal(arrowUp, '↑', 'the forward button names its key');

  await page.keyboard.press('ArrowUp');
  await stepsAre(1);
  assert.equal(await lastAction(), 'forward');
  log('relative moves are explained; ↑ moved the agent forward');

  // ---- the person's agent: named on the card, outlined on the frame ----------------------
  assert.equal(await card.getAttribute('data-marked'), 'true');
  const legend = (await card.locator('.you').textContent()).replace(/\s+/g, ' ').trim();
  assert.equal(legend, 'you: green_0, outlined in magenta');
  await page.waitForFunction(() => document.querySelector('.viewport[data-op="pitch"] img.frame').dataset.version);
  const outline = await page.evaluate(async () => {
    const shown = document.querySelector('.viewport[data-op="pitch"] img.frame');
    const image = new Image();
    image.src = shown.src;
    await image.decode();
    const canvas = document.createElement('canvas');
    [canvas.width, canvas.height] = [image.naturalWidth, image.naturalHeight];
    const context = canvas.getContext('2d');
    context.drawImage(image, 0, 0);
    const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
    let magenta = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i] === 255 && data[i + 1] === 0 && data[i + 2] === 255) magenta += 1;
    }
    return magenta;
  });
  // One 16-pixel cell framed two pixels thick: rings of 16 and 14 pixels a side.
  assert.equal(outline, 60 + 52, 'the frame outlines the human agent\'s cell, nothing else');
  log('the card names the human agent; its frame outlines the agent in magenta');

  // ---- on-screen arrows: → turns the agent facing up, then moves it forward ---------------
  await page.click('#step-all');
  await card.locator('.waiting').waitFor({ state: 'visible' });
  assert.equal(await waitingFacing(), 'up');
  assert.equal(await card.locator('.waiting button[data-arrows="relative"]').getAttribute('aria-pressed'), 'true');
  await card.locator('.waiting button[data-arrows="screen"]').click();
  await page.waitForFunction(() => document.querySelector('.viewport[data-op="pitch"] .waiting button[data-arrows="screen"]')?.getAttribute('aria-pressed') === 'true');
  assert.match(await card.locator('.waiting .key-hint').textContent(), /on the screen.*it faces ↑/);
  // Facing up: ↑ is forward, → the right turn, ← the left turn.
  const keyOf = (action) => card.locator(`.waiting button[data-action="${action}"] kbd`).textContent();
  assert.deepEqual([await keyOf(3), await keyOf(2), await keyOf(1)], ['↑', '→', '←']);
  await page.keyboard.press('ArrowRight');
  await stepsAre(2);
  assert.equal(await lastAction(), 'right', '→ turned the agent facing up');

  await page.click('#step-all');
  await card.locator('.waiting').waitFor({ state: 'visible' });
  assert.equal(await waitingFacing(), 'right');
  assert.equal(await keyOf(3), '→', 'facing right, → is forward');
  await page.keyboard.press('ArrowRight');
  await stepsAre(3);
  assert.equal(await lastAction(), 'forward', '→ moved the agent facing right');
  log('on-screen arrows: → turned the agent right, then moved it forward');

  // The choice is remembered in this browser.
  await page.reload();
  await page.waitForFunction(() => document.querySelector('.viewport[data-op="pitch"]')?.dataset.steps === '3');
  await page.click('#step-all');
  await card.locator('.waiting').waitFor({ state: 'visible' });
  assert.equal(await card.locator('.waiting button[data-arrows="screen"]').getAttribute('aria-pressed'), 'true');
  await card.locator('.waiting button[data-arrows="relative"]').click();
  await page.waitForFunction(() => document.querySelector('.viewport[data-op="pitch"] .waiting button[data-arrows="relative"]')?.getAttribute('aria-pressed') === 'true');
  assert.equal(await keyOf(3), '↑', 'relative again: ↑ is forward');
  log('the arrow mode is remembered across a reload');
  assert.deepEqual(pageErrors, [], 'no script errors on the page');
} finally {
  await close();
}
