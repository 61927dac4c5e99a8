/**
 * The standard authentication cases of a module's routes, generated instead of written by hand in
 * every `*.security.test.ts` (the model is Unkey's `runCommonRouteTests`). Each route gets:
 * - no credentials → 401 `unauthenticated` with a `Bearer` challenge (RFC 6750 §3.1);
 * - a malformed bearer token → 401 `invalid_token`;
 * - when `usersOnly`: an agent token → 403;
 * - when `minRole` is above `user`: a signed-in user of role `user` → 403 `insufficient_role`.
 * The platform-wide matrix in `test/security/access.test.ts` checks the same from `/openapi.json`
 * for every route; these cases keep a module's own expectations next to its other tests.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { agentToken, createAgent } from './agents.js';
import { createUser } from './app.js';

/** A route to check: method, URL (path ids may be made up: authentication comes first) and a body when the route needs one. */
export interface AuthCaseRoute {
  method: InjectOptions['method'];
  url: string;
  payload?: unknown;
}

export interface AuthCaseOptions {
  /** Agent tokens are refused with 403 on every route. */
  usersOnly?: boolean;
  /** The least role the routes need; below it a user gets 403 `insufficient_role`. */
  minRole?: 'pro' | 'admin';
}

/**
 * Register a `describe` block with the standard cases for `routes` (a function, so the list may use
 * ids created in `beforeAll`). `app` is read when the tests run.
 */
export function describeAuthCases(
  name: string,
  app: () => FastifyInstance,
  routes: () => AuthCaseRoute[],
  opts: AuthCaseOptions = {},
): void {
  const inject = (r: AuthCaseRoute, headers?: Record<string, string>) =>
    app().inject({ method: r.method, url: r.url, payload: r.payload as InjectOptions['payload'], headers });
  const label = (r: AuthCaseRoute) => `${r.method} ${r.url}`;

  describe(`${name} — standard authentication cases`, () => {
    it('no credentials → 401 unauthenticated with a Bearer challenge', async () => {
      for (const r of routes()) {
        const res = await inject(r);
        expect(res.statusCode, label(r)).toBe(401);
        expect(res.json().code, label(r)).toBe('unauthenticated');
        expect(res.headers['www-authenticate'], label(r)).toMatch(/^Bearer/);
      }
    });

    it('a malformed bearer token → 401 invalid_token', async () => {
      for (const r of routes()) {
        const res = await inject(r, { authorization: 'Bearer not.a.jwt' });
        expect(res.statusCode, label(r)).toBe(401);
        expect(res.json().code, label(r)).toBe('invalid_token');
      }
    });

    if (opts.usersOnly) {
      it('an agent token → 403', async () => {
        const agent = await agentToken(app(), await createAgent(app(), await createUser(app())));
        for (const r of routes()) expect((await inject(r, agent.headers)).statusCode, label(r)).toBe(403);
      });
    }

    if (opts.minRole) {
      it(`role user (below ${opts.minRole}) → 403 insufficient_role`, async () => {
        const user = await createUser(app());
        for (const r of routes()) {
          const res = await inject(r, user.headers);
          expect(res.statusCode, label(r)).toBe(403);
          expect(res.json().code, label(r)).toBe('insufficient_role');
        }
      });
    }
  });
}
