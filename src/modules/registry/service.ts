/**
 * Registry: API services and their tools, registered by owners from a native manifest, an
 * OpenAPI 3.x document or an MCP server (spec group "Registry"; docs/manifest.md).
 *
 * Owner operations filter by owner (another account's service is "not found"). The marketplace
 * shows published services only. {@link resolveExecutableTool} is the execution path's lookup
 * (sessions module): it accepts a tool's current name, a former name (alias) or its id.
 */
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { and, arrayContains, asc, desc, eq, ilike, inArray, lt, or, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { services, toolAliases, tools } from '../../db/schema/index.js';
import type { Tx } from '../../db/client.js';
import { AppError, notFound } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { decodeCursor, toPage, type Page } from '../../http/pagination.js';
import { decryptSecret, encryptSecret } from '../../lib/secrets.js';
import { SharedCache } from '../../lib/shared-cache.js';
import { classifyAddress, isAddressAllowed } from '../../upstream/address.js';
import { mcpListTools } from '../../upstream/mcp.js';
import {
  SERVICE_NAME,
  TOOL_NAME,
  checkAuth,
  checkBaseUrl,
  checkRegistrationShape,
  checkTools,
  slugify,
  toolNameFrom,
  type ArgLocation,
  type ManifestProblem,
  type NormalizedTool,
  type UpstreamAuthInput,
} from './manifest.js';
import { authColumns, checkOAuth2Complete, oauth2ClientOf, oauth2View, prefillOAuth2, type OAuth2Prefill } from './oauth2.js';
import { fetchOpenApiDocument, importOpenApi } from './openapi.js';
import type { OAuth2Client } from '../../upstream/oauth2.js';

export type ServiceRow = typeof services.$inferSelect;
export type ToolRow = typeof tools.$inferSelect;
export type ServiceStatus = 'draft' | 'pending_verification' | 'published' | 'rejected' | 'unpublished';
export type ServiceSource = 'manifest' | 'openapi' | 'mcp';

// ------------------------------------------------------------------ contract (sessions, subscriptions)

/** Everything the execution path needs to call one tool. */
export interface ExecutableTool {
  service: {
    id: string;
    ownerId: string;
    name: string;
    status: ServiceStatus;
    baseUrl: string;
    source: ServiceSource;
    mcpUrl: string | null;
  };
  tool: {
    id: string;
    name: string;
    /** HTTP method, or `MCP` for tools of an MCP server. */
    method: string;
    /** Path template with `{param}` placeholders; the MCP tool name for MCP tools. */
    path: string;
    inputSchema: Record<string, unknown>;
    status: 'active' | 'degraded';
    /**
     * OpenAPI tools: where each top-level argument goes — `path` (fills `{name}`), `query`, `header`,
     * or `body` (a field of the JSON body object). Absent → default placement (path placeholders,
     * then query string for GET/DELETE or JSON body otherwise).
     */
    argLocations?: Record<string, ArgLocation>;
    /** OpenAPI tools whose request body is not an object with properties: the argument whose value is the whole JSON body. */
    bodyArgument?: string;
  };
  /**
   * Decrypted upstream credential (never log it). `oauth2`: no shared credential — the caller's own
   * grant is put in by the connections module (`withCallerGrant`) before the request is built.
   */
  upstreamAuth: { type: 'none' | 'bearer' | 'header' | 'query' | 'oauth2'; name?: string; secret?: string; oauth2?: OAuth2Client };
  /** Decrypted per-service HMAC signing secret (shown to the owner once at registration; rotatable). */
  signingSecret: string;
}

function serviceWhere(ref: string) {
  return ref.startsWith('svc_') ? eq(services.id, ref) : eq(services.name, ref);
}

/**
 * Service by id (`svc_…`) or unique name; tool by current name, alias (old name after rename) or
 * id. null when either is missing. No visibility check (callers decide who may execute).
 */
export async function resolveExecutableTool(ctx: AppContext, serviceRef: string, toolRef: string): Promise<ExecutableTool | null> {
  // Length-prefixed: no pair of references can share a key.
  return executableTools(ctx).get(`${serviceRef.length}:${serviceRef}${toolRef}`, () => loadExecutableTool(ctx, serviceRef, toolRef));
}

/**
 * The execution path's cache of {@link resolveExecutableTool} answers (misses included), keyed by
 * the references the caller used (length-prefixed service reference + tool reference). Every registry write clears it ({@link registryChanged}); values
 * are shared, callers must not mutate them.
 */
function executableTools(ctx: AppContext): SharedCache<ExecutableTool | null> {
  return SharedCache.of(ctx, { name: 'registry.executable', max: 20_000, ttlMs: ctx.config.cacheTtlMs });
}

/** Forget every cached lookup on every instance. Called after each committed registry write. */
async function registryChanged(ctx: AppContext): Promise<void> {
  await executableTools(ctx).invalidate(null);
}

async function loadExecutableTool(ctx: AppContext, serviceRef: string, toolRef: string): Promise<ExecutableTool | null> {
  const [svc] = await ctx.db.select().from(services).where(serviceWhere(serviceRef)).limit(1);
  if (!svc) return null;
  const tool = await findTool(ctx, svc.id, toolRef);
  if (!tool) return null;
  return {
    service: {
      id: svc.id,
      ownerId: svc.ownerId,
      name: svc.name,
      status: svc.status as ServiceStatus,
      baseUrl: svc.baseUrl,
      source: svc.source as ServiceSource,
      mcpUrl: svc.source === 'mcp' ? svc.sourceUrl : null,
    },
    tool: {
      id: tool.id,
      name: tool.name,
      method: tool.method,
      path: tool.path,
      inputSchema: tool.inputSchema,
      status: tool.status as 'active' | 'degraded',
      ...(tool.argLocations ? { argLocations: tool.argLocations.locations } : {}),
      ...(tool.argLocations?.bodyArgument ? { bodyArgument: tool.argLocations.bodyArgument } : {}),
    },
    upstreamAuth: upstreamAuthOf(ctx, svc),
    signingSecret: decryptSecret(ctx, svc.signingSecret),
  };
}

/** Minimal facts about a service by id or name, any status; null when missing (deleted services are missing). */
export async function getServiceSummary(ctx: AppContext, idOrName: string): Promise<{ id: string; name: string; ownerId: string; status: string } | null> {
  const [s] = await ctx.db
    .select({ id: services.id, name: services.name, ownerId: services.ownerId, status: services.status })
    .from(services)
    .where(serviceWhere(idOrName))
    .limit(1);
  return s ?? null;
}

/** Decrypted upstream auth of a service row. */
export function upstreamAuthOf(ctx: AppContext, svc: ServiceRow): ExecutableTool['upstreamAuth'] {
  const type = svc.authType as ExecutableTool['upstreamAuth']['type'];
  const oauth2 = oauth2ClientOf(ctx, svc);
  if (oauth2) return { type: 'oauth2', oauth2 };
  if (type === 'none' || !svc.authSecret) return { type: 'none' };
  return { type, ...(svc.authName ? { name: svc.authName } : {}), secret: decryptSecret(ctx, svc.authSecret) };
}

/** Headers and URL carrying an upstream credential (`query` auth adds a query parameter). */
export function applyUpstreamAuth(auth: ExecutableTool['upstreamAuth'], url: string, headers: Record<string, string> = {}): { url: string; headers: Record<string, string> } {
  if (auth.type === 'bearer' && auth.secret) return { url, headers: { ...headers, authorization: `Bearer ${auth.secret}` } };
  if (auth.type === 'header' && auth.name && auth.secret) return { url, headers: { ...headers, [auth.name.toLowerCase()]: auth.secret } };
  if (auth.type === 'query' && auth.name && auth.secret) {
    const u = new URL(url);
    u.searchParams.set(auth.name, auth.secret);
    return { url: u.toString(), headers };
  }
  return { url, headers };
}

/** A tool of `serviceId` by current name, then id, then alias. */
export async function findTool(ctx: AppContext, serviceId: string, toolRef: string): Promise<ToolRow | null> {
  const [t] = await ctx.db
    .select()
    .from(tools)
    .where(and(eq(tools.serviceId, serviceId), or(eq(tools.name, toolRef), eq(tools.id, toolRef))))
    .orderBy(sql`(${tools.name} = ${toolRef}) desc`)
    .limit(1);
  if (t) return t;
  const [a] = await ctx.db
    .select({ tool: tools })
    .from(toolAliases)
    .innerJoin(tools, eq(tools.id, toolAliases.toolId))
    .where(and(eq(toolAliases.serviceId, serviceId), eq(toolAliases.name, toolRef)))
    .limit(1);
  return a?.tool ?? null;
}

// ------------------------------------------------------------------ views

/** Upstream auth as shown (never the secret). */
function authView(s: ServiceRow) {
  const oauth2 = oauth2View(s);
  return { type: s.authType, name: s.authName ?? null, ...(oauth2 ? { oauth2 } : {}) };
}

/** Tool as shown to anyone. */
export interface ToolView {
  id: string;
  name: string;
  aliases: string[];
  description: string;
  method: string;
  path: string;
  input_schema: Record<string, unknown>;
  output_schema: Record<string, unknown> | null;
  status: 'active' | 'degraded';
}

function toolView(t: ToolRow, aliases: string[]): ToolView {
  return {
    id: t.id,
    name: t.name,
    aliases,
    description: t.description,
    method: t.method,
    path: t.path,
    input_schema: t.inputSchema,
    output_schema: t.outputSchema ?? null,
    status: t.status as 'active' | 'degraded',
  };
}

/** The native manifest fields of a service (id, names, description, base URL, category, tags, version). */
function manifestView(s: ServiceRow) {
  return {
    id: s.id,
    name: s.name,
    display_name: s.displayName,
    description: s.description,
    base_url: s.baseUrl,
    category: s.category ?? null,
    tags: s.tags,
    version: s.version ?? null,
  };
}

/** Service fields shown to its owner (no secrets). */
export function serviceView(s: ServiceRow) {
  return {
    ...manifestView(s),
    source: s.source as ServiceSource,
    source_url: s.sourceUrl ?? null,
    status: s.status,
    auth: authView(s),
    published_at: s.publishedAt?.toISOString() ?? null,
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

/** Tools of a service with their aliases, in creation order. */
export async function listServiceTools(ctx: AppContext | { db: Tx }, serviceId: string): Promise<ToolView[]> {
  const rows = await ctx.db.select().from(tools).where(eq(tools.serviceId, serviceId)).orderBy(asc(tools.id));
  const aliases = await ctx.db.select().from(toolAliases).where(eq(toolAliases.serviceId, serviceId)).orderBy(asc(toolAliases.createdAt));
  const byTool = new Map<string, string[]>();
  for (const a of aliases) byTool.set(a.toolId, [...(byTool.get(a.toolId) ?? []), a.name]);
  return rows.map((t) => toolView(t, byTool.get(t.id) ?? []));
}

// ------------------------------------------------------------------ registration

/** The body of `POST /owner/services` (validated again here: every problem is listed). */
export interface RegisterInput {
  name?: string;
  display_name?: string;
  description?: string;
  base_url?: string;
  category?: string;
  tags?: string[];
  version?: string;
  auth?: UpstreamAuthInput;
  tools?: Array<{ name: string; description: string; method: string; path: string; input_schema: Record<string, unknown>; output_schema?: Record<string, unknown> }>;
  openapi?: Record<string, unknown>;
  openapi_url?: string;
  mcp_url?: string;
}

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

function fail(errors: ManifestProblem[], what = 'Manifest is invalid'): never {
  const list = errors.slice(0, 200);
  throw new AppError('validation_failed', `${what}: ${list.map((e) => `${e.pointer} ${e.message}`).join('; ').slice(0, 2000)}`, {
    errors: list.map((e) => ({ in: 'body' as const, pointer: e.pointer, message: e.message })),
  });
}

function fromManifestTools(list: NonNullable<RegisterInput['tools']>): NormalizedTool[] {
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

/** Strip a draft `$schema` from an imported (MCP) schema: it is interpreted as 2020-12. */
function importedSchema(schema: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!schema || typeof schema !== 'object') return { type: 'object' };
  const { $schema: _ignored, ...rest } = schema;
  return rest.type === undefined ? { type: 'object', ...rest } : rest;
}

/** Read tools from the registration's source (fetching OpenAPI / MCP through the guarded client). */
async function loadSource(ctx: AppContext, input: RegisterInput, auth: UpstreamAuthInput | undefined): Promise<Loaded> {
  const loaded: Loaded = { source: 'manifest', sourceUrl: null, title: null, description: null, version: null, baseUrl: null, tools: [], warnings: [], errors: [] };
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
    Object.assign(loaded, { title: imp.title, description: imp.description, version: imp.version, baseUrl: imp.serverUrl, tools: imp.tools });
    loaded.warnings.push(...imp.warnings);
    loaded.errors.push(...imp.errors);
    loaded.oauth2 = imp.oauth2;
    if (imp.oauth2 && auth?.type !== 'oauth2') {
      loaded.warnings.push({ pointer: '/auth', message: 'the OpenAPI document declares an OAuth 2.0 authorization-code flow: set auth {"type":"oauth2","client_id","client_secret"} (endpoints and scopes are read from the document) so each caller connects their own account' });
    } else if (imp.declaresSecurity && (!auth || auth.type === 'none')) {
      loaded.warnings.push({ pointer: '/auth', message: 'the OpenAPI document declares security schemes but no upstream auth is set' });
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
    if (name !== t.name) loaded.warnings.push({ pointer: `/mcp_url`, message: `MCP tool ${i} "${t.name.slice(0, 100)}" is listed as "${name}"` });
    return { name, description: t.description ?? '', method: 'MCP', path: t.name, inputSchema: importedSchema(t.inputSchema), outputSchema: null, argLocations: null };
  });
  return loaded;
}

/**
 * A base URL whose host is an IP literal the guarded client would refuse (private, link-local…,
 * loopback without the flag) is rejected at once; host names are checked at call time (after DNS).
 */
function checkBaseUrlTarget(ctx: AppContext, raw: string, at: string): ManifestProblem[] {
  let host: string;
  try {
    host = new URL(raw).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return [];
  }
  if (isIP(host) && !isAddressAllowed(host, ctx.config.upstream.allowLoopback)) {
    return [{ pointer: at, message: `points at a ${classifyAddress(host)} address, which upstream calls may not reach` }];
  }
  return [];
}

function authForCall(auth: UpstreamAuthInput | undefined): ExecutableTool['upstreamAuth'] {
  if (!auth || auth.type === 'none' || auth.type === 'oauth2' || !auth.secret) return { type: 'none' };
  return { type: auth.type, name: auth.name, secret: auth.secret };
}

function toolsBase(source: ServiceSource, input: RegisterInput): string {
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
  for (const candidate of [base, `${base}-2`, `${base}-3`, `${base}-4`]) if (!(await nameTaken(ctx, candidate))) return candidate;
  return `${base}-${randomBytes(3).toString('hex')}`;
}

function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * Register a service from exactly one source. Returns the stored service (status `draft`), its
 * tools, warnings and the signing secret (shown this once).
 * @throws AppError validation_failed (every problem with a JSON Pointer), conflict (name taken),
 *         upstream_blocked (openapi_url / mcp_url points at a refused address)
 */
export async function registerService(ctx: AppContext, ownerId: string, input: RegisterInput) {
  const errors = checkRegistrationShape(input);
  const sources = typeof input === 'object' && input !== null ? (['tools', 'openapi', 'openapi_url', 'mcp_url'] as const).filter((k) => input[k] !== undefined) : [];
  if (sources.length !== 1) {
    errors.push({ pointer: '/', message: `exactly one source is required: tools (native manifest), openapi, openapi_url or mcp_url${sources.length ? ` (got ${sources.join(', ')})` : ''}` });
  }
  // A body of the wrong shape cannot be read further: report what is known.
  if (errors.length) fail(errors);
  if (input.name !== undefined && !SERVICE_NAME.test(input.name)) errors.push({ pointer: '/name', message: 'must match ^[a-z0-9][a-z0-9-]{1,62}$' });
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
  if (!baseUrl && loaded.source !== 'manifest' && !loaded.errors.length) errors.push({ pointer: '/base_url', message: 'is required (the source gives no absolute server URL)' });
  else if (!input.base_url && baseUrl) errors.push(...checkBaseUrl(baseUrl, '/base_url').map((e) => ({ ...e, message: `from the source ${e.message}` })));
  if (baseUrl) errors.push(...checkBaseUrlTarget(ctx, baseUrl, '/base_url'));
  if (loaded.source !== 'manifest' && loaded.tools.length === 0 && !loaded.errors.length) errors.push({ pointer: base, message: 'the source lists no tools' });
  if (errors.length) fail(errors);

  const displayName = input.display_name ?? loaded.title ?? input.name ?? 'Service';
  let name = input.name;
  if (name !== undefined) {
    if (await nameTaken(ctx, name)) throw new AppError('conflict', `Service name "${name}" is taken`, { errors: [{ in: 'body', pointer: '/name', message: 'is taken' }] });
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
  return { ...serviceView(row), tools: await listServiceTools(ctx, serviceId), warnings, signing_secret: signingSecret };
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
    })),
  );
}

