/**
 * A tool's `input_schema` (JSON Schema, as registered) reduced to what each model provider's
 * function-calling API accepts. Pure functions, no I/O.
 *
 * - OpenAI strict mode (platform.openai.com "Structured Outputs" → "Supported schemas"): every
 *   object has `additionalProperties: false` and lists every property in `required`; an optional
 *   property becomes nullable instead (`["string","null"]`, `anyOf [... , {type: null}]`); only the
 *   supported keywords stay. A schema that strict mode cannot express (free-form objects,
 *   `allOf`/`not`/`if`, untyped values, nesting deeper than 10) is exported non-strict, as
 *   registered.
 * - Gemini (`FunctionDeclaration.parameters`, the OpenAPI 3.0 Schema subset): upper-case `type`,
 *   `nullable` instead of type arrays, `$ref` inlined, string-only `enum`, no
 *   `additionalProperties`.
 * - Anthropic (`input_schema`): JSON Schema with an `object` root; kept as registered minus the
 *   `$schema`/`$id` markers.
 *
 * The reverse of the nullable optionals — a `null` the model sent for an optional property the
 * registered schema does not allow to be null — is {@link dropModelNulls}, applied before the
 * arguments are validated against the registered schema.
 */

/** A JSON Schema object (the registry stores `input_schema` as one). */
export type JsonSchema = Record<string, unknown>;

const isObject = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords OpenAI strict mode accepts (besides the structural ones handled below). */
const OPENAI_KEPT = [
  'description',
  'enum',
  'const',
  'pattern',
  'multipleOf',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'minItems',
  'maxItems',
];
/** `format` values OpenAI strict mode accepts. */
const OPENAI_FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);
/** Strict mode's nesting limit (objects inside objects). */
const OPENAI_MAX_DEPTH = 10;

class NotStrict extends Error {}

/** The schema without JSON Schema document markers, with an `object` root (what every provider needs at the top). */
export function objectRoot(schema: JsonSchema): JsonSchema {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return { ...rest, type: 'object', properties: isObject(rest.properties) ? rest.properties : {} };
}

/** The types a schema admits, or null when it does not say (`{}`, `$ref`, `anyOf` …). */
function typesOf(s: JsonSchema): string[] | null {
  if (typeof s.type === 'string') return [s.type];
  if (Array.isArray(s.type)) return s.type.filter((t): t is string => typeof t === 'string');
  return null;
}

/** True when `s` accepts JSON `null` as registered (type, enum, const, or a branch of anyOf/oneOf). */
function admitsNull(s: unknown): boolean {
  if (!isObject(s)) return s === true;
  if (typesOf(s)?.includes('null') || s.nullable === true || s.const === null) return true;
  if (Array.isArray(s.enum) && s.enum.includes(null)) return true;
  return [s.anyOf, s.oneOf].some((branches) => Array.isArray(branches) && branches.some(admitsNull));
}

/** `s` made nullable in strict-mode terms. */
function nullable(s: JsonSchema): JsonSchema {
  if (admitsNull(s)) return s;
  if (Array.isArray(s.anyOf)) return { ...s, anyOf: [...s.anyOf, { type: 'null' }] };
  const types = typesOf(s);
  if (!types) return { anyOf: [s, { type: 'null' }] };
  const out: JsonSchema = { ...s, type: [...types, 'null'] };
  if (Array.isArray(s.enum)) out.enum = [...s.enum, null];
  return out;
}

