/** Deploy form fields: environment variables (stored encrypted) and the egress allow-list. */
import { AppError } from '../../http/errors.js';
import { parseEgress } from '../../sandbox/egress.js';

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Variables that change how Node or the loader behave (NODE_OPTIONS could widen the permissions). */
const ENV_RESERVED = /^(NODE_|LD_|DYLD_|UV_|OPENSSL_)/i;
const MAX_ENV_KEYS = 64;
const MAX_ENV_BYTES = 16 * 1024;

/**
 * Parse the deploy form's `env` field: a JSON object of at most 64 string (or number/boolean) values,
 * names `[A-Za-z_][A-Za-z0-9_]*`, none reserved. Null when absent or blank.
 * @throws AppError validation_failed
 */
export function parseEnv(raw: string | undefined): Record<string, string> | null {
  if (raw === undefined || raw.trim() === '') return null;
  const bad = (message: string) =>
    new AppError('validation_failed', `env: ${message}`, { errors: [{ in: 'body', pointer: '/env', message }] });
  if (Buffer.byteLength(raw) > MAX_ENV_BYTES) throw bad(`must be at most ${MAX_ENV_BYTES} bytes`);
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw bad('must be a JSON object');
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw bad('must be a JSON object');
  const out: Record<string, string> = {};
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_ENV_KEYS) throw bad(`at most ${MAX_ENV_KEYS} variables`);
  for (const [k, val] of entries) {
    if (!ENV_KEY.test(k)) throw bad(`${JSON.stringify(k)} is not a valid variable name`);
    if (ENV_RESERVED.test(k))
      throw bad(`${JSON.stringify(k)} is reserved (NODE_*, LD_*, DYLD_*, UV_*, OPENSSL_* are not allowed)`);
    if (typeof val !== 'string' && typeof val !== 'number' && typeof val !== 'boolean')
      throw bad(`value of ${k} must be a string`);
    if (String(val).includes('\0')) throw bad(`value of ${k} contains a NUL byte`);
    out[k] = String(val);
  }
  return out;
}

/**
 * The deployment's egress allow-list: the form field `egress` when sent (a JSON array
 * of strings, or the patterns separated by commas/whitespace), else `egress` of the bundle's
 * `agent.json`, else none (no network). Patterns: `host`, `*.domain`, either with `:port` — see
 * `src/sandbox/egress.ts`. Returns the normalised, de-duplicated patterns.
 * @throws AppError validation_failed with a pointer (`/egress/2`, or `/agent.json/egress/2` for the bundle)
 */
export function resolveEgress(field: string | undefined, agentJson: Record<string, unknown> | null): string[] {
  let list: unknown;
  let base: string;
  if (field !== undefined && field.trim() !== '') {
    base = '/egress';
    const raw = field.trim();
    if (raw.startsWith('[')) {
      try {
        list = JSON.parse(raw);
      } catch {
        throw new AppError('validation_failed', 'egress: must be a JSON array of strings', {
          errors: [{ in: 'body', pointer: base, message: 'must be a JSON array of strings' }],
        });
      }
    } else list = raw.split(/[\s,]+/).filter(Boolean);
  } else if (agentJson && agentJson.egress !== undefined) {
    base = '/agent.json/egress';
    list = agentJson.egress;
  } else return [];
  const r = parseEgress(list);
  if (r.errors) {
    const errors = r.errors.map((e) => ({
      in: 'body' as const,
      pointer: e.index === null ? base : `${base}/${e.index}`,
      message: e.message,
    }));
    throw new AppError('validation_failed', `egress: ${errors.map((e) => `${e.pointer}: ${e.message}`).join('; ')}`, {
      errors,
    });
  }
  return r.patterns;
}
