/** `agents` (identities, spec "Agents (v2)"), `permissions` (grants on agent memory) and `deployments` groups. */
import { type Body, type Core, type Item, type Query, type Result, cursorList, unwrap } from '../core.js';
import { AgentPlatformError } from '../errors.js';
import { streamLogs, type LogEvent } from '../logs.js';

const path = (id: string) => ({ path: { id } });

/** Agent identities of the caller's account. */
export class AgentsResource {
  constructor(private readonly core: Core) {}

  /** Create an agent; `client_secret` in the answer is shown once. */
  create(body: Body<'agents.create'>) {
    return unwrap(this.core.http.POST('/v2/agents', { body }));
  }
  list(query: Omit<Query<'agents.list'>, 'cursor'> = {}) {
    return cursorList<Item<'agents.list'>>((cursor) =>
      unwrap(this.core.http.GET('/v2/agents', { params: { query: { ...query, cursor } } })),
    );
  }
  get(id: string) {
    return unwrap(this.core.http.GET('/v2/agents/{id}', { params: path(id) }));
  }
  update(id: string, body: Body<'agents.update'>) {
    return unwrap(this.core.http.PATCH('/v2/agents/{id}', { params: path(id), body }));
  }
  async delete(id: string): Promise<void> {
    await unwrap(this.core.http.DELETE('/v2/agents/{id}', { params: path(id) }));
  }
  /** New client secret (shown once); the old one keeps working for the grace period asked for. */
  rotateSecret(id: string, body: Body<'agents.rotateSecret'> = {}) {
    return unwrap(this.core.http.POST('/v2/agents/{id}/rotate-secret', { params: path(id), body }));
  }
  subscribeTools(id: string, body: Body<'agents.tools.subscribe'>) {
    return unwrap(this.core.http.POST('/v2/agents/{id}/tools/subscribe', { params: path(id), body }));
  }
  /**
   * Accept the changed (or added) tool definitions of one of the agent's services — all, or the
   * tools named in `body.tools` — for the agent (an account's acceptance does not cover its agents).
   * Returns `{ pinned, pending_changes }`.
   */
  acceptToolChanges(id: string, body: Body<'agents.tools.acceptChanges'>) {
    return unwrap(this.core.http.POST('/v2/agents/{id}/tools/accept-changes', { params: path(id), body }));
  }
  /**
   * The agent's services with tool definitions that changed (or tools added) since the agent pinned
   * them, each with its `pending_changes` as `subscriptions.changes` lists an account's (`diffLines`
   * turns one into "path: old → new" lines); [] when nothing is pending. `query.service` reads one
   * service (404 when the agent is not subscribed to it). The owner may read them, and so may the
   * agent itself with its own token; only the owner accepts them ({@link acceptToolChanges}).
   * Reads every page of `GET /v2/agents/{id}/tools/changes`.
   */
  async toolChanges(id: string, query: { service?: string } = {}): Promise<Item<'agents.tools.changes'>[]> {
    const all = await cursorList<Item<'agents.tools.changes'>>((cursor) =>
      unwrap(
        this.core.http.GET('/v2/agents/{id}/tools/changes', {
          params: { path: { id }, query: { ...query, limit: 100, cursor } },
        }),
      ),
    ).toArray();
    return all.filter((s) => s.pending_changes.length > 0);
  }
  /** Remove the subscription to `service` (its id or name). */
  async unsubscribeTools(id: string, service: string): Promise<void> {
    await unwrap(
      this.core.http.DELETE('/v2/agents/{id}/tools/unsubscribe', {
        params: { path: { id }, query: { service } },
        body: null,
      }),
    );
  }
  tools(id: string, query: Omit<Query<'agents.tools.list'>, 'cursor'> = {}) {
    return cursorList<Item<'agents.tools.list'>>((cursor) =>
      unwrap(this.core.http.GET('/v2/agents/{id}/tools', { params: { path: { id }, query: { ...query, cursor } } })),
    );
  }
}

/** Grants on an agent's memory to other agents. */
export class PermissionsResource {
  constructor(private readonly core: Core) {}
  create(agentId: string, body: Body<'permissions.create'>) {
    return unwrap(this.core.http.POST('/v2/agents/{id}/permissions', { params: path(agentId), body }));
  }
  /** Who may access `agentId`'s memory (cursor list). */
  list(agentId: string, query: Omit<Query<'permissions.list'>, 'cursor'> = {}) {
    return cursorList<Item<'permissions.list'>>((cursor) =>
      unwrap(
        this.core.http.GET('/v2/agents/{id}/permissions', {
          params: { path: { id: agentId }, query: { ...query, cursor } },
        }),
      ),
    );
  }
  /** What `agentId` may access (cursor list). */
  grants(agentId: string, query: Omit<Query<'permissions.grants'>, 'cursor'> = {}) {
    return cursorList<Item<'permissions.grants'>>((cursor) =>
      unwrap(
        this.core.http.GET('/v2/agents/{id}/grants', {
          params: { path: { id: agentId }, query: { ...query, cursor } },
        }),
      ),
    );
  }
  async revoke(agentId: string, permId: string): Promise<void> {
    await unwrap(
      this.core.http.DELETE('/v2/agents/{id}/permissions/{permId}', { params: { path: { id: agentId, permId } } }),
    );
  }
}

