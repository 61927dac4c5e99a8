/**
 * The host side of the line protocol of `bootstrap.ts`: the shape of a message the sandboxed
 * process writes on fd 3 (one JSON object per line), and what its `result` and `log` messages
 * become on the host.
 */
import type { LogEntry, SandboxError, SandboxResult } from './contract.js';

/** Longest captured output line, characters (longer lines are cut and end in `…`). */
export const MAX_LINE = 8 * 1024;

/** Largest message from the process on fd 3 (a result plus framing), bytes, for a result limit of `maxOutput` bytes. */
export const frameMax = (maxOutput: number): number => maxOutput * 2 + 64 * 1024;

/** One message from the process (fields by type `t`: `ready`, `load_failed`, `result`, `fatal`, `log`, `call`). */
export type Msg = {
  t?: string;
  id?: number;
  op?: string;
  args?: unknown;
  status?: string;
  output_json?: string;
  error?: SandboxError;
  level?: string;
  message?: unknown;
  fields?: unknown;
  export?: string;
};

/** The outcome of a run whose handler returned or threw. */
export type Outcome = Pick<SandboxResult, 'status' | 'output' | 'error'>;

/** The `output_too_large` error for a result limit of `maxOutputBytes` bytes. */
export function outputTooLarge(maxOutputBytes: number): SandboxError {
  return { code: 'output_too_large', message: `the handler result is larger than ${maxOutputBytes} bytes` };
}

/**
 * The outcome a `result` message reports: the parsed `output_json` when it succeeded (failing
 * with `output_too_large` over `maxOutputBytes` bytes, `output_not_serializable` when it is not
 * JSON), or its `error` (as the process sent it: clean it before showing it); undefined for a
 * malformed message.
 */
export function resultOf(m: Msg, maxOutputBytes: number): Outcome | undefined {
  if (m.status === 'succeeded' && typeof m.output_json === 'string') {
    if (Buffer.byteLength(m.output_json) > maxOutputBytes)
      return { status: 'failed', output: null, error: outputTooLarge(maxOutputBytes) };
    try {
      return { status: 'succeeded', output: JSON.parse(m.output_json), error: null };
    } catch {
      return {
        status: 'failed',
        output: null,
        error: { code: 'output_not_serializable', message: 'the handler result is not JSON' },
      };
    }
  }
  if (m.status === 'failed' && m.error && typeof m.error === 'object')
    return { status: 'failed', output: null, error: m.error };
  return undefined;
}

/**
 * The `platform` log line of a `log` message (`context.log.*`): level `info` unless `warn` or
 * `error`, message cut at {@link MAX_LINE}, `fields` kept when an object of at most that size as JSON.
 */
export function logLineOf(m: Msg): LogEntry {
  const level = m.level === 'warn' || m.level === 'error' ? m.level : 'info';
  const fields =
    m.fields && typeof m.fields === 'object' && !Array.isArray(m.fields)
      ? (m.fields as Record<string, unknown>)
      : undefined;
  const text = typeof m.message === 'string' ? m.message.slice(0, MAX_LINE) : '';
  return {
    ts: new Date().toISOString(),
    stream: 'platform',
    level,
    message: text,
    ...(fields && JSON.stringify(fields).length <= MAX_LINE ? { fields } : {}),
  };
}
