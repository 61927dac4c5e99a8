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
import { findNul } from '../lib/nul.js';
import { AppError } from './errors.js';

// ajv and ajv-formats are CommonJS; their default export differs between ESM loaders.
type AjvInstance = import('ajv').default;
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as new (opts: object) => AjvInstance;
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: AjvInstance) => void;

function makeAjv(coerce: boolean) {
  const ajv = new Ajv({ coerceTypes: coerce ? 'array' : false, useDefaults: true, removeAdditional: false, allErrors: true, addUsedSchema: false });
  addFormats(ajv);
  return ajv;
}

/**
 * Install the validator compiler on `app` (call before registering routes), and refuse requests
 * whose body, query or path parameters hold U+0000 anywhere (400 `validation_failed` with the
 * pointer): PostgreSQL text cannot store it, and no field of this API needs it.
 */
export function registerValidation(app: FastifyInstance): void {
  app.addHook('preValidation', async (req) => {
    for (const [part, value] of [['body', req.body], ['query', req.query], ['params', req.params]] as const) {
      const pointer = findNul(value);
      if (pointer !== null) {
        throw new AppError('validation_failed', `The request ${part} holds the character U+0000 at "${pointer || '/'}", which this API does not accept`, {
          errors: [{ in: part, pointer: pointer || '', message: 'must not contain U+0000' }],
        });
      }
    }
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
    return stored ?? ajv.compile(schema as object);
  });
}
