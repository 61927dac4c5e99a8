/**
 * Requests for the schema-driven fuzzer (test/security/fuzz.test.ts, bench/fuzz.ts): for one
 * OpenAPI operation, fast-check arbitraries of requests built from its own parameter and body
 * schemas, then broken (wrong types, missing and unknown fields, huge and deep values, U+0000,
 * lone surrogates, `../` and `%00` in path ids, 10 KB strings, numbers beyond any column), plus a
 * fixed list of hostile requests every route gets.
 */
import fc from 'fast-check';
import {
  HOSTILE_JSON_TEXT,
  HOSTILE_PATH,
  HOSTILE_QUERY,
  type SchemaArbitraries,
  hostileValue,
} from './schema-arbitrary.js';
import { pathParams, type Operation } from './fixtures.js';

/** One request: URL already encoded; `payload` raw JSON text (may be invalid on purpose). */
export interface FuzzRequest {
  method: string;
  url: string;
  payload?: string;
  what: string;
}

interface Param {
  name: string;
  in: 'path' | 'query' | 'header';
  schema?: Record<string, unknown>;
  required?: boolean;
}

function paramsOf(op: Operation, where: Param['in']): Param[] {
  return ((op.op.parameters ?? []) as Param[]).filter((p) => p.in === where);
}

function jsonBodySchema(op: Operation): Record<string, unknown> | undefined {
  return op.op.requestBody?.content?.['application/json']?.schema;
}

function pathFrom(op: Operation, values: Record<string, string>): string {
  return op.path.replace(/\{(\w+)\}/g, (_, n: string) => values[n] ?? 'x');
}

function queryString(pairs: Array<[string, string]>): string {
  return pairs.length ? `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&')}` : '';
}

/** JSON text of a value; `undefined` (a dropped body) becomes no payload. */
function text(v: unknown): string | undefined {
  return v === undefined ? undefined : JSON.stringify(v);
}

/**
 * Arbitrary requests for `op`. `owned(name)` gives a real id of the fuzzing account for a path
 * parameter (or null), so generated requests also reach handlers past the ownership check.
 */
export function requestArbitrary(
  op: Operation,
  arbs: SchemaArbitraries,
  owned: (name: string) => string | null,
): fc.Arbitrary<FuzzRequest> {
  const names = pathParams(op.path);
  const pathSchemas = Object.fromEntries(paramsOf(op, 'path').map((p) => [p.name, p.schema]));
  const pathArb: fc.Arbitrary<Record<string, string>> = fc.record(
    Object.fromEntries(
      names.map((n) => {
        const real = owned(n);
        const valid = arbs
          .valid(pathSchemas[n] ?? { type: 'string', minLength: 1, maxLength: 30 })
          .map((v) => encodeURIComponent(String(v)));
        const options = [
          { arbitrary: valid, weight: 1 },
          { arbitrary: fc.constantFrom(...HOSTILE_PATH), weight: 1 },
        ];
        if (real) options.push({ arbitrary: fc.constant(encodeURIComponent(real)), weight: 3 });
        return [n, fc.oneof(...options)];
      }),
    ),
  );
  const query = paramsOf(op, 'query');
  const queryArb: fc.Arbitrary<Array<[string, string]>> = fc
    .tuple(
      ...query.map((p) =>
        fc
          .option(
            fc.oneof(
              {
                arbitrary: arbs
                  .valid(p.schema)
                  .map((v) => encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))),
                weight: 3,
              },
              {
                arbitrary: fc.constantFrom(...HOSTILE_QUERY.map((q) => (q.includes('%') ? q : encodeURIComponent(q)))),
                weight: 2,
              },
            ),
            { nil: undefined },
          )
          .map((v): [string, string] | undefined => (v === undefined ? undefined : [p.name, v])),
      ),
      fc.option(fc.constantFrom<[string, string]>(['unknown_param', 'x'], ['limit', '1'], ['__proto__', '1']), {
        nil: undefined,
      }),
    )
    .map((pairs) => pairs.filter((x): x is [string, string] => x !== undefined));
  const schema = jsonBodySchema(op);
  const { names: fields, required } = arbs.propertiesOf(schema);
  const bodyArb: fc.Arbitrary<{ payload?: string; what: string }> = schema
    ? fc.oneof(
        { arbitrary: arbs.valid(schema).map((b) => ({ payload: text(b), what: 'valid body' })), weight: 2 },
        {
          arbitrary: fc
            .tuple(arbs.valid(schema), fc.constantFrom(...(fields.length ? fields : ['x'])), hostileValue)
            .map(([b, f, v]) => ({ payload: text({ ...(b as object), [f]: v }), what: `body field ${f} hostile` })),
          weight: 3,
        },
        {
          arbitrary: fc
            .tuple(
              arbs.valid(schema),
              fc.constantFrom(...(required.length ? required : fields.length ? fields : ['x'])),
            )
            .map(([b, f]) => {
              const copy = { ...(b as Record<string, unknown>) };
              delete copy[f];
              return { payload: text(copy), what: `body without ${f}` };
            }),
          weight: 1,
        },
        {
          arbitrary: fc
            .tuple(arbs.valid(schema), fc.string({ minLength: 1, maxLength: 12 }), hostileValue)
            .map(([b, k, v]) => ({ payload: text({ ...(b as object), [k]: v }), what: 'unknown body field' })),
          weight: 1,
        },
        { arbitrary: hostileValue.map((v) => ({ payload: text(v), what: 'whole body hostile' })), weight: 1 },
        {
          arbitrary: fc.constantFrom(...HOSTILE_JSON_TEXT).map((t) => ({ payload: t, what: 'hostile JSON text' })),
          weight: 1,
        },
      )
    : fc.constant({ what: 'no body' });
  return fc.tuple(pathArb, queryArb, bodyArb).map(([p, q, b]) => ({
    method: op.method,
    url: `${pathFrom(op, p)}${queryString(q)}`,
    payload: b.payload,
    what: b.what,
  }));
}

