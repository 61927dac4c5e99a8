-- When what a memory records happened: `POST /memory` accepts `occurred_at` (RFC 3339) for
-- a conversation turn or an event stored after the fact; null means "when it was stored"
-- (`created_at`). Memory search matches time expressions of a query ("last May") against
-- coalesce(occurred_at, created_at). Nullable, so adding it rewrites no row.
ALTER TABLE "memories" ADD COLUMN IF NOT EXISTS "occurred_at" timestamp with time zone;
