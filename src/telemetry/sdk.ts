/**
 * OpenTelemetry Node SDK set-up (`@opentelemetry/sdk-node`), once per process, from
 * `config.telemetry` (the standard `OTEL_*` variables; docs/observability.md, ADR 0991):
 *  - tracing is ON when an OTLP endpoint is set or the in-process store is asked for
 *    (`TRACES_STORE=on`), and never with `OTEL_SDK_DISABLED=true`; OFF, the SDK is not even loaded
 *    and every helper of `./trace.ts` is a plain function call;
 *  - spans go to the store ({@link TraceStore}) and, with an endpoint, to a batching OTLP/HTTP
 *    exporter (protobuf, or JSON with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`);
 *  - the sampler is `OTEL_TRACES_SAMPLER` / `_ARG` (parent-based by default, so a caller's sampled
 *    `traceparent` is honoured);
 *  - on PostgreSQL the maintained `pg` instrumentation adds a span per statement;
 *  - metrics (tool duration, MCP operation duration, sandbox starts) through a periodic OTLP reader
 *    when an endpoint is set.
 * A later `buildApp` in the same process (tests, benchmarks) re-points the exporter, sampler and
 * store bounds at its own configuration: the processors and the sampler are switchable delegates.
 */
import type { Context, Attributes, Link, SpanKind } from '@opentelemetry/api';
import type { ReadableSpan, Sampler, SamplingResult, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { TelemetryConfig } from '../config-telemetry.js';
import { setTracingOn } from './trace.js';
import { TraceStore } from './store.js';

/** What a started SDK exposes to the app. */
export interface TelemetryRuntime {
  /** The in-process store, or null when `TRACES_KEEP=0` / the store is off. */
  store: TraceStore | null;
  /** Export what is buffered (spans and metrics) now; for shutdown and tests. */
  flush(): Promise<void>;
}

class SwitchSampler implements Sampler {
  constructor(public current: Sampler) {}
  shouldSample(
    ctx: Context,
    traceId: string,
    name: string,
    kind: SpanKind,
    attrs: Attributes,
    links: Link[],
  ): SamplingResult {
    return this.current.shouldSample(ctx, traceId, name, kind, attrs, links);
  }
  toString(): string {
    return `Switch{${this.current.toString()}}`;
  }
}

class SwitchProcessor implements SpanProcessor {
  processors: SpanProcessor[] = [];
  onStart(span: Span, parent: Context): void {
    for (const p of this.processors) p.onStart(span, parent);
  }
  onEnd(span: ReadableSpan): void {
    for (const p of this.processors) p.onEnd(span);
  }
  async forceFlush(): Promise<void> {
    await Promise.all(this.processors.map((p) => p.forceFlush()));
  }
  async shutdown(): Promise<void> {
    await Promise.all(this.processors.map((p) => p.shutdown()));
  }
}

interface Started {
  sampler: SwitchSampler;
  processor: SwitchProcessor;
  store: TraceStore;
  exportProcessor: SpanProcessor | null;
  flushMetrics: () => Promise<void>;
}

let started: Promise<Started> | null = null;
let runtime: TelemetryRuntime | null = null;

/** Whether `c` turns tracing on (ADR 0991): an endpoint, or the store asked for; never when disabled. */
export function tracingWanted(c: TelemetryConfig): boolean {
  return !c.disabled && (c.tracesEndpoint !== undefined || (c.store && c.keep > 0));
}

async function sampler(c: TelemetryConfig): Promise<Sampler> {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = await import(
    '@opentelemetry/sdk-trace-base'
  );
  switch (c.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(c.samplerArg);
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(c.samplerArg) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

async function exportProcessor(c: TelemetryConfig): Promise<SpanProcessor | null> {
  if (!c.tracesEndpoint) return null;
  const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const opts = { url: c.tracesEndpoint, headers: c.headers };
  const exporter =
    c.protocol === 'http/json'
      ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(opts)
      : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(opts);
  return new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 });
}

async function start(c: TelemetryConfig, postgres: boolean): Promise<Started> {
  const [{ NodeSDK }, { resourceFromAttributes }, { W3CTraceContextPropagator }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
  ]);
  const store = new TraceStore(c.store || c.tracesEndpoint ? c.keep : 0, c.maxSpansPerTrace);
  const processor = new SwitchProcessor();
  const switchSampler = new SwitchSampler(await sampler(c));
  const instrumentations = [];
  if (postgres) {
    const { PgInstrumentation } = await import('@opentelemetry/instrumentation-pg');
    instrumentations.push(new PgInstrumentation({ requireParentSpan: true }));
  }
  let flushMetrics = async () => {};
  const metricReaders = [];
  if (c.metricsEndpoint) {
    const { PeriodicExportingMetricReader } = await import('@opentelemetry/sdk-metrics');
    const opts = { url: c.metricsEndpoint, headers: c.headers };
    const exporter =
      c.protocol === 'http/json'
        ? new (await import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter(opts)
        : new (await import('@opentelemetry/exporter-metrics-otlp-proto')).OTLPMetricExporter(opts);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: c.metricIntervalMs });
    metricReaders.push(reader);
    flushMetrics = () => reader.forceFlush();
  }
  const sdk = new NodeSDK({
    autoDetectResources: false,
    resource: resourceFromAttributes({ 'service.name': c.serviceName }),
    sampler: switchSampler,
    spanProcessors: [processor],
    spanLimits: { attributeValueLengthLimit: 4096, attributeCountLimit: 64, eventCountLimit: 128 },
    textMapPropagator: new W3CTraceContextPropagator(),
    metricReaders,
    instrumentations,
  });
  sdk.start();
  return { sampler: switchSampler, processor, store, exportProcessor: null, flushMetrics };
}

/**
 * Start (first call) or re-point (later calls) the SDK for `c`; turns the `./trace.ts` helpers on
 * or off. `postgres`: the database is PostgreSQL (`pg` instrumentation). Returns null when tracing
 * is off for `c` (nothing loaded, nothing recorded).
 */
export async function configureTelemetry(c: TelemetryConfig, postgres: boolean): Promise<TelemetryRuntime | null> {
  if (!tracingWanted(c)) {
    setTracingOn(false, c);
    runtime = null;
    return null;
  }
  started ??= start(c, postgres);
  const s = await started;
  s.sampler.current = await sampler(c);
  s.store.resize(c.store || c.tracesEndpoint ? c.keep : 0, c.maxSpansPerTrace);
  const previous = s.exportProcessor;
  s.exportProcessor = await exportProcessor(c);
  s.processor.processors = s.exportProcessor ? [s.store, s.exportProcessor] : [s.store];
  if (previous) await previous.shutdown().catch(() => undefined);
  setTracingOn(true, c);
  runtime = {
    store: c.store || c.tracesEndpoint ? s.store : null,
    flush: async () => {
      await s.processor.forceFlush();
      await s.flushMetrics();
    },
  };
  return runtime;
}

/** The running SDK's runtime (store and flush), or null when tracing is off. */
export function telemetryRuntime(): TelemetryRuntime | null {
  return runtime;
}
