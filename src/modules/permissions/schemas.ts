/** TypeBox schemas of the permissions routes (spec "Agent permissions (v2)"). */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

const Access = Type.Union([Type.Literal('read'), Type.Literal('write')], { description: '`write` implies `read`' });

export const PermissionSchema = Type.Object({
  id: Type.String(),
  agent_id: Type.String({ description: 'the agent whose memory is opened' }),
  grantee_agent_id: Type.String(),
  access: Access,
  key_prefix: Nullable(Type.String()),
  expires_at: Nullable(Timestamp),
  created_by: Type.String({ description: 'owner user (usr_…) or the agent itself (agt_…)' }),
  created_at: Timestamp,
});

export const CreatePermissionBody = Type.Object(
  {
    grantee_agent_id: Type.String({ minLength: 1, maxLength: 100 }),
    access: Access,
    key_prefix: Type.Optional(
      Type.Union([
        Type.Null(),
        Type.String({ maxLength: 256, description: 'only keys starting with this; absent = every key' }),
      ]),
    ),
    expires_at: Type.Optional(Type.Union([Type.Null(), Timestamp])), // null first: coerceTypes would turn null into ""
  },
  { additionalProperties: false },
);

export const PermissionParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  permId: Type.String({ minLength: 1, maxLength: 100 }),
});
