/** `services` (owner registry + marketplace), `publishing`, `search`, `subscriptions` and `sessions` groups. */
import { type Body, type Core, type Item, type Query, type Result, cursorList, unwrap } from '../core.js';
import type { PendingChange } from '../definitions.js';

const path = (id: string) => ({ path: { id } });

/** Services: the caller's own (`/owner/services`) and the marketplace (`/services`). */
export class ServicesResource {
  constructor(private readonly core: Core) {}

  /** Register a service from a manifest, an OpenAPI document (inline or URL) or an MCP server URL. */
  register(body: Body<'registry.register'>) {
    return unwrap(this.core.http.POST('/owner/services', { body }));
  }

  /** The caller's services (cursor list). */
  listOwn(query: Omit<Query<'registry.listOwn'>, 'cursor'> = {}) {
    return cursorList<Item<'registry.listOwn'>>((cursor) =>
      unwrap(this.core.http.GET('/owner/services', { params: { query: { ...query, cursor } } })),
    );
  }

  /** One of the caller's services. */
  getOwn(id: string) {
    return unwrap(this.core.http.GET('/owner/services/{id}', { params: path(id) }));
  }

  update(id: string, body: Body<'registry.update'>) {
    return unwrap(this.core.http.PATCH('/owner/services/{id}', { params: path(id), body }));
  }

  async delete(id: string): Promise<void> {
    await unwrap(this.core.http.DELETE('/owner/services/{id}', { params: path(id) }));
  }

  /** Re-read the service's source (OpenAPI URL, MCP server) and update its tools. */
  sync(id: string) {
    return unwrap(this.core.http.POST('/owner/services/{id}/sync', { params: path(id) }));
  }

  /** New request-signing secret (shown once). */
  rotateSigningSecret(id: string) {
    return unwrap(this.core.http.POST('/owner/services/{id}/signing-secret', { params: path(id) }));
  }

  /** Marketplace services visible to the caller (cursor list). */
  list(query: Omit<Query<'marketplace.list'>, 'cursor'> = {}) {
    return cursorList<Item<'marketplace.list'>>((cursor) =>
      unwrap(this.core.http.GET('/services', { params: { query: { ...query, cursor } } })),
    );
  }

  /** A marketplace service's manifest (tools and schemas). */
  manifest(id: string) {
    return unwrap(this.core.http.GET('/services/{id}/manifest', { params: path(id) }));
  }
}

/** The publish checklist and reports of a service. */
export class PublishingResource {
  constructor(private readonly core: Core) {}

  /** Start the checklist (runs in the background; poll {@link verificationStatus}). */
  publish(id: string) {
    return unwrap(this.core.http.POST('/v1/services/{id}/publish', { params: path(id) }));
  }
  resubmit(id: string) {
    return unwrap(this.core.http.POST('/v1/services/{id}/publish/resubmit', { params: path(id) }));
  }
  /** Checklist and per-test results. */
  verificationStatus(id: string) {
    return unwrap(this.core.http.GET('/v1/services/{id}/publish/verification-status', { params: path(id) }));
  }
  verifyDomain(id: string) {
    return unwrap(this.core.http.POST('/v1/services/{id}/verify-domain', { params: path(id) }));
  }
  setVerificationConfig(id: string, body: Body<'publishing.setVerificationConfig'>) {
    return unwrap(this.core.http.POST('/v1/services/{id}/verification-config', { params: path(id), body }));
  }
  unpublish(id: string) {
    return unwrap(this.core.http.POST('/v1/services/{id}/unpublish', { params: path(id) }));
  }
  renameTool(serviceId: string, toolId: string, body: Body<'publishing.renameTool'>) {
    return unwrap(
      this.core.http.PATCH('/v1/services/{serviceId}/tools/{toolId}/rename', {
        params: { path: { serviceId, toolId } },
        body,
      }),
    );
  }
  /** Reports on one of the caller's services (cursor list). */
  listReports(id: string, query: Omit<Query<'publishing.listReports'>, 'cursor'> = {}) {
    return cursorList<Item<'publishing.listReports'>>((cursor) =>
      unwrap(
        this.core.http.GET('/owner/services/{id}/reports', { params: { path: { id }, query: { ...query, cursor } } }),
      ),
    );
  }
  resolveReport(id: string, reportId: string) {
    return unwrap(
      this.core.http.POST('/owner/services/{id}/reports/{reportId}/resolve', { params: { path: { id, reportId } } }),
    );
  }
  /** Report a marketplace service (broken, wrong output, security, other). */
  report(id: string, body: Body<'publishing.report'>) {
    return unwrap(this.core.http.POST('/v1/services/{id}/report', { params: path(id), body }));
  }
}

