/**
 * The automatic memory of a tool execution: one short natural sentence — the tool, its salient
 * arguments and a trimmed result — e.g.
 * `Called search_flights on travel-api with origin "BER", destination "LIS" — succeeded in 132 ms
 * (HTTP 200): 3 results; first: airline "TAP", price 142.`
 *
 * Secret-looking arguments and fields (password, token, api_key, authorization…) never make it into
 * a memory.
 */
import type { ExecutionRecorded } from '../../events.js';
// Keys whose values are never written into a memory: the rule that keeps them out of the logs too.
import { isSecretName } from '../../lib/secret-names.js';

const MAX_ARGS = 6;
const MAX_VALUE_CHARS = 80;
const MAX_RESULT_FIELDS = 5;
const MAX_SENTENCE_CHARS = 600;

function trim(s: string, max: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** A short rendering of one value: scalars inline, containers by size. */
function renderValue(v: unknown, max = MAX_VALUE_CHARS): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v.trim() ? `"${trim(v, max)}"` : null;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) {
    if (v.length === 0) return 'none';
    if (v.length <= 3 && v.every((x) => typeof x === 'string' || typeof x === 'number'))
      return trim(v.map(String).join(', '), max);
    return `${v.length} items`;
  }
  if (typeof v === 'object') {
    const inner = renderFields(v as Record<string, unknown>, 3, 40);
    return inner ? `{${inner}}` : null;
  }
  return null;
}

/** `key value, key value` for the first scalar-ish, non-secret fields of an object. */
function renderFields(
  o: Record<string, unknown>,
  maxFields: number,
  maxValue = MAX_VALUE_CHARS,
  skip?: string,
): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (parts.length >= maxFields) break;
    if (k === skip || isSecretName(k)) continue;
    const r = typeof v === 'object' && v !== null && !Array.isArray(v) ? null : renderValue(v, maxValue);
    if (r !== null) parts.push(`${k.replace(/[_-]+/g, ' ')} ${r}`);
  }
  return parts.join(', ');
}

/** The first array found at the top level of an object (e.g. `results`, `items`, `data`). */
function mainList(o: Record<string, unknown>): [string, unknown[]] | null {
  for (const [k, v] of Object.entries(o)) if (Array.isArray(v)) return [k, v];
  return null;
}

/** A trimmed, human-readable rendering of a tool's output. */
export function describeOutput(output: unknown): string {
  if (output === null || output === undefined) return 'no content';
  if (typeof output === 'string') return output.trim() ? `"${trim(output, 200)}"` : 'no content';
  if (typeof output !== 'object') return String(output);
  const list = Array.isArray(output)
    ? (['results', output] as [string, unknown[]])
    : mainList(output as Record<string, unknown>);
  if (list) {
    const [name, items] = list;
    const noun = items.length === 1 ? name.replace(/s$/, '') : name;
    let s = `${items.length} ${noun.replace(/[_-]+/g, ' ')}`;
    const first = items[0];
    if (first !== undefined) {
      const r =
        typeof first === 'object' && first !== null && !Array.isArray(first)
          ? renderFields(first as Record<string, unknown>, 4)
          : renderValue(first);
      if (r) s += `; first: ${r}`;
    }
    if (!Array.isArray(output)) {
      const rest = renderFields(output as Record<string, unknown>, 2, MAX_VALUE_CHARS, name);
      if (rest) s += `; ${rest}`;
    }
    return s;
  }
  const fields = renderFields(output as Record<string, unknown>, MAX_RESULT_FIELDS);
  return fields || `an object with ${Object.keys(output as object).length} fields`;
}

/** Salient arguments: non-secret, non-empty, at most {@link MAX_ARGS}. */
export function describeArguments(args: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(args ?? {})) {
    if (parts.length >= MAX_ARGS) break;
    if (isSecretName(k)) continue;
    const r = renderValue(v);
    if (r !== null) parts.push(`${k.replace(/[_-]+/g, ' ')} ${r}`);
  }
  return parts.join(', ');
}

/** What {@link describeExecution} needs to know about an execution. */
export interface ExecutionFacts
  extends Pick<
    ExecutionRecorded,
    'toolName' | 'serviceName' | 'arguments' | 'status' | 'httpStatus' | 'output' | 'error' | 'durationMs'
  > {}

/** The one-sentence memory of an execution (≤ 600 characters). */
export function describeExecution(e: ExecutionFacts): string {
  const args = describeArguments(e.arguments);
  const head = `Called ${e.toolName} on ${e.serviceName}${args ? ` with ${args}` : ''}`;
  const http = e.httpStatus ? `, HTTP ${e.httpStatus}` : '';
  const ms = Math.max(0, Math.round(e.durationMs));
  const tail =
    e.status === 'succeeded'
      ? ` — succeeded (${ms} ms${http}): ${describeOutput(e.output)}.`
      : ` — failed (${ms} ms${http}) with ${e.error?.code ?? 'an error'}${e.error?.message ? `: ${trim(e.error.message, 160)}` : ''}.`;
  return trim(head + tail, MAX_SENTENCE_CHARS);
}
