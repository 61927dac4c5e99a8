CREATE TABLE "memories" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"session_id" text,
	"agent_id" text,
	"service_id" text,
	"tool_id" text,
	"execution_id" text,
	"source" text NOT NULL,
	"content" text NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"content_tsv" "tsvector" GENERATED ALWAYS AS (to_tsvector('english'::regconfig, "content")) STORED NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "memory_settings" (
	"key" text PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"model" text NOT NULL,
	"dimensions" integer NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "session_summaries" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"session_id" text NOT NULL,
	"agent_id" text,
	"summary" text NOT NULL,
	"key_points" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"tools_used" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"execution_count" integer NOT NULL,
	"started_at" timestamp with time zone,
	"ended_at" timestamp with time zone,
	"generator" text NOT NULL,
	"model" text,
	"memory_id" text,
	"generated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "memories" ADD CONSTRAINT "memories_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "session_summaries" ADD CONSTRAINT "session_summaries_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "memories_user_idx" ON "memories" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "memories_user_session_idx" ON "memories" USING btree ("user_id","session_id","id");--> statement-breakpoint
CREATE INDEX "memories_user_agent_idx" ON "memories" USING btree ("user_id","agent_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "memories_execution_key" ON "memories" USING btree ("execution_id");--> statement-breakpoint
CREATE INDEX "memories_tsv_idx" ON "memories" USING gin ("content_tsv");--> statement-breakpoint
CREATE UNIQUE INDEX "session_summaries_session_key" ON "session_summaries" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "session_summaries_user_idx" ON "session_summaries" USING btree ("user_id","id");