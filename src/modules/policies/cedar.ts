/**
 * The Cedar side of policies on tool calls: the published schema (namespace `Platform`), the
 * parse + validation of one policy's text, and the request (principal, resource, context and the
 * entities they name) of one tool call. Engine: the official `@cedar-policy/cedar-wasm` (Node entry).
 * Model and reasons: docs/governance.md#policies, ADR 0971.
 */
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import type { DetailedError, EntityJson, PolicyJson } from '@cedar-policy/cedar-wasm/nodejs';
import { CREDENTIAL_SCOPES, type Principal } from '../../http/auth.js';
import { AppError, type FieldError } from '../../http/errors.js';

/**
 * The Cedar schema every policy is validated against (served at `GET /v1/policies/schema`).
 * - principal: `User` (a user by access token or API key; `api_key` is the key id) or `Agent`,
 *   both `in` their `Account` (the account's user id);
 * - action: `execute`;
 * - resource: `Tool` `"<service name>/<tool name>"` `in` its `Service` `"<service name>"`, with
 *   `tags` (`read_only`, `destructive`, `write`, `idempotent`, `open_world`: from the HTTP method,
 *   or from an MCP tool's annotations; computed by the registry, `registry/tool-tags.ts`);
 * - context: `arguments` (every top-level argument as a String tag: strings as is, other values as
 *   their JSON text), `numbers` (the integer top-level arguments as Long tags), `argument_names`,
 *   `time` (UTC: `epoch_ms`, `hour` 0–23, `minute`, `weekday` 0 = Sunday … 6), `calls` (this
 *   caller's calls of this tool in the last hour and day).
 */
export const CEDAR_SCHEMA = `namespace Platform {
  entity Account;
  entity User in [Account] = {
    account: Account,
    roles: Set<String>,
    scopes: Set<String>,
    via: String,
    api_key?: String,
  };
  entity Agent in [Account] = {
    account: Account,
    agent_id: String,
    roles: Set<String>,
    scopes: Set<String>,
  };
  entity Service = { name: String, owner: Account };
  entity Tool in [Service] = {
    service: String,
    tool: String,
    method: String,
    tags: Set<String>,
  };
  entity Arguments tags String;
  entity Numbers tags Long;
  type Time = { epoch_ms: Long, hour: Long, minute: Long, weekday: Long };
  type Calls = { last_hour: Long, last_day: Long };
  action execute appliesTo {
    principal: [User, Agent],
    resource: [Tool],
    context: {
      arguments: Arguments,
      numbers: Numbers,
      argument_names: Set<String>,
      time: Time,
      calls: Calls,
    },
  };
}
`;

/** One error of a policy's text: Cedar's message, its help, and where (1-based line and column, 0-based offset). */
export interface PolicyTextError {
  message: string;
  help: string | null;
  offset: number | null;
  line: number | null;
  column: number | null;
}

/** A policy's text, parsed and validated: its JSON form (effect, scope, conditions, annotations; what it reads: `reads.ts`). */
export interface ParsedPolicy {
  json: PolicyJson;
  /** `@approval("required")`: a match holds the call for a person's approval instead of denying it. */
  approval: boolean;
}