/**
 * Replace the tools of a service. Existing tools are matched by `key` (kept: id, status and — for
 * upstream-keyed matching — the current name), others added, missing ones deleted (aliases go with them).
 */
async function replaceTools(tx: Tx, serviceId: string, next: NormalizedTool[], key: 'name' | 'upstream'): Promise<void> {
  const current = await tx.select().from(tools).where(eq(tools.serviceId, serviceId));
  const keyOf = (t: { name: string; method: string; path: string }) => (key === 'name' ? t.name : `${t.method} ${t.path}`);
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
      .set({ ...(key === 'name' ? { name: t.name } : {}), description: t.description, method: t.method, path: t.path, inputSchema: t.inputSchema, outputSchema: t.outputSchema, argLocations: t.argLocations, updatedAt: new Date() })
      .where(eq(tools.id, old.id));
  }
  const aliases = new Set((await tx.select({ name: toolAliases.name }).from(toolAliases).where(eq(toolAliases.serviceId, serviceId))).map((a) => a.name));
  for (const t of added) {
    let name = t.name;
    for (let n = 2; taken.has(name) || aliases.has(name); n++) name = `${t.name.slice(0, 60)}_${n}`;
    taken.add(name);
    t.name = name;
  }
  await insertTools(tx, serviceId, added);
}

