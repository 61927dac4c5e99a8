/**
 * The web console's browser kit for `console.e2e.test.ts`: Debian's chromium launched headless by
 * playwright-core, and the page helpers its tests share — an axe-core check with a screenshot, and
 * keyboard navigation and form helpers for the console's Mantine components.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Debian's chromium (`.ci/run` installs it; no browser download here). */
export const CHROMIUM = '/usr/bin/chromium';
/** Whether chromium is here (CI must have it: `.ci/run` installs Debian's package). */
export const haveBrowser = fs.existsSync(CHROMIUM);
if (!haveBrowser && process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run installs Debian's chromium`);
/** Where screenshots (`console-<name>.png`) and the tests' files go. */
export const SHOTS = path.resolve(import.meta.dirname, '../../test-results');

/** Launch chromium headless with the flags this machine needs (no sandbox, GPU, first run or background traffic). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
}

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * The helpers of one console page. `page()` gives the current page (set once the browser is up);
 * `creds` are the user's, for the tenant's sign-in form.
 */
export function consoleUi(page: () => Page, creds: { email: string; password: string }) {
  /** axe-core in the page: no moderate, serious or critical violation; then a screenshot `console-<name>.png`. */
  async function check(name: string): Promise<void> {
    const p = page();
    // Evaluated over the DevTools protocol: the console's CSP (script-src 'self') refuses inline tags, as it should. Once per document.
    if (!(await p.evaluate(() => 'axe' in window))) await p.evaluate(axeSource);
    const violations = await p.evaluate(async () => {
      const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
      return r.violations
        .filter((v: any) => ['moderate', 'serious', 'critical'].includes(v.impact))
        .map(
          (v: any) =>
            `${v.id}: ${v.help} (${v.nodes
              .slice(0, 3)
              .map((n: any) => `${n.target.join(' ')}: ${n.any?.[0]?.message ?? ''}`)
              .join('; ')})`,
        );
    });
    // No hover highlight where the last click was (the pointer goes first: scrolling under it would hover what comes beneath).
    await p.mouse.move(0, 0);
    // From the top: a full-page shot draws the fixed header where the page is scrolled to.
    await p.evaluate(() => window.scrollTo(0, 0));
    await p.screenshot({ path: path.join(SHOTS, `console-${name}.png`), fullPage: true });
    expect(violations, `accessibility of ${name}`).toEqual([]);
  }

  /** Go to a page of the console with the keyboard (focus its link in the navigation, Enter). */
  const nav = async (label: string) => {
    await page().getByRole('navigation').getByRole('link', { name: label, exact: true }).focus();
    await page().keyboard.press('Enter');
    await page().getByRole('heading', { level: 2, name: label, exact: true }).waitFor(); // every page's title is its link's
  };
  /**
   * The tenant's sign-in form when it asks (its own session may still be open after a sign-out of the console).
   * `landed` is what shows once signed in: the console's `whoami` by default; a flow that goes on elsewhere right
   * after the sign-in (a connection's consent page) names what it lands on, since the console may be gone before
   * `whoami` is seen.
   */
  const tenantSignIn = async (landed?: Locator) => {
    const p = page();
    const done = landed ?? p.getByTestId('whoami');
    await Promise.race([p.locator('#email').waitFor(), done.waitFor()]);
    if (await p.locator('#email').isVisible()) {
      await p.locator('#email').fill(creds.email);
      await p.locator('#password').fill(creds.password);
      await p.getByRole('button', { name: 'Sign in' }).click();
    }
    await done.waitFor();
  };
  const tab = (name: string) => page().getByRole('tab', { name, exact: true }).click();
  const text = (testId: string) =>
    page()
      .getByTestId(testId)
      .textContent()
      .catch(() => '');
  /** The field labelled exactly `label` (Mantine's comboboxes also label their listbox, which comes later in the page). */
  const field = (label: string) => page().getByLabel(label, { exact: true }).first();
  /** Choose `option` of the Mantine Select labelled `label`. */
  const choose = async (label: string, option: string | RegExp) => {
    await page().getByRole('combobox', { name: label, exact: true }).click();
    await page().getByRole('option', { name: option }).first().click();
  };
  /** Close a drawer (Escape) and wait for it to go. */
  const closeDrawer = async () => {
    await page().keyboard.press('Escape');
    await page().getByRole('dialog').waitFor({ state: 'detached' });
  };
  return { check, nav, tenantSignIn, tab, text, field, choose, closeDrawer };
}
