/**
 * The A2A v1 request handler of one published agent for one caller: the SDK's
 * {@link A2ARequestHandler} contract implemented on the deployments service, with no state of
 * its own (tasks are invocation records, so any instance answers for any task):
 *
 * - `SendMessage`: a synchronous invocation (trigger `a2a`) answered as the finished task; with
 *   `configuration.returnImmediately` an async one, answered as the `submitted` task.
 * - `SendStreamingMessage`: an async invocation; the stream sends the task (`submitted`), a
 *   `working` status when it starts, the `output` artifact, and the final status, then ends.
 * - `GetTask`: the invocation as a task (any invocation of the agent; tasks not started over A2A
 *   have their id as context). `SubscribeToTask`: the rest of its stream.
 * - `CancelTask`: invocations cannot be cancelled on the platform → `TaskNotCancelableError`.
 * - `ListTasks`, push notification configs and the extended card are not offered
 *   (`UnsupportedOperationError`, `PushNotificationNotSupportedError`,
 *   `ExtendedAgentCardNotConfiguredError`; the card says so in its capabilities).
 * - A message naming an existing `taskId` is refused: a task is one run of the handler
 *   (single-turn); continue the conversation with a new message in the same `contextId`.
 *
 * Platform errors become A2A errors: validation → `RequestMalformedError`, an unknown task →
 * `TaskNotFoundError`, other refusals (no active deployment, agent disabled, all sandboxes busy)
 * → a JSON-RPC internal error whose message starts with the platform's problem code.
 */
import { randomUUID } from 'node:crypto';
import type {
  AgentCard,
  CancelTaskRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  A2AError,
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import type { AppContext } from '../../context.js';
import type { Principal } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { follow } from '../deployments/follow.js';
import { getInvocation, invokeAgent } from '../deployments/invocations.js';
import type { InvocationView } from '../deployments/schemas.js';
import { artifactUpdateOf, inputOf, isTerminal, statusUpdateOf, taskOf } from './tasks.js';

/** How often a stream re-reads a task that runs elsewhere (or whose end it missed), ms. */
const POLL_MS = 250;

/** Resolve when invocation `id` ends in this process, or after `ms`. */
function nextChange(id: string, ms: number): Promise<void> {
  return new Promise((resolve) => {
    let off = () => {};
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      off();
      resolve();
    }
    off = follow(`inv:${id}`, (ev) => {
      if (ev.type === 'end') done();
    });
  });
}

/** The A2A handler of agent `agentId` for caller `p` (built per request; cheap). */
export class PlatformA2AHandler implements A2ARequestHandler {
  constructor(
    private readonly ctx: AppContext,
    private readonly p: Principal,
    private readonly agentId: string,
    private readonly card: AgentCard,
  ) {}

  async getAgentCard(): Promise<AgentCard> {
    return this.card;
  }

  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    throw new ExtendedAgentCardNotConfiguredError('This agent has no extended card');
  }

  /** Platform errors as A2A errors (unexpected ones are logged and answered without their detail). */
  private a2aError(err: unknown, what: 'task' | 'agent'): unknown {
    if (!(err instanceof AppError)) {
      if (err instanceof A2AError) return err;
      this.ctx.log.error({ err, agent_id: this.agentId }, 'a2a: request failed');
      return new Error('internal error');
    }
    if (err.code === 'validation_failed') return new RequestMalformedError(err.message);
    if (err.code === 'not_found' && what === 'task') return new TaskNotFoundError('Task not found');
    return new Error(`${err.code}: ${err.message}`);
  }

  private async invocation(id: string): Promise<InvocationView> {
    if (!id.trim()) throw new RequestMalformedError('id is required');
    try {
      return await getInvocation(this.ctx, this.p, this.agentId, id);
    } catch (err) {
      throw this.a2aError(err, 'task');
    }
  }

  /** Start the invocation of `params.message` (async or not). @throws A2A errors */
  private async start(params: SendMessageRequest, async: boolean): Promise<InvocationView> {
    const m: Message | undefined = params.message;
    if (!m?.messageId) throw new RequestMalformedError('message.messageId is required');
    if (!m.parts.length) throw new RequestMalformedError('message.parts must hold at least one part');
    if (m.taskId) {
      await this.invocation(m.taskId); // unknown → TaskNotFoundError
      throw new UnsupportedOperationError(
        'Tasks of this agent are single-turn and already finished or running; send a new message (same contextId) instead',
      );
    }
    const input = inputOf(m, m.contextId || randomUUID());
    try {
      return await invokeAgent(this.ctx, this.p, this.agentId, { input, async }, { trigger: 'a2a' });
    } catch (err) {
      throw this.a2aError(err, 'agent');
    }
  }

  async sendMessage(params: SendMessageRequest): Promise<Message | Task> {
    const inv = await this.start(params, params.configuration?.returnImmediately === true);
    return taskOf(inv, params.configuration?.historyLength);
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const inv = await this.start(params, true);
    yield { payload: { $case: 'task', value: taskOf(inv) } };
    yield* this.rest(inv);
  }

  /** The events after `inv`'s current state: `working` once it starts, then the artifact and the final status. */
  private async *rest(inv: InvocationView): AsyncGenerator<StreamResponse, void, undefined> {
    let cur = inv;
    let last = inv.status;
    while (!isTerminal(last)) {
      await nextChange(cur.id, POLL_MS);
      cur = await this.invocation(cur.id);
      if (cur.status === last) continue;
      last = cur.status;
      if (isTerminal(cur.status)) {
        const artifact = artifactUpdateOf(cur);
        if (artifact) yield { payload: { $case: 'artifactUpdate', value: artifact } };
      }
      yield { payload: { $case: 'statusUpdate', value: statusUpdateOf(cur) } };
    }
  }

  async getTask(params: GetTaskRequest): Promise<Task> {
    return taskOf(await this.invocation(params.id), params.historyLength);
  }

  async *resubscribe(params: SubscribeToTaskRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const inv = await this.invocation(params.id);
    if (isTerminal(inv.status)) throw new UnsupportedOperationError('The task has finished; read it with GetTask');
    yield { payload: { $case: 'task', value: taskOf(inv) } };
    yield* this.rest(inv);
  }

  async cancelTask(params: CancelTaskRequest): Promise<Task> {
    await this.invocation(params.id);
    throw new TaskNotCancelableError('Invocations of deployed agents cannot be cancelled');
  }

  async listTasks(): Promise<ListTasksResponse> {
    throw new UnsupportedOperationError(
      'ListTasks is not offered; read a task with GetTask, or list invocations with GET /v2/agents/:id/executions',
    );
  }

  async createTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw new PushNotificationNotSupportedError('Push notifications are not supported; use SubscribeToTask or GetTask');
  }

  async getTaskPushNotificationConfig(): Promise<TaskPushNotificationConfig> {
    throw new PushNotificationNotSupportedError('Push notifications are not supported');
  }

  async listTaskPushNotificationConfigs(): Promise<ListTaskPushNotificationConfigsResponse> {
    throw new PushNotificationNotSupportedError('Push notifications are not supported');
  }

  async deleteTaskPushNotificationConfig(): Promise<void> {
    throw new PushNotificationNotSupportedError('Push notifications are not supported');
  }
}