// ------------------------------------------------------------------ owner operations

/** The service `ref` (id or name) owned by `ownerId`. @throws AppError not_found (also for other owners' services) */
export async function getOwnedService(ctx: AppContext, ownerId: string, ref: string): Promise<ServiceRow> {
  const [s] = await ctx.db.select().from(services).where(and(serviceWhere(ref), eq(services.ownerId, ownerId))).limit(1);
  if (!s) throw notFound('Service');
  return s;
}

/** The service by id/name, any owner and status. @throws AppError not_found */
export async function getServiceRow(ctx: AppContext, ref: string): Promise<ServiceRow> {
  const [s] = await ctx.db.select().from(services).where(serviceWhere(ref)).limit(1);
  if (!s) throw notFound('Service');
  return s;
}

/** The owner's services, newest first, with tool counts. */
export async function listOwnerServices(ctx: AppContext, ownerId: string, q: { limit?: number; cursor?: string }): Promise<Page<ReturnType<typeof serviceView> & { tool_count: number }>> {
  const limit = q.limit ?? 20;
  const after = decodeCursor(q.cursor);
  const rows = await ctx.db
    .select({ s: services, toolCount: sql<number>`(select count(*)::int from "tools" t where t.service_id = "services"."id")` })
    .from(services)
    .where(and(eq(services.ownerId, ownerId), after ? lt(services.id, after) : undefined))
    .orderBy(desc(services.id))
    .limit(limit + 1);
  return toPage(rows, limit, (r) => ({ ...serviceView(r.s), tool_count: Number(r.toolCount) }), (r) => r.s.id);
}

