/** Column builders every table shares (Drizzle `pg-core`); the SQL they describe is in the migrations. */
import { customType, timestamp } from 'drizzle-orm/pg-core';

/** A `timestamptz` column named `name` (PostgreSQL `timestamp with time zone`; read as a JS `Date`). */
export const tz = <N extends string>(name: N) => timestamp(name, { withTimezone: true });

/** `created_at timestamptz NOT NULL DEFAULT now()`. */
export const createdAt = () => tz('created_at').notNull().defaultNow();

/** `updated_at timestamptz NOT NULL DEFAULT now()` (callers set it on every update). */
export const updatedAt = () => tz('updated_at').notNull().defaultNow();

/** `bytea` as a Node Buffer (PGlite returns Uint8Array, node-postgres Buffer; readers normalise). */
export const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
});
