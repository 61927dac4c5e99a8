/** The identity automated runs (schedule ticks, trigger deliveries) invoke an agent with. */
import type { AgentPrincipal } from '../../http/auth.js';
import { AGENT_SCOPES, agentScopeSet } from '../agents/tokens.js';

/**
 * Agent `src.agentId` acting for its owner, holding the scopes of the credential that created the
 * schedule or trigger (`invokerScope`, space-separated; null: every agent scope), so the deployed
 * code never holds more than that credential did. `clientId` names the source (`schedule:sch_…`).
 * Roles are left empty: a queued invocation reads its owner's roles when it runs.
 */
export function runPrincipal(
  src: { agentId: string; ownerId: string; invokerScope: string | null },
  clientId: string,
): AgentPrincipal {
  const scopes = agentScopeSet(src.invokerScope === null ? AGENT_SCOPES : src.invokerScope.split(' '));
  return { kind: 'agent', agentId: src.agentId, ownerId: src.ownerId, roles: [], clientId, scope: [...scopes], scopes };
}
