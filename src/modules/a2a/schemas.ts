/** TypeBox schemas of the a2a module's platform routes (`/v2/agents/:id/a2a`). The A2A face itself speaks the A2A v1 JSON of `@a2a-js/sdk`. */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

export const PublicationSchema = Type.Object({
  agent_id: Type.String(),
  enabled: Type.Boolean({ description: 'true: the agent card and the JSON-RPC endpoint answer' }),
  url: Type.String({ description: "the agent's A2A JSON-RPC endpoint (POST)" }),
  card_url: Type.String({ description: 'the agent card (GET, no credential needed while published)' }),
  created_at: Nullable(Timestamp),
  updated_at: Nullable(Timestamp),
});

export const PublicationBody = Type.Object(
  { enabled: Type.Boolean({ description: 'true publishes the agent over A2A, false withdraws it' }) },
  { additionalProperties: false },
);

export const AgentParams = Type.Object({ agent_id: Type.String({ minLength: 1, maxLength: 100 }) });
