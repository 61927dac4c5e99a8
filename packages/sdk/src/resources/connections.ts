/** `connections` group: the caller's connected accounts at OAuth 2.0 upstreams (docs/connections.md). */
import { type Body, type Core, type Item, type Query, cursorList, unwrap } from '../core.js';

const path = (id: string) => ({ path: { id } });

/** Connected accounts: start a connection, list, inspect and disconnect (users only; agents cannot). */
export class ConnectionsResource {
  constructor(private readonly core: Core) {}

  /**
   * Start connecting the caller's account (or, with `agent_id`, one of its agents') at an oauth2
   * service. Open `authorization_url` in the user's browser; the platform's callback finishes the
   * connection and sends the browser to `return_to` with `connection_id` and `status`.
   */
  create(body: Body<'connections.create'>) {
    return unwrap(this.core.http.POST('/connections', { body }));
  }
  /** The caller's connections, newest first (cursor list); `status` is pending, active, expired or error. */
  list(query: Omit<Query<'connections.list'>, 'cursor'> = {}) {
    return cursorList<Item<'connections.list'>>((cursor) => unwrap(this.core.http.GET('/connections', { params: { query: { ...query, cursor } } })));
  }
  get(id: string) {
    return unwrap(this.core.http.GET('/connections/{id}', { params: path(id) }));
  }
  /** Revoke the grant at the upstream (RFC 7009, when it has an endpoint) and delete the connection. */
  delete(id: string) {
    return unwrap(this.core.http.DELETE('/connections/{id}', { params: path(id) }));
  }
}
