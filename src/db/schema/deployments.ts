/**
 * Tables of the deployments module (DESIGN.md §7): content-addressed artifacts, deployment
 * versions of an agent, and invocations of deployed agents.
 */
import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { userFk } from './identity.js';
import { bytea, tz, createdAt, updatedAt } from './columns.js';

/**
 * Uploaded artifacts (gzip tarballs), stored once per content hash. Kept in the database, not on a
 * local disk, so every API instance and worker can unpack any version (several instances, BullMQ
 * workers on other hosts) with no shared file system.
 */
export const deploymentArtifacts = pgTable('deployment_artifacts', {
  /** Hex SHA-256 of `data`. */
  sha256: text('sha256').primaryKey(),
  sizeBytes: integer('size_bytes').notNull(),
  data: bytea('data').notNull(),
  createdAt: createdAt(),
});

/** One version of an agent's code. Status: `preparing` → `active` | `failed`; `active` → `superseded` | `stopped` | `rolled_back`. */
export const deployments = pgTable(
  'deployments',
  {
    /** `dep_…` */
    id: text('id').primaryKey(),
    /** The agent (`agt_…`); agents are read through the agents service only. */
    agentId: text('agent_id').notNull(),
    ownerId: userFk('owner_id'),
    /** 1, 2, … per agent (AWS Lambda published-version numbering). */
    version: integer('version').notNull(),
    status: text('status').notNull(),
    artifactSha256: text('artifact_sha256')
      .notNull()
      .references(() => deploymentArtifacts.sha256),
    artifactSize: integer('artifact_size').notNull(),
    /** Entries in the archive and sum of their file sizes (bytes). */
    fileCount: integer('file_count').notNull(),
    unpackedBytes: integer('unpacked_bytes').notNull(),
    /** Module loaded by the sandbox, relative to the artifact root. */
    entrypoint: text('entrypoint').notNull(),
    description: text('description'),
    /** Environment variables, AES-256-GCM blob of a JSON object (they often hold secrets); null when none. */
    envEncrypted: text('env_encrypted'),
    envKeys: text('env_keys').array().notNull().default(sql`'{}'::text[]`),
    /** Egress allow-list: `host`, `*.suffix`, optionally `:port` (none: no network at all). */
    egress: text('egress').array().notNull().default(sql`'{}'::text[]`),
    /** Why the prepare step failed (status `failed`). */
    failureReason: text('failure_reason'),
    /** Principal that created it (`usr_…` or `agt_…`). */
    createdBy: text('created_by').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** Last successful prepare (set ⇒ the version is "good" and may be rolled back to). */
    preparedAt: tz('prepared_at'),
    /** Last time it became the active version. */
    activatedAt: tz('activated_at'),
  },
  (t) => [
    uniqueIndex('deployments_agent_version_key').on(t.agentId, t.version),
    index('deployments_agent_idx').on(t.agentId, t.id),
    /** At most one active deployment per agent. */
    uniqueIndex('deployments_one_active_key').on(t.agentId).where(sql`status = 'active'`),
  ],
);

/** An invocation of a deployed agent (`inv_…`); listed under `/v2/agents/:id/executions`. */
export const agentInvocations = pgTable(
  'agent_invocations',
  {
    id: text('id').primaryKey(),
    agentId: text('agent_id').notNull(),
    ownerId: userFk('owner_id'),
    deploymentId: text('deployment_id')
      .notNull()
      .references(() => deployments.id, { onDelete: 'cascade' }),
    version: integer('version').notNull(),
    /** `queued` | `running` | `succeeded` | `failed` | `timed_out` */
    status: text('status').notNull(),
    async: boolean('async').notNull().default(false),
    input: jsonb('input'),
    output: jsonb('output'),
    error: jsonb('error').$type<Record<string, unknown> | null>(),
    /** `[{ ts, stream, message }]`, capped. */
    logs: jsonb('logs').$type<Array<{ ts: string; stream: string; message: string }>>().notNull().default([]),
    logsTruncated: boolean('logs_truncated').notNull().default(false),
    /** Platform calls the handler made (`context.tools.execute`, `context.memory.*`, …), in order, capped. */
    calls: jsonb('calls').$type<Array<Record<string, unknown>>>().notNull().default([]),
    /** True when the invocation started a new execution environment (null until it ran). */
    cold: boolean('cold'),
    timeoutMs: integer('timeout_ms').notNull(),
    durationMs: integer('duration_ms'),
    /** CPU time (user + system) of the environment's processes during the invocation, ms, read from /proc by the host; null until it ran or where /proc is unavailable. */
    cpuMs: integer('cpu_ms'),
    createdBy: text('created_by').notNull(),
    /** What started it: `api` | `schedule` | `trigger` | `a2a`. */
    trigger: text('trigger').notNull().default('api'),
    /** Scopes of the credential that started it, space-separated; null = every agent scope. */
    invokerScope: text('invoker_scope'),
    createdAt: createdAt(),
    startedAt: tz('started_at'),
    finishedAt: tz('finished_at'),
  },
  (t) => [index('agent_invocations_agent_idx').on(t.agentId, t.id)],
);
