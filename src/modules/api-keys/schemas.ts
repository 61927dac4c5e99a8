/** TypeBox schemas of the api-keys routes. */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

export const ApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'first characters of the key, to tell keys apart' }),
  last_used_at: Nullable(Timestamp),
  expires_at: Nullable(Timestamp),
  created_at: Timestamp,
});

export const CreatedApiKeySchema = Type.Intersect([ApiKeySchema, Type.Object({ key: Type.String({ description: 'the secret; shown only in this answer' }) })]);

export const CreateApiKeyBody = Type.Object(
  { name: Type.String({ minLength: 1, maxLength: 100 }), expires_at: Type.Optional(Timestamp) },
  { additionalProperties: false },
);
