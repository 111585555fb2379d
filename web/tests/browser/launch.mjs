// What the browser scripts share: their settings from the environment, and Debian's
// chromium driven by Playwright (playwright-core) in a throw-away profile.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The environment variable `name`, which must be set. */
export const need = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

/**
 * A headless chromium with a page of `viewport` size; `close()` ends it and removes its
 * profile.
 */
export async function launch(viewport) {
  const require = createRequire(path.join(need('MOSAIC_PLAYWRIGHT_DIR'), 'node_modules', 'index.js'));
  const { chromium } = require('playwright-core');
  const userDataDir = mkdtempSync(path.join(tmpdir(), 'mosaic-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: need('MOSAIC_CHROMIUM'),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(15000);
  const close = async () => {
    await context.close();
    rmSync(userDataDir, { recursive: true, force: true });
  };
  return { page, close };
}
