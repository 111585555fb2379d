// Drives mosaic's page in Debian's chromium through Playwright (playwright-core). Started by
// web/tests/browser.rs, which starts the server and writes the expected frames; every
// check failing here fails that test.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { launch, need } from './launch.mjs';

const url = need('MOSAIC_URL');
const token = need('MOSAIC_TOKEN');
const expectedDir = need('MOSAIC_EXPECTED');
const artifacts = need('MOSAIC_ARTIFACTS');
const runName = need('MOSAIC_RUN');
const [replayOperator, replayEpisode] = need('MOSAIC_REPLAY').split('/');
const replaySteps = Number(need('MOSAIC_REPLAY_STEPS'));
const manualRun = need('MOSAIC_MANUAL_RUN');
const playedDir = need('MOSAIC_PLAYED');
const tamperedRun = need('MOSAIC_TAMPERED_RUN');
const abandonedRun = need('MOSAIC_ABANDONED_RUN');
// Above 2^53: a JavaScript number would round it to 18446744073709551616.
const bigSeed = '18446744073709551557';

const expected = (name) => readFileSync(path.join(expectedDir, name));
const log = (...args) => console.log('[browser]', ...args);

const { page, close } = await launch({ width: 1480, height: 1000 });
const pageErrors = [];
try {
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') log('console error:', message.text());
  });

  // Every address the page asks for once logged in (the login itself is a navigation).
  const requested = [];
  page.on('request', (request) => { if (!request.isNavigationRequest()) requested.push(request.url()); });

  // ---- a bad token is refused with a login form ----------------------------------------
  let response = await page.goto(`${url}/?token=not-the-right-token`);
  assert.equal(response.status(), 401, 'a bad token gets 401');
  assert.match(await page.textContent('main'), /not the server's/, 'the login page says the token is wrong');
  response = await page.goto(`${url}/`);
  assert.equal(response.status(), 401, 'no token gets 401');
  assert.match(await page.textContent('h1'), /needs its token/, 'a readable login page, not JSON');
  log('bad token: 401 and a login form');

  // ---- logging in with the form: the page moves to an address without the token -------
  await page.fill('#token', token);
  [response] = await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
  assert.equal(response.status(), 200);
  assert.equal(page.url(), `${url}/`, 'the token leaves the address bar');

  const ops = ['duel', 'mirror', 'turns', 'solo'];
  const viewport = (id) => page.locator(`.viewport[data-op="${id}"]`);
  await page.waitForFunction((ids) => ids.every((id) => {
    const img = document.querySelector(`.viewport[data-op="${id}"] img.frame`);
    return img && img.dataset.version && img.complete && img.naturalWidth > 0;
  }), ops);

  /** The bytes of the frame a viewport shows (fetched again from its image's address). */
  const frameOf = async (selector) => Buffer.from(await page.evaluate(async (sel) => {
    const img = document.querySelector(sel);
    const answer = await fetch(img.src);
    if (!answer.ok) throw new Error(`${img.src}: ${answer.status}`);
    return Array.from(new Uint8Array(await answer.arrayBuffer()));
  }, selector), 'binary');
  const liveFrame = (id) => frameOf(`.viewport[data-op="${id}"] img.frame`);
  const stepCounters = async () => Object.fromEntries(await Promise.all(
    ops.map(async (id) => [id, await viewport(id).getAttribute('data-steps')])));

  // ---- two operators with the same seed show identical first frames --------------------
  const first = expected('first.png');
  assert.ok((await liveFrame('duel')).equals(first), 'duel shows the seed\'s first frame');
  assert.ok((await liveFrame('mirror')).equals(first), 'mirror shows the identical first frame');
  assert.deepEqual(await stepCounters(), { duel: '0', mirror: '0', turns: '0', solo: '0' });
  assert.equal(await viewport('duel').locator('.steps').textContent(), 'step 0 / 40', 'the step limit is shown');
  const badges = await viewport('duel').locator('.badge').allTextContents();
  assert.deepEqual(badges, ['human', 'noop']);
  assert.match(await viewport('turns').locator('.env').textContent(), /AEC/);
  assert.match(await viewport('turns').locator('.turn').textContent(), /turn: red/);
  log('identical first frames, counters at 0');

  // ---- Step All: the baselines step, the human is awaited ------------------------------
  await page.click('#step-all');
  await page.waitForFunction(() => ['mirror', 'turns', 'solo'].every(
    (id) => document.querySelector(`.viewport[data-op="${id}"]`).dataset.steps === '1'));
  await viewport('duel').locator('.waiting').waitFor({ state: 'visible' });
  assert.equal(await viewport('duel').getAttribute('data-steps'), '0', 'the duel waits for its human');
  assert.match(await page.textContent('#live-status'), /Waiting for a human player/);
  assert.equal(await viewport('duel').locator('.waiting .who').textContent(), 'red');
  const offered = await viewport('duel').locator('.waiting button').evaluateAll(
    (buttons) => buttons.map((b) => b.firstChild.textContent));
  assert.ok(offered.includes('right'), `right is offered (${offered})`);
  assert.ok(offered.includes('stay'), `stay is offered (${offered})`);
  assert.ok(await page.isDisabled('#step-all'), 'Step All waits for the step in progress');
  await page.screenshot({ path: path.join(artifacts, 'manual-waiting.png') });
  log('Step All waits for the human; offered:', offered.join(', '));

  // ---- a key press moves the human agent -----------------------------------------------
  const before = await viewport('duel').locator('img.frame').getAttribute('data-version');
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => document.querySelector('.viewport[data-op="duel"]').dataset.steps === '1');
  await page.waitForFunction((v) => document.querySelector('.viewport[data-op="duel"] img.frame').dataset.version !== v, before);
  assert.deepEqual(await stepCounters(), { duel: '1', mirror: '1', turns: '1', solo: '1' },
    'Step All advanced every step counter by exactly one');
  await viewport('duel').locator('.waiting').waitFor({ state: 'hidden' });
  assert.equal(await viewport('duel').locator('tr[data-agent="0"] .last').textContent(), 'right');
  assert.ok((await liveFrame('duel')).equals(expected('after-right.png')), 'the human agent moved right');
  assert.match(await viewport('turns').locator('.turn').textContent(), /turn: blue/, 'AEC: blue moves next');
  assert.equal(await viewport('turns').locator('tr[data-agent="1"] .last').textContent(), '–', 'AEC: blue did not move');
  await page.waitForFunction(() => !document.querySelector('#step-all').disabled);
  log('ArrowRight moved the human agent; every counter at 1');

  // ---- a second Step All, answered with a button ---------------------------------------
  await page.click('#step-all');
  await viewport('duel').locator('.waiting button[data-action="0"]').click();
  await page.waitForFunction((ids) => ids.every((id) => {
    const card = document.querySelector(`.viewport[data-op="${id}"]`);
    return card.dataset.steps === '2' || card.dataset.done === 'true';
  }), ops);
  assert.equal(await viewport('duel').locator('tr[data-agent="0"] .last').textContent(), 'stay');
  await page.screenshot({ path: path.join(artifacts, 'manual.png') });
  log('second Step All answered with the stay button');

  // ---- Run at the slider's pace, a human answering with Space, then Pause --------------
  await page.focus('#pace');
  await page.keyboard.press('Home');
  assert.equal(await page.textContent('#pace-value'), '0 ms');
  const duelSteps = async () => Number(await viewport('duel').getAttribute('data-steps'));
  const startedAt = await duelSteps();
  await page.click('#run-pause');
  await page.waitForFunction(() => document.querySelector('#run-pause').textContent === 'Pause');
  assert.ok(await page.isDisabled('#step-all'), 'no Step All while running');
  for (let k = 1; k <= 3; k += 1) {
    await viewport('duel').locator('.waiting').waitFor({ state: 'visible' });
    await page.keyboard.press(' ');
    await page.waitForFunction(([s]) => Number(document.querySelector('.viewport[data-op="duel"]').dataset.steps) >= s, [startedAt + k]);
  }
  await page.click('#run-pause');
  await page.waitForFunction(() => document.querySelector('#run-pause').textContent === 'Run');
  // Pause stops after the step in progress, which may be waiting for the human: answer
  // until nothing is awaited any more.
  for (let quiet = 0; quiet < 3;) {
    const state = await page.evaluate(async () => (await fetch('/api/live/state')).json());
    if (state.waiting > 0) {
      await page.keyboard.press(' ');
      quiet = 0;
    } else {
      quiet += 1;
    }
    await page.waitForTimeout(150);
  }
  assert.equal(await viewport('duel').locator('tr[data-agent="0"] .last').textContent(), 'stay');
  log(`Run / Pause: the duel went from step ${startedAt} to ${await duelSteps()} with Space`);

  // ---- what was played is recorded into the run the page names -------------------------
  const recordingNote = page.locator('#recording');
  assert.match(await recordingNote.textContent(), new RegExp(`recording to ${manualRun} · 1 episode$`));
  // Every viewport shows the frame of its last step.
  await page.waitForFunction(async () => {
    const state = await (await fetch('/api/live/state')).json();
    return !state.stepping && !state.running && state.waiting === 0 && state.viewports.every((v) => {
      const card = document.querySelector(`.viewport[data-op="${v.id}"]`);
      return card.dataset.steps === String(v.status.steps)
        && card.querySelector('img.frame').dataset.version === String(v.frame);
    });
  }, null, { polling: 100 });
  const played = {};
  for (const id of ops) {
    played[id] = Number(await viewport(id).getAttribute('data-steps'));
    writeFileSync(path.join(playedDir, `live-${id}.png`), await liveFrame(id));
  }
  writeFileSync(path.join(playedDir, 'played.json'), JSON.stringify(played));
  // Reset All with a seed above 2^53: the episodes in progress are recorded as abandoned,
  // a new one begins with exactly that seed.
  await page.fill('#seed', bigSeed);
  await page.click('#reset-all');
  await page.waitForFunction((ids) => ids.every((id) => {
    const card = document.querySelector(`.viewport[data-op="${id}"]`);
    return card.querySelector('.episode').textContent === 'episode 1' && card.dataset.steps === '0';
  }), ops);
  for (const id of ops) {
    assert.equal(await viewport(id).locator('.seed').textContent(), `seed ${bigSeed}`, `${id} shows the exact seed`);
  }
  assert.equal(await page.textContent('#episode-counter'), `Episode 1 · seed ${bigSeed}`);
  log('played and shown:', JSON.stringify(played), `- then Reset All with seed ${bigSeed}`);

  // ---- the runs browser: tables and a replay scrubbed frame by frame -------------------
  await page.click('.tab[data-tab="runs"]');
  await page.click(`tr[data-run="${runName}"]`);
  await page.locator('#run-report table').first().waitFor();
  assert.equal(await page.locator('#run-report section.operator-report').count(), 2, 'one report table per operator');
  assert.equal(await page.locator('#run-report tr[data-group^="agent:"]').count(), 4, 'a row per agent');
  await page.locator('#run-plots figure.chart canvas').nth(1).waitFor();
  assert.equal(await page.locator('#run-plots figure.chart').count(), 2, 'the returns charts');
  await page.click(`tr[data-episode="${replayOperator}/${replayEpisode}"] .replay-button`);
  await page.locator('#replay').waitFor({ state: 'visible' });
  const replayImage = '#replay-frame';
  /** The scrubber is at `step` of `total` and the replay shows `frame`. */
  const showsFrame = async (step, total, frame, what) => {
    await page.waitForFunction((k) => {
      const img = document.querySelector('#replay-frame');
      return img.dataset.step === String(k) && img.complete && img.naturalWidth > 0;
    }, step);
    assert.equal(await page.textContent('#replay-step'), `step ${step} / ${total}`);
    assert.ok((await frameOf(replayImage)).equals(frame), what);
  };
  const showsStep = (step) =>
    showsFrame(step, replaySteps, expected(`replay-${step}.png`), `replay frame ${step}`);
  await showsStep(0);
  // Scrub with the keyboard, like a person would.
  await page.focus('#scrubber');
  await page.keyboard.press('ArrowRight');
  await showsStep(1);
  await page.keyboard.press('ArrowRight');
  await showsStep(2);
  await page.keyboard.press('End');
  await showsStep(replaySteps);
  await page.keyboard.press('Home');
  await showsStep(0);
  const middle = Math.floor(replaySteps / 2);
  for (let k = 0; k < middle; k += 1) await page.keyboard.press('ArrowRight');
  await showsStep(middle);
  assert.ok(!(await frameOf(replayImage)).equals(expected('replay-0.png')), 'frames change along the episode');
  await page.screenshot({ path: path.join(artifacts, 'replay.png'), fullPage: true });
  log(`replay of ${replayOperator} episode ${replayEpisode}: frames 0..${replaySteps} match the record`);

  // ---- a replay that fails says so where it was asked for ------------------------------
  await page.click(`tr[data-run="${tamperedRun}"]`);
  await page.waitForFunction((run) => document.querySelector('#run-detail').dataset.run === run, tamperedRun);
  const tamperedRow = page.locator('tr[data-episode="pair/0"]');
  await tamperedRow.locator('.replay-button').click();
  const rowError = page.locator('tr[data-episode="pair/0"] + tr.row-error');
  await rowError.waitFor({ state: 'visible' });
  assert.match(await rowError.textContent(), /Replay failed: .*does not reproduce/);
  assert.ok(await page.isHidden('#replay'), 'no stale replay stays on show');
  const box = await rowError.boundingBox();
  // (scrolling stops at whole pixels)
  assert.ok(box && box.y >= 0 && box.y + box.height <= 1001, `the error is on screen (${JSON.stringify(box)})`);
  log('a failed replay shows its error under the episode clicked');

  // ---- abandoned episodes: named so, with their partial figures, and no empty plots ----
  await page.click(`tr[data-run="${abandonedRun}"]`);
  await page.waitForFunction((run) => document.querySelector('#run-detail').dataset.run === run, abandonedRun);
  const heading = await page.textContent('#run-report section.operator-report h4');
  assert.match(heading, / 1 episode \(1 abandoned\) /, heading);
  assert.match(heading, /mean length 6\.0 \(partial\)/, heading);
  const operatorMean = await page.textContent('#run-report tr[data-group="operator:pair"] td:nth-child(4)');
  assert.match(operatorMean, /\(partial\)$/, operatorMean);
  // Teams and agents of abandoned episodes get rows with their partial figures too.
  for (const group of ['team:red', 'team:blue', 'agent:red', 'agent:blue']) {
    const mean = await page.textContent(`#run-report tr[data-group="${group}"] td:nth-child(4)`);
    assert.match(mean, /^-?\d+\.\d{3} \(partial\)$/, `${group}: ${mean}`);
  }
  const groups = await page.$$eval('#run-report section.operator-report tbody tr', (rows) => rows.map((r) => r.dataset.group));
  assert.deepEqual(groups, ['operator:pair', 'team:red', 'team:blue', 'agent:red', 'agent:blue'], 'the report\'s order');
  assert.match(await page.textContent('tr[data-episode="pair/0"]'), /abandoned by reset/);
  assert.doesNotMatch(await page.textContent('tr[data-episode="pair/0"]'), /error:/);
  await page.waitForSelector('#run-plots [data-testid="no-plots"]');
  assert.equal(await page.locator('#run-plots figure.chart').count(), 0, 'no empty charts');
  assert.match(await page.textContent('#run-plots'), /Nothing to plot yet/);
  log('abandoned episodes reported with partial figures; no empty plots');

  // ---- the manual run in the runs browser: what was played replays frame by frame ------
  await page.click('.tab[data-tab="live"]');
  await page.click('#recording');
  await page.waitForFunction((run) => {
    const detail = document.querySelector('#run-detail');
    return !detail.hidden && detail.dataset.run === run;
  }, manualRun);
  assert.match(await page.textContent('#run-title'), new RegExp(manualRun));
  assert.equal(await page.locator('#run-report section.operator-report').count(), ops.length, 'one report table per viewport');
  const duelRow = page.locator('tr[data-episode="duel/0"]');
  assert.match(await duelRow.textContent(), /abandoned by reset/);
  await duelRow.locator('.replay-button').click();
  await page.waitForFunction((run) => document.querySelector('#replay').dataset.replay === `${run}/duel/0`, manualRun);
  const duelPlayed = played.duel;
  await showsFrame(0, duelPlayed, first, 'the manual replay starts from the seed\'s first frame');
  await page.focus('#scrubber');
  await page.keyboard.press('ArrowRight');
  await showsFrame(1, duelPlayed, expected('after-right.png'), 'the replay shows the human\'s key press');
  await page.keyboard.press('End');
  await showsFrame(duelPlayed, duelPlayed, readFileSync(path.join(playedDir, 'live-duel.png')),
    'the replay ends on the frame shown when it was played');
  await page.screenshot({ path: path.join(artifacts, 'manual-replay.png'), fullPage: true });
  log(`manual run ${manualRun}: the duel's ${duelPlayed} steps replay as shown`);

  const docsShot = process.env.MOSAIC_DOCS_SCREENSHOT;
  if (docsShot) {
    await page.click('.tab[data-tab="live"]');
    await page.click('#step-all');
    await viewport('duel').locator('.waiting').waitFor({ state: 'visible' });
    await page.screenshot({ path: docsShot });
    log('docs screenshot saved to', docsShot);
  }

  assert.deepEqual(pageErrors, [], 'no script errors on the page');
  const leaking = requested.filter((address) => address.includes('token'));
  assert.deepEqual(leaking, [], 'no address the page used holds the token');
  assert.ok(requested.some((a) => a.includes('/frame')) && requested.some((a) => a.includes('/charts')),
    'frames and charts were loaded');
} catch (error) {
  // What the page said, to tell a failed check from a failed request.
  for (const selector of ['#live-error', '#runs-error']) {
    const text = await page.textContent(selector).catch(() => null);
    if (text) log(`${selector}:`, text);
  }
  await page.screenshot({ path: path.join(artifacts, 'failure.png'), fullPage: true }).catch(() => {});
  throw error;
} finally {
  await close();
}
log('all browser checks passed');
