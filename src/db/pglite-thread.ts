/**
 * Embedded PostgreSQL (PGlite) on its own thread (the embedded start).
 *
 * PGlite runs PostgreSQL as WebAssembly on the thread that calls it. In-process, booting it — the
 * single-user start, its first catalog reads, the extensions — was ~0.45–0.7 s of the main thread
 * of every open of a data directory, serial with loading and registering the app's modules, and
 * every statement afterwards ran on the thread serving HTTP. Here the PGlite instance lives in a
 * `worker_threads` worker: its boot overlaps the app's start on the other core, and statements
 * execute there while the main thread goes on with other requests.
 *
 * {@link PGliteThread} is the main thread's handle, a subclass of PGlite's own client class
 * (`BasePGlite`, the base of `PGlite`, with the instance's type serializers and parsers): `query`,
 * `exec` and `transaction` send each statement's whole protocol exchange to the worker in one
 * message (parameters serialised there by the described types) and parse the answer's messages
 * here with `parse.parseResults`; its other protocol calls (`execProtocol`, used by
 * db/pglite-prepared.ts, and `describeQuery`) are sent as they are. drizzle's PGlite driver and the
 * named prepared statements use it as they use a `PGlite`. Its query and transaction mutexes are held here, by the one client,
 * so a statement's messages never interleave with another's and nothing lands inside another
 * caller's transaction, exactly as in-process.
 *
 * Errors: a PostgreSQL error crosses the thread as its fields (SQLSTATE `code`, `detail`,
 * `constraint`, …) and is thrown again as PGlite's `DatabaseError`, as in-process. If the worker
 * dies, the calls in flight and every later call reject with an Error naming why; `/readyz` then
 * answers 503.
 *
 * Not supported through the thread (unused by the service): LISTEN/NOTIFY callbacks, `onNotice`,
 * `COPY` through `/dev/blob`, `dumpDataDir`, `sql` inside a transaction. Cost: one message round
 * trip per statement (~50 µs on a 2-core VM; docs/adr/0294-pglite-own-thread-an-on-disk-pglite-runs.md).
 */
import type { Worker } from 'node:worker_threads';
import {
  Mutex,
  PGlite,
  messages as pgMessages,
  parse,
  type QueryOptions,
  type Results,
  type Transaction,
} from '@electric-sql/pglite';
import { takePGliteWorker, type WorkerError } from './pglite-worker.js';

/** What {@link openPGliteThread} needs to open a data directory. */
export interface PGliteThreadOptions {
  /** The PGlite data directory (created by PGlite when empty). */
  dataDir: string;
  /** `postgresql.conf` lines (PGlite's `postgresqlconf`), e.g. `shared_buffers = 16MB`. */
  postgresqlconf: string[];
}

/**
 * What {@link openPGliteThread} waits for before opening the directory: the worker starts (and
 * loads PGlite's JavaScript) at once, beside whatever prepares the directory.
 */
export type PGliteThreadOpening = Promise<PGliteThreadOptions>;

/** The members of PGlite's `BasePGlite` this module relies on (the class itself is not exported by name). */
interface BasePGliteClass {
  new (): Pick<PGlite, 'sql' | 'describeQuery' | 'refreshArrayTypes' | 'runExclusive'> & {
    serializers: Record<number, (x: unknown) => string>;
    parsers: Record<number, (x: string, typeId?: number) => unknown>;
    _initArrayTypes(opts?: { force?: boolean }): Promise<void>;
  };
}

/** `BasePGlite`: the class `PGlite` extends (query, exec, transaction over the protocol calls below). */
const BasePGlite = Object.getPrototypeOf(PGlite) as BasePGliteClass;

type BackendMessage = pgMessages.BackendMessage;

interface Pending {
  resolve(v: unknown): void;
  reject(e: Error): void;
}

/** A PostgreSQL error (or another Error) as it crossed the thread, thrown again on this side. */
function thrown(e: WorkerError): Error {
  const { database, message, name, ...fields } = e;
  if (database)
    return Object.assign(new pgMessages.DatabaseError(message, Number(fields.length ?? 0), name as 'error'), fields);
  const err = new Error(message);
  err.name = name;
  return Object.assign(err, fields);
}

