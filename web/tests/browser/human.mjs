// A person playing a game whose moves are relative to the way the agent faces (soccer:
// forward and turns): the page says how the arrow keys move the agent, and ↑ moves it
// forward. Started by web/tests/browser.rs, which serves the experiment.
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
  await page.waitForFunction(() => document.querySelector('.viewport[data-op="pitch"]').dataset.steps === '1');
  assert.equal(await card.locator('tr[data-agent="0"] .last').textContent(), 'forward');
  assert.deepEqual(pageErrors, [], 'no script errors on the page');
  log('relative moves are explained; ↑ moved the agent forward');
} finally {
  await close();
}
