/**
 * The fuzzing loop shared by test/security/fuzz.test.ts (short, in CI) and bench/fuzz.ts (long):
 * for every operation, the fixed hostile cases and `runs` generated ones (seeded per operation, so
 * adding a route does not change the others' cases), sent with a caller the route admits.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { AUTH_EXTENSION, type AuthDeclaration } from '../../src/http/auth.js';
import { ownedId, operations, type Account } from './fixtures.js';
import { fixedCases, requestArbitrary, type FuzzRequest } from './fuzz-cases.js';
import { SchemaArbitraries } from './schema-arbitrary.js';

/** What a run saw. */
export interface FuzzReport {
  routes: number;
  cases: number;
  byStatus: Record<number, number>;
  /** Every 5xx: operation, request and the start of the answer. */
  serverErrors: Array<{
    op: string;
    method: string;
    url: string;
    payload?: string;
    what: string;
    status: number;
    body: string;
  }>;
}

/** Operations whose generated calls would end the fuzzing account's own session or run for long. */
const SKIP_GENERATED = new Set<string>([]);

/**
 * Fuzz every operation of `doc` against `app`. `fuzzer` is the calling account (its user should
 * hold a role every route admits, e.g. admin); `throwaway` a user id that `admin.*` routes may change.
 */
export async function runFuzz(
  app: FastifyInstance,
  doc: any,
  fuzzer: Account,
  opts: { runs: number; seed: number; throwawayUserId: string },
): Promise<FuzzReport> {
  const arbs = new SchemaArbitraries(doc);
  const report: FuzzReport = { routes: 0, cases: 0, byStatus: {}, serverErrors: [] };
  for (const op of operations(doc)) {
    report.routes++;
    const auth = op.op[AUTH_EXTENSION] as AuthDeclaration | undefined;
    const headers = auth && !auth.principals.includes('user') ? fuzzer.agentHeaders : fuzzer.user.headers;
    const owned = (name: string): string | null => {
      if (op.path.startsWith('/admin/users/')) return opts.throwawayUserId;
      // Agent-scoped paths name the second agent, so rotating or deleting it never ends the calling agent's token.
      if (name === 'id' && op.path.startsWith('/v2/agents/')) return fuzzer.other.id;
      return ownedId(fuzzer, op.path, name);
    };
    const seed = opts.seed ^ createHash('sha256').update(op.key).digest().readInt32LE(0);
    const generated = SKIP_GENERATED.has(op.key)
      ? []
      : fc.sample(requestArbitrary(op, arbs, owned), { seed, numRuns: opts.runs });
    for (const req of [...fixedCases(op, arbs, owned), ...generated]) await send(app, op.key, headers, req, report);
  }
  return report;
}

async function send(
  app: FastifyInstance,
  key: string,
  headers: Record<string, string>,
  req: FuzzRequest,
  report: FuzzReport,
): Promise<void> {
  const res = await app.inject({
    method: req.method as 'GET',
    url: req.url,
    headers: { ...headers, ...(req.payload !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(req.payload !== undefined ? { payload: req.payload } : {}),
  });
  report.cases++;
  report.byStatus[res.statusCode] = (report.byStatus[res.statusCode] ?? 0) + 1;
  if (res.statusCode >= 500)
    report.serverErrors.push({
      op: key,
      method: req.method,
      url: req.url.slice(0, 200),
      payload: req.payload?.slice(0, 200),
      what: req.what,
      status: res.statusCode,
      body: res.body.slice(0, 300),
    });
}

/** Everything `acct` owns, read through its own credentials (volatile fields removed), for before/after comparison. */
export async function snapshot(app: FastifyInstance, acct: Account): Promise<unknown> {
  const get = async (url: string, headers: Record<string, string>) => {
    const res = await app.inject({ method: 'GET', url, headers });
    return { status: res.statusCode, body: strip(res.json()) };
  };
  const h = acct.user.headers;
  return {
    agent: await get(`/v2/agents/${acct.agent.id}`, h),
    other: await get(`/v2/agents/${acct.other.id}`, h),
    ownMemory: await get('/v2/memory', acct.agentHeaders),
    otherMemory: await get(`/v2/agents/${acct.other.id}/memory`, h),
    permissions: await get(`/v2/agents/${acct.agent.id}/permissions`, h),
    memories: await get('/memory', h),
    session: await get(`/v1/sessions/${acct.sessionId}`, h),
    service: await get(`/owner/services/${acct.serviceId}`, h),
    apiKeys: await get('/api-keys', h),
    subscription: await get(`/subscriptions/${acct.subscriptionId}`, h),
    me: await get('/v1/auth/me', h),
  };
}

function strip(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(strip);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => !['last_used_at', 'request_id'].includes(k))
        .map(([k, x]) => [k, strip(x)]),
    );
  }
  return v;
}
