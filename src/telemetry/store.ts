/**
 * The in-process trace store: the last N traces (`TRACES_KEEP`, default 1000) as plain objects, for
 * `GET /v1/traces/:trace_id` and the console's waterfall without a collector (ADR 0991). A span
 * processor: ended spans are added to their trace; the oldest trace is dropped past N, and a trace
 * keeps at most `TRACES_MAX_SPANS` spans (more are counted in `dropped_spans`), so memory is bounded
 * by N × max spans × the SDK's attribute limits.
 */
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { PLATFORM } from './names.js';

/** One span as the API answers it. Times are ISO 8601; `duration_ms` a float in milliseconds. */
export interface StoredSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  /** `internal` | `server` | `client` | `producer` | `consumer`. */
  kind: string;
  start_time: string;
  end_time: string;
  duration_ms: number;
  /** `unset` | `ok` | `error`, with the status message when there is one. */
  status: { code: 'unset' | 'ok' | 'error'; message?: string };
  attributes: Record<string, unknown>;
  events: Array<{ name: string; time: string; attributes: Record<string, unknown> }>;
  /** Span links: e.g. a job's `process` span to the `send` span of the request that queued it. */
  links: Array<{ trace_id: string; span_id: string; attributes: Record<string, unknown> }>;
}

/** A kept trace: its spans (in end order) and how many were not kept. */
export interface StoredTrace {
  traceId: string;
  spans: StoredSpan[];
  droppedSpans: number;
  /** Keys of {@link TraceStore.traceFor} (execution and invocation ids) that point at this trace. */
  keys: string[];
}

const KINDS = ['internal', 'server', 'client', 'producer', 'consumer'];
const STATUS = ['unset', 'ok', 'error'] as const;

function iso(t: [number, number]): string {
  return new Date(t[0] * 1000 + t[1] / 1e6).toISOString();
}

function toStored(s: ReadableSpan): StoredSpan {
  const sc = s.spanContext();
  const parent = s.parentSpanContext?.spanId ?? null;
  const status: StoredSpan['status'] = { code: STATUS[s.status.code] ?? 'unset' };
  if (s.status.message) status.message = s.status.message;
  return {
    trace_id: sc.traceId,
    span_id: sc.spanId,
    parent_span_id: parent,
    name: s.name,
    kind: KINDS[s.kind] ?? 'internal',
    start_time: iso(s.startTime),
    end_time: iso(s.endTime),
    duration_ms: s.duration[0] * 1000 + s.duration[1] / 1e6,
    status,
    attributes: { ...s.attributes },
    events: s.events.map((e) => ({ name: e.name, time: iso(e.time), attributes: { ...(e.attributes ?? {}) } })),
    links: s.links.map((l) => ({
      trace_id: l.context.traceId,
      span_id: l.context.spanId,
      attributes: { ...(l.attributes ?? {}) },
    })),
  };
}

/** Bounded store of recent traces; a {@link SpanProcessor} of the SDK (sdk.ts). */
export class TraceStore implements SpanProcessor {
  private readonly traces = new Map<string, StoredTrace>();
  private readonly index = new Map<string, string>();

  /** @param keep traces kept (oldest dropped first); @param maxSpans spans kept per trace */
  constructor(
    private keep: number,
    private maxSpans: number,
  ) {}

  /** Change the bounds (a later app in the same process); trims at once. */
  resize(keep: number, maxSpans: number): void {
    this.keep = keep;
    this.maxSpans = maxSpans;
    this.trim();
  }

  onStart(_span: Span, _parent: Context): void {}

  onEnd(span: ReadableSpan): void {
    if (this.keep === 0) return;
    const traceId = span.spanContext().traceId;
    let t = this.traces.get(traceId);
    if (!t) {
      t = { traceId, spans: [], droppedSpans: 0, keys: [] };
      this.traces.set(traceId, t);
      this.trim();
    }
    if (t.spans.length >= this.maxSpans) {
      t.droppedSpans++;
      return;
    }
    t.spans.push(toStored(span));
    for (const key of [PLATFORM.executionId, PLATFORM.invocationId]) {
      const v = span.attributes[key];
      if (typeof v === 'string' && !this.index.has(v)) {
        this.index.set(v, traceId);
        t.keys.push(v);
      }
    }
  }

  async forceFlush(): Promise<void> {}
  async shutdown(): Promise<void> {}

  private trim(): void {
    while (this.traces.size > this.keep) {
      const oldest = this.traces.keys().next().value as string;
      for (const k of this.traces.get(oldest)?.keys ?? []) this.index.delete(k);
      this.traces.delete(oldest);
    }
  }

  /** The kept trace `traceId` (32 lower-case hex digits), or undefined. */
  get(traceId: string): StoredTrace | undefined {
    return this.traces.get(traceId);
  }

  /** The trace id recorded for an execution (`exe_…`) or invocation (`inv_…`) id, if still kept. */
  traceFor(id: string): string | undefined {
    return this.index.get(id);
  }

  /** Number of traces kept now. */
  get size(): number {
    return this.traces.size;
  }
}

/**
 * The spans of `trace` that belong to `accountId`: a span belongs to the account named by its own
 * `platform.account_id`, else by its nearest ancestor's in the trace; spans of no account, or of
 * another, are left out (a caller's trace continued by this service may hold other parties' spans).
 */
export function spansOfAccount(trace: StoredTrace, accountId: string): StoredSpan[] {
  const byId = new Map(trace.spans.map((s) => [s.span_id, s]));
  const owner = new Map<string, string | null>();
  const ownerOf = (s: StoredSpan, depth = 0): string | null => {
    const known = owner.get(s.span_id);
    if (known !== undefined) return known;
    const own = s.attributes[PLATFORM.accountId];
    let result: string | null = typeof own === 'string' ? own : null;
    if (result === null && s.parent_span_id && depth < 256) {
      const parent = byId.get(s.parent_span_id);
      result = parent ? ownerOf(parent, depth + 1) : null;
    }
    owner.set(s.span_id, result);
    return result;
  };
  return trace.spans
    .filter((s) => ownerOf(s) === accountId)
    .sort((a, b) => (a.start_time < b.start_time ? -1 : a.start_time > b.start_time ? 1 : 0));
}
