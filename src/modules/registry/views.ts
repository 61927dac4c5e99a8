/** How the registry shows services and tools (owner and public views; never a secret). */
import { asc, eq } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { toolAliases, tools } from '../../db/schema/index.js';
import type { Tx } from '../../db/client.js';
import { iso } from '../../http/ids.js';
import type { ServiceRow, ServiceSource, ToolRow } from './executable.js';
import { oauth2View } from './oauth2.js';
import type { Static } from 'typebox';
import type { ToolSchema } from './schemas.js';

/** Upstream auth as shown (never the secret). */
export function authView(s: ServiceRow) {
  const oauth2 = oauth2View(s);
  return { type: s.authType, name: s.authName ?? null, ...(oauth2 ? { oauth2 } : {}) };
}

/** Tool as shown to anyone. */
export type ToolView = Static<typeof ToolSchema>;

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

/** The card of a service as the marketplace lists it (id, names, description, category, tags, version). */
export function serviceCardView(s: ServiceRow) {
  return {
    id: s.id,
    name: s.name,
    display_name: s.displayName,
    description: s.description,
    category: s.category ?? null,
    tags: s.tags,
    version: s.version ?? null,
  };
}

/** The native manifest fields of a service: its card and its base URL. */
export function manifestView(s: ServiceRow) {
  return { ...serviceCardView(s), base_url: s.baseUrl };
}

/** Service fields shown to its owner (no secrets). */
export function serviceView(s: ServiceRow) {
  return {
    ...manifestView(s),
    source: s.source as ServiceSource,
    source_url: s.sourceUrl ?? null,
    status: s.status,
    auth: authView(s),
    published_at: iso(s.publishedAt),
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
  };
}

/** Tools of a service with their aliases, in creation order. */
export async function listServiceTools(ctx: AppContext | { db: Tx }, serviceId: string): Promise<ToolView[]> {
  const rows = await ctx.db.select().from(tools).where(eq(tools.serviceId, serviceId)).orderBy(asc(tools.id));
  const aliases = await ctx.db
    .select()
    .from(toolAliases)
    .where(eq(toolAliases.serviceId, serviceId))
    .orderBy(asc(toolAliases.createdAt));
  const byTool = new Map<string, string[]>();
  for (const a of aliases) byTool.set(a.toolId, [...(byTool.get(a.toolId) ?? []), a.name]);
  return rows.map((t) => toolView(t, byTool.get(t.id) ?? []));
}
