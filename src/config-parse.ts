/**
 * Parsers of environment values for `config.ts`: each reads one variable, applies the default and
 * throws {@link ConfigError} with a one-line message naming the variable when the value is bad.
 */

/** A configuration value could not be parsed. `message` is one line naming the variable. */
export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>;

export function fail(name: string, expected: string, got: string): never {
  throw new ConfigError(`Invalid configuration: ${name} must be ${expected} (got ${JSON.stringify(got)})`);
}

export function str(env: Env, name: string, def?: string): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? def : v;
}

export function int(env: Env, name: string, def: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const v = str(env, name);
  if (v === undefined) return def;
  if (!/^-?\d+$/.test(v)) fail(name, `an integer from ${min} to ${max}`, v);
  const n = Number(v);
  if (n < min || n > max) fail(name, `an integer from ${min} to ${max}`, v);
  return n;
}

/** A quota: a non-negative integer, or `unlimited`. */
export function quota(env: Env, name: string, def: number | null): number | null {
  const v = str(env, name);
  if (v === undefined) return def;
  if (v === 'unlimited') return null;
  return int(env, name, 0, 0);
}

export function bool(env: Env, name: string, def: boolean): boolean {
  const v = str(env, name);
  if (v === undefined) return def;
  if (['on', 'true', '1', 'yes'].includes(v)) return true;
  if (['off', 'false', '0', 'no'].includes(v)) return false;
  return fail(name, 'on or off', v);
}

export function oneOf<T extends string>(env: Env, name: string, values: readonly T[], def: T): T {
  const v = str(env, name);
  if (v === undefined) return def;
  if (!(values as readonly string[]).includes(v)) fail(name, `one of ${values.join(', ')}`, v);
  return v as T;
}

export function url(env: Env, name: string, protocols: string[], def?: string): string | undefined {
  const v = str(env, name, def);
  if (v === undefined) return undefined;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return fail(name, `a ${protocols.join(' or ')} URL`, v);
  }
  if (!protocols.includes(u.protocol.replace(':', ''))) fail(name, `a ${protocols.join(' or ')} URL`, v);
  return v.replace(/\/+$/, '');
}

/** A PostgreSQL memory size such as `32MB` (units kB, MB, GB). */
export function pgSize(env: Env, name: string, def: string, allowAuto = false): string {
  const v = str(env, name, def)!;
  if (allowAuto && v === 'auto') return v;
  if (!/^[1-9]\d{0,6}(kB|MB|GB)$/.test(v))
    fail(name, `a PostgreSQL size such as 32MB (units kB, MB, GB)${allowAuto ? ' or auto' : ''}`, v);
  return v;
}

export function list(env: Env, name: string): string[] {
  const v = str(env, name);
  return v
    ? v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];
}

/**
 * `CORS_ORIGINS`: comma-separated exact origins (`scheme://host[:port]`, as browsers send in
 * `Origin`), and optionally `*` (any other origin, never with credentials). Empty → none.
 */
export function corsOrigins(env: Env, name: string): { origins: string[]; any: boolean } {
  const origins: string[] = [];
  let any = false;
  for (const o of list(env, name)) {
    if (o === '*') {
      any = true;
      continue;
    }
    let u: URL | undefined;
    try {
      u = new URL(o);
    } catch {
      u = undefined;
    }
    if (
      !u ||
      !['http:', 'https:'].includes(u.protocol) ||
      !/^([a-z0-9.-]+|\[[0-9a-f:.]+\])$/.test(u.hostname) ||
      u.origin !== o.replace(/\/$/, '')
    )
      fail(
        name,
        'a comma-separated list of origins such as https://app.example.com (scheme, host and port only), or *',
        o,
      );
    origins.push(u.origin);
  }
  return { origins: [...new Set(origins)], any };
}

/** A number from 0 to 10 (fusion weights). */
export function ratio(env: Env, name: string, def: number): number {
  const v = str(env, name);
  if (v === undefined) return def;
  const n = Number(v);
  if (!/^\d+(\.\d+)?$/.test(v) || n > 10) fail(name, 'a number from 0 to 10', v);
  return n;
}
