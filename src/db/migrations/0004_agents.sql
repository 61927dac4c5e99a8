CREATE TABLE "agent_secrets" (
	"id" text PRIMARY KEY NOT NULL,
	"agent_id" text NOT NULL,
	"secret_hash" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"expires_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "agent_tool_subscriptions" (
	"agent_id" text NOT NULL,
	"service_id" text NOT NULL,
	"service_name" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_tool_subscriptions_agent_id_service_id_pk" PRIMARY KEY("agent_id","service_id")
);
--> statement-breakpoint
CREATE TABLE "agents" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"client_id" text NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "agent_memory" (
	"agent_id" text NOT NULL,
	"key" text NOT NULL,
	"value" jsonb NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"size_bytes" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	CONSTRAINT "agent_memory_agent_id_key_pk" PRIMARY KEY("agent_id","key")
);
--> statement-breakpoint
CREATE TABLE "agent_memory_audit" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_agent_id" text NOT NULL,
	"actor_agent_id" text NOT NULL,
	"action" text NOT NULL,
	"outcome" text NOT NULL,
	"key" text,
	"prefix" text,
	"keys" text[] DEFAULT '{}'::text[] NOT NULL,
	"permission_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agent_permissions" (
	"id" text PRIMARY KEY NOT NULL,
	"owner_agent_id" text NOT NULL,
	"grantee_agent_id" text NOT NULL,
	"access" text NOT NULL,
	"key_prefix" text,
	"expires_at" timestamp with time zone,
	"created_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "agent_secrets" ADD CONSTRAINT "agent_secrets_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_tool_subscriptions" ADD CONSTRAINT "agent_tool_subscriptions_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agents" ADD CONSTRAINT "agents_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_memory" ADD CONSTRAINT "agent_memory_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_permissions" ADD CONSTRAINT "agent_permissions_owner_agent_id_agents_id_fk" FOREIGN KEY ("owner_agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_permissions" ADD CONSTRAINT "agent_permissions_grantee_agent_id_agents_id_fk" FOREIGN KEY ("grantee_agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_secrets_agent_idx" ON "agent_secrets" USING btree ("agent_id");--> statement-breakpoint
CREATE UNIQUE INDEX "agents_client_id_key" ON "agents" USING btree ("client_id");--> statement-breakpoint
CREATE INDEX "agents_owner_idx" ON "agents" USING btree ("owner_id","id");--> statement-breakpoint
CREATE INDEX "agent_memory_expiry_idx" ON "agent_memory" USING btree ("expires_at") WHERE "agent_memory"."expires_at" is not null;--> statement-breakpoint
CREATE INDEX "agent_memory_audit_owner_idx" ON "agent_memory_audit" USING btree ("owner_agent_id","id");--> statement-breakpoint
CREATE INDEX "agent_permissions_owner_idx" ON "agent_permissions" USING btree ("owner_agent_id","grantee_agent_id");--> statement-breakpoint
CREATE INDEX "agent_permissions_grantee_idx" ON "agent_permissions" USING btree ("grantee_agent_id","id");