/**
 * Registry: API services and their tools, registered by owners from a native manifest, an
 * OpenAPI 3.x document or an MCP server (spec group "Registry"; docs/manifest.md).
 *
 * Owner operations filter by owner (another account's service is "not found"). The marketplace
 * shows published services only. {@link resolveExecutableTool} is the execution path's lookup
 * (sessions module): it accepts a tool's current name, a former name (alias) or its id.
 */
import { and, arrayContains, asc, eq, ilike, or, sql } from 'drizzle-orm';
import type { AppContext } from '../../context.js';
import { services, toolAliases, tools } from '../../db/schema/index.js';
import { AppError, notFound } from '../../http/errors.js';
import { iso } from '../../http/ids.js';
import { keyset, toPage, type Page } from '../../http/pagination.js';
import { encryptSecret } from '../../lib/secrets.js';
import {
  TOOL_NAME,
  checkAuth,
  checkBaseUrl,
  checkTools,
  type ManifestProblem,
  type NormalizedTool,
  type UpstreamAuthInput,
} from './manifest.js';
import {
  findTool,
  registryChanged,
  serviceWhere,
  upstreamAuthOf,
  type ServiceRow,
  type ServiceStatus,
} from './executable.js';
import { authView, listServiceTools, manifestView, serviceCardView, serviceView, type ToolView } from './views.js';
import { authColumns, checkOAuth2Complete } from './oauth2.js';
import { definitionHash } from './definitions.js';
import { scanDescription } from './description-scan.js';
import {
  checkBaseUrlTarget,
  fail,
  fromManifestTools,
  loadSource,
  newSigningSecret,
  replaceTools,
  toolsBase,
  type RegisterInput,
} from './register.js';
import type { Static } from 'typebox';
import type { UpdateServiceBody } from './schemas.js';

// ------------------------------------------------------------------ owner operations

