/**
 * The OpenAPI document passes Redocly's linter with its `recommended` rules (the engine behind
 * `@redocly/cli lint`): every operation declares its security (`[]` on public routes), at least one
 * 4xx answer, and `info.license`. Issue #19 §3; the SDK is generated from this document.
 */
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { describe, expect, it } from 'vitest';
import { setupApp } from '../helpers/app.js';

// A public URL that is neither localhost nor example.com (rule `no-server-example.com`).
const { app } = await setupApp({ PUBLIC_URL: 'https://agents.platform.test' });

describe('GET /openapi.json', () => {
  it('has no problems under Redocly recommended rules', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: res.body, absoluteRef: 'openapi.json', config });
    const lines = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
    expect(lines).toEqual([]);
  });

  it('declares public routes with an empty security list and protected ones with a scheme', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    expect(doc.paths['/auth/login'].post.security).toEqual([]);
    expect(doc.paths['/v1/auth/login'].get.security).toEqual([]);
    expect(doc.paths['/v1/auth/me'].get.security).toEqual([{ bearerAuth: [] }, { apiKey: [] }]);
  });
});
