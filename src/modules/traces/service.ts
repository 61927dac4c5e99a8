/**
 * Reading the in-process trace store (`src/telemetry/store.ts`) for the owner: a trace answers
 * only the spans that belong to the caller's account (`spansOfAccount`); a trace with none of them,
 * an evicted one and an unknown id all answer 404, so another account's trace cannot be told from
 * a missing one. With the store off (`TRACES_STORE`, ADR 0991) every read answers 404 saying so,
 * with the problem's extension member `tracing: "off"`.
 */
import type { Static } from 'typebox';
import { accountOf, type Principal } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { telemetryRuntime } from '../../telemetry/sdk.js';
import { spansOfAccount, type TraceStore } from '../../telemetry/store.js';
import type { TraceList, TraceSchema, TraceSummarySchema } from './schemas.js';

type Trace = Static<typeof TraceSchema>;
type TraceSummary = Static<typeof TraceSummarySchema>;

function store(): TraceStore {
  const s = telemetryRuntime()?.store;
  if (!s)
    throw new AppError(
      'not_found',
      'No trace is kept by this server: set TRACES_STORE=on or OTEL_EXPORTER_OTLP_ENDPOINT (docs/observability.md)',
      // An extension member (RFC 9457 §3.2) so that a client (the console) can tell "off" from "not found".
      { extra: { tracing: 'off' } },
    );
  return s;
}

/**
 * The spans of trace `traceId` that belong to the principal's account, by start time.
 * @throws AppError not_found (unknown, evicted, another account's trace, or the store is off)
 */
export function getTrace(principal: Principal, traceId: string): Trace {
  const t = store().get(traceId);
  const spans = t ? spansOfAccount(t, accountOf(principal)) : [];
  if (!t || spans.length === 0) throw new AppError('not_found', 'Trace not found');
  return { trace_id: traceId, spans, dropped_spans: t.droppedSpans };
}

function summary(principal: Principal, traceId: string): TraceSummary | null {
  const t = store().get(traceId);
  const spans = t ? spansOfAccount(t, accountOf(principal)) : [];
  const first = spans[0];
  if (!first) return null;
  const end = Math.max(...spans.map((s) => Date.parse(s.end_time)));
  return {
    trace_id: traceId,
    root: first.name,
    start_time: first.start_time,
    duration_ms: end - Date.parse(first.start_time),
    span_count: spans.length,
    error: spans.some((s) => s.status.code === 'error'),
  };
}

/**
 * The kept traces of an execution (`exe_…`) and/or an invocation (`inv_…`) that the principal's
 * account may see (zero or one each; an execution inside an invocation shares its trace).
 * @throws AppError validation_failed when neither id is given; not_found when the store is off
 */
export function listTraces(
  principal: Principal,
  q: { execution_id?: string; invocation_id?: string },
): Static<typeof TraceList> {
  const ids = [q.execution_id, q.invocation_id].filter((x): x is string => typeof x === 'string');
  if (ids.length === 0) throw new AppError('validation_failed', 'Give execution_id or invocation_id');
  const s = store();
  const seen = new Set<string>();
  const data: TraceSummary[] = [];
  for (const id of ids) {
    const traceId = s.traceFor(id);
    if (!traceId || seen.has(traceId)) continue;
    seen.add(traceId);
    const one = summary(principal, traceId);
    if (one) data.push(one);
  }
  return { data };
}
