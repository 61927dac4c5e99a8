/**
 * Pinned tool definitions — the rug-pull defence (docs/governance.md "Pinned tool definitions",
 * ADR 0981). A holder (an account, through its subscription; an agent, through its agent tool
 * subscription) pins the definitions of a service's tools when it subscribes. A re-import that
 * changes a definition (native manifest update, OpenAPI re-fetch, MCP `tools/list` sync) changes
 * the tool's `definition_hash`; executing it then answers 409 `tool_definition_changed` with an
 * RFC 6902 diff until the holder accepts the change. Tools added after the holder pinned need
 * acceptance too; a holder with no pins at all for a service (subscribed before migration 0050)
 * pins on first use. Owners calling their own services are never pinned.
 */
import { and, eq, inArray, sql } from 'drizzle-orm';
import jsonpatch from 'fast-json-patch';
import type { AppContext } from '../../context.js';
import { subscriptions, toolPins, tools } from '../../db/schema/index.js';
import type { SessionActor } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import {
  currentDefinitionHash,
  type DefinitionSource,
  toolDefinition,
  type ToolDefinition,
} from '../registry/definitions.js';
import type { ExecutableTool } from '../registry/executable.js';

/** Who pins: the agent for agent calls, else the account. */
export interface PinHolder {
  id: string;
  kind: 'account' | 'agent';
}

/** A tool whose current definition differs from the holder's pin (`GET /subscriptions/:id` `pending_changes`). */
export interface PendingChange {
  tool_id: string;
  tool: string;
  /** `changed` (pinned before) or `added` (new since the holder pinned). */
  change: 'changed' | 'added';
  pinned_hash: string | null;
  current_hash: string;
  /** RFC 6902 JSON Patch from the pinned definition to the current one (`fast-json-patch` `compare`). */
  diff: Array<Record<string, unknown>>;
  /**
   * The definition as pinned (null for an added tool), so a reader can show each diff operation's
   * old value at its `path`. Read answers only (`pendingChanges`), not the 409 of the execute path.
   */
  pinned_definition?: ToolDefinition | null;
}

/** The holder of an actor's calls. */
export function holderOf(actor: SessionActor): PinHolder {
  return actor.agentId ? { id: actor.agentId, kind: 'agent' } : { id: actor.accountId, kind: 'account' };
}

async function serviceTools(ctx: AppContext, serviceId: string, names?: string[]) {
  const rows = await ctx.db
    .select()
    .from(tools)
    .where(and(eq(tools.serviceId, serviceId), names?.length ? inArray(tools.name, names) : undefined));
  return rows;
}

/**
 * Pin the current definitions of the service's tools for `holder` (all, or the tools named in
 * `toolNames`), replacing older pins. Called on subscribe and on accept-changes.
 * @returns the names of the tools pinned
 */
export async function pinServiceTools(
  ctx: AppContext,
  holder: PinHolder,
  serviceId: string,
  toolNames?: string[],
): Promise<string[]> {
  const rows = await serviceTools(ctx, serviceId, toolNames);
  if (!rows.length) return [];
  await ctx.db
    .insert(toolPins)
    .values(
      rows.map((t) => ({
        holderId: holder.id,
        holderKind: holder.kind,
        serviceId,
        toolId: t.id,
        definitionHash: currentDefinitionHash(t),
        definition: toolDefinition(t) as unknown as Record<string, unknown>,
      })),
    )
    .onConflictDoUpdate({
      target: [toolPins.holderId, toolPins.toolId],
      set: {
        definitionHash: sql`excluded.definition_hash`,
        definition: sql`excluded.definition`,
        pinnedAt: sql`now()`,
      },
    });
  return rows.map((t) => t.name);
}

/**
 * The holder's pending changes on a service (tools whose definition differs from the pin, or new
 * tools), each with its RFC 6902 diff and the pinned definition; [] when the holder pinned nothing.
 */
export async function pendingChanges(ctx: AppContext, holderId: string, serviceId: string): Promise<PendingChange[]> {
  const [rows, pins] = await Promise.all([
    serviceTools(ctx, serviceId),
    ctx.db
      .select()
      .from(toolPins)
      .where(and(eq(toolPins.holderId, holderId), eq(toolPins.serviceId, serviceId))),
  ]);
  if (!pins.length) return [];
  const byTool = new Map(pins.map((p) => [p.toolId, p]));
  const out: PendingChange[] = [];
  for (const t of rows) {
    const pin = byTool.get(t.id);
    const hash = currentDefinitionHash(t);
    if (pin?.definitionHash === hash) continue;
    const pinned = pin ? (pin.definition as unknown as ToolDefinition) : null;
    out.push({
      ...changeOf(t.id, pinned, pin?.definitionHash ?? null, toolDefinition(t), hash),
      pinned_definition: pinned,
    });
  }
  return out;
}

/** A listed tool of a service the holder does not own, as {@link pinnedDefinitions} reads it. */
export interface ListedTool extends DefinitionSource {
  id: string;
  serviceId: string;
  definitionHash: string | null;
}

/** The holder's pins on some services, as {@link holderPins} reads them. */
export interface HolderPin {
  toolId: string;
  serviceId: string;
  hash: string;
  definition: Record<string, unknown>;
}

/**
 * The pins of `holder` on `serviceIds` (one query over `tool_pins_holder_service_idx`; none when
 * pins are off). Listings run it beside their own query and hand it to {@link pinnedDefinitions}.
 */
