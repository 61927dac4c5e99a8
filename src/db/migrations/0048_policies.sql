-- Cedar policies on tool calls (docs/governance.md#policies): one `forbid` statement per row, of an
-- account or global (admins); and the log of their decisions (allow / deny / approval), written in
-- batches off the request path and kept for POLICY_DECISIONS_RETENTION_DAYS. The executions index
-- lets a policy's `context.calls` (the caller's calls of a tool in the last hour / day) be one
-- indexed count.
CREATE TABLE IF NOT EXISTS "policies" (
  "id" text PRIMARY KEY NOT NULL,
  "scope" text NOT NULL,
  "owner_id" text NOT NULL,
  "description" text DEFAULT '' NOT NULL,
  "source" text NOT NULL,
  "enabled" boolean DEFAULT true NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "policies_owner_idx" ON "policies" ("owner_id", "id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "policies_scope_idx" ON "policies" ("scope");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "policy_decisions" (
  "id" text PRIMARY KEY NOT NULL,
  "account_id" text NOT NULL,
  "principal" text NOT NULL,
  "agent_id" text,
  "service_id" text NOT NULL,
  "tool_id" text NOT NULL,
  "tool" text NOT NULL,
  "decision" text NOT NULL,
  "policy_ids" text[] DEFAULT '{}'::text[] NOT NULL,
  "errors" jsonb DEFAULT '[]'::jsonb NOT NULL,
  "at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "policy_decisions_account_idx" ON "policy_decisions" ("account_id", "at");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "policy_decisions_at_idx" ON "policy_decisions" ("at");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "executions_caller_tool_idx" ON "executions" ("tool_id", "user_id", "created_at");
