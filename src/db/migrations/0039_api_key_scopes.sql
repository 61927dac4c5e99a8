-- API keys carry scopes, like agent tokens (the same vocabulary plus key and agent management): a
-- key may only do what its scopes name, and never mints a key or an agent broader than itself.
-- Null means every scope, so keys created before this column keep working unchanged (and the
-- column is added without rewriting a row). Expiry already has its column (`expires_at`).
ALTER TABLE "api_keys" ADD COLUMN IF NOT EXISTS "scopes" text[];
