/**
 * The real entry point as a child process, started like `npm start` (`node --import tsx src/main.ts`;
 * no `tsx` CLI wrapper, whose signal relay SIGKILLs a busy child after 60 ms). Its stdout is read
 * line by line (pino JSON), so a test can wait for a log line such as "agent platform ready".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** A started server (or worker) process. */
export interface ServerProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:$PORT` (meaningless for a worker). */
  base: string;
  /** Every stdout line so far. */
  lines: string[];
  /** Resolves when the process exits, with its code (null when killed by a signal) and stderr. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  /** The first stdout line matching `re` (already printed or to come); rejects on exit or after `timeoutMs`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
}

/**
 * Spawn `node --import tsx src/main.ts` in the project root with `env` on top of a minimal
 * environment (PATH, HOME, NODE_ENV=test, LOG_LEVEL=info, HOST=127.0.0.1, EMBEDDINGS_PROVIDER=local). `via: 'npm'` starts
 * it as people do, `npm start` (`--ignore-scripts`: no pre/post scripts of our own run), so
 * `child` is the npm process and signals go through npm and its `sh -c`.
 */
export function startServerProcess(env: Record<string, string>, opts: { via?: 'node' | 'npm' } = {}): ServerProcess {
  const [cmd, args] =
    opts.via === 'npm'
      ? ['npm', ['start', '--silent', '--ignore-scripts']]
      : [process.execPath, ['--import', 'tsx', 'src/main.ts']];
  const child = spawn(cmd, args, {
    cwd: ROOT,
    // the local embedder unless `env` picks one: servers of the PostgreSQL pass share the test database,
    // whose stored vectors must stay in one embedding space (the default encoder would record its own)
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/tmp',
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      ...(env.EMBEDDINGS_URL ? {} : { EMBEDDINGS_PROVIDER: 'local' }),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  const waiters: Array<{ re: RegExp; resolve: (l: string) => void }> = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(line);
      for (const w of [...waiters]) if (w.re.test(line)) waiters.splice(waiters.indexOf(w), 1) && w.resolve(line);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stderr })),
  );
  return {
    child,
    base: `http://127.0.0.1:${env.PORT}`,
    lines,
    exited,
    waitFor(re, timeoutMs = 150_000) {
      const hit = lines.find((l) => re.test(l));
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve, reject) => {
        const t = setTimeout(
          () =>
            reject(new Error(`timeout waiting for ${re}; stderr: ${stderr}; stdout: ${lines.slice(-20).join('\n')}`)),
          timeoutMs,
        );
        waiters.push({ re, resolve: (l) => (clearTimeout(t), resolve(l)) });
        void exited.then(({ code, signal }) =>
          reject(new Error(`process exited (${code ?? signal}) before ${re}: ${stderr}`)),
        );
      });
    },
  };
}
