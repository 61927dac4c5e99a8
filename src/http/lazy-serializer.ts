/**
 * Response serialisers compiled on first use instead of at start-up (embedded start).
 *
 * Fastify compiles one fast-json-stringify function per route and status code while the app gets
 * ready — about a sixth of the main thread's start-up work for this API's ~200 routes. This
 * factory (Fastify's `schemaController.compilersFactory.buildSerializer`) hands Fastify a wrapper
 * per route that compiles with the default compiler (`@fastify/fast-json-stringify-compiler`, same
 * external schemas, same options, same output) when the first answer is serialised, or earlier
 * when {@link LazySerializers.warm} gets to it after start-up, whichever comes first. A compile
 * costs a few milliseconds, so a route's first answer pays at most that.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type Factory = ReturnType<typeof SerializerSelector>;
type RouteDefinition = Parameters<ReturnType<Factory>>[0];
type Serializer = (doc: unknown) => string;

/** One app's lazily compiled serialisers. */
export class LazySerializers {
  private readonly pending = new Set<() => void>();
  private readonly build: Factory = SerializerSelector();

  /** The `buildSerializer` to pass in Fastify's `schemaController.compilersFactory`. */
  readonly factory = (externalSchemas?: unknown, options?: Parameters<Factory>[1]) => {
    const compile = this.build(externalSchemas, options);
    return (route: RouteDefinition): Serializer => {
      let fn: Serializer | null = null;
      const ensure = () => {
        if (!fn) {
          fn = compile(route) as Serializer;
          this.pending.delete(ensure);
        }
        return fn;
      };
      this.pending.add(ensure);
      return (doc) => ensure()(doc);
    };
  };

  /** Serialisers not compiled yet. */
  get remaining(): number {
    return this.pending.size;
  }

  /**
   * Compile the remaining serialisers one per event-loop turn (`setImmediate`), so requests that
   * arrive meanwhile wait for at most one compile. A schema that does not compile is logged by
   * `onError` and compiled (failing) again by its route's first answer.
   */
  warm(onError: (err: unknown) => void): Promise<void> {
    return new Promise((resolve) => {
      const step = () => {
        const next = this.pending.values().next();
        if (next.done) return resolve();
        try {
          next.value();
        } catch (err) {
          this.pending.delete(next.value);
          onError(err);
        }
        setImmediate(step);
      };
      setImmediate(step);
    });
  }
}
