-- Search indexes of the registry tables (src/modules/registry/catalog.ts): GIN indexes on the
-- weighted full-text documents of tools and services, and — where pg_trgm is installed — trigram
-- indexes on tool and service names for typo-tolerant matching. The indexed expressions must stay
-- identical to TOOL_DOC, SERVICE_DOC, TOOL_TRGM and SERVICE_TRGM in catalog.ts.
CREATE INDEX IF NOT EXISTS "tools_search_idx" ON "tools" USING gin ((setweight(to_tsvector('english'::regconfig, regexp_replace(regexp_replace(name, '([a-z0-9])([A-Z])', '\1 \2', 'g'), '[_-]+', ' ', 'g')), 'A') || setweight(to_tsvector('english'::regconfig, description), 'B')));
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "services_search_idx" ON "services" USING gin ((setweight(to_tsvector('english'::regconfig, (name || ' ') || display_name), 'C') || setweight(to_tsvector('english'::regconfig, (coalesce(category, '') || ' ') || description), 'D')));
--> statement-breakpoint
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
    CREATE INDEX IF NOT EXISTS "tools_name_trgm_idx" ON "tools" USING gin ((lower(regexp_replace(regexp_replace(name, '([a-z0-9])([A-Z])', '\1 \2', 'g'), '[_-]+', ' ', 'g'))) gin_trgm_ops);
    CREATE INDEX IF NOT EXISTS "services_name_trgm_idx" ON "services" USING gin ((lower((name || ' ') || display_name)) gin_trgm_ops);
  END IF;
END
$$;
