// harness.mjs - what the dashboard's browser tests share: Debian's Chromium started under playwright-core
// with a profile of its own (removed at the end), the page's script and console errors collected, steps
// that print "PASS: step" or "FAIL: step: why" (and take a screenshot), assert, and polling until a
// condition holds.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const TIMEOUT = 15000;

// Starts Chromium (executablePath) headless with a new profile; a Chromium that will not start is a FAIL
// line and exit 1. Returns { context, close }: close() closes it and removes the profile.
export async function launch(executablePath, viewport, timezoneId = 'UTC') {
  const profileDir = mkdtempSync(join(tmpdir(), 'flamed-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath, headless: true, viewport, ...(timezoneId ? { timezoneId } : {}),
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  } catch (e) {
    console.log(`FAIL: ${executablePath} starts under playwright-core: ${String(e.message).split('\n').slice(0, 2).join(' | ').slice(0, 300)}`);
    rmSync(profileDir, { recursive: true, force: true });
    process.exit(1);
  }
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}

// The page's script errors and console errors, as they come.
export function collectErrors(page) {
  const errors = { page: [], console: [] };
  page.on('pageerror', (e) => errors.page.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.console.push(m.text()); });
  return errors;
}

export function assert(cond, why) {
  if (!cond) throw new Error(why);
}

// Steps on page: step(name, shot, fn) runs fn and prints PASS or FAIL with the reason, then, when shot is
// given, saves a screenshot at shotPath(shot); until(fn, why, timeout) polls fn() until it returns a truthy
// value and throws why (with the last value) after the timeout; failed() counts the steps that failed.
export function stepper(page, shotPath) {
  let failed = 0;

  async function step(name, shot, fn) {
    try {
      await fn();
      console.log(`PASS: ${name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL: ${name}: ${String(e && e.message || e).split('\n').slice(0, 4).join(' | ')}`);
    }
    if (shot) {
      try {
        await page.screenshot({ path: shotPath(shot), fullPage: true });
      } catch (e) {
        console.log(`# no screenshot of ${name}: ${e.message}`);
      }
    }
  }

  async function until(fn, why, timeout = TIMEOUT) {
    const end = Date.now() + timeout;
    let last;
    while (Date.now() < end) {
      last = await fn();
      if (last) return last;
      await page.waitForTimeout(100);
    }
    throw new Error(`${why} (last: ${JSON.stringify(last)})`);
  }

  return { step, until, failed: () => failed };
}