/** The owner's view of one service (tools with aliases, warnings). Publishing adds checklist and reports. */
export async function getOwnerService(ctx: AppContext, ownerId: string, ref: string) {
  const s = await getOwnedService(ctx, ownerId, ref);
  return { ...serviceView(s), tools: await listServiceTools(ctx, s.id), warnings: s.warnings };
}

export interface UpdateInput {
  display_name?: string;
  description?: string;
  base_url?: string;
  category?: string | null;
  tags?: string[];
  version?: string | null;
  auth?: UpstreamAuthInput;
  tools?: RegisterInput['tools'];
}

/**
 * Update top-level fields; `tools` replaces the tools of a manifest-sourced service (matched by
 * name: ids, statuses and aliases of kept tools survive). Moving a published service to another
 * origin unpublishes it (its domain verification no longer holds).
 * @throws AppError not_found | validation_failed
 */
export async function updateService(ctx: AppContext, ownerId: string, ref: string, input: UpdateInput) {
  const s = await getOwnedService(ctx, ownerId, ref);
  const errors: ManifestProblem[] = [];
  errors.push(...checkAuth(input.auth, '/auth'), ...checkOAuth2Complete(input.auth, '/auth'));
  if (input.base_url !== undefined) {
    const p = checkBaseUrl(input.base_url, '/base_url');
    errors.push(...(p.length ? p : checkBaseUrlTarget(ctx, input.base_url, '/base_url')));
  }
  if (input.description !== undefined && !input.description.trim() && s.source === 'manifest') errors.push({ pointer: '/description', message: 'must not be empty' });
  let next: NormalizedTool[] | undefined;
  if (input.tools) {
    if (s.source !== 'manifest') errors.push({ pointer: '/tools', message: `tools of a ${s.source} service come from its source: use POST /owner/services/:id/sync` });
    else if (input.tools.length === 0) errors.push({ pointer: '/tools', message: 'must list at least one tool' });
    else {
      next = fromManifestTools(input.tools);
      errors.push(...checkTools(next, '/tools', { requireDescription: true }).errors);
      const aliases = await ctx.db.select().from(toolAliases).where(eq(toolAliases.serviceId, s.id));
      const current = await ctx.db.select({ id: tools.id, name: tools.name }).from(tools).where(eq(tools.serviceId, s.id));
      const idByName = new Map(current.map((t) => [t.name, t.id]));
      next.forEach((t, i) => {
        const alias = aliases.find((a) => a.name === t.name);
        if (alias && !idByName.has(t.name)) errors.push({ pointer: `/tools/${i}/name`, message: 'is a former name (alias) of another tool' });
      });
    }
  }
  if (errors.length) fail(errors, 'Update is invalid');
  const set: Partial<typeof services.$inferInsert> = { updatedAt: new Date() };
  if (input.display_name !== undefined) set.displayName = input.display_name;
  if (input.description !== undefined) set.description = input.description;
  if (input.category !== undefined) set.category = input.category;
  if (input.tags !== undefined) set.tags = [...new Set(input.tags)];
  if (input.version !== undefined) set.version = input.version;
  // An oauth2 update without client_secret keeps the stored one.
  if (input.auth) Object.assign(set, authColumns(ctx, input.auth, s.authType === 'oauth2' ? s.authSecret : null));
  if (input.base_url !== undefined) {
    const nextUrl = input.base_url.replace(/\/+$/, '');
    set.baseUrl = nextUrl;
    if (new URL(nextUrl).origin !== new URL(s.baseUrl).origin && s.status === 'published') set.status = 'unpublished';
  }
  await ctx.db.transaction(async (tx) => {
    await tx.update(services).set(set).where(eq(services.id, s.id));
    if (next) {
      await replaceTools(tx, s.id, next, 'name');
      await tx.update(services).set({ warnings: [] }).where(eq(services.id, s.id));
    }
  });
  await registryChanged(ctx);
  return getOwnerService(ctx, ownerId, s.id);
}

