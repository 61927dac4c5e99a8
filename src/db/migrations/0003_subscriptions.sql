CREATE TABLE "tool_usage" (
	"day" date NOT NULL,
	"user_id" text NOT NULL,
	"agent_id" text,
	"service_id" text NOT NULL,
	"tool_id" text NOT NULL,
	"tool_name" text NOT NULL,
	"calls" integer DEFAULT 0 NOT NULL,
	"successes" integer DEFAULT 0 NOT NULL,
	"failures" integer DEFAULT 0 NOT NULL,
	"total_duration_ms" bigint DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "tool_usage_key" UNIQUE NULLS NOT DISTINCT("day","user_id","service_id","tool_id","agent_id")
);
--> statement-breakpoint
CREATE TABLE "subscriptions" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"service_id" text NOT NULL,
	"plan" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"day_start" date DEFAULT (now() at time zone 'utc')::date NOT NULL,
	"day_used" integer DEFAULT 0 NOT NULL,
	"month_start" date DEFAULT date_trunc('month', now() at time zone 'utc')::date NOT NULL,
	"month_used" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"canceled_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "tool_usage_tool_idx" ON "tool_usage" USING btree ("tool_id","day");--> statement-breakpoint
CREATE INDEX "tool_usage_service_idx" ON "tool_usage" USING btree ("service_id","day");--> statement-breakpoint
CREATE INDEX "tool_usage_agent_idx" ON "tool_usage" USING btree ("agent_id","day");--> statement-breakpoint
CREATE INDEX "subscriptions_user_idx" ON "subscriptions" USING btree ("user_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "subscriptions_active_key" ON "subscriptions" USING btree ("user_id","service_id") WHERE status = 'active';