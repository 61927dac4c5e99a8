/** TypeBox schemas of the api-keys routes. */
import { Type } from 'typebox';
import { CREDENTIAL_SCOPES } from '../../http/auth.js';
import { Nullable, Timestamp } from '../../http/schemas.js';

/** One scope word of the credential vocabulary (`http/auth.ts` CREDENTIAL_SCOPES). */
export const ScopeSchema = Type.Enum(CREDENTIAL_SCOPES, {
  description:
    'memory:read, memory:write, permissions:manage, tools:execute (as agent tokens), agents:manage (create and manage agents), api_keys:manage (create, list and revoke keys), approvals:decide (approve or deny held tool calls, accept changed tool definitions), policies:manage (create, change and delete policies)',
});

export const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'first characters of the key, to tell keys apart' }),
  scopes: Type.Array(ScopeSchema, {
    description:
      'what the key may do; a key created without `scopes` has every scope but approvals:decide and policies:manage',
  }),
  last_used_at: Nullable(Timestamp),
  expires_at: Nullable(Timestamp, {
    description: 'after this instant the key answers 401 token_expired; null = never',
  }),
  created_at: Timestamp,
});

export const CreatedApiKeySchema = Type.Intersect([
  ApiKeySchema,
  Type.Object({ key: Type.String({ description: 'the secret; shown only in this answer' }) }),
]);

export const CreateApiKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    expires_at: Type.Optional(Timestamp),
    scopes: Type.Optional(
      Type.Array(ScopeSchema, {
        uniqueItems: true,
        maxItems: CREDENTIAL_SCOPES.length,
        description:
          "default: the creating credential's scopes (every scope for a user's own token) except approvals:decide and policies:manage, which a key gets only when named here; an API key may only give a subset of its own (403 exceeds_credential)",
      }),
    ),
  },
  { additionalProperties: false },
);
