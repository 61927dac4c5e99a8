CREATE TABLE "mcp_sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"user_id" text NOT NULL,
	"agent_id" text,
	"client_name" text NOT NULL,
	"client_version" text,
	"protocol_version" text NOT NULL,
	"expose_tools" boolean DEFAULT false NOT NULL,
	"platform_session_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "mcp_sessions" ADD CONSTRAINT "mcp_sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "mcp_sessions_expires_idx" ON "mcp_sessions" USING btree ("expires_at");
