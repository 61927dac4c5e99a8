-- A connection's authorization is finished only by the browser of the user who started it
-- (docs/adr/0911-connection-callback-bound-to-browser.md): the platform keeps the upstream's
-- authorization URL (encrypted: it carries the state) until the user's signed-in browser takes the
-- flow, and the SHA-256 of the binding cookie it then set; the callback requires that cookie.
-- Nullable: a state created before this migration has neither and must be started again.
ALTER TABLE "connection_states"
  ADD COLUMN IF NOT EXISTS "authorization_url" text,
  ADD COLUMN IF NOT EXISTS "binding_hash" text;
