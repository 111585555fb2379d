// The episode viewer in Debian's chromium through Playwright (playwright-core): a recorded
// episode of two language-model agents step by step beside its replayed frames (actions,
// reasoning, scratchpads, messages sent and read), the timeline of their messages (a click
// jumps to the step), an episode without messages, and an environment this server may not
// rebuild (the records without frames). Started by web/tests/browser.rs, which records the
// run and starts the servers.
import assert from 'node:assert/strict';
import path from 'node:path';
import { launch, need } from './launch.mjs';

const url = need('MOSAIC_URL');
const noReplayUrl = need('MOSAIC_NO_REPLAY_URL');
const run = need('MOSAIC_RUN');
const artifacts = need('MOSAIC_ARTIFACTS');
const log = (...args) => console.log('[browser]', ...args);

const { page, close } = await launch({ width: 1480, height: 1000 });
const pageErrors = [];
/** Opens episode `episode` of `operator` from the run's episode table. */
const openEpisode = async (operator, episode) => {
  await page.click(`tr[data-episode="${operator}/${episode}"] .replay-button`);
  await page.waitForFunction((want) => {
    const section = document.querySelector('#replay');
    return !section.hidden && section.dataset.replay === want;
  }, `${run}/${operator}/${episode}`);
};
/** The text of `agent`'s card row `name` (`reasoning`, `message`, ...), or null. */
const cardField = (agent, name) => page.evaluate(([agent, name]) => {
  const card = document.querySelector(`#replay-agents [data-agent="${agent}"]`);
  const dt = [...card.querySelectorAll('dt')].find((d) => d.textContent === name);
  return dt ? dt.nextElementSibling.textContent : null;
}, [agent, name]);
const showsStep = async (step, total) => {
  await page.waitForFunction((k) => {
    const img = document.querySelector('#replay-frame');
    return img.dataset.step === String(k) && img.complete && img.naturalWidth > 0;
  }, step);
  assert.equal(await page.textContent('#replay-step'), `step ${step} / ${total}`);
  assert.equal(await page.inputValue('#scrubber'), String(step));
};
try {
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(url);
  await page.click('.tab[data-tab="runs"]');
  await page.click(`tr[data-run="${run}"]`);
  await page.locator('#run-episodes tr[data-episode]').first().waitFor();

  // ---- an episode of two talking language-model agents -----------------------------------
  await openEpisode('talk', 0);
  const view = await page.evaluate(async (run) =>
    (await fetch(`/api/runs/${run}/episodes/talk/0`)).json(), run);
  await showsStep(0, view.steps);
  assert.equal(await page.locator('#replay-agents .viewer-agent').count(), 2, 'a card per agent');
  const first = view.timeline[0].agents.find((d) => d.agent === 'red');
  assert.equal(await cardField('red', 'reasoning'), first.detail.think);
  assert.equal(await cardField('red', 'scratchpad'), first.scratchpad);
  assert.equal(await cardField('red', 'output'), first.detail.raw);
  assert.equal(await cardField('red', 'action'), 'stay');
  assert.match(await page.textContent('#replay-decided'), /step 0/);

  // The timeline: a mark in the sender's lane and a line per message.
  assert.ok(view.messages.length >= 4, `messages to show: ${view.messages.length}`);
  assert.equal(await page.locator('#viewer-messages .msg-mark').count(), view.messages.length);
  assert.equal(await page.locator('#viewer-messages .msg-item').count(), view.messages.length);
  for (const lane of ['red', 'blue']) {
    assert.equal(await page.locator(`.lane[data-lane="${lane}"] .msg-mark`).count(),
      view.messages.filter((m) => m.from === lane).length, `${lane}'s lane`);
  }
  // A click on a message read at the next step jumps to the step it was sent at.
  const index = view.messages.findIndex((m) => m.step > 0 && m.read_by.length);
  const message = view.messages[index];
  await page.click(`.msg-item[data-message="${index}"]`);
  await showsStep(message.step, view.steps);
  assert.ok(await page.locator(`.msg-item[data-message="${index}"]`).evaluate((n) => n.classList.contains('current')), 'the message is marked');
  const said = await cardField(message.from, 'message');
  assert.ok(said.endsWith(message.text) && said.startsWith(`to ${message.to || 'all (broadcast)'}`), said);
  // The reader shows it at the step it read it.
  const [reading] = message.read_by;
  await page.click('#replay-next');
  await showsStep(message.step + 1, view.steps);
  const heard = await page.textContent(`#replay-agents [data-agent="${reading.agent}"] [data-field="heard"]`);
  assert.ok(heard.includes(`${message.from} → `) && heard.includes(message.text), heard);
  // A mark in the lane jumps too.
  const last = view.messages.length - 1;
  await page.click(`.msg-mark[data-message="${last}"]`);
  await showsStep(view.messages[last].step, view.steps);
  // The last frame: the episode is over.
  await page.focus('#scrubber');
  await page.keyboard.press('End');
  await showsStep(view.steps, view.steps);
  assert.match(await page.textContent('#replay-decided'), /episode is over/);
  await page.click(`.msg-item[data-message="${index}"]`);
  await showsStep(message.step, view.steps);
  const shownText = await page.$$eval('#replay-agents dd, #replay-agents .viewer-agent-head, #viewer-messages, #replay-title',
    (nodes) => nodes.map((n) => n.textContent).join(' | '));
  assert.doesNotMatch(shownText, /null|undefined|NaN|\[object/, 'no missing value shown');
  await page.screenshot({ path: path.join(artifacts, 'episode-viewer.png'), fullPage: true });
  log(`episode talk/0: ${view.steps} steps, ${view.messages.length} messages, a click jumps to the step`);

  // ---- an episode without messages says so -------------------------------------------------
  await openEpisode('quiet', 0);
  assert.match(await page.textContent('[data-testid="no-messages"]'), /none of its agents talks/);
  assert.equal(await page.locator('#viewer-messages .msg-mark').count(), 0, 'no stale marks');
  assert.equal(await cardField('red', 'reasoning'), null, 'a random agent does not reason');

  // ---- a server that may not rebuild the environment shows the records without frames --
  await page.goto(noReplayUrl);
  await page.click('.tab[data-tab="runs"]');
  await page.click(`tr[data-run="${run}"]`);
  await page.locator('#run-episodes tr[data-episode]').first().waitFor();
  await openEpisode('talk', 1);
  assert.ok(await page.isVisible('#replay-noframe'), `the reason is shown: ${await page.textContent('#replay-noframe')}`);
  assert.ok(await page.isHidden('#replay-frame'), 'no frame');
  assert.match(await page.textContent('#replay-noframe'), /No frames: .*not replayable/);
  assert.equal(await page.locator('#replay-agents .viewer-agent').count(), 2);
  assert.ok((await cardField('blue', 'reasoning')).startsWith('weighing move'));
  assert.equal(await page.locator('tr.row-error').count(), 0, 'not an error of the episode');
  log('without the environment: the records, and why there are no frames');

  assert.deepEqual(pageErrors, [], 'no script errors');
} catch (error) {
  await page.screenshot({ path: path.join(artifacts, 'episode-viewer-failure.png'), fullPage: true }).catch(() => {});
  throw error;
} finally {
  await close();
}
log('all episode-viewer checks passed');
