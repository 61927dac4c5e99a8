/**
 * Registering a service (`POST /owner/services`) from a native manifest, an OpenAPI 3.x document or
 * an MCP server, and the source loading and tool replacement that `PATCH` and sync reuse
 * (spec group "Registry"; docs/manifest.md).
 */
import { randomBytes } from 'node:crypto';
import { eq, inArray } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { services, toolAliases, tools } from '../../db/schema/index.js';
import type { Tx } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import { newId, newSecret } from '../../http/ids.js';
import { encryptSecret } from '../../lib/secrets.js';
import { refusedLiteralTarget } from '../../upstream/address.js';
import { mcpListTools } from '../../upstream/mcp.js';
import { applyUpstreamAuth } from '../../upstream/request.js';
import {
  SERVICE_NAME,
  TOOL_NAME,
  checkAuth,
  checkBaseUrl,
  checkRegistrationShape,
  checkTools,
  slugify,
  toolNameFrom,
  type ManifestProblem,
  type NormalizedTool,
  type UpstreamAuthInput,
} from './manifest.js';
import { authColumns, checkOAuth2Complete, prefillOAuth2, type OAuth2Prefill } from './oauth2.js';
import { fetchOpenApiDocument, importOpenApi } from './openapi.js';
import { definitionHash } from './definitions.js';
import { registryChanged, type ExecutableTool, type ServiceSource, type ToolRow } from './executable.js';
import { listServiceTools, serviceView } from './views.js';
import type { Static } from 'typebox';
import type { RegisterServiceBody } from './schemas.js';

// ------------------------------------------------------------------ registration

/** The body of `POST /owner/services` (validated again here: every problem is listed). */
export type RegisterInput = Static<typeof RegisterServiceBody>;

interface Loaded {
  source: ServiceSource;
  sourceUrl: string | null;
  title: string | null;
  description: string | null;
  version: string | null;
  baseUrl: string | null;
  tools: NormalizedTool[];
  warnings: ManifestProblem[];
  errors: ManifestProblem[];
  /** OpenAPI: the document's OAuth 2.0 authorization-code flow, to pre-fill `oauth2` auth. */
  oauth2?: OAuth2Prefill | null;
}

export function fail(errors: ManifestProblem[], what = 'Manifest is invalid'): never {
  const list = errors.slice(0, 200);
  throw new AppError(
    'validation_failed',
    `${what}: ${list
      .map((e) => `${e.pointer} ${e.message}`)
      .join('; ')
      .slice(0, 2000)}`,
    {
      errors: list.map((e) => ({ in: 'body' as const, pointer: e.pointer, message: e.message })),
    },
  );
}

export function fromManifestTools(list: NonNullable<RegisterInput['tools']>): NormalizedTool[] {
  return list.map((t) => ({
    name: t.name,
    description: t.description ?? '',
    method: String(t.method).toUpperCase(),
    path: t.path,
    inputSchema: t.input_schema,
    outputSchema: t.output_schema ?? null,
    argLocations: null,
  }));
}

/** Strip a draft `$schema` from an imported (MCP) input or output schema: it is interpreted as 2020-12; no `type` → an object (MCP requires both to be objects). */
function importedSchema(schema: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!schema || typeof schema !== 'object') return { type: 'object' };
  const { $schema: _ignored, ...rest } = schema;
  return rest.type === undefined ? { type: 'object', ...rest } : rest;
}

