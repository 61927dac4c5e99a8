/**
 * The native manifest (docs/manifest.md): its normalised form shared by all three sources, and
 * validation that lists every problem with a JSON Pointer (RFC 6901) into the request body.
 *
 * Tool `input_schema`s are JSON Schema 2020-12, checked against the meta-schema and compiled with
 * ajv. MCP requires a tool's input schema to describe an object, so `type: "object"` is required.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Static } from 'typebox';
import type { ArgLocation } from '../../upstream/request.js';
import { OAUTH2_FIELDS, checkOAuth2Fields } from './oauth2.js';
import { type AuthInput, RegisterServiceBody } from './schemas.js';

/** One problem found in a manifest: `pointer` into the request body. */
export interface ManifestProblem {
  pointer: string;
  message: string;
}

/** Where a tool argument is placed in the upstream request. */
export type { ArgLocation };

/** A tool in normalised form (any source). `method` is `MCP` and `path` the MCP tool name for MCP tools. */
export interface NormalizedTool {
  name: string;
  description: string;
  method: string;
  path: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown> | null;
  /** OpenAPI tools: argument placement (see the `tools.arg_locations` column); null → default placement. */
  argLocations: { locations: Record<string, ArgLocation>; bodyArgument?: string } | null;
  /** MCP tool annotations as listed by the server (part of the pinned definition); absent for HTTP tools. */
  annotations?: Record<string, unknown> | null;
}

/** Upstream auth as registered (secrets in clear; encrypted before storage). */
export type UpstreamAuthInput = Static<typeof AuthInput>;

export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
export const SERVICE_NAME = /^[a-z0-9][a-z0-9-]{1,62}$/;
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** Shared ajv (2020-12) for tool schemas. Not strict: OpenAPI/MCP schemas carry annotations such as `example`. */
const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  a: Ajv2020,
) => Ajv2020;
addFormats(ajv);
/**
 * The registration body's validator, compiled by {@link prepareRegistrationCheck} after start-up
 * or by the first registration, not at module load (with the 2020-12 meta-schema it
 * pulls in, ~0.2 s of the main thread before the first request could be answered).
 */
let checkBody: ValidateFunction | undefined;

/** Compile the registration body's validator now if it is not yet (the app's `warm`, after listening). */
export function prepareRegistrationCheck(): ValidateFunction {
  return (checkBody ??= ajv.compile(RegisterServiceBody as object));
}

function esc(segment: string | number): string {
  return String(segment).replaceAll('~', '~0').replaceAll('/', '~1');
}

/** JSON Pointer from segments. */
export function pointer(...segments: Array<string | number>): string {
  return segments.map((s) => `/${esc(s)}`).join('');
}

interface AjvErr {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

function ajvProblems(errors: AjvErr[] | null | undefined, base: string): ManifestProblem[] {
  const out: ManifestProblem[] = [];
  const seen = new Set<string>();
  for (const e of errors ?? []) {
    // anyOf/oneOf branches repeat their children's errors: keep the children only.
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    let p = base + e.instancePath;
    if (e.keyword === 'required' && e.params.missingProperty) p += `/${esc(String(e.params.missingProperty))}`;
    if (e.keyword === 'additionalProperties' && e.params.additionalProperty)
      p += `/${esc(String(e.params.additionalProperty))}`;
    let msg = e.message ?? 'is invalid';
    if (e.keyword === 'additionalProperties') msg = 'is not a known field';
    if (e.keyword === 'enum' && Array.isArray(e.params.allowedValues))
      msg = `must be one of ${(e.params.allowedValues as unknown[]).join(', ')}`;
    const key = `${p} ${msg}`;
    if (!seen.has(key)) out.push({ pointer: p || '/', message: msg });
    seen.add(key);
  }
  return out;
}

/** Shape check of the registration body against its JSON Schema (every problem, with pointers). */
export function checkRegistrationShape(body: unknown): ManifestProblem[] {
  const check = prepareRegistrationCheck();
  if (check(body)) return [];
  return ajvProblems(check.errors as AjvErr[], '');
}

/**
 * Check a tool input/output schema: a JSON Schema 2020-12 document that compiles.
 * `requireObject` (input schemas): `type` must be `"object"`. Pointers are prefixed with `base`.
 */
export function checkToolSchema(schema: unknown, base: string, requireObject: boolean): ManifestProblem[] {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    return [{ pointer: base, message: 'must be a JSON Schema object' }];
  const s = schema as Record<string, unknown>;
  const out: ManifestProblem[] = [];
  if (requireObject && s.type !== 'object')
    out.push({ pointer: `${base}/type`, message: 'must be "object" (tool arguments are a JSON object)' });
  if (s.$schema !== undefined && s.$schema !== 'https://json-schema.org/draft/2020-12/schema') {
    out.push({
      pointer: `${base}/$schema`,
      message: 'must be https://json-schema.org/draft/2020-12/schema when present',
    });
    return out;
  }
  if (!ajv.validateSchema(s)) {
    out.push(...ajvProblems(ajv.errors as AjvErr[], base));
    return out;
  }
  try {
    const { $id: _id, ...rest } = s; // a $id would register globally in the shared ajv
    ajv.compile(rest);
  } catch (err) {
    out.push({ pointer: base, message: `does not compile: ${(err as Error).message}` });
  }
  return out;
}

/** `{param}` placeholders of a path template. */
export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]);
}

