// Takes the screenshot of manual mode used by the documentation (docs/images/manual-mode.png):
//
//   mosaic serve examples/experiments/manual-mode.toml --bind 127.0.0.1:8080 &
//   eval "$(scripts/setup/browser.sh)"
//   MOSAIC_URL=http://127.0.0.1:8080 node web/tests/browser/docs-screenshot.mjs docs/images/manual-mode.png
//
// It plays a few moves as the human players (soccer: forward; Connect Four: the middle
// column), then leaves the soccer player waiting for the next move.
import { launch, need } from './launch.mjs';

const out = process.argv[2];
if (!out) throw new Error('usage: node docs-screenshot.mjs OUTPUT.png');
const { page, close } = await launch({ width: 1500, height: 940 });
try {
  const token = process.env.MOSAIC_TOKEN;
  await page.goto(`${need('MOSAIC_URL')}/${token ? `?token=${token}` : ''}`);
  await page.waitForFunction(() => [...document.querySelectorAll('.viewport img.frame')].every(
    (img) => img.dataset.version && img.complete));
  const keys = { you_in_green: 'ArrowUp', connect_four: '4' };
  // One Step All: answer every human seat that waits, until every viewport has stepped.
  const counters = () => page.evaluate(() => [...document.querySelectorAll('.viewport')].map(
    (v) => ({ op: v.dataset.op, steps: Number(v.dataset.steps), done: v.dataset.done === 'true', waiting: v.dataset.waiting === 'true' })));
  const stepAll = async () => {
    await page.waitForFunction(() => !document.querySelector('#step-all').disabled);
    const before = await counters();
    await page.click('#step-all');
    for (;;) {
      const now = await counters();
      if (now.every((v, i) => v.done || v.steps > before[i].steps)) return;
      const waiting = now.find((v) => v.waiting);
      if (process.env.DEBUG) console.log(JSON.stringify(now));
      if (waiting) await page.keyboard.press(keys[waiting.op]);
      await page.waitForTimeout(100);
    }
  };
  for (let move = 0; move < 5; move += 1) await stepAll();
  await page.click('#step-all');
  await page.locator('.viewport[data-op="you_in_green"] .waiting').waitFor({ state: 'visible' });
  await page.waitForTimeout(300);
  await page.screenshot({ path: out });
  console.log(`saved ${out}`);
} finally {
  await close();
}
