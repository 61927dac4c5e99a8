-- Agent runtime: platform calls of an invocation, warm/cold start, egress allow-list of a deployment.
ALTER TABLE "agent_invocations" ADD COLUMN "calls" jsonb DEFAULT '[]'::jsonb NOT NULL;
--> statement-breakpoint
ALTER TABLE "agent_invocations" ADD COLUMN "cold" boolean;
--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "egress" text[] DEFAULT '{}'::text[] NOT NULL;
