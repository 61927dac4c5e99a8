CREATE TABLE "endpoint_stats" (
	"minute" timestamp with time zone NOT NULL,
	"method" text NOT NULL,
	"route" text NOT NULL,
	"status" integer NOT NULL,
	"operation_id" text,
	"count" integer NOT NULL,
	"total_ms" double precision NOT NULL,
	"max_ms" double precision NOT NULL,
	"buckets" integer[] NOT NULL,
	CONSTRAINT "endpoint_stats_minute_method_route_status_pk" PRIMARY KEY("minute","method","route","status")
);
--> statement-breakpoint
CREATE INDEX "endpoint_stats_route_idx" ON "endpoint_stats" USING btree ("route","minute");