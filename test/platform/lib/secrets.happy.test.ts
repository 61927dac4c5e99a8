import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import type { AppContext } from '../../../src/context.js';
import { decryptSecret, encryptSecret } from '../../../src/lib/secrets.js';

function ctxFor(env: Record<string, string>): AppContext & { warn: ReturnType<typeof vi.fn> } {
  const warn = vi.fn();
  return { config: loadConfig({ NODE_ENV: 'test', ...env }), log: { warn } as never, warn } as never;
}

describe('secrets key', () => {
  it('generates DATA_DIR/secrets.key (mode 0600) when SECRETS_KEY is unset, and reuses it', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-secrets-'));
    try {
      const a = ctxFor({ DATA_DIR: dir });
      const blob = encryptSecret(a, 'upstream-token');
      const file = path.join(dir, 'secrets.key');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect(Buffer.from(fs.readFileSync(file, 'utf8'), 'base64')).toHaveLength(32);
      expect(a.warn).toHaveBeenCalledTimes(1);
      const b = ctxFor({ DATA_DIR: dir }); // another process/config: same key from the file
      expect(decryptSecret(b, blob)).toBe('upstream-token');
      expect(b.warn).not.toHaveBeenCalled();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('uses an ephemeral key (with a warning) for an in-memory database without SECRETS_KEY', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ap-secrets-'));
    try {
      const c = ctxFor({ DATA_DIR: dir, DATABASE_IN_MEMORY: 'on' });
      expect(decryptSecret(c, encryptSecret(c, 'x'))).toBe('x');
      expect(c.warn).toHaveBeenCalledWith(expect.stringMatching(/ephemeral/));
      expect(fs.existsSync(path.join(dir, 'secrets.key'))).toBe(false);
      const other = ctxFor({ DATA_DIR: dir, DATABASE_IN_MEMORY: 'on' });
      expect(() => decryptSecret(other, encryptSecret(c, 'x'))).toThrow(/cannot be decrypted/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('uses SECRETS_KEY when set', () => {
    const key = Buffer.alloc(32, 3).toString('base64');
    const a = ctxFor({ SECRETS_KEY: key, DATA_DIR: '/nonexistent-dir' });
    const b = ctxFor({ SECRETS_KEY: key, DATA_DIR: '/nonexistent-dir' });
    expect(decryptSecret(b, encryptSecret(a, 'k'))).toBe('k');
  });
});