/** Search over services, tools and memories. */
export class SearchResource {
  constructor(private readonly core: Core) {}
  universal(query: Query<'search.universal'>) {
    return unwrap(this.core.http.GET('/search', { params: { query } }));
  }
  /** Tools ranked for `q` (cursor list). */
  tools(query: Omit<Query<'search.tools'>, 'cursor'>) {
    return cursorList<Item<'search.tools'>>((cursor) =>
      unwrap(this.core.http.GET('/search/tools', { params: { query: { ...query, cursor } } })),
    );
  }
  popular(query: Query<'search.popular'> = {}) {
    return unwrap(this.core.http.GET('/search/popular', { params: { query } }));
  }
  recommendations(query: Query<'search.recommendations'> = {}) {
    return unwrap(this.core.http.GET('/search/recommendations', { params: { query } }));
  }
  suggestions(query: Query<'search.suggestions'>) {
    return unwrap(this.core.http.GET('/search/suggestions', { params: { query } }));
  }
}

/** Subscriptions to marketplace services and their quotas. */
export class SubscriptionsResource {
  constructor(private readonly core: Core) {}
  create(body: Body<'subscriptions.create'>) {
    return unwrap(this.core.http.POST('/subscriptions', { body }));
  }
  list(query: Omit<Query<'subscriptions.list'>, 'cursor'> = {}) {
    return cursorList<Item<'subscriptions.list'>>((cursor) =>
      unwrap(this.core.http.GET('/subscriptions', { params: { query: { ...query, cursor } } })),
    );
  }
  serviceIds() {
    return unwrap(this.core.http.GET('/subscriptions/services/ids'));
  }
  get(id: string) {
    return unwrap(this.core.http.GET('/subscriptions/{id}', { params: path(id) }));
  }
  update(id: string, body: Body<'subscriptions.update'>) {
    return unwrap(this.core.http.PUT('/subscriptions/{id}', { params: path(id), body }));
  }
  cancel(id: string) {
    return unwrap(this.core.http.DELETE('/subscriptions/{id}', { params: path(id) }));
  }
  quotas(id: string) {
    return unwrap(this.core.http.GET('/subscriptions/{id}/quotas', { params: path(id) }));
  }
  /**
   * Accept the changed (or added) tool definitions of a subscription's service — all, or the tools
   * named in `body.tools` — so they run again (docs/governance.md "Pinned tool definitions").
   * `get(id)` lists them in `pending_changes`. Returns `{ pinned, pending_changes }`.
   */
  acceptChanges(id: string, body: Body<'subscriptions.acceptChanges'> = {}) {
    return unwrap(this.core.http.POST('/subscriptions/{id}/accept-changes', { params: path(id), body }));
  }
  /**
   * The tools of a subscription's service whose definition changed (or that were added) since the
   * account pinned them, each with its RFC 6902 `diff` and `pinned_definition` (`diffLines` turns
   * one into "path: old → new" lines); [] when nothing is pending. Reads `GET /subscriptions/{id}`.
   */
  async changes(id: string): Promise<PendingChange[]> {
    return (await this.get(id)).pending_changes ?? [];
  }
}

/** Execution sessions (`/v1/agents`, `/v1/sessions`) and tool calls through them. */
export class SessionsResource {
  constructor(private readonly core: Core) {}
  create(body: Body<'sessions.create'> = {}) {
    return unwrap(this.core.http.POST('/v1/agents', { body }));
  }
  /** Sessions of the caller (cursor list). */
  list(query: Omit<Query<'sessions.listAll'>, 'cursor'> = {}) {
    return cursorList<Item<'sessions.listAll'>>((cursor) =>
      unwrap(this.core.http.GET('/v1/sessions', { params: { query: { ...query, cursor } } })),
    );
  }
  get(id: string) {
    return unwrap(this.core.http.GET('/v1/sessions/{id}', { params: path(id) }));
  }
  close(id: string) {
    return unwrap(this.core.http.POST('/v1/sessions/{id}/close', { params: path(id) }));
  }
  /**
   * Call `tool` of `service` in session `id` (`POST /v1/agents/{id}/execute`). A call a policy
   * holds for a person's approval throws `AgentPlatformError` `approval_required` (status 202;
   * `body.approval_id`, `body.approval_url`): once approved, call again with `approval_id`.
   */
  execute(id: string, body: Body<'sessions.execute'>) {
    return unwrap(this.core.http.POST('/v1/agents/{id}/execute', { params: path(id), body })) as Promise<
      Result<'sessions.execute'>
    >;
  }
}
