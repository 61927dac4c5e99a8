/**
 * OpenAPI 3.0 / 3.1 → tools. Each operation (GET/POST/PUT/PATCH/DELETE) becomes a tool named by
 * its `operationId` (else method + path); its parameters and JSON request body are folded into one
 * object `input_schema`, remembering where each argument goes (path/query/header/body).
 *
 * `$ref`s are resolved by @apidevtools/swagger-parser with external resolution switched off (a
 * `$ref` to a URL must not make the platform fetch it: SSRF); circular references become `{}`.
 * OpenAPI 3.0 schema dialect differences (`nullable`, boolean `exclusiveMinimum`) are converted to
 * JSON Schema 2020-12.
 */
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import { upstreamFetch } from '../../upstream/http.js';
import { toolNameFrom, type ArgLocation, type ManifestProblem, type NormalizedTool } from './manifest.js';
import { oauth2FromSecuritySchemes, type OAuth2Prefill } from './oauth2.js';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** What an OpenAPI document yields. */
export interface OpenApiImport {
  title: string | null;
  description: string | null;
  version: string | null;
  /** `servers[0].url` with variables substituted, resolved against the document URL; null when absent or relative without a document URL. */
  serverUrl: string | null;
  tools: NormalizedTool[];
  warnings: ManifestProblem[];
  errors: ManifestProblem[];
  /** True when the document declares security schemes (the owner should set `auth`). */
  declaresSecurity: boolean;
  /** The document's OAuth 2.0 authorization-code flow (pre-fills `oauth2` auth), or null. */
  oauth2: OAuth2Prefill | null;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Fetch an OpenAPI document through the guarded client (JSON or YAML). Problems point at `/openapi_url`. */
export async function fetchOpenApiDocument(
  ctx: AppContext,
  url: string,
): Promise<{ doc?: Obj; problem?: ManifestProblem }> {
  let res;
  try {
    res = await upstreamFetch(ctx, {
      method: 'GET',
      url,
      headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.1' },
    });
  } catch (err) {
    if (err instanceof AppError && err.code === 'upstream_blocked') throw err;
    return { problem: { pointer: '/openapi_url', message: `could not be fetched: ${(err as Error).message}` } };
  }
  if (res.status !== 200) return { problem: { pointer: '/openapi_url', message: `answered HTTP ${res.status}` } };
  const text = res.body.toString('utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    try {
      // Imported on first use (not at start-up), like SwaggerParser below.
      const { parse: parseYaml } = await import('yaml');
      doc = parseYaml(text, { maxAliasCount: 100 });
    } catch {
      return { problem: { pointer: '/openapi_url', message: 'is neither JSON nor YAML' } };
    }
  }
  if (!isObj(doc)) return { problem: { pointer: '/openapi_url', message: 'does not hold an OpenAPI object' } };
  return { doc };
}

/**
 * Convert an OpenAPI schema object to JSON Schema 2020-12 (deep copy). `is30`: apply the 3.0
 * dialect fixes. Cycles (left by circular `$ref`s) and unresolved `$ref`s become `{}`.
 */
export function toJsonSchema(
  node: unknown,
  is30: boolean,
  ancestors: Set<object> = new Set(),
  unresolved: { count: number } = { count: 0 },
): unknown {
  if (Array.isArray(node)) return node.map((n) => toJsonSchema(n, is30, ancestors, unresolved));
  if (!isObj(node)) return node;
  if (ancestors.has(node)) return {};
  if (typeof node.$ref === 'string') {
    unresolved.count++;
    return {};
  }
  ancestors.add(node);
  const out: Obj = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === 'discriminator' || k === 'xml' || k === 'externalDocs') continue;
    // `properties`, `patternProperties`, `$defs` map names to schemas: keep the names.
    if ((k === 'properties' || k === 'patternProperties' || k === '$defs' || k === 'dependentSchemas') && isObj(v)) {
      out[k] = Object.fromEntries(
        Object.entries(v).map(([name, s]) => [name, toJsonSchema(s, is30, ancestors, unresolved)]),
      );
    } else {
      out[k] = toJsonSchema(v, is30, ancestors, unresolved);
    }
  }
  ancestors.delete(node);
  if (is30) {
    if (out.nullable === true) {
      if (typeof out.type === 'string') out.type = [out.type, 'null'];
      else if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    }
    delete out.nullable;
    if (typeof out.exclusiveMinimum === 'boolean') {
      if (out.exclusiveMinimum && typeof out.minimum === 'number') {
        out.exclusiveMinimum = out.minimum;
        delete out.minimum;
      } else delete out.exclusiveMinimum;
    }
    if (typeof out.exclusiveMaximum === 'boolean') {
      if (out.exclusiveMaximum && typeof out.maximum === 'number') {
        out.exclusiveMaximum = out.maximum;
        delete out.maximum;
      } else delete out.exclusiveMaximum;
    }
    if ('example' in out) {
      out.examples = [out.example];
      delete out.example;
    }
  }
  return out;
}

