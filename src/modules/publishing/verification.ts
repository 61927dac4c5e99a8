/**
 * Functional verification: the owner's test calls run against the real upstream (signed like
 * ordinary executions, through the guarded client), each checked for the expected HTTP status
 * (default: any 2xx) and, optionally, a JSON Schema of the response body.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Static } from 'typebox';
import type { AppContext } from '../../context.js';
import { AppError } from '../../http/errors.js';
import { newId } from '../../http/ids.js';
import { upstreamFetch } from '../../upstream/http.js';
import { mcpCallTool } from '../../upstream/mcp.js';
import { applyUpstreamAuth, buildHttpRequest, parseBody } from '../../upstream/request.js';
import {
  HEADER_REQUEST_ID,
  HEADER_SIGNATURE,
  HEADER_USER,
  signRequest,
  userPseudonym,
} from '../../upstream/signing.js';
import { resolveExecutableTool } from '../registry/executable.js';
import { withCallerGrant } from '../connections/grant.js';
import type { TestInput } from './schemas.js';
import type { VerificationResult } from '../../db/schema/index.js';

/** One configured test call. */
export type VerificationTest = Static<typeof TestInput>;

const ajv = new Ajv2020({ allErrors: true, strict: false });

/** Validate a response against `schema`; returns an error message or null. */
export function schemaMismatch(schema: Record<string, unknown>, value: unknown): string | null {
  let validate;
  try {
    const { $id: _id, ...rest } = schema;
    validate = ajv.compile(rest);
  } catch (err) {
    return `expect.json_schema does not compile: ${(err as Error).message}`;
  }
  if (validate(value)) return null;
  const first = validate.errors
    ?.slice(0, 3)
    .map((e) => `${e.instancePath || '/'} ${e.message}`)
    .join('; ');
  return `response does not match expect.json_schema: ${first}`;
}

/** Run one test against service `serviceId`. Never throws: failures are results. */
export async function runTest(
  ctx: AppContext,
  serviceId: string,
  test: VerificationTest,
  timeoutMs: number,
): Promise<VerificationResult> {
  const started = performance.now();
  const result = (
    status: 'passed' | 'failed',
    httpStatus: number | null,
    error: string | null,
  ): VerificationResult => ({
    tool: test.tool,
    status,
    http_status: httpStatus,
    latency_ms: Math.round(performance.now() - started),
    error,
  });
  const resolved = await resolveExecutableTool(ctx, serviceId, test.tool);
  if (!resolved)
    return { tool: test.tool, status: 'failed', http_status: null, latency_ms: null, error: 'tool no longer exists' };
  try {
    // An oauth2 service is verified with its owner's own connection (docs/connections.md).
    const exec = (await withCallerGrant(ctx, { accountId: resolved.service.ownerId, agentId: null }, resolved)).tool;
    if (exec.service.source === 'mcp' || exec.tool.method === 'MCP') {
      const { url, headers } = applyUpstreamAuth(exec.upstreamAuth, exec.service.mcpUrl!);
      const res = await mcpCallTool(ctx, url, exec.tool.path, test.arguments, { headers, timeoutMs });
      if (res.isError)
        return result('failed', null, `tool answered an error: ${JSON.stringify(res.content).slice(0, 300)}`);
      if (test.expect?.json_schema) {
        let value: unknown = res.structuredContent;
        if (value === undefined) {
          const text = (res.content as Array<{ type?: string; text?: string }>).find((c) => c.type === 'text')?.text;
          try {
            value = text === undefined ? null : JSON.parse(text);
          } catch {
            value = text;
          }
        }
        const mismatch = schemaMismatch(test.expect.json_schema, value);
        if (mismatch) return result('failed', null, mismatch);
      }
      return result('passed', null, null);
    }
    const req = buildHttpRequest(exec, test.arguments);
    const requestId = newId('job');
    req.headers[HEADER_REQUEST_ID] = requestId;
    req.headers[HEADER_USER] = userPseudonym(exec.signingSecret, `verification:${serviceId}`);
    req.headers[HEADER_SIGNATURE] = signRequest(
      exec.signingSecret,
      req.method,
      req.url.pathname + req.url.search,
      req.body,
    );
    const res = await upstreamFetch(ctx, {
      method: req.method,
      url: req.url.toString(),
      headers: req.headers,
      body: req.body,
      timeoutMs,
    });
    const statusOk =
      test.expect?.status !== undefined ? res.status === test.expect.status : res.status >= 200 && res.status < 300;
    if (!statusOk)
      return result('failed', res.status, `expected HTTP ${test.expect?.status ?? '2xx'}, got ${res.status}`);
    if (test.expect?.json_schema) {
      const parsed = parseBody(res.headers['content-type'], res.body);
      if (!parsed.ok) return result('failed', res.status, parsed.message);
      const mismatch = schemaMismatch(test.expect.json_schema, parsed.value);
      if (mismatch) return result('failed', res.status, mismatch);
    }
    return result('passed', res.status, null);
  } catch (err) {
    if (err instanceof AppError) return result('failed', null, `${err.code}: ${err.message}`);
    ctx.log.error({ err, serviceId }, 'verification test crashed');
    return result('failed', null, 'internal error while running the test');
  }
}
