-- Tool search semantic arm: one sentence-encoder vector per tool, computed off the
-- request path when the catalog changes (src/modules/search/semantic.ts). `source_hash` is the
-- SHA-256 of the model name and the embedded text, so a changed name or description is embedded
-- again and identical texts (mirrored services) are embedded once. `vector` holds the unit-length
-- float32 components, little-endian (2,048 bytes for 512 dimensions).
CREATE TABLE IF NOT EXISTS "tool_vectors" (
  "tool_id" text PRIMARY KEY NOT NULL REFERENCES "tools"("id") ON DELETE CASCADE,
  "model" text NOT NULL,
  "source_hash" text NOT NULL,
  "vector" bytea NOT NULL,
  "updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tool_vectors_source_hash_idx" ON "tool_vectors" ("source_hash");
