/**
 * Operator command line: `npm run cli -- <command>`. Opens the database of the same
 * configuration as the server (DATA_DIR / DATABASE_URL). The embedded PGlite store is locked by
 * the process that has it open: while the server runs, the CLI refuses (exit 1, one line) instead
 * of writing changes the server would never see; stop the server first, or use the admin API.
 *
 *   users set-role <email> <role>   give a user `role` (user | pro | enterprise | admin);
 *                                   every user keeps the base role `user`
 *   users show <email>              print a user's id, roles and creation time
 *
 * Exit codes: 0 done, 1 failed (unknown user, bad configuration), 2 usage error.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import { ConfigError, ROLES, loadConfig, type Role } from '../config.js';
import type { AppContext } from '../context.js';
import { EventHub } from '../events.js';
import { DataDirLockedError, openDatabase } from '../db/client.js';
import { AuthRegistry } from '../http/auth.js';
import { AppError } from '../http/errors.js';
import { IdentityService } from '../modules/identity/service.js';

const USAGE = `usage: npm run cli -- users set-role <email> <role>   (role: ${ROLES.join(' | ')})
       npm run cli -- users show <email>`;

/** Run one command; returns the exit code. Output goes to `out`/`err`. */
export async function runCli(
  argv: string[],
  env: Record<string, string | undefined>,
  out: (s: string) => void,
  err: (s: string) => void,
): Promise<number> {
  const [group, command, email, role] = argv;
  const setRole = group === 'users' && command === 'set-role' && argv.length === 4;
  const show = group === 'users' && command === 'show' && argv.length === 3;
  if (!setRole && !show) {
    err(USAGE);
    return 2;
  }
  if (setRole && !(ROLES as readonly string[]).includes(role)) {
    err(`unknown role "${role}" (one of ${ROLES.join(', ')})`);
    return 2;
  }
  let config;
  try {
    config = loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) {
      err(e.message);
      return 1;
    }
    throw e;
  }
  const log = pino({ level: env.LOG_LEVEL ?? 'warn' });
  let database;
  try {
    database = await openDatabase(config);
  } catch (e) {
    if (e instanceof DataDirLockedError) {
      err(e.message);
      return 1;
    }
    throw e;
  }
  try {
    const ctx = {
      config,
      database,
      db: database.db,
      auth: new AuthRegistry({ apiKeysEnabled: false }),
      log,
      events: new EventHub(log),
      onClose: [],
    } as unknown as AppContext;
    const identity = await IdentityService.create(ctx);
    if (setRole) {
      const roles: Role[] = role === 'user' ? ['user'] : ['user', role as Role];
      const u = await identity.setRoles(email, roles);
      out(`${u.email} (${u.id}): roles ${u.roles.join(', ')}`);
    } else {
      const u = await identity.findUserByEmail(email);
      if (!u) throw new AppError('not_found', 'User not found');
      out(`${u.email} (${u.id}): roles ${u.roles.join(', ')}; created ${u.createdAt.toISOString()}`);
    }
    return 0;
  } catch (e) {
    if (e instanceof AppError) {
      // not_found, or last_admin: the CLI refuses to demote the only admin as the API does
      err(e.code === 'not_found' ? `no user with email ${email}` : e.message);
      return 1;
    }
    throw e;
  } finally {
    await database.close();
  }
}

// Run when executed directly (not when imported by tests).
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  runCli(
    process.argv.slice(2),
    process.env,
    (s) => process.stdout.write(`${s}\n`),
    (s) => process.stderr.write(`${s}\n`),
  )
    .then((code) => process.exit(code))
    .catch((e: Error) => {
      process.stderr.write(`fatal: ${e.stack ?? String(e)}\n`);
      process.exit(1);
    });
}
