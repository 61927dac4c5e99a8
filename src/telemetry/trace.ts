/**
 * Span helpers for the instrumented code paths. Everything here costs one boolean test when tracing
 * is off (`configureTelemetry` in sdk.ts decides): no span, no context switch, no header written.
 * With tracing on, spans come from the global tracer of `@opentelemetry/api` and the active
 * context (AsyncLocalStorage) carries the parent; W3C Trace Context (`traceparent`, `tracestate`)
 * goes out in HTTP headers and MCP `params._meta` and comes in the same ways.
 */
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';
import type { TelemetryConfig } from '../config-telemetry.js';
import { isSecretName } from '../lib/secret-names.js';
import { ATTR } from './names.js';

let on = false;
let recordArgs = false;

/** Called by sdk.ts only: turn the helpers on or off for `c`. */
export function setTracingOn(value: boolean, c: TelemetryConfig): void {
  on = value;
  recordArgs = value && c.recordArguments;
}

/** True while tracing is on in this process. */
export function tracingOn(): boolean {
  return on;
}

/** True when tool arguments may be recorded on spans (`OTEL_RECORD_ARGUMENTS=on`). */
export function recordingArguments(): boolean {
  return recordArgs;
}

const tracer = () => trace.getTracer('agent-platform');

/** Options of {@link withSpan}: span kind (default internal), attributes, and an explicit parent. */
export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** Parent context (default: the active one), e.g. a `traceparent` received from a caller. */
  parent?: Context;
  /** Start time (`performance.now()` milliseconds or epoch), default now. */
  startTime?: number;
  /** Span links (e.g. a job's run to the request that queued it). */
  links?: Link[];
}

/**
 * Run `fn` inside a new active span named `name`; the span ends when `fn` settles. A thrown error
 * sets status ERROR, `error.type` (an AppError's `code`, else the error's name) and an `exception`
 * event, and is rethrown. With tracing off, `fn(undefined)` is called as it is.
 */
export function withSpan<T>(name: string, opts: SpanOptions, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!on) return fn(undefined);
  const parent = opts.parent ?? context.active();
  return tracer().startActiveSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, links: opts.links },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        failSpan(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/** Mark `span` failed by `err`: status ERROR, `error.type`, an `exception` event. */
export function failSpan(span: Span, err: unknown): void {
  const code = (err as { code?: unknown })?.code;
  const type = typeof code === 'string' ? code : err instanceof Error ? err.name : 'error';
  span.setAttribute(ATTR.errorType, type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  if (err instanceof Error) span.recordException(err);
}

/** Start a span that the caller ends (for hooks that cannot wrap a function). Undefined when off. */
export function startSpan(name: string, opts: SpanOptions): Span | undefined {
  if (!on) return undefined;
  return tracer().startSpan(
    name,
    { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, startTime: opts.startTime },
    opts.parent,
  );
}

/** The active span (undefined when off or outside any span). */
export function activeSpan(): Span | undefined {
  return on ? trace.getActiveSpan() : undefined;
}

/** Set attributes on the active span, if any. */
export function annotate(attributes: Attributes): void {
  if (on) trace.getActiveSpan()?.setAttributes(attributes);
}

/** Add the W3C `traceparent` (and `tracestate`) of the active context to `headers` (mutated). */
export function injectTraceHeaders(headers: Record<string, string>): void {
  if (on) propagation.inject(context.active(), headers);
}

/**
 * The active context's `{ traceparent, tracestate? }`, for MCP `params._meta` (GenAI MCP
 * conventions, "Context propagation") and the sandbox protocol; undefined when off or none.
 */
export function traceCarrier(): Record<string, string> | undefined {
  if (!on) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

/**
 * The context a received carrier continues (a REST request's headers, an MCP request's `_meta`, a
 * sandbox message): the remote parent when the carrier holds a valid `traceparent`, else the
 * active context. Only string values are read.
 */
export function contextFrom(carrier: unknown, base?: Context): Context {
  const active = base ?? context.active();
  if (!on || !carrier || typeof carrier !== 'object') return active;
  const c = carrier as Record<string, unknown>;
  if (typeof c.traceparent !== 'string') return active;
  const clean: Record<string, string> = { traceparent: c.traceparent };
  if (typeof c.tracestate === 'string') clean.tracestate = c.tracestate;
  const extracted = propagation.extract(ROOT_CONTEXT, clean);
  return trace.getSpanContext(extracted) ? extracted : active;
}

/** Run `fn` with `ctx` active (plain call when off). */
export function runIn<T>(ctx: Context | undefined, fn: () => T): T {
  return on && ctx ? context.with(ctx, fn) : fn();
}

/** The trace id of the active span (32 hex digits), or undefined. */
export function activeTraceId(): string | undefined {
  if (!on) return undefined;
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && sc.traceFlags & 1 ? sc.traceId : undefined;
}

/**
 * `args` as a JSON string for a span attribute, with every secret-named field (at any depth,
 * `lib/secret-names.ts`) replaced by `[redacted]`; undefined unless `OTEL_RECORD_ARGUMENTS=on`.
 */
export function argumentsAttribute(args: unknown): string | undefined {
  if (!recordArgs) return undefined;
  return JSON.stringify(args, (key, value) => (key !== '' && isSecretName(key) ? '[redacted]' : value));
}

export { SpanKind };