function strictNode(s: unknown, depth: number): JsonSchema {
  if (!isObject(s)) throw new NotStrict();
  if (depth > OPENAI_MAX_DEPTH) throw new NotStrict();
  for (const k of [
    'allOf',
    'not',
    'if',
    'then',
    'else',
    'patternProperties',
    'dependentSchemas',
    'dependentRequired',
    'prefixItems',
  ])
    if (k in s) throw new NotStrict();
  const out: JsonSchema = {};
  for (const k of OPENAI_KEPT) if (k in s) out[k] = s[k];
  if (typeof s.format === 'string' && OPENAI_FORMATS.has(s.format)) out.format = s.format;
  if (typeof s.$ref === 'string') return { ...out, $ref: s.$ref };
  const branches = s.anyOf ?? s.oneOf;
  if (Array.isArray(branches)) return { ...out, anyOf: branches.map((b) => strictNode(b, depth)) };
  const types = typesOf(s);
  if (!types || types.length === 0) {
    if ('enum' in s || 'const' in s) return out;
    throw new NotStrict();
  }
  out.type = types.length === 1 ? types[0] : types;
  if (types.includes('object')) {
    const props = isObject(s.properties) ? s.properties : {};
    // A free-form map (no properties, or extra keys allowed) has no strict-mode equivalent.
    if (Object.keys(props).length === 0 || (s.additionalProperties !== undefined && s.additionalProperties !== false))
      throw new NotStrict();
    const required = new Set(Array.isArray(s.required) ? s.required : []);
    out.properties = Object.fromEntries(
      Object.entries(props).map(([k, v]) => [
        k,
        required.has(k) ? strictNode(v, depth + 1) : nullable(strictNode(v, depth + 1)),
      ]),
    );
    out.required = Object.keys(props);
    out.additionalProperties = false;
  }
  if (types.includes('array')) {
    if (!isObject(s.items)) throw new NotStrict();
    out.items = strictNode(s.items, depth + 1);
  }
  return out;
}

/**
 * The OpenAI function `parameters` of a tool, strict when strict mode can express the schema.
 * @returns `{ parameters, strict }`: with `strict: false`, `parameters` is the registered schema
 *          (object root, no `$schema`/`$id`), which non-strict function calling accepts
 */
export function toOpenAI(schema: JsonSchema): { parameters: JsonSchema; strict: boolean } {
  const root = objectRoot(schema);
  // No arguments: strict mode accepts an empty object that allows nothing else.
  if (
    Object.keys(root.properties as JsonSchema).length === 0 &&
    (root.additionalProperties === undefined || root.additionalProperties === false)
  ) {
    return { parameters: { type: 'object', properties: {}, required: [], additionalProperties: false }, strict: true };
  }
  try {
    const parameters = strictNode(root, 1);
    const defs = (root.$defs ?? root.definitions) as unknown;
    if (isObject(defs)) {
      const key = root.$defs ? '$defs' : 'definitions';
      parameters[key] = Object.fromEntries(Object.entries(defs).map(([k, v]) => [k, strictNode(v, 1)]));
    }
    return { parameters, strict: true };
  } catch (err) {
    if (err instanceof NotStrict) return { parameters: root, strict: false };
    throw err;
  }
}

/** Gemini `Type` names (the `@google/genai` `Type` enum values). */
const GEMINI_TYPES: Record<string, string> = {
  string: 'STRING',
  number: 'NUMBER',
  integer: 'INTEGER',
  boolean: 'BOOLEAN',
  array: 'ARRAY',
  object: 'OBJECT',
};
const GEMINI_KEPT = [
  'description',
  'title',
  'format',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'minProperties',
  'maxProperties',
];
/** How deep `$ref`s are inlined before a recursive schema is cut to a free-form value. */
const GEMINI_MAX_DEPTH = 12;

