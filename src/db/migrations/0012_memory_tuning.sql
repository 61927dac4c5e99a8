-- Memory store tuning (benchmarks), for databases that applied an earlier 0007:
-- on the pgvector path the vector is stored out of line and the HNSW index uses m = 32,
-- ef_construction = 200 (pgvector's 16/64 reach only ~0.6 recall@10 for short queries over hashed
-- lexical vectors, bench/memory.ts); a partial index finds memories still waiting for a vector.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN
    ALTER TABLE "memories" ALTER COLUMN "embedding" SET STORAGE EXTERNAL;
    ALTER TABLE "memories" SET (toast_tuple_target = 1024);
    IF NOT EXISTS (
      SELECT 1 FROM pg_indexes
      WHERE tablename = 'memories' AND indexname = 'memories_embedding_hnsw_idx' AND indexdef LIKE '%m=''32''%' AND indexdef LIKE '%ef_construction=''200''%'
    ) THEN
      DROP INDEX IF EXISTS "memories_embedding_hnsw_idx";
      CREATE INDEX "memories_embedding_hnsw_idx" ON "memories" USING hnsw ("embedding" vector_cosine_ops) WITH (m = 32, ef_construction = 200);
    END IF;
  END IF;
END
$$;
--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "memories_missing_embedding_idx" ON "memories" ("id") WHERE "embedding" IS NULL;
