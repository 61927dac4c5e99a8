/** TypeBox schemas of the publishing routes. */
import { Type } from 'typebox';
import { Nullable, PageQuery, Timestamp } from '../../http/schemas.js';
import { ChecklistSchema } from '../registry/schemas.js';

export const ServiceParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export const ToolParams = Type.Object({
  serviceId: Type.String({ minLength: 1, maxLength: 100 }),
  toolId: Type.String({ minLength: 1, maxLength: 100 }),
});
export const ReportParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  reportId: Type.String({ minLength: 1, maxLength: 100 }),
});

const TestResult = Type.Object({
  tool: Type.String(),
  status: Type.Union([Type.Literal('passed'), Type.Literal('failed')]),
  http_status: Nullable(Type.Integer()),
  latency_ms: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
});

/** Answer of publish, resubmit, unpublish and verification-status. */
export const PublishStatusSchema = Type.Object({
  service_id: Type.String(),
  status: Type.String({ description: 'service status' }),
  verification: Type.Object({
    state: Type.Union([
      Type.Literal('not_started'),
      Type.Literal('pending'),
      Type.Literal('running'),
      Type.Literal('passed'),
      Type.Literal('failed'),
    ]),
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
    tests: Type.Array(TestResult),
  }),
  checklist: ChecklistSchema,
});

export const DomainVerificationSchema = Type.Object({
  service_id: Type.String(),
  host: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('verified'), Type.Literal('failed')]),
  token: Type.String(),
  methods: Type.Array(
    Type.Object({
      type: Type.Union([Type.Literal('dns'), Type.Literal('http')]),
      record_type: Type.Optional(Type.String()),
      name: Type.Optional(Type.String()),
      value: Type.Optional(Type.String()),
      url: Type.Optional(Type.String()),
      content: Type.Optional(Type.String()),
    }),
  ),
  method: Nullable(Type.String()),
  verified_at: Nullable(Timestamp),
  detail: Type.String(),
});

/** One verification test of a service: a tool call and what its answer must look like. */
export const TestInput = Type.Object(
  {
    tool: Type.String({ minLength: 1, maxLength: 100, description: 'tool name, former name or id' }),
    arguments: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
    expect: Type.Optional(
      Type.Object(
        {
          status: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
          json_schema: Type.Optional(
            Type.Record(Type.String(), Type.Unknown(), {
              description: 'JSON Schema (2020-12) the response body must match',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const VerificationConfigBody = Type.Object(
  { tests: Type.Array(TestInput, { maxItems: 20 }) },
  { additionalProperties: false },
);
export const VerificationConfigSchema = Type.Object({ service_id: Type.String(), tests: Type.Array(TestInput) });

export const ReportReason = Type.Union([
  Type.Literal('broken'),
  Type.Literal('wrong_output'),
  Type.Literal('security'),
  Type.Literal('other'),
]);

export const ReportBody = Type.Object(
  {
    tool_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'tool id or name; absent → the whole service' }),
    ),
    reason: ReportReason,
    details: Type.Optional(Type.String({ maxLength: 4000 })),
  },
  { additionalProperties: false },
);

export const ReportSchema = Type.Object({
  id: Type.String(),
  service_id: Type.String(),
  tool_id: Nullable(Type.String()),
  reason: ReportReason,
  details: Nullable(Type.String()),
  status: Type.Union([Type.Literal('open'), Type.Literal('resolved')]),
  created_at: Timestamp,
  resolved_at: Nullable(Timestamp),
});

export const ReportResultSchema = Type.Object({
  ...ReportSchema.properties,
  tool_status: Nullable(Type.Union([Type.Literal('active'), Type.Literal('degraded')])),
});

export const ReportsQuery = Type.Object({
  ...PageQuery.properties,
  status: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('resolved')])),
});

export const RenameBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);
