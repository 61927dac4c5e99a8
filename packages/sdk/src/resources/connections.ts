/** `connections` group: the caller's connected accounts at OAuth 2.0 upstreams (docs/connections.md). */
import { type Body, type Core, type Item, type Query, cursorList, unwrap } from '../core.js';

const path = (id: string) => ({ path: { id } });

/** Connected accounts: start a connection, list, inspect and disconnect (users only; agents cannot). */
export class ConnectionsResource {
  constructor(private readonly core: Core) {}

  /**
   * Start connecting the caller's account (or, with `agent_id`, one of its agents') at an oauth2
   * service. Open `authorization_url` (a platform page) in a browser signed in to the platform as
   * the same user (or sign in there: it comes back to the flow); it takes the flow in that browser
   * and goes to the upstream's consent page. The platform's callback finishes the connection only
   * in that browser and sends it to `return_to` with `connection_id` and `status`. Anyone else who
   * opens the link is refused.
   */
  create(body: Body<'connections.create'>) {
    return unwrap(this.core.http.POST('/connections', { body }));
  }
  /**
   * Take the flow of `state` in this browser, as the user who started it (what the page at
   * `authorization_url` does): answers the upstream's consent URL and sets the flow's binding
   * cookie (HttpOnly) that the callback requires. Meant for a browser app of the platform's own
   * origin; another user's flow answers 404.
   */
  authorize(body: Body<'connections.authorize'>) {
    return unwrap(this.core.http.POST('/connections/authorize', { body }));
  }
  /** The caller's connections, newest first (cursor list); `status` is pending, active, expired or error. */
  list(query: Omit<Query<'connections.list'>, 'cursor'> = {}) {
    return cursorList<Item<'connections.list'>>((cursor) =>
      unwrap(this.core.http.GET('/connections', { params: { query: { ...query, cursor } } })),
    );
  }
  get(id: string) {
    return unwrap(this.core.http.GET('/connections/{id}', { params: path(id) }));
  }
  /** Revoke the grant at the upstream (RFC 7009, when it has an endpoint) and delete the connection. */
  delete(id: string) {
    return unwrap(this.core.http.DELETE('/connections/{id}', { params: path(id) }));
  }
}
