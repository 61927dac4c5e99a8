/**
 * A minimal browser for the OAuth login flow in tests: follows redirects by hand, keeps cookies,
 * fills the tenant's sign-in form. Works over real HTTP (fetch) or `app.inject`.
 */
import type { FastifyInstance } from 'fastify';

export interface HttpAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP exchange: absolute or path URL, no automatic redirects. */
export type Send = (req: {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string;
}) => Promise<HttpAnswer>;

/** `Send` over real sockets with fetch (undici), redirects not followed. */
export function fetchSend(base: string): Send {
  return async ({ method, url, headers, body }) => {
    const res = await fetch(new URL(url, base), { method, headers, body, redirect: 'manual' });
    const h: Record<string, string | string[]> = {};
    res.headers.forEach((v, k) => {
      h[k] = v;
    });
    const cookies = res.headers.getSetCookie();
    if (cookies.length) h['set-cookie'] = cookies;
    return { status: res.status, headers: h, body: await res.text() };
  };
}

/** `Send` through `app.inject` (no sockets); absolute URLs keep their host header. */
export function injectSend(app: FastifyInstance, host = 'localhost:3000'): Send {
  return async ({ method, url, headers, body }) => {
    const u = new URL(url, `http://${host}`);
    const res = await app.inject({
      method: method as 'GET',
      url: u.pathname + u.search,
      headers: { host: u.host, ...headers },
      ...(body !== undefined ? { payload: body } : {}),
    });
    return { status: res.statusCode, headers: res.headers as HttpAnswer['headers'], body: res.body };
  };
}

/** A cookie jar that ignores paths (fine for one host in tests). */
export class Browser {
  readonly cookies = new Map<string, string>();
  constructor(private readonly send: Send) {}

  private store(h: HttpAnswer['headers']): void {
    const set = h['set-cookie'];
    for (const c of Array.isArray(set) ? set : set ? [set] : []) {
      const [pair, ...attrs] = c.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a) || /^\s*max-age=0\b/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  async request(
    method: string,
    url: string,
    opts: { headers?: Record<string, string>; body?: string } = {},
  ): Promise<HttpAnswer> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await this.send({
      method,
      url,
      headers: { ...(cookie ? { cookie } : {}), ...opts.headers },
      body: opts.body,
    });
    this.store(res.headers);
    return res;
  }

  /**
   * Follow `authUrl` through the tenant: sign in with `email`/`password` when the form appears,
   * allow a registered client on its consent page, follow redirects until one leaves for `redirectUri`. Returns that final URL (with `code`, `state`).
   * @throws when a step answers something unexpected (with the status and body).
   */
  async login(
    authUrl: string,
    redirectUri: string,
    creds: { email: string; password: string },
    maxSteps = 10,
  ): Promise<URL> {
    let next: { method: string; url: string; body?: string; headers?: Record<string, string> } = {
      method: 'GET',
      url: authUrl,
    };
    let lastUrl = authUrl;
    for (let i = 0; i < maxSteps; i++) {
      const res = await this.request(next.method, next.url, next);
      if (res.status >= 300 && res.status < 400) {
        const location = new URL(String(res.headers.location), lastUrl).href;
        if (location.startsWith(redirectUri)) return new URL(location);
        next = { method: 'GET', url: location };
        lastUrl = location;
        continue;
      }
      const form = /<form method="post" action="([^"]+\/login)"/.exec(res.body);
      if (res.status === 200 && form) {
        const action = new URL(form[1].replaceAll('&amp;', '&'), lastUrl).href;
        next = {
          method: 'POST',
          url: action,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(creds).toString(),
        };
        lastUrl = action;
        continue;
      }
      // A registered client's consent page: the user clicks Allow.
      const consent = /<form method="post" action="([^"]+\/confirm)"/.exec(res.body);
      if (res.status === 200 && consent) {
        const action = new URL(consent[1].replaceAll('&amp;', '&'), lastUrl).href;
        next = {
          method: 'POST',
          url: action,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: '',
        };
        lastUrl = action;
        continue;
      }
      throw new Error(
        `login step ${i} ${next.method} ${next.url}: unexpected ${res.status}: ${res.body.slice(0, 500)}`,
      );
    }
    throw new Error('login did not finish');
  }
}
