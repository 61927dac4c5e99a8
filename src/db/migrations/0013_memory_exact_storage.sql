-- real[] path only (no pgvector, e.g. Debian's PostgreSQL 15): keep the embedding inline and
-- uncompressed. The exact search reads individual components (`embedding[i]`) of every candidate
-- row; a compressed array (the default EXTENDED storage compresses it as soon as a row passes
-- ~2 KB, which a 384-dimension vector plus content does) is decompressed again for every component
-- read, 10-30x slower. STORAGE MAIN keeps it inline (out of line only as a last resort), and
-- toast_tuple_target = 8160 stops the toaster from compressing rows that fit a page. Existing
-- vectors are rewritten once (the cast builds a fresh, uncompressed array; float4 -> float8 ->
-- float4 is exact). The pgvector path is untouched (its vector is EXTERNAL, migration 0012).
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
    ALTER TABLE "memories" ALTER COLUMN "embedding" SET STORAGE MAIN;
    ALTER TABLE "memories" SET (toast_tuple_target = 8160);
    UPDATE "memories" SET "embedding" = "embedding"::float8[]::real[] WHERE "embedding" IS NOT NULL;
  END IF;
END
$$;
