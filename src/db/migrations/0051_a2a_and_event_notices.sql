-- A2A publication of deployed agents (opt-in per agent: a row with enabled = true publishes the
-- agent's card and JSON-RPC endpoint under /a2a/agents/:agent_id), and the quota windows whose
-- exhaustion was already announced (`quota.exhausted` goes out once per subscription and window,
-- whichever instance refuses first).
CREATE TABLE IF NOT EXISTS "a2a_publications" (
  "agent_id" text PRIMARY KEY NOT NULL REFERENCES "agents"("id") ON DELETE CASCADE,
  "owner_id" text NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
  "enabled" boolean DEFAULT true NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "quota_exhaustions" (
  "subscription_id" text NOT NULL,
  "window" text NOT NULL,
  "resets_at" timestamp with time zone NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  PRIMARY KEY ("subscription_id", "window", "resets_at")
);
