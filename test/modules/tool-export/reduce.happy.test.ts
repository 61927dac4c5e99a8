/**
 * The pure parts of the tool export: function names (provider rules, unique, stable) and the
 * schema reductions per provider, checked against invariants (OpenAI strict: every object closed
 * with every property required) and against ajv: what the model fills in for a reduced schema,
 * after `dropModelNulls`, validates against the registered schema (the execute path's validator).
 */
import { describe, expect, it } from 'vitest';
import { functionName } from '../../../src/modules/tool-export/calls.js';
import { dropModelNulls, toGemini, toOpenAI, type JsonSchema } from '../../../src/modules/tool-export/reduce.js';
import { validatorFor } from '../../../src/upstream/arguments.js';

const NAME = /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/;

/** Every object of a strict schema is closed and requires all of its properties. */
function assertStrict(s: unknown): void {
  if (typeof s !== 'object' || s === null) return;
  const o = s as JsonSchema;
  if (o.properties) {
    expect(o.additionalProperties).toBe(false);
    expect(o.required).toEqual(Object.keys(o.properties as object));
  }
  for (const v of Object.values(o)) (Array.isArray(v) ? v : [v]).forEach(assertStrict);
}

const NESTED: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  title: 'search',
  properties: {
    q: { type: 'string', minLength: 1, default: 'x' },
    when: { type: 'string', format: 'date' },
    limit: { type: 'integer', minimum: 1, maximum: 50 },
    filter: {
      type: 'object',
      properties: { tag: { type: 'string' }, lang: { type: ['string', 'null'] } },
      required: ['tag'],
    },
    sort: { oneOf: [{ const: 'asc' }, { const: 'desc' }] },
    owner: { $ref: '#/$defs/person' },
    items: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' } } } },
  },
  required: ['q'],
  $defs: { person: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
};

describe('functionName', () => {
  it('keeps <service>__<tool> when it is already valid, and is stable', () => {
    expect(functionName('weather', 'get_forecast')).toBe('weather__get_forecast');
    expect(functionName('a-b', 'c')).toBe('a-b__c');
  });

  it('cleans, shortens and suffixes a hash otherwise, keeping distinct tools distinct', () => {
    const names = [
      functionName('weather', 'get.forecast'),
      functionName('weather', 'get_forecast.'),
      functionName('weather', 'get forecast'),
      functionName('9lives', 'x'),
      functionName('s'.repeat(40), `${'t'.repeat(40)}_one`),
      functionName('s'.repeat(40), `${'t'.repeat(40)}_two`),
      functionName('wetter', 'vorhersage_für_morgen'),
    ];
    for (const n of names) expect(n).toMatch(NAME);
    expect(new Set(names).size).toBe(names.length);
    expect(names[0]).toMatch(/^weather__get_forecast_[0-9a-f]{8}$/);
    expect(names[3]).toMatch(/^_9lives__x_/);
    expect(names[4]).toHaveLength(64);
    expect(functionName('weather', 'get.forecast')).toBe(names[0]);
  });
});

