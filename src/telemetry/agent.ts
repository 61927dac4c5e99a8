/**
 * The trace of a deployed agent's run across the sandbox boundary. The sandboxed process holds no
 * tracer: the host's `invoke_agent` span is active while the broker of the invocation is made, and
 * {@link tracedBroker} runs every platform call the handler makes (`context.tools.execute`,
 * `context.memory.*`, …) as a child span `context.{op}` of it, whatever async context the
 * sandbox's message arrived in (a warm environment was spawned under another request). The
 * handler sees the run's `traceparent` in its `context` (to pass on to its own outbound calls), and
 * its `console` and `context.log` lines become `log` events of the `invoke_agent` span.
 */
import { context, trace } from '@opentelemetry/api';
import type { LogEntry } from '../sandbox/contract.js';
import type { Broker } from '../sandbox/runner.js';
import { PLATFORM } from './names.js';
import { tracingOn, withSpan } from './trace.js';

/** Most `log` events added to one span (later lines stay in the invocation's logs only). */
const MAX_LOG_EVENTS = 100;

/** `broker` with each call in a `context.{op}` span under the context active now; `broker` itself when off. */
export function tracedBroker(broker: Broker): Broker {
  if (!tracingOn()) return broker;
  const parent = context.active();
  return (op, args) =>
    withSpan(`context.${String(op).slice(0, 40)}`, { parent, attributes: { 'platform.call.op': String(op) } }, () =>
      broker(op, args),
    );
}

/**
 * `onLog` that also adds each line as a `log` event (`log.message`, `log.iostream`, level) of the
 * span active now (the `invoke_agent` span); `onLog` itself when off.
 */
export function logsAsSpanEvents(onLog: (entry: LogEntry) => void): (entry: LogEntry) => void {
  const span = tracingOn() ? trace.getActiveSpan() : undefined;
  if (!span) return onLog;
  let added = 0;
  return (entry) => {
    if (added++ < MAX_LOG_EVENTS)
      span.addEvent('log', {
        [PLATFORM.logMessage]: entry.message,
        [PLATFORM.logStream]: entry.stream,
        ...(entry.level ? { 'log.level': entry.level } : {}),
      });
    onLog(entry);
  };
}
