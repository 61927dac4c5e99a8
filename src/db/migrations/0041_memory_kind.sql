-- What a memory is, beside who wrote it (`source`): `note` (a user's or agent's own memory,
-- POST /memory's default), `execution` (written by the tool-execution hook) or `summary` (a
-- session summary, or a note its author marks as one). Search and list return notes and summaries
-- unless `?kind=` asks for executions, so the automatic memories do not crowd the user's own.
-- Existing rows take the kind their source implies.
ALTER TABLE "memories" ADD COLUMN IF NOT EXISTS "kind" text;
--> statement-breakpoint
UPDATE "memories" SET "kind" = CASE "source" WHEN 'execution' THEN 'execution' WHEN 'summary' THEN 'summary' ELSE 'note' END WHERE "kind" IS NULL;
--> statement-breakpoint
ALTER TABLE "memories" ALTER COLUMN "kind" SET DEFAULT 'note';
--> statement-breakpoint
ALTER TABLE "memories" ALTER COLUMN "kind" SET NOT NULL;
--> statement-breakpoint
ALTER TABLE "memories" DROP CONSTRAINT IF EXISTS "memories_kind_check";
--> statement-breakpoint
ALTER TABLE "memories" ADD CONSTRAINT "memories_kind_check" CHECK ("kind" IN ('note', 'execution', 'summary'));
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "memories_user_kind_idx" ON "memories" ("user_id", "kind", "id");
