/**
 * Per-app state of the deployments module's invocation records: the typed `AppContext.invocationLog`
 * field, created by `record.ts` on first use. This file imports nothing that imports `context.ts`,
 * so `context.ts` can name its type without an import loop.
 */
import type { agentInvocations } from '../../db/schema/index.js';
import type { WriteBatcher } from '../../lib/batcher.js';

/** A row of `agent_invocations` to insert. */
export type InvocationInsert = typeof agentInvocations.$inferInsert;

/**
 * The app's invocation log: the write-behind batcher of finished synchronous invocations and, per
 * invocation id, the commit of records not yet written (for read-your-writes on this instance).
 */
export interface InvocationLog {
  batcher: WriteBatcher<InvocationInsert>;
  /** Invocation id → its agent and the promise of its commit (settles either way), while pending. */
  pending: Map<string, { agentId: string; done: Promise<void> }>;
}
