/**
 * fast-check arbitraries from the JSON Schemas of `/openapi.json` (OpenAPI 3.1 = JSON Schema
 * 2020-12 subset the platform's TypeBox schemas produce): valid values for a schema, and hostile
 * values that break it (wrong types, missing and unknown fields, huge, deep, U+0000, lone
 * surrogates, numbers beyond any column).
 *
 * Supported keywords: type (and type arrays), enum, const, anyOf/oneOf (one branch), allOf
 * (object branches merged), $ref (`#/components/schemas/…` and `Name#`), properties, required,
 * additionalProperties, items, min/maxItems, min/maxLength, pattern, format (date-time, email,
 * uri, uuid), minimum/maximum/exclusive*. Anything else generates any JSON value.
 */
import fc from 'fast-check';

type Schema = Record<string, any>;

/** Resolves `$ref`s against the OpenAPI document's components. */
export class SchemaArbitraries {
  constructor(private readonly doc: { components?: { schemas?: Record<string, Schema> } }) {}

  private deref(s: Schema): Schema {
    let cur = s;
    for (let i = 0; i < 20 && cur && typeof cur.$ref === 'string'; i++) {
      const ref: string = cur.$ref;
      const name = ref.startsWith('#/components/schemas/')
        ? ref.slice('#/components/schemas/'.length)
        : ref.replace(/#$/, '');
      cur = this.doc.components?.schemas?.[name] ?? {};
    }
    return cur ?? {};
  }

  /** Values valid for `schema` (depth-bounded). */
  valid(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
    const s = this.deref(schema ?? {});
    if (depth > 6) return fc.constant(null);
    if ('const' in s) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
    const branches = s.anyOf ?? s.oneOf;
    if (Array.isArray(branches) && branches.length > 0)
      return fc.oneof(...branches.map((b: Schema) => this.valid(b, depth + 1)));
    if (Array.isArray(s.allOf)) return this.valid(this.mergeAll(s.allOf), depth);
    const type = Array.isArray(s.type) ? s.type : s.type ? [s.type] : s.properties ? ['object'] : [];
    if (type.length > 1) return fc.oneof(...type.map((t: string) => this.valid({ ...s, type: t }, depth)));
    switch (type[0]) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return fc.integer(bounds(s));
      case 'number':
        return fc.double({ ...bounds(s), noNaN: true, noDefaultInfinity: true });
      case 'string':
        return this.string(s);
      case 'array':
        return fc.array(this.valid(s.items ?? {}, depth + 1), {
          minLength: s.minItems ?? 0,
          maxLength: Math.min(s.maxItems ?? 3, 3),
        });
      case 'object':
        return this.object(s, depth);
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  }

  private mergeAll(list: Schema[]): Schema {
    const out: Schema = { type: 'object', properties: {}, required: [] };
    for (const b of list.map((x) => this.deref(x))) {
      Object.assign(out.properties, b.properties ?? {});
      out.required.push(...(b.required ?? []));
      if (b.additionalProperties === false) out.additionalProperties = false;
    }
    return out;
  }

  private string(s: Schema): fc.Arbitrary<string> {
    const min = s.minLength ?? 0;
    const max = Math.max(min, Math.min(s.maxLength ?? 24, 24));
    let arb: fc.Arbitrary<string>;
    switch (s.format) {
      case 'date-time':
        return fc
          .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
          .map((d) => d.toISOString());
      case 'email':
        return fc.emailAddress();
      case 'uri':
      case 'url':
        return fc.webUrl();
      case 'uuid':
        return fc.uuid();
      default:
        arb = s.pattern
          ? fc.stringMatching(new RegExp(s.pattern))
          : fc.string({ minLength: min, maxLength: max, unit: 'grapheme' });
    }
    return arb.filter((x) => x.length >= min && x.length <= (s.maxLength ?? Infinity));
  }

  private object(s: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
    const props: Record<string, Schema> = s.properties ?? {};
    const names = Object.keys(props);
    if (names.length === 0) {
      if (s.additionalProperties === false) return fc.constant({});
      const values =
        typeof s.additionalProperties === 'object'
          ? this.valid(s.additionalProperties, depth + 1)
          : fc.jsonValue({ maxDepth: 2 });
      return fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), values, {
        maxKeys: Math.min(s.maxProperties ?? 3, 3),
      });
    }
    const record: Record<string, fc.Arbitrary<unknown>> = {};
    for (const n of names) record[n] = this.valid(props[n], depth + 1);
    return fc.record(record, { requiredKeys: (s.required ?? []).filter((n: string) => n in props) }) as fc.Arbitrary<
      Record<string, unknown>
    >;
  }

  /** Top-level property names of an object schema (after `$ref`/`allOf`). */
  propertiesOf(schema: Schema | undefined): { names: string[]; required: string[] } {
    let s = this.deref(schema ?? {});
    if (Array.isArray(s.allOf)) s = this.mergeAll(s.allOf);
    return { names: Object.keys(s.properties ?? {}), required: s.required ?? [] };
  }
}

function bounds(s: Schema): { min: number; max: number } {
  const lo: number | undefined = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : undefined);
  const hi: number | undefined = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : undefined);
  const min = Math.max(lo ?? Math.min(-1000, hi ?? 0), -1e9);
  const max = Math.min(hi ?? Math.max(1000, min + 1000), 1e9);
  return { min, max };
}

// ------------------------------------------------------------------ hostile values

/** Nesting far beyond any accepted depth (arrays or objects). */
export function deepJson(levels: number, objects: boolean): string {
  return objects ? `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}` : `${'['.repeat(levels)}${']'.repeat(levels)}`;
}

/** Raw JSON texts that are not expressible as JS values (numbers beyond double) or break depth. */
export const HOSTILE_JSON_TEXT = ['1e400', '-1e400', deepJson(5_000, false), deepJson(5_000, true)];

/** Hostile JS values for any field. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    null,
    true,
    0,
    -1,
    -0,
    1e308,
    2 ** 31,
    2 ** 53 + 2,
    -(2 ** 63),
    0.5,
    '',
    'a'.repeat(10_240),
    'nul\u0000byte',
    '\u0000',
    'lone \ud800 high',
    'lone \udfff low',
    '😀'.repeat(2_000),
    '../../../../etc/passwd',
    '%00',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a Log4Shell-style probe, sent literally
    '${jndi:ldap://127.0.0.1/a}',
    "'; DROP TABLE users; --",
    '<script>alert(1)</script>',
    [],
    {},
    { __proto__: { polluted: true } },
    JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}'),
    Array.from({ length: 2_000 }, (_, i) => i),
    Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i])),
  ),
  fc.jsonValue({ maxDepth: 3 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

/** Hostile path-parameter texts (sent URL-encoded, and some raw). */
export const HOSTILE_PATH = [
  '../../../../etc/passwd',
  '..%2F..%2F..%2Fetc%2Fpasswd',
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%',
  '%zz',
  'x'.repeat(10_240),
  '😀',
  ' ',
  '.',
  '..',
  'agt_../../admin',
  "1' OR '1'='1",
  '1e400',
  '-1',
];

/** Hostile query-string values. */
export const HOSTILE_QUERY = [
  '1e400',
  '-1e400',
  '1e308',
  '2147483648',
  '9007199254740993',
  'NaN',
  'Infinity',
  '-1',
  '0',
  '',
  '%00',
  '%ED%A0%80',
  'x'.repeat(10_240),
  '[]',
  '{}',
  'true',
  '../..',
];
