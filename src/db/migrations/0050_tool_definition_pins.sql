-- Pinned tool definitions (rug-pull defence, docs/governance.md "Pinned tool definitions", ADR 0981):
-- every tool row carries the MCP annotations it was listed with and the hex SHA-256 of the
-- RFC 8785 canonical JSON of its definition (name, description, input/output schema, annotations),
-- recomputed on every (re-)import. A subscriber (an account, or an agent through its agent tool
-- subscription) pins the definitions it trusted: one row per holder and tool with the hash and the
-- definition snapshot, so a changed definition answers 409 with a diff until the holder accepts it.
ALTER TABLE "tools" ADD COLUMN IF NOT EXISTS "annotations" jsonb;
--> statement-breakpoint
ALTER TABLE "tools" ADD COLUMN IF NOT EXISTS "definition_hash" text;
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "tool_pins" (
  "holder_id" text NOT NULL,
  "holder_kind" text NOT NULL,
  "service_id" text NOT NULL,
  "tool_id" text NOT NULL REFERENCES "tools"("id") ON DELETE CASCADE,
  "definition_hash" text NOT NULL,
  "definition" jsonb NOT NULL,
  "pinned_at" timestamp with time zone DEFAULT now() NOT NULL,
  CONSTRAINT "tool_pins_pkey" PRIMARY KEY ("holder_id", "tool_id")
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tool_pins_holder_service_idx" ON "tool_pins" ("holder_id", "service_id");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tool_pins_tool_idx" ON "tool_pins" ("tool_id");
