-- Connected accounts (docs/connections.md): a service's OAuth 2.0 client configuration
-- (non-secret part; the client secret stays in the AES-GCM `auth_secret`), each user's grant to an
-- upstream (tokens AES-GCM encrypted) and the single-use states of the authorization-code flow.
ALTER TABLE "services" ADD COLUMN "auth_oauth2" jsonb;--> statement-breakpoint
CREATE TABLE "connections" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"agent_id" text,
	"service_id" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"scopes" text[] DEFAULT '{}'::text[] NOT NULL,
	"access_token" text,
	"refresh_token" text,
	"expires_at" timestamp with time zone,
	"last_used_at" timestamp with time zone,
	"last_refreshed_at" timestamp with time zone,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "connection_states" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"connection_id" text NOT NULL,
	"user_id" text NOT NULL,
	"code_verifier" text,
	"return_to" text,
	"consumed_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "connections" ADD CONSTRAINT "connections_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "connections" ADD CONSTRAINT "connections_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "connections" ADD CONSTRAINT "connections_service_id_services_id_fk" FOREIGN KEY ("service_id") REFERENCES "public"."services"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "connection_states" ADD CONSTRAINT "connection_states_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "connections_owner_service_key" ON "connections" USING btree ("user_id","service_id",coalesce("agent_id", ''));--> statement-breakpoint
CREATE INDEX "connections_user_idx" ON "connections" USING btree ("user_id","id");--> statement-breakpoint
CREATE INDEX "connections_service_idx" ON "connections" USING btree ("service_id");--> statement-breakpoint
CREATE INDEX "connection_states_expires_idx" ON "connection_states" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "connection_states_connection_idx" ON "connection_states" USING btree ("connection_id");
