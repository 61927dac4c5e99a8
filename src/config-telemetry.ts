/**
 * OpenTelemetry settings (`src/telemetry`): the standard `OTEL_*` variables of the OpenTelemetry
 * specification ("Environment Variable Specification", SDK configuration) plus the platform's own
 * in-process trace store. Part of {@link ./config.ts}'s `Config` (`config.telemetry`).
 * docs/observability.md, ADR 0991.
 */
import { bool, fail, int, oneOf, str, url, type Env } from './config-parse.js';

/** The samplers of `OTEL_TRACES_SAMPLER` this service supports (the specification's built-in ones). */
export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** OpenTelemetry settings (`config.telemetry`). */
export interface TelemetryConfig {
  /** `OTEL_SDK_DISABLED=true`: no tracing at all, whatever else is set. */
  disabled: boolean;
  /** `OTEL_SERVICE_NAME` (default `agent-platform`): the `service.name` resource attribute. */
  serviceName: string;
  /**
   * OTLP/HTTP traces endpoint, full URL: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else
   * `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`. Unset → nothing is exported.
   */
  tracesEndpoint?: string;
  /** Metrics endpoint, likewise (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` or base + `/v1/metrics`). */
  metricsEndpoint?: string;
  /** `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` default, or `http/json`; gRPC is not offered). */
  protocol: 'http/protobuf' | 'http/json';
  /** `OTEL_EXPORTER_OTLP_HEADERS`: `k=v,k2=v2` (URL-encoded values), sent with every export. */
  headers: Record<string, string>;
  /** `OTEL_TRACES_SAMPLER` (default `parentbased_always_on`). */
  sampler: (typeof SAMPLERS)[number];
  /** `OTEL_TRACES_SAMPLER_ARG` for the ratio samplers, 0..1 (default 1). */
  samplerArg: number;
  /** `OTEL_METRIC_EXPORT_INTERVAL`, ms (default 60000). */
  metricIntervalMs: number;
  /** `OTEL_RECORD_ARGUMENTS=on`: tool arguments on `execute_tool` spans, secret-named fields redacted. */
  recordArguments: boolean;
  /**
   * `TRACES_KEEP`: traces kept in process for `GET /v1/traces/:id` and the console (default 1000;
   * 0 = no store). The store is on only with `TRACES_STORE=on` or when an endpoint is set (ADR 0991).
   */
  keep: number;
  /** `TRACES_STORE` (default off): keep the last `keep` traces in process without a collector. */
  store: boolean;
  /** `TRACES_MAX_SPANS` (default 512): spans kept per trace; later ones are counted, not kept. */
  maxSpansPerTrace: number;
}

function otlpHeaders(env: Env, name: string): Record<string, string> {
  const v = str(env, name);
  const out: Record<string, string> = {};
  if (!v) return out;
  for (const part of v.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) fail(name, 'a list of key=value pairs separated by commas', v);
    out[part.slice(0, eq).trim()] = decodeURIComponent(part.slice(eq + 1).trim());
  }
  return out;
}

function signalEndpoint(env: Env, signal: 'traces' | 'metrics'): string | undefined {
  const own = url(env, `OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_ENDPOINT`, ['http', 'https']);
  if (own) return own;
  const base = url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http', 'https']);
  return base ? `${base.replace(/\/+$/, '')}/v1/${signal}` : undefined;
}

/** Read the telemetry settings from `env`. @throws ConfigError naming the variable on a bad value */
export function telemetryConfig(env: Env): TelemetryConfig {
  const argRaw = str(env, 'OTEL_TRACES_SAMPLER_ARG');
  const samplerArg = argRaw === undefined ? 1 : Number(argRaw);
  if (!Number.isFinite(samplerArg) || samplerArg < 0 || samplerArg > 1)
    fail('OTEL_TRACES_SAMPLER_ARG', 'a number from 0 to 1', argRaw ?? '');
  const protocol = oneOf(env, 'OTEL_EXPORTER_OTLP_PROTOCOL', ['http/protobuf', 'http/json'] as const, 'http/protobuf');
  return {
    disabled: bool(env, 'OTEL_SDK_DISABLED', false),
    serviceName: str(env, 'OTEL_SERVICE_NAME', 'agent-platform') as string,
    tracesEndpoint: signalEndpoint(env, 'traces'),
    metricsEndpoint: signalEndpoint(env, 'metrics'),
    protocol,
    headers: otlpHeaders(env, 'OTEL_EXPORTER_OTLP_HEADERS'),
    sampler: oneOf(env, 'OTEL_TRACES_SAMPLER', SAMPLERS, 'parentbased_always_on'),
    samplerArg,
    metricIntervalMs: int(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000, 100, 86_400_000),
    recordArguments: bool(env, 'OTEL_RECORD_ARGUMENTS', false),
    keep: int(env, 'TRACES_KEEP', 1000, 0, 100_000),
    store: bool(env, 'TRACES_STORE', false),
    maxSpansPerTrace: int(env, 'TRACES_MAX_SPANS', 512, 1, 100_000),
  };
}
