/**
 * Start the API: parse config, build the app, listen, shut down gracefully on SIGTERM/SIGINT
 * (stop accepting, finish in-flight requests, close storage, exit 0).
 * A bad configuration value prints one line naming the variable and exits 1.
 */
import { performance } from 'node:perf_hooks';
import { ConfigError, loadConfig } from './config.js';

/**
 * Where start-up went, for the `agent platform ready` line (bench/startup.ts reads it): ms since
 * process start when the app's modules were imported, the database was open (PGlite booted,
 * migrations checked; overlaps the module imports) and the app was built, plus the process's CPU
 * time (user + system, all threads) so far — a figure a loaded machine disturbs less than the others.
 */
function phases(modulesMs: number, dbMs: number, builtMs: number): Record<string, number> {
  const cpu = process.cpuUsage();
  return {
    modules_ms: Math.round(modulesMs),
    database_ms: Math.round(dbMs),
    app_ms: Math.round(builtMs),
    cpu_ms: Math.round((cpu.user + cpu.system) / 1000),
  };
}

/**
 * What `npm start`'s loader (scripts/bundle-loader.mjs) published: whether V8's code cache served
 * this start (`used`, `rejected`, `none`) and how to write it. Absent when the sources run
 * through tsx (tests, the CLI, the fallback).
 */
interface StartInfo {
  codeCache: 'used' | 'rejected' | 'none';
  saveCodeCache(): void;
}

function startInfo(): StartInfo | undefined {
  return (globalThis as Record<symbol, StartInfo | undefined>)[Symbol.for('agent-platform.start')];
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  // The database opens — a fresh embedded data directory is prepared (db/data-dir.ts), PGlite's
  // WebAssembly compiles and boots (on its own thread: db/pglite-thread.ts), migrations are checked —
  // while the main thread loads the app's modules. Imported only after the configuration parsed, so
  // a config error prints exactly one line.
  const { startPGliteWorker, discardEarlyPGliteWorker } = await import('./db/pglite-worker.js');
  if (config.pgliteThread) {
    // The database thread boots, loads PGlite and compiles its WebAssembly from here on (or has
    // since `npm start`'s script started it, before the bundle loaded).
    startPGliteWorker();
  } else {
    discardEarlyPGliteWorker();
    if (!config.databaseUrl) {
      // PGlite on this thread: its WebAssembly compiles on V8's background threads from here on (db/pglite-wasm.ts).
      const { pgliteWasmModule } = await import('./db/pglite-wasm.js');
      void pgliteWasmModule();
    }
  }
  if (config.databaseUrl) {
    // The `pg` instrumentation patches `pg` as it loads: tracing starts before the pool below imports it
    // (buildApp's own call then finds it started). Nothing is loaded when tracing is off.
    const { configureTelemetry, tracingWanted } = await import('./telemetry/sdk.js');
    if (tracingWanted(config.telemetry)) await configureTelemetry(config.telemetry, true);
  }
  const { openEmbeddedDataDir, embeddedDataDirInitialised } = await import('./db/data-dir.js');
  const dataDir = openEmbeddedDataDir(config);
  dataDir?.catch(() => undefined); // awaited (and reported) through the database's open
  const { openDatabase } = await import('./db/client.js');
  const database = openDatabase(config, dataDir);
  database.catch(() => undefined); // awaited (and reported) by buildApp
  // A directory opened before takes its lock in a few event-loop turns: taken before the app's
  // modules load (~0.3-0.5 s of synchronous work on this thread), the database thread boots
  // PostgreSQL meanwhile. A fresh directory's copy or initialisation is not waited for here.
  if (dataDir && config.pgliteThread && embeddedDataDirInitialised(config)) await dataDir.catch(() => undefined);
  const { buildApp } = await import('./app.js');
  const modulesMs = performance.now();
  let databaseMs = NaN; // when the database's open resolved
  void database.then(
    () => (databaseMs = performance.now()),
    () => undefined,
  );
  const { app, warm } = await buildApp(config, undefined, { database });
  const builtMs = performance.now();
  if (config.processRole === 'worker') {
    // Worker: the app is built (modules register their job handlers) but serves no HTTP.
    await app.ready();
    app.log.info({ startup_ms: Math.round(performance.now()), role: 'worker' }, 'agent platform worker ready');
  } else {
    // Fastify names each address it listens on; the line points at the public URL, the one origin
    // the browser session accepts (the console redirects other loopback origins to it).
    await app.listen({
      port: config.port,
      host: config.host,
      listenTextResolver: (address) => `Server listening at ${address}; open ${config.publicUrl}/console/ (PUBLIC_URL)`,
    });
    const start = startInfo();
    app.log.info(
      {
        startup_ms: Math.round(performance.now()),
        phases: phases(modulesMs, databaseMs, builtMs),
        ...(start ? { code_cache: start.codeCache } : {}),
        url: config.publicUrl,
        role: config.processRole,
      },
      'agent platform ready',
    );
    // What start-up deferred (response serialisers, …) compiles now, between requests; then the
    // bundle's code cache is written when this start had none (scripts/bundle-loader.mjs).
    void warm().then(() => start?.saveCodeCache());
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    try {
      await app.close();
      process.exit(0);
    } catch (err) {
      app.log.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err) => {
  // Another process holds the embedded data directory: one line, no stack.
  if ((err as Error).name === 'DataDirLockedError') {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
  process.stderr.write(`fatal: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