/** Delete a service with its tools (a published one leaves the marketplace with it). @throws AppError not_found */
export async function deleteService(ctx: AppContext, ownerId: string, ref: string): Promise<void> {
  const s = await getOwnedService(ctx, ownerId, ref);
  await ctx.db.delete(services).where(eq(services.id, s.id));
  await registryChanged(ctx);
}

/**
 * Re-read the tools of an MCP- or `openapi_url`-sourced service. Tools are matched on their
 * upstream identity (method + path, or the MCP tool name): kept tools keep id, current name
 * (renames survive), aliases and status.
 * @throws AppError not_found | invalid_state (inline source: nothing to sync) | validation_failed | upstream_blocked
 */
export async function syncService(ctx: AppContext, ownerId: string, ref: string) {
  const s = await getOwnedService(ctx, ownerId, ref);
  if (!s.sourceUrl) throw new AppError('invalid_state', `A ${s.source} service registered inline has nothing to sync; PATCH its tools instead`);
  const auth = upstreamAuthOf(ctx, s);
  const input: RegisterInput = s.source === 'mcp' ? { mcp_url: s.sourceUrl } : { openapi_url: s.sourceUrl };
  const loaded = await loadSource(ctx, input, auth.type === 'none' ? undefined : (auth as UpstreamAuthInput));
  const check = checkTools(loaded.tools, toolsBase(loaded.source, input), { requireDescription: false });
  const errors = [...loaded.errors, ...check.errors];
  if (!loaded.tools.length && !errors.length) errors.push({ pointer: toolsBase(loaded.source, input), message: 'the source lists no tools' });
  if (errors.length) fail(errors, 'Source is invalid');
  const warnings = [...loaded.warnings, ...check.warnings];
  await ctx.db.transaction(async (tx) => {
    await replaceTools(tx, s.id, loaded.tools, 'upstream');
    await tx.update(services).set({ warnings, updatedAt: new Date() }).where(eq(services.id, s.id));
  });
  await registryChanged(ctx);
  return getOwnerService(ctx, ownerId, s.id);
}

