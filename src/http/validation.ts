/**
 * Request validation with two Ajv instances: JSON bodies are validated as sent (no type coercion:
 * `{"name": 7}` for a string field is a 400), while querystring, path parameters and headers —
 * which are always strings on the wire — are coerced to the schema's types (`?limit=10`).
 * Both: all errors reported, defaults applied, unknown properties kept (and refused where a schema
 * says `additionalProperties: false`), formats from ajv-formats.
 */
import AjvModule from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { UNSTORABLE_MESSAGE, findUnstorable } from '../lib/nul.js';
import { AppError } from './errors.js';

// ajv and ajv-formats are CommonJS; their default export differs between ESM loaders.
type AjvInstance = import('ajv').default;
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as new (opts: object) => AjvInstance;
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: AjvInstance,
) => void;

/**
 * One of the two route validators. `validateSchema: false`: route schemas are this code base's
 * own, checked against the meta-schema by `test/platform/server/route-schemas.test.ts` (and by
 * ajv's strict mode when each compiles), not at every start — compiling the meta-schema in both
 * instances was ~50–100 ms of a 2-core machine's start. Schemas that users supply (a
 * tool's `input_schema`) are validated by `upstream/arguments.ts`, which keeps the check.
 */
function makeAjv(coerce: boolean) {
  const ajv = new Ajv({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: true,
    addUsedSchema: false,
    validateSchema: false,
  });
  addFormats(ajv);
  return ajv;
}

/**
 * Install the validator compiler on `app` (call before registering routes), and refuse requests
 * whose body, query or path parameters hold what PostgreSQL cannot store or what nests deeper than
 * MAX_JSON_DEPTH (U+0000, lone surrogates, non-finite numbers; see `lib/nul.ts`): 400
 * `validation_failed` with the pointer. Coerced querystring/params/headers values are checked for
 * non-finite numbers after coercion too (`?limit=1e400` would otherwise pass Ajv as Infinity).
 */
export function registerValidation(app: FastifyInstance): void {
  // A callback hook (no promise and microtask per request).
  app.addHook('preValidation', (req, _reply, done) => {
    done(unstorableIn('body', req.body) ?? unstorableIn('query', req.query) ?? unstorableIn('params', req.params));
  });
  const body = makeAjv(false);
  const parts = makeAjv(true);
  let sharedAdded = false;
  app.setValidatorCompiler(({ schema, httpPart }) => {
    if (!sharedAdded) {
      // Schemas registered with app.addSchema (referenced by `$ref`) are known to both.
      for (const s of Object.values(app.getSchemas()) as object[]) {
        body.addSchema(s);
        parts.addSchema(s);
      }
      sharedAdded = true;
    }
    const ajv = httpPart === 'body' ? body : parts;
    const id = (schema as FastifySchema & { $id?: string }).$id;
    const stored = id ? ajv.getSchema(id) : undefined;
    const validate = stored ?? onFirstUse(() => ajv.compile(schema as object), schema);
    // Coercion turns strings into numbers only where the schema has a number type (the
    // walk of every header, the bearer token included, was ~1 % of an agent-memory GET).
    return httpPart === 'body' || !mayHoldNumber(schema) ? validate : finiteAfterCoercion(validate);
  });
}

/** The 400 for the first unstorable value in one part of the request, or undefined. */
function unstorableIn(part: 'body' | 'query' | 'params', value: unknown): AppError | undefined {
  const hit = findUnstorable(value);
  if (hit === null) return undefined;
  const message = UNSTORABLE_MESSAGE[hit.reason];
  return new AppError('validation_failed', `The request ${part} at "${hit.pointer || '/'}" ${message}`, {
    errors: [{ in: part, pointer: hit.pointer || '', message }],
  });
}

/**
 * Whether validating against `schema` can leave a number in the data: some subschema has type
 * `number` or `integer` (alone or in a type list), or a `$ref` (not followed: assumed so).
 * Strings of query, params and headers were checked before coercion (or come from the HTTP
 * parser, which refuses U+0000 in headers and decodes them as Latin-1: no surrogates), so a schema
 * without numbers needs no walk after coercion.
 */
export function mayHoldNumber(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.some(mayHoldNumber);
  if (schema === null || typeof schema !== 'object') return false;
  const s = schema as Record<string, unknown>;
  const t = s.type;
  if (
    t === 'number' ||
    t === 'integer' ||
    (Array.isArray(t) && (t.includes('number') || t.includes('integer'))) ||
    typeof s.$ref === 'string'
  )
    return true;
  return Object.values(s).some(mayHoldNumber);
}

/**
 * A validator compiled by its first call (Fastify's ready step, mostly compiling every
 * route's request schemas, took ~10 % of a later open; a compile costs a few ms on the route's
 * first request). Same results and `errors` as the compiled function; `schemaEnv` is set so
 * Fastify passes the parent data that Ajv needs to coerce or default a root value, as it does for
 * any Ajv validator.
 */
function onFirstUse(compile: () => Validate, schema: unknown): Validate {
  let fn: Validate | undefined;
  const wrapped = function (this: unknown, data: unknown, dataCtx?: unknown) {
    fn ??= compile();
    const ok = (fn as (this: unknown, d: unknown, c?: unknown) => boolean).call(this, data, dataCtx);
    wrapped.errors = fn.errors;
    return ok;
  } as unknown as Validate;
  Object.defineProperty(wrapped, 'schemaEnv', { get: () => (fn ??= compile()).schemaEnv });
  Object.assign(wrapped, { schema });
  return wrapped;
}

type Validate = ReturnType<AjvInstance['compile']>;

/** `validate`, then refuse any non-finite number its type coercion produced (same error shape as Ajv's). */
function finiteAfterCoercion(validate: Validate): Validate {
  const wrapped = function (this: unknown, data: unknown, dataCtx?: unknown) {
    const ok = (validate as (this: unknown, d: unknown, c?: unknown) => boolean).call(this, data, dataCtx);
    wrapped.errors = validate.errors;
    if (!ok) return false;
    const hit = findUnstorable(data, '', { maxDepth: Infinity });
    if (hit === null) return true;
    wrapped.errors = [
      {
        instancePath: hit.pointer,
        schemaPath: '#',
        keyword: 'type',
        params: {},
        message: UNSTORABLE_MESSAGE[hit.reason],
      },
    ];
    return false;
  } as unknown as Validate;
  // Fastify passes parent data (needed for coercion of a root value) only when `schemaEnv` is present.
  Object.defineProperty(wrapped, 'schemaEnv', { get: () => validate.schemaEnv });
  Object.assign(wrapped, { schema: validate.schema });
  return wrapped;
}
