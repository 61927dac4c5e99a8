CREATE TABLE "services" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"name" text NOT NULL,
	"display_name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"base_url" text NOT NULL,
	"category" text,
	"tags" text[] DEFAULT '{}'::text[] NOT NULL,
	"version" text,
	"source" text NOT NULL,
	"source_url" text,
	"status" text DEFAULT 'draft' NOT NULL,
	"auth_type" text DEFAULT 'none' NOT NULL,
	"auth_name" text,
	"auth_secret" text,
	"signing_secret" text NOT NULL,
	"warnings" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"published_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_aliases" (
	"service_id" text NOT NULL,
	"name" text NOT NULL,
	"tool_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tools" (
	"id" text PRIMARY KEY NOT NULL,
	"service_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"input_schema" jsonb NOT NULL,
	"output_schema" jsonb,
	"arg_locations" jsonb,
	"status" text DEFAULT 'active' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "service_publications" (
	"service_id" text PRIMARY KEY NOT NULL,
	"domain_token" text NOT NULL,
	"domain_host" text,
	"domain_verified_at" timestamp with time zone,
	"domain_method" text,
	"domain_detail" text,
	"verification_config" jsonb,
	"run_id" text,
	"verification_state" text DEFAULT 'not_started' NOT NULL,
	"verification_results" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"verification_started_at" timestamp with time zone,
	"verification_finished_at" timestamp with time zone,
	"checklist" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "service_reports" (
	"id" text PRIMARY KEY NOT NULL,
	"service_id" text NOT NULL,
	"tool_id" text,
	"user_id" text NOT NULL,
	"reason" text NOT NULL,
	"details" text,
	"status" text DEFAULT 'open' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "services" ADD CONSTRAINT "services_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_aliases" ADD CONSTRAINT "tool_aliases_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_aliases" ADD CONSTRAINT "tool_aliases_tool_id_tools_id_fk" FOREIGN KEY ("tool_id") REFERENCES "public"."tools"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tools" ADD CONSTRAINT "tools_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_publications" ADD CONSTRAINT "service_publications_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_reports" ADD CONSTRAINT "service_reports_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "service_reports" ADD CONSTRAINT "service_reports_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "services_name_key" ON "services" USING btree ("name");--> statement-breakpoint
CREATE INDEX "services_owner_idx" ON "services" USING btree ("owner_id","id");--> statement-breakpoint
CREATE INDEX "services_status_idx" ON "services" USING btree ("status","id");--> statement-breakpoint
CREATE UNIQUE INDEX "tool_aliases_service_name_key" ON "tool_aliases" USING btree ("service_id","name");--> statement-breakpoint
CREATE INDEX "tool_aliases_tool_idx" ON "tool_aliases" USING btree ("tool_id");--> statement-breakpoint
CREATE UNIQUE INDEX "tools_service_name_key" ON "tools" USING btree ("service_id","name");--> statement-breakpoint
CREATE UNIQUE INDEX "service_reports_open_key" ON "service_reports" USING btree ("service_id",coalesce("tool_id", ''),"user_id") WHERE "service_reports"."status" = 'open';--> statement-breakpoint
CREATE INDEX "service_reports_service_idx" ON "service_reports" USING btree ("service_id","status");