/**
 * The main thread's handle on a PGlite instance running in a worker (see the module comment).
 * Use {@link openPGliteThread}; `close()` closes PostgreSQL cleanly and ends the worker.
 */
export class PGliteThread extends BasePGlite {
  /** PGlite's debug level (0: its `query` logs nothing). */
  readonly debug = 0;
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  readonly #queryMutex = new Mutex();
  readonly #transactionMutex = new Mutex();
  #nextId = 1;
  #gone: Error | null = null;
  #closed = false;

  private constructor(worker: Worker) {
    super();
    this.#worker = worker;
    worker.on('message', (m: { id: number; result?: unknown; error?: WorkerError }) => {
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error) p.reject(thrown(m.error));
      else p.resolve(m.result);
    });
    const gone = (err: Error) => {
      this.#gone ??= err;
      for (const p of this.#pending.values()) p.reject(this.#gone);
      this.#pending.clear();
    };
    worker.on('error', (err) => gone(new Error(`the embedded database thread failed: ${err.message}`)));
    worker.on('exit', (code) => gone(new Error(`the embedded database thread exited (code ${code})`)));
  }

  /**
   * Take the worker started ahead (or start one), then open the directory `opening` names in it.
   * @throws what `opening` rejects with, or the worker's error when PGlite cannot open the directory (the worker is ended either way)
   */
  static async open(opening: PGliteThreadOpening): Promise<PGliteThread> {
    const worker = takePGliteWorker();
    const client = new PGliteThread(worker);
    try {
      const opts = await opening;
      await client.#call('open', { dataDir: opts.dataDir, postgresqlconf: opts.postgresqlconf });
      // As PGlite.create does: array types' serializers and parsers, read from the catalog.
      await client._initArrayTypes();
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    return client;
  }

  #call<T>(op: string, args: Record<string, unknown> = {}): Promise<T> {
    if (this.#gone) return Promise.reject(this.#gone);
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.#worker.postMessage({ id, op, ...args });
    });
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * One statement with positional parameters (`$1`, …), as `PGlite.query`: its whole protocol
   * exchange is one call to the worker (parameters serialised there by the described types), the
   * rows are parsed here with this instance's parsers and `options.parsers`. Waits for a
   * transaction in progress (never runs inside another caller's).
   * @throws DatabaseError (SQLSTATE in `code`) with `query` and `params` attached
   */
  async query<T>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<T>> {
    await this._checkReady();
    return this._runExclusiveTransaction(() => this.#query<T>(text, params, options));
  }

  /**
   * A script of one or more statements without parameters (simple query protocol), as `PGlite.exec`.
   * @throws DatabaseError (SQLSTATE in `code`) with `query` attached
   */
  async exec(text: string, options?: QueryOptions): Promise<Array<Results>> {
    await this._checkReady();
    return this._runExclusiveTransaction(() => this.#exec(text, options));
  }

  /**
   * `BEGIN`, `fn(tx)`, then `COMMIT` — or `ROLLBACK` when `fn` throws (rethrown) — as
   * `PGlite.transaction`, holding the transaction mutex throughout: other callers' statements wait.
   * `tx` has `query`, `exec`, `rollback` and `closed` (not `sql` or `listen`).
   */
  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    await this._checkReady();
    return this._runExclusiveTransaction(async () => {
      await this.#exec('BEGIN');
      let closed = false;
      const open = () => {
        if (closed) throw new Error('Transaction is closed');
      };
      const unavailable = async (): Promise<never> => {
        throw new Error('not available in a transaction on the embedded database thread');
      };
      const tx = {
        query: async <R>(text: string, params?: unknown[], options?: QueryOptions) => (
          open(), this.#query<R>(text, params, options)
        ),
        exec: async (text: string, options?: QueryOptions) => (open(), this.#exec(text, options)),
        rollback: async () => {
          open();
          await this.#exec('ROLLBACK');
          closed = true;
        },
        sql: unavailable,
        listen: unavailable,
        get closed() {
          return closed;
        },
      } as unknown as Transaction;
      try {
        const out = await fn(tx);
        if (!closed) {
          closed = true;
          await this.#exec('COMMIT');
        }
        return out;
      } catch (err) {
        if (!closed) {
          closed = true;
          await this.#exec('ROLLBACK');
        }
        throw err;
      }
    });
  }

  #query<T>(text: string, params: unknown[] = [], options?: QueryOptions): Promise<Results<T>> {
    return this._runExclusiveQuery(async () => {
      const messages = await this.#call<BackendMessage[]>('query', {
        text,
        params,
        paramTypes: options?.paramTypes,
      }).catch((err: Error) => {
        throw Object.assign(err, { query: text, params });
      });
      return parse.parseResults(messages, this.parsers, options)[0] as Results<T>;
    });
  }

