-- Outbound webhooks: endpoints an account subscribes to platform events (signed per Standard
-- Webhooks with a per-endpoint secret kept encrypted) and one message per event and endpoint with
-- its delivery state, attempts and a capped attempt log (retries with backoff for up to 24 h,
-- then `failed`: the dead-letter list, replayable).
CREATE TABLE IF NOT EXISTS "webhook_endpoints" (
  "id" text PRIMARY KEY NOT NULL,
  "owner_id" text NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
  "url" text NOT NULL,
  "description" text,
  "events" text[] DEFAULT '{}'::text[] NOT NULL,
  "secret_encrypted" text NOT NULL,
  "enabled" boolean DEFAULT true NOT NULL,
  "disabled_reason" text,
  "failing_since" timestamp with time zone,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_endpoints_owner_idx" ON "webhook_endpoints" ("owner_id", "id");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "webhook_messages" (
  "id" text PRIMARY KEY NOT NULL,
  "endpoint_id" text NOT NULL REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE,
  "event_type" text NOT NULL,
  "payload" jsonb NOT NULL,
  "status" text NOT NULL,
  "attempts" integer DEFAULT 0 NOT NULL,
  "log" jsonb DEFAULT '[]'::jsonb NOT NULL,
  "next_attempt_at" timestamp with time zone,
  "give_up_at" timestamp with time zone NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL,
  "delivered_at" timestamp with time zone
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_messages_endpoint_idx" ON "webhook_messages" ("endpoint_id", "id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "webhook_messages_pending_idx" ON "webhook_messages" ("next_attempt_at") WHERE status = 'pending';
