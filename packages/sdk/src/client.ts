/**
 * `new AgentPlatform(options)`: the typed client, one namespace per group of the spec.
 *
 * Credentials (explicit options win over the environment; the first that is set applies):
 * `apiKey` → `X-API-Key`; `clientId` + `clientSecret` → an agent token by client credentials,
 * renewed; `accessToken` (+ `refreshToken`) or tokens already in `tokenStorage` → a user's bearer
 * token, refreshed before it expires and once on a 401 `token_expired`; `browserSession` → a web app
 * on the platform's origin whose refresh token is the platform's HttpOnly session cookie. With none,
 * the client is anonymous until `auth.login()` / `auth.callback()` stores tokens.
 */
import createClient from 'openapi-fetch';
import { Authenticator, type Credentials } from './credentials.js';
import type { Core } from './core.js';
import type { paths } from './generated/openapi.js';
import { AgentsResource, DeploymentsResource, PermissionsResource } from './resources/agents.js';
import { AnalyticsResource } from './resources/analytics.js';
import { ApprovalsResource } from './resources/approvals.js';
import { PoliciesResource } from './resources/policies.js';
import { ConnectionsResource } from './resources/connections.js';
import {
  PublishingResource,
  SearchResource,
  ServicesResource,
  SessionsResource,
  SubscriptionsResource,
} from './resources/catalog.js';
import { AdminResource, ApiKeysResource, AuthResource } from './resources/identity.js';
import { AgentMemoryResource, MemoryResource } from './resources/memory.js';
import { ToolsResource } from './resources/tools.js';
import { jwtExpiry, MemoryTokenStorage, type TokenStorage } from './tokens.js';
import { createTransport, DEFAULT_RETRY, type RetryOptions } from './transport.js';

/** Options of {@link AgentPlatform}. Every field is optional when the environment supplies it. */
export interface AgentPlatformOptions {
  /** API root, e.g. `https://agents.example.com` (env `AGENT_PLATFORM_URL`). */
  baseUrl?: string;
  /** An API key (env `AGENT_PLATFORM_API_KEY`). */
  apiKey?: string;
  /** A user's access token (JWT) and its refresh token. */
  accessToken?: string;
  refreshToken?: string;
  /** Expiry of `accessToken`, ms since the epoch or a Date (default: the JWT's `exp`). */
  expiresAt?: number | Date;
  /**
   * A first-party web app served from the platform's origin (the console): sign in with
   * `auth.startSession()`, restore a session on page load with `auth.refresh()`, sign out with
   * `auth.endSession()`. The refresh token is the HttpOnly cookie the platform sets (spec
   * "Authentication" 8: never readable by scripts); the access token lives in `tokenStorage`
   * (memory) and is renewed by `POST /v1/auth/session/refresh` before it expires and once on a 401
   * `token_expired`. The environment is not read for credentials.
   */
  browserSession?: boolean;
  /** An agent's client credentials (env `AGENT_PLATFORM_CLIENT_ID` / `AGENT_PLATFORM_CLIENT_SECRET`). */
  clientId?: string;
  clientSecret?: string;
  /** Where tokens live (default: memory; never localStorage). */
  tokenStorage?: TokenStorage;
  /** Renew tokens this long before they expire (default 60 s). */
  refreshSkewSeconds?: number;
  /** Retries of 429/503 (`false` turns them off). */
  retry?: Partial<RetryOptions> | false;
  /** The fetch to use (default `globalThis.fetch`). */
  fetch?: typeof fetch;
  /** Headers sent with every request (e.g. `user-agent`). */
  headers?: Record<string, string>;
  /** Where to read `AGENT_PLATFORM_*` from (default `process.env` where it exists; `{}` to ignore the environment). */
  env?: Record<string, string | undefined>;
}

/** Environment variables the SDK and the CLI read. */
export const ENV = {
  url: 'AGENT_PLATFORM_URL',
  apiKey: 'AGENT_PLATFORM_API_KEY',
  clientId: 'AGENT_PLATFORM_CLIENT_ID',
  clientSecret: 'AGENT_PLATFORM_CLIENT_SECRET',
} as const;

function processEnv(): Record<string, string | undefined> {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env ?? {};
}

