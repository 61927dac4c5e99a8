/** `policies` group: Cedar policies on tool calls (docs/governance.md#policies). */
import { type Body, type Core, type Query, unwrap } from '../core.js';

const path = (id: string) => ({ path: { id } });

/**
 * Policies: one Cedar `forbid` statement each, evaluated on every tool call of the account, its
 * agents and its API keys (and, for `scope: global`, written by admins, of everyone). A match answers
 * 403 `policy_denied` with `policy_ids`; `@approval("required")` holds the call for a person instead
 * (see `approvals`). Texts are validated against `schema()`: errors throw `AgentPlatformError`
 * 400 `validation_failed` with `cedar_errors` (line, column).
 */
export class PoliciesResource {
  constructor(private readonly core: Core) {}

  /** The Cedar schema (`{ schema, format: 'cedar' }`) policies are validated against. */
  schema() {
    return unwrap(this.core.http.GET('/v1/policies/schema'));
  }
  /** The account's policies and the global ones (`{ data }`); filter by `scope` or `enabled`. */
  list(query: Query<'policies.list'> = {}) {
    return unwrap(this.core.http.GET('/v1/policies', { params: { query } }));
  }
  /** Create a policy from `{ source, description?, enabled?, scope? }`. */
  create(body: Body<'policies.create'>) {
    return unwrap(this.core.http.POST('/v1/policies', { body }));
  }
  /** One policy of the account, or a global one. */
  get(id: string) {
    return unwrap(this.core.http.GET('/v1/policies/{id}', { params: path(id) }));
  }
  /** Change a policy's `source`, `description` or `enabled`. */
  update(id: string, body: Body<'policies.update'>) {
    return unwrap(this.core.http.PATCH('/v1/policies/{id}', { params: path(id), body }));
  }
  /** Delete a policy. */
  async delete(id: string): Promise<void> {
    await unwrap(this.core.http.DELETE('/v1/policies/{id}', { params: path(id) }));
  }
  /** Dry run: the decision on `{ service, tool, arguments?, agent_id?, at?, calls?, source? }` and the policies that decided. */
  evaluate(body: Body<'policies.evaluate'>) {
    return unwrap(this.core.http.POST('/v1/policies/evaluate', { body }));
  }
  /** The account's recent policy decisions on tool calls, newest first (`{ data }`). */
  decisions(query: Query<'policies.decisions'> = {}) {
    return unwrap(this.core.http.GET('/v1/policies/decisions', { params: { query } }));
  }
}
