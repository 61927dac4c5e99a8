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

/**
 * A weather service (`weatherManifest`, tools `get_weather`, `get_user`, `broken`) registered by
 * `owner` and published through the checklist (domain served by `api`, `get_weather` as the
 * functional test). @returns the registered service
 */
export async function publishedWeather(
  owner: AgentPlatform,
  api: { url: string; verificationToken?: string | null },
  manifest: Record<string, unknown>,
) {
  const svc = await owner.services.register(manifest as Parameters<typeof owner.services.register>[0]);
  api.verificationToken = (await owner.publishing.verifyDomain(svc.id)).token;
  await owner.publishing.verifyDomain(svc.id);
  await owner.publishing.setVerificationConfig(svc.id, {
    tests: [{ tool: 'get_weather', arguments: { city: 'Oslo' } }],
  });
  await owner.publishing.publish(svc.id);
  for (const end = Date.now() + 30_000; Date.now() < end; ) {
    if ((await owner.publishing.verificationStatus(svc.id)).status === 'published') return svc;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${svc.name} was not published within 30 s`);
}
