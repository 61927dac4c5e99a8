/**
 * Background jobs linked to the request that queued them (issue #41), following the OpenTelemetry
 * messaging semantic conventions ("Semantic conventions for messaging spans"): enqueueing is a
 * PRODUCER span `send {job}` whose W3C context travels with the job — in BullMQ's own
 * context-propagation field (`opts.telemetry.metadata`, stored beside the job, not in its payload),
 * in memory for the in-process queue — and each run (attempt) is a CONSUMER span `process {job}`
 * that is a child of that context and also carries a span link to it (a retry or a job re-queued
 * after a restart still points at the request that asked for it). Plain calls while tracing is off.
 */
import { context, propagation, ROOT_CONTEXT, trace, type Link } from '@opentelemetry/api';
import { ATTR } from './names.js';
import { contextFrom, SpanKind, tracingOn, withSpan } from './trace.js';

/** `messaging.system` of the platform's queues (`bullmq`, or `in-process` for the embedded queue). */
export type QueueSystem = 'bullmq' | 'in-process';

/**
 * Run the enqueue of job `name` (`fn`) in a PRODUCER span `send {name}`; `fn` gets the context to
 * store with the job (a JSON string of `{ traceparent, tracestate? }`), undefined when tracing is off
 * or the enqueue happens outside any trace (a start-up re-queue stays unlinked).
 */
export function traceEnqueue<T>(
  system: QueueSystem,
  name: string,
  fn: (carrier: string | undefined) => Promise<T>,
): Promise<T> {
  if (!tracingOn() || !trace.getActiveSpan()) return fn(undefined);
  return withSpan(
    `send ${name}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        [ATTR.messagingSystem]: system,
        [ATTR.messagingDestination]: name,
        [ATTR.messagingOperation]: 'send',
        'messaging.operation.name': 'send',
      },
    },
    async () => {
      const carrier: Record<string, string> = {};
      // The producer span is active here: the job's context is its own.
      propagation.inject(context.active(), carrier);
      return fn(carrier.traceparent ? JSON.stringify(carrier) : undefined);
    },
  );
}

/** What the CONSUMER span records about one run of a job. */
export interface JobRun {
  system: QueueSystem;
  name: string;
  id: string;
  /** 1 for the first run. */
  attempt: number;
  /** What {@link traceEnqueue} gave the enqueue (a JSON carrier), if anything. */
  carrier: string | undefined;
}

/** The context of a stored carrier, or undefined when there is none or it is not valid. */
function queuedContext(carrier: string | undefined) {
  if (!carrier) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(carrier);
  } catch {
    return undefined;
  }
  const ctx = contextFrom(parsed, ROOT_CONTEXT);
  return trace.getSpanContext(ctx) ? ctx : undefined;
}

/**
 * Run one attempt of a job (`fn`) in a CONSUMER span `process {name}`: a child of the enqueuing
 * request's `send` span when the job carries its context, with a span link to it too; a new root
 * otherwise. `messaging.message.id` is the job id. A plain call of `fn` while tracing is off.
 */
export function traceJob<T>(run: JobRun, fn: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return fn();
  const parent = queuedContext(run.carrier);
  const producer = parent ? trace.getSpanContext(parent) : undefined;
  const links: Link[] = producer ? [{ context: producer, attributes: { 'messaging.operation.type': 'send' } }] : [];
  return withSpan(
    `process ${run.name}`,
    {
      kind: SpanKind.CONSUMER,
      parent: parent ?? ROOT_CONTEXT,
      links,
      attributes: {
        [ATTR.messagingSystem]: run.system,
        [ATTR.messagingDestination]: run.name,
        [ATTR.messagingOperation]: 'process',
        'messaging.operation.name': 'process',
        'messaging.message.id': run.id,
        'platform.job.attempt': run.attempt,
      },
    },
    () => fn(),
  );
}