/** Read tools from the registration's source (fetching OpenAPI / MCP through the guarded client). */
export async function loadSource(
  ctx: AppContext,
  input: RegisterInput,
  auth: UpstreamAuthInput | undefined,
): Promise<Loaded> {
  const loaded: Loaded = {
    source: 'manifest',
    sourceUrl: null,
    title: null,
    description: null,
    version: null,
    baseUrl: null,
    tools: [],
    warnings: [],
    errors: [],
  };
  if (input.tools) {
    loaded.tools = fromManifestTools(input.tools);
    return loaded;
  }
  if (input.openapi || input.openapi_url) {
    loaded.source = 'openapi';
    let doc = input.openapi;
    if (!doc && input.openapi_url) {
      const urlProblems = checkBaseUrl(input.openapi_url, '/openapi_url');
      if (urlProblems.length) {
        loaded.errors.push(...urlProblems);
        return loaded;
      }
      loaded.sourceUrl = input.openapi_url;
      const fetched = await fetchOpenApiDocument(ctx, input.openapi_url);
      if (fetched.problem) {
        loaded.errors.push(fetched.problem);
        return loaded;
      }
      doc = fetched.doc;
    }
    const imp = await importOpenApi(doc!, loaded.sourceUrl ?? undefined, input.openapi ? '/openapi' : '/openapi_url');
    Object.assign(loaded, {
      title: imp.title,
      description: imp.description,
      version: imp.version,
      baseUrl: imp.serverUrl,
      tools: imp.tools,
    });
    loaded.warnings.push(...imp.warnings);
    loaded.errors.push(...imp.errors);
    loaded.oauth2 = imp.oauth2;
    if (imp.oauth2 && auth?.type !== 'oauth2') {
      loaded.warnings.push({
        pointer: '/auth',
        message:
          'the OpenAPI document declares an OAuth 2.0 authorization-code flow: set auth {"type":"oauth2","client_id","client_secret"} (endpoints and scopes are read from the document) so each caller connects their own account',
      });
    } else if (imp.declaresSecurity && (!auth || auth.type === 'none')) {
      loaded.warnings.push({
        pointer: '/auth',
        message: 'the OpenAPI document declares security schemes but no upstream auth is set',
      });
    }
    return loaded;
  }
  loaded.source = 'mcp';
  const urlProblems = checkBaseUrl(input.mcp_url, '/mcp_url');
  if (urlProblems.length) {
    loaded.errors.push(...urlProblems);
    return loaded;
  }
  loaded.sourceUrl = input.mcp_url!;
  const { url, headers } = applyUpstreamAuth(authForCall(auth), input.mcp_url!);
  let listed;
  try {
    listed = await mcpListTools(ctx, url, { headers });
  } catch (err) {
    if (err instanceof AppError && err.code === 'upstream_blocked') throw err;
    loaded.errors.push({ pointer: '/mcp_url', message: `MCP server could not be listed: ${(err as Error).message}` });
    return loaded;
  }
  loaded.title = listed.serverInfo.name;
  loaded.version = listed.serverInfo.version ?? null;
  loaded.baseUrl = new URL(input.mcp_url!).origin;
  const used = new Set<string>();
  loaded.tools = listed.tools.map((t, i) => {
    let name = TOOL_NAME.test(t.name) ? t.name : toolNameFrom(t.name);
    for (let n = 2; used.has(name); n++) name = `${name.slice(0, 60)}_${n}`;
    used.add(name);
    if (name !== t.name)
      loaded.warnings.push({
        pointer: `/mcp_url`,
        message: `MCP tool ${i} "${t.name.slice(0, 100)}" is listed as "${name}"`,
      });
    return {
      name,
      description: t.description ?? '',
      method: 'MCP',
      path: t.name,
      inputSchema: importedSchema(t.inputSchema),
      outputSchema: t.outputSchema ? importedSchema(t.outputSchema) : null,
      argLocations: null,
      annotations: t.annotations ?? null,
    };
  });
  return loaded;
}

/**
 * A base URL whose host is an IP literal the guarded client would refuse (private, link-local…,
 * loopback without the flag) is rejected at once; host names are checked at call time (after DNS).
 */
export function checkBaseUrlTarget(ctx: AppContext, raw: string, at: string): ManifestProblem[] {
  const refused = refusedLiteralTarget(raw, ctx.config.upstream.allowLoopback);
  return refused
    ? [{ pointer: at, message: `points at a ${refused} address, which upstream calls may not reach` }]
    : [];
}

function authForCall(auth: UpstreamAuthInput | undefined): ExecutableTool['upstreamAuth'] {
  if (!auth || auth.type === 'none' || auth.type === 'oauth2' || !auth.secret) return { type: 'none' };
  return { type: auth.type, name: auth.name, secret: auth.secret };
}

export function toolsBase(source: ServiceSource, input: RegisterInput): string {
  if (source === 'manifest') return '/tools';
  if (source === 'mcp') return '/mcp_url/tools';
  return input.openapi ? '/openapi/tools' : '/openapi_url/tools';
}

