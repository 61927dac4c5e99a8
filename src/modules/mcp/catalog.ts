/**
 * Read-only catalog lookups of the MCP module: input schemas of search hits, and the caller's
 * subscribed tools listed as MCP tools of their own (`<service>__<tool>`). Listing decides
 * nothing: calling a listed tool goes through {@link executeTool} like any other call, which
 * applies subscription, agent-subscription, pinned-definition and quota rules. A subscriber's list
 * shows the definitions it pinned (`subscriptions/pins.ts` {@link pinnedDefinitions}).
 */
import { createHash } from 'node:crypto';
import { and, asc, eq, inArray, or } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { agentToolSubscriptions, services, tools } from '../../db/schema/index.js';
import { holderOf, holderPins, pinnedDefinitions } from '../subscriptions/pins.js';
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
  /**
   * The definition changed since the caller pinned it: name, description and schema above are the
   * pinned ones, and calling the tool answers 409 `tool_definition_changed` until it is accepted.
   */
  pendingChange?: true;
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
  const query = ctx.db
    .select({
      id: tools.id,
      serviceId: services.id,
      ownerId: services.ownerId,
      service: services.name,
      displayName: services.displayName,
      tool: tools.name,
      name: tools.name,
      description: tools.description,
      inputSchema: tools.inputSchema,
      outputSchema: tools.outputSchema,
      annotations: tools.annotations,
      definitionHash: tools.definitionHash,
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
  // A subscriber sees the definitions it pinned (its pins read in parallel with the tools);
  // a changed tool still answers 409 on execute.
  const [rows, pins] = await Promise.all([query, holderPins(ctx, holderOf(actor), serviceIds)]);
  const pinned = pinnedDefinitions(
    pins,
    rows.filter((r) => r.ownerId !== actor.accountId),
  );
  const seen = new Set<string>();
  const out: ExposedTool[] = [];
  for (const r of rows) {
    const pin = pinned.get(r.id);
    if (pin === null) continue; // added since the holder pinned: listed once accepted
    const shown = pin ? pin.name : r.tool;
    const name = exposedName(r.service, shown);
    if (seen.has(name)) continue;
    seen.add(name);
    const description = pin ? pin.description : r.description;
    out.push({
      name,
      service: r.service,
      tool: r.tool,
      title: `${r.displayName}: ${shown}`,
      description: description || `${shown} of ${r.displayName}`,
      inputSchema: pin ? pin.input_schema : r.inputSchema,
      ...(pin ? { pendingChange: true } : {}),
    });
  }
  return out;
}

/** A fingerprint of a tool list: changes whenever a name, description or schema changes. */
export function toolListFingerprint(list: ExposedTool[]): string {
  return createHash('sha256').update(JSON.stringify(list)).digest('base64url');
}
