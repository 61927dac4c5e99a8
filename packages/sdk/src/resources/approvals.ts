/** `approvals` group: people's approvals of tool calls a policy holds (docs/governance.md#approvals). */
import { type Body, type Core, type Item, type Query, cursorList, unwrap } from '../core.js';

const path = (id: string) => ({ path: { id } });

/**
 * Approvals: a call a policy marks `@approval("required")` answers 202 `approval_required` with an
 * `approval_id`; a user of the account approves or denies it here, and the caller re-submits the
 * same call with `approval_id` (single use, bound to the exact arguments, expires after
 * `APPROVAL_TTL_SECONDS`). Deciding needs the `approvals:decide` scope (a user's own token holds it;
 * agents never decide); an agent token lists and reads only its own requests.
 */
export class ApprovalsResource {
  constructor(private readonly core: Core) {}

  /** The account's approval requests, newest first (cursor list); `status`: pending, approved, denied, expired or used. */
  list(query: Omit<Query<'approvals.list'>, 'cursor'> = {}) {
    return cursorList<Item<'approvals.list'>>((cursor) =>
      unwrap(this.core.http.GET('/v1/approvals', { params: { query: { ...query, cursor } } })),
    );
  }
  /** One request: the held call (service, tool, arguments, agent, policies) and its state. */
  get(id: string) {
    return unwrap(this.core.http.GET('/v1/approvals/{id}', { params: path(id) }));
  }
  /** Approve a pending call; the caller may then run it once, until the answer's `expires_at`. */
  approve(id: string) {
    return unwrap(this.core.http.POST('/v1/approvals/{id}/approve', { params: path(id) }));
  }
  /** Deny a pending call; `reason` is shown to the caller. */
  deny(id: string, body: Body<'approvals.deny'> = {}) {
    return unwrap(this.core.http.POST('/v1/approvals/{id}/deny', { params: path(id), body }));
  }
}
