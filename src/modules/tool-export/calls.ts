/**
 * Function names of exported tools and the model's tool-call objects, in each provider's shape.
 * Pure functions, no I/O.
 *
 * Tool-call shapes read (what each provider's API returns to the caller):
 * - OpenAI Chat Completions `message.tool_calls[i]`: `{ id, type: "function", function: { name, arguments: "<JSON>" } }`
 * - OpenAI Responses `output[i]`: `{ type: "function_call", call_id, name, arguments: "<JSON>" }`
 * - Anthropic Messages `content[i]`: `{ type: "tool_use", id, name, input: { … } }`
 * - Gemini `candidates[0].content.parts[i]`: `{ functionCall: { name, args: { … }, id? } }`, or the
 *   `FunctionCall` itself `{ name, args }`
 */
import { createHash } from 'node:crypto';
import { AppError } from '../../http/errors.js';

/** The formats of the export (and of the tool-call objects the call route reads). */
export const FORMATS = ['openai', 'openai-responses', 'anthropic', 'gemini'] as const;
export type ExportFormat = (typeof FORMATS)[number];

/**
 * Function names every provider accepts: OpenAI and Anthropic `^[a-zA-Z0-9_-]{1,64}$`; Gemini
 * also wants a letter or underscore first. One rule for all keeps a name the same in every format.
 */
const NAME = /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/;

/**
 * The function name of tool `tool` of service `service`: `<service>__<tool>` when that already
 * follows the providers' rules; otherwise the name with every other character replaced by `_`, cut
 * to 55 characters, plus `_` and 8 hex characters of SHA-256(service NUL tool) — stable across
 * exports and distinct for tools whose cleaned names would otherwise collide. A name is reversed
 * by looking it up among the caller's exported tools (it is not parsed).
 */
export function functionName(service: string, tool: string): string {
  const plain = `${service}__${tool}`;
  if (NAME.test(plain)) return plain;
  let base = plain.replace(/[^a-zA-Z0-9_-]/g, '_');
  if (!/^[a-zA-Z_]/.test(base)) base = `_${base}`;
  const hash = createHash('sha256').update(`${service}\u0000${tool}`).digest('hex').slice(0, 8);
  return `${base.slice(0, 55)}_${hash}`;
}

/** A tool call as the model made it, in any of the shapes above. */
export interface ParsedToolCall {
  format: ExportFormat;
  name: string;
  arguments: Record<string, unknown>;
  /** The provider's id of the call (echoed in the result message), or null when it has none. */
  callId: string | null;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function badCall(pointer: string, message: string): AppError {
  return new AppError('validation_failed', `Not a tool call: ${pointer} ${message}`, {
    errors: [{ in: 'body', pointer, message }],
  });
}

/** Arguments sent as a JSON string (OpenAI) or an object (Anthropic, Gemini). */
function argumentsOf(raw: unknown, pointer: string): Record<string, unknown> {
  if (raw === undefined || raw === null || raw === '') return {};
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw badCall(pointer, 'is not valid JSON');
    }
  }
  if (!isObject(value)) throw badCall(pointer, 'must be a JSON object');
  return value;
}

function text(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 ? v : null;
}

function named(v: unknown, pointer: string): string {
  const name = text(v);
  if (!name) throw badCall(pointer, 'must be a non-empty string');
  return name;
}

/**
 * Read the model's tool-call object. @throws AppError validation_failed (400) naming what is
 * missing when `body` is none of the shapes, its name is empty or its arguments are not a JSON object
 */
export function parseToolCall(body: unknown): ParsedToolCall {
  if (!isObject(body)) throw badCall('/', 'must be an object');
  if (isObject(body.function)) {
    return {
      format: 'openai',
      name: named(body.function.name, '/function/name'),
      arguments: argumentsOf(body.function.arguments, '/function/arguments'),
      callId: text(body.id),
    };
  }
  if (body.type === 'function_call') {
    return {
      format: 'openai-responses',
      name: named(body.name, '/name'),
      arguments: argumentsOf(body.arguments, '/arguments'),
      callId: text(body.call_id) ?? text(body.id),
    };
  }
  if (body.type === 'tool_use')
    return {
      format: 'anthropic',
      name: named(body.name, '/name'),
      arguments: argumentsOf(body.input, '/input'),
      callId: text(body.id),
    };
  const gemini = isObject(body.functionCall)
    ? body.functionCall
    : isObject(body.function_call)
      ? body.function_call
      : null;
  if (gemini) {
    const at = isObject(body.functionCall) ? '/functionCall' : '/function_call';
    return {
      format: 'gemini',
      name: named(gemini.name, `${at}/name`),
      arguments: argumentsOf(gemini.args, `${at}/args`),
      callId: text(gemini.id),
    };
  }
  if ('args' in body)
    return {
      format: 'gemini',
      name: named(body.name, '/name'),
      arguments: argumentsOf(body.args, '/args'),
      callId: text(body.id),
    };
  throw badCall(
    '/',
    'expected an OpenAI tool call ({function: {name, arguments}} or {type: "function_call"}), an Anthropic tool_use block or a Gemini functionCall',
  );
}

/** What the upstream answered, as the execute path reports it. */
export interface CallOutcome {
  status: 'succeeded' | 'failed';
  output: unknown;
  http_status?: number;
  error?: { code: string; message: string };
}

/** The result as text for the model: the output (strings as they are), or the error with what the upstream said. */
function resultText(o: CallOutcome): string {
  if (o.status === 'succeeded') return typeof o.output === 'string' ? o.output : JSON.stringify(o.output ?? null);
  return JSON.stringify({
    error: o.error ?? { code: 'upstream_error', message: 'The tool failed' },
    ...(o.http_status !== undefined ? { http_status: o.http_status } : {}),
    output: o.output ?? null,
  });
}

/**
 * The message (or content block) that gives the result back to the model, in the call's own
 * format: OpenAI `{role: "tool", tool_call_id, content}`, Responses `{type: "function_call_output",
 * call_id, output}`, Anthropic `{type: "tool_result", tool_use_id, content, is_error?}` (a block of
 * the next `user` message), Gemini `{functionResponse: {name, response: {output} | {error}, id?}}`
 * (a part of the next `user` content).
 */
export function resultMessage(call: ParsedToolCall, o: CallOutcome): Record<string, unknown> {
  switch (call.format) {
    case 'openai':
      return { role: 'tool', tool_call_id: call.callId, content: resultText(o) };
    case 'openai-responses':
      return { type: 'function_call_output', call_id: call.callId, output: resultText(o) };
    case 'anthropic':
      return {
        type: 'tool_result',
        tool_use_id: call.callId,
        content: resultText(o),
        ...(o.status === 'failed' ? { is_error: true } : {}),
      };
    case 'gemini': {
      const response =
        o.status === 'succeeded' ? { output: o.output ?? null } : { error: JSON.parse(resultText(o)) as unknown };
      return { functionResponse: { name: call.name, response, ...(call.callId ? { id: call.callId } : {}) } };
    }
  }
}