function resolveRef(ref: string, root: JsonSchema): unknown {
  const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  const defs = m ? root[m[1]] : undefined;
  return m && isObject(defs) ? defs[decodeURIComponent(m[2]).replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
}

function geminiNode(s: unknown, root: JsonSchema, depth: number): JsonSchema {
  if (!isObject(s) || depth > GEMINI_MAX_DEPTH) return {};
  if (typeof s.$ref === 'string')
    return geminiNode(
      { ...(resolveRef(s.$ref, root) as JsonSchema), ...(s.description ? { description: s.description } : {}) },
      root,
      depth + 1,
    );
  const out: JsonSchema = {};
  for (const k of GEMINI_KEPT) if (k in s) out[k] = s[k];
  if (Array.isArray(s.allOf)) {
    // Merge object branches (the common use of allOf); other branches only add constraints the platform checks anyway.
    const merged = s.allOf.map((b) => geminiNode(b, root, depth + 1));
    const props = Object.assign({}, ...merged.map((m) => (isObject(m.properties) ? m.properties : {})));
    const required = merged.flatMap((m) => (Array.isArray(m.required) ? m.required : []));
    return {
      ...out,
      type: 'OBJECT',
      ...(Object.keys(props).length ? { properties: props } : {}),
      ...(required.length ? { required } : {}),
    };
  }
  const branches = s.anyOf ?? s.oneOf;
  if (Array.isArray(branches)) {
    const kept = branches.filter((b) => !(isObject(b) && b.type === 'null'));
    const mapped = kept.map((b) => geminiNode(b, root, depth + 1));
    const base = mapped.length === 1 ? { ...mapped[0], ...out } : { ...out, anyOf: mapped };
    return kept.length < branches.length ? { ...base, nullable: true } : base;
  }
  const types = (typesOf(s) ?? []).filter((t) => t !== 'null');
  if (typesOf(s)?.includes('null')) out.nullable = true;
  const values = Array.isArray(s.enum) ? s.enum : 'const' in s ? [s.const] : null;
  if (values) {
    const strings = values.filter((v): v is string => typeof v === 'string');
    if (strings.length === values.filter((v) => v !== null).length && (types.length === 0 || types[0] === 'string')) {
      if (values.includes(null)) out.nullable = true;
      return { ...out, type: 'STRING', format: 'enum', enum: strings };
    }
    // Gemini enums are strings only: the allowed values go into the description.
    out.description = `${out.description ? `${out.description} ` : ''}One of: ${values.map((v) => JSON.stringify(v)).join(', ')}.`;
  }
  if (types.length > 1)
    return { ...out, anyOf: types.map((t) => geminiNode({ ...s, type: t, nullable: undefined }, root, depth + 1)) };
  if (types.length === 0) return out;
  out.type = GEMINI_TYPES[types[0]] ?? 'STRING';
  if (types[0] === 'object' && isObject(s.properties) && Object.keys(s.properties).length > 0) {
    out.properties = Object.fromEntries(
      Object.entries(s.properties).map(([k, v]) => [k, geminiNode(v, root, depth + 1)]),
    );
    const required = Array.isArray(s.required)
      ? s.required.filter((r) => typeof r === 'string' && r in (s.properties as JsonSchema))
      : [];
    if (required.length) out.required = required;
    out.propertyOrdering = Object.keys(s.properties);
  }
  if (types[0] === 'array') out.items = isObject(s.items) ? geminiNode(s.items, root, depth + 1) : { type: 'STRING' };
  return out;
}

/**
 * The Gemini `FunctionDeclaration.parameters` of a tool (ai.google.dev "Function calling" →
 * OpenAPI schema subset). @returns null when the tool takes no arguments: Gemini refuses an
 * `OBJECT` with no properties, and a declaration without `parameters` is a no-argument function.
 */
export function toGemini(schema: JsonSchema): JsonSchema | null {
  const root = objectRoot(schema);
  if (Object.keys(root.properties as JsonSchema).length === 0) return null;
  return geminiNode(root, root, 0);
}

/**
 * The arguments a model sent, with each `null` removed where the registered schema makes the
 * property optional and does not admit null (strict mode made it nullable; the model's "not
 * given"). Recurses through properties and array items; anything else is returned unchanged.
 */
export function dropModelNulls(
  value: unknown,
  schema: unknown,
  root: JsonSchema = isObject(schema) ? schema : {},
  depth = 0,
): unknown {
  if (!isObject(schema) || depth > 32) return value;
  if (typeof schema.$ref === 'string') return dropModelNulls(value, resolveRef(schema.$ref, root), root, depth + 1);
  if (Array.isArray(value))
    return isObject(schema.items) ? value.map((v) => dropModelNulls(v, schema.items, root, depth + 1)) : value;
  if (!isObject(value) || !isObject(schema.properties)) return value;
  const props = schema.properties;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === null && k in props && !required.has(k) && !admitsNull(props[k])) continue;
    out[k] = k in props ? dropModelNulls(v, props[k], root, depth + 1) : v;
  }
  return out;
}