/** `offset` as 1-based line and column of `text`. */
function positionOf(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/** Cedar's errors with positions in `text` (the first source location of each). */
export function textErrors(errors: DetailedError[], text: string): PolicyTextError[] {
  return errors.map((e) => {
    const at = e.sourceLocations?.[0];
    const label = at?.label ? ` (${at.label})` : '';
    if (!at) return { message: e.message, help: e.help, offset: null, line: null, column: null };
    return { message: `${e.message}${label}`, help: e.help, offset: at.start, ...positionOf(text, at.start) };
  });
}

function invalid(detail: string, errors: PolicyTextError[]): AppError {
  const where = errors
    .map((e) => (e.line === null ? e.message : `line ${e.line}, column ${e.column}: ${e.message}`))
    .join('; ');
  const fieldErrors: FieldError[] = errors.map((e) => ({
    in: 'body',
    pointer: '/source',
    message: e.line === null ? e.message : `line ${e.line}, column ${e.column}: ${e.message}`,
  }));
  return new AppError('validation_failed', `${detail}: ${where}`, {
    errors: fieldErrors,
    extra: { cedar_errors: errors },
  });
}

/**
 * Parse and validate one policy's Cedar text against {@link CEDAR_SCHEMA} (strict mode). The text
 * must hold exactly one static `forbid` statement (the stance is allow-by-default: an allow-list is
 * written `forbid … unless { … }`; ADR 0971).
 * @throws AppError validation_failed (400) with `cedar_errors` (message, help, line, column, offset)
 */
export function parsePolicy(source: string): ParsedPolicy {
  const parts = cedar.policySetTextToParts(source);
  if (parts.type === 'failure') throw invalid('The policy does not parse', textErrors(parts.errors, source));
  if (parts.policy_templates.length > 0 || parts.policies.length !== 1)
    throw invalid('A policy holds exactly one statement', [
      {
        message: `found ${parts.policies.length} policies and ${parts.policy_templates.length} templates`,
        help: 'create one policy per statement; templates (?principal, ?resource) are not supported',
        offset: null,
        line: null,
        column: null,
      },
    ]);
  const checked = cedar.validate({
    schema: CEDAR_SCHEMA,
    policies: { staticPolicies: source },
    validationSettings: { mode: 'strict' },
  });
  if (checked.type === 'failure')
    throw invalid('The policy could not be validated', textErrors(checked.errors, source));
  if (checked.validationErrors.length > 0)
    throw invalid(
      'The policy does not match the schema (GET /v1/policies/schema)',
      textErrors(
        checked.validationErrors.map((v) => v.error),
        source,
      ),
    );
  const json = cedar.policyToJson(source);
  if (json.type === 'failure') throw invalid('The policy does not parse', textErrors(json.errors, source));
  if (json.json.effect !== 'forbid')
    throw invalid('Only forbid policies are accepted: calls are allowed unless a policy forbids them', [
      {
        message: 'the effect is permit',
        help: 'write the allow-list as forbid(principal, action, resource) unless { … };',
        offset: 0,
        line: 1,
        column: 1,
      },
    ]);
  return {
    json: json.json,
    approval: json.json.annotations?.approval === 'required',
  };
}

/**
 * A stored policy's text, parsed without validation (it was validated when written): the cheap
 * path of loading an account's policies.
 * @throws Error when the text no longer parses
 */
export function parseStoredPolicy(source: string): ParsedPolicy {
  const json = cedar.policyToJson(source);
  if (json.type === 'failure') throw new Error(json.errors.map((e) => e.message).join('; '));
  return {
    json: json.json,
    approval: json.json.annotations?.approval === 'required',
  };
}

/** A tool call as the policies see it. */
export interface CallFacts {
  principal: Principal;
  service: { id: string; name: string; ownerId: string };
  /** `tags`: the registry's policy tags of the tool (`ExecutableTool['tool']['tags']`). */
  tool: { id: string; name: string; method: string; tags: readonly string[] };
  arguments: Record<string, unknown>;
  /** Evaluation instant (ms since the epoch). */
  now: number;
  calls: { last_hour: number; last_day: number };
}

/** The Cedar entity uid of `principal`. */
export function principalUid(p: Principal): { type: string; id: string } {
  return p.kind === 'agent' ? { type: 'Platform::Agent', id: p.agentId } : { type: 'Platform::User', id: p.userId };
}

/** The Cedar entity uid of a tool: `Platform::Tool::"<service>/<tool>"`. */
export function toolUid(serviceName: string, toolName: string): { type: string; id: string } {
  return { type: 'Platform::Tool', id: `${serviceName}/${toolName}` };
}

/** The principal's scopes as strings: a credential without a scope list holds every scope. */
function scopesOf(p: Principal): string[] {
  if (p.scopes) return [...p.scopes];
  return p.kind === 'agent' ? p.scope : [...CREDENTIAL_SCOPES];
}

/** The entities and context of one call (principal, account, service, tool, arguments, numbers). */
export function requestOf(facts: CallFacts): {
  principal: { type: string; id: string };
  resource: { type: string; id: string };
  context: Record<string, cedar.CedarValueJson>;
  entities: EntityJson[];
} {
  const p = facts.principal;
  const principal = principalUid(p);
  const account = { type: 'Platform::Account', id: p.kind === 'agent' ? p.ownerId : p.userId };
  const attrs: Record<string, cedar.CedarValueJson> = {
    account: { __entity: account },
    roles: [...p.roles],
    scopes: scopesOf(p),
  };
  if (p.kind === 'agent') attrs.agent_id = p.agentId;
  else {
    attrs.via = p.via;
    if (p.keyId) attrs.api_key = p.keyId;
  }
  const service = { type: 'Platform::Service', id: facts.service.name };
  const resource = toolUid(facts.service.name, facts.tool.name);
  const strings: Record<string, string> = {};
  const numbers: Record<string, number> = {};
  for (const [k, v] of Object.entries(facts.arguments)) {
    strings[k] = typeof v === 'string' ? v : JSON.stringify(v);
    if (typeof v === 'number' && Number.isSafeInteger(v)) numbers[k] = v;
  }
  const argsUid = { type: 'Platform::Arguments', id: '' };
  const numsUid = { type: 'Platform::Numbers', id: '' };
  const at = new Date(facts.now);
  return {
    principal,
    resource,
    context: {
      arguments: { __entity: argsUid },
      numbers: { __entity: numsUid },
      argument_names: Object.keys(facts.arguments),
      time: { epoch_ms: facts.now, hour: at.getUTCHours(), minute: at.getUTCMinutes(), weekday: at.getUTCDay() },
      calls: facts.calls,
    },
    entities: [
      { uid: principal, attrs, parents: [account] },
      {
        uid: service,
        attrs: {
          name: facts.service.name,
          owner: { __entity: { type: 'Platform::Account', id: facts.service.ownerId } },
        },
        parents: [],
      },
      {
        uid: resource,
        attrs: {
          service: facts.service.name,
          tool: facts.tool.name,
          method: facts.tool.method,
          tags: facts.tool.tags as string[],
        },
        parents: [service],
      },
      { uid: argsUid, attrs: {}, parents: [], tags: strings },
      { uid: numsUid, attrs: {}, parents: [], tags: numbers },
    ],
  };
}

export { cedar };