/** The service `ref` (id or name) owned by `ownerId`. @throws AppError not_found (also for other owners' services) */
export async function getOwnedService(ctx: AppContext, ownerId: string, ref: string): Promise<ServiceRow> {
  const [s] = await ctx.db
    .select()
    .from(services)
    .where(and(serviceWhere(ref), eq(services.ownerId, ownerId)))
    .limit(1);
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
export async function listOwnerServices(
  ctx: AppContext,
  ownerId: string,
  q: { limit?: number; cursor?: string },
): Promise<Page<ReturnType<typeof serviceView> & { tool_count: number }>> {
  const page = keyset(q, services.id);
  const rows = await ctx.db
    .select({
      s: services,
      toolCount: sql<number>`(select count(*)::int from "tools" t where t.service_id = "services"."id")`,
    })
    .from(services)
    .where(and(eq(services.ownerId, ownerId), page.after))
    .orderBy(page.orderBy)
    .limit(page.take);
  return toPage(
    rows,
    page.limit,
    (r) => ({ ...serviceView(r.s), tool_count: Number(r.toolCount) }),
    (r) => r.s.id,
  );
}

/** The owner's view of one service (tools with aliases, warnings). Publishing adds checklist and reports. */
export async function getOwnerService(ctx: AppContext, ownerId: string, ref: string) {
  const s = await getOwnedService(ctx, ownerId, ref);
  return { ...serviceView(s), tools: await listServiceTools(ctx, s.id), warnings: s.warnings };
}

export type UpdateInput = Static<typeof UpdateServiceBody>;

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
  if (input.description !== undefined && !input.description.trim() && s.source === 'manifest')
    errors.push({ pointer: '/description', message: 'must not be empty' });
  let next: NormalizedTool[] | undefined;
  if (input.tools) {
    if (s.source !== 'manifest')
      errors.push({
        pointer: '/tools',
        message: `tools of a ${s.source} service come from its source: use POST /owner/services/:id/sync`,
      });
    else if (input.tools.length === 0) errors.push({ pointer: '/tools', message: 'must list at least one tool' });
    else {
      next = fromManifestTools(input.tools);
      errors.push(...checkTools(next, '/tools', { requireDescription: true }).errors);
      const aliases = await ctx.db.select().from(toolAliases).where(eq(toolAliases.serviceId, s.id));
      const current = await ctx.db
        .select({ id: tools.id, name: tools.name })
        .from(tools)
        .where(eq(tools.serviceId, s.id));
      const idByName = new Map(current.map((t) => [t.name, t.id]));
      next.forEach((t, i) => {
        const alias = aliases.find((a) => a.name === t.name);
        if (alias && !idByName.has(t.name))
          errors.push({ pointer: `/tools/${i}/name`, message: 'is a former name (alias) of another tool' });
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
  if (!s.sourceUrl)
    throw new AppError(
      'invalid_state',
      `A ${s.source} service registered inline has nothing to sync; PATCH its tools instead`,
    );
  const auth = upstreamAuthOf(ctx, s);
  const input: RegisterInput = s.source === 'mcp' ? { mcp_url: s.sourceUrl } : { openapi_url: s.sourceUrl };
  const loaded = await loadSource(ctx, input, auth.type === 'none' ? undefined : (auth as UpstreamAuthInput));
  const check = checkTools(loaded.tools, toolsBase(loaded.source, input), { requireDescription: false });
  const errors = [...loaded.errors, ...check.errors];
  if (!loaded.tools.length && !errors.length)
    errors.push({ pointer: toolsBase(loaded.source, input), message: 'the source lists no tools' });
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
export async function rotateSigningSecret(
  ctx: AppContext,
  ownerId: string,
  ref: string,
): Promise<{ signing_secret: string }> {
  const s = await getOwnedService(ctx, ownerId, ref);
  const secret = newSigningSecret();
  await ctx.db
    .update(services)
    .set({ signingSecret: encryptSecret(ctx, secret), updatedAt: new Date() })
    .where(eq(services.id, s.id));
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
export async function renameTool(
  ctx: AppContext,
  ownerId: string,
  serviceRef: string,
  toolRef: string,
  newName: string,
): Promise<ToolView> {
  const s = await getOwnedService(ctx, ownerId, serviceRef);
  if (!TOOL_NAME.test(newName)) {
    throw new AppError('validation_failed', 'name must match ^[a-zA-Z0-9_-]{1,64}$', {
      errors: [{ in: 'body', pointer: '/name', message: 'must match ^[a-zA-Z0-9_-]{1,64}$' }],
    });
  }
  const tool = await findTool(ctx, s.id, toolRef);
  if (!tool) throw notFound('Tool');
  if (tool.name === newName) return (await listServiceTools(ctx, s.id)).find((t) => t.id === tool.id)!;
  await ctx.db.transaction(async (tx) => {
    const [other] = await tx
      .select({ id: tools.id })
      .from(tools)
      .where(and(eq(tools.serviceId, s.id), eq(tools.name, newName)))
      .limit(1);
    const [alias] = await tx
      .select()
      .from(toolAliases)
      .where(and(eq(toolAliases.serviceId, s.id), eq(toolAliases.name, newName)))
      .limit(1);
    if (other || (alias && alias.toolId !== tool.id)) {
      throw new AppError(
        'conflict',
        `Tool name "${newName}" is already used in this service${alias ? ' (as a former name)' : ''}`,
        { errors: [{ in: 'body', pointer: '/name', message: 'is taken' }] },
      );
    }
    if (alias) await tx.delete(toolAliases).where(and(eq(toolAliases.serviceId, s.id), eq(toolAliases.name, newName)));
    await tx.insert(toolAliases).values({ serviceId: s.id, name: tool.name, toolId: tool.id });
    // The name is part of the definition a subscriber pinned (registry/definitions.ts).
    const definitionHashNext = definitionHash({ ...tool, name: newName });
    await tx
      .update(tools)
      .set({ name: newName, definitionHash: definitionHashNext, updatedAt: new Date() })
      .where(eq(tools.id, tool.id));
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
  // Instructions aimed at the model in a description fail the checklist (description-scan.ts, ADR 0981).
  rows.forEach((t, i) => {
    for (const f of scanDescription(t.description))
      problems.push({
        pointer: `/tools/${i}/description`,
        message: `looks like an instruction to the model (${f.rule}): ${f.excerpt}`,
      });
  });
  const normalized = rows.map((t) => ({
    name: t.name,
    description: t.description,
    method: t.method,
    path: t.path,
    inputSchema: t.inputSchema,
    outputSchema: t.outputSchema ?? null,
    argLocations: t.argLocations,
  }));
  problems.push(...checkTools(normalized, '/tools', { requireDescription: true }).errors);
  return problems;
}

// ------------------------------------------------------------------ marketplace

function likePattern(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Published services, newest first; filters: exact `category`, `tag` contained in tags, `q` substring of name/display name/description. */
export async function listMarketplace(
  ctx: AppContext,
  q: { limit?: number; cursor?: string; category?: string; tag?: string; q?: string },
) {
  const page = keyset(q, services.id);
  const text = q.q ? likePattern(q.q) : undefined;
  const rows = await ctx.db
    .select({
      s: services,
      toolCount: sql<number>`(select count(*)::int from "tools" t where t.service_id = "services"."id")`,
    })
    .from(services)
    .where(
      and(
        eq(services.status, 'published'),
        page.after,
        q.category ? eq(services.category, q.category) : undefined,
        q.tag ? arrayContains(services.tags, [q.tag]) : undefined,
        text
          ? or(ilike(services.name, text), ilike(services.displayName, text), ilike(services.description, text))
          : undefined,
      ),
    )
    .orderBy(page.orderBy)
    .limit(page.take);
  return toPage(
    rows,
    page.limit,
    ({ s, toolCount }) => ({
      ...serviceCardView(s),
      source: s.source,
      tool_count: Number(toolCount),
      published_at: iso(s.publishedAt),
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
