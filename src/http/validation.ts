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

// ajv and ajv-formats are CommonJS; their default export differs between ESM loaders.
type AjvInstance = import('ajv').default;
const Ajv = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as new (opts: object) => AjvInstance;
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: AjvInstance) => void;

function makeAjv(coerce: boolean) {
  const ajv = new Ajv({ coerceTypes: coerce ? 'array' : false, useDefaults: true, removeAdditional: false, allErrors: true, addUsedSchema: false });
  addFormats(ajv);
  return ajv;
}

/** Install the validator compiler on `app` (call before registering routes). */
export function registerValidation(app: FastifyInstance): void {
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