/** What {@link DeploymentsResource.deploy} uploads. */
export interface DeployInput {
  /** A gzip-compressed tar archive (.tar.gz). */
  artifact: Blob | Uint8Array | ArrayBuffer;
  filename?: string;
  entrypoint?: string;
  /** Environment variables of the agent's code (stored encrypted; values never returned). */
  env?: Record<string, string>;
  description?: string;
  /**
   * Called as bytes leave: `sent` and `total` in bytes of the whole request body (the multipart
   * encoding of the artifact and fields, known before the first byte is sent: the first call is
   * `(0, total)`, the last `(total, total)`); streams the body (Node and HTTP/2 browsers).
   */
  onUploadProgress?: (sent: number, total: number) => void;
}

/** Deployments of an agent's code and its runs (executions). */
export class DeploymentsResource {
  constructor(private readonly core: Core) {}

  /** Upload a new version (`POST /v2/agents/{id}/deploy`, multipart); answers `preparing`, poll {@link list} or {@link get}. */
  async deploy(agentId: string, input: DeployInput): Promise<Result<'deployments.deploy'>> {
    const form = new FormData();
    const blob =
      input.artifact instanceof Blob
        ? input.artifact
        : new Blob([input.artifact as BlobPart], { type: 'application/gzip' });
    form.set('artifact', blob, input.filename ?? 'artifact.tar.gz');
    if (input.entrypoint) form.set('entrypoint', input.entrypoint);
    if (input.env) form.set('env', JSON.stringify(input.env));
    if (input.description) form.set('description', input.description);
    const url = `${this.core.baseUrl}/v2/agents/${encodeURIComponent(agentId)}/deploy`;
    let init: RequestInit & { duplex?: 'half' } = { method: 'POST', body: form };
    if (input.onUploadProgress) {
      const encoded = new Response(form);
      const bytes = new Uint8Array(await encoded.arrayBuffer());
      const report = input.onUploadProgress;
      report(0, bytes.length);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(ctl) {
          if (sent >= bytes.length) return ctl.close();
          const chunk = bytes.subarray(sent, sent + 64 * 1024);
          sent += chunk.length;
          ctl.enqueue(chunk);
          report(sent, bytes.length);
        },
      });
      init = {
        method: 'POST',
        body,
        duplex: 'half',
        headers: { 'content-type': encoded.headers.get('content-type')!, 'content-length': String(bytes.length) },
      };
    }
    const res = await this.core.fetch(new Request(url, init));
    if (!res.ok) throw await AgentPlatformError.fromFetchResponse(res);
    return (await res.json()) as Result<'deployments.deploy'>;
  }

  /** Versions, newest first (cursor list). */
  list(agentId: string, query: Omit<Query<'deployments.list'>, 'cursor'> = {}) {
    return cursorList<Item<'deployments.list'>>((cursor) =>
      unwrap(
        this.core.http.GET('/v2/agents/{id}/deployments', {
          params: { path: { id: agentId }, query: { ...query, cursor } },
        }),
      ),
    );
  }
  /** Run the active version with `input` (sync: the finished execution; `async: true`: 202 queued). */
  invoke(agentId: string, body: Body<'deployments.invoke'>) {
    return unwrap(this.core.http.POST('/v2/agents/{id}/invoke', { params: path(agentId), body }));
  }
  rollback(agentId: string, body: Body<'deployments.rollback'> = {}) {
    return unwrap(this.core.http.POST('/v2/agents/{id}/deployments/rollback', { params: path(agentId), body }));
  }
  stop(agentId: string) {
    return unwrap(this.core.http.POST('/v2/agents/{id}/deployments/stop', { params: path(agentId) }));
  }
  redeploy(agentId: string, body: Body<'deployments.redeploy'> = {}) {
    return unwrap(this.core.http.POST('/v2/agents/{id}/deployments/redeploy', { params: path(agentId), body }));
  }
  /** Runs, newest first (cursor list). */
  executions(agentId: string, query: Omit<Query<'deployments.executions.list'>, 'cursor'> = {}) {
    return cursorList<Item<'deployments.executions.list'>>((cursor) =>
      unwrap(
        this.core.http.GET('/v2/agents/{id}/executions', {
          params: { path: { id: agentId }, query: { ...query, cursor } },
        }),
      ),
    );
  }
  execution(agentId: string, executionId: string) {
    return unwrap(
      this.core.http.GET('/v2/agents/{id}/executions/{exeId}', {
        params: { path: { id: agentId, exeId: executionId } },
      }),
    );
  }
  /**
   * Log lines of the agent's runs (or of one run), oldest first. With `follow`, keeps yielding new
   * lines until `signal` aborts (or, for one run, until it finishes): by Server-Sent Events when
   * the server streams them, else by polling the executions every `pollMs`.
   */
  logs(
    agentId: string,
    opts: { executionId?: string; follow?: boolean; signal?: AbortSignal; pollMs?: number } = {},
  ): AsyncIterable<LogEvent> {
    return streamLogs(this.core, this, agentId, opts);
  }
}
