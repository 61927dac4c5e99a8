/**
 * The execution path's view of the registry: {@link resolveExecutableTool} and the
 * {@link ExecutableTool} contract that sessions (execute) and publishing (verification) use, with the
 * shared, cross-instance cache of lookups that every registry write clears ({@link registryChanged}).
 */
import { and, eq, or, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { services, toolAliases, tools } from '../../db/schema/index.js';
import { decryptSecret } from '../../lib/secrets.js';
import { SharedCache } from '../../lib/shared-cache.js';
import type { ArgLocation, UpstreamAuth } from '../../upstream/request.js';
import { oauth2ClientOf } from './oauth2.js';
import { currentDefinitionHash } from './definitions.js';
import { toolPolicyTags } from './tool-tags.js';

export type ServiceRow = typeof services.$inferSelect;
export type ToolRow = typeof tools.$inferSelect;
export type ServiceStatus = 'draft' | 'pending_verification' | 'published' | 'rejected' | 'unpublished';
export type ServiceSource = 'manifest' | 'openapi' | 'mcp';

// ------------------------------------------------------------------ contract (sessions, subscriptions)

/**
 * Everything the execution path needs to call one tool; satisfies the upstream layer's
 * `CallTarget` (src/upstream/tool-call.ts), so it is handed to the upstream call as is.
 */
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
    /** Hex SHA-256 of the tool's definition (registry/definitions.ts); pinned by subscribers (subscriptions/pins.ts). */
    definitionHash: string;
    /** Policy resource tags (`read_only`, `destructive`, `write`, `idempotent`, `open_world`; registry/tool-tags.ts). */
    tags: readonly string[];
    /**
     * OpenAPI tools: where each top-level argument goes — `path` (fills `{name}`), `query`, `header`,
     * or `body` (a field of the JSON body object). Absent → default placement (path placeholders,
     * then query string for GET/DELETE or JSON body otherwise).
     */
    argLocations?: Record<string, ArgLocation>;
    /** OpenAPI tools whose request body is not an object with properties: the argument whose value is the whole JSON body. */
    bodyArgument?: string;
  };
  /** Decrypted upstream credential (never log it). */
  upstreamAuth: UpstreamAuth;
  /** Decrypted per-service HMAC signing secret (shown to the owner once at registration; rotatable). */
  signingSecret: string;
}

/** Where-clause of a service reference: an id (`svc_…`) or the unique name. */
export function serviceWhere(ref: string) {
  return ref.startsWith('svc_') ? eq(services.id, ref) : eq(services.name, ref);
}

/**
 * Service by id (`svc_…`) or unique name; tool by current name, alias (old name after rename) or
 * id. null when either is missing. No visibility check (callers decide who may execute).
 */
export async function resolveExecutableTool(
  ctx: AppContext,
  serviceRef: string,
  toolRef: string,
): Promise<ExecutableTool | null> {
  // Length-prefixed: no pair of references can share a key.
  return executableTools(ctx).get(`${serviceRef.length}:${serviceRef}${toolRef}`, () =>
    loadExecutableTool(ctx, serviceRef, toolRef),
  );
}

/**
 * The execution path's cache of {@link resolveExecutableTool} answers (misses included), keyed by
 * the references the caller used (length-prefixed service reference + tool reference). Every registry write clears it ({@link registryChanged}); values
 * are shared, callers must not mutate them.
 */
function executableTools(ctx: AppContext): SharedCache<ExecutableTool | null> {
  return SharedCache.of(ctx, { name: 'registry.executable', max: 20_000, ttlMs: ctx.config.cacheTtlMs });
}

/**
 * How many registry writes this instance has committed (a counter per application context, from
 * 0). Caches derived from the catalog compare it to know at once that this instance changed it;
 * other instances' writes they learn within `CACHE_TTL_MS` from {@link catalogVersion}.
 */
export function catalogGeneration(ctx: AppContext): number {
  return ctx.registryGeneration;
}

/** Forget every cached lookup on every instance. Called after each committed registry write. */
export async function registryChanged(ctx: AppContext): Promise<void> {
  ctx.registryGeneration++;
  await executableTools(ctx).invalidate(null);
}

async function loadExecutableTool(
  ctx: AppContext,
  serviceRef: string,
  toolRef: string,
): Promise<ExecutableTool | null> {
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
      definitionHash: currentDefinitionHash(tool),
      tags: toolPolicyTags(tool.method, tool.annotations),
      ...(tool.argLocations ? { argLocations: tool.argLocations.locations } : {}),
      ...(tool.argLocations?.bodyArgument ? { bodyArgument: tool.argLocations.bodyArgument } : {}),
    },
    upstreamAuth: upstreamAuthOf(ctx, svc),
    signingSecret: decryptSecret(ctx, svc.signingSecret),
  };
}

/** Minimal facts about a service by id or name, any status; null when missing (deleted services are missing). */
export async function getServiceSummary(
  ctx: AppContext,
  idOrName: string,
): Promise<{ id: string; name: string; ownerId: string; status: string } | null> {
  const [s] = await ctx.db
    .select({ id: services.id, name: services.name, ownerId: services.ownerId, status: services.status })
    .from(services)
    .where(serviceWhere(idOrName))
    .limit(1);
  return s ?? null;
}

/** Decrypted upstream auth of a service row. */
export function upstreamAuthOf(ctx: AppContext, svc: ServiceRow): UpstreamAuth {
  const type = svc.authType as UpstreamAuth['type'];
  const oauth2 = oauth2ClientOf(ctx, svc);
  if (oauth2) return { type: 'oauth2', oauth2 };
  if (type === 'none' || !svc.authSecret) return { type: 'none' };
  return { type, ...(svc.authName ? { name: svc.authName } : {}), secret: decryptSecret(ctx, svc.authSecret) };
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