export async function holderPins(ctx: AppContext, holder: PinHolder, serviceIds: string[]): Promise<HolderPin[]> {
  if (!ctx.config.pins.enabled || serviceIds.length === 0) return [];
  return ctx.db
    .select({
      toolId: toolPins.toolId,
      serviceId: toolPins.serviceId,
      hash: toolPins.definitionHash,
      definition: toolPins.definition,
    })
    .from(toolPins)
    .where(and(eq(toolPins.holderId, holder.id), inArray(toolPins.serviceId, serviceIds)));
}

/**
 * What a holder is pinned to among listed tools (docs/governance.md "Pinned tool definitions"),
 * so listings (MCP `tools/list`, `/v1/tools/export`) show the pinned definition rather than a
 * changed one: per tool id, the pinned definition when it differs from the current one, or `null`
 * for a tool added since the holder pinned (not listed until accepted). Tools absent from the map
 * are listed as they are (unchanged, or a service the holder has no pins on yet). Pass only tools
 * of services the caller does not own (owners are never pinned).
 */
export function pinnedDefinitions(pins: HolderPin[], listed: ListedTool[]): Map<string, ToolDefinition | null> {
  const out = new Map<string, ToolDefinition | null>();
  if (pins.length === 0) return out;
  const byTool = new Map(pins.map((p) => [p.toolId, p]));
  const pinnedServices = new Set(pins.map((p) => p.serviceId));
  for (const t of listed) {
    if (!pinnedServices.has(t.serviceId)) continue;
    const pin = byTool.get(t.id);
    if (!pin) out.set(t.id, null);
    else if (pin.hash !== currentDefinitionHash(t)) out.set(t.id, pin.definition as unknown as ToolDefinition);
  }
  return out;
}

function changeOf(
  toolId: string,
  pinned: ToolDefinition | null,
  pinnedHash: string | null,
  current: ToolDefinition,
  currentHash: string,
): PendingChange {
  return {
    tool_id: toolId,
    tool: current.name,
    change: pinned ? 'changed' : 'added',
    pinned_hash: pinnedHash,
    current_hash: currentHash,
    diff: jsonpatch.compare(pinned ?? {}, current) as unknown as Array<Record<string, unknown>>,
  };
}

/**
 * Execute-path check (after the tool is resolved and its arguments validated): the caller's pinned
 * hash of the tool must equal the current one. One primary-key lookup; owners skip it.
 * @throws AppError tool_definition_changed (409) with `tool`, `pinned_hash`, `current_hash`,
 *         `change` and `diff` (RFC 6902) in the problem
 */
export async function assertDefinitionPinned(
  ctx: AppContext,
  actor: SessionActor,
  resolved: ExecutableTool,
): Promise<void> {
  if (!ctx.config.pins.enabled || resolved.service.ownerId === actor.accountId) return;
  const holder = holderOf(actor);
  const { tool, service } = resolved;
  const [pin] = await ctx.db
    .select({ hash: toolPins.definitionHash })
    .from(toolPins)
    .where(and(eq(toolPins.holderId, holder.id), eq(toolPins.toolId, tool.id)))
    .limit(1);
  if (pin?.hash === tool.definitionHash) return;
  if (!pin) {
    // No pin for this tool: a holder without any pin on the service (subscribed before pins
    // existed) pins the whole service on first use; otherwise the tool is new and needs acceptance.
    const [any] = await ctx.db
      .select({ toolId: toolPins.toolId })
      .from(toolPins)
      .where(and(eq(toolPins.holderId, holder.id), eq(toolPins.serviceId, service.id)))
      .limit(1);
    if (!any) {
      await pinServiceTools(ctx, holder, service.id);
      return;
    }
  }
  const [row] = await ctx.db.select().from(tools).where(eq(tools.id, tool.id)).limit(1);
  const [full] = pin
    ? await ctx.db
        .select()
        .from(toolPins)
        .where(and(eq(toolPins.holderId, holder.id), eq(toolPins.toolId, tool.id)))
        .limit(1)
    : [undefined];
  const change = changeOf(
    tool.id,
    full ? (full.definition as unknown as ToolDefinition) : null,
    full?.definitionHash ?? null,
    row ? toolDefinition(row) : toolDefinition({ ...tool, description: '', outputSchema: null }),
    tool.definitionHash,
  );
  const [sub] =
    holder.kind === 'account'
      ? await ctx.db
          .select({ id: subscriptions.id })
          .from(subscriptions)
          .where(
            and(
              eq(subscriptions.userId, holder.id),
              eq(subscriptions.serviceId, service.id),
              eq(subscriptions.status, 'active'),
            ),
          )
          .limit(1)
      : [];
  const accept =
    holder.kind === 'agent'
      ? `POST /v2/agents/${holder.id}/tools/accept-changes {"service":"${service.name}"}`
      : `POST /subscriptions/${sub?.id ?? ':id'}/accept-changes`;
  const what = change.change === 'added' ? 'was added' : `changed (${changedPaths(change.diff)})`;
  throw new AppError(
    'tool_definition_changed',
    `The definition of ${service.name}/${tool.name} ${what} since it was pinned; review the diff and accept it with ${accept}`,
    {
      extra: {
        ...change,
        service: service.name,
        ...(sub ? { subscription_id: sub.id } : {}),
        ...(holder.kind === 'agent' ? { agent_id: holder.id } : {}),
      },
    },
  );
}

/**
 * The paths a diff touches, for the problem's message (every face shows it: REST `detail`, the MCP
 * tool result's text, a deployed agent's `error.message`): at most 5, without the values, so a
 * poisoned description is not repeated into a model's context by the message itself.
 */
function changedPaths(diff: Array<Record<string, unknown>>): string {
  const paths = [...new Set(diff.map((op) => String(op.path)))];
  return paths.length > 5 ? `${paths.slice(0, 5).join(', ')}, …` : paths.join(', ');
}
