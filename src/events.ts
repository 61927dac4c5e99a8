/**
 * In-process domain events between modules, so a module can react to another without the two
 * importing each other. The emitting module owns the event; subscribers are wired once
 * in `app.ts`. Delivery is synchronous and in subscription order: a listener must return quickly
 * (queue real work) and a listener that throws is logged and skipped, never failing the emitter.
 */
import type { FastifyBaseLogger } from 'fastify';

/**
 * One finished tool execution, as the execute path recorded it (emitted by `sessions/execute.ts`
 * right after the execution row is written; memory turns it into an automatic memory).
 * `durationMs` in milliseconds; `httpStatus` null for MCP tools and failed calls.
 */
export interface ExecutionRecorded {
  executionId: string;
  sessionId: string;
  /** The account the execution belongs to. */
  userId: string;
  agentId: string | null;
  serviceId: string;
  serviceName: string;
  toolId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  status: 'succeeded' | 'failed';
  httpStatus: number | null;
  output: unknown;
  error: { code: string; message: string } | null;
  durationMs: number;
}

/**
 * One finished execution as the execution log stores it (`sessions/usage.ts`): the
 * {@link ExecutionRecorded} facts under the execution's own `id`; `at` defaults to now.
 */
export interface ExecutionRecord extends Omit<ExecutionRecorded, 'executionId' | 'serviceName'> {
  id: string;
  at?: Date;
}

/**
 * The stored roles of an account changed (emitted by the identity module after the change is
 * committed; the subscriptions module ends the account's quota leases, whose units were counted
 * under the previous roles' plan).
 */
export interface AccountRolesChanged {
  userId: string;
}

/**
 * A tool call waits for a human approval (emitted by the approvals module when it creates the
 * request; delivered to webhooks as `approval.requested`). `expiresAt` is an ISO 8601 instant;
 * `url` is where an approver decides (console or API).
 */
export interface ApprovalRequested {
  approvalId: string;
  accountId: string;
  agentId: string | null;
  serviceName: string;
  toolName: string;
  expiresAt: string;
  url: string;
}

/**
 * An invocation of a deployed agent ended and its outcome is stored (emitted by
 * `deployments/invocations.ts`; webhooks deliver it as `invocation.completed` or `invocation.failed`).
 * `trigger`: what started it (`api` | `schedule` | `trigger` | `a2a`); `durationMs` in milliseconds;
 * `finishedAt` an ISO 8601 instant.
 */
export interface InvocationFinished {
  invocationId: string;
  agentId: string;
  accountId: string;
  deploymentId: string;
  version: number;
  trigger: string;
  status: 'succeeded' | 'failed' | 'timed_out';
  error: { code: string; message: string } | null;
  durationMs: number | null;
  finishedAt: string;
}

/**
 * The prepare step of a deployment settled: the version became `active`, or `failed` with
 * `reason` (emitted by `deployments/service.ts` after the change is committed).
 */
export interface DeploymentSettled {
  deploymentId: string;
  agentId: string;
  accountId: string;
  version: number;
  status: 'active' | 'failed';
  reason: string | null;
}

/**
 * A connection's token refresh was refused for good (RFC 6749 §5.2): the connection is now
 * `expired` (or `error` when the service's client was refused) and needs the user to reconnect
 * (emitted by `connections/grant.ts` after the change is committed).
 */
export interface ConnectionExpired {
  connectionId: string;
  accountId: string;
  serviceId: string;
  status: 'expired' | 'error';
  reason: string;
}

/**
 * `consumeQuota` refused calls because a quota window is used up (emitted by
 * `subscriptions/quota.ts` on each refused batch; the webhooks module forwards only the first per
 * window as `quota.exhausted`). `resetsAt`: ISO 8601 instant the window resets.
 */
export interface QuotaRefused {
  accountId: string;
  serviceId: string;
  subscriptionId: string;
  plan: string;
  window: 'day' | 'month';
  limit: number;
  resetsAt: string;
}

/** Every event name with its payload. */
export interface PlatformEvents {
  'execution.recorded': ExecutionRecorded;
  'account.roles_changed': AccountRolesChanged;
  'approval.requested': ApprovalRequested;
  'invocation.finished': InvocationFinished;
  'deployment.settled': DeploymentSettled;
  'connection.expired': ConnectionExpired;
  'quota.refused': QuotaRefused;
}

type Listener<T> = (payload: T) => void;

/** A typed, synchronous event hub; one per app (`ctx.events`). */
export class EventHub {
  private readonly listeners: { [K in keyof PlatformEvents]?: Array<Listener<PlatformEvents[K]>> } = {};

  constructor(private readonly log: Pick<FastifyBaseLogger, 'error'>) {}

  /** Subscribe to `name`. @returns a function that unsubscribes */
  on<K extends keyof PlatformEvents>(name: K, listener: Listener<PlatformEvents[K]>): () => void {
    const list = (this.listeners[name] ??= []) as Array<Listener<PlatformEvents[K]>>;
    list.push(listener);
    return () => {
      const i = list.indexOf(listener);
      if (i >= 0) list.splice(i, 1);
    };
  }

  /** Deliver `payload` to every listener of `name`. Never throws (a failing listener is logged). */
  emit<K extends keyof PlatformEvents>(name: K, payload: PlatformEvents[K]): void {
    const list = this.listeners[name] as Array<Listener<PlatformEvents[K]>> | undefined;
    if (!list) return;
    for (const listener of list) {
      try {
        listener(payload);
      } catch (err) {
        try {
          this.log.error({ err: (err as Error).message, event: name }, 'event listener failed');
        } catch {
          /* never throw */
        }
      }
    }
  }
}
