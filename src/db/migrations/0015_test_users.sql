-- Users created by POST /auth/test: the only accounts a test token may be issued for.
ALTER TABLE "users" ADD COLUMN "test" boolean DEFAULT false NOT NULL;