/** Replace the service's signing secret; the new one is returned this once. @throws AppError not_found */
export async function rotateSigningSecret(ctx: AppContext, ownerId: string, ref: string): Promise<{ signing_secret: string }> {
  const s = await getOwnedService(ctx, ownerId, ref);
  const secret = newSigningSecret();
  await ctx.db.update(services).set({ signingSecret: encryptSecret(ctx, secret), updatedAt: new Date() }).where(eq(services.id, s.id));
  await registryChanged(ctx);
  return { signing_secret: secret };
}

/** Move a service to `status` (publishing lifecycle). `published_at` is set on publication. */
export async function setServiceStatus(ctx: AppContext, serviceId: string, status: ServiceStatus): Promise<void> {
  await ctx.db
    .update(services)
    .set({ status, updatedAt: new Date(), ...(status === 'published' ? { publishedAt: new Date() } : {}) })
    .where(eq(services.id, serviceId));
  await registryChanged(ctx);
}

/** Set a tool's status (reports → `degraded`). */
export async function setToolStatus(ctx: AppContext, toolId: string, status: 'active' | 'degraded'): Promise<void> {
  await ctx.db.update(tools).set({ status, updatedAt: new Date() }).where(eq(tools.id, toolId));
  await registryChanged(ctx);
}

