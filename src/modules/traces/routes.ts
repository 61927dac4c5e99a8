/**
 * HTTP routes of the traces module: `GET /v1/traces/:trace_id` (the caller's spans of one kept
 * trace, for the console's waterfall) and `GET /v1/traces?execution_id=…|invocation_id=…`.
 * Users (token or API key) and agent tokens are admitted; ownership is decided in `service.ts`.
 * docs/observability.md.
 */
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.js';
import { principalOf } from '../../http/auth.js';
import { authScope } from '../../http/operations.js';
import { USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { telemetryRuntime } from '../../telemetry/sdk.js';
import { TraceList, TraceListQuery, TraceParams, TraceSchema } from './schemas.js';
import { getTrace, listTraces } from './service.js';

export async function traceRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  // Spans still buffered for the OTLP exporter leave before the process does.
  app.addHook('onClose', async () => {
    await telemetryRuntime()
      ?.flush()
      .catch(() => undefined);
  });
  const { r, op } = authScope(app, ctx.auth, { tags: ['traces'], security: USER_SECURITY });
  r.get(
    '/v1/traces',
    op('traces.list', 'The kept traces of an execution or an invocation', {
      description: 'From the in-process store of recent traces (TRACES_KEEP); only traces with spans of your account.',
      querystring: TraceListQuery,
      response: { 200: TraceList, ...errorResponses(404) },
    }),
    async (req) => listTraces(principalOf(req), req.query),
  );
  r.get(
    '/v1/traces/:trace_id',
    op('traces.get', 'One kept trace: the spans of your account, for a waterfall', {
      description:
        'Spans follow the OpenTelemetry GenAI conventions (`execute_tool {tool}`, `invoke_agent {agent}`). Another account’s trace answers 404.',
      params: TraceParams,
      response: { 200: TraceSchema, ...errorResponses(404) },
    }),
    async (req) => getTrace(principalOf(req), req.params.trace_id),
  );
}
