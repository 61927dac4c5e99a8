/** TypeBox schemas of the trace routes (`/v1/traces`). */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

const Attributes = Type.Record(Type.String(), Type.Unknown(), {
  description: 'OpenTelemetry attributes (GenAI, MCP, HTTP and database semantic conventions; `platform.*`)',
});

export const SpanSchema = Type.Object({
  trace_id: Type.String({ description: '32 lower-case hex digits (W3C Trace Context)' }),
  span_id: Type.String({ description: '16 lower-case hex digits' }),
  parent_span_id: Nullable(Type.String(), { description: 'null for the trace root, or a remote caller’s span' }),
  name: Type.String({ description: 'e.g. `execute_tool get_weather`, `invoke_agent triage`, `POST`' }),
  kind: Type.String({ description: '`internal` | `server` | `client` | `producer` | `consumer`' }),
  start_time: Timestamp,
  end_time: Timestamp,
  duration_ms: Type.Number({ description: 'milliseconds, fractional' }),
  status: Type.Object({
    code: Type.String({ description: '`unset` | `ok` | `error`' }),
    message: Type.Optional(Type.String()),
  }),
  attributes: Attributes,
  events: Type.Array(Type.Object({ name: Type.String(), time: Timestamp, attributes: Attributes })),
  links: Type.Array(Type.Object({ trace_id: Type.String(), span_id: Type.String(), attributes: Attributes }), {
    description: 'span links, e.g. a job run (`process {job}`) to the request that queued it (`send {job}`)',
  }),
});

export const TraceSchema = Type.Object({
  trace_id: Type.String(),
  spans: Type.Array(SpanSchema, { description: 'the caller’s spans of the trace, by start time' }),
  dropped_spans: Type.Integer({ description: 'spans past TRACES_MAX_SPANS that were not kept' }),
});

export const TraceSummarySchema = Type.Object({
  trace_id: Type.String(),
  root: Type.String({ description: 'name of the earliest span the caller may see' }),
  start_time: Timestamp,
  duration_ms: Type.Number(),
  span_count: Type.Integer(),
  error: Type.Boolean({ description: 'some span of the trace has status error' }),
});

export const TraceParams = Type.Object({
  trace_id: Type.String({ pattern: '^[0-9a-f]{32}$', description: '32 lower-case hex digits' }),
});

export const TraceListQuery = Type.Object({
  execution_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  invocation_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
});

export const TraceList = Type.Object({ data: Type.Array(TraceSummarySchema) });
