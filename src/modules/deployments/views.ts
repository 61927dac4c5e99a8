/** Row → API view mappings of the deployments module. */
import { getTableColumns } from 'drizzle-orm';
import { agentInvocations } from '../../db/schema/index.js';
import type { InvocationFinished } from '../../events.js';
import { iso } from '../../http/ids.js';
import type { SandboxError } from '../../sandbox/runner.js';
import type { DeploymentRow } from './runtime.js';
import type { DeploymentView, InvocationSummary, InvocationView } from './schemas.js';

export type InvocationRow = typeof agentInvocations.$inferSelect;

/** Columns of an invocation without its (possibly large) input, output and logs. */
export const {
  input: _input,
  output: _output,
  logs: _logs,
  logsTruncated: _lt,
  calls: _calls,
  ...summaryColumns
} = getTableColumns(agentInvocations);

export type DeploymentStatus = DeploymentView['status'];
export type InvocationStatus = InvocationView['status'];

export function deploymentView(d: DeploymentRow): DeploymentView {
  return {
    id: d.id,
    agent_id: d.agentId,
    version: d.version,
    status: d.status as DeploymentStatus,
    entrypoint: d.entrypoint,
    description: d.description,
    artifact: {
      sha256: d.artifactSha256,
      size_bytes: d.artifactSize,
      files: d.fileCount,
      unpacked_bytes: d.unpackedBytes,
    },
    env_keys: d.envKeys,
    egress: d.egress,
    failure_reason: d.failureReason,
    created_by: d.createdBy,
    created_at: iso(d.createdAt),
    updated_at: iso(d.updatedAt),
    prepared_at: iso(d.preparedAt),
    activated_at: iso(d.activatedAt),
  };
}

export function invocationSummary(
  r: Omit<InvocationRow, 'input' | 'output' | 'logs' | 'logsTruncated' | 'calls'>,
): InvocationSummary {
  return {
    id: r.id,
    agent_id: r.agentId,
    deployment_id: r.deploymentId,
    version: r.version,
    status: r.status as InvocationStatus,
    async: r.async,
    trigger: r.trigger as InvocationSummary['trigger'],
    error: (r.error as SandboxError | null) ?? null,
    timeout_ms: r.timeoutMs,
    duration_ms: r.durationMs,
    cpu_ms: r.cpuMs,
    cold: r.cold,
    created_at: iso(r.createdAt),
    started_at: iso(r.startedAt),
    finished_at: iso(r.finishedAt),
  };
}

export function invocationView(r: InvocationRow): InvocationView {
  return {
    ...invocationSummary(r),
    input: r.input ?? null,
    output: r.output ?? null,
    logs: r.logs as InvocationView['logs'],
    logs_truncated: r.logsTruncated,
    calls: r.calls as InvocationView['calls'],
  };
}

/** The `invocation.finished` event of a finished invocation row (see `src/events.ts`). */
export function invocationFinished(r: InvocationRow): InvocationFinished {
  const e = r.error as SandboxError | null;
  return {
    invocationId: r.id,
    agentId: r.agentId,
    accountId: r.ownerId,
    deploymentId: r.deploymentId,
    version: r.version,
    trigger: r.trigger,
    status: r.status as InvocationFinished['status'],
    error: e ? { code: e.code, message: e.message } : null,
    durationMs: r.durationMs,
    finishedAt: (r.finishedAt ?? new Date()).toISOString(),
  };
}
