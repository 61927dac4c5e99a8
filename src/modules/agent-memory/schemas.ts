/** TypeBox schemas of the agent-memory routes (spec "Agent memory (v2)"). */
import { Type } from 'typebox';
import { Nullable, PageQuery, Timestamp } from '../../http/schemas.js';

/** A key: 1–256 characters, URL-encoded in paths. */
export const KeyParams = Type.Object({
  key: Type.String({ minLength: 1, maxLength: 256, description: 'the key, URL-encoded' }),
});
export const AgentKeyParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  key: Type.String({ minLength: 1, maxLength: 256 }),
});

export const EntrySchema = Type.Object({
  key: Type.String(),
  value: Type.Unknown({ description: 'any JSON value' }),
  version: Type.Integer({ description: 'also the ETag ("<version>")' }),
  updated_at: Timestamp,
  expires_at: Nullable(Timestamp),
});

export const PutEntryBody = Type.Object(
  {
    value: Type.Unknown({
      description: 'any JSON value, at most AGENT_MEMORY_MAX_VALUE_BYTES serialised (default 256 KiB)',
    }),
    ttl_seconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 315_360_000, description: 'expire after this many seconds; absent = never' }),
    ),
  },
  { additionalProperties: false, required: ['value'] },
);

export const ListEntriesQuery = Type.Object({
  ...PageQuery.properties,
  prefix: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
});

export const ConditionalHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ maxLength: 1000 })),
  'if-none-match': Type.Optional(Type.String({ maxLength: 1000 })),
});

export const AuditSchema = Type.Object({
  id: Type.String(),
  agent_id: Type.String({ description: 'the agent whose memory was accessed' }),
  actor_agent_id: Type.String(),
  action: Type.Union([Type.Literal('read'), Type.Literal('write')]),
  outcome: Type.Union([Type.Literal('allowed'), Type.Literal('denied')]),
  key: Nullable(Type.String({ description: 'written key' })),
  prefix: Nullable(Type.String({ description: 'prefix filter of a read' })),
  keys: Type.Array(Type.String(), { description: 'keys a read returned' }),
  permission_id: Nullable(Type.String()),
  created_at: Timestamp,
});

export const AuditQuery = Type.Object({
  ...PageQuery.properties,
  actor_agent_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  action: Type.Optional(Type.Union([Type.Literal('read'), Type.Literal('write')])),
});
