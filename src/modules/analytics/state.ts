/**
 * Per-app state of the analytics module: the typed `AppContext.analytics` field (per-app
 * fields are declared in `context.ts`), set by `startAnalytics` (service.ts). This file imports
 * nothing that imports `context.ts`, so `context.ts` can name its types without an import loop; the
 * recorders (`RealtimeCounters`, `EndpointRecorder`) satisfy these ports.
 */

/** One window of the realtime view. */
export interface RealtimeWindow {
  window_seconds: number;
  requests: number;
  requests_per_second: number;
  /** 5xx answers. */
  errors: number;
  /** 4xx answers. */
  client_errors: number;
  /** errors / requests (null without requests). */
  error_rate: number | null;
  p50_ms: number | null;
  p95_ms: number | null;
  max_ms: number | null;
}

/** The realtime counters as the module uses them (`realtime.ts`). */
export interface RealtimeRecorder {
  /** `redis` when counters are shared through Redis, else `memory` (this instance only). */
  readonly backend: 'redis' | 'memory';
  /** Count one finished request; `ms` its duration in milliseconds. No I/O. */
  record(accountId: string | null, status: number, ms: number, now?: number): void;
  start(): void;
  stop(): Promise<void>;
  /** Sums of `scope` (`all` or `a:<account>`) over each of `windows` (seconds), ending now. */
  windows(scope: string, windows: number[], now?: number): Promise<RealtimeWindow[]>;
}

/** The per-route minute aggregates as the module uses them (`endpoints.ts`). */
export interface RouteRecorder {
  /** Count one finished request; `ms` its duration in milliseconds. No I/O. */
  record(method: string, route: string, status: number, operationId: string | null, ms: number, now?: number): void;
  start(): void;
  stop(): Promise<void>;
  /** Write the pending aggregates to the database. */
  flush(): Promise<void>;
}

/** The per-app recorders: realtime counters and per-route minute aggregates. */
export interface AnalyticsRuntime {
  realtime: RealtimeRecorder;
  endpoints: RouteRecorder;
}