/**
 * Semantic checks of normalised tools: names (pattern, uniqueness), descriptions, methods, path
 * placeholders declared in the input schema, schemas valid. `base` is the pointer of the tool list.
 * Returns errors and warnings.
 */
export function checkTools(
  tools: NormalizedTool[],
  base: string,
  opts: { requireDescription: boolean },
): { errors: ManifestProblem[]; warnings: ManifestProblem[] } {
  const errors: ManifestProblem[] = [];
  const warnings: ManifestProblem[] = [];
  const seen = new Map<string, number>();
  tools.forEach((t, i) => {
    const at = `${base}/${i}`;
    if (!TOOL_NAME.test(t.name)) errors.push({ pointer: `${at}/name`, message: 'must match ^[a-zA-Z0-9_-]{1,64}$' });
    const prev = seen.get(t.name);
    if (prev !== undefined) errors.push({ pointer: `${at}/name`, message: `duplicates the name of ${base}/${prev}` });
    else seen.set(t.name, i);
    if (!t.description.trim()) {
      (opts.requireDescription ? errors : warnings).push({
        pointer: `${at}/description`,
        message: 'is empty; agents choose tools by their descriptions (publishing requires one)',
      });
    }
    if (t.method !== 'MCP') {
      if (!(HTTP_METHODS as readonly string[]).includes(t.method))
        errors.push({ pointer: `${at}/method`, message: `must be one of ${HTTP_METHODS.join(', ')}` });
      if (!t.path.startsWith('/')) errors.push({ pointer: `${at}/path`, message: 'must start with /' });
      const props = (t.inputSchema.properties ?? {}) as Record<string, unknown>;
      for (const p of pathParams(t.path)) {
        if (!(p in props))
          errors.push({ pointer: `${at}/path`, message: `placeholder {${p}} is not a property of input_schema` });
      }
    }
    errors.push(...checkToolSchema(t.inputSchema, `${at}/input_schema`, true));
    if (t.outputSchema) errors.push(...checkToolSchema(t.outputSchema, `${at}/output_schema`, false));
  });
  return { errors, warnings };
}

/** Problems of an upstream auth block at pointer `base`. */
export function checkAuth(auth: UpstreamAuthInput | undefined, base: string): ManifestProblem[] {
  if (!auth) return [];
  if (auth.type === 'oauth2') return checkOAuth2Fields(auth, base);
  const out: ManifestProblem[] = [];
  for (const f of OAUTH2_FIELDS)
    if (auth[f] !== undefined) out.push({ pointer: `${base}/${f}`, message: 'is only for auth type oauth2' });
  if (auth.type !== 'none' && !auth.secret)
    out.push({ pointer: `${base}/secret`, message: `is required for auth type ${auth.type}` });
  if ((auth.type === 'header' || auth.type === 'query') && !auth.name)
    out.push({ pointer: `${base}/name`, message: `is required for auth type ${auth.type}` });
  if (auth.type === 'header' && auth.name && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(auth.name))
    out.push({ pointer: `${base}/name`, message: 'must be a valid HTTP header name' });
  if (
    auth.type === 'header' &&
    auth.name &&
    ['host', 'content-length', 'transfer-encoding', 'connection'].includes(auth.name.toLowerCase())
  ) {
    out.push({ pointer: `${base}/name`, message: 'cannot be a connection-level header' });
  }
  return out;
}

/** Problems of a base URL (absolute http(s), no credentials, no query/fragment). */
export function checkBaseUrl(raw: string | undefined, at: string): ManifestProblem[] {
  if (raw === undefined) return [{ pointer: at, message: 'is required' }];
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return [{ pointer: at, message: 'must be an absolute URL' }];
  }
  const out: ManifestProblem[] = [];
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    out.push({ pointer: at, message: 'must be an http or https URL' });
  if (u.username || u.password) out.push({ pointer: at, message: 'must not embed credentials (use auth)' });
  if (u.search || u.hash) out.push({ pointer: at, message: 'must not carry a query or fragment' });
  return out;
}

/** A slug for `text` matching {@link SERVICE_NAME}, or null when nothing usable remains. */
export function slugify(text: string): string | null {
  const s = text
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/g, '');
  return SERVICE_NAME.test(s) ? s : null;
}

/** A tool name from arbitrary text (operationId, method+path): invalid characters → `_`, at most 64. */
export function toolNameFrom(text: string): string {
  const s = text
    .replace(/[^a-zA-Z0-9_-]+/g, '_')
    .replace(/_{2,}/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);
  return s || 'tool';
}