/**
 * Rename a tool of the owner's service. The old name becomes an alias (still accepted by
 * {@link resolveExecutableTool}); renaming back to a former name of the same tool drops that alias.
 * @throws AppError not_found | validation_failed (pattern) | conflict (another tool's name or alias)
 */
export async function renameTool(ctx: AppContext, ownerId: string, serviceRef: string, toolRef: string, newName: string): Promise<ToolView> {
  const s = await getOwnedService(ctx, ownerId, serviceRef);
  if (!TOOL_NAME.test(newName)) {
    throw new AppError('validation_failed', 'name must match ^[a-zA-Z0-9_-]{1,64}$', { errors: [{ in: 'body', pointer: '/name', message: 'must match ^[a-zA-Z0-9_-]{1,64}$' }] });
  }
  const tool = await findTool(ctx, s.id, toolRef);
  if (!tool) throw notFound('Tool');
  if (tool.name === newName) return (await listServiceTools(ctx, s.id)).find((t) => t.id === tool.id)!;
  await ctx.db.transaction(async (tx) => {
    const [other] = await tx.select({ id: tools.id }).from(tools).where(and(eq(tools.serviceId, s.id), eq(tools.name, newName))).limit(1);
    const [alias] = await tx.select().from(toolAliases).where(and(eq(toolAliases.serviceId, s.id), eq(toolAliases.name, newName))).limit(1);
    if (other || (alias && alias.toolId !== tool.id)) {
      throw new AppError('conflict', `Tool name "${newName}" is already used in this service${alias ? ' (as a former name)' : ''}`, { errors: [{ in: 'body', pointer: '/name', message: 'is taken' }] });
    }
    if (alias) await tx.delete(toolAliases).where(and(eq(toolAliases.serviceId, s.id), eq(toolAliases.name, newName)));
    await tx.insert(toolAliases).values({ serviceId: s.id, name: tool.name, toolId: tool.id });
    await tx.update(tools).set({ name: newName, updatedAt: new Date() }).where(eq(tools.id, tool.id));
  });
  await registryChanged(ctx);
  return (await listServiceTools(ctx, s.id)).find((t) => t.id === tool.id)!;
}

