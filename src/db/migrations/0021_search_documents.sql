-- Tool search (latency): the weighted full-text documents of tools and services are
-- stored (generated columns) instead of being recomputed for every candidate a query ranks —
-- to_tsvector over a 4,000-character description costs ~0.2 ms, so a query that ranked 5,000
-- candidates spent a second parsing text. The GIN indexes move from the expressions (0011) to
-- the columns, under the same names. The expressions are the ones of 0011, unchanged; catalog-sql.ts
-- reads `search_doc` (TOOL_DOC, SERVICE_DOC).
ALTER TABLE "tools" ADD COLUMN IF NOT EXISTS "search_doc" tsvector GENERATED ALWAYS AS (setweight(to_tsvector('english'::regconfig, regexp_replace(regexp_replace(name, '([a-z0-9])([A-Z])', '\1 \2', 'g'), '[_-]+', ' ', 'g')), 'A') || setweight(to_tsvector('english'::regconfig, description), 'B')) STORED;
--> statement-breakpoint
ALTER TABLE "services" ADD COLUMN IF NOT EXISTS "search_doc" tsvector GENERATED ALWAYS AS (setweight(to_tsvector('english'::regconfig, (name || ' ') || display_name), 'C') || setweight(to_tsvector('english'::regconfig, (coalesce(category, '') || ' ') || description), 'D')) STORED;
--> statement-breakpoint
DROP INDEX IF EXISTS "tools_search_idx";
--> statement-breakpoint
DROP INDEX IF EXISTS "services_search_idx";
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "tools_search_idx" ON "tools" USING gin ("search_doc");
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "services_search_idx" ON "services" USING gin ("search_doc");