describe('toOpenAI', () => {
  it('closes every object, requires every property and makes the optional ones nullable', () => {
    const { parameters, strict } = toOpenAI(NESTED);
    expect(strict).toBe(true);
    assertStrict(parameters);
    const p = parameters.properties as Record<string, JsonSchema>;
    expect(p.q).toEqual({ type: 'string' });
    expect(p.when).toEqual({ type: ['string', 'null'], format: 'date' });
    expect(p.limit).toEqual({ type: ['integer', 'null'], minimum: 1, maximum: 50 });
    expect((p.filter.properties as Record<string, JsonSchema>).lang).toEqual({ type: ['string', 'null'] });
    expect(p.sort).toEqual({ anyOf: [{ const: 'asc' }, { const: 'desc' }, { type: 'null' }] });
    expect(p.owner).toEqual({ anyOf: [{ $ref: '#/$defs/person' }, { type: 'null' }] });
    expect(parameters.$defs).toEqual({
      person: {
        type: 'object',
        properties: { name: { type: 'string' } },
        required: ['name'],
        additionalProperties: false,
      },
    });
    expect(parameters).not.toHaveProperty('$schema');
    expect(parameters).not.toHaveProperty('title');
  });

  it('exports what strict mode cannot express as registered, non-strict', () => {
    for (const schema of [
      { type: 'object', properties: { meta: { type: 'object' } } },
      { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: true },
      { type: 'object', properties: { a: { allOf: [{ type: 'string' }] } } },
      { type: 'object', properties: { a: {} } },
      { type: 'object', properties: { a: { type: 'array' } } },
    ]) {
      const out = toOpenAI(schema);
      expect(out.strict, JSON.stringify(schema)).toBe(false);
      expect(out.parameters).toMatchObject(schema);
    }
    let deep: JsonSchema = { type: 'string' };
    for (let i = 0; i < 11; i++) deep = { type: 'object', properties: { x: deep }, required: ['x'] };
    expect(toOpenAI(deep).strict).toBe(false);
  });

  it('round-trips: the model’s nulls for optionals, dropped, validate against the registered schema', () => {
    // The execute path's own validator of a tool's registered schema.
    const registered = validatorFor('reduce-test:registered', NESTED);
    const strict = validatorFor('reduce-test:strict', toOpenAI(NESTED).parameters);
    const fromModel = {
      q: 'rust',
      when: null,
      limit: null,
      filter: { tag: 'x', lang: null },
      sort: null,
      owner: null,
      items: [{ id: null }],
    };
    expect(strict(fromModel)).toBe(true);
    expect(registered(fromModel)).toBe(false);
    const cleaned = dropModelNulls(fromModel, NESTED);
    // `lang` admits null as registered, so the model's null stays.
    expect(cleaned).toEqual({ q: 'rust', filter: { tag: 'x', lang: null }, items: [{}] });
    expect(registered(cleaned)).toBe(true);
  });
});

describe('toGemini', () => {
  it('writes the OpenAPI subset: upper-case types, nullable, inlined $ref, string enums', () => {
    const g = toGemini(NESTED)!;
    expect(g.type).toBe('OBJECT');
    expect(g.required).toEqual(['q']);
    const p = g.properties as Record<string, JsonSchema>;
    expect(p.q).toEqual({ type: 'STRING', minLength: 1 });
    expect((p.filter.properties as Record<string, JsonSchema>).lang).toEqual({ type: 'STRING', nullable: true });
    expect(p.sort).toEqual({
      anyOf: [
        { type: 'STRING', format: 'enum', enum: ['asc'] },
        { type: 'STRING', format: 'enum', enum: ['desc'] },
      ],
    });
    expect(p.owner).toEqual({
      type: 'OBJECT',
      properties: { name: { type: 'STRING' } },
      required: ['name'],
      propertyOrdering: ['name'],
    });
    expect(p.items).toEqual({
      type: 'ARRAY',
      items: { type: 'OBJECT', properties: { id: { type: 'INTEGER' } }, propertyOrdering: ['id'] },
    });
    expect(JSON.stringify(g)).not.toMatch(/"\$ref"|"\$defs"|additionalProperties|"default"/);
  });

  it('puts non-string enums into the description, stops recursive $refs, and has no parameters without arguments', () => {
    const g = toGemini({
      type: 'object',
      properties: {
        level: { type: 'integer', enum: [1, 2, 3], description: 'Level.' },
        tree: { $ref: '#/$defs/node' },
      },
      $defs: { node: { type: 'object', properties: { child: { $ref: '#/$defs/node' } } } },
    })!;
    const p = g.properties as Record<string, JsonSchema>;
    expect(p.level).toEqual({ type: 'INTEGER', description: 'Level. One of: 1, 2, 3.' });
    expect(JSON.stringify(p.tree).length).toBeLessThan(2000);
    expect(toGemini({ type: 'object' })).toBeNull();
    expect(toGemini({ type: 'object', properties: {} })).toBeNull();
  });
});