/**
 * Re-validate a stored service for the publish checklist: at least one tool, every tool described,
 * schemas valid, base URL valid. Returns the problems (empty = valid).
 */
export async function revalidateService(ctx: AppContext, serviceId: string): Promise<ManifestProblem[]> {
  const s = await getServiceRow(ctx, serviceId);
  const rows = await ctx.db.select().from(tools).where(eq(tools.serviceId, serviceId)).orderBy(asc(tools.id));
  const problems: ManifestProblem[] = [...checkBaseUrl(s.baseUrl, '/base_url')];
  if (!s.description.trim()) problems.push({ pointer: '/description', message: 'is empty' });
  if (rows.length === 0) problems.push({ pointer: '/tools', message: 'must list at least one tool' });
  const normalized = rows.map((t) => ({ name: t.name, description: t.description, method: t.method, path: t.path, inputSchema: t.inputSchema, outputSchema: t.outputSchema ?? null, argLocations: t.argLocations }));
  problems.push(...checkTools(normalized, '/tools', { requireDescription: true }).errors);
  return problems;
}

// ------------------------------------------------------------------ marketplace

function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Published services, newest first; filters: exact `category`, `tag` contained in tags, `q` substring of name/display name/description. */
export async function listMarketplace(ctx: AppContext, q: { limit?: number; cursor?: string; category?: string; tag?: string; q?: string }) {
  const limit = q.limit ?? 20;
  const after = decodeCursor(q.cursor);
  const text = q.q ? likePattern(q.q) : undefined;
  const rows = await ctx.db
    .select({ s: services, toolCount: sql<number>`(select count(*)::int from "tools" t where t.service_id = "services"."id")` })
    .from(services)
    .where(
      and(
        eq(services.status, 'published'),
        after ? lt(services.id, after) : undefined,
        q.category ? eq(services.category, q.category) : undefined,
        q.tag ? arrayContains(services.tags, [q.tag]) : undefined,
        text ? or(ilike(services.name, text), ilike(services.displayName, text), ilike(services.description, text)) : undefined,
      ),
    )
    .orderBy(desc(services.id))
    .limit(limit + 1);
  return toPage(
    rows,
    limit,
    ({ s, toolCount }) => ({
      id: s.id,
      name: s.name,
      display_name: s.displayName,
      description: s.description,
      category: s.category ?? null,
      tags: s.tags,
      version: s.version ?? null,
      source: s.source,
      tool_count: Number(toolCount),
      published_at: s.publishedAt?.toISOString() ?? null,
    }),
    (r) => r.s.id,
  );
}

/** Public manifest of a published service, or of the caller's own in any status. @throws AppError not_found */
export async function getPublicManifest(ctx: AppContext, accountId: string, ref: string) {
  const [s] = await ctx.db.select().from(services).where(serviceWhere(ref)).limit(1);
  if (!s || (s.status !== 'published' && s.ownerId !== accountId)) throw notFound('Service');
  return {
    ...manifestView(s),
    status: s.status,
    auth: authView(s),
    tools: await listServiceTools(ctx, s.id),
  };
}
