/** Shared pieces of the SDK and CLI tests: a fetch that records what it sent, users by SDK. */
import { AgentPlatform, type AgentPlatformOptions } from '../../packages/sdk/src/index.js';

/** One exchange seen by {@link recordingFetch}: method, path and status, and when it was sent (ms). */
export interface Exchange {
  method: string;
  path: string;
  status: number;
  at: number;
  authorization: string | null;
}

/** `fetch` that records each exchange (path without the query) in `log`. */
export function recordingFetch(log: Exchange[]): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    const at = Date.now();
    const res = await fetch(req);
    log.push({
      method: req.method,
      path: new URL(req.url).pathname,
      status: res.status,
      at,
      authorization: req.headers.get('authorization'),
    });
    return res;
  }) as typeof fetch;
}

/** A client signed in as a fresh test user with `roles` (enterprise by default: no rate limit). */
export async function userClient(
  baseUrl: string,
  roles: Array<'user' | 'pro' | 'enterprise' | 'admin'> = ['enterprise'],
  opts: AgentPlatformOptions = {},
): Promise<AgentPlatform> {
  const client = new AgentPlatform({ baseUrl, env: {}, ...opts });
  await client.auth.testToken({ roles });
  return client;
}
