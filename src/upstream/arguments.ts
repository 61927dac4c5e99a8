/**
 * Validation of tool arguments against the tool's `input_schema` (JSON Schema 2020-12, ajv).
 *
 * Validators are compiled once and cached, keyed by tool id + a hash of the schema (so an edited
 * schema gets a fresh validator), with a per-object fast path: when the registry hands back the
 * same schema object again, no hashing happens at all.
 */
import { createHash } from 'node:crypto';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { LRUCache } from 'lru-cache';
import { AppError, type FieldError } from '../http/errors.js';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  a: Ajv2020,
) => Ajv2020;

const ajv = new Ajv2020({
  allErrors: true,
  strict: false,
  validateFormats: true,
  useDefaults: false,
  coerceTypes: false,
});
addFormats(ajv);

const byHash = new LRUCache<string, ValidateFunction>({ max: 5000 });
const byObject = new WeakMap<object, { toolId: string; fn: ValidateFunction }>();

/** Compile (or reuse) the validator of a tool. @throws AppError invalid_state when the schema cannot be compiled */
export function validatorFor(toolId: string, schema: Record<string, unknown>): ValidateFunction {
  const hit = byObject.get(schema);
  if (hit && hit.toolId === toolId) return hit.fn;
  const json = JSON.stringify(schema);
  const key = `${toolId}:${createHash('sha1').update(json).digest('base64url')}`;
  let fn = byHash.get(key);
  if (!fn) {
    // `$schema`/`$id` of imported documents (draft-07 OpenAPI, MCP servers) would make ajv look up
    // meta-schemas or register ids globally; the platform validates every tool as 2020-12.
    const { $schema: _s, $id: _i, ...body } = schema;
    try {
      fn = ajv.compile(body);
    } catch (err) {
      throw new AppError(
        'invalid_state',
        `The input schema of this tool cannot be compiled: ${(err as Error).message.slice(0, 200)}`,
      );
    }
    byHash.set(key, fn);
  }
  byObject.set(schema, { toolId, fn });
  return fn;
}

/** ajv errors → field errors with JSON pointers into `arguments`. */
export function argumentErrors(errors: ErrorObject[] | null | undefined): FieldError[] {
  return (errors ?? []).map((e) => {
    let pointer = `/arguments${e.instancePath}`;
    if (e.keyword === 'required' && e.params.missingProperty) pointer += `/${String(e.params.missingProperty)}`;
    if (e.keyword === 'additionalProperties' && e.params.additionalProperty)
      pointer += `/${String(e.params.additionalProperty)}`;
    return { in: 'body' as const, pointer, message: e.message ?? 'is invalid' };
  });
}
