/**
 * Every route's request schemas are valid JSON Schema (draft-07, the dialect of the route
 * validators in `http/validation.ts`). The validators skip Ajv's meta-schema check at start-up
 * (`validateSchema: false`, issue 18), so this test is where a malformed route schema fails.
 * The schemas are read from the OpenAPI document, which carries each route's body, query, path
 * and header schemas (`@fastify/swagger` copies them; shared ones become `components.schemas`).
 */
import AjvModule from 'ajv';
import { describe, expect, it } from 'vitest';
import { setupApp } from '../../helpers/app.js';

type AjvInstance = import('ajv').default;
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as new (opts: object) => AjvInstance;

interface Operation {
  parameters?: Array<{ name: string; in: string; schema?: object }>;
  requestBody?: { content?: Record<string, { schema?: object }> };
}

const { app } = await setupApp();

describe('route schemas', () => {
  it('are valid under the JSON Schema meta-schema', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, Operation>>;
      components?: { schemas?: Record<string, object> };
    };
    const ajv = new Ajv({ strict: false });
    const schemas: Array<[string, object]> = Object.entries(doc.components?.schemas ?? {}).map(([name, s]) => [
      `components.schemas.${name}`,
      s,
    ]);
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const p of op.parameters ?? [])
          if (p.schema) schemas.push([`${method} ${path} ${p.in} ${p.name}`, p.schema]);
        for (const [type, c] of Object.entries(op.requestBody?.content ?? {}))
          if (c.schema) schemas.push([`${method} ${path} body ${type}`, c.schema]);
      }
    }
    // The document covers the API: far more than a handful of request schemas.
    expect(schemas.length).toBeGreaterThan(100);
    const invalid = schemas
      .filter(([, s]) => !ajv.validateSchema(s))
      .map(([where]) => `${where}: ${ajv.errorsText(ajv.errors)}`);
    expect(invalid).toEqual([]);
  });

  it('would catch a malformed schema', () => {
    const ajv = new Ajv({ strict: false });
    expect(ajv.validateSchema({ type: 'object', properties: { n: { type: 'strin' } } })).toBe(false);
    expect(ajv.validateSchema({ type: 'object', required: 'name' })).toBe(false);
  });
});
