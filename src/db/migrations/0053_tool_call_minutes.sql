-- Per-minute call counters for policies that read `context.calls` (docs/governance.md "Policies",
-- ADR 0997): one row per tool, account, agent (null = the account itself) and UTC minute, written
-- by the execution recorder in the same statement as the executions themselves. A policy's
-- last-hour/last-day count sums the minutes inside the window and counts exactly only the
-- executions of the one minute the window starts in, so its cost no longer grows with the number
-- of calls. Rows older than 25 hours are pruned by the recorder. Back-filled from the last day's
-- executions so a count right after this migration is the same as before it.
CREATE TABLE IF NOT EXISTS "tool_call_minutes" (
  "tool_id" text NOT NULL,
  "user_id" text NOT NULL,
  "minute" timestamp with time zone NOT NULL,
  "agent_id" text,
  "calls" integer NOT NULL,
  CONSTRAINT "tool_call_minutes_key" UNIQUE NULLS NOT DISTINCT ("tool_id", "user_id", "minute", "agent_id")
);
--> statement-breakpoint
INSERT INTO "tool_call_minutes" ("tool_id", "user_id", "minute", "agent_id", "calls")
SELECT "tool_id", "user_id", date_trunc('minute', "created_at"), "agent_id", count(*)::int
FROM "executions"
WHERE "created_at" > now() - interval '1 day'
GROUP BY 1, 2, 3, 4
ON CONFLICT ON CONSTRAINT "tool_call_minutes_key" DO NOTHING;