  #exec(text: string, options?: QueryOptions): Promise<Array<Results>> {
    return this._runExclusiveQuery(async () => {
      const messages = await this.#call<BackendMessage[]>('exec', { text }).catch((err: Error) => {
        throw Object.assign(err, { query: text });
      });
      return parse.parseResults(messages, this.parsers, options);
    });
  }

  /** Run `message` (wire-protocol bytes) in the backend; PostgreSQL's errors are thrown as `DatabaseError`. */
  async execProtocol(
    message: Uint8Array,
    opts: { syncToFs?: boolean } = {},
  ): Promise<{ messages: BackendMessage[]; data: Uint8Array }> {
    return {
      messages: await this.#call<BackendMessage[]>('execProtocol', { message, syncToFs: opts.syncToFs }),
      data: new Uint8Array(0),
    };
  }

  /** As {@link execProtocol}, the messages only (what `query`/`exec` use). */
  async execProtocolStream(message: Uint8Array, opts: { syncToFs?: boolean } = {}): Promise<BackendMessage[]> {
    return this.#call<BackendMessage[]>('execProtocolStream', { message, syncToFs: opts.syncToFs });
  }

  /** Not available through the thread: the raw answer bytes. @throws always */
  async execProtocolRaw(): Promise<Uint8Array> {
    throw new Error('execProtocolRaw is not available on the embedded database thread');
  }

  /** Not available through the thread: streamed raw answers. @throws always */
  async execProtocolRawStream(): Promise<void> {
    throw new Error('execProtocolRawStream is not available on the embedded database thread');
  }

  /**
   * PGlite's file-system flush after each statement outside a transaction: a no-op for the Node
   * file system the worker opens (PostgreSQL writes through it), so no call crosses the thread.
   */
  async syncToFs(): Promise<void> {}

  /** `COPY … '/dev/blob'` is not available through the thread. @throws when a blob is given */
  async _handleBlob(blob?: Blob): Promise<void> {
    if (blob) throw new Error('COPY through /dev/blob is not available on the embedded database thread');
  }

  async _getWrittenBlob(): Promise<undefined> {
    return undefined;
  }

  async _cleanupBlob(): Promise<void> {}

  /** @throws when the instance is closed or its thread has stopped */
  async _checkReady(): Promise<void> {
    if (this.#closed) throw new Error('PGlite is closed');
    if (this.#gone) throw this.#gone;
  }

  async _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T> {
    return this.#queryMutex.runExclusive(fn);
  }

  async _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T> {
    return this.#transactionMutex.runExclusive(fn);
  }

  /**
   * Close PostgreSQL cleanly (after the statement in progress, as PGlite's `close`) and end the
   * worker. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      if (!this.#gone)
        await this.#transactionMutex.runExclusive(() => this.#queryMutex.runExclusive(() => this.#call('close')));
    } finally {
      this.#gone ??= new Error('PGlite is closed');
      await this.#worker.terminate();
    }
  }
}

/**
 * Start a PGlite thread now and open the data directory `opening` resolves to (see the module comment).
 * @throws what `opening` rejects with, or the worker's error when PGlite cannot open the directory
 */
export function openPGliteThread(opening: PGliteThreadOpening | PGliteThreadOptions): Promise<PGliteThread> {
  return PGliteThread.open(Promise.resolve(opening));
}
