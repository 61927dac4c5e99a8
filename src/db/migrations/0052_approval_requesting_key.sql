-- The API key that made a held tool call (docs/governance.md "Approvals", ADR 0973): that key may
-- not approve or deny its own request. Null for calls made with an access token or an agent token.
ALTER TABLE "tool_approvals" ADD COLUMN IF NOT EXISTS "requested_by_key" text;
