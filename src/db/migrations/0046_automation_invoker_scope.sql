-- The scopes of the credential that created a schedule or trigger (space-separated; null: every
-- scope), so the runs it starts hold no more than that credential (agent_invocations.invoker_scope).
ALTER TABLE "agent_schedules" ADD COLUMN IF NOT EXISTS "invoker_scope" text;
--> statement-breakpoint
ALTER TABLE "agent_triggers" ADD COLUMN IF NOT EXISTS "invoker_scope" text;
