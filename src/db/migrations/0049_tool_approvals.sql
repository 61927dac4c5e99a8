-- Human approval of tool calls: a call a policy holds for a person's approval is stored as one
-- request bound to the requesting actor (account + agent) and to the SHA-256 of the call's
-- canonical JSON. The caller re-submits the call with the approval's id once it is approved; the
-- approval is then used (single use). One pending request per actor and call (a repeat of the
-- same call reuses it).
CREATE TABLE IF NOT EXISTS "tool_approvals" (
  "id" text PRIMARY KEY NOT NULL,
  "account_id" text NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
  "agent_id" text,
  "service_id" text NOT NULL,
  "service_name" text NOT NULL,
  "tool_id" text NOT NULL,
  "tool_name" text NOT NULL,
  "arguments" jsonb NOT NULL,
  "call_hash" text NOT NULL,
  "policy_ids" text[] DEFAULT '{}'::text[] NOT NULL,
  "status" text NOT NULL,
  "decided_by" text,
  "decided_at" timestamp with time zone,
  "reason" text,
  "used_at" timestamp with time zone,
  "expires_at" timestamp with time zone NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tool_approvals_account_idx" ON "tool_approvals" ("account_id", "id");
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "tool_approvals_pending_uq" ON "tool_approvals" ("account_id", coalesce("agent_id", ''), "call_hash") WHERE status = 'pending';
--> statement-breakpoint
-- Whether an MCP session's client declared URL-mode elicitation (`capabilities.elicitation.url`):
-- a held tool call then answers with a URL elicitation (-32042) instead of a text result.
ALTER TABLE "mcp_sessions" ADD COLUMN IF NOT EXISTS "elicitation_url" boolean DEFAULT false NOT NULL;
