/** Tables of the publishing module: per-service publication state (checklist, domain, verification) and reports. */
import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { userFk } from './identity.js';
import { services } from './registry.js';
import { tz, createdAt, updatedAt } from './columns.js';

/** One checklist item. */
export interface ChecklistItem {
  status: 'passed' | 'failed' | 'pending';
  detail: string;
  checked_at: string | null;
}

/** One functional test result. */
export interface VerificationResult {
  tool: string;
  status: 'passed' | 'failed';
  http_status: number | null;
  latency_ms: number | null;
  error: string | null;
}

export const servicePublications = pgTable('service_publications', {
  serviceId: text('service_id')
    .primaryKey()
    .references(() => services.id, { onDelete: 'cascade' }),
  /** Domain-ownership token (published in DNS TXT or the well-known file). */
  domainToken: text('domain_token').notNull(),
  /** Host the token was verified for (a base_url change of host invalidates it). */
  domainHost: text('domain_host'),
  domainVerifiedAt: tz('domain_verified_at'),
  /** `dns` | `http` */
  domainMethod: text('domain_method'),
  domainDetail: text('domain_detail'),
  /** `{ tests: [{ tool, arguments, expect: { status?, json_schema? } }] }` */
  verificationConfig: jsonb('verification_config').$type<{
    tests: Array<{
      tool: string;
      arguments: Record<string, unknown>;
      expect?: { status?: number; json_schema?: Record<string, unknown> };
    }>;
  } | null>(),
  /** Id of the current publish run; a job for another run id is stale and does nothing. */
  runId: text('run_id'),
  /** `not_started` | `pending` | `running` | `passed` | `failed` */
  verificationState: text('verification_state').notNull().default('not_started'),
  verificationResults: jsonb('verification_results').$type<VerificationResult[]>().notNull().default([]),
  verificationStartedAt: tz('verification_started_at'),
  verificationFinishedAt: tz('verification_finished_at'),
  checklist: jsonb('checklist').$type<Record<string, ChecklistItem>>(),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

export const serviceReports = pgTable(
  'service_reports',
  {
    id: text('id').primaryKey(),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    /** Reported tool; null for a report about the whole service. */
    toolId: text('tool_id'),
    userId: userFk(),
    /** `broken` | `wrong_output` | `security` | `other` */
    reason: text('reason').notNull(),
    details: text('details'),
    /** `open` | `resolved` */
    status: text('status').notNull().default('open'),
    createdAt: createdAt(),
    resolvedAt: tz('resolved_at'),
  },
  (t) => [
    uniqueIndex('service_reports_open_key')
      .on(t.serviceId, sql`coalesce(${t.toolId}, '')`, t.userId)
      .where(sql`${t.status} = 'open'`),
    index('service_reports_service_idx').on(t.serviceId, t.status),
  ],
);
