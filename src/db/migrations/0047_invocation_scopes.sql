-- The scopes of the credential that started an invocation, space-separated (null: every agent
-- scope, as for the owner's own token). A queued invocation runs later in a job; its broker
-- identity is narrowed to these, exactly as a synchronous one is narrowed to the live principal's.
ALTER TABLE "agent_invocations" ADD COLUMN IF NOT EXISTS "invoker_scope" text;