async function nameTaken(ctx: AppContext, name: string): Promise<boolean> {
  const [row] = await ctx.db.select({ id: services.id }).from(services).where(eq(services.name, name)).limit(1);
  return !!row;
}

/** A free service name derived from `text` (suffixes `-2`…, then random). */
async function deriveName(ctx: AppContext, text: string): Promise<string> {
  const base = (slugify(text) ?? 'service').slice(0, 56);
  for (const candidate of [base, `${base}-2`, `${base}-3`, `${base}-4`])
    if (!(await nameTaken(ctx, candidate))) return candidate;
  return `${base}-${randomBytes(3).toString('hex')}`;
}

export function newSigningSecret(): string {
  return newSecret('whsec');
}

/**
 * Register a service from exactly one source. Returns the stored service (status `draft`), its
 * tools, warnings and the signing secret (shown this once).
 * @throws AppError validation_failed (every problem with a JSON Pointer), conflict (name taken),
 *         upstream_blocked (openapi_url / mcp_url points at a refused address)
 */
export async function registerService(ctx: AppContext, ownerId: string, input: RegisterInput) {
  const errors = checkRegistrationShape(input);
  const sources =
    typeof input === 'object' && input !== null
      ? (['tools', 'openapi', 'openapi_url', 'mcp_url'] as const).filter((k) => input[k] !== undefined)
      : [];
  if (sources.length !== 1) {
    errors.push({
      pointer: '/',
      message: `exactly one source is required: tools (native manifest), openapi, openapi_url or mcp_url${sources.length ? ` (got ${sources.join(', ')})` : ''}`,
    });
  }
  // A body of the wrong shape cannot be read further: report what is known.
  if (errors.length) fail(errors);
  if (input.name !== undefined && !SERVICE_NAME.test(input.name))
    errors.push({ pointer: '/name', message: 'must match ^[a-z0-9][a-z0-9-]{1,62}$' });
  errors.push(...checkAuth(input.auth, '/auth'));
  if (input.base_url !== undefined) errors.push(...checkBaseUrl(input.base_url, '/base_url'));
  if (input.tools) {
    if (input.name === undefined) errors.push({ pointer: '/name', message: 'is required' });
    if (!input.description?.trim()) errors.push({ pointer: '/description', message: 'is required' });
    if (input.base_url === undefined) errors.push({ pointer: '/base_url', message: 'is required' });
    if (input.tools.length === 0) errors.push({ pointer: '/tools', message: 'must list at least one tool' });
  }
  // Report top-level problems before touching any upstream (a native manifest is checked whole).
  if (errors.length && !input.tools) fail(errors);

  const loaded = await loadSource(ctx, input, input.auth);
  errors.push(...loaded.errors);
  const auth = prefillOAuth2(input.auth, loaded.oauth2 ?? null);
  errors.push(...checkOAuth2Complete(auth, '/auth'));
  const base = toolsBase(loaded.source, input);
  const toolCheck = checkTools(loaded.tools, base, { requireDescription: loaded.source === 'manifest' });
  errors.push(...toolCheck.errors);
  const warnings = [...loaded.warnings, ...toolCheck.warnings];
  const baseUrl = input.base_url ?? loaded.baseUrl;
  if (!baseUrl && loaded.source !== 'manifest' && !loaded.errors.length)
    errors.push({ pointer: '/base_url', message: 'is required (the source gives no absolute server URL)' });
  else if (!input.base_url && baseUrl)
    errors.push(...checkBaseUrl(baseUrl, '/base_url').map((e) => ({ ...e, message: `from the source ${e.message}` })));
  if (baseUrl) errors.push(...checkBaseUrlTarget(ctx, baseUrl, '/base_url'));
  if (loaded.source !== 'manifest' && loaded.tools.length === 0 && !loaded.errors.length)
    errors.push({ pointer: base, message: 'the source lists no tools' });
  if (errors.length) fail(errors);

  const displayName = input.display_name ?? loaded.title ?? input.name ?? 'Service';
  let name = input.name;
  if (name !== undefined) {
    if (await nameTaken(ctx, name))
      throw new AppError('conflict', `Service name "${name}" is taken`, {
        errors: [{ in: 'body', pointer: '/name', message: 'is taken' }],
      });
  } else {
    name = await deriveName(ctx, displayName);
  }
  const signingSecret = newSigningSecret();
  const now = new Date();
  const serviceId = newId('svc');
  const row = await ctx.db.transaction(async (tx) => {
    const [svc] = await tx
      .insert(services)
      .values({
        id: serviceId,
        ownerId,
        name: name!,
        displayName,
        description: input.description ?? loaded.description ?? '',
        baseUrl: baseUrl!.replace(/\/+$/, ''),
        category: input.category ?? null,
        tags: [...new Set(input.tags ?? [])],
        version: input.version ?? loaded.version ?? null,
        source: loaded.source,
        sourceUrl: loaded.sourceUrl,
        ...authColumns(ctx, auth),
        signingSecret: encryptSecret(ctx, signingSecret),
        warnings,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    await insertTools(tx, serviceId, loaded.tools);
    return svc;
  });
  await registryChanged(ctx);
  return {
    ...serviceView(row),
    tools: await listServiceTools(ctx, serviceId),
    warnings,
    signing_secret: signingSecret,
  };
}

async function insertTools(tx: Tx, serviceId: string, list: NormalizedTool[]): Promise<void> {
  if (!list.length) return;
  // Ids made in the same millisecond are not ordered: sort them so tools list in declaration order.
  const ids = list.map(() => newId('tool')).sort();
  await tx.insert(tools).values(
    list.map((t, i) => ({
      id: ids[i],
      serviceId,
      name: t.name,
      description: t.description,
      method: t.method,
      path: t.path,
      inputSchema: t.inputSchema,
      outputSchema: t.outputSchema,
      argLocations: t.argLocations,
      annotations: t.annotations ?? null,
      definitionHash: definitionHash(t),
    })),
  );
}

/**
 * Replace the tools of a service. Existing tools are matched by `key` (kept: id, status and — for
 * upstream-keyed matching — the current name), others added, missing ones deleted (aliases go with them).
 */
export async function replaceTools(
  tx: Tx,
  serviceId: string,
  next: NormalizedTool[],
  key: 'name' | 'upstream',
): Promise<void> {
  const current = await tx.select().from(tools).where(eq(tools.serviceId, serviceId));
  const keyOf = (t: { name: string; method: string; path: string }) =>
    key === 'name' ? t.name : `${t.method} ${t.path}`;
  const byKey = new Map(current.map((t) => [keyOf(t), t]));
  const kept = new Set<string>();
  const added: NormalizedTool[] = [];
  const taken = new Set<string>();
  const updates: Array<[ToolRow, NormalizedTool]> = [];
  for (const t of next) {
    const old = byKey.get(keyOf(t));
    if (old && !kept.has(old.id)) {
      kept.add(old.id);
      taken.add(key === 'upstream' ? old.name : t.name);
      updates.push([old, t]);
    } else added.push(t);
  }
  const gone = current.filter((t) => !kept.has(t.id)).map((t) => t.id);
  if (gone.length) await tx.delete(tools).where(inArray(tools.id, gone));
  for (const [old, t] of updates) {
    await tx
      .update(tools)
      .set({
        ...(key === 'name' ? { name: t.name } : {}),
        description: t.description,
        method: t.method,
        path: t.path,
        inputSchema: t.inputSchema,
        outputSchema: t.outputSchema,
        argLocations: t.argLocations,
        annotations: t.annotations ?? null,
        // Recomputed on every re-import; pinned subscribers see a change as 409 (subscriptions/pins.ts).
        definitionHash: definitionHash({ ...t, name: key === 'name' ? t.name : old.name }),
        updatedAt: new Date(),
      })
      .where(eq(tools.id, old.id));
  }
  const aliases = new Set(
    (await tx.select({ name: toolAliases.name }).from(toolAliases).where(eq(toolAliases.serviceId, serviceId))).map(
      (a) => a.name,
    ),
  );
  for (const t of added) {
    let name = t.name;
    for (let n = 2; taken.has(name) || aliases.has(name); n++) name = `${t.name.slice(0, 60)}_${n}`;
    taken.add(name);
    t.name = name;
  }
  await insertTools(tx, serviceId, added);
}
