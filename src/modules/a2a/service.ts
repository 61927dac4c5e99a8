/**
 * Publication of deployed agents over A2A (opt-in per agent, `PUT /v2/agents/:id/a2a`): who may
 * publish is who may manage the agent's deployments (its owner; another account's agent is 404),
 * and who may talk to a published agent is exactly who may invoke it (`agentInScope`, the
 * deployments service's check: the owner's token or API key, or the agent's own token). Nothing
 * here adds a rule of its own: the A2A face is an adapter.
 */
import { and, eq } from 'drizzle-orm';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { a2aPublications } from '../../db/schema/index.js';
import type { Principal } from '../../http/auth.js';
import { notFound } from '../../http/errors.js';
import { iso } from '../../http/ids.js';
import { getAgentForAccount } from '../agents/service.js';
import { agentInScope } from '../deployments/service.js';
import { a2aUrl } from './card.js';
import type { PublicationSchema } from './schemas.js';

export type PublicationView = Static<typeof PublicationSchema>;

type PublicationRow = typeof a2aPublications.$inferSelect;

function publicationView(ctx: AppContext, agentId: string, row: PublicationRow | undefined): PublicationView {
  const url = a2aUrl(ctx, agentId);
  return {
    agent_id: agentId,
    enabled: row?.enabled ?? false,
    url,
    card_url: `${url}/.well-known/agent-card.json`,
    created_at: iso(row?.createdAt ?? null),
    updated_at: iso(row?.updatedAt ?? null),
  };
}

/** Whether agent `agentId` is published over A2A. @throws AppError not_found (not in `p`'s scope) */
export async function getPublication(ctx: AppContext, p: Principal, agentId: string): Promise<PublicationView> {
  await agentInScope(ctx, p, agentId);
  const [row] = await ctx.db.select().from(a2aPublications).where(eq(a2aPublications.agentId, agentId));
  return publicationView(ctx, agentId, row);
}

/** Publish (`enabled: true`) or withdraw agent `agentId`. @throws AppError not_found */
export async function setPublication(
  ctx: AppContext,
  p: Principal,
  agentId: string,
  enabled: boolean,
): Promise<PublicationView> {
  const agent = await agentInScope(ctx, p, agentId);
  const now = new Date();
  const [row] = await ctx.db
    .insert(a2aPublications)
    .values({ agentId, ownerId: agent.ownerId, enabled, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({ target: a2aPublications.agentId, set: { enabled, updatedAt: now } })
    .returning();
  return publicationView(ctx, agentId, row);
}

/**
 * A published, active agent by id alone (the card is public: A2A discovery needs no credential).
 * @throws AppError not_found (unknown, unpublished, disabled or deleted: all look the same)
 */
export async function publishedAgent(ctx: AppContext, agentId: string): Promise<{ id: string; name: string }> {
  const [pub] = await ctx.db
    .select()
    .from(a2aPublications)
    .where(and(eq(a2aPublications.agentId, agentId), eq(a2aPublications.enabled, true)));
  if (!pub) throw notFound('Agent');
  const agent = await getAgentForAccount(ctx, pub.ownerId, agentId);
  if (agent.status !== 'active') throw notFound('Agent');
  return agent;
}

/**
 * The agent `p` talks to over A2A: in `p`'s invoke scope (deployments' `agentInScope`) and
 * published. @throws AppError not_found
 */
export async function a2aTarget(ctx: AppContext, p: Principal, agentId: string): Promise<{ id: string; name: string }> {
  await agentInScope(ctx, p, agentId, { cached: true });
  return publishedAgent(ctx, agentId);
}
