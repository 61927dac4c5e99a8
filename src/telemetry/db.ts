/**
 * A span per SQL statement on PGlite, through the database layer (issue #41). PostgreSQL gets its
 * statement spans from the maintained `pg` instrumentation (sdk.ts); PGlite has none, so the client
 * that drizzle and the named prepared statements use is wrapped here. Spans follow the OpenTelemetry
 * database semantic conventions ("Semantic conventions for database client spans", PostgreSQL):
 * kind CLIENT, `db.system.name` = `postgresql`, `db.operation.name` (the statement's first keyword),
 * `db.query.text` — the parameterised text only (`$1`…; parameter values are never recorded, and
 * literals of a text sent without parameters are replaced by `?`, the conventions' sanitisation).
 *
 * Like the `pg` instrumentation with `requireParentSpan`, a statement gets a span only inside a
 * traced operation (an HTTP request, a tool execution, a job): background polling makes no traces.
 * While tracing is off each wrapped call costs one boolean test.
 */
import { trace } from '@opentelemetry/api';
import { ATTR } from './names.js';
import { SpanKind, tracingOn, withSpan } from './trace.js';

/** Longest `db.query.text` recorded, in characters (statements past it are cut). */
const MAX_QUERY_TEXT = 2048;

/** The statement's first keyword in upper case (`SELECT`, `INSERT`, `WITH`…), or undefined. */
export function operationOf(text: string): string | undefined {
  const m = /^\s*(?:--[^\n]*\n\s*|\/\*[\s\S]*?\*\/\s*)*([A-Za-z]+)/.exec(text);
  return m?.[1]?.toUpperCase();
}

/**
 * `text` without its literal values: quoted strings (`'…'`, `E'…'`, dollar-quoted) and numbers
 * (not `$n` parameters, not digits inside identifiers) become `?`; cut at {@link MAX_QUERY_TEXT}.
 */
export function sanitizedQueryText(text: string): string {
  const clean = text
    .replace(/\$([A-Za-z_]*)\$[\s\S]*?\$\1\$/g, '?')
    .replace(/[Ee]?'(?:[^']|'')*'/g, '?')
    .replace(/(?<![\w$.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])/g, '?');
  return clean.length > MAX_QUERY_TEXT ? clean.slice(0, MAX_QUERY_TEXT) : clean;
}

/**
 * Run one statement (`fn`) with SQL `text` in a CLIENT span `{db.operation.name}` when tracing is on
 * and a span is active; a plain call of `fn` otherwise. A thrown database error marks the span
 * failed (`error.type` = the SQLSTATE when there is one) and is rethrown.
 */
export function traceStatement<T>(text: string, fn: () => Promise<T>): Promise<T> {
  if (!tracingOn() || !trace.getActiveSpan()) return fn();
  const op = operationOf(text);
  return withSpan(
    op ?? 'postgresql',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [ATTR.dbSystem]: 'postgresql',
        ...(op ? { [ATTR.dbOperation]: op } : {}),
        [ATTR.dbQueryText]: sanitizedQueryText(text),
      },
    },
    () => fn(),
  );
}

/** The statement methods of a PGlite client or of its transaction handle. */
interface Statements {
  query(text: string, ...rest: unknown[]): Promise<unknown>;
  exec(text: string, ...rest: unknown[]): Promise<unknown>;
}

/** Replace `target.query` and `target.exec` (own properties) by traced calls of the originals. */
function wrapStatements(target: Statements): void {
  const query = target.query.bind(target);
  const exec = target.exec.bind(target);
  target.query = (text, ...rest) => traceStatement(text, () => query(text, ...rest));
  target.exec = (text, ...rest) => traceStatement(text, () => exec(text, ...rest));
}

/**
 * Trace every statement that goes through the PGlite client `client` (in-process `PGlite` or the
 * embedded-database thread's handle): its `query` and `exec`, and those of each transaction handle
 * its `transaction` gives (what drizzle runs statements on inside `db.transaction`). The methods
 * are replaced on the instance once, at open; whether a span is made is decided per call.
 * `BEGIN`/`COMMIT`/`ROLLBACK` issued by the client itself are not traced.
 */
export function instrumentPGlite<C extends object>(client: C): C {
  const c = client as unknown as Statements & {
    transaction(fn: (tx: Statements) => Promise<unknown>, ...rest: unknown[]): Promise<unknown>;
  };
  wrapStatements(c);
  const transaction = c.transaction.bind(c);
  c.transaction = (fn, ...rest) =>
    transaction(
      (tx) => {
        if (tracingOn()) wrapStatements(tx);
        return fn(tx);
      },
      ...rest,
    );
  return client;
}
