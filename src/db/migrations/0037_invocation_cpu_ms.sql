-- CPU time a deployed agent's invocation used, ms: user + system time of the execution
-- environment's processes (read by the host from /proc/<pid>/stat, not reported by the sandboxed
-- code) between the invocation's start and its end, when the environment is frozen again. Null
-- for invocations recorded before this column, still running, or on hosts without /proc.
ALTER TABLE "agent_invocations" ADD COLUMN IF NOT EXISTS "cpu_ms" integer;
