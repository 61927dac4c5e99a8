/**
 * Observers of finished requests (Prometheus metrics, analytics): one app-wide `onResponse` hook
 * reads each finished request once — its route options, status, duration, clock and principal —
 * and hands the same {@link FinishedRequest} to every observer. Two hooks that each read
 * `req.routeOptions` (Fastify builds and freezes a new object per read) and the clocks were ~1 µs
 * of an agent-memory GET.
 */
import type { FastifyInstance } from 'fastify';
import type { Principal } from './auth.js';

/** One finished request, as every observer sees it. */
export interface FinishedRequest {
  method: string;
  /** The matched route pattern (e.g. `/v2/memory/:key`); undefined when no route matched. */
  route: string | undefined;
  /** The route's OpenAPI `operationId`, or null. */
  operationId: string | null;
  /** HTTP status code of the answer. */
  status: number;
  /** From the request's arrival to the end of the answer, ms (Fastify's `reply.elapsedTime`). */
  ms: number;
  /** When the answer ended: epoch milliseconds. */
  now: number;
  /** Who made the request, when it was authenticated. */
  principal: Principal | null;
}

/** Called once per finished request, synchronously, on the hot path: count, never do I/O, never throw. */
export type ResponseObserver = (r: FinishedRequest) => void;

declare module 'fastify' {
  interface FastifyInstance {
    /** Add an observer of every finished request of this app ({@link registerResponseObservers}). */
    observeResponses(observer: ResponseObserver): void;
  }
}

/**
 * Install the hook and the `app.observeResponses(observer)` decorator on the root instance
 * (before plugins, so every encapsulated context inherits both). Observers run in the order added.
 */
export function registerResponseObservers(app: FastifyInstance): void {
  const observers: ResponseObserver[] = [];
  app.decorate('observeResponses', (observer: ResponseObserver) => {
    observers.push(observer);
  });
  // A callback hook: no promise per request.
  app.addHook('onResponse', (req, reply, done) => {
    if (observers.length === 0) return done();
    const options = req.routeOptions;
    const finished: FinishedRequest = {
      method: req.method,
      route: options.url,
      operationId: (options.schema as { operationId?: string } | undefined)?.operationId ?? null,
      status: reply.statusCode,
      ms: reply.elapsedTime,
      now: Date.now(),
      principal: req.principal,
    };
    for (let i = 0; i < observers.length; i++) observers[i](finished);
    done();
  });
}