function serverUrlOf(doc: Obj, docUrl: string | undefined): string | null {
  const servers = Array.isArray(doc.servers) ? doc.servers : [];
  const first = servers[0];
  if (!isObj(first) || typeof first.url !== 'string')
    return docUrl ? new URL('/', docUrl).toString().replace(/\/$/, '') : null;
  let url = first.url;
  if (isObj(first.variables)) {
    for (const [name, v] of Object.entries(first.variables)) {
      if (isObj(v) && typeof v.default === 'string') url = url.replaceAll(`{${name}}`, v.default);
    }
  }
  try {
    return new URL(url, docUrl).toString().replace(/\/$/, '');
  } catch {
    return null;
  }
}

function jsonContent(content: unknown): Obj | null {
  if (!isObj(content)) return null;
  for (const [type, media] of Object.entries(content)) {
    if (/^application\/([\w.+-]+\+)?json\b/i.test(type) && isObj(media)) return media;
  }
  return null;
}

/**
 * Import `doc` (an OpenAPI 3.0/3.1 object; `docUrl` when fetched). Never throws for bad documents:
 * problems come back in `errors` (pointers into the request body under `base`).
 */
export async function importOpenApi(doc: Obj, docUrl: string | undefined, base: string): Promise<OpenApiImport> {
  const out: OpenApiImport = {
    title: null,
    description: null,
    version: null,
    serverUrl: null,
    tools: [],
    warnings: [],
    errors: [],
    declaresSecurity: false,
    oauth2: null,
  };
  const version = typeof doc.openapi === 'string' ? doc.openapi : '';
  if (!/^3\.[01]\.\d+/.test(version)) {
    out.errors.push({
      pointer: `${base}/openapi`,
      message: 'must be an OpenAPI 3.0.x or 3.1.x document (field "openapi")',
    });
    return out;
  }
  const is30 = version.startsWith('3.0');
  const options = {
    resolve: { external: false, file: false, http: false },
    dereference: { circular: 'ignore' as const },
  };
  const { default: SwaggerParser } = await import('@apidevtools/swagger-parser');
  try {
    await SwaggerParser.validate(structuredClone(doc) as never, options as never);
  } catch (err) {
    out.warnings.push({
      pointer: base,
      message: `OpenAPI document does not validate: ${(err as Error).message.slice(0, 500)}`,
    });
  }
  let api: Obj;
  try {
    api = (await SwaggerParser.dereference(structuredClone(doc) as never, options as never)) as unknown as Obj;
  } catch (err) {
    out.errors.push({ pointer: base, message: `cannot be resolved: ${(err as Error).message.slice(0, 500)}` });
    return out;
  }
  const info = isObj(api.info) ? api.info : {};
  out.title = typeof info.title === 'string' ? info.title : null;
  out.description = typeof info.description === 'string' ? info.description : null;
  out.version = typeof info.version === 'string' ? info.version : null;
  out.serverUrl = serverUrlOf(api, docUrl);
  out.declaresSecurity =
    isObj(api.components) &&
    isObj(api.components.securitySchemes) &&
    Object.keys(api.components.securitySchemes).length > 0;
  out.oauth2 = isObj(api.components) ? oauth2FromSecuritySchemes(api.components.securitySchemes) : null;
  const paths = isObj(api.paths) ? api.paths : {};
  const usedNames = new Set<string>();
  const unresolved = { count: 0 };
  for (const [path, item] of Object.entries(paths)) {
    if (!isObj(item)) continue;
    const shared = Array.isArray(item.parameters) ? item.parameters.filter(isObj) : [];
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      const at = `${base}/paths/${path.replaceAll('~', '~0').replaceAll('/', '~1')}/${method}`;
      // Operation parameters override path-item ones with the same name+in.
      const params = new Map<string, Obj>();
      for (const p of [...shared, ...(Array.isArray(op.parameters) ? op.parameters.filter(isObj) : [])])
        params.set(`${String(p.in)}:${String(p.name)}`, p);
      const properties: Obj = {};
      const required: string[] = [];
      const locations: Record<string, ArgLocation> = {};
      for (const p of params.values()) {
        const name = String(p.name);
        const where = String(p.in);
        if (where === 'cookie') {
          out.warnings.push({ pointer: at, message: `cookie parameter "${name}" is not supported and was skipped` });
          continue;
        }
        if (where !== 'path' && where !== 'query' && where !== 'header') continue;
        if (name in properties) {
          out.warnings.push({
            pointer: at,
            message: `parameter "${name}" appears in two locations; the ${where} one was skipped`,
          });
          continue;
        }
        const schema = (toJsonSchema(p.schema ?? jsonContent(p.content)?.schema ?? {}, is30, new Set(), unresolved) ??
          {}) as Obj;
        if (typeof p.description === 'string' && !schema.description) schema.description = p.description;
        properties[name] = schema;
        locations[name] = where;
        if (p.required === true || where === 'path') required.push(name);
      }
      let bodyArgument: string | undefined;
      const body = isObj(op.requestBody) ? op.requestBody : null;
      if (body) {
        const media = jsonContent(body.content);
        if (!media) {
          out.warnings.push({ pointer: `${at}/requestBody`, message: 'has no JSON media type; the body was skipped' });
        } else {
          const schema = (toJsonSchema(media.schema ?? {}, is30, new Set(), unresolved) ?? {}) as Obj;
          const props = isObj(schema.properties) ? schema.properties : null;
          const clash = props ? Object.keys(props).some((k) => k in properties) : false;
          if (props && schema.type !== 'array' && !clash) {
            for (const [k, v] of Object.entries(props)) {
              properties[k] = v;
              locations[k] = 'body';
            }
            if (body.required === true && Array.isArray(schema.required))
              required.push(...schema.required.filter((r): r is string => typeof r === 'string' && r in props));
          } else {
            bodyArgument = 'body' in properties ? 'request_body' : 'body';
            properties[bodyArgument] = schema;
            locations[bodyArgument] = 'body';
            if (body.required === true) required.push(bodyArgument);
          }
        }
      }
      const responses = isObj(op.responses) ? op.responses : {};
      const okResponse = Object.entries(responses).find(([code]) => /^2\d\d$/.test(code))?.[1];
      const okSchema = isObj(okResponse) ? jsonContent(okResponse.content)?.schema : undefined;
      let name = toolNameFrom(typeof op.operationId === 'string' ? op.operationId : `${method}_${path}`);
      for (let n = 2; usedNames.has(name); n++) name = `${name.slice(0, 60)}_${n}`;
      usedNames.add(name);
      const description = [op.summary, op.description]
        .filter((s): s is string => typeof s === 'string' && s.trim() !== '')
        .join('\n\n');
      out.tools.push({
        name,
        description,
        method: method.toUpperCase(),
        path,
        inputSchema: { type: 'object', properties, ...(required.length ? { required: [...new Set(required)] } : {}) },
        outputSchema: isObj(okSchema) ? (toJsonSchema(okSchema, is30, new Set(), unresolved) as Obj) : null,
        argLocations: { locations, ...(bodyArgument ? { bodyArgument } : {}) },
      });
    }
  }
  if (unresolved.count)
    out.warnings.push({
      pointer: base,
      message: `${unresolved.count} external or circular $ref(s) were not followed and accept any value`,
    });
  if (out.tools.length === 0)
    out.errors.push({ pointer: `${base}/paths`, message: 'declares no GET, POST, PUT, PATCH or DELETE operation' });
  return out;
}
