/**
 * Read-only catalog lookups of the MCP module: input schemas of search hits, and the caller's
 * subscribed tools listed as MCP tools of their own (`<service>__<tool>`). Listing decides
 * nothing: calling a listed tool goes through {@link executeTool} like any other call, which
 * applies subscription, agent-subscription and quota rules.
 */
import { createHash } from 'node:crypto';
import { and, asc, eq, inArray, or } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { agentToolSubscriptions, services, tools } from '../../db/schema/index.js';
import { subscribedServiceIds } from '../subscriptions/service.js';
import type { SessionActor } from '../../http/auth.js';

/** `input_schema` by tool id. */
export async function inputSchemasOf(
  ctx: AppContext,
  toolIds: string[],
): Promise<Map<string, Record<string, unknown>>> {
  if (toolIds.length === 0) return new Map();
  const rows = await ctx.db
    .select({ id: tools.id, schema: tools.inputSchema })
    .from(tools)
    .where(inArray(tools.id, toolIds));
  return new Map(rows.map((r) => [r.id, r.schema]));
}

/** One subscribed tool as an MCP tool. */
export interface ExposedTool {
  /** MCP tool name: `<service>__<tool>`, characters outside `[A-Za-z0-9_.-]` replaced by `_`, ≤ 128. */
  name: string;
  service: string;
  tool: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** The MCP name of tool `tool` of service `service` (MCP spec "Tools" §Tool Names). */
export function exposedName(service: string, tool: string): string {
  return `${service}__${tool}`.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 128);
}

/**
 * Tools of the services the actor is subscribed to (an agent: its own tool subscriptions among
 * the account's subscriptions and own services), published or the account's own, by name.
 */
export async function exposedTools(ctx: AppContext, actor: SessionActor): Promise<ExposedTool[]> {
  let serviceIds = await subscribedServiceIds(ctx, actor.accountId);
  if (actor.agentId) {
    const own = await ctx.db
      .select({ id: agentToolSubscriptions.serviceId })
      .from(agentToolSubscriptions)
      .where(eq(agentToolSubscriptions.agentId, actor.agentId));
    const account = new Set(serviceIds);
    const ids = own.map((r) => r.id);
    const owned = ids.length
      ? await ctx.db
          .select({ id: services.id })
          .from(services)
          .where(and(inArray(services.id, ids), eq(services.ownerId, actor.accountId)))
      : [];
    const ownedIds = new Set(owned.map((r) => r.id));
    serviceIds = ids.filter((id) => account.has(id) || ownedIds.has(id));
  }
  if (serviceIds.length === 0) return [];
  const rows = await ctx.db
    .select({
      service: services.name,
      displayName: services.displayName,
      tool: tools.name,
      description: tools.description,
      inputSchema: tools.inputSchema,
    })
    .from(tools)
    .innerJoin(services, eq(services.id, tools.serviceId))
    .where(
      and(
        inArray(services.id, serviceIds),
        or(eq(services.status, 'published'), eq(services.ownerId, actor.accountId)),
      ),
    )
    .orderBy(asc(services.name), asc(tools.name));
  const seen = new Set<string>();
  const out: ExposedTool[] = [];
  for (const r of rows) {
    const name = exposedName(r.service, r.tool);
    if (seen.has(name)) continue;
    seen.add(name);
    out.push({
      name,
      service: r.service,
      tool: r.tool,
      title: `${r.displayName}: ${r.tool}`,
      description: r.description || `${r.tool} of ${r.displayName}`,
      inputSchema: r.inputSchema,
    });
  }
  return out;
}

/** A fingerprint of a tool list: changes whenever a name, description or schema changes. */
export function toolListFingerprint(list: ExposedTool[]): string {
  return createHash('sha256').update(JSON.stringify(list)).digest('base64url');
}
