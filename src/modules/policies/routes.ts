/**
 * HTTP routes of the policies module (`/v1/policies`): CRUD, the Cedar schema, the dry run and the
 * decision log. Users only (access token or API key); who may write what is checked in `service.ts`.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.js';
import { userOf } from '../../http/auth.js';
import { authScope, noContent } from '../../http/operations.js';
import { IdParams, ListOf, USER_SECURITY, errorResponses } from '../../http/schemas.js';
import { CEDAR_SCHEMA } from './cedar.js';
import { listDecisions } from './decisions.js';
import { dryRun } from './evaluate.js';
import {
  CreatePolicyBody,
  DecisionListQuery,
  DecisionSchema,
  EvaluateBody,
  EvaluationSchema,
  PolicyListQuery,
  PolicySchema,
  UpdatePolicyBody,
} from './schemas.js';
import { createPolicy, deletePolicy, getPolicy, listPolicies, updatePolicy } from './service.js';

export async function policyRoutes(app: FastifyInstance, { ctx }: { ctx: AppContext }): Promise<void> {
  const { r, op } = authScope(app, ctx.auth, { tags: ['policies'], security: USER_SECURITY, principals: ['user'] });
  r.get(
    '/v1/policies/schema',
    op('policies.schema', 'The Cedar schema policies are validated against (namespace Platform)', {
      description:
        'Cedar schema text: principals `User`/`Agent` in `Account`, action `execute`, resource `Tool` in `Service`, context `arguments`, `numbers`, `argument_names`, `time`, `calls`.',
      response: { 200: Type.Object({ schema: Type.String(), format: Type.Literal('cedar') }), ...errorResponses() },
    }),
    async () => ({ schema: CEDAR_SCHEMA, format: 'cedar' as const }),
  );
  r.get(
    '/v1/policies',
    op('policies.list', "The account's policies and the global ones", {
      querystring: PolicyListQuery,
      response: { 200: ListOf(PolicySchema), ...errorResponses() },
    }),
    async (req) => listPolicies(ctx, userOf(req), req.query),
  );
  r.post(
    '/v1/policies',
    op('policies.create', 'Create a policy (one Cedar forbid statement)', {
      description:
        'Validated against `GET /v1/policies/schema`; errors answer 400 `validation_failed` with `cedar_errors` (line, column). `scope: global` needs the admin role.',
      body: CreatePolicyBody,
      response: { 201: PolicySchema, ...errorResponses(403, 409) },
    }),
    async (req, reply) => reply.code(201).send(await createPolicy(ctx, userOf(req), req.body)),
  );
  r.post(
    '/v1/policies/evaluate',
    op('policies.evaluate', 'Dry run: the decision of the policies on a tool call, and which policies decided', {
      body: EvaluateBody,
      response: { 200: EvaluationSchema, ...errorResponses(404) },
    }),
    async (req) => dryRun(ctx, userOf(req), req.body),
  );
  r.get(
    '/v1/policies/decisions',
    op('policies.decisions', "The account's policy decisions on tool calls, newest first", {
      description: `Every decision of a non-empty policy set (allow, deny, approval); kept 30 days.`,
      querystring: DecisionListQuery,
      response: { 200: Type.Object({ data: Type.Array(DecisionSchema) }), ...errorResponses() },
    }),
    async (req) => ({ data: await listDecisions(ctx, userOf(req).userId, req.query) }),
  );
  r.get(
    '/v1/policies/:id',
    op('policies.get', 'One policy (the account’s or a global one)', {
      params: IdParams,
      response: { 200: PolicySchema, ...errorResponses(404) },
    }),
    async (req) => getPolicy(ctx, userOf(req), req.params.id),
  );
  r.patch(
    '/v1/policies/:id',
    op('policies.update', 'Change a policy’s text, description or enabled flag', {
      params: IdParams,
      body: UpdatePolicyBody,
      response: { 200: PolicySchema, ...errorResponses(403, 404) },
    }),
    async (req) => updatePolicy(ctx, userOf(req), req.params.id, req.body),
  );
  r.delete(
    '/v1/policies/:id',
    op('policies.delete', 'Delete a policy', {
      params: IdParams,
      response: { 204: Type.Null(), ...errorResponses(403, 404) },
    }),
    async (req, reply) => noContent(reply, deletePolicy(ctx, userOf(req), req.params.id)),
  );
}
