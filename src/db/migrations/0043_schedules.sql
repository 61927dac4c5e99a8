-- Cron schedules of deployed agents and one row per handled tick. The primary key of
-- schedule_runs (schedule_id, tick_at) is what makes a tick run once across instances.
-- agent_invocations.trigger says what started an invocation: api | schedule | trigger | a2a.
ALTER TABLE "agent_invocations" ADD COLUMN IF NOT EXISTS "trigger" text DEFAULT 'api' NOT NULL;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "agent_schedules" (
  "id" text PRIMARY KEY NOT NULL,
  "agent_id" text NOT NULL REFERENCES "agents"("id") ON DELETE CASCADE,
  "owner_id" text NOT NULL REFERENCES "users"("id") ON DELETE CASCADE,
  "name" text,
  "cron" text NOT NULL,
  "timezone" text NOT NULL,
  "input" jsonb,
  "enabled" boolean DEFAULT true NOT NULL,
  "overlap" text NOT NULL,
  "next_run_at" timestamp with time zone,
  "last_run_at" timestamp with time zone,
  "last_invocation_id" text,
  "created_by" text NOT NULL,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "agent_schedules_agent_idx" ON "agent_schedules" ("agent_id", "id");
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "schedule_runs" (
  "schedule_id" text NOT NULL REFERENCES "agent_schedules"("id") ON DELETE CASCADE,
  "tick_at" timestamp with time zone NOT NULL,
  "status" text NOT NULL,
  "invocation_id" text,
  "error" jsonb,
  "created_at" timestamp with time zone DEFAULT now() NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL,
  PRIMARY KEY ("schedule_id", "tick_at")
);
--> statement-breakpoint
CREATE UNIQUE INDEX IF NOT EXISTS "schedule_runs_one_starting_key" ON "schedule_runs" ("schedule_id") WHERE status = 'starting';
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "schedule_runs_waiting_idx" ON "schedule_runs" ("schedule_id", "tick_at") WHERE status = 'waiting';
