-- Memory embeddings (DESIGN.md §3): a pgvector column with an HNSW (cosine) index where the
-- `vector` extension is installed (PGlite, managed PostgreSQL), a `real[]` column searched exactly
-- with `memory_cosine_distance` where it is not (Debian's PostgreSQL 15). The column is created for
-- the default 384 dimensions; the memory module resizes it at start-up to EMBEDDINGS_DIMENSIONS
-- while no vectors are stored (and refuses to start on a mismatch otherwise, see docs/adr/0096-memory-dimensions-the-configured-embedding-space.md).
-- Stored vectors are always L2-normalised, so cosine distance = 1 - dot product.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
    ALTER TABLE "memories" ADD COLUMN IF NOT EXISTS "embedding" vector(384);
    -- keep the ~1.5 KB vector out of line (the HNSW index has its own copy): heap rows stay small,
    -- so list and full-text scans read 3-4x fewer pages
    ALTER TABLE "memories" ALTER COLUMN "embedding" SET STORAGE EXTERNAL;
    ALTER TABLE "memories" SET (toast_tuple_target = 1024);
    -- m = 32, ef_construction = 200 (pgvector defaults 16/64 reach only ~0.6 recall@10 on short
    -- queries over hashed lexical vectors; see bench/memory.ts). Keep in sync with HNSW_INDEX in store.ts.
    CREATE INDEX IF NOT EXISTS "memories_embedding_hnsw_idx" ON "memories" USING hnsw ("embedding" vector_cosine_ops) WITH (m = 32, ef_construction = 200);
  ELSE
    ALTER TABLE "memories" ADD COLUMN IF NOT EXISTS "embedding" real[];
  END IF;
END
$$;
--> statement-breakpoint
-- Exact cosine distance of two unit-length real[] vectors (the real[] path's `<=>`); NULL when the
-- lengths differ. PARALLEL SAFE and costed high so the planner spreads a scan over workers.
CREATE OR REPLACE FUNCTION memory_cosine_distance(a real[], b real[]) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE COST 1000 AS $fn$
DECLARE
  dot double precision := 0;
  n integer := array_length(a, 1);
BEGIN
  IF n IS NULL OR n IS DISTINCT FROM array_length(b, 1) THEN
    RETURN NULL;
  END IF;
  FOR i IN 1..n LOOP
    dot := dot + a[i] * b[i];
  END LOOP;
  RETURN 1 - dot;
END
$fn$;
