/** TypeBox schemas of the schedules routes (`/v2/agents/:id/schedules`). */
import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.js';

const Overlap = Type.Union([Type.Literal('skip'), Type.Literal('queue')], {
  description:
    'a tick while the previous run is queued or running: `skip` records it as skipped; `queue` runs it after the previous one ends (at most 10 waiting)',
});

const Cron = Type.String({
  minLength: 9,
  maxLength: 200,
  description:
    'cron expression: 5 fields, or 6 with seconds first (croner syntax: ranges, steps, lists, L, W, #, nicknames like @hourly)',
});
const TimeZone = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'IANA time zone the expression is read in (default UTC)',
});

export const ScheduleSchema = Type.Object({
  id: Type.String(),
  agent_id: Type.String(),
  name: Nullable(Type.String()),
  cron: Type.String(),
  timezone: Type.String(),
  input: Type.Unknown({ description: 'JSON passed to the handler on every run' }),
  enabled: Type.Boolean({ description: 'false: paused (no ticks)' }),
  overlap: Overlap,
  next_runs: Type.Array(Timestamp, { description: 'the next 5 ticks (empty while paused)' }),
  last_run_at: Nullable(Timestamp),
  last_invocation_id: Nullable(Type.String()),
  created_by: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const CreateScheduleBody = Type.Object(
  {
    cron: Cron,
    timezone: Type.Optional(TimeZone),
    input: Type.Optional(Type.Unknown()),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    enabled: Type.Optional(Type.Boolean()),
    overlap: Type.Optional(Overlap),
  },
  { additionalProperties: false },
);

export const UpdateScheduleBody = Type.Object(
  {
    cron: Type.Optional(Cron),
    timezone: Type.Optional(TimeZone),
    input: Type.Optional(Type.Unknown()),
    name: Type.Optional(Type.Union([Type.Null(), Type.String({ minLength: 1, maxLength: 100 })])),
    enabled: Type.Optional(Type.Boolean()),
    overlap: Type.Optional(Overlap),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const ScheduleRunSchema = Type.Object({
  tick_at: Timestamp,
  status: Type.Union([
    Type.Literal('waiting'),
    Type.Literal('starting'),
    Type.Literal('started'),
    Type.Literal('skipped'),
    Type.Literal('failed'),
  ]),
  invocation_id: Nullable(Type.String({ description: 'the invocation (trigger `schedule`) once started' })),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
  created_at: Timestamp,
});

export const ScheduleParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100 }),
  scheduleId: Type.String({ minLength: 1, maxLength: 100 }),
});
