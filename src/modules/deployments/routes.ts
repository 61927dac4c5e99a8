/** HTTP routes of the deployments module (spec group "Deployment (v2)"). */
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AppContext } from '../../context.js';
import { principalOf, requireAuth } from '../../http/auth.js';
import { AppError } from '../../http/errors.js';
import { operations } from '../../http/operations.js';
import { BEARER_SECURITY, IdParams, ListOf, PageQuery, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import {
  DeployForm,
  DeploymentSchema,
  ExecutionParams,
  FollowQuery,
  LogLinesSchema,
  InvocationSchema,
  InvocationSummarySchema,
  InvokeBody,
  InvokeQuery,
  RedeployBody,
  RollbackBody,
} from './schemas.js';
import { streamAgent, streamInvocation } from './follow.js';
import { getInvocation, invokeAgent, listInvocations, recentLogs } from './invocations.js';
import { registerDeploymentJobs } from './jobs.js';
import {
  createDeployment,
  listDeployments,
  redeployDeployment,
  rollbackDeployment,
  stopDeployment,
  type DeployInput,
} from './service.js';

/** The JSON body of invoke/rollback/redeploy is optional: no body means `{}`. */
const emptyBodyIsObject = async (req: FastifyRequest): Promise<void> => {
  req.body ??= {};
};

/** Route options `opts` (from `op(…)`) of a route whose JSON body may be left out (invoke, rollback, redeploy). */
function optionalBody<O extends object>(opts: O): O & { preValidation: typeof emptyBodyIsObject } {
  return { ...opts, preValidation: emptyBodyIsObject };
}

const FIELDS = new Set(['entrypoint', 'env', 'description', 'egress']);
const FIELD_MAX = 16 * 1024;

/** Read the deploy form: one file part (`artifact`, or the first file) and the optional text fields. */
async function readDeployForm(req: FastifyRequest): Promise<DeployInput> {
  if (!req.isMultipart())
    throw new AppError(
      'unsupported_media_type',
      'Send multipart/form-data with the artifact (a .tar.gz file) in the "artifact" part',
    );
  let artifact: Buffer | undefined;
  const fields: Record<string, string> = {};
  for await (const part of req.parts()) {
    if (part.type === 'file') {
      const buf = await part.toBuffer();
      if (artifact === undefined) artifact = buf;
      continue;
    }
    if (!FIELDS.has(part.fieldname)) {
      throw new AppError('validation_failed', `Unknown form field "${part.fieldname}"`, {
        errors: [{ in: 'body', pointer: `/${part.fieldname}`, message: 'unknown field' }],
      });
    }
    const value = typeof part.value === 'string' ? part.value : String(part.value);
    if (value.length > FIELD_MAX)
      throw new AppError('validation_failed', `Field "${part.fieldname}" is too long`, {
        errors: [{ in: 'body', pointer: `/${part.fieldname}`, message: 'too long' }],
      });
    fields[part.fieldname] = value;
  }
  if (!artifact)
    throw new AppError('validation_failed', 'The form has no file part: send the tarball as "artifact"', {
      errors: [{ in: 'body', pointer: '/artifact', message: 'required' }],
    });
  if (fields.description !== undefined && fields.description.length > 256) {
    throw new AppError('validation_failed', 'description must be at most 256 characters', {
      errors: [{ in: 'body', pointer: '/description', message: 'too long' }],
    });
  }
  return {
    artifact,
    entrypoint: fields.entrypoint || undefined,
    env: fields.env,
    egress: fields.egress,
    description: fields.description || undefined,
  };
}

export async function deploymentRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  registerDeploymentJobs(ctx);
  requireAuth(app, ctx.auth, { principals: ['user', 'agent'] });
  const maxBytes = ctx.config.deploy.maxBytes;
  // Multipart only in this scope: the artifact is buffered (≤ DEPLOY_MAX_BYTES, else 413).
  await app.register(multipart, {
    limits: { fileSize: maxBytes, files: 1, fields: 10, fieldSize: FIELD_MAX, parts: 12, headerPairs: 200 },
  });
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const op = operations(['deployments'], [...USER_SECURITY, ...BEARER_SECURITY]);

  r.post(
    '/v2/agents/:id/deploy',
    {
      ...op(
        'deployments.deploy',
        'Deploy agent code (multipart: a .tar.gz artifact); creates version N+1, prepared in the background',
        {
          consumes: ['multipart/form-data'],
          params: IdParams,
          body: DeployForm,
          response: { 202: DeploymentSchema, ...errorResponses(403, 404, 409, 413, 415) },
        },
      ),
      // The multipart body is read by the handler (streamed, capped), not by the JSON validator.
      validatorCompiler: ({ httpPart }) =>
        httpPart === 'params'
          ? (data: unknown) => {
              const id = (data as { id?: unknown }).id;
              return typeof id === 'string' && id.length >= 1 && id.length <= 100
                ? { value: data }
                : { error: new Error('params/id is invalid') };
            }
          : () => true,
    },
    async (req, reply) => {
      const form = await readDeployForm(req);
      return reply.code(202).send(await createDeployment(ctx, principalOf(req), req.params.id, form));
    },
  );

  r.post(
    '/v2/agents/:id/invoke',
    optionalBody(
      op(
        'deployments.invoke',
        'Invoke the active version: 200 with the finished run, or 202 with a queued run (?async=true or "async": true)',
        {
          params: IdParams,
          querystring: InvokeQuery,
          body: InvokeBody,
          response: { 200: InvocationSchema, 202: InvocationSchema, ...errorResponses(403, 404, 409, 503) },
        },
      ),
    ),
    async (req, reply) => {
      const isAsync = req.query.async === true || req.body.async === true;
      const inv = await invokeAgent(ctx, principalOf(req), req.params.id, { ...req.body, async: isAsync });
      return reply.code(isAsync ? 202 : 200).send(inv);
    },
  );

  r.get(
    '/v2/agents/:id/deployments',
    op('deployments.list', 'Deployment history, newest first', {
      params: IdParams,
      querystring: PageQuery,
      response: { 200: ListOf(DeploymentSchema), ...errorResponses(403, 404) },
    }),
    async (req) => listDeployments(ctx, principalOf(req), req.params.id, req.query),
  );

  r.post(
    '/v2/agents/:id/deployments/rollback',
    optionalBody(
      op('deployments.rollback', 'Make the previous good version active again (the current one becomes rolled_back)', {
        params: IdParams,
        body: RollbackBody,
        response: { 200: DeploymentSchema, ...errorResponses(403, 404, 409) },
      }),
    ),
    async (req) => rollbackDeployment(ctx, principalOf(req), req.params.id, req.body),
  );

  r.post(
    '/v2/agents/:id/deployments/stop',
    op('deployments.stop', 'Stop the active deployment (invocations then answer 409)', {
      params: IdParams,
      response: { 200: DeploymentSchema, ...errorResponses(403, 404, 409) },
    }),
    async (req) => stopDeployment(ctx, principalOf(req), req.params.id),
  );

  r.post(
    '/v2/agents/:id/deployments/redeploy',
    optionalBody(
      op('deployments.redeploy', 'Run the prepare step again on the current version (or the one named)', {
        params: IdParams,
        body: RedeployBody,
        response: { 202: DeploymentSchema, ...errorResponses(403, 404, 409) },
      }),
    ),
    async (req, reply) =>
      reply.code(202).send(await redeployDeployment(ctx, principalOf(req), req.params.id, req.body)),
  );

  r.get(
    '/v2/agents/:id/executions',
    op('deployments.executions.list', 'Invocations of the agent, newest first', {
      params: IdParams,
      querystring: PageQuery,
      response: { 200: ListOf(InvocationSummarySchema), ...errorResponses(403, 404) },
    }),
    async (req) => listInvocations(ctx, principalOf(req), req.params.id, req.query),
  );

  r.get(
    '/v2/agents/:id/executions/:exeId',
    op('deployments.executions.get', 'One invocation with input, output and logs', {
      params: ExecutionParams,
      response: { 200: InvocationSchema, ...errorResponses(403, 404) },
    }),
    async (req) => getInvocation(ctx, principalOf(req), req.params.id, req.params.exeId),
  );

  const logsRoute = <P extends typeof IdParams | typeof ExecutionParams>(
    operationId: string,
    summary: string,
    params: P,
  ) =>
    op(operationId, summary, {
      description:
        'Lines as JSON; with ?follow=true a text/event-stream of `log` events (data: a line with its invocation_id) and `end` events (data: { invocation_id, status })',
      params,
      querystring: FollowQuery,
      produces: ['application/json', 'text/event-stream'],
      response: { 200: LogLinesSchema, ...errorResponses(403, 404) },
    });
  r.get(
    '/v2/agents/:id/executions/:exeId/logs',
    logsRoute(
      'deployments.executions.logs',
      "An invocation's log lines; ?follow=true streams them (SSE) until it ends",
      ExecutionParams,
    ),
    async (req, reply) => {
      const p = principalOf(req);
      const inv = await getInvocation(ctx, p, req.params.id, req.params.exeId);
      if (!req.query.follow)
        return { data: inv.logs.map((l) => ({ ...l, invocation_id: inv.id })), logs_truncated: inv.logs_truncated };
      streamInvocation(req, reply, inv, () => getInvocation(ctx, p, req.params.id, req.params.exeId));
      return reply;
    },
  );

  r.get(
    '/v2/agents/:id/logs',
    logsRoute(
      'deployments.logs',
      "Log lines of the agent's recent invocations; ?follow=true tails its invocations as they run (SSE)",
      IdParams,
    ),
    async (req, reply) => {
      const recent = await recentLogs(ctx, principalOf(req), req.params.id);
      if (!req.query.follow) return recent;
      streamAgent(req, reply, req.params.id);
      return reply;
    },
  );
}
