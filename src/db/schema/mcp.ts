/** Tables of the mcp module: MCP sessions (Streamable HTTP `Mcp-Session-Id`), shared by all instances. */
import { boolean, index, pgTable, text } from 'drizzle-orm/pg-core';
import { userFk } from './identity.js';
import { tz, createdAt } from './columns.js';

export const mcpSessions = pgTable(
  'mcp_sessions',
  {
    /** The `Mcp-Session-Id` (`mcs_` + 32 random bytes, base64url). */
    id: text('id').primaryKey(),
    /** The account the session belongs to (users act for themselves, agents for their owner). */
    userId: userFk(),
    /** The agent that opened it (null for a user). */
    agentId: text('agent_id'),
    /** `clientInfo.name` / `.version` of the MCP `initialize` request. */
    clientName: text('client_name').notNull(),
    clientVersion: text('client_version'),
    protocolVersion: text('protocol_version').notNull(),
    /** Subscribed tools are listed as their own MCP tools (`<service>__<tool>`). */
    exposeTools: boolean('expose_tools').notNull().default(false),
    /** The client declared URL-mode elicitation (`capabilities.elicitation.url`, MCP 2025-11-25). */
    elicitationUrl: boolean('elicitation_url').notNull().default(false),
    /** The platform session `execute_tool` uses without `session_id` (created on first use). */
    platformSessionId: text('platform_session_id'),
    createdAt: createdAt(),
    expiresAt: tz('expires_at').notNull(),
  },
  (t) => [index('mcp_sessions_expires_idx').on(t.expiresAt)],
);