/** The Agent Platform API client. @throws TypeError when no base URL is configured. */
export class AgentPlatform {
  readonly baseUrl: string;
  /** The typed openapi-fetch client, for calls the namespaces do not cover. */
  readonly http: Core['http'];
  readonly tokenStorage: TokenStorage;
  readonly auth: AuthResource;
  readonly apiKeys: ApiKeysResource;
  readonly admin: AdminResource;
  readonly services: ServicesResource;
  readonly publishing: PublishingResource;
  readonly search: SearchResource;
  readonly subscriptions: SubscriptionsResource;
  readonly sessions: SessionsResource;
  readonly memory: MemoryResource;
  readonly agentMemory: AgentMemoryResource;
  readonly agents: AgentsResource;
  readonly permissions: PermissionsResource;
  readonly deployments: DeploymentsResource;
  readonly analytics: AnalyticsResource;
  readonly connections: ConnectionsResource;
  readonly approvals: ApprovalsResource;
  /** Cedar policies on tool calls: CRUD, the schema, dry runs and the decision log. */
  readonly policies: PoliciesResource;
  /** Subscribed tools as OpenAI / Anthropic / Gemini function definitions, and running the model's tool calls. */
  readonly tools: ToolsResource;

  constructor(options: AgentPlatformOptions = {}) {
    const env = options.env ?? processEnv();
    const baseUrl = options.baseUrl ?? env[ENV.url];
    if (!baseUrl) throw new TypeError(`No API URL: pass baseUrl or set ${ENV.url}`);
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);

    const explicit = !!(
      options.apiKey ||
      options.clientId ||
      options.accessToken ||
      options.refreshToken ||
      options.browserSession
    );
    let credentials: Credentials = { kind: 'user' };
    let initial = null;
    if (options.browserSession) credentials = { kind: 'session' };
    else if (options.apiKey) credentials = { kind: 'apiKey', apiKey: options.apiKey };
    else if (options.clientId && options.clientSecret)
      credentials = { kind: 'client', clientId: options.clientId, clientSecret: options.clientSecret };
    else if (options.accessToken || options.refreshToken) {
      const expiresAt =
        options.expiresAt instanceof Date
          ? options.expiresAt.getTime()
          : (options.expiresAt ?? (options.accessToken ? jwtExpiry(options.accessToken) : Date.now() - 1));
      initial = {
        accessToken: options.accessToken ?? '',
        ...(options.refreshToken ? { refreshToken: options.refreshToken } : {}),
        ...(expiresAt !== undefined ? { expiresAt } : {}),
      };
    } else if (!explicit && env[ENV.apiKey]) credentials = { kind: 'apiKey', apiKey: env[ENV.apiKey]! };
    else if (!explicit && env[ENV.clientId] && env[ENV.clientSecret])
      credentials = { kind: 'client', clientId: env[ENV.clientId]!, clientSecret: env[ENV.clientSecret]! };

    this.tokenStorage = options.tokenStorage ?? new MemoryTokenStorage();
    if (initial) void this.tokenStorage.set(initial);
    const auth = new Authenticator(credentials, this.tokenStorage, {
      baseUrl: this.baseUrl,
      fetch: doFetch,
      refreshSkewMs: (options.refreshSkewSeconds ?? 60) * 1000,
    });
    const retry =
      options.retry === false ? { ...DEFAULT_RETRY, maxRetries: 0 } : { ...DEFAULT_RETRY, ...options.retry };
    const transport = createTransport({ auth, fetch: doFetch, retry, headers: options.headers ?? {} });
    this.http = createClient<paths>({ baseUrl: this.baseUrl, fetch: transport });
    const core: Core = { http: this.http, fetch: transport, baseUrl: this.baseUrl };

    this.auth = new AuthResource(core, auth);
    this.apiKeys = new ApiKeysResource(core);
    this.admin = new AdminResource(core);
    this.services = new ServicesResource(core);
    this.publishing = new PublishingResource(core);
    this.search = new SearchResource(core);
    this.subscriptions = new SubscriptionsResource(core);
    this.sessions = new SessionsResource(core);
    this.memory = new MemoryResource(core);
    this.agentMemory = new AgentMemoryResource(core);
    this.agents = new AgentsResource(core);
    this.permissions = new PermissionsResource(core);
    this.deployments = new DeploymentsResource(core);
    this.analytics = new AnalyticsResource(core);
    this.connections = new ConnectionsResource(core);
    this.approvals = new ApprovalsResource(core);
    this.policies = new PoliciesResource(core);
    this.tools = new ToolsResource(core);
  }
}
