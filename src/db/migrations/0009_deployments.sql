CREATE TABLE "agent_invocations" (
	"id" text PRIMARY KEY NOT NULL,
	"agent_id" text NOT NULL,
	"owner_id" text NOT NULL,
	"deployment_id" text NOT NULL,
	"version" integer NOT NULL,
	"status" text NOT NULL,
	"async" boolean DEFAULT false NOT NULL,
	"input" jsonb,
	"output" jsonb,
	"error" jsonb,
	"logs" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"logs_truncated" boolean DEFAULT false NOT NULL,
	"timeout_ms" integer NOT NULL,
	"duration_ms" integer,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "deployment_artifacts" (
	"sha256" text PRIMARY KEY NOT NULL,
	"size_bytes" integer NOT NULL,
	"data" "bytea" NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "deployments" (
	"id" text PRIMARY KEY NOT NULL,
	"agent_id" text NOT NULL,
	"owner_id" text NOT NULL,
	"version" integer NOT NULL,
	"status" text NOT NULL,
	"artifact_sha256" text NOT NULL,
	"artifact_size" integer NOT NULL,
	"file_count" integer NOT NULL,
	"unpacked_bytes" integer NOT NULL,
	"entrypoint" text NOT NULL,
	"description" text,
	"env_encrypted" text,
	"env_keys" text[] DEFAULT '{}'::text[] NOT NULL,
	"failure_reason" text,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"prepared_at" timestamp with time zone,
	"activated_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "agent_invocations" ADD CONSTRAINT "agent_invocations_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_invocations" ADD CONSTRAINT "agent_invocations_deployment_id_deployments_id_fk" FOREIGN KEY ("deployment_id") REFERENCES "public"."deployments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deployments" ADD CONSTRAINT "deployments_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deployments" ADD CONSTRAINT "deployments_artifact_sha256_deployment_artifacts_sha256_fk" FOREIGN KEY ("artifact_sha256") REFERENCES "public"."deployment_artifacts"("sha256") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_invocations_agent_idx" ON "agent_invocations" USING btree ("agent_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "deployments_agent_version_key" ON "deployments" USING btree ("agent_id","version");--> statement-breakpoint
CREATE INDEX "deployments_agent_idx" ON "deployments" USING btree ("agent_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "deployments_one_active_key" ON "deployments" USING btree ("agent_id") WHERE status = 'active';