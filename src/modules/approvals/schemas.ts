/** TypeBox schemas of the approval routes (`/v1/approvals`). */
import { Type } from 'typebox';
import { Nullable, PageQuery, Timestamp } from '../../http/schemas.js';

const ApprovalStatus = Type.Union(
  [
    Type.Literal('pending'),
    Type.Literal('approved'),
    Type.Literal('denied'),
    Type.Literal('expired'),
    Type.Literal('used'),
  ],
  {
    description:
      '`pending` (waits for a decision), `approved` (the caller may re-submit the call once), `denied`, `expired` (no decision, or not used, in time), `used` (the approved call ran)',
  },
);

export const ApprovalSchema = Type.Object({
  id: Type.String({ description: '`apr_…`; pass it as `approval_id` when re-submitting the call' }),
  status: ApprovalStatus,
  agent_id: Nullable(Type.String(), { description: 'the requesting agent; null for the account’s own calls' }),
  service_id: Type.String(),
  service_name: Type.String(),
  tool_id: Type.String(),
  tool_name: Type.String(),
  arguments: Type.Record(Type.String(), Type.Unknown(), { description: 'the exact arguments the approval admits' }),
  policy_ids: Type.Array(Type.String(), { description: 'the policies that required the approval' }),
  reason: Nullable(Type.String(), { description: 'the reason given with a denial' }),
  decided_by: Nullable(Type.String(), { description: 'the user who approved or denied' }),
  decided_at: Nullable(Timestamp),
  used_at: Nullable(Timestamp),
  expires_at: Timestamp,
  created_at: Timestamp,
  approval_url: Type.String({ description: 'the console page where a person decides' }),
});

export const ApprovalListQuery = Type.Intersect([PageQuery, Type.Object({ status: Type.Optional(ApprovalStatus) })]);

export const DenyBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'shown to the caller' })) },
  { additionalProperties: false },
);
