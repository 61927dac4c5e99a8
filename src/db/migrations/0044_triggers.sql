-- Inbound triggers of deployed agents (POST /hooks/:trigger_id, verified by a shared secret kept
-- encrypted) and the delivery ids of the last 24 h, whose primary key deduplicates redeliveries.
CREATE TABLE IF NOT EXISTS "agent_triggers" (
  "id" text PRIMARY KEY NOT NULL,
  "agent_id" text NOT NULL REFERENCES "agents"("id") ON DELETE CASCADE,
  "owner_id" text NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
  "name" text,
  "mode" text NOT NULL,
  "secret_encrypted" text NOT NULL,
  "enabled" boolean DEFAULT true NOT NULL,
  "rate_limit_per_minute" integer NOT NULL,
  "created_by" text NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL,
  "last_delivery_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "agent_triggers_agent_idx" ON "agent_triggers" ("agent_id", "id");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "trigger_deliveries" (
  "trigger_id" text NOT NULL REFERENCES "agent_triggers"("id") ON DELETE CASCADE,
  "delivery_id" text NOT NULL,
  "invocation_id" text,
  "received_at" timestamp with time zone DEFAULT now() NOT NULL,
  PRIMARY KEY ("trigger_id", "delivery_id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "trigger_deliveries_received_idx" ON "trigger_deliveries" ("trigger_id", "received_at");
