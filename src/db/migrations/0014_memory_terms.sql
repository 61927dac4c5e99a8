CREATE TABLE "memory_doc_counts" (
	"user_id" text PRIMARY KEY NOT NULL,
	"n" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "memory_terms" (
	"user_id" text NOT NULL,
	"lexeme" text NOT NULL,
	"df" integer NOT NULL,
	CONSTRAINT "memory_terms_user_id_lexeme_pk" PRIMARY KEY("user_id","lexeme")
);
--> statement-breakpoint
ALTER TABLE "memory_doc_counts" ADD CONSTRAINT "memory_doc_counts_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memory_terms" ADD CONSTRAINT "memory_terms_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Document frequencies for IDF-weighted full-text ranking, maintained by statement-level triggers
-- with transition tables (one pass per INSERT/DELETE statement, however many rows). Each trigger
-- first touches the users' `memory_doc_counts` rows in user order: that row lock serialises all
-- maintenance of one user's terms, so concurrent writers cannot deadlock on `memory_terms`.
-- Memory content is never updated in place (no UPDATE trigger); terms whose df falls to 0 stay
-- (they match no memory, so they change no ranking).
CREATE OR REPLACE FUNCTION memory_terms_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memory_doc_counts AS c (user_id, n)
    SELECT user_id, count(*)::int FROM new_rows GROUP BY user_id ORDER BY user_id
  ON CONFLICT (user_id) DO UPDATE SET n = c.n + excluded.n;
  INSERT INTO memory_terms AS t (user_id, lexeme, df)
    SELECT r.user_id, l.lexeme, count(*)::int FROM new_rows r, unnest(tsvector_to_array(r.content_tsv)) AS l(lexeme)
    GROUP BY r.user_id, l.lexeme ORDER BY r.user_id, l.lexeme
  ON CONFLICT (user_id, lexeme) DO UPDATE SET df = t.df + excluded.df;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION memory_terms_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE memory_doc_counts c SET n = c.n - d.k
    FROM (SELECT user_id, count(*)::int AS k FROM old_rows GROUP BY user_id ORDER BY user_id) d
    WHERE c.user_id = d.user_id;
  UPDATE memory_terms t SET df = t.df - d.k
    FROM (SELECT r.user_id, l.lexeme, count(*)::int AS k FROM old_rows r, unnest(tsvector_to_array(r.content_tsv)) AS l(lexeme) GROUP BY r.user_id, l.lexeme) d
    WHERE t.user_id = d.user_id AND t.lexeme = d.lexeme;
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER memories_terms_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_terms_after_insert();
--> statement-breakpoint
CREATE TRIGGER memories_terms_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memory_terms_after_delete();
--> statement-breakpoint
INSERT INTO memory_doc_counts (user_id, n) SELECT user_id, count(*)::int FROM memories GROUP BY user_id;
--> statement-breakpoint
INSERT INTO memory_terms (user_id, lexeme, df)
  SELECT m.user_id, l.lexeme, count(*)::int FROM memories m, unnest(tsvector_to_array(m.content_tsv)) AS l(lexeme) GROUP BY m.user_id, l.lexeme;
