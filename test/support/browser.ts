// A real browser for the e2e suites: Debian's chromium (installed by `make setup`), driven by playwright-core
// over CDP. Headless, a fresh profile per launch, no sandbox (tests may run as root, where chromium's
// sandbox refuses to start). Suites skip where chromium is not installed (`browserPath()` is undefined).
import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

/** The chromium binary, or undefined where none is installed. */
export function browserPath(): string | undefined {
  const fromEnv = process.env['LEGATE_TEST_CHROMIUM'];
  if (fromEnv) return fromEnv;
  return CANDIDATES.find((p) => fs.existsSync(p));
}

/** Launches headless chromium; close it in afterAll (`browser.close()` ends every process it started). */
export async function launchBrowser(): Promise<Browser> {
  const executablePath = browserPath();
  if (!executablePath) throw new Error('chromium is not installed: run `make setup` (Debian package chromium)');
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-dev-shm-usage',
      '--disable-gpu',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-breakpad',
      '--disable-crash-reporter',
    ],
  });
}
