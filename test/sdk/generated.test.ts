/**
 * The SDK's committed OpenAPI document and generated types match a fresh generation from the app
 * (`npm run sdk:generate` rewrites them): a route or schema change without regenerating fails here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { GENERATED, generateSdkSources } from '../../scripts/sdk-generate.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('packages/sdk generated sources', () => {
  it('are what `npm run sdk:generate` produces now', async () => {
    const fresh = await generateSdkSources();
    const stale = 'stale: run `npm run sdk:generate` and commit the result';
    expect(
      fs.readFileSync(path.join(ROOT, GENERATED.document), 'utf8') === fresh.document,
      `${GENERATED.document} is ${stale}`,
    ).toBe(true);
    expect(
      fs.readFileSync(path.join(ROOT, GENERATED.types), 'utf8') === fresh.types,
      `${GENERATED.types} is ${stale}`,
    ).toBe(true);
  }, 300_000);
});
