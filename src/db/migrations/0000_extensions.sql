-- Optional extensions: installed where the engine ships them (PGlite, managed PostgreSQL),
-- skipped where it does not (Debian's PostgreSQL 15 has no pgvector). DESIGN.md §3.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    CREATE EXTENSION IF NOT EXISTS vector;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm') THEN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
  END IF;
END
$$;
