/**
 * The documentation keeps up with the code (`scripts/check-docs.mjs`): every decision record under
 * docs/adr/ is listed in its index, every environment variable of src/config*.ts is documented in
 * docs/configuration.md, and no relative link of README.md or docs/ is broken. The README stays a
 * front door: at most 250 lines, with the two commands a newcomer runs first.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('documentation', () => {
  it('lists every decision record, documents every configuration variable, and has no broken link', async () => {
    const { checkDocs } = (await import(path.join(ROOT, 'scripts/check-docs.mjs'))) as { checkDocs: () => string[] };
    expect(checkDocs(), 'node scripts/check-docs.mjs --fix-index lists missing records').toEqual([]);
  });

  it('keeps the README short, with the two first commands', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    expect(readme).toContain('npm install && npm start');
    expect(readme).toContain('npm install && npm test');
  });
});