/** Hostile requests every operation gets, whatever the seed (the inputs of issue #11 §3.3–3.5 among them). */
export function fixedCases(
  op: Operation,
  arbs: SchemaArbitraries,
  owned: (name: string) => string | null,
): FuzzRequest[] {
  const names = pathParams(op.path);
  const realPath = pathFrom(op, Object.fromEntries(names.map((n) => [n, encodeURIComponent(owned(n) ?? 'zzz_0')])));
  const out: FuzzRequest[] = [];
  for (const n of names) {
    for (const bad of ['%00', '..%2F..%2Fetc%2Fpasswd', '%ED%A0%80', 'x'.repeat(10_240)]) {
      out.push({
        method: op.method,
        url: pathFrom(
          op,
          Object.fromEntries(names.map((m) => [m, m === n ? bad : encodeURIComponent(owned(m) ?? 'zzz_0')])),
        ),
        what: `path ${n}=${bad.slice(0, 20)}`,
      });
    }
  }
  for (const p of paramsOf(op, 'query')) {
    for (const bad of ['1e400', '-1e400', '2147483648', '%00', '%ED%A0%80'])
      out.push({ method: op.method, url: `${realPath}?${p.name}=${bad}`, what: `query ${p.name}=${bad}` });
  }
  if (jsonBodySchema(op)) {
    for (const t of [
      ...HOSTILE_JSON_TEXT,
      '"\\u0000"',
      '"\\ud800"',
      '{"a":"\\udfff"}',
      JSON.stringify('x'.repeat(10_240)),
    ])
      out.push({ method: op.method, url: realPath, payload: t, what: `body ${t.slice(0, 12)}` });
    const { names: fields } = arbs.propertiesOf(jsonBodySchema(op));
    for (const f of fields) {
      for (const raw of ['1e400', '1e308', '2147483648', '"\\ud800"', deep(200)])
        out.push({
          method: op.method,
          url: realPath,
          payload: `{"${f}":${raw}}`,
          what: `body ${f}=${raw.slice(0, 12)}`,
        });
    }
  }
  return out;
}

function deep(levels: number): string {
  return `${'['.repeat(levels)}${']'.repeat(levels)}`;
}
