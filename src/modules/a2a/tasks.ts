/**
 * A2A v1 ↔ platform mapping (A2A Protocol Specification v1.0, §4 data model): an A2A task is an
 * invocation of the deployed agent (`task.id` = `inv_…`), its state the invocation's status, its
 * one artifact (`output`) the handler's return value, and the handler's input is built from the
 * user message's parts. Values use the SDK's in-memory types (`@a2a-js/sdk`); the transport
 * serialises them to the spec's JSON.
 */
import { randomUUID } from 'node:crypto';
import {
  type Artifact,
  type Message,
  Part,
  Role,
  type Task,
  type TaskArtifactUpdateEvent,
  TaskState,
  type TaskStatus,
  type TaskStatusUpdateEvent,
} from '@a2a-js/sdk';
import type { InvocationView } from '../deployments/schemas.js';

/**
 * The input a deployed handler receives for an A2A message: `text` joins the text parts (null
 * when none), `data` is the one data part's value (an array of them when several; null when
 * none), `parts` every part in A2A JSON form (files as `url` / base64 `raw`), and the message's
 * `context_id` and `message_id`.
 */
export interface A2AInput {
  text: string | null;
  data: unknown;
  parts: unknown[];
  context_id: string;
  message_id: string;
}

/** The handler input for user message `m` in context `contextId`. */
export function inputOf(m: Message, contextId: string): A2AInput {
  const texts: string[] = [];
  const data: unknown[] = [];
  for (const p of m.parts) {
    if (p.content?.$case === 'text') texts.push(p.content.value);
    else if (p.content?.$case === 'data') data.push(p.content.value);
  }
  return {
    text: texts.length ? texts.join('\n') : null,
    data: data.length === 0 ? null : data.length === 1 ? data[0] : data,
    parts: m.parts.map((p) => Part.toJSON(p)),
    context_id: contextId,
    message_id: m.messageId,
  };
}

/** The input of `inv` when it came from an A2A message (null for an invocation started otherwise). */
function a2aInputOf(inv: InvocationView): A2AInput | null {
  const i = inv.input as Partial<A2AInput> | null;
  return i && typeof i === 'object' && typeof i.context_id === 'string' && Array.isArray(i.parts)
    ? (i as A2AInput)
    : null;
}

/** The task's context: the one of its message, else (an invocation started by other means) the invocation id. */
export function contextOf(inv: InvocationView): string {
  return a2aInputOf(inv)?.context_id ?? inv.id;
}

/** A2A state of an invocation status. */
export function stateOf(status: InvocationView['status']): TaskState {
  switch (status) {
    case 'queued':
      return TaskState.TASK_STATE_SUBMITTED;
    case 'running':
      return TaskState.TASK_STATE_WORKING;
    case 'succeeded':
      return TaskState.TASK_STATE_COMPLETED;
    default:
      return TaskState.TASK_STATE_FAILED;
  }
}

/** True for the states after which a task changes no more. */
export function isTerminal(status: InvocationView['status']): boolean {
  return status === 'succeeded' || status === 'failed' || status === 'timed_out';
}

function agentMessage(inv: InvocationView, text: string): Message {
  return {
    messageId: randomUUID(),
    contextId: contextOf(inv),
    taskId: inv.id,
    role: Role.ROLE_AGENT,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The task's status: the state, and for a failure an agent message `<code>: <message>`. */
export function statusOf(inv: InvocationView): TaskStatus {
  const failed = inv.status === 'failed' || inv.status === 'timed_out';
  return {
    state: stateOf(inv.status),
    message: failed && inv.error ? agentMessage(inv, `${inv.error.code}: ${inv.error.message}`) : undefined,
    timestamp: inv.finished_at ?? inv.started_at ?? inv.created_at,
  };
}

/** The `output` artifact of a succeeded invocation (a string → text part, any other JSON → data part); null without output. */
export function artifactOf(inv: InvocationView): Artifact | null {
  if (inv.status !== 'succeeded' || inv.output === null || inv.output === undefined) return null;
  const text = typeof inv.output === 'string';
  return {
    artifactId: 'output',
    name: 'output',
    description: "the handler's return value",
    parts: [
      {
        content: text ? { $case: 'text', value: inv.output as string } : { $case: 'data', value: inv.output },
        metadata: undefined,
        filename: '',
        mediaType: text ? 'text/plain' : 'application/json',
      },
    ],
    metadata: undefined,
    extensions: [],
  };
}

/** The user message of an A2A task, rebuilt from its stored input (empty history otherwise). */
function historyOf(inv: InvocationView): Message[] {
  const i = a2aInputOf(inv);
  if (!i) return [];
  return [
    {
      messageId: i.message_id,
      contextId: i.context_id,
      taskId: inv.id,
      role: Role.ROLE_USER,
      parts: i.parts.map((p) => Part.fromJSON(p)),
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
  ];
}

/**
 * Invocation `inv` as an A2A task. `historyLength` (spec §3.1.3): undefined = all, 0 = none.
 * Metadata carries the platform's view: agent, version, trigger, duration (ms).
 */
export function taskOf(inv: InvocationView, historyLength?: number): Task {
  const artifact = artifactOf(inv);
  return {
    id: inv.id,
    contextId: contextOf(inv),
    status: statusOf(inv),
    artifacts: artifact ? [artifact] : [],
    history: historyLength === 0 ? [] : historyOf(inv),
    metadata: {
      agent_id: inv.agent_id,
      version: inv.version,
      trigger: inv.trigger,
      duration_ms: inv.duration_ms,
    },
  };
}

/** A status-update event of `inv`. */
export function statusUpdateOf(inv: InvocationView): TaskStatusUpdateEvent {
  return { taskId: inv.id, contextId: contextOf(inv), status: statusOf(inv), metadata: undefined };
}

/** The artifact-update event carrying `inv`'s output in one chunk, or null without output. */
export function artifactUpdateOf(inv: InvocationView): TaskArtifactUpdateEvent | null {
  const artifact = artifactOf(inv);
  return artifact
    ? { taskId: inv.id, contextId: contextOf(inv), artifact, append: false, lastChunk: true, metadata: undefined }
    : null;
}
